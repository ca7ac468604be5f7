// Follower: the package's follower of a store's change feed, a pump over the
// core's FollowMachine (core/src/feed/follow.rs, bound in wasm/src/follow.rs),
// the machine the Rust runtime's follower pumps too. Every rule is the
// machine's: read the head before the open parks (so nothing committed during
// the rebuild is missed), page the open parks, follow the feed a page at a
// time, which event is a parent to watch and which an end to report, when a
// failed supervision is tried again. This loop only performs the store step
// the machine names (feedHead, openParks, feed, waitForFeed raced against the
// poll interval), hands the notices to the supervisor (watch, childEnded), up
// to `concurrency` at once, and tells the machine which parents' supervision
// failed (handleFailed).

import { FollowMachine, errorClasses } from './dist/loomfence_services.js';
import { MAX_INTERVAL_MS, functionIn, integerIn, known, store } from './options.js';
import { guardClass } from './receivers.js';

/** The most notices handed out at once. */
const MAX_CONCURRENCY = 1_024;

const OPTIONS = new Set(['events', 'supervisor', 'pageLimit', 'concurrency', 'pollIntervalMs', 'onError', 'onResumed']);

const refuse = (message) => new (errorClasses().TimerInputError)(`new Follower(options): ${message}`, 'INVALID_OPTIONS');
const integer = (name, value, min, max) => integerIn(name, value, min, max, refuse);

function defaultOnError(error, info) {
  console.error(`loomfence Follower: ${info.stage}${info.id === undefined ? '' : ` ${info.id}`}:`, error);
}

/** Follows a store's change feed for a child supervisor; see index.d.ts. */
export class Follower {
  #events;
  #supervisor;
  #machine;
  #concurrency;
  #pollIntervalMs;
  #onError;
  #onResumed;
  /** The notices being handled. */
  #inFlight = new Set();
  /** The loop of the current run, and the run's identity. */
  #loop = Promise.resolve();
  #currentRun = null;
  #running = false;
  #stopping = null;
  /** The store's wait in hand, `{ key }`, until it ends. */
  #waiting = null;
  /** Ends the sleep in hand: a wake of the store, or stop(). */
  #wakeNow = null;
  /** When the first start() was called (performance.now()). */
  #startedAt = null;
  /** `{ elapsedMs, watched }` once first caught up, the Rust `Rebuilt`. */
  #rebuild = null;

