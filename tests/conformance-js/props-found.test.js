// What the property suites (props.test.js, replies.test.js) found, each as
// a minimal focused case that failed before its fix: in the pumps, or on
// the WebAssembly side (lists read in JavaScript, a store reply's field
// that throws is that store's STORE_CONTRACT).

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  InputError,
  MemoryEventStore,
  resume,
} from 'loomfence';
import {
  ChildSupervisor,
  FireMachine,
  MemoryTimerStore,
  RedrivePolicy,
  TimerInputError,
  TimerService,
  sweep,
} from 'loomfence/services';

import { revoked, throwingElements, trapping } from './hostile.js';
import { AT, describe as describeError, event, wrap, wrapTimers } from './support.js';

/** Calls `f`, which returns a promise, and asserts it rejects (never throws) with `Class` and `code`. */
async function rejects(f, Class, code) {
  let returned;
  assert.doesNotThrow(() => {
    returned = f();
  }, 'a promise-returning call rejects, it does not throw');
  await assert.rejects(returned, (error) => {
    assert.ok(error instanceof Class, `expected a ${Class.name} ${code}, got ${describeError(error)}`);
    assert.equal(error.code, code, describeError(error));
    return true;
  });
}

/** Asserts `f()` throws `Class` with `code`. */
function throws(f, Class, code) {
  assert.throws(f, (error) => {
    assert.ok(error instanceof Class, `expected a ${Class.name} ${code}, got ${describeError(error)}`);
    assert.equal(error.code, code, describeError(error));
    return true;
  });
}

const sentinel = { thrown: 'by the caller' };

describe('receivers: the promise-returning methods reject, the JavaScript classes refuse with WRONG_RECEIVER', () => {
  test("a store's method called on another object rejects WRONG_RECEIVER, it does not throw", async () => {
    await rejects(() => MemoryEventStore.prototype.append.call({}, 'e', event('EXECUTION_STARTED')), TypeError, 'WRONG_RECEIVER');
    await rejects(() => MemoryTimerStore.prototype.schedule.call(new MemoryEventStore(), { executionId: 'e', wakeAt: 1 }), TypeError, 'WRONG_RECEIVER');
    throws(() => MemoryEventStore.prototype.free.call({}), TypeError, 'WRONG_RECEIVER');
  });

  test("TimerService's and ChildSupervisor's methods and getters on another object: WRONG_RECEIVER", async () => {
    await rejects(() => TimerService.prototype.pollOnce.call({}), TypeError, 'WRONG_RECEIVER');
    await rejects(() => TimerService.prototype.stop.call({}), TypeError, 'WRONG_RECEIVER');
    throws(() => TimerService.prototype.start.call({}), TypeError, 'WRONG_RECEIVER');
    throws(() => Object.getOwnPropertyDescriptor(TimerService.prototype, 'node').get.call({}), TypeError, 'WRONG_RECEIVER');
    await rejects(() => ChildSupervisor.prototype.watch.call({}, 'p'), TypeError, 'WRONG_RECEIVER');
    await rejects(() => ChildSupervisor.prototype.childEnded.call(null, 'c'), TypeError, 'WRONG_RECEIVER');
    throws(() => ChildSupervisor.prototype.parentsWaitingOn.call({}, 'c'), TypeError, 'WRONG_RECEIVER');
  });
});

describe('constructor options that cannot be read are refused with INVALID_OPTIONS', () => {
  const events = new MemoryEventStore();
  const timers = new MemoryTimerStore();
  for (const [name, value] of [['a revoked Proxy', revoked()], ['a Proxy whose traps throw', trapping(sentinel)]]) {
    test(`new TimerService({ events: ${name} }) and { timers: ${name} }`, () => {
      throws(() => new TimerService({ events: value, timers }), TimerInputError, 'INVALID_OPTIONS');
      throws(() => new TimerService({ events, timers: value }), TimerInputError, 'INVALID_OPTIONS');
    });

    test(`new ChildSupervisor({ events: ${name} })`, () => {
      throws(() => new ChildSupervisor({ events: value }), TimerInputError, 'INVALID_OPTIONS');
    });
  }

  test('new ChildSupervisor({ conditionalTries }) of a value its message cannot show', () => {
    for (const value of [revoked(), trapping(sentinel), Object.create(null), new Array(2 ** 32 - 1)]) {
      throws(() => new ChildSupervisor({ events, conditionalTries: value }), TimerInputError, 'INVALID_OPTIONS');
    }
  });
});

