// The package's timer decisions, as a JavaScript host meets them:
// - RedrivePolicy: the full-jitter schedule, its defaults, and bad draws,
//   attempts and policies refused with a TimerInputError;
// - redriveWakeAt and the bounded WakeBackoff map;
// - FireMachine through every row of the decision table (core/src/fire.rs),
//   driven against the package's MemoryEventStore with its `resume`, and with
//   the MemoryTimerStore holding the claim: a plain wake fired, obsolete,
//   backed off then not yet, exhausted; a re-drive row redriven, nothing to
//   redrive, rescheduled, left, exhausted; answers that do not fit refused
//   with the machine unchanged;
// - the two new error classes.

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, test } from 'node:test';
import {
  InputError,
  MemoryEventStore,
  ResumeContendedError,
  ResumeRefusedError,
  resume,
} from 'loomfence';
import {
  FireMachine,
  MemoryTimerStore,
  RedriveExhaustedError,
  RedrivePolicy,
  TimerInputError,
  WakeBackoff,
  redriveWakeAt,
} from 'loomfence/services';

import { AT, event, show, wrap } from './support.js';

/** Asserts `run()` throws a TimerInputError with `code`. */
function throwsTimerInput(run, code, what) {
  assert.throws(run, (error) => {
    assert.ok(error instanceof TimerInputError, `${what}: expected a TimerInputError (${code}), got ${error}`);
    assert.equal(error.code, code, `${what}: ${error.message}`);
    return true;
  }, what);
}

/** A draw just below 1, the largest `Math.random()` can give. */
const BELOW_ONE = 1 - 2 ** -53;

// ---------------------------------------------------------------------------
// The policy.

describe('RedrivePolicy', () => {
  test('defaults to 200 ms doubling to at most 30 s, 8 retries', () => {
    const policy = new RedrivePolicy();
    assert.deepEqual([policy.baseMs, policy.capMs, policy.maxAttempts], [200, 30_000, 8]);
    const ceilings = Array.from({ length: 10 }, (_, n) => policy.ceilingMs(n));
    assert.deepEqual(ceilings, [200, 400, 800, 1_600, 3_200, 6_400, 12_800, 25_600, 30_000, 30_000]);
    assert.equal(policy.ceilingMs(2 ** 32 - 1), 30_000, 'any attempt saturates at the cap');
    const empty = new RedrivePolicy({});
    assert.deepEqual([empty.baseMs, empty.capMs, empty.maxAttempts], [200, 30_000, 8], 'an empty init is the default');
  });

  test('takes each field, the others defaulted, and copies another policy', () => {
    const policy = new RedrivePolicy({ baseMs: 50, maxAttempts: 3 });
    assert.deepEqual([policy.baseMs, policy.capMs, policy.maxAttempts], [50, 30_000, 3]);
    const copy = new RedrivePolicy(policy);
    assert.deepEqual([copy.baseMs, copy.capMs, copy.maxAttempts], [50, 30_000, 3]);
    const huge = new RedrivePolicy({ baseMs: Number.MAX_SAFE_INTEGER, capMs: Number.MAX_SAFE_INTEGER });
    assert.equal(huge.ceilingMs(40), Number.MAX_SAFE_INTEGER, 'the arithmetic saturates, it never overflows');
    assert.equal(new RedrivePolicy({ baseMs: 0 }).delayMs(5, 0.9), 0, 'a zero base retries at once');
  });

  test('the delay is floor(random * ceiling), always in [0, ceiling)', () => {
    const policy = new RedrivePolicy();
    for (let attempt = 0; attempt < 12; attempt++) {
      const ceiling = policy.ceilingMs(attempt);
      for (const random of [0, -0, 1e-9, 0.25, 0.5, 0.999, BELOW_ONE, Math.random()]) {
        const delay = policy.delayMs(attempt, random);
        assert.ok(Number.isSafeInteger(delay) && delay >= 0 && delay < ceiling, `attempt ${attempt}, random ${random}: ${delay} outside [0, ${ceiling})`);
        assert.equal(delay, Math.min(Math.floor(random * ceiling), ceiling - 1) + 0);
      }
    }
    assert.equal(policy.delayMs(0, 0), 0);
    assert.equal(policy.delayMs(0, BELOW_ONE), 199, 'the largest draw stays below the ceiling');
  });

  test('a draw outside [0, 1) is refused: INVALID_DRAW', () => {
    const policy = new RedrivePolicy();
    for (const random of [1, 1.5, -0.1, -Number.MIN_VALUE, Infinity, -Infinity, NaN, '0.5', undefined, null, 0n, {}]) {
      throwsTimerInput(() => policy.delayMs(0, random), 'INVALID_DRAW', `delayMs(0, ${show(random)})`);
    }
  });

  test('an attempt that is not a 32-bit unsigned integer is refused: INVALID_ATTEMPT', () => {
    const policy = new RedrivePolicy();
    for (const attempt of [-1, 0.5, 2 ** 32, '1', undefined, NaN]) {
      throwsTimerInput(() => policy.delayMs(attempt, 0.5), 'INVALID_ATTEMPT', `delayMs(${show(attempt)})`);
      throwsTimerInput(() => policy.ceilingMs(attempt), 'INVALID_ATTEMPT', `ceilingMs(${show(attempt)})`);
    }
  });

  test('a policy the core cannot hold is refused: INVALID_POLICY', () => {
    for (const init of [
      { base: 10 },
      { baseMs: 10, cap: 1 },
      { baseMs: -1 },
      { baseMs: 1.5 },
      { capMs: '100' },
      { capMs: 2 ** 53 },
      { maxAttempts: 2 ** 32 },
      { maxAttempts: -1 },
      null,
      'fast',
      5,
      [],
      new Map(),
    ]) {
      throwsTimerInput(() => new RedrivePolicy(init), 'INVALID_POLICY', `new RedrivePolicy(${show(init)})`);
    }
  });
});

