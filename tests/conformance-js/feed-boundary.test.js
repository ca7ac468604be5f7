// The change feed's boundary under hostile input: a cursor (`feed`,
// `waitForFeed`) or a limit (`feed`, `openParks`) that is not one is refused
// with a documented, typed error, and the store is unchanged and answers
// afterwards; one that is, is answered by the contract (cursors after the one
// given, at most the limit). A fast-check property over generated cursors and
// limits (near misses: negative, fractional, past 2^53-1, strings, BigInts,
// missing fields) and the shared hostile values (hostile.js); `SIM_SEED`
// replays it.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { InputError, MemoryEventStore } from 'loomfence';

import { build, hostile } from './hostile.js';
import { event, park } from './support.js';
import { MAX_FEED_LIMIT, START, isAfter } from './feed-kit.js';

const SEED = process.env.SIM_SEED ? Number(process.env.SIM_SEED) : Math.floor(Math.random() * 2 ** 31);
console.log(`feed-boundary.test.js: SIM_SEED=${SEED}`);

const SAFE = 2 ** 53 - 1;

/** A number near the edges of a counter, or of a limit. */
const edgy = fc.oneof(
  fc.constantFrom(0, 1, -0, -1, 0.5, SAFE, SAFE + 1, 2 ** 53, 2 ** 32 - 1, 2 ** 32, MAX_FEED_LIMIT, MAX_FEED_LIMIT + 1, NaN, Infinity, -Infinity, Number.MIN_VALUE),
  fc.integer({ min: -5, max: 12 }),
  fc.double(),
);

/** A part of a cursor: a number near an edge, or not a number at all. */
const part = fc.oneof(
  { weight: 4, arbitrary: edgy },
  fc.constantFrom('0', '', null, undefined, true, 0n, 1n, [], {}),
);

/** How the cursor is given: a shape near a cursor's, or a shared hostile value. */
const cursorArb = fc.oneof(
  { weight: 4, arbitrary: fc.record({ epoch: part, position: part }, { requiredKeys: [] }).map((value) => ({ value })) },
  fc.constantFrom({ value: null }, { value: undefined }, { value: 0 }, { value: '0.0' }, { value: [0, 0] }),
  hostile.map((description) => ({ description })),
);

const limitArb = fc.oneof({ weight: 4, arbitrary: edgy }, fc.constantFrom('10', null, undefined, 10n, {}, [1]), hostile.map((description) => ({ description })));

const call = fc.oneof(
  fc.record({ method: fc.constant('feed'), cursor: cursorArb, limit: limitArb }),
  fc.record({ method: fc.constant('waitForFeed'), cursor: cursorArb }),
  fc.record({ method: fc.constant('openParks'), limit: limitArb }),
);

/** The value a generated argument stands for. */
function valueOf(generated, base) {
  if (generated !== null && typeof generated === 'object' && 'description' in generated) return build(generated.description, base);
  return generated !== null && typeof generated === 'object' && 'value' in generated ? generated.value : generated;
}

/** Everything observable about the store's feed and logs. */
async function snapshot(store) {
  return {
    feed: await store.feed(START, MAX_FEED_LIMIT),
    head: await store.feedHead(),
    parks: await store.openParks(null, MAX_FEED_LIMIT),
    logs: await Promise.all(['fb-a', 'fb-b', 'fb-c'].map((id) => store.readRange(id))),
  };
}

/** Whether `error` is a documented refusal of a value: a RangeError or a TypeError (InputError is one) with a code. */
function isDocumented(error) {
  return (error instanceof RangeError || error instanceof TypeError) && typeof error.code === 'string' && error.code.length > 0 && typeof error.message === 'string';
}

