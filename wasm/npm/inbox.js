// Inbox: the package's messages, a pump over the core's DeliverMachine
// (core/src/inbox/deliver.rs, bound in wasm/src/deliver.rs), which the Rust
// runtime pumps too. Hand-written JavaScript beside the glue, re-exported by
// index.js and browser.js; it costs the .wasm nothing.
//
// It decides nothing: it performs the action the machine names and feeds the
// answer back (readLog: store.readRange(id, 1); readFence:
// store.currentFence(id); appendPark:
// store.append(id, event); send: inbox.send(message,
// intent); readPending: inbox.pending(id, channels, limit); markConsumed:
// inbox.markConsumed(key); resume: the ResumeMachine the machine builds,
// driven by the package's resume loop, which appends [MESSAGE_CONSUMED,
// EXECUTION_RESUMED] in one appendIfParked; draw: random() and now();
// writeRow: inbox.schedule(row)), and hands the outcome on: to the caller,
// or, from the re-driver, to onResumed and a TimerService.

import { DeliverMachine, RedrivePolicy, errorClasses } from './dist/loomfence_services.js';
import { known, show, store } from './options.js';
import { guardClass } from './receivers.js';
import { resumeFor } from './resume.js';

/** How long after a send its intent row comes due, unless told (the core's DEFAULT_INTENT_DELAY_MS). */
const INTENT_DELAY_MS = 5_000;

const OPTIONS = new Set(['now', 'random', 'redrive', 'policy', 'intentDelayMs', 'onResumed', 'onError']);
const NOTIFY = new Set(['executionId', 'channel', 'messageId', 'payload']);
const PARK = new Set(['fence', 'at']);

let classes;
const errors = () => (classes ??= errorClasses());
const refuse = (message, code = 'INVALID_OPTIONS') => new (errors().TimerInputError)(message, code);

/** A plain copy of a caller's argument object, each field read once; one
 * that is not an object, has a field outside `allowed` or cannot be read (a
 * getter or trap that throws, a revoked Proxy) is refused with `code`. */
function fields(value, allowed, what, code) {
  if (value === null || typeof value !== 'object') throw refuse(`${what} must be an object`, code);
  let copy;
  try {
    copy = { ...value };
  } catch (thrown) {
    const error = refuse(`${what} could not be read`, 'UNREADABLE');
    error.cause = thrown;
    throw error;
  }
  const unknown = Object.keys(copy).filter((key) => !allowed.has(key));
  if (unknown.length > 0) throw refuse(`${what}: unknown field ${unknown.map(show).join(', ')}`, code);
  return copy;
}

/** Messages to parked executions: notify, the park that checks its inbox, the re-driver. See index.d.ts. */
export class Inbox {
  #store;
  #inbox;
  /** [intentDelayMs, policy, redrive]: what every machine is made with. */
  #machine;
  #now;
  #random;
  #onResumed;
  #onError;

