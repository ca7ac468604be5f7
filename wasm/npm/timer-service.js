// TimerService: the package's timer service, a pump over the core's
// TickMachine (core/src/tick.rs, bound in wasm/src/tick.rs), which the Rust
// TimerService and the simulation pump too. Every rule of a tick is the
// machine's: which rows to claim and when to claim again, each fire's time
// and draw, which claim is not fired, what a notHeld voids, which claims to
// release, the node's backoff, the once-per-node report of unreadable rows
// and what a failure leaves. This loop only performs the actions it names
// against the host's stores and re-drivers, feeds the answers back (a throw
// or an answer outside the interface is reported to onError and answered
// with handleFailed), and passes on what the machine tells: unreadable rows
// and exhausted chains to onError, a landed plain wake's resume to
// onResumed. The shared tick scenarios (tests/scenarios/tick) hold both
// hosts to the same answers.

import { TickMachine, errorClasses } from './dist/loomfence_services.js';
import { MAX_INTERVAL_MS, checked, functionIn, integerIn, known, show, store } from './options.js';
import { guardClass } from './receivers.js';
import { resume } from './resume.js';

/** The longest lease and the largest batch a TimerStore takes (index.d.ts, `Lease` and `claimDue`). */
const MAX_LEASE_MS = 86_400_000;
const MAX_BATCH = 10_000;

const OPTIONS = new Set(['events', 'timers', 'node', 'pollIntervalMs', 'leaseMs', 'batch', 'policy', 'backoffBound', 'now', 'random', 'onError', 'onResumed']);
const REDRIVE_ANSWERS = new Set(['done', 'noop', 'contended']);

let classes;
const errors = () => (classes ??= errorClasses());
const refuse = (message, code = 'INVALID_OPTIONS') => new (errors().TimerInputError)(code === 'INVALID_OPTIONS' ? `new TimerService(options): ${message}` : message, code);
const integer = (name, value, min, max) => integerIn(name, value, min, max, refuse);
const fn = (name, value) => functionIn(name, value, refuse);

function defaultNode() {
  const tag = Math.random().toString(36).slice(2, 10).padEnd(8, '0');
  const pid = globalThis.process?.pid;
  return pid === undefined ? `js-${tag}` : `js-${pid}-${tag}`;
}

function defaultOnError(error, info) {
  const where = info.row ? ` ${info.row.executionId}@${info.row.wakeAt}` : '';
  console.error(`loomfence TimerService: ${info.stage}${where}:`, error);
}

/** Where a failed action is reported: the action, or 'fire' for a fire's clock. */
const stageOf = (step) => (step.act === 'clock' ? (step.draw ? 'fire' : 'claim') : step.act);

/** The timer service of one node; see index.d.ts. */
export class TimerService {
  #events;
  #timers;
  #node;
  #pollIntervalMs;
  #machine;
  #now;
  #random;
  #onError;
  #onResumed;
  #redrivers = [];
  /** The report of a tick that did nothing (the machine's, before its first tick). */
  #nothing;
  /** The tick in hand (or the last one): ticks are chained, never overlapping. */
  #tail = Promise.resolve();
  #stopping = null;
  #generation = 0;
  #running = false;
  #timer = undefined;

