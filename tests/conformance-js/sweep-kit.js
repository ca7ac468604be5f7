// The kit's sweep cases: the package's retention `sweep`, end to end over
// each store: who is pinned, who is deleted, what is read, and that a store
// failure that may pass stops it with the log kept (what it cannot judge is
// sweep-undecided-kit.js). The cases of
// tests/conformance/src/cases/sweep.rs, ported one for one under the same
// names. Where the Rust kit uses the runtime's ChildSupervisor, which the
// package does not have, the port does what a JavaScript host does instead:
// it rebuilds the supervisor's edges from the parents' parks
// (`rebuildEdges`) and hands them to the sweep as `knownParents`, and it
// answers a parent from its kept child's outcome with `resume`.

import assert from 'node:assert/strict';
import { locatePark, resume } from 'loomfence';
import { pinParkedChildren, startedChild, sweep } from 'loomfence/services';

import { Witness, describe as describeError, show, wrap } from './support.js';

/** When the kit's old executions ended, when its young ones did, and the
 * cutoff it sweeps with: old is before it, young after. */
export const LONG_AGO = 1_000;
export const RECENTLY = 9_000;
export const CUTOFF = 5_000;

/** How many executions the big case writes. */
export const MANY = 10_000;

/** Sweep options with the kit's cutoff and a page size of `pageLimit`. */
function options(pageLimit, more = {}) {
  return { endedBefore: CUTOFF, pageLimit, ...more };
}

/** A wait on one child, on a group, on a timer. */
const child = (key) => ({ kind: 'CHILD_DONE', key });
const group = (members) => ({ kind: 'CHILD_DONE', group: members });
const timer = (wakeAt) => ({ kind: 'TIMER', wakeAt });

/** Starts `id`, running. */
async function start(store, id) {
  await store.append(id, { kind: 'EXECUTION_STARTED', at: 0 });
}

/** A child of `parent` (recorded in its start, unless `parent` is null) that
 * ended at `ended` with the output `{ total: 42 }`. */
async function finishedChild(store, id, parent, ended) {
  await store.appendMany(id, [
    parent === null ? { kind: 'EXECUTION_STARTED', at: 0 } : startedChild(parent, 0),
    { kind: 'EXECUTION_COMPLETED', at: ended, payload: { total: 42 } },
  ]);
}

/** Parks `parent` on `waits`. */
async function parkOn(store, parent, waits) {
  await store.append(parent, { kind: 'EXECUTION_SUSPENDED', at: 0, payload: { waits } });
}

/** Whether `id` still has its log. */
async function exists(store, id) {
  return (await store.readRange(id, 1)).length > 0;
}

/**
 * What a supervisor rebuilt after a restart knows, from the parents' logs
 * alone: for each child an open park waits on (by key or in a group), the
 * parents parked on it. The JavaScript twin of ChildSupervisor::rebuild and
 * parents_waiting_on.
 */
async function rebuildEdges(store, parents) {
  const edges = new Map();
  for (const parent of parents) {
    const park = locatePark(await store.readRange(parent, 1));
    for (const wait of park?.payload.waits ?? []) {
      if (wait.kind !== 'CHILD_DONE') continue;
      for (const awaited of wait.group ?? [wait.key]) {
        edges.set(awaited, [...(edges.get(awaited) ?? []), parent]);
      }
    }
  }
  return (childId) => edges.get(childId) ?? [];
}

/** Asserts `promise` rejects with `failure` itself, carrying the sweep's
 * partial report; resolves to the report. */
async function rejectsWithReport(promise, failure, what) {
  let report;
  await assert.rejects(promise, (error) => {
    assert.equal(error, failure, `${what}: the store's own error, as it came (got ${describeError(error)})`);
    assert.ok(error.report && typeof error.report === 'object', `${what}: no report on the error`);
    report = error.report;
    return true;
  });
  return report;
}

/** The cases: [name, run(store, capabilities)]. */
export const SWEEP_CASES = [];
function kase(name, run) {
  SWEEP_CASES.push([name, run]);
}

kase('sweep::a_child_is_pinned_while_its_parent_is_parked_on_it', async (store) => {
  // A finished child is pinned (kept, reported, its parent read) while its
  // parent is parked on it by its own key, and the parked parent itself is
  // not eligible.
  const [parent, kid] = ['pin-parent', 'pin-child'];
  await start(store, parent);
  await finishedChild(store, kid, parent, LONG_AGO);
  await parkOn(store, parent, [child(kid)]);
  const report = await sweep(store, options(10));
  assert.deepEqual(report.pinned, [{ child: kid, parent }]);
  assert.deepEqual([report.examined, report.eligible, report.deleted, report.parentReads], [2, 1, 0, 1]);
  assert.ok(await exists(store, kid));
});