describe('redriveWakeAt', () => {
  test('is max(now + delay, firedWakeAt + 1), capped, or undefined', () => {
    assert.equal(redriveWakeAt(1_000, 500, 900), 1_500);
    assert.equal(redriveWakeAt(1_000, 0, 1_000), 1_001, 'a zero delay still moves past the fired row');
    assert.equal(redriveWakeAt(1_000, 0, 5_000), 5_001, 'never before the fired row');
    assert.equal(redriveWakeAt(Number.MAX_SAFE_INTEGER - 1, 10, 0), Number.MAX_SAFE_INTEGER, 'now + delay saturates at 2^53-1');
    assert.equal(redriveWakeAt(0, 0, Number.MAX_SAFE_INTEGER), undefined, 'nothing storable follows 2^53-1');
    assert.equal(redriveWakeAt(-100, 0, -1_000), undefined, 'a negative result is not storable');
  });

  test('refuses numbers that are not safe integers', () => {
    throwsTimerInput(() => redriveWakeAt(0.5, 0, 0), 'INVALID_TIME', 'a fractional now');
    throwsTimerInput(() => redriveWakeAt(0, 0, '0'), 'INVALID_TIME', 'a string firedWakeAt');
    throwsTimerInput(() => redriveWakeAt(0, -1, 0), 'INVALID_DELAY', 'a negative delay');
    throwsTimerInput(() => redriveWakeAt(0, 2 ** 53, 0), 'INVALID_DELAY', 'an unsafe delay');
  });
});

