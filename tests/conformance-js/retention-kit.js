// The kit's retention cases: what a retention sweep needs of a store, the
// paged listing (`listExecutions`) and the guarded delete
// (`deleteExecutionIf`). The cases of tests/conformance/src/cases/retention.rs,
// ported one for one under the same names, with the checks of the JavaScript
// edge (values that are not limits, guards or ids at all) added where they
// belong. kit.js registers them with every other case, for every store; they
// apply to any store (no capability), as in the Rust kit.

import assert from 'node:assert/strict';
import { startedChild } from 'loomfence/services';

import { AT, Witness, assertRejects, event, expect, show } from './support.js';

/** The largest listing page and the most parents one guard may name. */
export const MAX_PAGE_LIMIT = 10_000;
export const MAX_GUARD_PARENTS = 1_000;

/** The kinds that end an execution; the first one is when it ended. */
const TERMINAL_KINDS = new Set(['EXECUTION_COMPLETED', 'EXECUTION_FAILED', 'EXECUTION_CANCELLED', 'EXECUTION_CONTINUED']);

/** The ids the listing cases write: prefixes of each other, separators,
 * digits that sort differently as numbers, and non-ASCII, so a store whose
 * cursor or order is off by one skips or repeats one of them. */
const IDS = ['a', 'a-1', 'a-10', 'a-2', 'a/b', 'a/b/c', 'b', 'order 7', 'zz', '~', 'é', 'ü-9', '日本'];

/** Every page of the listing, `limit` per page, until the empty page. */
async function pages(store, limit) {
  const all = [];
  let after = null;
  for (;;) {
    const page = await store.listExecutions(after, limit);
    assert.ok(Array.isArray(page), `listExecutions must resolve to an array, got ${show(page)}`);
    assert.ok(page.length <= limit, `a page of ${page.length} with limit ${limit}`);
    if (after !== null) {
      assert.ok(!page.some((s) => s.executionId === after), `the page after ${show(after)} lists it again`);
    }
    if (page.length === 0) return all;
    after = page[page.length - 1].executionId;
    all.push(page);
    assert.ok(all.length <= 100, 'the listing never ends');
  }
}

/** The summary a listing must give for `id`, from the log itself. */
async function expectedSummary(store, id) {
  const events = await store.readRange(id, 1);
  assert.ok(events.length > 0, `a listed execution has a log: ${show(id)}`);
  const end = events.find((e) => TERMINAL_KINDS.has(e.kind));
  return {
    executionId: id,
    head: events[events.length - 1].sequence,
    ended: end === undefined ? null : { sequence: end.sequence, at: end.at },
  };
}

/** A finished child `child` of `parent`, and `parent` running: what a
 * retention sweep finds eligible. Resolves to [the child's head, the
 * parent's]. */
async function family(store, parent, child) {
  const parentLog = await store.appendMany(parent, [event('EXECUTION_STARTED'), event('app.step')]);
  const childLog = await store.appendMany(child, [startedChild(parent, AT), event('EXECUTION_COMPLETED')]);
  return [childLog.length, parentLog.length];
}

/** The parent parks on `child` (by its key). */
async function parkOn(store, parent, child) {
  await store.append(parent, event('EXECUTION_SUSPENDED', { payload: { waits: [{ kind: 'CHILD_DONE', key: child }] } }));
}

/** The cases: [name, run(store, capabilities)]. */
export const RETENTION_CASES = [];
function kase(name, run) {
  RETENTION_CASES.push([name, run]);
}

kase('retention::listing_pages_through_every_execution_once', async (store) => {
  // Paging with any limit lists every execution that has a log exactly once,
  // in the same order every time, with the head and end its log shows.
  for (const [n, id] of IDS.entries()) {
    const batch = [event('EXECUTION_STARTED')];
    for (let step = 0; step < n % 3; step++) batch.push(event('app.step'));
    if (n % 2 === 0) batch.push({ kind: 'EXECUTION_COMPLETED', at: AT + n });
    await store.appendMany(id, batch);
  }
  let reference;
  for (const limit of [1, 2, 3, 5, 13, 100, MAX_PAGE_LIMIT]) {
    const listed = (await pages(store, limit)).flat();
    const order = listed.map((s) => s.executionId);
    assert.equal(new Set(order).size, order.length, `limit ${limit} repeats an id`);
    assert.deepEqual([...order].sort(), [...IDS].sort(), `limit ${limit} does not list every execution`);
    if (reference === undefined) reference = order;
    else assert.deepEqual(order, reference, `limit ${limit} lists in another order`);
    for (const summary of listed) {
      assert.deepEqual(summary, await expectedSummary(store, summary.executionId), `limit ${limit}`);
    }
  }
});