kase('sweep::a_child_is_deleted_once_its_parent_is_answered_or_ended', async (store) => {
  // Once the parent's park is answered the child is no longer pinned, and
  // once the parent has ended (long enough ago) both go.
  const [parent, kid] = ['ans-parent', 'ans-child'];
  await start(store, parent);
  await finishedChild(store, kid, parent, LONG_AGO);
  await parkOn(store, parent, [child(kid)]);
  await store.append(parent, { kind: 'EXECUTION_RESUMED', at: 0 });
  let report = await sweep(store, options(10));
  assert.deepEqual(report.pinned, [], show(report));
  assert.equal(report.deleted, 1);
  assert.ok(!(await exists(store, kid)));

  const [ended, late] = ['end-parent', 'end-child'];
  await start(store, ended);
  await finishedChild(store, late, ended, LONG_AGO);
  await parkOn(store, ended, [child(late)]);
  await store.append(ended, { kind: 'EXECUTION_CANCELLED', at: LONG_AGO });
  report = await sweep(store, options(1));
  assert.deepEqual(report.pinned, [], show(report));
  assert.equal(report.deleted, 2, 'the ended parent and its child');
  assert.ok(!(await exists(store, late)) && !(await exists(store, ended)));
  assert.ok(await exists(store, parent), 'the answered parent runs on');
});

kase('sweep::group_members_are_pinned_and_other_keys_are_not', async (store) => {
  // A member of a group the parent is parked on is pinned even while the
  // group is incomplete; a finished child of the same parent that the park
  // does not name (another key) is not.
  const parent = 'grp-parent';
  const [a, b, other] = ['grp-a', 'grp-b', 'grp-other'];
  await start(store, parent);
  await finishedChild(store, a, parent, LONG_AGO);
  await start(store, b);
  await finishedChild(store, other, parent, LONG_AGO);
  await parkOn(store, parent, [group([a, b]), timer(99_000)]);
  const report = await sweep(store, options(2));
  assert.deepEqual(report.pinned, [{ child: a, parent }]);
  assert.equal(report.deleted, 1);
  assert.ok((await exists(store, a)) && (await exists(store, b)));
  assert.ok(!(await exists(store, other)));
});

kase('sweep::only_old_ended_executions_are_read_and_a_root_is_deleted', async (store) => {
  // Only executions that ended before the cutoff are eligible, and only
  // those are read: running and young ones cost nothing beyond the listing,
  // and a child with no parent is deleted without reading anyone else.
  await finishedChild(store, 'root', null, LONG_AGO);
  await finishedChild(store, 'young', null, RECENTLY);
  await start(store, 'running');
  const report = await sweep(store, options(10));
  assert.deepEqual(
    [report.examined, report.eligible, report.skipped, report.logReads, report.parentReads, report.deleted],
    [3, 1, 2, 1, 0, 1],
  );
  assert.ok(!(await exists(store, 'root')));
  assert.ok((await exists(store, 'young')) && (await exists(store, 'running')));
});

kase('sweep::a_log_without_the_edge_is_pinned_through_a_rebuilt_supervisor', async (store) => {
  // A child whose log has no payload.parent (written before the field) is
  // only protected through a supervisor's edges. The parent waits on a
  // group: the old child has ended, its sibling runs. Without edges the
  // sweep would delete the child (a dry run shows it); edges rebuilt after
  // a restart, from the parents' logs alone, given as knownParents, pin it.
  const parent = 'old-parent';
  const [kid, sibling] = ['old-child', 'old-sibling'];
  await start(store, parent);
  await finishedChild(store, kid, null, LONG_AGO);
  await start(store, sibling);
  await parkOn(store, parent, [group([kid, sibling])]);
  const blind = await sweep(store, options(10, { dryRun: true }));
  assert.deepEqual([blind.deleted, blind.pinned.length], [1, 0], 'without edges the child looks free');
  const knownParents = await rebuildEdges(store, [parent]);
  const report = await sweep(store, options(10, { knownParents }));
  assert.deepEqual(report.pinned, [{ child: kid, parent }], show(report));
  assert.equal(report.deleted, 0);
  assert.ok(await exists(store, kid));
});

