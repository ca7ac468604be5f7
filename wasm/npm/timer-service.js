// TimerService: the package's timer service, a poll loop around the core's
// fire decision. Hand-written JavaScript shipped beside the wasm-bindgen glue
// (not a snippet: it drives the glue's classes rather than being called by
// them), re-exported by index.js and browser.js. It costs the .wasm nothing.
//
// It makes no decision of its own. Each due row it claims goes to a
// FireMachine (the core's decision table, core/src/timer.rs); this loop only
// performs the actions the machine names against the host's stores and feeds
// the answers back:
//   readLog  -> events.readRange(id, 1)
//   resume   -> the package's resume(events, id, request); what it resolved
//               to, or its ResumeRefusedError / ResumeContendedError
//   redrive  -> the registered re-driver the machine names: 'done' | 'noop' |
//               'contended'; a throw (or any other answer) is 'failed'
//   reschedule -> timers.reschedule(claim, row): the fired row retired and
//               the next one written in one step; 'notHeld' voids the
//               decision and wrote nothing, so a fire that outlived its lease
//               cannot fork the chain
//   complete -> timers.complete(claim); 'notHeld' voids the decision
// and applies every outcome to this node's WakeBackoff.
//
// Claims, the one thing the machine leaves to the host:
// - claimDue's answer (an array, or { claims, unreadable } from a store that
//   holds rows it cannot read) is read claim by claim by the core
//   (UnreadableReports.readClaimPage): a malformed element is not fired but
//   is an unreadable row, and each unreadable row is reported once per node
//   (an UnreadableTimerRowError to onError, stage 'unreadable'; counted in
//   the report's `unreadable`), while the readable claims go on;
// - a fire that ends without retiring its row (notYet, backedOff, left)
//   releases its claim at once: the row is due again for the next poll of any
//   node, and this node's backoff gate (the machine's notYet) keeps it from
//   acquiring before the next try;
// - a fire that fails (a store or a re-driver answering outside its
//   interface, a store that throws, a resume that rejects with anything but a
//   refusal or a contention) is reported to onError and dropped, its claim
//   left to expire, as the core's module docs say: the next claimer decides
//   again from scratch, and a failing store is not re-claimed every poll;
// - a claim whose lease has ended before its turn in the batch is not fired
//   (another node may hold the row by now) but released;
// - stop() lets the fire in hand finish and releases the claims not fired.
//
// A plain wake's resume that lands is handed to onResumed (the host starts
// the execution's body from it); nobody else receives it. A re-drive's
// resume is its re-driver's to hand on.

import { FireMachine, RedrivePolicy, UnreadableReports, WakeBackoff, errorClasses } from './dist/loomfence_wasm.js';
import { resume } from './resume.js';

/** The longest lease and the largest batch a TimerStore takes (index.d.ts, `Lease` and `claimDue`). */
const MAX_LEASE_MS = 86_400_000;
const MAX_BATCH = 10_000;
/** The longest delay setTimeout honours. */
const MAX_INTERVAL_MS = 2 ** 31 - 1;

/** The options `new TimerService` reads; any other key is refused. */
const OPTIONS = new Set([
  'events',
  'timers',
  'node',
  'pollIntervalMs',
  'leaseMs',
  'batch',
  'policy',
  'backoffBound',
  'now',
  'random',
  'onError',
  'onResumed',
]);

/** The fire outcomes, each counted in a PollReport. */
const OUTCOMES = ['fired', 'obsolete', 'notYet', 'backedOff', 'redriven', 'nothingToRedrive', 'rescheduled', 'left', 'exhausted'];

/** The answers a re-driver gives. */
const REDRIVE_ANSWERS = new Set(['done', 'noop', 'contended']);

/** The package's error classes (the wasm module is initialised by the entry
 * point before anything here runs). */
let classes;
function errors() {
  classes ??= errorClasses();
  return classes;
}

function refuse(message, code) {
  const { TimerInputError } = errors();
  return new TimerInputError(message, code);
}

function show(value) {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** `value` if it is an integer in `min..=max`, else an `INVALID_OPTIONS` refusal. */
function integerOption(name, value, min, max) {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw refuse(`options.${name} must be an integer in ${min}..=${max}, got ${show(value)}`, 'INVALID_OPTIONS');
  }
  return value;
}

