// The package's TimerService, driven tick by tick (pollOnce) under an
// injected clock and a seeded random source, over the package's
// MemoryEventStore and MemoryTimerStore (and views of them that count, stall
// or put a rival in front of a call):
// 1. live re-drive: a parent parked on a child, a re-drive row, a re-driver
//    whose first K conditional resumes meet a rival: re-driven with backoff,
//    resumed exactly once, no manual recovery;
// 2. exhaustion: a re-driver that is always contended: maxAttempts rows, ONE
//    RedriveExhaustedError to onError, the row retired;
// 3. a service with no re-driver leaves re-drive rows (and still fires plain
//    wakes behind them); a second service with one fires them;
// 4. a plain wake fires once and retires its row; a contended plain wake
//    makes no acquire before its next try;
// 5. two services on one timer store never fire the same row; stop() lets
//    the fire in hand finish and releases the rest; a dead holder's row fires
//    once its lease ends;
// and the failures the service reports instead of deciding.
//
// `LOOMFENCE_SEED=<n>` replays the random draws of a run.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  MemoryEventStore,
  ResumeContendedError,
  ResumeRefusedError,
  locatePark,
  resume,
} from 'loomfence';
import {
  MemoryTimerStore,
  RedriveExhaustedError,
  RedrivePolicy,
  TimerInputError,
  TimerService,
} from 'loomfence/services';

import { AT, event, fenced, prng, wrap, wrapTimers, yielding, yieldingTimers } from './support.js';

const SEED = Number(process.env.LOOMFENCE_SEED ?? 0x5eed);
/** A few seeds per scenario, derived from SEED, so the draws vary. */
const SEEDS = [SEED, SEED + 1, SEED + 2, SEED + 3];

const MAX = Number.MAX_SAFE_INTEGER;
const T0 = AT + 60_000;
const POLL_MS = 250;
const LEASE_MS = 30_000;

/** A virtual clock: `now()` for the service, `advance(ms)` for the test. */
function clock(start = T0) {
  let t = start;
  return {
    now: () => t,
    advance(ms) {
      t += ms;
    },
    set(at) {
      t = at;
    },
  };
}

/** Every row of a timer store. */
const rowsOf = (timers) => timers.due(MAX, 10_000);

/** A view of `store` where a rival takes the token just before every conditional acquire. */
function contended(store) {
  return wrap(store, {
    async acquireFenceIf(id, expectation) {
      await store.acquireFence(id);
      return store.acquireFenceIf(id, expectation);
    },
  });
}

const CHILD = { kind: 'CHILD_DONE', key: 'c1' };
const timer = (wakeAt) => ({ kind: 'TIMER', wakeAt });

/** Starts `id` and parks it on `waits`; resolves to the park's sequence. */
async function parkOn(store, id, waits) {
  const written = await store.appendMany(id, [event('EXECUTION_STARTED'), event('EXECUTION_SUSPENDED', { payload: { waits } })]);
  return written[1].sequence;
}

const resumesOf = async (store, id) => (await store.readRange(id)).filter((e) => e.kind === 'EXECUTION_RESUMED');

/**
 * The child supervisor's re-driver, as a host writes one: re-reads the
 * parent's log; if its open park still waits on the child `c1`, resumes
 * that park conditionally (`fenceIfParkedAt`) with the child's answer.
 * `storeFor(call)` gives the store the call-th try (from 1) goes through.
 */
function childRedriver(storeFor, now) {
  let calls = 0;
  const redriver = async (executionId) => {
    calls++;
    redriver.calls.push({ executionId, at: now() });
    const store = storeFor(calls);
    const park = locatePark(await store.readRange(executionId));
    const wait = park ? (park.payload.waits ?? []).findIndex((w) => w.kind === CHILD.kind && w.key === CHILD.key) : -1;
    if (wait < 0) return 'noop';
    try {
      await resume(store, executionId, { fenceIfParkedAt: park.sequence, answer: { wait, child: { key: 'c1', ok: true } }, at: now() });
      return 'done';
    } catch (error) {
      if (error instanceof ResumeRefusedError) return 'noop';
      if (error instanceof ResumeContendedError) return 'contended';
      throw error;
    }
  };
  redriver.calls = [];
  return redriver;
}