describe('WakeBackoff', () => {
  const row = { executionId: 'e', wakeAt: 1_000 };
  const backedOff = (wakeAt, attempt, nextTryAt) => ({ outcome: 'backedOff', retired: false, entry: { wakeAt, attempt, nextTryAt } });

  test('is empty, bounded at 1024 unless told otherwise', () => {
    const backoff = new WakeBackoff();
    assert.deepEqual([backoff.len, backoff.bound], [0, 1_024]);
    assert.equal(backoff.get('e'), undefined);
    assert.equal(new WakeBackoff(3).bound, 3);
    for (const bound of [0, -1, 1.5, '8', null, 2 ** 32]) {
      throwsTimerInput(() => new WakeBackoff(bound), 'INVALID_BACKOFF', `new WakeBackoff(${show(bound)})`);
    }
  });

  test('records a backedOff, clears it on the row\'s final outcome, and leaves it for anything else', () => {
    const backoff = new WakeBackoff();
    assert.equal(backoff.apply(row, backedOff(1_000, 0, 1_150)), undefined);
    assert.deepEqual(backoff.get('e'), { wakeAt: 1_000, attempt: 0, nextTryAt: 1_150 });
    assert.equal(backoff.len, 1);
    backoff.apply({ executionId: 'e', wakeAt: 2_000 }, { outcome: 'fired', retired: true });
    assert.equal(backoff.len, 1, 'another wake of the execution does not clear the entry');
    for (const other of [{ outcome: 'notYet', retired: false, nextTryAt: 1_150 }, { outcome: 'left', retired: false }]) {
      backoff.apply(row, other);
      assert.equal(backoff.len, 1, `${other.outcome} leaves the entry`);
    }
    backoff.apply({ ...row, redrive: { attempt: 0 } }, { outcome: 'redriven', retired: true });
    backoff.apply({ ...row, redrive: { attempt: 0 } }, backedOff(1_000, 5, 9_999));
    assert.deepEqual(backoff.get('e'), { wakeAt: 1_000, attempt: 0, nextTryAt: 1_150 }, 're-drive rows leave the map');
    for (const final of ['fired', 'obsolete', 'exhausted']) {
      backoff.apply(row, backedOff(1_000, 1, 1_500));
      assert.equal(backoff.get('e').attempt, 1);
      backoff.apply(row, { outcome: final, retired: true });
      assert.equal(backoff.get('e'), undefined, `${final} clears the row's entry`);
    }
  });

  test('a new execution in a full map evicts the entry with the earliest nextTryAt', () => {
    const backoff = new WakeBackoff(2);
    backoff.apply({ executionId: 'late', wakeAt: 1 }, backedOff(1, 0, 900));
    backoff.apply({ executionId: 'early', wakeAt: 1 }, backedOff(1, 0, 100));
    const evicted = backoff.apply({ executionId: 'new', wakeAt: 1 }, backedOff(1, 0, 500));
    assert.deepEqual(evicted, { executionId: 'early', entry: { wakeAt: 1, attempt: 0, nextTryAt: 100 } });
    assert.equal(backoff.len, 2);
    assert.equal(backoff.get('early'), undefined);
    assert.equal(backoff.apply({ executionId: 'late', wakeAt: 1 }, backedOff(1, 1, 2_000)), undefined, 'an update evicts nothing');
  });

  test('refuses rows, outcomes and ids it cannot read', () => {
    const backoff = new WakeBackoff();
    throwsTimerInput(() => backoff.apply({ executionId: 'e' }, { outcome: 'fired' }), 'INVALID_TIME', 'a row without wakeAt');
    throwsTimerInput(() => backoff.apply(row, 'fired'), 'INVALID_OUTCOME', 'an outcome that is a string');
    throwsTimerInput(() => backoff.apply(row, { outcome: 'won' }), 'INVALID_OUTCOME', 'an unknown outcome');
    throwsTimerInput(() => backoff.apply(row, { outcome: 'backedOff', entry: { wakeAt: 1 } }), 'INVALID_BACKOFF', 'an entry without its fields');
    throwsTimerInput(() => backoff.get(''), 'INVALID_ID', 'an empty id');
    assert.equal(backoff.len, 0, 'nothing was recorded');
  });
});

// ---------------------------------------------------------------------------
// The fire machine.

const WAKE = AT + 5_000;
const NOW = WAKE + 10;

/** Starts `id` and parks it on `waits`; resolves to the park's sequence. */
async function parkOn(store, id, waits) {
  const written = await store.appendMany(id, [event('EXECUTION_STARTED'), event('EXECUTION_SUSPENDED', { payload: { waits } })]);
  return written[1].sequence;
}

const timer = (wakeAt) => ({ kind: 'TIMER', wakeAt });

/** `resume`'s rejections that answer the machine; anything else is thrown. */
function resumeAnswer(error) {
  if (error instanceof ResumeRefusedError || error instanceof ResumeContendedError) return error;
  throw error;
}

/**
 * Drives `fire` to its end the way a host does: reads and resumes against
 * `store`, re-drive rows to `redrivers` (functions of the row; a throw is
 * 'failed'), schedules and completes in `timers` under `claim` when given.
 * Resolves to `{ outcome, steps }`, or `{ voided: true, steps }` when the
 * claim's complete answered notHeld.
 */