kase('sweep::a_parent_that_cannot_be_read_stops_the_sweep', async (store) => {
  // A parent that cannot be read stops the sweep with the store's error and
  // the partial report; the child is not deleted. "No such log" is not a
  // failure: a child whose recorded parent is gone is free.
  const [parent, kid] = ['unread-parent', 'unread-child'];
  await start(store, parent);
  await finishedChild(store, kid, parent, LONG_AGO);
  const failure = Object.assign(new Error('connection reset while reading the parent'), { retryable: true });
  const failing = wrap(store, {
    async readRange(id, ...range) {
      if (id === parent) throw failure;
      return store.readRange(id, ...range);
    },
  });
  const report = await rejectsWithReport(sweep(failing, options(10)), failure, 'an unreadable parent');
  assert.deepEqual([report.eligible, report.deleted], [1, 0]);
  assert.ok(await exists(store, kid));

  await finishedChild(store, 'unread-orphan', 'never-written', LONG_AGO);
  const next = await sweep(store, options(10));
  assert.ok(!(await exists(store, 'unread-orphan')), show(next));
});

kase('sweep::a_dry_run_changes_nothing', async (store) => {
  // A dry run reads what deciding needs and changes nothing; `deleted`
  // counts what a real run would delete.
  const parent = 'dry-parent';
  await start(store, parent);
  const ids = [];
  for (let n = 0; n < 5; n++) {
    ids.push(`dry-child-${n}`);
    await finishedChild(store, ids[n], parent, LONG_AGO);
  }
  await parkOn(store, parent, [child(ids[0])]);
  ids.push(parent);
  const before = await Promise.all(ids.map((id) => Witness.capture(store, id)));
  const archived = [];
  const report = await sweep(store, options(2, { dryRun: true, archive: async (id) => archived.push(id) }));
  assert.equal(report.dryRun, true);
  assert.deepEqual([report.deleted, report.pinned.length, report.archived], [4, 1, 0]);
  assert.deepEqual(archived, [], 'a dry run archives nothing');
  for (const witness of before) await witness.assertUnchanged(store, 'a dry run');
});

kase('sweep::the_archive_gets_each_log_before_its_delete', async (store) => {
  // Every deleted log reaches the archive first, whole; pinned ones do not.
  const parent = 'arc-parent';
  await start(store, parent);
  for (let n = 0; n < 4; n++) await finishedChild(store, `arc-child-${n}`, parent, LONG_AGO);
  await parkOn(store, parent, [child('arc-child-3')]);
  const archived = [];
  const archive = async (executionId, events) => {
    assert.deepEqual(await store.readRange(executionId, 1), events, 'archived before the delete, as stored');
    archived.push([executionId, events]);
  };
  const report = await sweep(store, options(3, { archive }));
  assert.deepEqual([report.archived, report.deleted], [3, 3]);
  assert.deepEqual(archived.map(([id]) => id), ['arc-child-0', 'arc-child-1', 'arc-child-2']);
  assert.ok(archived.every(([, events]) => events.length === 2));
});

kase('sweep::a_parent_parking_in_the_window_keeps_the_child', async (store, caps) => {
  // The window between the pin check and the delete: a parent that parks on
  // the child in it keeps the child (the guarded delete is refused and
  // reported), it is then answered from the child's outcome, and the next
  // sweep deletes the child. The same run with the guard ignored (the
  // negative control: a plain deleteExecution) deletes the child under the
  // parked parent, which then waits forever.
  for (const unguarded of [false, true]) {
    const suffix = unguarded ? 'unguarded' : 'guarded';
    const [parent, kid] = [`win-parent-${suffix}`, `win-child-${suffix}`];
    await start(store, parent);
    await finishedChild(store, kid, parent, LONG_AGO);
    const childBefore = await Witness.capture(store, kid);
    // Parks the parent on the child at the last moment: after the sweep's
    // pin check, right before its delete.
    const racing = wrap(store, {
      async deleteExecutionIf(id, guard) {
        if (id === kid) await parkOn(store, parent, [child(kid)]);
        if (unguarded) {
          await store.deleteExecution(id);
          return { deleted: true };
        }
        return store.deleteExecutionIf(id, guard);
      },
    });
    const report = await sweep(racing, options(10));
    const parentLog = await store.readRange(parent, 1);
    assert.ok(pinParkedChildren(kid, parentLog), 'the parent is parked on the child');
    if (unguarded) {
      assert.equal(report.deleted, 1);
      assert.ok(!(await exists(store, kid)), 'the control: the parent waits on a child that is gone');
      continue;
    }
    assert.equal(report.deleted, 0, show(report));
    assert.deepEqual(report.kept, [{ executionId: kid, refusal: { parentMoved: true, parent } }]);
    await childBefore.assertUnchanged(store, 'a delete refused in the window');
    // The parent's supervisor answers it from the kept child's outcome.
    const outcome = (await store.readRange(kid, 1)).find((e) => e.kind === 'EXECUTION_COMPLETED');
    const answer = { children: { [kid]: { output: outcome.payload } } };
    const park = locatePark(parentLog);
    if (caps.appendIfParked) {
      await resume(store, parent, { fenceIfParkedAt: park.sequence, answer, at: 0 });
    } else {
      await store.append(parent, { kind: 'EXECUTION_RESUMED', at: 0, payload: { answer } });
    }
    const [resumed] = await store.readRange(parent, park.sequence + 1);
    assert.deepEqual(resumed.payload.answer.children[kid].output, { total: 42 });
    const next = await sweep(store, options(10));
    assert.equal(next.deleted, 1, show(next));
    assert.ok(!(await exists(store, kid)));
  }
});