/** onError into an array. */
function collector() {
  const errors = [];
  const onError = (error, info) => errors.push({ error, info });
  return { errors, onError };
}

/**
 * Polls `service` every `step` ms of virtual time until `done()`; resolves
 * to the reports. After `limit` ticks it fails, unless `orStop` is set: then
 * it resolves, and the caller's assertions say what went wrong.
 */
async function pollUntil(service, time, done, { step = POLL_MS, limit = 2_000, orStop = false } = {}) {
  const reports = [];
  for (let tick = 0; tick < limit; tick++) {
    if (await done()) return reports;
    reports.push({ at: time.now(), report: await service.pollOnce() });
    time.advance(step);
  }
  if (!orStop) assert.fail(`not done after ${limit} ticks`);
  return reports;
}

/** The fires of some reports, each with the time of its tick. */
const firesOf = (reports) => reports.flatMap(({ at, report }) => report.fires.map((f) => ({ at, ...f })));

// ---------------------------------------------------------------------------

describe('TimerService: live re-drive', () => {
  for (const seed of SEEDS) {
    test(`a re-driver contended K times is re-driven with backoff, and the parent is resumed exactly once (seed ${seed})`, async () => {
      const K = 3;
      const events = new MemoryEventStore();
      const memory = new MemoryTimerStore();
      const time = clock();
      await parkOn(events, 'parent', [CHILD]);
      // What the supervisor writes on its contended resume: row attempt 0.
      await memory.schedule({ executionId: 'parent', wakeAt: T0, redrive: { attempt: 0 } });
      const scheduled = [];
      const timers = wrapTimers(memory, {
        async reschedule(claim, row) {
          scheduled.push({ row, at: time.now() });
          return memory.reschedule(claim, row);
        },
      });
      const { errors, onError } = collector();
      const service = new TimerService({ events, timers, node: 'n1', now: time.now, random: prng(seed), onError });
      // A rival acquires before every conditional acquire of the first K tries.
      const redriver = childRedriver((call) => (call <= K ? contended(events) : events), time.now);
      service.registerRedriver(redriver);

      const reports = await pollUntil(service, time, async () => (await rowsOf(memory)).length === 0);

      assert.deepEqual(errors, [], 'nothing reported');
      assert.equal(redriver.calls.length, K + 1, 'K contended tries, then the one that lands');
      const policy = new RedrivePolicy();
      assert.deepEqual(scheduled.map((s) => s.row.redrive), Array.from({ length: K }, (_, n) => ({ attempt: n + 1 })), 'one row per contended try, attempts increasing');
      let previous = T0;
      for (const [n, { row, at }] of scheduled.entries()) {
        assert.equal(row.executionId, 'parent');
        assert.ok(row.wakeAt >= previous + 1, `row ${n + 1} at ${row.wakeAt}, not after the previous row's ${previous}`);
        assert.ok(row.wakeAt < Math.max(at + policy.ceilingMs(n + 1), previous + 2), `row ${n + 1}: its delay is within the policy's ceiling`);
        // The re-driver's next try waited for the row.
        assert.ok(redriver.calls[n + 1].at >= row.wakeAt, `try ${n + 2} at ${redriver.calls[n + 1].at}, before its row's ${row.wakeAt}`);
        previous = row.wakeAt;
      }
      const results = firesOf(reports).map((f) => f.result);
      assert.deepEqual(results, [...Array(K).fill('rescheduled'), 'redriven']);
      const resumed = await resumesOf(events, 'parent');
      assert.equal(resumed.length, 1, 'exactly one EXECUTION_RESUMED');
      assert.deepEqual(resumed[0].payload.answer, { wait: 0, child: { key: 'c1', ok: true } });

      // Later ticks find nothing to do.
      time.advance(3_600_000);
      const after = await service.pollOnce();
      assert.equal(after.claimed, 0);
      assert.equal((await resumesOf(events, 'parent')).length, 1);
    });
  }
});

