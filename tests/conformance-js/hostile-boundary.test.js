// The package's boundary under hostile input:
// - ids: an execution id or a lease holder with a lone surrogate would cross
//   into Rust as U+FFFD, so two distinct ids would be one row; every timer
//   entry point refuses it, as the event side does, and nothing changes;
// - lengths before walking: a list handed in is refused by its length
//   before any element is read (a 2^32-1 hole array answers at once);
// - receivers: a method of one class called on an instance of another (or
//   on a plain object) is a TypeError `WRONG_RECEIVER`, and both objects
//   still work.
// The properties print their seed; `SIM_SEED=<n>` replays one.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import * as resumeEntry from 'loomfence';
import * as servicesEntry from 'loomfence/services';
import {
  InputError,
  MemoryEventStore,
  resume,
} from 'loomfence';
import {
  ChildSupervisor,
  sweep,
  FireMachine,
  MemoryTimerStore,
  RedrivePolicy,
  TimerInputError,
  TimerService,
  WakeBackoff,
} from 'loomfence/services';

/** Every export of the package: the resume entry's and the services'. */
const pkg = { ...resumeEntry, ...servicesEntry };

const SEED = process.env.SIM_SEED ? Number(process.env.SIM_SEED) : Math.floor(Math.random() * 2 ** 31);
console.log(`hostile-boundary.test.js: SIM_SEED=${SEED}`);

/** A string with at least one lone surrogate somewhere in it. */
const loneSurrogated = fc
  .tuple(
    fc.string({ maxLength: 8 }),
    fc.oneof(fc.integer({ min: 0xd800, max: 0xdbff }), fc.integer({ min: 0xdc00, max: 0xdfff })),
    fc.string({ maxLength: 8 }),
  )
  .map(([a, unit, b]) => a + String.fromCharCode(unit) + b)
  .filter((s) => !s.isWellFormed());

/** Refused with `code`, synchronously or by a rejection. */
async function refused(call, Class, code) {
  let outcome;
  try {
    outcome = await call();
  } catch (error) {
    assert.ok(error instanceof Class, `expected ${Class.name}, got ${error}`);
    assert.equal(error.code, code, String(error));
    return;
  }
  assert.fail(`expected ${Class.name} ${code}, got ${JSON.stringify(outcome)}`);
}

/** The whole table, as `due` lists it far in the future. */
const table = (timers) => timers.due(2 ** 53 - 1, 10_000);