async function drive(fire, { store, timers, claim, redrivers = [] } = {}) {
  const steps = [];
  for (;;) {
    const step = fire.poll();
    assert.deepEqual(fire.poll(), step, 'polling again without an answer gives the same');
    if ('done' in step) return { outcome: step.done, steps };
    steps.push(step);
    const id = fire.row.executionId;
    switch (step.act) {
      case 'readLog':
        fire.handleRead(await store.readRange(id, 1));
        break;
      case 'resume':
        fire.handleResumed(await resume(store, id, step.request).catch(resumeAnswer));
        break;
      case 'redrive': {
        let answer;
        try {
          answer = await redrivers[step.redriver](step.row);
        } catch {
          answer = 'failed';
        }
        fire.handleRedrive(answer);
        break;
      }
      case 'reschedule':
        if (timers && (await timers.reschedule(claim, step.row)) !== 'done') return { voided: true, steps };
        fire.handleRescheduled();
        break;
      case 'complete':
        if (timers && (await timers.complete(claim)) !== 'done') return { voided: true, steps };
        fire.handleCompleted();
        break;
      case 'exhaust':
        if (timers && (await timers.exhaust(claim, step.exhaustion)) !== 'done') return { voided: true, steps };
        fire.handleExhausted();
        break;
      default:
        assert.fail(`unknown action ${show(step)}`);
    }
  }
}

/** A view of `store` where every conditional acquire meets a rival that
 * took the token just before: every fenced resume is contended. */
function contended(store) {
  return wrap(store, {
    async acquireFenceIf(id, expectation) {
      await store.acquireFence(id);
      return store.acquireFenceIf(id, expectation);
    },
  });
}

const kinds = async (store, id) => (await store.readRange(id)).map((e) => e.kind);