describe('TimerService: exhaustion', () => {
  for (const [what, policyInit] of [
    ['the default policy', undefined],
    ['a policy of 3 retries', { baseMs: 10, capMs: 50, maxAttempts: 3 }],
  ]) {
    test(`a re-driver always contended: maxAttempts rows, then ONE RedriveExhaustedError and the row retired (${what})`, async () => {
      const events = new MemoryEventStore();
      const memory = new MemoryTimerStore();
      const time = clock();
      await parkOn(events, 'parent', [CHILD]);
      await memory.schedule({ executionId: 'parent', wakeAt: T0, redrive: { attempt: 0 } });
      const rows = [{ executionId: 'parent', wakeAt: T0, redrive: { attempt: 0 } }];
      const timers = wrapTimers(memory, {
        async reschedule(claim, row) {
          rows.push(row);
          return memory.reschedule(claim, row);
        },
      });
      const { errors, onError } = collector();
      const service = new TimerService({ events, timers, node: 'n1', now: time.now, random: prng(SEED), policy: policyInit, onError });
      let calls = 0;
      service.registerRedriver(async () => {
        calls++;
        return 'contended';
      });

      // The default policy's chain spans under a minute (the sum of its
      // ceilings, 200 ms doubling to 25.6 s); poll for three.
      await pollUntil(service, time, async () => (await rowsOf(memory)).length === 0, { limit: 720, orStop: true });
      // Well past the end: nothing more is reported.
      for (let tick = 0; tick < 5; tick++) {
        time.advance(LEASE_MS);
        await service.pollOnce();
      }

      const max = new RedrivePolicy(policyInit).maxAttempts;
      assert.equal(errors.length, 1, `exactly one report, got ${errors.length}: ${errors.slice(0, 3).map((e) => e.error).join('; ')}`);
      const [{ error, info }] = errors;
      assert.ok(error instanceof RedriveExhaustedError, `a RedriveExhaustedError, got ${error}`);
      assert.deepEqual(await rowsOf(memory), [], 'the row is retired');
      assert.equal(rows.length, max, `maxAttempts (${max}) rows in all`);
      assert.deepEqual(rows.map((r) => r.redrive.attempt), Array.from({ length: max }, (_, n) => n));
      assert.equal(calls, max, 'one re-drive per row');
      assert.deepEqual([error.executionId, error.wakeAt, error.attempts], ['parent', rows.at(-1).wakeAt, max]);
      assert.deepEqual(info, { stage: 'exhausted', row: rows.at(-1) });
      assert.deepEqual(await resumesOf(events, 'parent'), [], 'left parked, for recover()');
    });
  }
});

describe('TimerService: a node without re-drivers', () => {
  test('leaves re-drive rows in the store, still fires the plain wakes behind them, and a node with a re-driver fires them', async () => {
    const events = new MemoryEventStore();
    const timers = new MemoryTimerStore();
    const time = clock();
    await parkOn(events, 'parent', [CHILD]);
    await parkOn(events, 'sleeper', [timer(T0 + 5)]);
    const redriveRow = { executionId: 'parent', wakeAt: T0, redrive: { attempt: 0 } };
    await timers.schedule(redriveRow);
    await timers.schedule({ executionId: 'sleeper', wakeAt: T0 + 5 });
    time.set(T0 + 10);

    const plain = collector();
    const bare = new TimerService({ events, timers, node: 'bare', now: time.now, random: prng(SEED), batch: 1, onError: plain.onError });
    const first = await bare.pollOnce();
    assert.deepEqual(first.fires.map((f) => [f.row.executionId, f.result]), [['sleeper', 'fired']], 'the plain wake behind the re-drive row, with a batch of 1');
    for (let tick = 0; tick < 10; tick++) {
      time.advance(LEASE_MS);
      const report = await bare.pollOnce();
      assert.equal(report.claimed, 0, 'the re-drive row is never claimed here');
    }
    assert.deepEqual(await rowsOf(timers), [redriveRow], 'the row stays');
    assert.deepEqual(await resumesOf(events, 'parent'), []);
    assert.deepEqual(plain.errors, []);

    const other = collector();
    const redriving = new TimerService({ events, timers, node: 'redriving', now: time.now, random: prng(SEED), onError: other.onError });
    redriving.registerRedriver(childRedriver(() => events, time.now));
    assert.equal(redriving.redrivers, 1);
    const report = await redriving.pollOnce();
    assert.deepEqual(report.fires.map((f) => [f.row, f.result]), [[redriveRow, 'redriven']]);
    assert.deepEqual(await rowsOf(timers), []);
    assert.equal((await resumesOf(events, 'parent')).length, 1);
    assert.deepEqual(other.errors, []);
  });

  test('re-drivers are asked in registration order; the first answer that is not noop wins', async () => {
    const events = new MemoryEventStore();
    const timers = new MemoryTimerStore();
    const time = clock();
    await parkOn(events, 'parent', [CHILD]);
    await timers.schedule({ executionId: 'parent', wakeAt: T0, redrive: { attempt: 0 } });
    const asked = [];
    const service = new TimerService({ events, timers, now: time.now, random: prng(SEED), onError: assert.fail });
    service.registerRedriver(async (id) => (asked.push(['inbox', id]), 'noop'));
    service.registerRedriver(async (id) => (asked.push(['children', id]), 'done'));
    service.registerRedriver(async (id) => (asked.push(['never', id]), 'done'));
    const report = await service.pollOnce();
    assert.deepEqual(asked, [['inbox', 'parent'], ['children', 'parent']]);
    assert.equal(report.redriven, 1);
  });
});