describe('ids with a lone surrogate are refused on the timer side', () => {
  test('schedule: two ids that differ only in their lone surrogate are not one row', async () => {
    const timers = new MemoryTimerStore();
    await refused(() => timers.schedule({ executionId: 'x\udc00y', wakeAt: 1 }), TimerInputError, 'INVALID_ID');
    await refused(() => timers.schedule({ executionId: 'x\ud800y', wakeAt: 2 }), TimerInputError, 'INVALID_ID');
    assert.deepEqual(await table(timers), []);
  });

  test('the event side refuses the same id the same way', async () => {
    const events = new MemoryEventStore();
    await refused(() => events.append('x\udc00y', { kind: 'EXECUTION_STARTED', at: 1 }), InputError, 'INVALID_ID');
  });

  test('a lease holder, a claim and a row to reschedule with one are refused, nothing claimed', async () => {
    const timers = new MemoryTimerStore();
    await timers.schedule({ executionId: 'a', wakeAt: 1 });
    const lease = { holder: 'n\udc00', now: 5, durationMs: 100 };
    await refused(() => timers.claimDue(lease, 10), TimerInputError, 'INVALID_HOLDER');
    const [claim] = await timers.claimDue({ holder: 'n', now: 5, durationMs: 100 }, 10);
    const forged = { ...claim, holder: 'n\udc00' };
    await refused(() => timers.complete(forged), TimerInputError, 'INVALID_HOLDER');
    await refused(() => timers.release(forged), TimerInputError, 'INVALID_HOLDER');
    const badRow = { ...claim, row: { ...claim.row, executionId: 'a\ud800' } };
    await refused(() => timers.complete(badRow), TimerInputError, 'INVALID_ID');
    await refused(
      () => timers.reschedule(claim, { executionId: 'b\udfff', wakeAt: 9 }),
      TimerInputError,
      'INVALID_ID',
    );
    assert.deepEqual(await table(timers), [{ executionId: 'a', wakeAt: 1 }]);
    assert.equal(await timers.complete(claim), 'done');
  });

  test("the tick's holder, the supervisor's parent and a fire's row refuse one", async () => {
    const events = new MemoryEventStore();
    const timers = new MemoryTimerStore();
    assert.throws(() => new TimerService({ events, timers, node: 'node\ud800' }), (e) => {
      assert.ok(e instanceof TimerInputError, String(e));
      assert.equal(e.code, 'INVALID_HOLDER');
      return true;
    });
    assert.throws(() => new FireMachine({ executionId: '\udc00', wakeAt: 1 }), (e) => {
      assert.ok(e instanceof TimerInputError, String(e));
      assert.equal(e.code, 'INVALID_ID');
      return true;
    });
    const supervisor = new ChildSupervisor({ events, timers, onError: () => {} });
    await refused(() => supervisor.watch('p\udc00'), TimerInputError, 'INVALID_ID');
  });

  test("a host store's claim naming a row by a lone-surrogate id is an unreadable row, not a fire of another id", async () => {
    const events = new MemoryEventStore();
    const store = new MemoryTimerStore();
    const forged = { row: { executionId: 'a\udc00', wakeAt: 1 }, holder: 'n1', number: 1, expiresAt: 100 };
    const completed = [];
    const timers = {
      schedule: (row) => store.schedule(row),
      claimDue: async () => [forged],
      complete: async (claim) => (completed.push(claim), 'done'),
      release: async () => 'done',
      reschedule: async () => 'done',
      exhaust: async () => 'done',
    };
    const errors = [];
    const service = new TimerService({ events, timers, node: 'n1', now: () => 5, onError: (error) => errors.push(error) });
    const report = await service.pollOnce();
    assert.equal(report.unreadable, 1, JSON.stringify(report));
    assert.equal(report.fired, 0);
    assert.deepEqual(completed, []);
    assert.equal(errors.length, 1);
    assert.equal(errors[0].row.field, 'executionId');
  });

  test('property: every timer entry point refuses a lone-surrogate id or holder, the table unchanged', async () => {
    const timers = new MemoryTimerStore();
    await timers.schedule({ executionId: 'kept', wakeAt: 1 });
    const [claim] = await timers.claimDue({ holder: 'n', now: 5, durationMs: 1000 }, 10);
    const before = await table(timers);
    const calls = [
      (s) => timers.schedule({ executionId: s, wakeAt: 1 }),
      (s) => timers.claimDue({ holder: s, now: 5, durationMs: 100 }, 10),
      (s) => timers.complete({ ...claim, holder: s }),
      (s) => timers.release({ ...claim, row: { ...claim.row, executionId: s } }),
      (s) => timers.reschedule(claim, { executionId: s, wakeAt: 3 }),
      (s) => timers.reschedule({ ...claim, holder: s }, { executionId: 'other', wakeAt: 3 }),
    ];
    await fc.assert(
      fc.asyncProperty(loneSurrogated, fc.integer({ min: 0, max: calls.length - 1 }), async (s, which) => {
        await assert.rejects(Promise.resolve().then(() => calls[which](s)), TimerInputError);
        assert.deepEqual(await table(timers), before);
      }),
      { seed: SEED, numRuns: 300 },
    );
    assert.equal(await timers.complete(claim), 'done');
  });
});

describe('a list is refused by its length before its elements are read', () => {
  test('deleteExecutionIf with 2^32-1 parents answers at once', async () => {
    const events = new MemoryEventStore();
    await events.append('a', { kind: 'EXECUTION_STARTED', at: 1 });
    const started = performance.now();
    await refused(
      () => events.deleteExecutionIf('a', { head: 1, parents: new Array(2 ** 32 - 1) }),
      InputError,
      'INVALID_LIMIT',
    );
    assert.ok(performance.now() - started < 200, `took ${performance.now() - started} ms`);
    assert.equal((await events.readRange('a', 1)).length, 1);
  });

  test('no element of a list over its limit is read', async () => {
    const events = new MemoryEventStore();
    let reads = 0;
    const parents = new Proxy(new Array(1001), {
      get(target, key, receiver) {
        if (key !== 'length') reads += 1;
        return Reflect.get(target, key, receiver);
      },
    });
    await refused(() => events.deleteExecutionIf('a', { head: 0, parents }), InputError, 'INVALID_LIMIT');
    assert.equal(reads, 0);
  });
});

