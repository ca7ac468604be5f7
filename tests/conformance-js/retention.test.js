// The package's retention pieces beyond the kit (which runs the listing, the
// guarded delete and the sweep cases of the Rust kit on every store, see
// retention-kit.js and sweep-kit.js): the edge (`startedChild`, `parentOf`),
// the pin (`pinParkedChildren`), and `sweep` at its edges: options and stores
// it refuses before touching anything, every store answer outside the
// interface (an InputError STORE_CONTRACT with the partial report, nothing
// deleted for it), failures that carry the report, a corrupt lineage, the
// report's shape (with `undecided`), and that no SweepError is exported.

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, test } from 'node:test';
import {
  InputError,
  MemoryEventStore,
} from 'loomfence';
import {
  parentOf,
  pinParkedChildren,
  startedChild,
  sweep,
} from 'loomfence/services';

import { PlainEventStore } from './plain-store.js';
import { Witness, assertRejects, describe as describeError, show, wrap } from './support.js';

const require = createRequire(import.meta.url);

/** The cutoff every sweep here uses, and an end before and after it. */
const CUTOFF = 5_000;
const OLD = 1_000;
const YOUNG = 9_000;

/** A store's log as `readRange` would give it, for the pure functions. */
function log(id, events) {
  return events.map((event, i) => ({ executionId: id, sequence: i + 1, payload: {}, metadata: {}, ...event }));
}

const started = (extra = {}) => ({ kind: 'EXECUTION_STARTED', at: 0, ...extra });
const parked = (waits) => ({ kind: 'EXECUTION_SUSPENDED', at: 1, payload: { waits } });
const onChild = (key) => ({ kind: 'CHILD_DONE', key });

/** A running parent and its child that ended long ago; resolves to the store. */
async function family(store = new MemoryEventStore(), parent = 'p', child = 'c') {
  await store.append(parent, started());
  await store.appendMany(child, [startedChild(parent, 0), { kind: 'EXECUTION_COMPLETED', at: OLD, payload: { total: 42 } }]);
  return store;
}

describe('startedChild and parentOf: the child → parent edge', () => {
  test('the helper writes what the reader reads', () => {
    const event = startedChild('order-1', 7);
    assert.deepEqual(event, { kind: 'EXECUTION_STARTED', payload: { parent: 'order-1' }, metadata: {}, at: 7 });
    const events = log('child', [{ kind: 'app.audit', at: 0 }, event, { ...startedChild('someone-else', 8) }]);
    assert.equal(parentOf(events), 'order-1', 'the first start is the one read');
  });

  test('a root or an old log has no recorded parent', () => {
    assert.equal(parentOf([]), null);
    assert.equal(parentOf(log('c', [started()])), null);
    assert.equal(parentOf(log('c', [started({ payload: { parent: null } })])), null);
    assert.equal(parentOf(log('c', [{ kind: 'app.step', at: 0, payload: { parent: 'p' } }])), null, 'only a start records it');
  });

  test('a corrupt parent is an INVALID_LINEAGE error, not a guess', () => {
    for (const parent of [7, '', 'a\0b', { id: 'p' }, ['p']]) {
      assert.throws(
        () => parentOf(log('c', [started({ payload: { parent } })])),
        (error) => error instanceof InputError && error.code === 'INVALID_LINEAGE' && /payload\.parent/.test(error.message),
        `parent ${show(parent)}`,
      );
    }
  });

  test('bad input is refused with the package’s errors', () => {
    assert.throws(() => startedChild('', 0), (e) => e instanceof InputError && e.code === 'INVALID_ID');
    assert.throws(() => startedChild(7, 0), (e) => e instanceof TypeError && e.code === 'NOT_A_STRING');
    assert.throws(() => startedChild('p', 2 ** 53), (e) => e instanceof RangeError && e.code === 'AT_OUT_OF_RANGE');
    assert.throws(() => startedChild('p', 'now'), (e) => e instanceof InputError && e.code === 'INVALID_EVENT');
    assert.throws(() => parentOf('not a log'), (e) => e instanceof TypeError && e.code === 'NOT_AN_ARRAY');
    assert.throws(() => parentOf([{ kind: 'EXECUTION_STARTED' }]), (e) => e instanceof InputError && e.code === 'INVALID_EVENT');
  });
});

