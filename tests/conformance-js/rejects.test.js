// Hostile input at the package's edge: what a
// caller's object throws while the package reads it is never data, and every
// promise-returning function and method rejects (never throws) with the
// class and code the package documents, leaving the instance usable.
//
// - A throw while `resume` reads its options (a getter, a Proxy trap, a
//   revoked Proxy) is an InputError `INVALID_OPTIONS`, whatever was thrown:
//   before, an array thrown by `fenceIfParkedAt` was read as the options
//   and its answer appended (on the memory path and the host-store path).
// - A revoked Proxy handed as an event, a timer row or a store rejects;
//   before, each threw synchronously.
// - A host store's envelope whose `at` is no safe integer is a store-contract
//   InputError, like every other field of its answer.
// - An option nested 10,000 deep is refused with the pump's own class, not
//   a stack overflow from the message's formatting.
//
// The properties run each call over generated hostile values (10,000 calls
// in the widest) and check the stores unchanged after each refusal, then
// that a normal park/resume still works; the seed is printed, and SIM_SEED
// replays it.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { InputError, MemoryEventStore, ResumeRefusedError, resume } from 'loomfence';
import { ChildSupervisor, MemoryTimerStore, TimerInputError, TimerService, sweep } from 'loomfence/services';

import { PlainEventStore } from './plain-store.js';
import { build, nested, revoked, trapping } from './hostile.js';
import { AT, Witness, describe as describeError, event, park, wrap } from './support.js';

const SEED = process.env.SIM_SEED ? Number(process.env.SIM_SEED) : Math.floor(Math.random() * 2 ** 32);
console.log(`rejects.test.js: SIM_SEED=${SEED}`);

/** The three ways `resume` runs: inside WebAssembly over the package's store,
 * stepped over its methods (a wrapper), and over a plain-JavaScript store. */
const STORES = {
  memory: () => new MemoryEventStore(),
  'host store (wrapped MemoryEventStore)': () => wrap(new MemoryEventStore()),
  'host store (PlainEventStore)': () => new PlainEventStore(),
};

/** Calls `f`, failing on a synchronous throw, and returns its promise. */
function called(f, what) {
  let returned;
  try {
    returned = f();
  } catch (error) {
    assert.fail(`${what}: threw synchronously instead of rejecting: ${describeError(error)}`);
  }
  assert.ok(returned instanceof Promise, `${what}: did not return a promise`);
  return returned;
}

/** Asserts `promise` rejects with an instance of `type` with `code`. */
async function refused(promise, type, code, what) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof type, `${what}: expected a ${type.name} ${code}, got ${describeError(error)}`);
    assert.equal(error.code, code, `${what}: wrong code on ${describeError(error)}`);
    return true;
  });
}

/** A documented refusal: an Error with a string `code`. */
async function documented(promise, what) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof Error && typeof error.code === 'string', `${what}: expected a documented refusal, got ${describeError(error)}`);
    return true;
  });
}

describe('a throw while resume reads its options is a refusal, never data', () => {
  for (const [name, make] of Object.entries(STORES)) {
    test(`${name}: an array thrown by a getter is not read as the options`, async () => {
      const store = make();
      const parkSeq = await park(store, 'e');
      const witness = await Witness.capture(store, 'e');
      const options = {
        get fenceIfParkedAt() {
          throw [parkSeq, '"x"', 5];
        },
      };
      await refused(called(() => resume(store, 'e', options), 'resume'), InputError, 'INVALID_OPTIONS', 'a throwing getter');
      await witness.assertUnchanged(store, 'a refused resume');
      const resumed = await resume(store, 'e', { fenceIfParkedAt: parkSeq, answer: 'y', at: AT });
      assert.deepEqual(resumed.resumed.payload, { answer: 'y' }, 'the resume after it lands');
    });

    test(`${name}: whatever a getter, a trap or a revoked Proxy throws, the resume is refused and nothing changes (seed ${SEED})`, async () => {
      const store = make();
      const parkSeq = await park(store, 'e');
      const witness = await Witness.capture(store, 'e');
      // Descriptions, built into hostile objects inside the property, so
      // that printing a counterexample never calls the getters.
      const thrown = fc.oneof(fc.anything(), fc.constant([parkSeq, '"x"', 5]), fc.constant(new Error('boom')));
      const options = fc.oneof(
        fc.record({ how: fc.constant('getter'), key: fc.constantFrom('fenceIfParkedAt', 'answer', 'at'), thrown }),
        fc.record({ how: fc.constant('trap'), thrown }),
        fc.record({ how: fc.constant('revoked') }),
      );
      await fc.assert(
        fc.asyncProperty(options, async (description) => {
          const hostile = build(description, { fenceIfParkedAt: parkSeq });
          await refused(called(() => resume(store, 'e', hostile), 'resume'), InputError, 'INVALID_OPTIONS', 'hostile options');
          await witness.assertUnchanged(store, 'a refused resume');
        }),
        { seed: SEED, numRuns: 200 },
      );
      const resumed = await resume(store, 'e', { fenceIfParkedAt: parkSeq, at: AT });
      assert.equal(resumed.head, parkSeq + 1, 'a normal resume still lands');
    });
  }
});