/** A 2^32-1 hole array: reading it element by element takes seconds, copying it throws. */
const huge = () => new Array(2 ** 32 - 1);

/** Whether `call` settled within 200 ms, and how. */
async function fast(call) {
  const started = performance.now();
  const settled = await Promise.resolve()
    .then(call)
    .then(
      (value) => ({ value }),
      (error) => ({ error }),
    );
  const ms = performance.now() - started;
  assert.ok(ms < 200, `took ${ms} ms`);
  return settled;
}

/** A retention store over a MemoryEventStore, `overrides` in place of its methods. */
function retentionStore(store, overrides) {
  return {
    readRange: (...args) => store.readRange(...args),
    listExecutions: (...args) => store.listExecutions(...args),
    deleteExecutionIf: (...args) => store.deleteExecutionIf(...args),
    ...overrides,
  };
}

describe("a store's or a callback's list is refused by its length before its elements are read", () => {
  test('a listing page of 2^32-1 summaries is a store-contract error, at once', async () => {
    const store = new MemoryEventStore();
    const { error } = await fast(() => sweep(retentionStore(store, { listExecutions: huge }), { endedBefore: 10 }));
    assert.ok(error instanceof InputError, String(error));
    assert.equal(error.code, 'STORE_CONTRACT');
  });

  test('knownParents answering 2^32-1 ids is an unexpected answer, at once, the child kept', async () => {
    const store = new MemoryEventStore();
    await store.append('child', { kind: 'EXECUTION_STARTED', at: 1 });
    await store.append('child', { kind: 'EXECUTION_COMPLETED', at: 2 });
    const { error } = await fast(() => sweep(retentionStore(store, {}), { endedBefore: 10, knownParents: huge }));
    assert.ok(error instanceof InputError, String(error));
    assert.equal(error.code, 'UNEXPECTED_ANSWER');
    assert.equal((await store.readRange('child', 1)).length, 2);
  });

  test("claimDue answering 2^32-1 claims is refused at once, the tick's failure", async () => {
    const events = new MemoryEventStore();
    const store = new MemoryTimerStore();
    const timers = {
      schedule: (row) => store.schedule(row),
      claimDue: huge,
      complete: (claim) => store.complete(claim),
      release: (claim) => store.release(claim),
      reschedule: (claim, next) => store.reschedule(claim, next),
      exhaust: (claim, exhaustion) => store.exhaust(claim, exhaustion),
    };
    const errors = [];
    const service = new TimerService({ events, timers, now: () => 5, onError: (error) => errors.push(error) });
    await fast(() => service.pollOnce());
    assert.equal(errors.length, 1, String(errors));
    assert.ok(errors[0] instanceof TimerInputError, String(errors[0]));
    assert.equal(errors[0].code, 'UNEXPECTED_ANSWER');
  });
});

const CLASSES = { MemoryEventStore, MemoryTimerStore, RedrivePolicy, WakeBackoff, FireMachine };

/** A fresh instance of each exported class. */
function instances() {
  return {
    MemoryEventStore: new MemoryEventStore(),
    MemoryTimerStore: new MemoryTimerStore(),
    RedrivePolicy: new RedrivePolicy(),
    WakeBackoff: new WakeBackoff(),
    FireMachine: new FireMachine({ executionId: 'f', wakeAt: 1 }),
  };
}

/**
 * Every method and getter of a class's prototype, as a function taking its
 * receiver first; not its constructor, nor the glue's pointer (0 on any
 * other object, which Rust refuses as a null pointer).
 */
