// The kit's batch cases: what a sweep asks of a store that batches (a page's
// logs in one `readLogs`, guarded deletes in `deleteExecutionsIf`), and a
// sweep whose one page holds every kind of child at once. The cases of
// tests/conformance/src/cases/sweep_batch.rs, ported one for one under the
// same names. Both methods are optional for a JavaScript store (the sweep then
// asks one execution at a time), so the first three need a store that has
// them ('batched'); the last runs on any store, through whichever path it
// offers.

import assert from 'node:assert/strict';
import { startedChild, sweep } from 'loomfence/services';

import { AT, Witness, assertRejects, event, expect, wrap } from './support.js';

const LONG_AGO = 1_000;
const CUTOFF = 5_000;
const MAX_PAGE_LIMIT = 10_000;
const MAX_DELETE_BATCH = 1_000;

/** The cases: [name, need, run(store, capabilities)]. */
export const SWEEP_BATCH_CASES = [];
function kase(name, need, run) {
  SWEEP_BATCH_CASES.push([name, need, run]);
}

/** A finished child of a running parent; answers [childHead, parentHead]. */
async function family(store, parent, child) {
  const parentLog = await store.appendMany(parent, [event('EXECUTION_STARTED'), event('app.step')]);
  const childLog = await store.appendMany(child, [startedChild(parent, AT), event('EXECUTION_COMPLETED')]);
  return [childLog.length, parentLog.length];
}

async function parkOn(store, parent, child) {
  await store.append(parent, { kind: 'EXECUTION_SUSPENDED', at: 0, payload: { waits: [{ kind: 'CHILD_DONE', key: child }] } });
}

async function exists(store, id) {
  return (await store.readRange(id, 1)).length > 0;
}

kase('sweep_batch::read_logs_answers_each_log_in_the_order_asked', 'batched', async (store) => {
  // The logs come back one per id, in the order asked, each whole; an id
  // with no log reads as empty, and a batch over the limit is a typed input
  // error.
  const [parent, child] = ['rl-parent', 'rl-child'];
  await family(store, parent, child);
  const asked = [child, 'rl-nobody', parent];
  const logs = await store.readLogs(asked);
  assert.equal(logs.length, 3);
  for (const [n, id] of asked.entries()) assert.deepEqual(logs[n], await store.readRange(id, 1), id);
  assert.deepEqual(logs[1], [], 'no log reads as empty');
  assert.deepEqual(await store.readLogs([]), []);
  const crowd = Array.from({ length: MAX_PAGE_LIMIT + 1 }, (_, n) => `rl-${n}`);
  await assertRejects(store.readLogs(crowd), expect.invalidLimit, `${crowd.length} ids`);
});

kase('sweep_batch::a_batch_of_guarded_deletes_judges_each_entry_by_its_own_guard', 'batched', async (store) => {
  // Each entry of a batch is judged by its own guard: one deleted, one whose
  // log grew kept, one whose parent parked after its check kept, one whose
  // parent's log is gone deleted (nothing of the parent waits), and a parent
  // deleted in the same batch as its child leaves the child's guard holding.
  const ids = (name) => [`bd-${name}-parent`, `bd-${name}-child`];
  const [okParent, ok] = ids('ok');
  const [grewParent, grew] = ids('grew');
  const [parked, raced] = ids('raced');
  const [goneParent, orphan] = ids('gone');
  const [oldParent, oldChild] = ids('old');
  const batch = [];
  for (const [parent, child] of [[okParent, ok], [grewParent, grew], [parked, raced], [goneParent, orphan]]) {
    const [head, seen] = await family(store, parent, child);
    batch.push({ executionId: child, guard: { head, parents: [{ parent, seen }] } });
  }
  const [oldHead, oldSeen] = await family(store, oldParent, oldChild);
  const [end] = await store.appendMany(oldParent, [event('EXECUTION_COMPLETED')]);
  assert.equal(end.sequence, oldSeen + 1);
  batch.push({ executionId: oldParent, guard: { head: end.sequence, parents: [] } });
  batch.push({ executionId: oldChild, guard: { head: oldHead, parents: [{ parent: oldParent, seen: end.sequence }] } });
  await store.append(grew, event('app.late'));
  await parkOn(store, parked, raced);
  assert.ok(await store.deleteExecution(goneParent));

  assert.deepEqual(await store.deleteExecutionsIf(batch), [
    { deleted: true },
    { logChanged: true, head: 3 },
    { parentMoved: true, parent: parked },
    { deleted: true },
    { deleted: true },
    { deleted: true },
  ]);
  for (const [gone, id] of [[true, ok], [false, grew], [false, raced], [true, orphan], [true, oldParent], [true, oldChild]]) {
    assert.equal(!(await exists(store, id)), gone, id);
  }
  assert.ok((await exists(store, okParent)) && (await exists(store, parked)));
  assert.deepEqual(await store.deleteExecutionsIf([]), []);
});