describe('FireMachine: a plain wake', () => {
  test('pending: resumes its park with the timer answer, then retires the row (fired)', async () => {
    const store = new MemoryEventStore();
    const timers = new MemoryTimerStore();
    const parkSeq = await parkOn(store, 'w', [{ kind: 'MESSAGE', channel: 'c' }, timer(WAKE)]);
    const row = { executionId: 'w', wakeAt: WAKE };
    await timers.schedule(row);
    const [claim] = await timers.claimDue({ holder: 'node-1', now: NOW, durationMs: 30_000 }, 10);
    const fire = new FireMachine(claim.row, { now: NOW, random: 0.5 });
    assert.deepEqual(fire.row, row);
    const { outcome, steps } = await drive(fire, { store, timers, claim });
    assert.deepEqual(steps, [
      { act: 'readLog' },
      { act: 'resume', request: { fenceIfParkedAt: parkSeq, answer: { wait: 1, timer: { wakeAt: WAKE } }, at: NOW } },
      { act: 'complete', row },
    ]);
    assert.deepEqual(outcome, { outcome: 'fired', retired: true });
    const log = await store.readRange('w');
    assert.equal(log.at(-1).kind, 'EXECUTION_RESUMED');
    assert.deepEqual(log.at(-1).payload.answer, { wait: 1, timer: { wakeAt: WAKE } });
    assert.equal(log.at(-1).at, NOW);
    assert.deepEqual(await timers.due(Number.MAX_SAFE_INTEGER, 10), [], 'the row is retired');
  });

  test('not pending: retires the row without writing anything (obsolete)', async () => {
    const setups = {
      'an empty log': async () => {},
      'a running execution': (store, id) => store.append(id, event('EXECUTION_STARTED')),
      'an answered park': async (store, id) => {
        await parkOn(store, id, [timer(WAKE)]);
        await store.append(id, event('EXECUTION_RESUMED'));
      },
      'a park on another time': (store, id) => parkOn(store, id, [timer(WAKE + 1)]),
      'a park on other waits only': (store, id) => parkOn(store, id, [{ kind: 'MESSAGE', channel: 'c' }, { kind: 'CHILD_DONE', key: 'k' }]),
      'a park after the end': (store, id) => store.appendMany(id, [event('EXECUTION_COMPLETED'), event('EXECUTION_SUSPENDED', { payload: { waits: [timer(WAKE)] } })]),
      'a wait this node cannot read': (store, id) => parkOn(store, id, [{ kind: 'TIMER', wakeAt: WAKE, jitter: 1 }]),
    };
    for (const [what, setup] of Object.entries(setups)) {
      const store = new MemoryEventStore();
      await setup(store, 'o');
      const before = await store.readRange('o');
      const { outcome, steps } = await drive(new FireMachine({ executionId: 'o', wakeAt: WAKE }, { now: NOW, random: 0.5 }), { store });
      assert.deepEqual(steps.map((s) => s.act), ['readLog', 'complete'], what);
      assert.deepEqual(outcome, { outcome: 'obsolete', retired: true }, what);
      assert.deepEqual(await store.readRange('o'), before, `${what}: nothing written`);
    }
  });

  test('contended: backs off in process (backedOff, the row left), then notYet until the next try, then tries again', async () => {
    const store = new MemoryEventStore();
    await parkOn(store, 'c', [timer(WAKE)]);
    const policy = new RedrivePolicy();
    const backoff = new WakeBackoff();
    const row = { executionId: 'c', wakeAt: WAKE };
    const first = await drive(new FireMachine(row, { now: NOW, random: 0.5, policy, backoff: backoff.get('c') }), { store: contended(store) });
    assert.deepEqual(first.steps.map((s) => s.act), ['readLog', 'resume'], 'no complete: the row is left');
    const entry = { wakeAt: WAKE, attempt: 0, nextTryAt: NOW + policy.delayMs(0, 0.5) };
    assert.deepEqual(first.outcome, { outcome: 'backedOff', retired: false, entry });
    backoff.apply(row, first.outcome);
    assert.deepEqual(backoff.get('c'), entry);

    // Before the next try: nothing at all, not even a read.
    const early = new FireMachine(row, { now: entry.nextTryAt - 1, random: 0.5, backoff: backoff.get('c') });
    assert.deepEqual(early.poll(), { done: { outcome: 'notYet', retired: false, nextTryAt: entry.nextTryAt } });
    backoff.apply(row, early.poll().done);
    assert.deepEqual(backoff.get('c'), entry, 'notYet changes nothing');

    // At the next try: tried again, contended again, one try further.
    const second = await drive(new FireMachine(row, { now: entry.nextTryAt, random: 0.5, backoff: backoff.get('c') }), { store: contended(store) });
    assert.equal(second.outcome.outcome, 'backedOff');
    assert.deepEqual(second.outcome.entry, { wakeAt: WAKE, attempt: 1, nextTryAt: entry.nextTryAt + policy.delayMs(1, 0.5) });
    backoff.apply(row, second.outcome);

    // Uncontended at last: fired, and the entry is cleared.
    const third = await drive(new FireMachine(row, { now: second.outcome.entry.nextTryAt, random: 0.5, backoff: backoff.get('c') }), { store });
    assert.deepEqual(third.outcome, { outcome: 'fired', retired: true });
    backoff.apply(row, third.outcome);
    assert.equal(backoff.get('c'), undefined);
    assert.equal((await kinds(store, 'c')).filter((k) => k === 'EXECUTION_RESUMED').length, 1);
  });

  test('an entry of another wake of the execution starts the count at 0', async () => {
    const store = new MemoryEventStore();
    await parkOn(store, 'c', [timer(WAKE)]);
    const other = { wakeAt: WAKE - 100, attempt: 5, nextTryAt: NOW };
    const { outcome } = await drive(new FireMachine({ executionId: 'c', wakeAt: WAKE }, { now: NOW, random: 0, backoff: other }), { store: contended(store) });
    assert.deepEqual(outcome, { outcome: 'backedOff', retired: false, entry: { wakeAt: WAKE, attempt: 0, nextTryAt: NOW } });
  });

  test('contended with the retries spent: retires the row, records the exhaustion and reports once (exhausted)', async () => {
    const store = new MemoryEventStore();
    await parkOn(store, 'x', [timer(WAKE)]);
    const row = { executionId: 'x', wakeAt: WAKE };
    const backoff = new WakeBackoff();
    backoff.apply(row, { outcome: 'backedOff', retired: false, entry: { wakeAt: WAKE, attempt: 7, nextTryAt: NOW } });
    const { outcome, steps } = await drive(new FireMachine(row, { now: NOW, random: 0.5, backoff: backoff.get('x') }), { store: contended(store) });
    assert.deepEqual(steps.map((s) => s.act), ['readLog', 'resume', 'exhaust']);
    assert.deepEqual(steps[2].exhaustion, { attempts: 8, at: NOW }, 'what the timer store records');
    assert.equal(outcome.outcome, 'exhausted');
    assert.equal(outcome.retired, true);
    assert.ok(outcome.error instanceof RedriveExhaustedError && outcome.error instanceof Error);
    assert.deepEqual([outcome.error.executionId, outcome.error.wakeAt, outcome.error.attempts], ['x', WAKE, 8]);
    assert.match(outcome.error.message, /gave up after 8 retries/);
    backoff.apply(row, outcome);
    assert.equal(backoff.get('x'), undefined, 'the exhausted row\'s entry is cleared');

    const none = await drive(new FireMachine(row, { now: NOW, random: 0.5, policy: { maxAttempts: 0 } }), { store: contended(store) });
    assert.equal(none.outcome.outcome, 'exhausted', 'a policy of 0 retries gives up at the first contention');
    assert.equal(none.outcome.error.attempts, 0);
  });

  test('a refused resume reads again: obsolete once the park is answered, fired when it re-parked on the same time', async () => {
    for (const reparks of [false, true]) {
      const store = new MemoryEventStore();
      const parkSeq = await parkOn(store, 'r', [timer(WAKE)]);
      // A rival answers the park between the fire's read and its resume.
      const racing = wrap(store, {
        async readRange(...args) {
          const log = await store.readRange(...args);
          if (log.length === parkSeq) {
            await resume(store, 'r', { fenceIfParkedAt: parkSeq, answer: 'rival', at: AT });
            if (reparks) await store.append('r', { ...event('EXECUTION_SUSPENDED', { payload: { waits: [timer(WAKE)] } }), metadata: { fence: 1 } });
          }
          return log;
        },
      });
      const { outcome, steps } = await drive(new FireMachine({ executionId: 'r', wakeAt: WAKE }, { now: NOW, random: 0.5 }), { store: racing });
      if (reparks) {
        assert.deepEqual(steps.map((s) => s.act), ['readLog', 'resume', 'readLog', 'resume', 'complete']);
        assert.equal(steps[3].request.fenceIfParkedAt, parkSeq + 2, 'the new park is resumed');
        assert.deepEqual(outcome, { outcome: 'fired', retired: true });
      } else {
        assert.deepEqual(steps.map((s) => s.act), ['readLog', 'resume', 'readLog', 'complete']);
        assert.deepEqual(outcome, { outcome: 'obsolete', retired: true });
      }
    }
  });

  test('a claim voided by a schedule of the same row: the complete answers notHeld and the row stays due', async () => {
    const store = new MemoryEventStore();
    const timers = new MemoryTimerStore();
    const row = { executionId: 'v', wakeAt: WAKE };
    await timers.schedule(row);
    const [claim] = await timers.claimDue({ holder: 'node-1', now: NOW, durationMs: 30_000 }, 1);
    // The execution re-parks on the same time while the fire decides.
    await timers.schedule(row);
    const result = await drive(new FireMachine(claim.row, { now: NOW, random: 0.5 }), { store, timers, claim });
    assert.deepEqual(result, { voided: true, steps: [{ act: 'readLog' }, { act: 'complete', row }] });
    assert.deepEqual(await timers.due(NOW, 10), [row]);
  });
});

