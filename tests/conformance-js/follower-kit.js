// The kit's follower cases (`follower::…`): the package's Follower (a pump
// over the core's FollowMachine, the machine the Rust runtime's follower
// pumps) over the store's change feed, handing a ChildSupervisor its work.
// A parent parked on a child is resumed once the child ends, found through
// the feed (or, at the start, the open parks) and never by listing the
// store. Registered by kit.js for every store with the feed and
// appendIfParked (`followable`).

import assert from 'node:assert/strict';
import { InputError } from 'loomfence';
import { ChildSupervisor, Follower, TimerInputError } from 'loomfence/services';

import { AT, assertRejects, event, resumesOf, show, wrap } from './support.js';

const NOW = AT + 1_000;

/** Starts `id` and parks it on the child `child`. */
async function parkOn(store, id, child) {
  await store.appendMany(id, [event('EXECUTION_STARTED'), event('EXECUTION_SUSPENDED', { payload: { waits: [{ kind: 'CHILD_DONE', key: child }] } })]);
}

/** Runs `id` to its end. */
async function end(store, id) {
  await store.appendMany(id, [event('EXECUTION_STARTED'), event('EXECUTION_COMPLETED', { payload: { output: 7 } })]);
}

/** A view of `store` that counts every call by method name. */
function counted(store) {
  const calls = {};
  const overrides = {};
  for (const [name, method] of Object.entries(wrap(store))) {
    overrides[name] = (...args) => {
      calls[name] = (calls[name] ?? 0) + 1;
      return method(...args);
    };
  }
  return { view: wrap(store, overrides), calls };
}