/** The shape of execution `n` of the big sweep: parents and their pinned
 * children in pairs, the rest spread over the other shapes. */
function shape(n) {
  switch (n % 10) {
    case 0:
      return 'parkedParent'; // parked on its old child, n + 1
    case 1:
      return 'pinnedChild'; // an old child of a parked parent: pinned
    case 2:
    case 3:
    case 4:
      return 'oldRoot'; // deleted, no parent read
    case 5:
    case 6:
      return 'freeChild'; // an old child of a running parent: one parent read, deleted
    case 7:
    case 8:
      return 'young'; // ended after the cutoff: skipped
    default:
      return 'running'; // skipped
  }
}

kase('sweep::ten_thousand_executions_are_read_only_as_needed', async (store) => {
  // 10,000 executions of mixed shapes, swept in pages of 1,000: everything is
  // examined once, only the eligible ones' logs are read (one read each),
  // parents are read only for eligible children, and exactly the old
  // unpinned ones are deleted. The counts, checked against the reads the
  // store actually served, are the proof that the pin is consulted only for
  // eligible executions.
  const name = (n) => `many-${String(n).padStart(5, '0')}`;
  const runningParent = 'many-running-parent';
  await start(store, runningParent);
  const lane = async (first) => {
    for (let n = first; n < MANY; n += 8) {
      const id = name(n);
      switch (shape(n)) {
        case 'parkedParent':
          await start(store, id);
          await parkOn(store, id, [child(name(n + 1))]);
          break;
        case 'pinnedChild':
          await finishedChild(store, id, name(n - 1), LONG_AGO);
          break;
        case 'oldRoot':
          await finishedChild(store, id, null, LONG_AGO);
          break;
        case 'freeChild':
          await finishedChild(store, id, runningParent, LONG_AGO);
          break;
        case 'young':
          await finishedChild(store, id, null, RECENTLY);
          break;
        default:
          await start(store, id);
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, (_, first) => lane(first)));
  const count = (...shapes) => Array.from({ length: MANY }, (_, n) => shape(n)).filter((s) => shapes.includes(s)).length;
  const eligible = count('pinnedChild', 'oldRoot', 'freeChild');
  const reads = [];
  const counting = wrap(store, {
    async readRange(id, ...range) {
      reads.push(id);
      return store.readRange(id, ...range);
    },
  });
  const report = await sweep(counting, options(1_000));
  assert.equal(report.examined, MANY + 1);
  assert.equal(report.eligible, eligible);
  assert.equal(report.logReads, eligible, 'one read per eligible execution');
  // Each parent once per page: a pinned child's own, and the running parent
  // of the free children once on every page that holds one.
  const pagesWithFree = Array.from({ length: MANY / 1_000 }, (_, page) =>
    Array.from({ length: 1_000 }, (_, n) => shape(page * 1_000 + n)).includes('freeChild'),
  ).filter(Boolean).length;
  assert.equal(report.parentReads, count('pinnedChild') + pagesWithFree, 'parents read only for eligible children, once per page');
  assert.equal(reads.length, report.logReads + report.parentReads, 'the report counts every read the store served');
  const isEligible = (id) => id.startsWith('many-') && id !== runningParent && ['pinnedChild', 'oldRoot', 'freeChild'].includes(shape(Number(id.slice(5))));
  const logReads = reads.filter(isEligible);
  assert.equal(logReads.length, eligible, 'no log of a running or young execution was read');
  assert.equal(new Set(logReads).size, eligible, 'each eligible log was read once');
  assert.equal(report.pinned.length, count('pinnedChild'));
  assert.equal(report.deleted, count('oldRoot', 'freeChild'));
  assert.deepEqual(report.kept, []);
  assert.equal(report.pages, MANY / 1_000 + 2, 'eleven full or partial pages and the empty one');
  // 500 deletes a page, with their one running parent: two batches of at
  // most 256 locked executions each.
  assert.equal(report.deleteBatches, 2 * (MANY / 1_000), 'two batches of deletes a page');
  const left = await store.listExecutions(null, 10_000);
  assert.equal(left.length, MANY + 1 - report.deleted);
});