  // A method or getter called on another object: WRONG_RECEIVER (receivers.js).
  static {
    guardClass(this, (receiver) => receiver !== null && typeof receiver === 'object' && #node in receiver, new Set(['pollOnce', 'stop']));
  }

  constructor(given) {
    const options = known(given, OPTIONS, '{ events, timers, … }', refuse);
    const { events, timers, node = defaultNode(), pollIntervalMs = 250, leaseMs = 30_000, batch = 100, policy, backoffBound = 1024 } = options;
    this.#events = store('events', events, ['readRange', 'appendIfParked'], refuse);
    this.#timers = store('timers', timers, ['claimDue', 'complete', 'release', 'reschedule', 'exhaust'], refuse);
    this.#node = checked('node', node, (v) => typeof v === 'string' && v.length > 0, 'a non-empty string', refuse);
    this.#pollIntervalMs = integer('pollIntervalMs', pollIntervalMs, 0, MAX_INTERVAL_MS);
    integer('leaseMs', leaseMs, 1, MAX_LEASE_MS);
    integer('batch', batch, 1, MAX_BATCH);
    // The core checks the holder, the policy and the bound (INVALID_HOLDER, INVALID_POLICY, INVALID_BACKOFF).
    this.#machine = new TickMachine(node, leaseMs, batch, policy, backoffBound);
    this.#nothing = this.#machine.poll().done;
    this.#now = fn('now', options.now ?? Date.now);
    this.#random = fn('random', options.random ?? Math.random);
    this.#onError = fn('onError', options.onError ?? defaultOnError);
    this.#onResumed = fn('onResumed', options.onResumed ?? (() => {}));
  }

  get node() {
    return this.#node;
  }

  get running() {
    return this.#running;
  }

  get redrivers() {
    return this.#redrivers.length;
  }

  registerRedriver(redriver) {
    if (typeof redriver !== 'function') throw new (errors().TimerInputError)(`registerRedriver takes a function (executionId) => Promise<'done' | 'noop' | 'contended'>, got ${show(redriver)}`, 'INVALID_OPTIONS');
    this.#redrivers.push(redriver);
  }

  pollOnce() {
    if (this.#stopping) return Promise.resolve({ ...this.#nothing, fires: [] });
    const tick = this.#tail.then(() => this.#tick());
    this.#tail = tick.catch(() => {});
    return tick;
  }

  start() {
    if (this.#stopping) throw new Error('TimerService.start(): a stop() is in progress; await it first');
    if (this.#running) return;
    this.#running = true;
    const generation = ++this.#generation;
    const loop = async () => {
      this.#timer = undefined;
      // A tick only rejects on a bug of the machine or its binding: reported, the loop goes on.
      await this.pollOnce().catch((error) => this.#notify(error, { stage: 'claim' }));
      if (this.#running && this.#generation === generation) this.#timer = setTimeout(loop, this.#pollIntervalMs);
    };
    this.#timer = setTimeout(loop, 0);
  }

  stop() {
    if (this.#stopping) return this.#stopping;
    this.#running = false;
    this.#generation++;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#machine.stop();
    this.#stopping = this.#tail.then(() => {
      this.#stopping = null;
    });
    return this.#stopping;
  }

  async #tick() {
    const redrivers = [...this.#redrivers];
    const told = { fires: [], row: undefined, error: undefined };
    this.#machine.begin(redrivers.length);
    for (;;) {
      const step = this.#machine.poll();
      if ('done' in step) return { ...step.done, fires: told.fires };
      try {
        await this.#act(step, redrivers, told);
      } catch (error) {
        told.error = error;
        this.#notify(error, { stage: stageOf(step), row: step.claim?.row ?? step.row ?? told.row });
        this.#machine.handleFailed();
      }
      for (let event = this.#machine.pollEvent(); event !== undefined; event = this.#machine.pollEvent()) this.#tell(event, told);
    }
  }

  /** Performs one action and feeds its answer back. */
  async #act(step, redrivers, told) {
    const machine = this.#machine;
    switch (step.act) {
      case 'clock':
        return machine.handleClock(this.#now(), step.draw ? this.#random() : undefined);
      case 'claim':
        return machine.handleClaimed(await this.#timers.claimDue(step.lease, step.limit, step.options));
      case 'readLog':
        return machine.handleRead(await this.#events.readRange(step.executionId, 1));
      case 'resume': {
        const answer = await this.#resume(step.executionId, step.request);
        machine.handleResumed(answer);
        if (!(answer instanceof Error)) this.#handOn(answer, told.row);
        return undefined;
      }
      case 'redrive':
        return machine.handleRedrive(await this.#redrive(redrivers[step.redriver], step.row));
      case 'reschedule':
        return machine.handleRescheduled(await this.#timers.reschedule(step.claim, step.row));
      case 'complete':
        return machine.handleCompleted(await this.#timers.complete(step.claim));
      case 'exhaust':
        return machine.handleExhausted(await this.#timers.exhaust(step.claim, step.exhaustion));
      case 'release':
        return machine.handleReleased(await this.#timers.release(step.claim));
      default:
        throw new Error(`TimerService: the tick machine asked for ${show(step)}, which this service does not know`);
    }
  }

  /** Passes on what the machine tells. */
  #tell(event, told) {
    const row = event.claim?.row ?? event.row;
    if (event.event === 'started') told.row = row;
    if (event.event === 'unreadable') {
      const message = `unreadable timer row (${show(row.executionId)}, ${row.wakeAt}): ${row.field}: ${row.detail}; it is not fired until repaired or deleted`;
      this.#notify(new (errors().UnreadableTimerRowError)(message, row), { stage: 'unreadable', row });
    }
    if (event.event !== 'ended') return;
    const { outcome } = event;
    if (outcome) told.fires.push({ row, result: outcome.outcome, outcome });
    else if (event.result === 'failed') told.fires.push({ row, result: 'failed', stage: event.stage, error: told.error });
    else told.fires.push({ row, result: event.result });
    // The machine tells an exhaustion once, after its row was retired.
    if (outcome?.outcome === 'exhausted') this.#notify(outcome.error, { stage: 'exhausted', row });
  }

  /** The package's resume; its refusal or contention is an answer. */
  async #resume(executionId, request) {
    try {
      return await resume(this.#events, executionId, request);
    } catch (error) {
      const { ResumeRefusedError, ResumeContendedError } = errors();
      if (error instanceof ResumeRefusedError || error instanceof ResumeContendedError) return error;
      throw error;
    }
  }

  /** Hands a landed resume to onResumed, not awaited; a throw or rejection is reported (stage 'onResumed'). */
  #handOn(resumed, row) {
    const failed = (error) => this.#notify(error, { stage: 'onResumed', row });
    try {
      const started = this.#onResumed(resumed);
      if (typeof started?.then === 'function') started.then(undefined, failed);
    } catch (error) {
      failed(error);
    }
  }

  /** A re-driver's answer; a throw or an answer outside the three is reported and answered 'failed'. */
  async #redrive(redriver, row) {
    try {
      const answer = await redriver(row.executionId);
      if (REDRIVE_ANSWERS.has(answer)) return answer;
      this.#notify(refuse(`a re-driver answered ${show(answer)}; it answers 'done', 'noop' or 'contended' (or throws)`, 'UNEXPECTED_ANSWER'), { stage: 'redrive', row });
    } catch (error) {
      this.#notify(error, { stage: 'redrive', row });
    }
    return 'failed';
  }

  /** Calls onError; an onError that throws does not stop the service. */
  #notify(error, info) {
    try {
      this.#onError(error, info);
    } catch (thrown) {
      console.error('loomfence TimerService: onError threw', thrown);
    }
  }
}