kase('sweep_batch::a_batch_that_cannot_be_taken_is_refused_whole', 'batched', async (store) => {
  // A batch over the limit, naming one execution twice, or holding one guard
  // a store must refuse, is refused whole with a typed input error before anything is deleted, and
  // the store goes on working.
  const [parent, child] = ['br-parent', 'br-child'];
  const [head, seen] = await family(store, parent, child);
  const before = await Witness.capture(store, child);
  const good = { executionId: child, guard: { head, parents: [{ parent, seen }] } };
  const unsafeHead = { executionId: parent, guard: { head: 2 ** 53, parents: [] } };
  await assertRejects(store.deleteExecutionsIf([good, unsafeHead]), expect.outOfRange, 'an unsafe head');
  await assertRejects(store.deleteExecutionsIf([good, good]), expect.repeatedId, 'an execution named twice');
  const crowd = Array.from({ length: MAX_DELETE_BATCH + 1 }, () => good);
  await assertRejects(store.deleteExecutionsIf(crowd), expect.invalidLimit, `${crowd.length} deletes`);
  await before.assertUnchanged(store, 'a refused batch');
  assert.deepEqual(await store.deleteExecutionsIf([good]), [{ deleted: true }], 'the store is still usable');
});

kase('sweep_batch::one_page_holds_pinned_free_and_window_raced_children', 'any', async (store) => {
  // One listing page, one read of logs, one of parents and one batch of
  // deletes hold a pinned child, free children and a child whose parent
  // parks in the window together: the pinned one and the raced one are kept
  // (the raced one by its own guard, refused inside the batch), the free ones
  // go. The negative control ignores the guards and deletes the raced child
  // under its parked parent.
  for (const unguarded of [false, true]) {
    const name = (what) => `mp-${unguarded}-${what}`;
    const [pinning, pinned] = [name('a-pinning'), name('b-pinned')];
    const [racing, raced] = [name('c-racing'), name('d-raced')];
    const [running, free] = [name('e-running'), [name('f-free-1'), name('f-free-2')]];
    for (const parent of [pinning, racing, running]) await store.append(parent, { kind: 'EXECUTION_STARTED', at: 0 });
    const finished = (id, parent) =>
      store.appendMany(id, [startedChild(parent, 0), { kind: 'EXECUTION_COMPLETED', at: LONG_AGO, payload: { total: 42 } }]);
    await finished(pinned, pinning);
    await finished(raced, racing);
    for (const id of free) await finished(id, running);
    await parkOn(store, pinning, pinned);
    // Parks the racing parent when the delete of its child reaches the store,
    // through whichever delete the store offers.
    const parkFirst = async (ids) => {
      if (ids.includes(raced)) await parkOn(store, racing, raced);
    };
    const deleteOne = async (id, guard) => {
      if (unguarded) {
        await store.deleteExecution(id);
        return { deleted: true };
      }
      return store.deleteExecutionIf(id, guard);
    };
    const around = wrap(store, {
      async deleteExecutionIf(id, guard) {
        await parkFirst([id]);
        return deleteOne(id, guard);
      },
      async deleteExecutionsIf(batch) {
        await parkFirst(batch.map((entry) => entry.executionId));
        if (!unguarded) return store.deleteExecutionsIf(batch);
        const outcomes = [];
        for (const entry of batch) outcomes.push(await deleteOne(entry.executionId, entry.guard));
        return outcomes;
      },
    });
    const report = await sweep(around, { endedBefore: CUTOFF, pageLimit: 1_000 });
    const ours = (id) => id.startsWith(`mp-${unguarded}-`);
    assert.deepEqual(report.pinned.filter((p) => ours(p.child)), [{ child: pinned, parent: pinning }]);
    assert.ok(await exists(store, pinned), 'pinned stays');
    for (const id of free) assert.ok(!(await exists(store, id)), `${id} goes`);
    const kept = report.kept.filter((k) => ours(k.executionId)).map((k) => k.refusal);
    if (unguarded) {
      assert.deepEqual(kept, []);
      assert.ok(!(await exists(store, raced)), 'the control: the raced child is gone under its parked parent');
    } else {
      assert.deepEqual(kept, [{ parentMoved: true, parent: racing }]);
      assert.ok(await exists(store, raced), 'the raced child stays');
    }
  }
});