describe('pinParkedChildren: the pin', () => {
  const parent = (events) => log('p', events);

  test('pinned while the parent is parked on the child, by key or in a group', () => {
    assert.equal(pinParkedChildren('c', parent([started(), parked([onChild('c')])])), true);
    assert.equal(pinParkedChildren('c', parent([started(), parked([{ kind: 'CHILD_DONE', group: ['b', 'c'] }])])), true);
    assert.equal(pinParkedChildren('c', parent([started(), parked([{ kind: 'TIMER', wakeAt: 9 }, onChild('c')])])), true, 'a child with a timeout');
  });

  test('not pinned by anything else', () => {
    const cases = [
      [[], 'no log'],
      [[started()], 'a running parent'],
      [[started(), parked([onChild('other')])], 'another key'],
      [[started(), parked([{ kind: 'CHILD_DONE', group: ['a', 'b'] }])], 'a group without it'],
      [[started(), parked([{ kind: 'TIMER', wakeAt: 9 }])], 'a timer'],
      [[started(), parked([onChild('c')]), { kind: 'EXECUTION_RESUMED', at: 2 }], 'an answered park'],
      [[started(), parked([onChild('c')]), { kind: 'EXECUTION_CANCELLED', at: 2 }], 'an ended parent'],
      [[started(), { kind: 'EXECUTION_COMPLETED', at: 2 }, parked([onChild('c')])], 'a park after the end'],
    ];
    for (const [events, what] of cases) assert.equal(pinParkedChildren('c', parent(events)), false, what);
  });

  test('an unreadable open park is an INVALID_PARK error, never a guess', () => {
    for (const payload of [{}, { waits: 'all of them' }, { waits: [{ kind: 'CHILD_DONE' }] }, { waits: [{ kind: 'CHILD_DONE', key: '' }] }]) {
      assert.throws(
        () => pinParkedChildren('c', parent([started(), { kind: 'EXECUTION_SUSPENDED', at: 1, payload }])),
        (error) => error instanceof InputError && error.code === 'INVALID_PARK',
        show(payload),
      );
    }
    const answered = parent([started(), { kind: 'EXECUTION_SUSPENDED', at: 1, payload: {} }, { kind: 'EXECUTION_RESUMED', at: 2 }]);
    assert.equal(pinParkedChildren('c', answered), false, 'an answered park is not read at all');
  });

  test('a kernel kind this node does not know after the open park is an UNKNOWN_KIND error, not the park\'s answer', () => {
    const newer = { kind: 'PARK_EXTENDED', at: 2, metadata: { kernel: true } };
    assert.throws(
      () => pinParkedChildren('c', parent([started(), parked([onChild('c')]), newer])),
      (error) => error instanceof InputError && error.code === 'UNKNOWN_KIND' && error.message.includes('PARK_EXTENDED'),
    );
    assert.equal(pinParkedChildren('c', parent([started(), parked([onChild('c')]), { ...newer, metadata: {} }])), true, 'without the stamp: an application kind');
    assert.equal(pinParkedChildren('c', parent([started(), parked([onChild('c')]), newer, { kind: 'EXECUTION_RESUMED', at: 3 }])), false, 'a known answer closes the park');
  });

  test('bad input is refused', () => {
    assert.throws(() => pinParkedChildren('', []), (e) => e instanceof InputError && e.code === 'INVALID_ID');
    assert.throws(() => pinParkedChildren('c', {}), (e) => e instanceof TypeError && e.code === 'NOT_AN_ARRAY');
    assert.throws(() => pinParkedChildren('c', [{ kind: 'x' }]), (e) => e instanceof InputError && e.code === 'INVALID_EVENT');
  });
});