describe('every promise-returning call rejects with the documented class, never throws', () => {
  test('a revoked Proxy as an event, a batch, a timer row or a store rejects', async () => {
    const store = new MemoryEventStore();
    const timers = new MemoryTimerStore();
    await refused(called(() => store.append('a', revoked()), 'append'), InputError, 'INVALID_EVENT', 'append(revoked)');
    await refused(called(() => store.appendMany('a', revoked()), 'appendMany'), InputError, 'INVALID_EVENT', 'appendMany(revoked)');
    await refused(called(() => store.appendMany('a', [revoked()]), 'appendMany'), InputError, 'INVALID_EVENT', 'appendMany([revoked])');
    await refused(called(() => timers.schedule(revoked()), 'schedule'), TimerInputError, 'INVALID_ROW', 'schedule(revoked)');
    await refused(called(() => resume(revoked(), 'e', { fenceIfParkedAt: 2 }), 'resume'), TypeError, 'NOT_A_STORE', 'resume(revoked)');
    assert.deepEqual(await store.readRange('a'), [], 'nothing was appended');
    assert.deepEqual(await timers.due(AT, 10), [], 'nothing was scheduled');
  });

  test('ChildSupervisor.rebuild with parents that cannot be read rejects and keeps its edges', async () => {
    const events = new MemoryEventStore();
    await events.appendMany('p', [event('EXECUTION_STARTED'), event('EXECUTION_SUSPENDED', { payload: { waits: [{ kind: 'CHILD_DONE', key: 'c' }] } })]);
    const supervisor = new ChildSupervisor({ events, onError: () => {} });
    await supervisor.watch('p');
    assert.deepEqual(supervisor.parentsWaitingOn('c'), ['p'], 'the edge is listed');
    for (const parents of [revoked(), trapping(new Error('boom')), null, 7]) {
      await refused(called(() => supervisor.rebuild(parents), 'rebuild'), TimerInputError, 'UNREADABLE', 'rebuild(hostile)');
      assert.deepEqual(supervisor.parentsWaitingOn('c'), ['p'], 'the edges are kept');
    }
    assert.equal((await supervisor.rebuild(['p'])).length, 1, 'a rebuild after it works');
  });

  test('a host store envelope whose `at` is no safe integer is a store-contract error', async () => {
    for (const at of [2 ** 60, 1.5, -(2 ** 53), Number.NaN]) {
      const inner = new MemoryEventStore();
      const parkSeq = await park(inner, 'e');
      const store = wrap(inner, { readRange: async (...args) => (await inner.readRange(...args)).map((e) => ({ ...e, at })) });
      await refused(resume(store, 'e', { fenceIfParkedAt: parkSeq }), InputError, 'STORE_CONTRACT', `an envelope at ${at}`);
      assert.equal((await inner.readRange('e')).length, parkSeq, 'nothing was appended');
    }
  });

  test('an option nested 10,000 deep is refused with the documented class', async () => {
    const deep = nested(10_000);
    const events = new MemoryEventStore();
    const timers = new MemoryTimerStore();
    assert.throws(
      () => new TimerService({ events, timers, pollIntervalMs: deep }),
      (error) => error instanceof TimerInputError && error.code === 'INVALID_OPTIONS',
      'TimerService(deep)',
    );
    await refused(called(() => sweep(events, { endedBefore: deep }), 'sweep'), InputError, 'INVALID_OPTIONS', 'sweep(deep)');
    await refused(called(() => resume(events, 'e', { fenceIfParkedAt: 2, answer: deep }), 'resume'), InputError, 'INVALID_ANSWER', 'resume(deep answer)');
  });

  test(`every store and timer method, resume and sweep reject hostile values and keep working (seed ${SEED})`, async () => {
    const store = new MemoryEventStore();
    const timers = new MemoryTimerStore();
    const parkSeq = await park(store, 'e');
    await timers.schedule({ executionId: 'e', wakeAt: AT });
    const witness = await Witness.capture(store, 'e');
    const rows = await timers.due(AT, 10);
    // Values no call accepts, in every argument position a call reads.
    // A getter on a field some call reads, so it is reached past the checks of shape.
    const key = fc.constantFrom(
      'kind', 'at', 'payload', 'metadata', 'executionId', 'wakeAt', 'redrive', 'holder', 'now', 'durationMs',
      'row', 'number', 'expiresAt', 'fence', 'parkSeq', 'head', 'parents', 'endedBefore', 'fenceIfParkedAt', 'answer',
    );
    const hostile = fc.oneof(
      fc.record({ how: fc.constant('getter'), key, thrown: fc.oneof(fc.anything(), fc.constant(new Error('boom'))) }),
      fc.record({ how: fc.constant('revoked') }),
      fc.record({ how: fc.constant('trap'), thrown: fc.oneof(fc.anything(), fc.constant(new Error('boom'))) }),
      fc.record({ how: fc.constant('nested'), depth: fc.integer({ min: 129, max: 10_000 }) }),
    );
    const calls = {
      append: (h) => store.append('e', h),
      appendMany: (h) => store.appendMany('e', h),
      appendManyElement: (h) => store.appendMany('e', [event('STEP_STARTED'), h]),
      appendIfParked: (h) => store.appendIfParked('e', parkSeq, h),
      appendIfParkedElement: (h) => store.appendIfParked('e', parkSeq, [h]),
      readRange: (h) => store.readRange(h),
      acquireFence: (h) => store.acquireFence(h),
      acquireFenceIf: (h) => store.acquireFenceIf('e', h),
      deleteExecutionIf: (h) => store.deleteExecutionIf('e', h),
      listExecutions: (h) => store.listExecutions(h, 10),
      currentFence: (h) => store.currentFence(h),
      deleteExecution: (h) => store.deleteExecution(h),
      schedule: (h) => timers.schedule(h),
      complete: (h) => timers.complete(h),
      release: (h) => timers.release(h),
      reschedule: (h) => timers.reschedule(h, { executionId: 'e', wakeAt: AT }),
      rescheduleNext: (h) => timers.reschedule({ row: { executionId: 'x', wakeAt: 1 }, holder: 'n', number: 1, expiresAt: 2 }, h),
      due: (h) => timers.due(h, 10),
      claimDue: (h) => timers.claimDue(h, 10),
      dueFilter: (h) => timers.due(AT, 10, h),
      claimDueFilter: (h) => timers.claimDue({ holder: 'n', now: AT, durationMs: 1 }, 10, h),
      resumeStore: (h) => resume(h, 'e', { fenceIfParkedAt: parkSeq }),
      resumeId: (h) => resume(store, h, { fenceIfParkedAt: parkSeq }),
      resumeOptions: (h) => resume(store, 'e', h),
      resumeAnswer: (h) => resume(store, 'e', { fenceIfParkedAt: parkSeq, answer: h }),
      sweepStore: (h) => sweep(h, { endedBefore: 0 }),
      sweepOptions: (h) => sweep(store, h),
    };
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...Object.keys(calls)), hostile, async (name, description) => {
        const h = build(description);
        await documented(called(() => calls[name](h), name), name);
        await witness.assertUnchanged(store, `a refused ${name}`);
        assert.deepEqual(await timers.due(AT, 10), rows, `the timer rows changed after a refused ${name}`);
      }),
      { seed: SEED, numRuns: 10_000 },
    );
    const resumed = await resume(store, 'e', { fenceIfParkedAt: parkSeq, at: AT });
    assert.equal(resumed.head, parkSeq + 1, 'a normal resume still lands');
    await assert.rejects(resume(store, 'e', { fenceIfParkedAt: parkSeq, at: AT }), ResumeRefusedError, 'and a second is refused');
  });
});