test('hostile cursors and limits are refused with a typed error and change nothing; the store answers after', async () => {
  const store = new MemoryEventStore();
  await park(store, 'fb-a');
  await store.append('fb-b', event('app.one'));
  await store.appendMany('fb-c', [event('EXECUTION_STARTED'), event('EXECUTION_COMPLETED')]);
  const before = await snapshot(store);
  const waiting = [];
  let refused = 0;
  let accepted = 0;
  await fc.assert(
    fc.asyncProperty(call, async ({ method, cursor, limit }) => {
      const args = method === 'openParks' ? [null, valueOf(limit)] : method === 'feed' ? [valueOf(cursor, { ...START }), valueOf(limit)] : [valueOf(cursor, { ...START })];
      let promise;
      try {
        promise = store[method](...args);
      } catch (error) {
        assert.fail(`${method} threw instead of rejecting: ${error}`);
      }
      assert.ok(promise instanceof Promise, `${method} returns a promise`);
      const outcome = await Promise.race([
        promise.then(
          (value) => ({ value }),
          (error) => ({ error }),
        ),
        new Promise((resolve) => setImmediate(() => resolve({ pending: true }))),
      ]);
      if (outcome.error !== undefined) {
        refused++;
        assert.ok(isDocumented(outcome.error), `${method}: an undocumented refusal ${outcome.error}`);
        if (outcome.error.code === 'INVALID_LIMIT') assert.ok(outcome.error instanceof InputError);
      } else if (outcome.pending) {
        // Only a wait at or past the head waits; it must end on the next append.
        assert.equal(method, 'waitForFeed', `${method} did not settle at once`);
        assert.ok(!isAfter(before.head, args[0]), `a wait behind the head waits: ${JSON.stringify(args[0])}`);
        waiting.push(promise);
        accepted++;
      } else {
        accepted++;
        if (method === 'feed') {
          assert.ok(Array.isArray(outcome.value) && outcome.value.length <= args[1], 'at most the limit');
          for (const entry of outcome.value) assert.ok(isAfter(entry.cursor, args[0]), 'every entry after the cursor');
        }
        if (method === 'openParks') assert.deepEqual(outcome.value, before.parks.slice(0, args[1]));
      }
      assert.deepEqual(await snapshot(store), before, `${method} changed the store`);
    }),
    { seed: SEED, numRuns: 2_000 },
  );
  console.log(`feed-boundary.test.js: ${refused} refused, ${accepted} accepted, ${waiting.length} waiting`);
  assert.ok(refused > 1_000, 'the property reached the refusals');
  // Still usable: an append moves the head, ends every wait and is listed.
  await store.append('fb-b', event('app.two'));
  await Promise.all(waiting);
  const after = await store.feed(before.head, MAX_FEED_LIMIT);
  assert.deepEqual(
    after.map((entry) => [entry.event.executionId, entry.event.sequence]),
    [['fb-b', 2]],
  );
  assert.deepEqual(await store.feedHead(), after[0].cursor);
});

test('a store answering the Follower hostile values: each refused to onError, the same read made again, then it follows', async () => {
  const { ChildSupervisor, Follower } = await import('loomfence/services');
  const store = new MemoryEventStore();
  const waits = (child) => ({ payload: { waits: [{ kind: 'CHILD_DONE', key: child }] } });
  await store.appendMany('fh-parent', [event('EXECUTION_STARTED'), event('EXECUTION_SUSPENDED', waits('fh-child'))]);
  const RUNS = 60;
  const queues = {};
  const sampled = {};
  for (const [offset, method] of ['feedHead', 'openParks', 'feed'].entries()) {
    sampled[method] = fc.sample(hostile, { seed: SEED + offset, numRuns: RUNS });
    queues[method] = [...sampled[method]];
  }
  const real = { feedHead: () => store.feedHead(), openParks: (...a) => store.openParks(...a), feed: (...a) => store.feed(...a) };
  const view = {
    readRange: (...a) => store.readRange(...a),
    appendIfParked: (...a) => store.appendIfParked(...a),
    acquireFenceIf: (...a) => store.acquireFenceIf(...a),
    acquireFence: (...a) => store.acquireFence(...a),
    waitForFeed: (...a) => store.waitForFeed(...a),
  };
  for (const method of Object.keys(real)) {
    view[method] = async (...args) => {
      const description = queues[method].shift();
      return description === undefined ? real[method](...args) : build(description, method === 'feedHead' ? { ...START } : []);
    };
  }
  const errors = [];
  const supervisor = new ChildSupervisor({ events: view, onError: (error, parent) => errors.push({ error, parent }) });
  const follower = new Follower({ events: view, supervisor, pollIntervalMs: 0, onError: (error, info) => errors.push({ error, info }) });
  follower.start();
  try {
    const until = Date.now() + 20_000;
    // The feed is read once the rebuild is over: an answer that is one (an
    // empty list of open parks) ends it, and the rest of its queue is unread.
    while (queues.feed.length > 0) {
      assert.ok(Date.now() < until, `not drained within 20 s: ${JSON.stringify(Object.values(queues).map((q) => q.length))}`);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await store.appendMany('fh-late', [event('EXECUTION_STARTED'), event('EXECUTION_SUSPENDED', waits('fh-late-child'))]);
    await store.appendMany('fh-late-child', [event('EXECUTION_STARTED'), event('EXECUTION_COMPLETED')]);
    while ((await store.readRange('fh-late')).at(-1).kind !== 'EXECUTION_RESUMED') {
      assert.ok(Date.now() < until, 'a parent parked after the hostile answers is resumed');
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  } finally {
    await follower.stop();
  }
  const stages = new Set(['readHead', 'listOpenParks', 'readFeed']);
  let refusedByTheStore = 0;
  for (const { error, info, parent } of errors) {
    assert.equal(parent, undefined, `the supervisor failed on ${parent}: ${error}`);
    assert.ok(stages.has(info.stage), `a failure at ${info.stage}`);
    // An answer whose `then` throws (a getter, a trap) rejects the store's own
    // promise before the package sees it: the store failed, handed on as is.
    if (isDocumented(error)) assert.equal(error.code, 'STORE_CONTRACT', `${info.stage}: ${error}`);
    else refusedByTheStore++;
  }
  const read = 3 * RUNS - queues.feedHead.length - queues.openParks.length;
  console.log(`feed-boundary.test.js: ${errors.length} of ${read} hostile answers refused to onError (${refusedByTheStore} by the store's own promise)`);
  assert.ok(errors.length - refusedByTheStore >= RUNS / 2, 'the hostile answers were refused');
});