kase('retention::listing_reports_the_first_terminal_event', async (store) => {
  // The end is the first terminal event: later events, terminal or not, do
  // not move it, an unknown kind stamped `kernel` does not end anything, and
  // EXECUTION_CONTINUED ends like the others.
  await store.appendMany('ended-twice', [
    event('EXECUTION_STARTED'),
    event('app.step'),
    { kind: 'EXECUTION_COMPLETED', at: 500 },
    { kind: 'app.audit', at: 900 },
    { kind: 'EXECUTION_FAILED', at: 1_000 },
  ]);
  await store.appendMany('stamped-only', [
    event('EXECUTION_STARTED'),
    { kind: 'EXECUTION_ARCHIVED_V9', at: 600, metadata: { kernel: true } },
  ]);
  await store.appendMany('continued', [event('EXECUTION_STARTED'), { kind: 'EXECUTION_CONTINUED', at: 700 }]);
  const listed = await store.listExecutions(null, 10);
  const find = (wanted) => {
    const found = listed.find((s) => s.executionId === wanted);
    assert.ok(found, `${show(wanted)} is not listed`);
    return found;
  };
  assert.deepEqual(find('ended-twice'), { executionId: 'ended-twice', head: 5, ended: { sequence: 3, at: 500 } });
  assert.equal(find('stamped-only').ended, null);
  assert.deepEqual(find('continued').ended, { sequence: 2, at: 700 });
});

kase('retention::listing_leaves_out_executions_without_a_log', async (store, caps) => {
  // Only executions with a log are listed: not one whose log was deleted,
  // even though a real token outlives the delete, and not one that only ever
  // had a token.
  await store.append('deleted-fenced', event('EXECUTION_STARTED'));
  if (caps.fencing) {
    await store.acquireFence('deleted-fenced');
    await store.acquireFence('token-only');
  }
  assert.equal(await store.deleteExecution('deleted-fenced'), true);
  await store.append('kept', event('EXECUTION_STARTED'));
  const listed = await store.listExecutions(null, 10);
  assert.deepEqual(listed.map((s) => s.executionId), ['kept']);
  assert.deepEqual(await store.listExecutions('kept', 10), []);
  assert.deepEqual(await store.listExecutions(undefined, 10), listed, 'an omitted cursor is the first page too');
});

kase('retention::listing_limits_are_checked', async (store) => {
  // A limit of 0 or above MAX_PAGE_LIMIT is a typed input error. At the
  // JavaScript edge, so is any other number that is not such a count, and a
  // limit or cursor of the wrong type.
  await store.append('one', event('EXECUTION_STARTED'));
  for (const limit of [0, MAX_PAGE_LIMIT + 1, 2 ** 32 - 1, -1, 1.5, NaN, Infinity, 2 ** 53]) {
    await assertRejects(store.listExecutions(null, limit), expect.invalidLimit, `limit ${show(limit)}`);
  }
  for (const limit of ['10', undefined, null, 10n]) {
    await assertRejects(store.listExecutions(null, limit), expect.notANumber, `limit ${show(limit)}`);
  }
  await assertRejects(store.listExecutions('', 10), expect.badId, 'an empty cursor');
  await assertRejects(store.listExecutions('a\0b', 10), expect.badId, 'a cursor with NUL');
  await assertRejects(store.listExecutions(7, 10), { type: TypeError, code: 'NOT_A_STRING' }, 'a number as the cursor');
  assert.equal((await store.listExecutions(null, 1)).length, 1, 'the smallest limit lists');
  assert.equal((await store.listExecutions(null, MAX_PAGE_LIMIT)).length, 1, 'the largest limit lists');
});

kase('retention::a_guarded_delete_deletes_when_nothing_moved', async (store, caps) => {
  // With nothing moved, the guarded delete deletes like a plain one: the log
  // goes, a real token stays, the parent is untouched.
  const [parent, child] = ['gd-parent', 'gd-child'];
  const [head, seen] = await family(store, parent, child);
  const token = caps.fencing ? await store.acquireFence(child) : 0;
  const parentBefore = await Witness.capture(store, parent);
  assert.deepEqual(await store.deleteExecutionIf(child, { head, parents: [{ parent, seen }] }), { deleted: true });
  assert.deepEqual(await store.readRange(child), []);
  assert.equal(await store.currentFence(child), token);
  await parentBefore.assertUnchanged(store, 'a guarded delete of its child');
  await store.append('gd-lone', event('EXECUTION_STARTED'));
  assert.deepEqual(await store.deleteExecutionIf('gd-lone', { head: 1, parents: [] }), { deleted: true });
  await store.append('gd-bare', event('EXECUTION_STARTED'));
  assert.deepEqual(await store.deleteExecutionIf('gd-bare', { head: 1 }), { deleted: true }, 'parents omitted: none');
});

kase('retention::a_guarded_delete_refuses_a_log_that_changed', async (store) => {
  // A log that grew after it was read (an archive of it would miss the new
  // events) or is already gone is not deleted: the answer says its head.
  const [parent, child] = ['gc-parent', 'gc-child'];
  const [head, seen] = await family(store, parent, child);
  await store.append(child, event('app.audit'));
  const before = await Witness.capture(store, child);
  const guard = { head, parents: [{ parent, seen }] };
  assert.deepEqual(await store.deleteExecutionIf(child, guard), { logChanged: true, head: head + 1 });
  await before.assertUnchanged(store, 'a refused guarded delete');
  assert.equal(await store.deleteExecution(child), true);
  assert.deepEqual(await store.deleteExecutionIf(child, { ...guard, head: head + 1 }), { logChanged: true, head: 0 });
});