function methods(Class) {
  return Reflect.ownKeys(Class.prototype)
    .filter((key) => key !== 'constructor' && key !== '__wbg_ptr')
    .map((key) => {
      const { value, get } = Object.getOwnPropertyDescriptor(Class.prototype, key);
      return [key, (receiver, args) => (get ? get.call(receiver) : value.apply(receiver, args))];
    });
}

/** Arguments that a method of any class would take. */
const ARGS = [
  'a',
  { kind: 'EXECUTION_STARTED', at: 1 },
  [{ kind: 'EXECUTION_STARTED', at: 1 }],
];

/** A normal use of each instance, which must still work after the refusals. */
async function stillWorks(name, object) {
  switch (name) {
    case 'MemoryEventStore': {
      await object.append('w', { kind: 'EXECUTION_STARTED', at: 1 });
      await object.append('w', { kind: 'EXECUTION_SUSPENDED', at: 2, payload: { waitingFor: 'x' } });
      const resumed = await resume(object, 'w', { fenceIfParkedAt: 2, answer: 1, at: 3 });
      assert.equal(resumed.fence, 1);
      assert.equal((await object.readRange('w', 1)).length, 3);
      break;
    }
    case 'MemoryTimerStore': {
      await object.schedule({ executionId: 'w', wakeAt: 1 });
      const [claim] = await object.claimDue({ holder: 'n', now: 1, durationMs: 10 }, 10);
      assert.equal(claim.row.executionId, 'w');
      assert.equal(await object.complete(claim), 'done');
      assert.deepEqual(await table(object), []);
      break;
    }
    case 'RedrivePolicy':
      assert.equal(object.baseMs, 200);
      break;
    case 'WakeBackoff':
      assert.equal(object.len, 0);
      break;
    case 'FireMachine':
      assert.equal(object.row.executionId, 'f');
      break;
    default:
      assert.fail(name);
  }
}

describe('a method called on another class instance is refused', () => {
  test("MemoryEventStore#append on a MemoryTimerStore: refused, and due() keeps the rows' ids", async () => {
    const timers = new MemoryTimerStore();
    await timers.schedule({ executionId: 'row', wakeAt: 1 });
    // A promise-returning method rejects (props-found.test.js).
    await assert.rejects(
      MemoryEventStore.prototype.append.call(timers, 'a', { kind: 'EXECUTION_STARTED', at: 1 }),
      (e) => e instanceof TypeError && e.code === 'WRONG_RECEIVER',
    );
    assert.deepEqual(await table(timers), [{ executionId: 'row', wakeAt: 1 }]);
  });

  test('a prototype swapped onto a foreign instance does not make it one', async () => {
    const timers = new MemoryTimerStore();
    await timers.schedule({ executionId: 'row', wakeAt: 1 });
    Object.setPrototypeOf(timers, MemoryEventStore.prototype);
    await assert.rejects(
      timers.append('a', { kind: 'EXECUTION_STARTED', at: 1 }),
      (e) => e instanceof TypeError && e.code === 'WRONG_RECEIVER',
    );
    Object.setPrototypeOf(timers, MemoryTimerStore.prototype);
    assert.deepEqual(await table(timers), [{ executionId: 'row', wakeAt: 1 }]);
  });

  test('every method of every class, on every other class instance and on plain values: refused, both still work', async () => {
    for (const [name, Class] of Object.entries(CLASSES)) {
      for (const [key, call] of methods(Class)) {
        const objects = instances();
        const receivers = [...Object.entries(objects).filter(([other]) => other !== name), ['plain', {}], ['null', null]];
        for (const [other, receiver] of receivers) {
          // Thrown, or rejected with by a method that returns a promise.
          let error;
          try {
            await call(receiver, ARGS);
          } catch (thrown) {
            error = thrown;
          }
          assert.ok(error !== undefined, `${name}#${String(key)} on ${other} was not refused`);
          assert.ok(error instanceof TypeError, `${name}#${String(key)} on ${other}: ${error}`);
          assert.equal(error.code, 'WRONG_RECEIVER', `${name}#${String(key)} on ${other}: ${error}`);
        }
        for (const [other, object] of Object.entries(objects)) await stillWorks(other, object);
      }
    }
  });

  test('every exported class is guarded, its own methods still work', async () => {
    const exported = Object.entries(pkg).filter(
      ([, value]) => typeof value === 'function' && value.prototype && typeof value.prototype.free === 'function',
    );
    assert.deepEqual(exported.map(([name]) => name).sort(), Object.keys(CLASSES).sort());
    for (const [name, object] of Object.entries(instances())) await stillWorks(name, object);
  });
});

