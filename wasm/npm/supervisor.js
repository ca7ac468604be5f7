// ChildSupervisor: the package's child supervisor, a pump over the core's
// SuperviseMachine (core/src/supervise/machine.rs, the machine the Rust
// runtime's supervisor pumps too). Hand-written JavaScript beside the glue,
// re-exported by index.js and browser.js; it costs the .wasm nothing.
//
// It decides nothing: it performs the action the machine names and feeds the
// answer back (readParent / readChild: events.readRange(id, 1); resume: the
// ResumeMachine the machine builds, driven by the package's resume loop;
// draw: random() and now(); writeRow: timers.schedule(row)), lists the
// parent under the children the machine is `watching` (for childEnded), and
// hands the outcome on: to the caller, onError, onResumed, a TimerService.

import { RedrivePolicy, SuperviseMachine, errorClasses } from './dist/loomfence_services.js';
import { checked, known, store } from './options.js';
import { guardClass } from './receivers.js';
import { resumeFor } from './resume.js';

/** The most parents one `rebuild` takes: a list is read before anything is
 * forgotten, so it is bounded (a 2^32-1 hole array ran the process out of memory). */
const MAX_REBUILD = 100_000;

const OPTIONS = new Set(['events', 'timers', 'redrive', 'conditionalTries', 'policy', 'now', 'random', 'onError', 'onResumed']);

function refuse(message) {
  return new (errorClasses().TimerInputError)(`new ChildSupervisor(options): ${message}`, 'INVALID_OPTIONS');
}

/** Resumes parents parked on CHILD_DONE waits when their children end. See index.d.ts. */
export class ChildSupervisor {
  #events;
  #timers;
  /** [conditionalTries, policy, redrive]: what every machine is made with. */
  #machine;
  #now;
  #random;
  #onError;
  #onResumed;
  /** parent -> the children it is listed under, as the machine's `watching` said. */
  #childrenOf = new Map();

  // A method called on another object: WRONG_RECEIVER (receivers.js).
  static {
    guardClass(this, (receiver) => receiver !== null && typeof receiver === 'object' && #childrenOf in receiver, new Set(['watch', 'childEnded', 'rebuild']));
  }

  constructor(given) {
    const options = known(given, OPTIONS, '{ events, … }', refuse);
    const { events, timers, redrive = false, conditionalTries = 3, policy, now = Date.now, random = Math.random } = options;
    const { onError = (error, parent) => console.error(`loomfence ChildSupervisor: ${parent}:`, error) } = options;
    const { onResumed = () => {} } = options;
    store('events', events, ['readRange'], refuse);
    if (redrive) store('timers', timers, ['schedule'], (message) => refuse(`options.redrive needs options.timers to write rows to: ${message}`));
    for (const [name, f] of Object.entries({ now, random, onError, onResumed })) {
      if (typeof f !== 'function') throw refuse(`options.${name} must be a function`);
    }
    [this.#events, this.#timers, this.#now, this.#random] = [events, timers, now, random];
    [this.#onError, this.#onResumed] = [onError, onResumed];
    checked('conditionalTries', conditionalTries, (v) => Number.isInteger(v) && v >= 0 && v <= 2 ** 32 - 1, 'an integer in 0..=2^32-1', refuse);
    // The core checks the policy (INVALID_POLICY).
    this.#machine = [conditionalTries, new RedrivePolicy(policy), Boolean(redrive)];
  }

  /** Reads `parent`'s park, lists it under its children, resumes it if they have ended. */
  async watch(parent) {
    let supervised;
    try {
      supervised = await this.#supervise(parent, this.#machine[2]);
    } catch (error) {
      this.#notify(error, parent);
      throw error;
    }
    if (supervised.error) this.#notify(supervised.error, parent); // contended or fenced: a value, reported
    return supervised;
  }

  /** Supervises every parent listed under `child`, in id order. */
  childEnded(child) {
    return this.#each(this.parentsWaitingOn(child));
  }

  /** Forgets every edge and watches `parents` again (after a restart).
   * Parents that cannot be read as an iterable (not one, a revoked Proxy, a
   * trap that throws) reject with a TimerInputError UNREADABLE, more than
   * MAX_REBUILD with INVALID_LIMIT, the edges kept: they are read before
   * anything is forgotten. */
  rebuild(parents) {
    const list = [];
    try {
      for (const parent of parents) {
        if (list.push(parent) > MAX_REBUILD) {
          return Promise.reject(new (errorClasses().TimerInputError)(`rebuild(parents): more than ${MAX_REBUILD} parents; rebuild them in parts`, 'INVALID_LIMIT'));
        }
      }
    } catch (thrown) {
      const error = new (errorClasses().TimerInputError)('rebuild(parents): parents could not be read as an iterable of execution ids', 'UNREADABLE');
      error.cause = thrown;
      return Promise.reject(error);
    }
    this.#childrenOf.clear();
    return this.#each(list);
  }

  /** The parents currently listed under `child`, sorted. */
  parentsWaitingOn(child) {
    return [...this.#childrenOf].filter(([, children]) => children.includes(child)).map(([parent]) => parent).sort();
  }

  /** This supervisor as a TimerService re-driver (see index.d.ts). */
  redriver() {
    return async (executionId) => {
      const supervised = await this.#supervise(executionId, false);
      if (supervised.outcome === 'resumed') {
        try {
          Promise.resolve(this.#onResumed(supervised.resumed)).catch((error) => this.#notify(error, executionId));
        } catch (error) {
          this.#notify(error, executionId); // the resume stands
        }
      }
      if (supervised.answer === 'failed') throw supervised.error;
      return supervised.answer;
    };
  }

  async #each(parents) {
    const results = [];
    for (const parent of parents) {
      try {
        results.push({ parent, supervised: await this.watch(parent) });
      } catch (error) {
        results.push({ parent, error });
      }
    }
    return results;
  }

  /** Runs one machine to its end (writing a re-drive row on contention if `writeRow`); a store failure rejects. */
  async #supervise(parent, writeRow) {
    const [conditionalTries, policy] = this.#machine;
    const machine = new SuperviseMachine(parent, conditionalTries, policy, writeRow);
    try {
      for (;;) {
        const step = machine.poll();
        if ('done' in step) return step.done;
        if (step.act === 'readParent') machine.handleRead(await this.#events.readRange(parent, 1));
        else if (step.act === 'readChild') machine.handleRead(await this.#events.readRange(step.child, 1), this.#now());
        else if (step.act === 'resume') await resumeFor(machine, this.#events);
        else if (step.act === 'draw') machine.handleDraw(this.#random(), this.#now());
        else if (step.act === 'writeRow') {
          await this.#timers.schedule(step.row);
          machine.handleWritten();
        } else throw new Error(`ChildSupervisor: the machine asked for ${JSON.stringify(step)}, which this pump does not know`);
        const children = machine.watching; // where to list the parent, or null: drop it
        if (children === null) this.#childrenOf.delete(parent);
        else this.#childrenOf.set(parent, children);
      }
    } finally {
      machine.free();
    }
  }

  /** Calls onError; an onError that throws does not stop the supervisor. */
  #notify(error, parent) {
    try {
      this.#onError(error, parent);
    } catch (thrown) {
      console.error('loomfence ChildSupervisor: onError threw', thrown);
    }
  }
}