describe('sweep: what it refuses before touching the store', () => {
  /** A store that records every call it gets. */
  function recording() {
    const calls = [];
    const inner = new MemoryEventStore();
    const store = {};
    for (const name of ['readRange', 'listExecutions', 'deleteExecutionIf']) {
      store[name] = (...args) => (calls.push(name), inner[name](...args));
    }
    return { store, calls };
  }

  test('a store without the methods a sweep needs is NOT_A_STORE', async () => {
    const plain = new PlainEventStore();
    const withoutListing = { readRange: plain.readRange.bind(plain), deleteExecutionIf: plain.deleteExecutionIf.bind(plain) };
    for (const store of [null, undefined, 7, 'store', {}, { readRange() {}, listExecutions() {} }, withoutListing]) {
      await assertRejects(sweep(store, { endedBefore: CUTOFF }), { type: TypeError, code: 'NOT_A_STORE' }, `store ${show(store)}`);
    }
    await assert.rejects(sweep({ readRange() {} }, { endedBefore: CUTOFF }), /listExecutions, deleteExecutionIf/, 'the error names what is missing');
  });

  test('options it cannot use are INVALID_OPTIONS or INVALID_LIMIT, and nothing is called', async () => {
    const { store, calls } = recording();
    const bad = [
      [undefined, 'INVALID_OPTIONS'],
      [null, 'INVALID_OPTIONS'],
      [5_000, 'INVALID_OPTIONS'],
      [{}, 'INVALID_OPTIONS'],
      [{ endedBefore: '5000' }, 'INVALID_OPTIONS'],
      [{ endedBefore: 1.5 }, 'INVALID_OPTIONS'],
      [{ endedBefore: 2 ** 53 }, 'INVALID_OPTIONS'],
      [{ endedBefore: NaN }, 'INVALID_OPTIONS'],
      [{ endedBefore: CUTOFF, olderThan: 7 }, 'INVALID_OPTIONS'],
      [{ endedBefore: CUTOFF, dryRun: 'yes' }, 'INVALID_OPTIONS'],
      [{ endedBefore: CUTOFF, archive: 'file.jsonl' }, 'INVALID_OPTIONS'],
      [{ endedBefore: CUTOFF, knownParents: new Map() }, 'INVALID_OPTIONS'],
      [{ endedBefore: CUTOFF, pageLimit: 0 }, 'INVALID_LIMIT'],
      [{ endedBefore: CUTOFF, pageLimit: 10_001 }, 'INVALID_LIMIT'],
      [{ endedBefore: CUTOFF, pageLimit: 1.5 }, 'INVALID_LIMIT'],
      [{ endedBefore: CUTOFF, pageLimit: '10' }, 'INVALID_LIMIT'],
    ];
    for (const [options, code] of bad) {
      await assertRejects(sweep(store, options), { type: InputError, code }, `options ${show(options)}`);
    }
    assert.deepEqual(calls, [], 'no store call was made');
    const report = await sweep(store, { endedBefore: -CUTOFF, pageLimit: 10_000, dryRun: false, archive: undefined, knownParents: undefined });
    assert.equal(report.examined, 0, 'the bounds themselves are accepted');
  });
});