/**
 * An array Proxy whose elements throw when read (`length` reads fine, and
 * the first `reads` element reads too), so only a reader that walks the
 * elements meets the throw.
 */
function throwingElements(items, reads = 0) {
  let left = reads;
  return new Proxy(items, {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key) && left-- <= 0) throw new Error('boom');
      return Reflect.get(target, key, receiver);
    },
  });
}

/** A normal park and resume on `store`, which must work. */
async function parksAndResumes(store, id) {
  await store.append(id, { kind: 'EXECUTION_STARTED', at: 1 });
  await store.append(id, { kind: 'EXECUTION_SUSPENDED', at: 2, payload: { waitingFor: 'x' } });
  const resumed = await resume(store, id, { fenceIfParkedAt: 2, answer: 1, at: 3 });
  assert.equal(resumed.fence, 1);
  assert.equal((await store.readRange(id, 1)).length, 3);
}

describe('a list whose elements throw when read is refused, nothing thrown through WebAssembly', () => {
  test('deleteExecutionIf: guard.parents, 3,000 times, then the same store and a fresh one park and resume', async () => {
    const events = new MemoryEventStore();
    await events.append('a', { kind: 'EXECUTION_STARTED', at: 1 });
    for (let i = 0; i < 3000; i++) {
      const parents = throwingElements([{ parent: 'p', seen: 1 }]);
      await refused(() => events.deleteExecutionIf('a', { head: 1, parents }), InputError, 'UNREADABLE');
    }
    assert.equal((await events.readRange('a', 1)).length, 1);
    await parksAndResumes(events, 'w');
    await parksAndResumes(new MemoryEventStore(), 'w');
  });

  test("a listing page whose summaries throw is a store-contract error, the store unchanged", async () => {
    const store = new MemoryEventStore();
    await store.append('a', { kind: 'EXECUTION_STARTED', at: 1 });
    await store.append('a', { kind: 'EXECUTION_COMPLETED', at: 2 });
    const page = () => throwingElements([{ executionId: 'a', head: 2, ended: true }]);
    const { error } = await fast(() => sweep(retentionStore(store, { listExecutions: page }), { endedBefore: 10 }));
    assert.ok(error instanceof InputError, String(error));
    assert.equal(error.code, 'STORE_CONTRACT');
    assert.equal((await store.readRange('a', 1)).length, 2);
  });

  test('knownParents answering ids that throw is an unexpected answer, the child kept', async () => {
    const store = new MemoryEventStore();
    await store.append('child', { kind: 'EXECUTION_STARTED', at: 1 });
    await store.append('child', { kind: 'EXECUTION_COMPLETED', at: 2 });
    const knownParents = () => throwingElements(['p']);
    const { error } = await fast(() => sweep(retentionStore(store, {}), { endedBefore: 10, knownParents }));
    assert.ok(error instanceof InputError, String(error));
    assert.equal(error.code, 'UNEXPECTED_ANSWER');
    assert.equal((await store.readRange('child', 1)).length, 2);
  });

  test("claimDue answering claims that throw is the tick's reported failure; the next tick claims and fires", async () => {
    const events = new MemoryEventStore();
    await events.append('w', { kind: 'EXECUTION_STARTED', at: 1 });
    await events.append('w', { kind: 'EXECUTION_SUSPENDED', at: 2, payload: { waitingFor: 'x' } });
    const store = new MemoryTimerStore();
    await store.schedule({ executionId: 'w', wakeAt: 1 });
    let hostile = true;
    const timers = {
      schedule: (row) => store.schedule(row),
      claimDue: async (lease, limit) => {
        const claims = await store.claimDue(lease, limit);
        return hostile ? throwingElements(claims) : claims;
      },
      complete: (claim) => store.complete(claim),
      release: (claim) => store.release(claim),
      reschedule: (claim, next) => store.reschedule(claim, next),
      exhaust: (claim, exhaustion) => store.exhaust(claim, exhaustion),
    };
    const errors = [];
    let now = 5;
    const service = new TimerService({ events, timers, now: () => now, onError: (error) => errors.push(error) });
    await service.pollOnce();
    assert.equal(errors.length, 1, String(errors));
    assert.ok(errors[0] instanceof TimerInputError, String(errors[0]));
    assert.equal(errors[0].code, 'UNEXPECTED_ANSWER');
    hostile = false;
    now = 10_000_000;
    // The row's lease has lapsed by then: claimed again and fired (the park
    // waits on no timer, so the fire finds the wake obsolete and retires it).
    const report = await service.pollOnce();
    assert.deepEqual({ claimed: report.claimed, errors: report.errors }, { claimed: 1, errors: 0 }, JSON.stringify(report));
    assert.deepEqual(report.fires.map((fire) => fire.result), ['obsolete']);
  });

  test('locatePark over a log whose elements throw, on the first read or the second: an InputError, not the thrown value', () => {
    const log = [
      { executionId: 'w', sequence: 1, kind: 'EXECUTION_STARTED', payload: {}, metadata: {}, at: 1 },
      { executionId: 'w', sequence: 2, kind: 'EXECUTION_SUSPENDED', payload: { waitingFor: 'x' }, metadata: {}, at: 2 },
    ];
    // 0 and 1: the fold meets the throw (its cause kept); 2: the fold reads
    // every element, and the park's element throws when it is read again
    // to answer it.
    for (let i = 0; i < 3000; i++) {
      const reads = i % (log.length + 1);
      assert.throws(
        () => pkg.locatePark(throwingElements(log, reads)),
        (error) => error instanceof InputError && error.code === 'INVALID_EVENT' && (reads === log.length || error.cause?.message === 'boom'),
      );
    }
    assert.equal(pkg.locatePark(log).sequence, 2);
  });

  test('a redrive policy whose getPrototypeOf trap throws is refused, not thrown through', () => {
    const policy = new Proxy({}, { getPrototypeOf() { throw new Error('boom'); } });
    assert.throws(
      () => new RedrivePolicy(policy),
      (error) => error instanceof TimerInputError && error.code === 'UNREADABLE' && error.cause?.message === 'boom',
    );
    assert.equal(new RedrivePolicy({ baseMs: 5 }).baseMs, 5);
  });
});

