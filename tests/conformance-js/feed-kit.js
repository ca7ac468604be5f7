// The kit's change-feed cases: what a follower needs of a store, the feed
// (`feed(after, limit)`, `feedHead()`), the open parks (`openParks(after,
// limit)`) and the wait (`waitForFeed(after)`). The cases of
// tests/conformance/src/cases/feed.rs, ported one for one under the same
// names, with the checks of the JavaScript edge (cursors and limits that are
// not numbers at all) added where they belong. kit.js registers them for
// every store with the `feed` capability.

import assert from 'node:assert/strict';

import { Witness, assertRejects, event, expect, park, show } from './support.js';

/** The most entries one feed or open-parks read may ask for. */
export const MAX_FEED_LIMIT = 10_000;

/** Before every event. */
export const START = Object.freeze({ epoch: 0, position: 0 });

/** Whether cursor `a` is after `b` (epoch first, then position). */
export function isAfter(a, b) {
  return a.epoch > b.epoch || (a.epoch === b.epoch && a.position > b.position);
}

/** Reads the feed after `after` to its end, a page of `limit` at a time,
 * checking the cursors move forward; resolves to the entries. */
export async function readToEnd(store, after, limit) {
  let cursor = after;
  const all = [];
  for (;;) {
    const page = await store.feed(cursor, limit);
    assert.ok(Array.isArray(page), `feed must resolve to an array, got ${show(page)}`);
    assert.ok(page.length <= limit, 'a page holds at most the limit');
    for (const entry of page) {
      assert.ok(isAfter(entry.cursor, cursor), `cursors move forward: ${show(entry.cursor)} after ${show(cursor)}`);
      cursor = entry.cursor;
    }
    all.push(...page);
    if (page.length < limit) return all;
  }
}

/** `[execution, sequence]` of each entry. */
const places = (entries) => entries.map((entry) => [entry.event.executionId, entry.event.sequence]);

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** Every case: [name, run(store)]. */
export const FEED_CASES = [];
function kase(name, run) {
  FEED_CASES.push([name, run]);
}

kase('feed::the_feed_lists_every_event_once_in_order', async (store) => {
  // Every event appended is listed once, each execution's in sequence order,
  // the same whatever the page size, and the head is the last one's cursor.
  const [a, b] = ['feed-a', 'feed-b'];
  assert.deepEqual(await store.feedHead(), START);
  assert.deepEqual(await readToEnd(store, START, 10), []);
  await park(store, a);
  await store.append(b, event('app.one'));
  await store.append(a, event('EXECUTION_RESUMED'));
  await store.append(b, event('app.two'));
  const all = await readToEnd(store, START, MAX_FEED_LIMIT);
  const seen = places(all);
  assert.deepEqual(
    seen,
    [
      [a, 1],
      [a, 2],
      [b, 1],
      [a, 3],
      [b, 2],
    ],
    'appends made one after another are listed in that order',
  );
  assert.equal(all[3].event.kind, 'EXECUTION_RESUMED', 'events come whole');
  assert.deepEqual(all[3].event, (await store.readRange(a, 3))[0], 'an entry holds the event as readRange gives it');
  assert.deepEqual(places(await readToEnd(store, START, 1)), seen);
  assert.deepEqual(places(await readToEnd(store, all[1].cursor, 2)), seen.slice(2), 'a read after a cursor starts right after it');
  assert.deepEqual(await store.feedHead(), all[4].cursor);
});

kase('feed::a_follower_racing_appenders_skips_nothing', async (store) => {
  // Appenders racing a follower: the follower, reading as they write and once
  // more after, sees every event exactly once.
  const WRITERS = 6;
  const EACH = 8;
  let finished = 0;
  const writers = Array.from({ length: WRITERS }, async (_, writer) => {
    for (let i = 0; i < EACH; i++) {
      await store.append(`feed-race-${writer}`, event('app.tick'));
      await tick();
    }
    finished++;
  });
  const seen = [];
  let cursor = START;
  for (let done = false; ; ) {
    const page = await readToEnd(store, cursor, 3);
    if (page.length > 0) cursor = page.at(-1).cursor;
    seen.push(...places(page));
    if (done) break;
    done = finished === WRITERS;
    await tick();
  }
  await Promise.all(writers);
  seen.push(...places(await readToEnd(store, cursor, 3)));
  assert.equal(new Set(seen.map(show)).size, seen.length, 'no event is listed twice');
  assert.equal(seen.length, WRITERS * EACH, 'no event is skipped');
});

kase('feed::deleted_logs_drop_out_and_the_head_never_goes_back', async (store) => {
  // A deleted log's events drop out of the feed; the head never goes back,
  // and a re-created log's events come after it.
  const [gone, kept] = ['feed-gone', 'feed-kept'];
  await park(store, gone);
  await store.append(kept, event('app.one'));
  await store.append(gone, event('EXECUTION_COMPLETED'));
  const head = await store.feedHead();
  assert.equal(await store.deleteExecution(gone), true);
  assert.deepEqual(places(await readToEnd(store, START, 10)), [[kept, 1]]);
  const after = await store.feedHead();
  assert.ok(!isAfter(head, after), `the head never goes back: ${show(after)} after ${show(head)}`);
  await store.append(gone, event('app.again'));
  assert.deepEqual(places(await readToEnd(store, head, 10)), [[gone, 1]], 'a re-created log is new to the feed');
});