describe('lists read before walking', () => {
  test('ChildSupervisor#rebuild of a 2^32-1 hole array is refused at once, the edges kept', async () => {
    const store = new MemoryEventStore();
    await store.appendMany('p', [event('EXECUTION_STARTED'), event('EXECUTION_SUSPENDED', { payload: { waits: [{ kind: 'CHILD_DONE', key: 'c' }] } })]);
    const supervisor = new ChildSupervisor({ events: store, onError: () => {} });
    await supervisor.watch('p');
    const started = performance.now();
    await rejects(() => supervisor.rebuild(new Array(2 ** 32 - 1)), TimerInputError, 'INVALID_LIMIT');
    assert.ok(performance.now() - started < 1_000, 'at once');
    assert.deepEqual(supervisor.parentsWaitingOn('c'), ['p'], 'the edges are kept');
  });
});

describe("a callback's answer that cannot be read", () => {
  for (const [name, make] of [['a revoked Proxy', () => revoked()], ['a Proxy whose traps throw', () => trapping(sentinel)]]) {
    test(`sweep: knownParents answering ${name} is an InputError UNEXPECTED_ANSWER, the child kept`, async () => {
      const store = new MemoryEventStore();
      await store.appendMany('child', [event('EXECUTION_STARTED'), event('EXECUTION_COMPLETED')]);
      await rejects(() => sweep(store, { endedBefore: AT + 1, knownParents: () => make() }), InputError, 'UNEXPECTED_ANSWER');
      assert.equal((await store.readRange('child')).length, 2);
    });
  }
});

describe('on the WebAssembly side: lists read in JavaScript, reply fields as the store\'s fault', () => {
  test(
    'deleteExecutionIf with guard.parents whose element get throws rejects, it does not throw the thrown value',
    async () => {
      const store = new MemoryEventStore();
      const parents = Object.defineProperty([], '0', { get() { throw sentinel; }, enumerable: true });
      await rejects(() => store.deleteExecutionIf('e', { head: 1, parents }), InputError, 'UNREADABLE');
      await rejects(() => store.deleteExecutionIf('e', { head: 1, parents: throwingElements(sentinel) }), InputError, 'UNREADABLE');
    },
  );

  test(
    'a redrive policy that cannot be read (revoked, or its getPrototypeOf trap throws) is UNREADABLE',
    () => {
      const events = new MemoryEventStore();
      const timers = new MemoryTimerStore();
      for (const policy of [revoked(), trapping(sentinel)]) {
        throws(() => new RedrivePolicy(policy), TimerInputError, 'UNREADABLE');
        throws(() => new FireMachine({ executionId: 'e', wakeAt: 1 }, { now: 1, policy }), TimerInputError, 'UNREADABLE');
        throws(() => new TimerService({ events, timers, policy }), TimerInputError, 'UNREADABLE');
        throws(() => new ChildSupervisor({ events, policy }), TimerInputError, 'UNREADABLE');
      }
    },
  );

  test(
    'sweep: knownParents answering an array whose element get throws is refused, the glue intact',
    async () => {
      const store = new MemoryEventStore();
      await store.appendMany('child', [event('EXECUTION_STARTED'), event('EXECUTION_COMPLETED')]);
      await rejects(() => sweep(store, { endedBefore: AT + 1, knownParents: () => throwingElements(sentinel) }), InputError, 'UNEXPECTED_ANSWER');
    },
  );

  test(
    "resume: a host store's acquireFenceIf answer with a throwing getter is STORE_CONTRACT, as index.d.ts says",
    async () => {
      const inner = new MemoryEventStore();
      const [, park] = await inner.appendMany('e', [event('EXECUTION_STARTED'), event('EXECUTION_SUSPENDED')]);
      const store = wrap(inner, { acquireFenceIf: async () => ({ get fence() { throw sentinel; } }) });
      await rejects(() => resume(store, 'e', { fenceIfParkedAt: park.sequence, at: AT }), InputError, 'STORE_CONTRACT');
    },
  );

  test(
    "TimerService#pollOnce: a claimDue answer whose element get throws is reported, the tick resolves",
    async () => {
      const events = new MemoryEventStore();
      const table = new MemoryTimerStore();
      const timers = wrapTimers(table, { claimDue: async () => throwingElements(sentinel) });
      const reported = [];
      const service = new TimerService({ events, timers, now: () => AT, onError: (error) => reported.push(error) });
      await service.pollOnce();
      assert.ok(reported.length >= 1, 'reported to onError');
      for (const error of reported) assert.equal(typeof error.code, 'string', describeError(error));
    },
  );

  test(
    'sweep: a listing page whose element get throws is STORE_CONTRACT, the glue intact',
    async () => {
      const inner = new MemoryEventStore();
      await inner.appendMany('done', [event('EXECUTION_STARTED'), event('EXECUTION_COMPLETED')]);
      const store = wrap(inner, { listExecutions: async () => throwingElements(sentinel) });
      await rejects(() => sweep(store, { endedBefore: AT + 1 }), InputError, 'STORE_CONTRACT');
    },
  );
});