describe('sweep: a host store answering outside the interface', () => {
  /**
   * Sweeps a store holding one old child of a running parent, with one of
   * its methods replaced; expects a STORE_CONTRACT InputError carrying the
   * partial report, the child and the parent untouched.
   */
  async function expectContract(what, overrides, inspect = () => {}) {
    const store = await family();
    const before = [await Witness.capture(store, 'c'), await Witness.capture(store, 'p')];
    await assert.rejects(sweep(wrap(store, overrides(store)), { endedBefore: CUTOFF }), (error) => {
      assert.ok(error instanceof InputError, `${what}: expected an InputError, got ${describeError(error)}`);
      assert.equal(error.code, 'STORE_CONTRACT', `${what}: ${error.message}`);
      assert.equal(error.report?.deleted, 0, `${what}: the partial report is attached`);
      inspect(error);
      return true;
    });
    for (const witness of before) await witness.assertUnchanged(store, what);
  }

  test('batched answers of the wrong count or shape', async () => {
    const cases = [
      ['readLogs answering one log fewer', (store) => ({ readLogs: async (ids) => (await store.readLogs(ids)).slice(1) })],
      ['readLogs answering logs that are not arrays', () => ({ readLogs: async (ids) => ids.map(() => 'x') })],
      ['deleteExecutionsIf answering no outcome', () => ({ deleteExecutionsIf: async () => [] })],
      ['deleteExecutionsIf answering one outcome, not an array', () => ({ deleteExecutionsIf: async () => ({ deleted: true }) })],
    ];
    for (const [what, overrides] of cases) {
      const store = await family(new PlainEventStore());
      const before = [await Witness.capture(store, 'c'), await Witness.capture(store, 'p')];
      const view = {};
      for (const name of ['listExecutions', 'readRange', 'deleteExecutionIf', 'readLogs', 'deleteExecutionsIf']) {
        view[name] = store[name].bind(store);
      }
      await assert.rejects(sweep({ ...view, ...overrides(store) }, { endedBefore: CUTOFF }), (error) => {
        assert.ok(error instanceof InputError, `${what}: expected an InputError, got ${describeError(error)}`);
        assert.equal(error.code, 'STORE_CONTRACT', `${what}: ${error.message}`);
        assert.equal(error.report?.deleted, 0, `${what}: the partial report is attached`);
        return true;
      });
      for (const witness of before) await witness.assertUnchanged(store, what);
    }
  });

  test('listing answers that are not pages of summaries', async () => {
    const summary = { executionId: 'c', head: 2, ended: { sequence: 2, at: OLD } };
    const pages = [
      [() => null, 'not an array'],
      [() => ({ 0: summary, length: 1 }), 'an array-like'],
      [(limit) => Array.from({ length: limit + 1 }, (_, n) => ({ ...summary, executionId: `c${n}` })), 'more than the limit'],
      [() => [null], 'a null summary'],
      [() => [{ ...summary, executionId: '' }], 'an empty id'],
      [() => [{ ...summary, executionId: 'x'.repeat(256) }], 'a 256-byte id'],
      [() => [{ ...summary, executionId: 7 }], 'a number id'],
      [() => [{ ...summary, head: 0 }], 'head 0'],
      [() => [{ ...summary, head: '2' }], 'a string head'],
      [() => [{ executionId: 'c', head: 2 }], 'no ended'],
      [() => [{ ...summary, ended: false }], 'ended false'],
      [() => [{ ...summary, ended: { sequence: 3, at: OLD } }], 'ended past the head'],
      [() => [{ ...summary, ended: { sequence: 0, at: OLD } }], 'ended at 0'],
      [() => [{ ...summary, ended: { sequence: 2, at: 1.5 } }], 'a fractional end'],
      [() => [{ ...summary, ended: { sequence: 2 } }], 'an end without at'],
    ];
    for (const [page, what] of pages) {
      await expectContract(what, () => ({
        async listExecutions(after, limit) {
          return after === null ? page(limit) : [];
        },
      }));
    }
  });

  test('a page that lists its cursor again is refused: it would never end', async () => {
    await expectContract('a repeated cursor', (store) => ({
      async listExecutions(_after, limit) {
        // The running parent, every time: nothing is eligible before the repeat.
        return (await store.listExecutions(null, limit)).filter((s) => s.executionId === 'p');
      },
    }), (error) => assert.match(error.message, /listed "p" again/));
  });

  test('logs that are not the log asked for', async () => {
    const events = [
      [null, 'not an array'],
      [[{ executionId: 'c', sequence: 2, kind: 'EXECUTION_COMPLETED', payload: {}, metadata: {}, at: OLD }], 'not from sequence 1'],
      [[{ executionId: 'other', sequence: 1, kind: 'EXECUTION_STARTED', payload: {}, metadata: {}, at: 0 }], 'another execution'],
      [[{ executionId: 'c', sequence: 1, kind: 'EXECUTION_STARTED', payload: 'x', metadata: {}, at: 0 }], 'a payload that is not an object'],
      [[{ executionId: 'c', sequence: 1, payload: {}, metadata: {}, at: 0 }], 'no kind'],
    ];
    for (const [answer, what] of events) {
      await expectContract(`the child's log: ${what}`, (store) => ({
        async readRange(id, ...range) {
          return id === 'c' ? answer : store.readRange(id, ...range);
        },
      }));
    }
    await expectContract("the parent's log: another execution's", (store) => ({
      async readRange(id, ...range) {
        return store.readRange(id === 'p' ? 'c' : id, ...range);
      },
    }));
  });

  test('delete answers that do not answer the guard', async () => {
    const answers = [
      [undefined, 'nothing'],
      [true, 'a bare true'],
      [{}, 'no flag'],
      [{ deleted: 'yes' }, 'a truthy flag'],
      [{ deleted: 1 }, 'a number flag'],
      [{ deleted: false }, 'deleted: false'],
      [{ deleted: true, logChanged: true, head: 3 }, 'two flags'],
      [{ logChanged: true, head: 2 }, "the guard's own head"],
      [{ logChanged: true }, 'no head'],
      [{ parentMoved: true, parent: 'stranger' }, 'a parent not in the guard'],
      [{ parentMoved: true }, 'no parent'],
    ];
    for (const [answer, what] of answers) {
      let guard;
      await expectContract(what, () => ({
        async deleteExecutionIf(id, sent) {
          guard = sent;
          return answer;
        },
      }));
      assert.deepEqual(guard, { head: 2, parents: [{ parent: 'p', seen: 1 }] }, `${what}: the guard sent`);
    }
  });

  test('a knownParents that does not answer ids is UNEXPECTED_ANSWER, with the report', async () => {
    for (const answer of ['p', [7], [''], new Set(['p'])]) {
      const store = await family();
      await assert.rejects(sweep(store, { endedBefore: CUTOFF, knownParents: () => answer }), (error) => {
        assert.ok(error instanceof InputError && error.code === 'UNEXPECTED_ANSWER', describeError(error));
        assert.deepEqual([error.report.eligible, error.report.logReads], [1, 0], 'stopped before the log was judged');
        return true;
      });
      assert.equal((await store.readRange('c')).length, 2, 'the child is kept');
    }
  });
});