/** Until `check()` holds, a turn of the event loop at a time, at most 10 s. */
async function eventually(check, what) {
  const until = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > until) assert.fail(`not within 10 s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A follower over `events` for a fresh supervisor; its errors collected. */
function following(events, options = {}) {
  const errors = [];
  const landed = [];
  const supervisor = new ChildSupervisor({ events, now: () => NOW, random: () => 0.5, onError: (error, parent) => errors.push({ error, parent }) });
  const onResumed = (resumed) => landed.push(resumed.executionId);
  const follower = new Follower({ events, supervisor, pollIntervalMs: 20, onError: (error, info) => errors.push({ error, info }), onResumed, ...options });
  return { follower, supervisor, errors, landed };
}

/** Every case: [name, run(store)]. */
export const FOLLOWER_CASES = [];
function kase(name, run) {
  FOLLOWER_CASES.push([name, run]);
}

kase('follower::a_parent_parked_before_the_start_is_resumed_once_its_child_ends', async (store) => {
  // The rebuild: the open parks are watched, then the feed says the child
  // ended; nothing lists the store.
  await parkOn(store, 'fp-parent', 'fp-child');
  await store.append('fp-other', event('EXECUTION_STARTED'));
  const { view, calls } = counted(store);
  const { follower, supervisor, errors, landed } = following(view);
  follower.start();
  try {
    await eventually(() => follower.rebuilt && supervisor.parentsWaitingOn('fp-child').length === 1, 'the parked parent is watched');
    assert.equal((await resumesOf(store, 'fp-parent')).length, 0, 'no resume before the child ends');
    await end(store, 'fp-child');
    await eventually(async () => (await resumesOf(store, 'fp-parent')).length === 1, 'the parent is resumed');
  } finally {
    await follower.stop();
  }
  assert.equal(follower.running, false);
  assert.equal((await resumesOf(store, 'fp-parent')).length, 1, 'resumed once');
  assert.deepEqual(landed, ['fp-parent'], 'the resume went to onResumed, once, to start the body');
  assert.equal(calls.listExecutions, undefined, 'nothing listed the store');
  assert.equal(calls.openParks, 1, 'the open parks were read once, at the start');
  assert.equal(calls.feedHead, 1, 'the head was read once, at the start');
  assert.deepEqual(errors, [], 'nothing failed');
});

kase('follower::a_parent_parking_after_the_start_is_resumed_once_its_child_ends', async (store) => {
  // Everything through the feed: the park is watched when the feed lists
  // it, the end reported when the feed lists that.
  const { view, calls } = counted(store);
  const { follower, supervisor, errors } = following(view, { pollIntervalMs: 60_000 });
  follower.start();
  try {
    await eventually(() => follower.rebuilt, 'the rebuild of an empty store');
    await parkOn(store, 'fq-parent', 'fq-child');
    // Woken by the store, not the minute-long poll interval.
    await eventually(() => supervisor.parentsWaitingOn('fq-child').length === 1, 'the park is watched');
    await end(store, 'fq-child');
    await eventually(async () => (await resumesOf(store, 'fq-parent')).length === 1, 'the parent is resumed');
    await eventually(async () => {
      const head = await store.feedHead();
      return follower.cursor.position === head.position && follower.cursor.epoch === head.epoch;
    }, 'the follower reads up to the head, its own resume included');
  } finally {
    await follower.stop();
  }
  assert.equal(calls.listExecutions, undefined, 'nothing listed the store');
  assert.ok(calls.waitForFeed >= 1, 'it waited on the store');
  assert.deepEqual(errors, [], 'nothing failed');
});

kase('follower::a_failed_supervision_is_watched_again_after_the_next_wake', async (store) => {
  // The child ends first; the parent's park is then read once with a store
  // failure: the supervision fails, and the follower watches the parent
  // again after its next wake, which resumes it.
  await end(store, 'fr-child');
  let failures = 1;
  const view = wrap(store, {
    async readRange(id, ...rest) {
      if (id === 'fr-parent' && failures > 0) {
        failures--;
        throw new Error('the store is down');
      }
      return store.readRange(id, ...rest);
    },
  });
  const { follower, errors } = following(view);
  follower.start();
  try {
    await eventually(() => follower.rebuilt, 'the rebuild');
    await parkOn(store, 'fr-parent', 'fr-child');
    await eventually(async () => (await resumesOf(store, 'fr-parent')).length === 1, 'the parent is resumed after the failure');
  } finally {
    await follower.stop();
  }
  assert.equal(failures, 0, 'the first read failed');
  assert.equal(errors.length, 1, `the failure was reported once, by the supervisor: ${show(errors.map((e) => String(e.error)))}`);
  assert.equal(errors[0].parent, 'fr-parent');
});

kase('follower::a_store_read_that_fails_is_tried_again', async (store) => {
  // A feed read that throws, or answers outside the interface, goes to
  // onError, and the same read is made again after the poll interval.
  await parkOn(store, 'fs-parent', 'fs-child');
  const answers = [Promise.reject(new Error('down')), [{ cursor: { epoch: 0, position: 0 }, event: {} }]];
  const view = wrap(store, {
    feed(after, limit) {
      return answers.length > 0 ? answers.shift() : store.feed(after, limit);
    },
  });
  answers[0].catch(() => {});
  const { follower, errors } = following(view);
  follower.start();
  try {
    await eventually(() => follower.rebuilt, 'the rebuild');
    await end(store, 'fs-child');
    await eventually(async () => (await resumesOf(store, 'fs-parent')).length === 1, 'the parent is resumed');
  } finally {
    await follower.stop();
  }
  assert.deepEqual(
    errors.map(({ error, info }) => [info.stage, error.code ?? error.message]),
    [
      ['readFeed', 'down'],
      ['readFeed', 'STORE_CONTRACT'],
    ],
  );
  assert.ok(errors[1].error instanceof InputError);
});

kase('follower::stop_ends_the_reads', async (store) => {
  // Once stop() resolves, the follower reads nothing more; it may start again.
  const { view, calls } = counted(store);
  const { follower } = following(view, { pollIntervalMs: 10 });
  follower.start();
  follower.start(); // a no-op while running
  await eventually(() => follower.rebuilt, 'the rebuild');
  await follower.stop();
  assert.equal(follower.running, false);
  const seen = { ...calls };
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.deepEqual(calls, seen, 'no read after stop()');
  await follower.stop(); // a no-op when stopped
  follower.start();
  await store.append('ft-one', event('EXECUTION_STARTED'));
  await eventually(() => follower.cursor.position > 0 || follower.cursor.epoch > 0, 'it follows again');
  await follower.stop();
});

kase('follower::a_quiet_store_is_asked_to_wait_once', async (store) => {
  // Caught up on a store nothing writes to, the follower wakes every poll
  // interval and reads the feed again, but joins the store's wait it already
  // has instead of asking for another; a write ends it.
  const { view, calls } = counted(store);
  const { follower, errors } = following(view, { pollIntervalMs: 1 });
  follower.start();
  try {
    await eventually(() => (calls.feed ?? 0) >= 20, 'twenty reads of a quiet feed');
    assert.equal(calls.waitForFeed, 1, 'one wait asked for');
    await store.append('fw-one', event('EXECUTION_STARTED'));
    await eventually(() => follower.cursor.position > 0 || follower.cursor.epoch > 0, 'the write is read');
    await eventually(() => calls.waitForFeed === 2, 'a wait after the new cursor');
  } finally {
    await follower.stop();
  }
  assert.deepEqual(errors, []);
});

kase('follower::bad_options_are_refused', async (store) => {
  // Options are refused before anything is read (TimerInputError
  // INVALID_OPTIONS, as every pump's); the page limit is the core's check
  // (InputError INVALID_LIMIT).
  const supervisor = new ChildSupervisor({ events: store });
  const refused = (options, Class, code) => {
    assert.throws(
      () => new Follower(options),
      (error) => error instanceof Class && error.code === code,
      `${show(Object.keys(options ?? {}))}: ${Class.name} ${code}`,
    );
  };
  refused(undefined, TimerInputError, 'INVALID_OPTIONS');
  refused({ events: store }, TimerInputError, 'INVALID_OPTIONS');
  refused({ events: { readRange() {} }, supervisor }, TimerInputError, 'INVALID_OPTIONS');
  refused({ events: store, supervisor: {} }, TimerInputError, 'INVALID_OPTIONS');
  refused({ events: store, supervisor, typo: 1 }, TimerInputError, 'INVALID_OPTIONS');
  for (const concurrency of [0, 1.5, 1_025, '2']) refused({ events: store, supervisor, concurrency }, TimerInputError, 'INVALID_OPTIONS');
  for (const onResumed of [1, 'start', {}]) refused({ events: store, supervisor, onResumed }, TimerInputError, 'INVALID_OPTIONS');
  for (const pollIntervalMs of [-1, 2 ** 31, NaN]) refused({ events: store, supervisor, pollIntervalMs }, TimerInputError, 'INVALID_OPTIONS');
  refused({ events: store, supervisor, onError: 1 }, TimerInputError, 'INVALID_OPTIONS');
  for (const pageLimit of [0, 10_001, -1, 0.5]) refused({ events: store, supervisor, pageLimit }, InputError, 'INVALID_LIMIT');
  refused({ events: store, supervisor, pageLimit: '5' }, TypeError, 'NOT_A_NUMBER');
  const fine = new Follower({ events: store, supervisor, pageLimit: 1 });
  assert.equal(fine.running, false);
  assert.deepEqual(fine.cursor, { epoch: 0, position: 0 });
  await assertRejects(Follower.prototype.stop.call({}), { type: TypeError, code: 'WRONG_RECEIVER' }, 'stop on another object');
});