  // A method or getter called on another object: WRONG_RECEIVER (receivers.js).
  static {
    guardClass(this, (receiver) => receiver !== null && typeof receiver === 'object' && #inFlight in receiver, new Set(['stop']));
  }

  constructor(given) {
    const options = known(given, OPTIONS, '{ events, supervisor, … }', refuse);
    const { events, supervisor, pageLimit = 256, concurrency = 8, pollIntervalMs = 1_000 } = options;
    const { onError = defaultOnError, onResumed = () => {} } = options;
    this.#events = store('events', events, ['feedHead', 'openParks', 'feed', 'waitForFeed'], refuse);
    this.#supervisor = store('supervisor', supervisor, ['watch', 'childEnded'], refuse);
    this.#concurrency = integer('concurrency', concurrency, 1, MAX_CONCURRENCY);
    this.#pollIntervalMs = integer('pollIntervalMs', pollIntervalMs, 0, MAX_INTERVAL_MS);
    this.#onError = functionIn('onError', onError, refuse);
    this.#onResumed = functionIn('onResumed', onResumed, refuse);
    // The core checks the page limit (InputError INVALID_LIMIT).
    this.#machine = new FollowMachine(pageLimit);
  }

  get running() {
    return this.#running;
  }

  /** Everything up to this cursor has been read. */
  get cursor() {
    return this.#machine.cursor;
  }

  /** Whether the rebuild (the head and every open park) is done. */
  get rebuilt() {
    return this.#machine.rebuilt;
  }

  /** What the rebuild took, once the follower was first caught up; null before. */
  get rebuild() {
    return this.#rebuild;
  }

  start() {
    if (this.#stopping) throw new Error('Follower.start(): a stop() is in progress; await it first');
    if (this.#running) return;
    this.#running = true;
    this.#startedAt ??= performance.now();
    const run = {};
    this.#currentRun = run;
    // Only a bug of the machine or its binding ends the loop: reported, and
    // the follower stops.
    this.#loop = this.#run(run).catch((error) => {
      if (this.#currentRun === run) this.#running = false;
      this.#notify(error, { stage: 'poll' });
    });
  }

  stop() {
    if (this.#stopping) return this.#stopping;
    if (!this.#running) return Promise.resolve();
    this.#running = false;
    this.#wakeNow?.();
    this.#stopping = this.#loop
      .then(() => Promise.all(this.#inFlight))
      .then(() => {
        this.#stopping = null;
      });
    return this.#stopping;
  }

  async #run(run) {
    const machine = this.#machine;
    while (this.#currentRun === run && this.#running) {
      const step = machine.poll();
      if ('notice' in step) {
        // Handed out even while stopping: the machine has let go of it.
        while (this.#inFlight.size >= this.#concurrency) await Promise.race(this.#inFlight);
        this.#hand(step);
        continue;
      }
      try {
        await this.#act(machine, step, run);
      } catch (error) {
        // A store that failed or answered outside the interface: the machine
        // still asks for the same step, after the poll interval.
        this.#notify(error, { stage: step.act });
        await this.#sleep(run);
      }
    }
  }

  /** Performs one store step and feeds its answer back. */
  async #act(machine, step, run) {
    const events = this.#events;
    switch (step.act) {
      case 'readHead':
        return machine.handleHead(await events.feedHead());
      case 'listOpenParks':
        return machine.handleOpenParks(await events.openParks(step.after, step.limit));
      case 'readFeed':
        return machine.handleFeed(await events.feed(step.after, step.limit));
      case 'wait':
        // The notices in hand finish first, so their failures are known to
        // the machine before the wait that retries them (as the Rust pump).
        await Promise.allSettled([...this.#inFlight]);
        if (this.#rebuild === null) this.#caughtUp(machine);
        await this.#wait(step.after, run);
        return machine.handleWoken();
      default:
        throw new Error(`Follower: the machine asked for ${JSON.stringify(step)}, which this pump does not know`);
    }
  }

  /** The first wait, every notice handed out before it done, so
   * `elapsedMs` covers the supervision of every open park; the core counts
   * the parents watched. */
  #caughtUp(machine) {
    this.#rebuild = Object.freeze({ elapsedMs: performance.now() - this.#startedAt, watched: machine.rebuildWatched ?? 0 });
  }

  /** Until the store says something was committed after `after`, the poll
   * interval passes, or stop(). The store's wait is asked for once per
   * cursor and joined again while it lasts, and every wake goes through one
   * slot (`#wakeNow`): a quiet store is not handed one more waiter, nor a
   * pending promise one more reaction, every interval. */
  async #wait(after, run) {
    const key = `${after.epoch}.${after.position}`;
    if (this.#waiting?.key !== key) {
      const waiting = { key };
      this.#waiting = waiting;
      const done = () => {
        if (this.#waiting === waiting) this.#waiting = null;
      };
      (async () => this.#events.waitForFeed(after))().then(
        () => {
          done();
          this.#wakeNow?.();
        },
        (error) => {
          // The interval is the fallback: a lost wake costs latency, never an event.
          done();
          this.#notify(error, { stage: 'wait' });
        },
      );
    }
    await this.#sleep(run);
  }

  /** The poll interval, or until a wake or stop(). */
  async #sleep(run) {
    let timer;
    try {
      await new Promise((resolve) => {
        this.#wakeNow = resolve;
        timer = setTimeout(resolve, this.#pollIntervalMs);
        if (this.#currentRun !== run || !this.#running) resolve();
      });
    } finally {
      this.#wakeNow = null;
      clearTimeout(timer);
    }
  }

  #hand({ notice, id }) {
    const task = (notice === 'watch' ? this.#watch(id) : this.#ended(id)).finally(() => this.#inFlight.delete(task));
    this.#inFlight.add(task);
  }

  /** A parent to watch; a supervision that rejects (the supervisor reports it) is watched again after the next wake. */
  async #watch(parent) {
    let supervised;
    try {
      supervised = await this.#supervisor.watch(parent);
    } catch {
      this.#failed(parent);
      return;
    }
    this.#landed(parent, supervised);
  }

  /** An end: the parents whose supervision failed are watched again after the next wake. */
  async #ended(child) {
    let results;
    try {
      results = await this.#supervisor.childEnded(child);
    } catch (error) {
      this.#notify(error, { stage: 'ended', id: child });
      return;
    }
    if (!Array.isArray(results)) return;
    for (const result of results) {
      if (result === null || typeof result !== 'object') continue;
      if ('error' in result) this.#failed(result.parent);
      else this.#landed(result.parent, result.supervised);
    }
  }

  /** A supervision that resumed its parent: the resume goes to onResumed,
   * which starts the parent's body (no other caller receives it). */
  #landed(parent, supervised) {
    if (supervised === null || typeof supervised !== 'object' || supervised.outcome !== 'resumed') return;
    try {
      Promise.resolve(this.#onResumed(supervised.resumed)).catch((error) => this.#notify(error, { stage: 'resumed', id: parent }));
    } catch (error) {
      this.#notify(error, { stage: 'resumed', id: parent }); // the resume stands
    }
  }

  #failed(parent) {
    try {
      this.#machine.handleFailed(parent);
    } catch (error) {
      this.#notify(error, { stage: 'failed', id: parent });
    }
  }

  /** Calls onError; an onError that throws does not stop the follower. */
  #notify(error, info) {
    try {
      this.#onError(error, info);
    } catch (thrown) {
      console.error('loomfence Follower: onError threw', thrown);
    }
  }
}