describe('sweep: failures carry what was done', () => {
  test("a store's failure is rethrown as it came, with the partial report", async () => {
    const store = await family();
    await store.appendMany('a-root', [started(), { kind: 'EXECUTION_FAILED', at: OLD }]);
    const failure = new Error('the database went away');
    const failing = wrap(store, {
      async deleteExecutionIf(id, guard) {
        if (id === 'c') throw failure;
        return store.deleteExecutionIf(id, guard);
      },
    });
    await assert.rejects(sweep(failing, { endedBefore: CUTOFF }), (error) => {
      assert.equal(error, failure);
      // The root and c are one batch; the root's delete went through before c
      // failed and stands, but the report counts only answered batches.
      assert.deepEqual([error.report.eligible, error.report.deleted, error.report.deleteBatches], [2, 0, 0]);
      return true;
    });
    assert.deepEqual(await store.readRange('a-root'), []);
    assert.equal((await store.readRange('c')).length, 2);
  });

  test('a failing archive stops the sweep with the log kept', async () => {
    const store = await family();
    const failure = new Error('disk full');
    await assert.rejects(
      sweep(store, { endedBefore: CUTOFF, archive: async () => { throw failure; } }),
      (error) => error === failure && error.report.archived === 0 && error.report.deleted === 0,
    );
    assert.equal((await store.readRange('c')).length, 2);
  });

  test('a thrown value that cannot carry a report is rethrown unchanged', async () => {
    const store = await family();
    const throwing = wrap(store, {
      listExecutions() {
        throw 'offline'; // eslint-disable-line no-throw-literal
      },
    });
    await assert.rejects(sweep(throwing, { endedBefore: CUTOFF }), (error) => error === 'offline');
    const frozen = Object.freeze(new Error('frozen'));
    await assert.rejects(sweep(wrap(store, { listExecutions: async () => Promise.reject(frozen) }), { endedBefore: CUTOFF }), (e) => e === frozen);
  });

  test('a corrupt recorded parent is undecided INVALID_LINEAGE: the log is kept and the sweep goes on', async () => {
    const store = new MemoryEventStore();
    await store.appendMany('a-fine', [started(), { kind: 'EXECUTION_COMPLETED', at: OLD }]);
    await store.appendMany('b-corrupt', [started({ payload: { parent: 42 } }), { kind: 'EXECUTION_COMPLETED', at: OLD }]);
    await store.appendMany('c-fine', [started(), { kind: 'EXECUTION_COMPLETED', at: OLD }]);
    const report = await sweep(store, { endedBefore: CUTOFF });
    assert.deepEqual([report.eligible, report.deleted], [3, 2]);
    assert.equal(report.undecided.length, 1);
    const [{ executionId, code, parent, detail }] = report.undecided;
    assert.deepEqual([executionId, code, parent], ['b-corrupt', 'INVALID_LINEAGE', null]);
    assert.match(detail, /42/);
    assert.equal((await store.readRange('b-corrupt')).length, 2);
  });

  test('a store read that rejects without `retryable: false` still stops the sweep with the report', async () => {
    const store = await family();
    for (const failure of [new Error('reset'), Object.assign(new Error('busy'), { retryable: true })]) {
      const failing = wrap(store, {
        async readRange() {
          throw failure;
        },
      });
      await assert.rejects(sweep(failing, { endedBefore: CUTOFF }), (error) => error === failure && error.report.undecided.length === 0);
    }
    assert.equal((await store.readRange('c')).length, 2);
  });
});