kase('feed::open_parks_list_the_parked_executions', async (store) => {
  // The open parks are the executions whose last answering event is a park,
  // in id order, paged by the last id; a resume, an end or a delete takes one
  // out.
  const ids = ['op-a', 'op-b', 'op-c', 'op-d', 'op-e', 'op-f'];
  for (const id of ids) await park(store, id);
  await store.append(ids[1], event('EXECUTION_RESUMED'));
  await store.append(ids[2], event('EXECUTION_FAILED'));
  await store.append(ids[3], event('app.noise'));
  assert.equal(await store.deleteExecution(ids[4]), true);
  await store.appendMany(ids[1], [event('app.step'), event('EXECUTION_SUSPENDED')]);
  await store.append('op-running', event('EXECUTION_STARTED'));
  const expected = [ids[0], ids[1], ids[3], ids[5]];
  assert.deepEqual(await store.openParks(null, 100), expected);
  assert.deepEqual(await store.openParks(undefined, 100), expected, 'an omitted cursor is the first page');
  const paged = [];
  let after = null;
  for (;;) {
    const page = await store.openParks(after, 1);
    if (page.length === 0) break;
    paged.push(...page);
    after = page.at(-1);
  }
  assert.deepEqual(paged, expected, 'paging by the last id');
});

kase('feed::feed_limits_are_checked', async (store) => {
  // Limits outside 1 to MAX_FEED_LIMIT are refused, and the store still
  // answers afterwards. At the JavaScript edge, so is any other number that
  // is not such a count, and a limit or cursor of the wrong type.
  const one = 'feed-limit';
  await park(store, one);
  const before = await Witness.capture(store, one);
  const head = await store.feedHead();
  for (const limit of [0, MAX_FEED_LIMIT + 1, 2 ** 32 - 1, -1, 1.5, NaN, Infinity, 2 ** 53]) {
    await assertRejects(store.feed(START, limit), expect.invalidLimit, `feed limit ${show(limit)}`);
    await assertRejects(store.openParks(null, limit), expect.invalidLimit, `open-parks limit ${show(limit)}`);
  }
  for (const limit of ['10', undefined, null, 10n, {}]) {
    await assertRejects(store.feed(START, limit), expect.notANumber, `feed limit ${show(limit)}`);
    await assertRejects(store.openParks(null, limit), expect.notANumber, `open-parks limit ${show(limit)}`);
  }
  for (const cursor of [null, undefined, 0, '0.0', 10n]) {
    await assertRejects(store.feed(cursor, 10), expect.notAnObject, `feed cursor ${show(cursor)}`);
    await assertRejects(store.waitForFeed(cursor), expect.notAnObject, `wait cursor ${show(cursor)}`);
  }
  for (const cursor of [{}, { epoch: 0 }, { position: 0 }, { epoch: '0', position: 0 }, { epoch: 0, position: 1n }]) {
    await assertRejects(store.feed(cursor, 10), expect.notANumber, `feed cursor ${show(cursor)}`);
    await assertRejects(store.waitForFeed(cursor), expect.notANumber, `wait cursor ${show(cursor)}`);
  }
  for (const cursor of [{ epoch: -1, position: 0 }, { epoch: 0, position: 0.5 }, { epoch: 2 ** 53, position: 0 }, { epoch: 0, position: NaN }]) {
    await assertRejects(store.feed(cursor, 10), expect.outOfRange, `feed cursor ${show(cursor)}`);
    await assertRejects(store.waitForFeed(cursor), expect.outOfRange, `wait cursor ${show(cursor)}`);
  }
  await assertRejects(store.openParks('', 10), expect.badId, 'an empty open-parks cursor');
  await assertRejects(store.openParks(7, 10), expect.notAString, 'a number as the open-parks cursor');
  await before.assertUnchanged(store, 'refused feed reads');
  assert.deepEqual(await store.feedHead(), head, 'the head did not move');
  assert.equal((await readToEnd(store, START, 1)).length, 2);
  assert.deepEqual(await store.openParks(null, 1), [one]);
  assert.equal((await store.feed(START, MAX_FEED_LIMIT)).length, 2, 'the largest limit reads');
  assert.deepEqual(await store.feed({ epoch: 2 ** 53 - 1, position: 2 ** 53 - 1 }, 1), [], 'the last cursor reads nothing');
});

kase('feed::a_wait_returns_once_something_is_committed', async (store) => {
  // A wait behind the head returns at once; a wait at the head returns once
  // something is committed.
  const one = 'feed-wait';
  await store.append(one, event('app.one'));
  const bound = (promise, what) => {
    let timer;
    const late = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: not within 10 s`)), 10_000);
    });
    return Promise.race([promise, late]).finally(() => clearTimeout(timer));
  };
  await bound(store.waitForFeed(START), 'a wait behind the head returns');
  const head = await store.feedHead();
  let woken = false;
  const waiter = store.waitForFeed(head).then(() => {
    woken = true;
  });
  const second = store.waitForFeed(head);
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(woken, false, 'a wait at the head waits');
  await store.append(one, event('app.two'));
  await bound(Promise.all([waiter, second]), 'the waits end once an event is committed');
  // The next wait at the new head waits again.
  const next = await store.feedHead();
  let again = false;
  const third = store.waitForFeed(next).then(() => {
    again = true;
  });
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(again, false, 'a wait at the new head waits for the next commit');
  await store.append(one, event('app.three'));
  await bound(third, 'the next wait ends on the next commit');
});