describe('TimerService: plain wakes', () => {
  test('a plain wake fires once, with its timer answer, and retires its row', async () => {
    const events = new MemoryEventStore();
    const timers = new MemoryTimerStore();
    const time = clock();
    const WAKE = T0 + 1_000;
    await parkOn(events, 'sleeper', [{ kind: 'MESSAGE', channel: 'c' }, timer(WAKE)]);
    await timers.schedule({ executionId: 'sleeper', wakeAt: WAKE });
    const service = new TimerService({ events, timers, now: time.now, random: prng(SEED), onError: assert.fail });
    const reports = await pollUntil(service, time, async () => (await rowsOf(timers)).length === 0, { step: 100 });
    const fires = firesOf(reports);
    assert.deepEqual(fires.map((f) => f.result), ['fired']);
    assert.ok(fires[0].at >= WAKE, 'not before its time');
    assert.ok(reports.filter((r) => r.at < WAKE).every((r) => r.report.claimed === 0), 'nothing claimed before the wake');
    for (let tick = 0; tick < 5; tick++) {
      time.advance(LEASE_MS);
      assert.equal((await service.pollOnce()).claimed, 0);
    }
    const resumed = await resumesOf(events, 'sleeper');
    assert.equal(resumed.length, 1);
    assert.deepEqual(resumed[0].payload.answer, { wait: 1, timer: { wakeAt: WAKE } });
    assert.equal(resumed[0].at, fires[0].at, 'stamped with the service clock');
  });

  test('a plain wake hands its resume to onResumed once, to start the body; an obsolete one hands nothing; a hook that throws is reported and the resume stands', async () => {
    const events = new MemoryEventStore();
    const timers = new MemoryTimerStore();
    await parkOn(events, 'sleeper', [timer(T0)]);
    await timers.schedule({ executionId: 'sleeper', wakeAt: T0 });
    const handed = [];
    const service = new TimerService({ events, timers, now: () => T0, random: prng(SEED), onError: assert.fail, onResumed: (resumed) => handed.push(resumed) });
    assert.equal((await service.pollOnce()).fired, 1);
    assert.equal(handed.length, 1);
    assert.equal(handed[0].executionId, 'sleeper');
    const body = await events.append('sleeper', fenced(event('STEP_COMPLETED'), handed[0].fence));
    assert.equal(body.metadata.fence, handed[0].fence, 'the body writes under the resume token');

    await timers.schedule({ executionId: 'sleeper', wakeAt: T0 });
    assert.equal((await service.pollOnce()).obsolete, 1);
    assert.equal(handed.length, 1, 'nothing handed on for an obsolete wake');

    await parkOn(events, 'other', [timer(T0)]);
    await timers.schedule({ executionId: 'other', wakeAt: T0 });
    const reported = [];
    const throwing = new TimerService({
      events,
      timers,
      now: () => T0,
      random: prng(SEED),
      onError: (error, info) => reported.push([error.message, info.stage, info.row.executionId]),
      onResumed: () => {
        throw new Error('the host could not start the body');
      },
    });
    const report = await throwing.pollOnce();
    assert.equal(report.fired, 1);
    assert.deepEqual(reported, [['the host could not start the body', 'onResumed', 'other']]);
    assert.equal((await resumesOf(events, 'other')).length, 1, 'the resume stands');
    assert.equal((await rowsOf(timers)).length, 0, 'the row is retired');
    assert.throws(() => new TimerService({ events, timers, onResumed: 'start' }), (error) => error.code === 'INVALID_OPTIONS');
  });

  test('an obsolete wake is retired without writing anything', async () => {
    const events = new MemoryEventStore();
    const timers = new MemoryTimerStore();
    await parkOn(events, 'moved', [timer(T0 + 1)]);
    await timers.schedule({ executionId: 'moved', wakeAt: T0 });
    const before = await events.readRange('moved');
    const service = new TimerService({ events, timers, now: () => T0, random: prng(SEED), onError: assert.fail });
    const report = await service.pollOnce();
    assert.equal(report.obsolete, 1);
    assert.deepEqual(await rowsOf(timers), []);
    assert.deepEqual(await events.readRange('moved'), before);
  });

  for (const seed of SEEDS) {
    test(`a contended plain wake makes no acquire before its next try (seed ${seed})`, async () => {
      const memory = new MemoryEventStore();
      const timers = new MemoryTimerStore();
      const time = clock();
      const WAKE = T0 + 100;
      const FREE_AT = WAKE + 2_500;
      await parkOn(memory, 'busy', [timer(WAKE)]);
      await timers.schedule({ executionId: 'busy', wakeAt: WAKE });
      // Every conditional acquire is counted; until FREE_AT a rival takes
      // the token just before it.
      const acquires = [];
      const events = wrap(memory, {
        async acquireFenceIf(id, expectation) {
          acquires.push(time.now());
          if (time.now() < FREE_AT) await memory.acquireFence(id);
          return memory.acquireFenceIf(id, expectation);
        },
      });
      const service = new TimerService({ events, timers, now: time.now, random: prng(seed), onError: assert.fail });
      // A tick every 10 ms: far more often than any next try.
      const reports = await pollUntil(service, time, async () => (await rowsOf(timers)).length === 0, { step: 10 });
      const fires = firesOf(reports);
      const backedOff = fires.filter((f) => f.result === 'backedOff');
      assert.ok(backedOff.length >= 2, `contended more than once (${backedOff.length})`);
      for (const { at, outcome } of backedOff) {
        const early = acquires.filter((a) => a > at && a < outcome.entry.nextTryAt);
        assert.equal(early.length, 0, `${early.length} acquires after backing off at ${at} until ${outcome.entry.nextTryAt}, the first at ${early[0]}`);
      }
      assert.deepEqual(backedOff.map((f) => f.outcome.entry.attempt), backedOff.map((_, n) => n), 'each contended try is one further');
      assert.ok(fires.some((f) => f.result === 'notYet'), 'the ticks in between were gated');
      assert.equal(new Set(acquires).size, backedOff.length + 1, 'one fire that acquires per try, no more');
      assert.equal(fires.filter((f) => f.result === 'fired').length, 1);
      assert.equal(fires.at(-1).result, 'fired');
      assert.ok(fires.at(-1).at >= FREE_AT);
      assert.equal((await resumesOf(memory, 'busy')).length, 1);
    });
  }
});