kase('retention::a_guarded_delete_refuses_when_a_parent_parked_after_the_check', async (store) => {
  // The window: the parent parks on the child after the pin check read it
  // and before the delete. The delete is refused, naming the parent, and the
  // child's log is intact for the parent's supervisor to answer from.
  const [parent, child] = ['gw-parent', 'gw-child'];
  const [head, seen] = await family(store, parent, child);
  const other = 'gw-other-parent';
  await store.append(other, event('EXECUTION_STARTED'));
  await parkOn(store, parent, child);
  const before = await Witness.capture(store, child);
  const guard = { head, parents: [{ parent: other, seen: 1 }, { parent, seen }] };
  assert.deepEqual(await store.deleteExecutionIf(child, guard), { parentMoved: true, parent });
  await before.assertUnchanged(store, 'a refused guarded delete');
});

kase('retention::a_guarded_delete_ignores_a_parents_ignorable_events', async (store) => {
  // Any answering event of a parent past what was seen refuses (a resume or
  // an end may precede a new park); its steps and audits do not, and neither
  // does anything at or before `seen`.
  const [parent, child] = ['gi-parent', 'gi-child'];
  let [head, seen] = await family(store, parent, child);
  await store.appendMany(parent, [event('app.step'), event('STEP_COMPLETED'), event('EXECUTION_DENIED')]);
  assert.deepEqual(await store.deleteExecutionIf(child, { head, parents: [{ parent, seen }] }), { deleted: true });
  const [ended, late] = ['gi-ended-parent', 'gi-late-child'];
  [head, seen] = await family(store, ended, late);
  await store.append(ended, event('EXECUTION_COMPLETED'));
  assert.deepEqual(
    await store.deleteExecutionIf(late, { head, parents: [{ parent: ended, seen }] }),
    { parentMoved: true, parent: ended },
    'an end is answering: the delete waits for the next sweep',
  );
});

kase('retention::a_guarded_delete_refuses_when_a_parents_log_shrank', async (store) => {
  // A parent whose log is now shorter than what was seen (deleted, perhaps
  // regrown) moved: the log the check judged is gone.
  const [parent, child] = ['gs-parent', 'gs-child'];
  const [head, seen] = await family(store, parent, child);
  assert.equal(await store.deleteExecution(parent), true);
  await store.append(parent, event('app.reborn'));
  assert.deepEqual(await store.deleteExecutionIf(child, { head, parents: [{ parent, seen }] }), { parentMoved: true, parent });
});

kase('retention::a_guarded_delete_checks_its_guard', async (store) => {
  // A guard with an unsafe number or too many parents is a typed input
  // error, and nothing is deleted. At the JavaScript edge, so is a guard (or
  // an id) that is not the right shape at all.
  const [parent, child] = ['gb-parent', 'gb-child'];
  const [head, seen] = await family(store, parent, child);
  const before = await Witness.capture(store, child);
  const parentBefore = await Witness.capture(store, parent);
  const crowd = Array.from({ length: MAX_GUARD_PARENTS + 1 }, (_, n) => ({ parent: `p${n}`, seen }));
  const bad = [
    [{ head: 2 ** 53, parents: [] }, expect.outOfRange, 'head 2^53'],
    [{ head, parents: [{ parent, seen: 2 ** 64 }] }, expect.outOfRange, 'seen 2^64'],
    [{ head, parents: crowd }, expect.invalidLimit, `${crowd.length} parents`],
    [{ head: -1 }, expect.outOfRange, 'a negative head'],
    [{ head: 1.5 }, expect.outOfRange, 'a fractional head'],
    [{ head: '2' }, expect.notANumber, 'a string head'],
    [{ parents: [] }, expect.notANumber, 'no head'],
    [{ head, parents: [{ parent, seen: -1 }] }, expect.outOfRange, 'a negative seen'],
    [{ head, parents: [{ parent }] }, expect.notANumber, 'no seen'],
    [{ head, parents: [{ parent: '', seen }] }, expect.badId, 'an empty parent id'],
    [{ head, parents: [{ parent: 'a\0b', seen }] }, expect.badId, 'a parent id with NUL'],
    [{ head, parents: [null] }, expect.notAnObject, 'a null mark'],
    [{ head, parents: { parent, seen } }, expect.notAnArray, 'parents not an array'],
    [null, expect.notAnObject, 'a null guard'],
    [head, expect.notAnObject, 'a bare head'],
  ];
  for (const [guard, expected, what] of bad) {
    await assertRejects(store.deleteExecutionIf(child, guard), expected, what);
  }
  await assertRejects(store.deleteExecutionIf('', { head }), expect.badId, 'an empty id');
  await before.assertUnchanged(store, 'a refused guarded delete');
  await parentBefore.assertUnchanged(store, 'a refused guarded delete of its child');
  const most = Array.from({ length: MAX_GUARD_PARENTS }, (_, n) => ({ parent: `p${n}`, seen: 0 }));
  assert.deepEqual(await store.deleteExecutionIf(child, { head, parents: most }), { deleted: true }, `${most.length} parents are allowed`);
});