/** The default onResumed: no body runs on this node. */
function noBody() {}

function functionOption(name, value) {
  if (typeof value !== 'function') {
    throw refuse(`options.${name} must be a function, got ${show(value)}`, 'INVALID_OPTIONS');
  }
  return value;
}

/** A store object with `methods`, else an `INVALID_OPTIONS` refusal. */
function storeOption(name, value, methods) {
  const missing = value === null || (typeof value !== 'object' && typeof value !== 'function')
    ? methods
    : methods.filter((m) => typeof value[m] !== 'function');
  if (missing.length > 0) {
    throw refuse(`options.${name} must be a store with ${methods.join(', ')}; missing ${missing.join(', ')}`, 'INVALID_OPTIONS');
  }
  return value;
}

/** A node id unique per process: `js-<pid>-<random>` (`js-<random>` without a pid). */
function defaultNode() {
  const tag = Math.random().toString(36).slice(2, 10).padEnd(8, '0');
  const pid = globalThis.process?.pid;
  return pid === undefined ? `js-${tag}` : `js-${pid}-${tag}`;
}

function defaultOnError(error, info) {
  const where = info.row ? ` ${info.row.executionId}@${info.row.wakeAt}` : '';
  console.error(`loomfence TimerService: ${info.stage}${where}:`, error);
}

/** A store's answer that is not in its interface. */
function contract(what, got) {
  return refuse(`${what}, got ${show(got)}`, 'UNEXPECTED_ANSWER');
}

function emptyReport() {
  const report = { claimed: 0 };
  for (const outcome of OUTCOMES) report[outcome] = 0;
  return Object.assign(report, { voided: 0, failed: 0, expired: 0, unfired: 0, released: 0, unreadable: 0, errors: 0, fires: [] });
}

/**
 * The timer service of one node: claims due rows of `timers` under a lease,
 * fires each through the core's `FireMachine` against `events`, hands
 * re-drive rows to the registered re-drivers. See index.d.ts.
 */
export class TimerService {
  #events;
  #timers;
  #node;
  #pollIntervalMs;
  #leaseMs;
  #batch;
  #policy;
  #backoff;
  #now;
  #random;
  #onError;
  #onResumed;
  #redrivers = [];
  /** The unreadable rows this node has reported, and the reader of claimDue's answers. */
  #unreadable = new UnreadableReports();
  /** The tick in hand (or the last one): ticks are chained, never overlapping. */
  #tail = Promise.resolve();
  /** A stop in progress: ticks release their claims instead of firing them. */
  #stopping = null;
  /** The loop's generation: a stop ends the generation that was running. */
  #generation = 0;
  #running = false;
  #timer = undefined;

  constructor(options) {
    if (options === null || typeof options !== 'object') {
      throw refuse('new TimerService(options): options must be an object { events, timers, … }', 'INVALID_OPTIONS');
    }
    const unknown = Object.keys(options).filter((key) => !OPTIONS.has(key));
    if (unknown.length > 0) {
      throw refuse(`new TimerService(options): unknown option ${unknown.map(show).join(', ')}`, 'INVALID_OPTIONS');
    }
    const {
      events,
      timers,
      node = defaultNode(),
      pollIntervalMs = 250,
      leaseMs = 30_000,
      batch = 100,
      policy,
      backoffBound = 1024,
      now = Date.now,
      random = Math.random,
      onError = defaultOnError,
      onResumed = noBody,
    } = options;
    this.#events = storeOption('events', events, ['readRange', 'appendIfParked']);
    this.#timers = storeOption('timers', timers, ['claimDue', 'complete', 'release', 'reschedule']);
    if (typeof node !== 'string' || node.length === 0) {
      throw refuse(`options.node must be a non-empty string, got ${show(node)}`, 'INVALID_OPTIONS');
    }
    this.#node = node;
    this.#pollIntervalMs = integerOption('pollIntervalMs', pollIntervalMs, 0, MAX_INTERVAL_MS);
    this.#leaseMs = integerOption('leaseMs', leaseMs, 1, MAX_LEASE_MS);
    this.#batch = integerOption('batch', batch, 1, MAX_BATCH);
    // The core checks these two (INVALID_POLICY, INVALID_BACKOFF).
    this.#policy = new RedrivePolicy(policy);
    this.#backoff = new WakeBackoff(backoffBound);
    this.#now = functionOption('now', now);
    this.#random = functionOption('random', random);
    this.#onError = functionOption('onError', onError);
    this.#onResumed = functionOption('onResumed', onResumed);
  }