describe('sweep: the report', () => {
  test('has every count, the pins and the refusals, as plain values', async () => {
    const store = await family();
    await store.append('p', parked([onChild('c')]));
    await store.appendMany('young', [started(), { kind: 'EXECUTION_COMPLETED', at: YOUNG }]);
    const report = await sweep(store, { endedBefore: CUTOFF, pageLimit: 2 });
    assert.deepEqual(report, {
      dryRun: false,
      examined: 3,
      eligible: 1,
      skipped: 2,
      deleted: 0,
      archived: 0,
      pinned: [{ child: 'c', parent: 'p' }],
      kept: [],
      undecided: [],
      pages: 3,
      logReads: 1,
      parentReads: 1,
      deleteBatches: 0,
    });
  });

  test('a log that changed after its listing is kept and reported', async () => {
    const store = await family();
    const growing = wrap(store, {
      async deleteExecutionIf(id, guard) {
        await store.append(id, { kind: 'app.audit', at: 3 });
        return store.deleteExecutionIf(id, guard);
      },
    });
    const report = await sweep(growing, { endedBefore: CUTOFF });
    assert.deepEqual(report.kept, [{ executionId: 'c', refusal: { logChanged: true, head: 3 } }]);
    assert.equal(report.deleted, 0);
  });

  test('the archive gets plain envelopes it may keep', async () => {
    const store = await family();
    const archived = [];
    const report = await sweep(store, { endedBefore: CUTOFF, archive: (id, events) => { archived.push({ id, events }); } });
    assert.equal(report.archived, 1);
    assert.deepEqual(archived, [
      {
        id: 'c',
        events: [
          { executionId: 'c', sequence: 1, kind: 'EXECUTION_STARTED', payload: { parent: 'p' }, metadata: {}, at: 0 },
          { executionId: 'c', sequence: 2, kind: 'EXECUTION_COMPLETED', payload: { total: 42 }, metadata: {}, at: OLD },
        ],
      },
    ]);
  });
});

test('sweep is one function for import and require, and no SweepError is exported (undecided is not an error)', async () => {
  const required = require('loomfence/services');
  assert.equal(required.sweep, sweep);
  assert.equal(required.SweepError, undefined);
  assert.equal((await import('loomfence/services')).SweepError, undefined);
  assert.equal((await import('loomfence')).SweepError, undefined);
});