describe('FireMachine: a re-drive row', () => {
  const row = (attempt) => ({ executionId: 'd', wakeAt: WAKE, redrive: { attempt } });

  test('a re-driver answers done: retires the row (redriven)', async () => {
    const seen = [];
    const { outcome, steps } = await drive(new FireMachine(row(0), { now: NOW, random: 0.5, redrivers: 1 }), {
      redrivers: [(r) => (seen.push(r), 'done')],
    });
    assert.deepEqual(steps, [{ act: 'redrive', redriver: 0, row: row(0) }, { act: 'complete', row: row(0) }]);
    assert.deepEqual(outcome, { outcome: 'redriven', retired: true });
    assert.deepEqual(seen, [row(0)]);
  });

  test('noop asks the next re-driver; all noop retires the row (nothingToRedrive)', async () => {
    const second = await drive(new FireMachine(row(1), { now: NOW, random: 0.5, redrivers: 2 }), {
      redrivers: [() => 'noop', () => 'done'],
    });
    assert.deepEqual(second.steps.map((s) => s.redriver ?? s.act), [0, 1, 'complete']);
    assert.deepEqual(second.outcome, { outcome: 'redriven', retired: true });
    const none = await drive(new FireMachine(row(1), { now: NOW, random: 0.5, redrivers: 2 }), {
      redrivers: [() => 'noop', () => 'noop'],
    });
    assert.deepEqual(none.steps.map((s) => s.redriver ?? s.act), [0, 1, 'complete']);
    assert.deepEqual(none.outcome, { outcome: 'nothingToRedrive', retired: true });
  });

  test('contended or failed: schedules the next try, THEN retires this row (rescheduled)', async () => {
    const policy = new RedrivePolicy();
    for (const redriver of [() => 'contended', () => 'failed', () => { throw new Error('re-driver crashed'); }]) {
      const timers = new MemoryTimerStore();
      await timers.schedule(row(2));
      const [claim] = await timers.claimDue({ holder: 'node-1', now: NOW, durationMs: 30_000 }, 1);
      const { outcome, steps } = await drive(new FireMachine(claim.row, { now: NOW, random: 0.5, policy, redrivers: 1 }), {
        timers,
        claim,
        redrivers: [redriver],
      });
      const next = { executionId: 'd', wakeAt: redriveWakeAt(NOW, policy.delayMs(3, 0.5), WAKE), redrive: { attempt: 3 } };
      assert.deepEqual(steps.map((s) => s.act), ['redrive', 'reschedule']);
      assert.deepEqual(steps[1].row, next);
      assert.deepEqual(outcome, { outcome: 'rescheduled', retired: true, row: next });
      assert.deepEqual(await timers.due(Number.MAX_SAFE_INTEGER, 10), [next], 'the next row replaced the fired one');
    }
  });

  test('no re-driver registered here: the row is left for a node that has one (left)', () => {
    const fire = new FireMachine(row(0), { now: NOW, random: 0.5 });
    assert.deepEqual(fire.poll(), { done: { outcome: 'left', retired: false } });
  });

  test('contended with the retries spent: retires the row and records the exhaustion, no next row (exhausted)', async () => {
    const { outcome, steps } = await drive(new FireMachine(row(7), { now: NOW, random: 0.5, redrivers: 1 }), {
      redrivers: [() => 'contended'],
    });
    assert.deepEqual(steps.map((s) => s.act), ['redrive', 'exhaust']);
    assert.deepEqual(steps[1].exhaustion, { attempts: 8, at: NOW });
    assert.equal(outcome.outcome, 'exhausted');
    assert.ok(outcome.error instanceof RedriveExhaustedError);
    assert.deepEqual([outcome.error.executionId, outcome.error.wakeAt, outcome.error.attempts], ['d', WAKE, 8]);
    const last = await drive(new FireMachine({ executionId: 'd', wakeAt: Number.MAX_SAFE_INTEGER, redrive: { attempt: 0 } }, { now: Number.MAX_SAFE_INTEGER, random: 0, redrivers: 1 }), {
      redrivers: [() => 'failed'],
    });
    assert.equal(last.outcome.outcome, 'exhausted', 'no storable time follows 2^53-1');
  });
});