describe('a revoked Proxy nested where a list is read is refused, not thrown through WebAssembly', () => {
  test('deleteExecutionIf with a revoked Proxy for its guard parents rejects, and the store still works', async () => {
    const store = new MemoryEventStore();
    const { proxy, revoke } = Proxy.revocable([], {});
    revoke();
    for (let i = 0; i < 1_000; i++) {
      let call;
      assert.doesNotThrow(() => {
        call = store.deleteExecutionIf('a', { head: 1, parents: proxy });
      }, 'no synchronous throw');
      // What a value that throws while it is read gets: `Array.isArray`
      // throws on a revoked Proxy.
      await assert.rejects(call, (error) => error instanceof InputError && error.code === 'UNREADABLE' && /guard\.parents could not be read/.test(error.message));
    }
    const written = await store.appendMany('p', [event('EXECUTION_STARTED'), event('EXECUTION_SUSPENDED')]);
    await resume(store, 'p', { fenceIfParkedAt: written[1].sequence, answer: 1, at: AT });
  });
});

describe('a constructor whose options throw while read refuses them with its own class', () => {
  const throwing = () => ({ get events() { throw new Error('boom'); } });
  const revoked = () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    return proxy;
  };
  for (const [name, make] of [['TimerService', (options) => new TimerService(options)], ['ChildSupervisor', (options) => new ChildSupervisor(options)]]) {
    test(`new ${name}(options) with a throwing getter or a revoked Proxy throws a TimerInputError INVALID_OPTIONS`, () => {
      for (const options of [throwing(), revoked()]) {
        assert.throws(() => make(options), (error) => error instanceof TimerInputError && error.code === 'INVALID_OPTIONS' && !/boom/.test(String(error.message)));
      }
    });
  }
});
