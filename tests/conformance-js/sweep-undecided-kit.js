// The kit's sweep cases on data the sweep cannot judge: each such child is
// kept, named in the report's `undecided` with a reason code, and the sweep
// goes on to the rest; and archiving with nowhere to archive is refused.
// The cases of tests/conformance/src/cases/sweep_undecided.rs, ported one
// for one under the same names.

import assert from 'node:assert/strict';
import { startedChild, sweep } from 'loomfence/services';

import { show, wrap } from './support.js';

const LONG_AGO = 1_000;
const CUTOFF = 5_000;

function options(pageLimit, more = {}) {
  return { endedBefore: CUTOFF, pageLimit, ...more };
}

async function start(store, id) {
  await store.append(id, { kind: 'EXECUTION_STARTED', at: 0 });
}

async function finishedChild(store, id, parent, ended) {
  await store.appendMany(id, [
    parent === null ? { kind: 'EXECUTION_STARTED', at: 0 } : startedChild(parent, 0),
    { kind: 'EXECUTION_COMPLETED', at: ended, payload: { total: 42 } },
  ]);
}

async function exists(store, id) {
  return (await store.readRange(id, 1)).length > 0;
}

/** A free root that ended long ago, listed after every `ud-a…` id: a sweep
 * that goes on past an undecided child deletes it. */
async function freeRoot(store) {
  await finishedChild(store, 'ud-z-free', null, LONG_AGO);
  return 'ud-z-free';
}

/** The report's `undecided` as `[executionId, code, parent]` rows. */
function undecided(report) {
  return report.undecided.map(({ executionId, code, parent }) => [executionId, code, parent]);
}

/** The cases: [name, run(store, capabilities)]. */
export const SWEEP_UNDECIDED_CASES = [];
function kase(name, run) {
  SWEEP_UNDECIDED_CASES.push([name, run]);
}

kase('sweep_undecided::an_unknown_kernel_kind_after_the_park_keeps_the_child', async (store) => {
  // A newer node wrote a kernel kind this node does not know after the
  // parent's park. The fence takes it as answering; retention must not,
  // since the parent may still wait on the child.
  const [parent, kid] = ['ud-a-kind-parent', 'ud-a-kind-child'];
  await start(store, parent);
  await finishedChild(store, kid, parent, LONG_AGO);
  await store.append(parent, { kind: 'EXECUTION_SUSPENDED', at: 0, payload: { waits: [{ kind: 'CHILD_DONE', key: kid }] } });
  await store.append(parent, { kind: 'PARK_EXTENDED', at: 0, metadata: { kernel: true } });
  const root = await freeRoot(store);
  const report = await sweep(store, options(10));
  assert.ok(await exists(store, kid), show(report));
  assert.ok(!(await exists(store, root)), show(report));
  assert.deepEqual(undecided(report), [[kid, 'UNKNOWN_KIND', parent]]);
  assert.ok(report.undecided[0].detail.includes('PARK_EXTENDED'), report.undecided[0].detail);
  assert.deepEqual([report.deleted, report.pinned], [1, []]);
});

kase('sweep_undecided::an_unreadable_park_keeps_the_child_and_the_sweep_goes_on', async (store) => {
  // A parent whose open park cannot be read keeps its child, and the sweep
  // goes on to delete the other eligible executions of the same run.
  const [parent, kid] = ['ud-a-park-parent', 'ud-a-park-child'];
  await start(store, parent);
  await finishedChild(store, kid, parent, LONG_AGO);
  await store.append(parent, { kind: 'EXECUTION_SUSPENDED', at: 0, payload: { waits: 'all of them' } });
  const root = await freeRoot(store);
  const report = await sweep(store, options(1));
  assert.ok(await exists(store, kid), show(report));
  assert.ok(!(await exists(store, root)), show(report));
  assert.deepEqual(undecided(report), [[kid, 'INVALID_PARK', parent]]);
  assert.equal(report.deleted, 1);
});

kase('sweep_undecided::a_corrupt_recorded_parent_keeps_the_child_and_the_sweep_goes_on', async (store) => {
  // A child whose recorded parent is corrupt is kept, and the sweep goes on.
  const kid = 'ud-a-lineage-child';
  await store.appendMany(kid, [
    { kind: 'EXECUTION_STARTED', at: 0, payload: { parent: 42 } },
    { kind: 'EXECUTION_COMPLETED', at: LONG_AGO },
  ]);
  const root = await freeRoot(store);
  const report = await sweep(store, options(10));
  assert.ok(await exists(store, kid), show(report));
  assert.ok(!(await exists(store, root)), show(report));
  assert.deepEqual(undecided(report), [[kid, 'INVALID_LINEAGE', null]]);
  assert.equal(report.deleted, 1);
});

kase('sweep_undecided::a_log_or_parent_the_store_cannot_read_keeps_the_child', async (store) => {
  // A parent, or a child's own log, that the store cannot read for good
  // (`retryable: false`) keeps the child, and the sweep goes on.
  const [parent, kid] = ['ud-a-read-parent', 'ud-a-read-child'];
  await start(store, parent);
  await finishedChild(store, kid, parent, LONG_AGO);
  const corrupt = (bad) =>
    wrap(store, {
      async readRange(id, ...range) {
        if (id === bad) throw Object.assign(new Error('a stored event cannot be decoded'), { retryable: false });
        return store.readRange(id, ...range);
      },
    });
  let root = await freeRoot(store);
  let report = await sweep(corrupt(parent), options(10));
  assert.ok(await exists(store, kid), show(report));
  assert.ok(!(await exists(store, root)), show(report));
  assert.deepEqual(undecided(report), [[kid, 'UNREADABLE_PARENT', parent]]);
  assert.ok(report.undecided[0].detail.includes('cannot be decoded'), report.undecided[0].detail);

  root = await freeRoot(store);
  report = await sweep(corrupt(kid), options(10));
  assert.ok(await exists(store, kid), show(report));
  assert.ok(!(await exists(store, root)), show(report));
  assert.deepEqual(undecided(report), [[kid, 'UNREADABLE_LOG', null]]);
});

kase('sweep_undecided::archiving_without_a_sink_is_refused', async (store) => {
  // `archive` must be the sink itself, a function: `archive: true` is
  // refused before anything is listed or deleted, dry runs included.
  const root = await freeRoot(store);
  let listed = 0;
  const counting = wrap(store, {
    async listExecutions(...args) {
      listed += 1;
      return store.listExecutions(...args);
    },
  });
  for (const dryRun of [false, true]) {
    await assert.rejects(sweep(counting, options(10, { archive: true, dryRun })), (error) => {
      assert.equal(error.code, 'INVALID_OPTIONS', String(error));
      return true;
    });
  }
  assert.equal(listed, 0, 'nothing was listed');
  assert.ok(await exists(store, root));
});