describe('FireMachine: input it refuses', () => {
  test('a bad row or context, or a row not due yet, is refused at construction', () => {
    const row = { executionId: 'b', wakeAt: WAKE };
    for (const [badRow, context, code] of [
      [row, { now: WAKE - 1 }, 'NOT_DUE'],
      [row, { now: -1 }, 'INVALID_TIME'],
      [row, { now: 0.5 }, 'INVALID_TIME'],
      [{ executionId: 'b', wakeAt: -1 }, { now: NOW }, 'INVALID_TIME'],
      [{ executionId: '', wakeAt: WAKE }, { now: NOW }, 'INVALID_ID'],
      [{ executionId: 'b', at: WAKE }, { now: NOW }, 'INVALID_ROW'],
      [row, { now: NOW, random: 1 }, 'INVALID_DRAW'],
      [row, { now: NOW, random: 0.5, jitter: 1 }, 'INVALID_CONTEXT'],
      [row, 'now', 'INVALID_CONTEXT'],
      [row, { now: NOW, redrivers: -1 }, 'INVALID_CONTEXT'],
      [row, { now: NOW, policy: { base: 1 } }, 'INVALID_POLICY'],
      [row, { now: NOW, backoff: { wakeAt: WAKE, attempt: 0 } }, 'INVALID_BACKOFF'],
    ]) {
      throwsTimerInput(() => new FireMachine(badRow, context), code, `new FireMachine(${show(badRow)}, ${show(context)})`);
    }
  });

  test('now and random default to the clock and Math.random()', () => {
    const fire = new FireMachine({ executionId: 'b', wakeAt: 0 });
    assert.deepEqual(fire.poll(), { act: 'readLog' });
    throwsTimerInput(() => new FireMachine({ executionId: 'b', wakeAt: Date.now() + 3_600_000 }), 'NOT_DUE', 'a row an hour ahead');
  });

  test('an answer that does not fit is refused and the machine is unchanged', async () => {
    const store = new MemoryEventStore();
    const parkSeq = await parkOn(store, 'u', [timer(WAKE)]);
    await parkOn(store, 'other', [timer(WAKE)]);
    const fire = new FireMachine({ executionId: 'u', wakeAt: WAKE }, { now: NOW, random: 0.5 });
    const refusedWith = (run, what) => {
      const before = fire.poll();
      throwsTimerInput(run, 'UNEXPECTED_ANSWER', what);
      assert.deepEqual(fire.poll(), before, `${what}: the machine is unchanged`);
    };
    refusedWith(() => fire.handleCompleted(), 'a complete while a read is pending');
    refusedWith(() => fire.handleRescheduled(), 'a reschedule while a read is pending');
    refusedWith(() => fire.handleRedrive('done'), 'a re-drive answer while a read is pending');
    refusedWith(() => fire.handleRead(undefined), 'a read that is not an array');
    refusedWith(() => fire.handleRead([{ kind: 'EXECUTION_STARTED' }]), 'a read of something that is not an envelope');
    const otherLog = await store.readRange('other');
    refusedWith(() => fire.handleRead(otherLog), 'a read of another execution');
    const log = await store.readRange('u');
    refusedWith(() => fire.handleRead(log.slice(1)), 'a read not from sequence 1');
    fire.handleRead(log);
    assert.equal(fire.poll().act, 'resume');
    refusedWith(() => fire.handleRead(log), 'a read while a resume is pending');
    refusedWith(() => fire.handleResumed(new Error('the store is down')), 'a store failure');
    refusedWith(() => fire.handleResumed(null), 'nothing');
    refusedWith(() => fire.handleResumed({ executionId: 'u' }), 'a result without the resume');
    refusedWith(
      () => fire.handleResumed(new ResumeRefusedError('refused', { executionId: 'u', parkSeq: parkSeq + 7 })),
      'a refusal of another park',
    );
    refusedWith(
      () => fire.handleResumed(new ResumeContendedError('contended', { executionId: 'other', attempts: 3 })),
      'a contention of another execution',
    );
    refusedWith(() => fire.handleRedrive('maybe'), 'an answer no re-driver gives');
    fire.handleResumed(await resume(store, 'u', fire.poll().request));
    fire.handleCompleted();
    assert.deepEqual(fire.poll(), { done: { outcome: 'fired', retired: true } });
    refusedWith(() => fire.handleCompleted(), 'an answer after the end');
  });

  test('a re-drive answer that is not one of the four is refused', () => {
    const fire = new FireMachine({ executionId: 'd', wakeAt: WAKE, redrive: { attempt: 0 } }, { now: NOW, random: 0.5, redrivers: 1 });
    for (const answer of ['Done', 'ok', true, undefined, 1]) {
      throwsTimerInput(() => fire.handleRedrive(answer), 'UNEXPECTED_ANSWER', show(answer));
    }
    assert.equal(fire.poll().act, 'redrive');
  });
});