describe("a store's batched retention answers, generated", () => {
  // readLogs and deleteExecutionsIf answering any value at all: the sweep
  // either takes the answer (it happens to be one the interface allows) or
  // refuses it as STORE_CONTRACT; never another error, never a crash. The
  // hostile answers delete nothing, so the store is unchanged, and a plain
  // sweep afterwards still deletes the old child.
  for (const method of ['readLogs', 'deleteExecutionsIf']) {
    test(`${method} answering anything is taken or refused as STORE_CONTRACT, the store unchanged`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.anything({ maxDepth: 3 }), async (answer) => {
          const store = new MemoryEventStore();
          await store.append('p', { kind: 'EXECUTION_STARTED', at: 1 });
          await store.appendMany('c', [pkg.startedChild('p', 1), { kind: 'EXECUTION_COMPLETED', at: 2 }]);
          const hostile = {
            ...retentionStore(store, {}),
            readLogs: async (ids) => (method === 'readLogs' ? answer : Promise.all(ids.map((id) => store.readRange(id, 1)))),
            deleteExecutionsIf: async () => (method === 'deleteExecutionsIf' ? answer : []),
          };
          const { error } = await fast(() => sweep(hostile, { endedBefore: 10 }));
          if (error !== undefined) {
            assert.ok(error instanceof InputError, String(error));
            assert.equal(error.code, 'STORE_CONTRACT', error.message);
          }
          assert.equal((await store.readRange('c', 1)).length, 2, 'a hostile answer deletes nothing');
          const report = await sweep(store, { endedBefore: 10 });
          assert.equal(report.deleted, 1, 'the instance is still usable');
        }),
        { seed: SEED, numRuns: 200 },
      );
    });
  }
});