describe('TimerService: several services, one store', () => {
  for (const seed of SEEDS) {
    test(`two services polling at once never fire the same row (seed ${seed})`, async () => {
      const memory = new MemoryEventStore();
      const store = new MemoryTimerStore();
      const time = clock();
      const ids = [];
      for (let n = 0; n < 24; n++) {
        const id = `sleeper-${n}`;
        ids.push(id);
        await parkOn(memory, id, [timer(T0 + (n % 6) * 37)]);
        await store.schedule({ executionId: id, wakeAt: T0 + (n % 6) * 37 });
      }
      for (let n = 0; n < 8; n++) {
        const id = `parent-${n}`;
        ids.push(id);
        await parkOn(memory, id, [CHILD]);
        await store.schedule({ executionId: id, wakeAt: T0 + (n % 3) * 53, redrive: { attempt: 0 } });
      }
      const random = prng(seed);
      const services = ['a', 'b'].map((node) => {
        const service = new TimerService({
          events: yielding(memory),
          timers: yieldingTimers(store),
          node,
          batch: 3,
          now: time.now,
          random,
          onError: assert.fail,
        });
        service.registerRedriver(childRedriver(() => memory, time.now));
        return service;
      });
      const fired = new Map();
      for (let round = 0; round < 200 && (await rowsOf(store)).length > 0; round++) {
        const reports = await Promise.all(services.map((s) => s.pollOnce()));
        const [a, b] = reports.map((r) => r.fires.map((f) => `${f.row.executionId}@${f.row.wakeAt}`));
        assert.deepEqual(a.filter((key) => b.includes(key)), [], `round ${round}: both services fired ${a.filter((key) => b.includes(key))}`);
        for (const [index, report] of reports.entries()) {
          const node = services[index].node;
          for (const f of report.fires) {
            const key = `${f.row.executionId}@${f.row.wakeAt}`;
            assert.ok(!fired.has(key), `${key} fired twice (${fired.get(key)} then ${node})`);
            fired.set(key, `${node}:${f.result}`);
          }
        }
        time.advance(20);
      }
      assert.deepEqual(await rowsOf(store), [], 'every row retired');
      assert.equal(fired.size, 32);
      assert.deepEqual(new Set([...fired.values()].map((v) => v.split(':')[0])), new Set(['a', 'b']), 'both services fired rows');
      assert.ok([...fired.values()].every((v) => v.endsWith(':fired') || v.endsWith(':redriven')), [...fired.values()].join(', '));
      for (const id of ids) assert.equal((await resumesOf(memory, id)).length, 1, id);
    });
  }

  test('stop() lets the fire in hand finish, releases the claims it did not fire, and ends the loop', async () => {
    const memory = new MemoryEventStore();
    const store = new MemoryTimerStore();
    const time = clock();
    const rows = [];
    for (let n = 0; n < 5; n++) {
      await parkOn(memory, `s${n}`, [timer(T0 + n)]);
      rows.push({ executionId: `s${n}`, wakeAt: T0 + n });
      await store.schedule(rows[n]);
    }
    time.set(T0 + 10);
    // The first fire's read waits for the gate.
    let reached;
    const inHand = new Promise((resolve) => (reached = resolve));
    let open;
    const gate = new Promise((resolve) => (open = resolve));
    const events = wrap(memory, {
      async readRange(id, ...rest) {
        if (id === 's0') {
          reached();
          await gate;
        }
        return memory.readRange(id, ...rest);
      },
    });
    let claimCalls = 0;
    const timers = wrapTimers(store, {
      claimDue(...args) {
        claimCalls++;
        return store.claimDue(...args);
      },
    });
    const service = new TimerService({ events, timers, node: 'stopping', pollIntervalMs: 1, now: time.now, random: prng(SEED), onError: assert.fail });
    service.start();
    assert.equal(service.running, true);
    await inHand;
    let stopped = false;
    const stopping = service.stop().then(() => (stopped = true));
    assert.equal(service.running, false);
    assert.deepEqual(await service.pollOnce(), { ...(await emptyReport()) }, 'a tick asked for during a stop does nothing');
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(stopped, false, 'stop waits for the fire in hand');
    assert.deepEqual(await store.claimDue({ holder: 'other', now: time.now(), durationMs: LEASE_MS }, 10), [], 'meanwhile the service holds every row');
    open();
    await stopping;
    assert.equal((await resumesOf(memory, 's0')).length, 1, 'the fire in hand finished');
    const taken = await store.claimDue({ holder: 'other', now: time.now(), durationMs: LEASE_MS }, 10);
    assert.deepEqual(taken.map((c) => c.row), rows.slice(1), 'the unfired rows were released: claimable at once, before their lease would end');
    const calls = claimCalls;
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.equal(claimCalls, calls, 'no tick after the stop');
    for (let n = 1; n < 5; n++) assert.deepEqual(await resumesOf(memory, `s${n}`), []);
  });

  test('a holder that died with a claim: the row fires once its lease ends', async () => {
    const events = new MemoryEventStore();
    const timers = new MemoryTimerStore();
    const time = clock();
    await parkOn(events, 'orphan', [timer(T0)]);
    await timers.schedule({ executionId: 'orphan', wakeAt: T0 });
    await timers.claimDue({ holder: 'dead', now: T0, durationMs: LEASE_MS }, 10);
    const service = new TimerService({ events, timers, now: time.now, random: prng(SEED), onError: assert.fail });
    time.set(T0 + LEASE_MS - 1);
    assert.equal((await service.pollOnce()).claimed, 0, 'held until the lease ends');
    time.set(T0 + LEASE_MS);
    assert.equal((await service.pollOnce()).fired, 1);
    assert.equal((await resumesOf(events, 'orphan')).length, 1);
  });
});