  // A method called on another object: WRONG_RECEIVER (receivers.js).
  static {
    guardClass(this, (receiver) => receiver !== null && typeof receiver === 'object' && #machine in receiver, new Set(['notify', 'park', 'check']));
  }

  constructor(events, inbox, given = {}) {
    const bad = (message) => refuse(`new Inbox(store, inbox, options): ${message}`);
    const options = known(given, OPTIONS, '{ now, random, redrive, policy, intentDelayMs, onResumed, onError }', bad);
    const { redrive = false, policy, intentDelayMs = INTENT_DELAY_MS, now = Date.now, random = Math.random } = options;
    const { onResumed = () => {}, onError = (error, executionId) => console.error(`loomfence Inbox: ${executionId}:`, error) } = options;
    store('store', events, ['readRange', 'appendIfParked', 'append', 'currentFence'], bad);
    store('inbox', inbox, ['send', 'pending', 'markConsumed', 'schedule'], bad);
    for (const [name, f] of Object.entries({ now, random, onResumed, onError })) {
      if (typeof f !== 'function') throw bad(`options.${name} must be a function`);
    }
    [this.#store, this.#inbox, this.#now, this.#random, this.#onResumed, this.#onError] = [events, inbox, now, random, onResumed, onError];
    // The core checks the policy (INVALID_POLICY) and the delay (INVALID_OPTIONS): a machine made now refuses them here.
    this.#machine = [intentDelayMs, new RedrivePolicy(policy), Boolean(redrive)];
    DeliverMachine.check('check', ...this.#machine).free();
  }

  /** Sends a message and delivers what the execution's open park can take. */
  async notify(message) {
    const { executionId, channel, messageId, payload } = fields(message, NOTIFY, 'notify(message)', 'INVALID_MESSAGE');
    const machine = DeliverMachine.notify({ executionId, channel, messageId, payload, sentAt: this.#now() }, ...this.#machine);
    const [done, sent] = await this.#deliver(machine);
    return answer(done, sent, true);
  }

  /** Writes the park (after its intent row, when it waits on a channel), then delivers what it can take at once. */
  async park(executionId, waits, given = {}) {
    const { fence, at } = fields(given, PARK, 'park(executionId, waits, options)', 'INVALID_OPTIONS');
    // Made (and so checked: the id, the waits) before anything is written.
    const machine = DeliverMachine.park(executionId, waits, at ?? this.#now(), fence, ...this.#machine);
    const [done, , park] = await this.#deliver(machine);
    if (done.outcome === 'fenced') throw done.error; // what the store's guard would have thrown: nothing written
    const delivery = answer(done, null, false);
    return { park, delivered: delivery.result === 'delivered' ? { message: delivery.message, resumed: delivery.resumed } : null };
  }

  /** Delivers what the execution's open park can take from the inbox. */
  async check(executionId) {
    const [done, sent] = await this.#deliver(DeliverMachine.check(executionId, ...this.#machine));
    return answer(done, sent, false);
  }

  /** This inbox as a TimerService re-driver (see index.d.ts). */
  redriver() {
    return async (executionId) => {
      const [intentDelayMs, policy] = this.#machine;
      const [done] = await this.#deliver(DeliverMachine.check(executionId, intentDelayMs, policy, false));
      if (done.outcome === 'delivered') {
        try {
          Promise.resolve(this.#onResumed(done.resumed)).catch((error) => this.#notify(error, executionId));
        } catch (error) {
          this.#notify(error, executionId); // the delivery stands
        }
      }
      return done.answer;
    };
  }

  /** Runs one machine to its end: [its outcome, what its send answered, the park it wrote]; a store failure rejects. */
  async #deliver(machine) {
    const id = machine.executionId;
    let park = null;
    try {
      for (;;) {
        const step = machine.poll();
        if ('done' in step) return [step.done, machine.sent, park];
        if (step.act === 'readLog') machine.handleLog(await this.#store.readRange(id, 1));
        else if (step.act === 'readFence') machine.handleFence(await this.#store.currentFence(id));
        else if (step.act === 'appendPark') {
          park = await this.#store.append(id, step.event);
          machine.handleParked(park);
        }
        else if (step.act === 'send') machine.handleSent(await this.#inbox.send(step.message, step.intent));
        else if (step.act === 'readPending') machine.handlePending(await this.#inbox.pending(id, step.channels, step.limit), this.#now());
        else if (step.act === 'markConsumed') {
          await this.#inbox.markConsumed(step.key);
          machine.handleMarked();
        } else if (step.act === 'resume') await resumeFor(machine, this.#store);
        else if (step.act === 'draw') machine.handleDraw(this.#random(), this.#now());
        else if (step.act === 'writeRow') {
          await this.#inbox.schedule(step.row);
          machine.handleWritten();
        } else throw new Error(`Inbox: the machine asked for ${show(step)}, which this pump does not know`);
      }
    } finally {
      machine.free();
    }
  }

  /** Calls onError; an onError that throws does not stop the inbox. */
  #notify(error, executionId) {
    try {
      this.#onError(error, executionId);
    } catch (thrown) {
      console.error('loomfence Inbox: onError threw', thrown);
    }
  }
}

/**
 * The caller's answer: `delivered` (with the message delivered and the
 * resume), `refused` (`reason` 'unknown' or 'ended', nothing stored), or,
 * nothing delivered now, `stored` for a notify and `waiting` for a check,
 * `outcome` saying why (`waiting`, `contended` with its `error`,
 * `redriveScheduled` with its `row`). A notify's answer says whether its
 * send was a `duplicate`.
 */
function answer(done, sent, notify) {
  let out;
  if (done.outcome === 'delivered') out = { result: 'delivered', message: done.message, resumed: done.resumed };
  else if (done.outcome === 'refused') out = { result: 'refused', reason: done.reason };
  else {
    out = { result: notify ? 'stored' : 'waiting', outcome: done.outcome };
    if (done.error) out.error = done.error;
    if (done.row) out.row = done.row;
  }
  if (notify) out.duplicate = sent?.duplicate ?? false;
  return out;
}