// ---------------------------------------------------------------------------
// The error classes.

describe('timer error classes', () => {
  test('TimerInputError is a real Error with a code, apart from the event store\'s classes', async () => {
    const thrown = await new MemoryTimerStore().schedule({ executionId: 'e', wakeAt: -1 }).catch((e) => e);
    const constructed = new TimerInputError('made here', 'SOME_CODE');
    for (const [how, error] of [['thrown', thrown], ['constructed', constructed]]) {
      assert.ok(error instanceof TimerInputError && error instanceof Error, how);
      assert.ok(!(error instanceof InputError) && !(error instanceof TypeError) && !(error instanceof RangeError), `${how}: its own class`);
      assert.equal(error.name, 'TimerInputError');
      assert.equal(Object.prototype.toString.call(error), '[object Error]');
      assert.ok(error.stack.startsWith(`TimerInputError: ${error.message}`), error.stack);
    }
    assert.equal(thrown.code, 'INVALID_TIME');
    assert.equal(constructed.code, 'SOME_CODE');
  });

  test('RedriveExhaustedError is a real Error with its fields', () => {
    const error = new RedriveExhaustedError('gave up', { executionId: 'e', wakeAt: 5, attempts: 8 });
    assert.ok(error instanceof Error);
    assert.equal(error.name, 'RedriveExhaustedError');
    assert.deepEqual([error.executionId, error.wakeAt, error.attempts], ['e', 5, 8]);
    assert.ok(error.stack.startsWith('RedriveExhaustedError: gave up'));
  });

  test('require and import give the same classes', () => {
    const required = createRequire(import.meta.url)('loomfence/services');
    assert.equal(required.TimerInputError, TimerInputError);
    assert.equal(required.RedriveExhaustedError, RedriveExhaustedError);
    assert.equal(required.FireMachine, FireMachine);
    assert.equal(required.MemoryTimerStore, MemoryTimerStore);
  });
});