/** A PollReport of a tick that did nothing. */
async function emptyReport() {
  const service = new TimerService({ events: new MemoryEventStore(), timers: new MemoryTimerStore(), onError: assert.fail });
  return service.pollOnce();
}

describe('TimerService: failures are reported, not decided', () => {
  test('a store that fails mid-fire: reported, the fire dropped, its claim left to expire, then fired by the next claimer', async () => {
    const memory = new MemoryEventStore();
    const timers = new MemoryTimerStore();
    const time = clock();
    await parkOn(memory, 'flaky', [timer(T0)]);
    await timers.schedule({ executionId: 'flaky', wakeAt: T0 });
    let failures = 1;
    const events = wrap(memory, {
      async readRange(...args) {
        if (failures > 0) {
          failures--;
          throw new Error('the database is down');
        }
        return memory.readRange(...args);
      },
    });
    const { errors, onError } = collector();
    const service = new TimerService({ events, timers, now: time.now, random: prng(SEED), onError });
    const first = await service.pollOnce();
    assert.equal(first.errors, 1);
    assert.deepEqual(first.fires.map((f) => [f.result, f.stage]), [['failed', 'readLog']]);
    assert.equal(errors.length, 1);
    assert.equal(errors[0].error.message, 'the database is down');
    assert.deepEqual(errors[0].info, { stage: 'readLog', row: { executionId: 'flaky', wakeAt: T0 } });
    time.advance(LEASE_MS - 1);
    assert.equal((await service.pollOnce()).claimed, 0, 'the claim is left to its lease');
    time.advance(1);
    assert.equal((await service.pollOnce()).fired, 1);
    assert.equal((await resumesOf(memory, 'flaky')).length, 1);
  });

  test('a re-driver that throws or answers outside its three answers is a failed try: reported, and the chain goes on', async () => {
    for (const bad of [() => { throw new Error('re-driver crashed'); }, () => 'maybe', () => undefined]) {
      const events = new MemoryEventStore();
      const timers = new MemoryTimerStore();
      await parkOn(events, 'parent', [CHILD]);
      await timers.schedule({ executionId: 'parent', wakeAt: T0, redrive: { attempt: 0 } });
      const { errors, onError } = collector();
      const service = new TimerService({ events, timers, now: () => T0, random: () => 0, onError });
      service.registerRedriver(bad);
      const report = await service.pollOnce();
      assert.equal(report.rescheduled, 1);
      assert.deepEqual(await rowsOf(timers), [{ executionId: 'parent', wakeAt: T0 + 1, redrive: { attempt: 1 } }]);
      assert.equal(errors.length, 1);
      assert.equal(errors[0].info.stage, 'redrive');
    }
  });

  test('an exhaust that answers notHeld voids the decision: nothing applied, nothing recorded, nothing reported', async () => {
    const events = new MemoryEventStore();
    const memory = new MemoryTimerStore();
    await parkOn(events, 'parent', [CHILD]);
    const row = { executionId: 'parent', wakeAt: T0, redrive: { attempt: 7 } };
    await memory.schedule(row);
    // The row is scheduled again while the fire decides: its claim ends.
    const timers = wrapTimers(memory, {
      async exhaust(claim, exhaustion) {
        await memory.schedule(row);
        return memory.exhaust(claim, exhaustion);
      },
    });
    const { errors, onError } = collector();
    const service = new TimerService({ events, timers, now: () => T0, random: prng(SEED), onError });
    service.registerRedriver(async () => 'contended');
    const report = await service.pollOnce();
    assert.equal(report.notHeld, 1);
    assert.equal(report.exhausted, 0);
    assert.deepEqual(errors, [], 'an exhaustion whose exhaust was notHeld is not reported');
    assert.deepEqual(await rowsOf(memory), [row], 'the row is due again');
  });

  test('a clock that throws or answers no time is reported, the tick ends, and the next one runs', async () => {
    const events = new MemoryEventStore();
    const timers = new MemoryTimerStore();
    await parkOn(events, 'sleeper', [timer(T0)]);
    await timers.schedule({ executionId: 'sleeper', wakeAt: T0 });
    const readings = [() => { throw new Error('no clock'); }, () => Number.NaN, () => T0];
    let reading = 0;
    const now = () => readings[Math.min(reading++, readings.length - 1)]();
    const { errors, onError } = collector();
    const service = new TimerService({ events, timers, now, random: prng(SEED), onError });
    for (const expected of ['no clock', /now must be a/]) {
      const report = await service.pollOnce();
      assert.deepEqual([report.claimed, report.errors], [0, 1]);
      assert.equal(errors.at(-1).info.stage, 'claim');
      assert.match(errors.at(-1).error.message, typeof expected === 'string' ? new RegExp(expected) : expected);
    }
    assert.equal((await service.pollOnce()).fired, 1, 'the next tick runs');
  });

  test('an onError that throws does not stop the tick', async () => {
    const events = new MemoryEventStore();
    const timers = new MemoryTimerStore();
    for (const id of ['a', 'b']) {
      await parkOn(events, id, [CHILD]);
      await timers.schedule({ executionId: id, wakeAt: T0, redrive: { attempt: 0 } });
    }
    const original = console.error;
    const logged = [];
    console.error = (...args) => logged.push(args);
    try {
      const service = new TimerService({ events, timers, now: () => T0, random: () => 0.5, onError: () => { throw new Error('handler bug'); } });
      service.registerRedriver(() => { throw new Error('boom'); });
      const report = await service.pollOnce();
      assert.equal(report.rescheduled, 2);
      assert.equal(logged.length, 2);
    } finally {
      console.error = original;
    }
  });

  test('options it cannot use are refused at construction', () => {
    const events = new MemoryEventStore();
    const timers = new MemoryTimerStore();
    for (const [options, code] of [
      [undefined, 'INVALID_OPTIONS'],
      [{ timers }, 'INVALID_OPTIONS'],
      [{ events }, 'INVALID_OPTIONS'],
      [{ events, timers: { claimDue() {} } }, 'INVALID_OPTIONS'],
      [{ events, timers, pollInterval: 5 }, 'INVALID_OPTIONS'],
      [{ events, timers, batch: 0 }, 'INVALID_OPTIONS'],
      [{ events, timers, batch: 10_001 }, 'INVALID_OPTIONS'],
      [{ events, timers, leaseMs: 1.5 }, 'INVALID_OPTIONS'],
      [{ events, timers, pollIntervalMs: -1 }, 'INVALID_OPTIONS'],
      [{ events, timers, node: '' }, 'INVALID_OPTIONS'],
      [{ events, timers, now: 5 }, 'INVALID_OPTIONS'],
      [{ events, timers, policy: { base: 1 } }, 'INVALID_POLICY'],
      [{ events, timers, backoffBound: 0 }, 'INVALID_BACKOFF'],
    ]) {
      assert.throws(() => new TimerService(options), (error) => error instanceof TimerInputError && error.code === code, JSON.stringify(options));
    }
    const service = new TimerService({ events, timers });
    assert.match(service.node, /^js-\d+-[0-9a-z]{8}$/);
    assert.throws(() => service.registerRedriver('redriver'), TimerInputError);
  });
});