  /** This node's holder name in the timer store's leases. */
  get node() {
    return this.#node;
  }

  /** Whether the loop of `start()` is running. */
  get running() {
    return this.#running;
  }

  /** How many re-drivers are registered. */
  get redrivers() {
    return this.#redrivers.length;
  }

  /**
   * Adds a re-driver, after those already registered (the machine asks them
   * in that order). From the next tick on, re-drive rows are claimed too.
   */
  registerRedriver(redriver) {
    if (typeof redriver !== 'function') {
      throw refuse(`registerRedriver takes a function (executionId) => Promise<'done' | 'noop' | 'contended'>, got ${show(redriver)}`, 'INVALID_OPTIONS');
    }
    this.#redrivers.push(redriver);
  }

  /**
   * One tick: claims up to `batch` due rows (re-drive rows only when a
   * re-driver is registered) and fires them one at a time. Resolves to what
   * happened; failures go to onError, not to the promise. A tick asked for
   * while another is in hand runs after it; one asked for during a stop does
   * nothing.
   */
  pollOnce() {
    if (this.#stopping) return Promise.resolve(emptyReport());
    const tick = this.#tail.then(() => this.#tick());
    this.#tail = tick.catch(() => {});
    return tick;
  }

  /** Polls now, then `pollIntervalMs` after each tick ends, until `stop()`. */
  start() {
    if (this.#stopping) {
      throw new Error('TimerService.start(): a stop() is in progress; await it first');
    }
    if (this.#running) return;
    this.#running = true;
    const generation = ++this.#generation;
    const loop = async () => {
      this.#timer = undefined;
      await this.pollOnce();
      if (this.#running && this.#generation === generation) {
        this.#timer = setTimeout(loop, this.#pollIntervalMs);
      }
    };
    this.#timer = setTimeout(loop, 0);
  }

  /**
   * Ends the loop: no tick starts after this; the tick in hand finishes the
   * fire it is in and releases the claims it has not fired. Resolves once it
   * has.
   */
  stop() {
    if (this.#stopping) return this.#stopping;
    this.#running = false;
    this.#generation++;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#stopping = this.#tail.then(() => {
      this.#stopping = null;
    });
    return this.#stopping;
  }

  async #tick() {
    const report = emptyReport();
    if (this.#stopping) return report;
    // One snapshot per tick: the filter and the machine's count agree.
    const redrivers = [...this.#redrivers];
    let claims;
    try {
      const lease = { holder: this.#node, now: this.#now(), durationMs: this.#leaseMs };
      const page = this.#unreadable.readClaimPage(await this.#timers.claimDue(lease, this.#batch, { redrive: redrivers.length > 0 }));
      claims = page.claims;
      for (const row of page.unreadable) this.#reportUnreadable(report, row);
    } catch (error) {
      this.#report(report, error, { stage: 'claim' });
      return report;
    }
    report.claimed = claims.length;
    for (const claim of claims) {
      if (this.#stopping) {
        report.unfired++;
        report.fires.push({ row: claim.row, result: 'unfired' });
        await this.#release(claim, report);
        continue;
      }
      await this.#fire(claim, redrivers, report);
    }
    return report;
  }

  /** Fires one claimed row to its end, or drops it on a failure. */
  async #fire(claim, redrivers, report) {
    const row = claim?.row;
    let stage = 'fire';
    let fire;
    try {
      const now = this.#now();
      if (Number.isFinite(claim.expiresAt) && now >= claim.expiresAt) {
        report.expired++;
        report.fires.push({ row, result: 'expired' });
        await this.#release(claim, report);
        return;
      }
      fire = new FireMachine(row, {
        now,
        random: this.#random(),
        policy: this.#policy,
        backoff: this.#backoff.get(row.executionId) ?? null,
        redrivers: redrivers.length,
      });
      let outcome;
      for (;;) {
        const step = fire.poll();
        if ('done' in step) {
          outcome = step.done;
          break;
        }
        stage = step.act;
        switch (step.act) {
          case 'readLog':
            fire.handleRead(await this.#events.readRange(row.executionId, 1));
            break;
          case 'resume': {
            const answer = await this.#resume(row.executionId, step.request);
            fire.handleResumed(answer);
            if (!(answer instanceof Error)) this.#handOn(answer, row, report);
            break;
          }
          case 'redrive':
            fire.handleRedrive(await this.#redrive(redrivers[step.redriver], row, report));
            break;
          case 'reschedule':
          case 'complete': {
            const completed = step.act === 'complete'
              ? await this.#timers.complete(claim)
              : await this.#timers.reschedule(claim, step.row);
            if (completed === 'notHeld') {
              // The claim was lost (the row was scheduled again, or its
              // lease ended and another node took it): the decision is void.
              report.voided++;
              report.fires.push({ row, result: 'voided' });
              return;
            }
            if (completed !== 'done') throw contract(`timers.${step.act} must resolve to 'done' or 'notHeld'`, completed);
            if (step.act === 'complete') fire.handleCompleted();
            else fire.handleRescheduled();
            break;
          }
          default:
            throw new Error(`TimerService: the fire machine asked for ${show(step)}, which this service does not know`);
        }
      }
      stage = 'outcome';
      this.#backoff.apply(row, outcome);
      report[outcome.outcome]++;
      report.fires.push({ row, result: outcome.outcome, outcome });
      if (outcome.outcome === 'exhausted') {
        // Reached only after complete answered 'done': reported by exactly
        // the fire that retired the row.
        this.#notify(outcome.error, { stage: 'exhausted', row });
      }
      if (!outcome.retired) await this.#release(claim, report);
    } catch (error) {
      report.failed++;
      report.fires.push({ row, result: 'failed', error });
      this.#report(report, error, { stage, row });
    } finally {
      fire?.free();
    }
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

  /**
   * Hands a landed resume to onResumed, which starts its body. Not awaited:
   * the fire goes on. A throw or a rejection is reported (stage
   * 'onResumed'); the resume stands either way.
   */
  #handOn(resumed, row, report) {
    try {
      const started = this.#onResumed(resumed);
      if (typeof started?.then === 'function') {
        started.then(undefined, (error) => this.#notify(error, { stage: 'onResumed', row }));
      }
    } catch (error) {
      this.#report(report, error, { stage: 'onResumed', row });
    }
  }

  /** A re-driver's answer; a throw or an answer outside the three is 'failed', reported. */
  async #redrive(redriver, row, report) {
    let answer;
    try {
      answer = await redriver(row.executionId);
    } catch (error) {
      this.#report(report, error, { stage: 'redrive', row });
      return 'failed';
    }
    if (REDRIVE_ANSWERS.has(answer)) return answer;
    const error = refuse(`a re-driver answered ${show(answer)}; it answers 'done', 'noop' or 'contended' (or throws)`, 'UNEXPECTED_ANSWER');
    this.#report(report, error, { stage: 'redrive', row });
    return 'failed';
  }

  async #release(claim, report) {
    try {
      const released = await this.#timers.release(claim);
      if (released === 'done') report.released++;
      else if (released !== 'notHeld') throw contract("timers.release must resolve to 'done' or 'notHeld'", released);
    } catch (error) {
      this.#report(report, error, { stage: 'release', row: claim?.row });
    }
  }

  /** A row the store could not read, first seen by this node: counted and reported, not an error of the tick. */
  #reportUnreadable(report, row) {
    const { UnreadableTimerRowError } = errors();
    const message = `unreadable timer row (${show(row.executionId)}, ${row.wakeAt}): ${row.field}: ${row.detail}; it is not fired until repaired or deleted`;
    report.unreadable++;
    this.#notify(new UnreadableTimerRowError(message, row), { stage: 'unreadable', row });
  }

  #report(report, error, info) {
    report.errors++;
    this.#notify(error, info);
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
