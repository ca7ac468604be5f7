// The conformance kit for JavaScript event stores: the cases of the Rust kit
// (tests/conformance/src/cases/*.rs), ported one for one under the same
// names, plus the resume scenarios of the runtime's tests, written ONCE and
// run against any store:
//
//   import { conformance } from './kit.js';
//   conformance('memory', () => new MemoryEventStore(),
//     { fencing: true, conditional: true, appendIfParked: true });
//
// Like object_store's shared integration suite (and the Rust kit), adapter
// differences are capability flags, never forked cases: each case declares
// what it needs, and a case whose needs the store lacks is registered as
// SKIPPED with the reason ("not applicable"), never silently passed. The case
// `append::capability_is_honest` checks the flags against the store's methods,
// which is how `resume` reads a store's capability.
//
// Capabilities:
//   fencing         the store has acquireFence (tokens and the append guard)
//   conditional     the store has acquireFenceIf (implies fencing)
//   appendIfParked  the store has the park-conditional append, which
//                   `resume` requires of every store it drives
//   feed            the store has the change feed (feed, feedHead,
//                   openParks, waitForFeed), which a Follower reads
//
// Each case gets a fresh store from the factory.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ResumeContendedError, ResumeRefusedError, locatePark, resume } from 'loomfence';

import {
  ANSWERING_KINDS,
  AT,
  IGNORABLE_KINDS,
  Witness,
  assertRejects,
  assertStale,
  event,
  expect,
  fenced,
  park,
  resumesOf,
  sequences,
  show,
  stamped,
  wrap,
} from './support.js';
import { RETENTION_CASES } from './retention-kit.js';
import { SWEEP_CASES } from './sweep-kit.js';
import { SWEEP_BATCH_CASES } from './sweep-batch-kit.js';
import { SWEEP_CONTRACT_CASES } from './sweep-contract-kit.js';
import { SWEEP_UNDECIDED_CASES } from './sweep-undecided-kit.js';
import { SUPERVISOR_CASES } from './supervisor-kit.js';
import { FEED_CASES } from './feed-kit.js';
import { FOLLOWER_CASES } from './follower-kit.js';

/** What a case needs of a store. */
const needs = {
  any: { admits: () => true, label: 'any store' },
  fencing: { admits: (c) => c.fencing, label: 'fencing' },
  conditional: { admits: (c) => c.conditional, label: 'conditional' },
  appendIfParked: { admits: (c) => c.appendIfParked, label: 'appendIfParked' },
  fencedAppendIfParked: { admits: (c) => c.appendIfParked && c.fencing, label: 'fencing and appendIfParked' },
  // `resume` drives only stores with appendIfParked (its one append is the
  // park-conditional one, whatever the store's fencing), and refuses the
  // others up front: the resume cases need it on top of their fencing.
  resumable: { admits: (c) => c.appendIfParked, label: 'appendIfParked (resume refuses a store without it)' },
  conditionalResumable: {
    admits: (c) => c.conditional && c.appendIfParked,
    label: 'conditional and appendIfParked (resume refuses a store without it)',
  },
  notResumable: { admits: (c) => !c.appendIfParked, label: 'a store without appendIfParked' },
  feed: { admits: (c) => c.feed, label: 'the change feed' },
  batched: { admits: (c) => c.batched, label: 'readLogs and deleteExecutionsIf' },
  // A Follower hands its notices to a ChildSupervisor, whose resumes need
  // appendIfParked.
  followable: { admits: (c) => c.feed && c.appendIfParked, label: 'the change feed and appendIfParked' },
};

/** Every case: [name, needs, run(store, capabilities)]. */
const CASES = [];
function kase(name, need, run) {
  CASES.push({ name, need, run });
}

/** Appends `events` conditionally; fails unless the park was open. */
async function appendedIfParked(store, id, parkSeq, events) {
  const written = await store.appendIfParked(id, parkSeq, events);
  assert.ok(Array.isArray(written), `expected the park to be open, got ${show(written)}`);
  return written;
}

/** A conditional acquire that must not throw. */
function acquireIf(store, id, fence, parkSeq) {
  return store.acquireFenceIf(id, { fence, parkSeq });
}

// ---------------------------------------------------------------------------
// append.rs: appends and reads: sequences, batches, ranges, verbatim storage.

kase('append::sequences_start_at_one_and_echo_the_event', needs.any, async (store) => {
  const id = 'append-echo';
  for (let n = 1; n <= 3; n++) {
    const written = event('app.output', { payload: { n }, metadata: { trace: 't-1' } });
    const stored = await store.append(id, written);
    assert.deepEqual(stored, {
      executionId: id,
      sequence: n,
      kind: 'app.output',
      payload: { n },
      metadata: { trace: 't-1' },
      at: AT,
    });
  }
  const bare = await store.append(id, { kind: 'app.bare', at: 0 });
  assert.deepEqual(bare, { executionId: id, sequence: 4, kind: 'app.bare', payload: {}, metadata: {}, at: 0 }, 'omitted payload and metadata are stored as {}');
});

kase('append::batches_are_contiguous', needs.any, async (store) => {
  const id = 'append-batch';
  await store.append(id, event('first'));
  const batch = await store.appendMany(id, [event('a'), event('b'), event('c')]);
  assert.deepEqual(sequences(batch), [2, 3, 4]);
  const log = await store.readRange(id, 1);
  assert.deepEqual(log.map((e) => e.kind), ['first', 'a', 'b', 'c']);
  assert.deepEqual(log.slice(1), batch);
});

kase('append::an_empty_batch_writes_nothing', needs.any, async (store) => {
  const id = 'append-empty';
  assert.deepEqual(await store.appendMany(id, []), []);
  assert.deepEqual(await store.readRange(id, 1), []);
  assert.equal((await store.append(id, event('x'))).sequence, 1);
});

kase('append::read_range_bounds_are_inclusive', needs.any, async (store) => {
  const id = 'append-range';
  await store.appendMany(id, ['e1', 'e2', 'e3', 'e4', 'e5'].map((k) => event(k)));
  const read = async (from, to) => sequences(await store.readRange(id, from, to));
  assert.deepEqual(await read(2, 4), [2, 3, 4]);
  assert.deepEqual(await read(4), [4, 5]);
  assert.deepEqual(await read(4, undefined), [4, 5]);
  assert.deepEqual(await read(0, 1), [1]);
  assert.deepEqual(await read(5, 99), [5]);
  assert.deepEqual(await read(6), []);
  assert.deepEqual(await read(3, 2), []);
  assert.deepEqual(await read(), [1, 2, 3, 4, 5], 'both bounds omitted: the whole log');
  assert.deepEqual(await store.readRange('append-never-written', 1), []);
});

kase('append::payloads_round_trip_verbatim', needs.any, async (store) => {
  const id = "append-verbatim 'quoted' \"double\" \\back\\ é 🦀 ; DROP TABLE events; --";
  const payload = {
    text: 'it\'s "quoted" \\ and \u{1F980} and \u007f',
    nested: { list: [1, -2, 3.5, true, null, [], {}], empty: '' },
    big: Number.MAX_SAFE_INTEGER,
    small: -Number.MAX_SAFE_INTEGER,
    float: 1.5e300,
    tiny: 5e-324,
    sql: "'); DELETE FROM fences; --",
  };
  const written = event("kind with spaces & 'quotes'", { payload, metadata: { host: { node: 'n-1', attempt: 2 } } });
  const stored = await store.append(id, written);
  const read = await store.readRange(id, 1);
  assert.equal(read.length, 1);
  assert.deepEqual(read[0], stored);
  assert.equal(read[0].executionId, id);
  assert.equal(read[0].kind, written.kind);
  assert.deepEqual(read[0].payload, payload);
  assert.deepEqual(read[0].metadata, written.metadata);
  assert.equal(read[0].at, AT);
  read[0].payload.text = 'changed by the reader';
  assert.equal((await store.readRange(id, 1))[0].payload.text, payload.text, 'a read hands out a copy, not the stored event');
});

kase('append::capability_is_honest', needs.any, async (store, caps) => {
  const id = 'append-capability';
  const parkSeq = await park(store, id);
  const has = (name) => typeof store[name] === 'function';
  for (const name of ['append', 'appendMany', 'readRange', 'currentFence', 'deleteExecution']) {
    assert.ok(has(name), `every store has ${name}()`);
  }
  assert.equal(has('acquireFence'), caps.fencing, 'acquireFence() present exactly when the store fences');
  assert.equal(has('acquireFenceIf'), caps.conditional, 'acquireFenceIf() present exactly when the store is conditional');
  assert.equal(has('appendIfParked'), caps.appendIfParked, 'appendIfParked() present exactly when declared');
  for (const name of ['feed', 'feedHead', 'openParks', 'waitForFeed']) {
    assert.equal(has(name), caps.feed, `${name}() present exactly when the store has the change feed`);
  }
  if (caps.conditional) assert.ok(caps.fencing, 'a conditional store also fences');
  if (caps.fencing) assert.equal(await store.acquireFence(id), 1);
  if (caps.conditional) {
    const expectation = { fence: await store.currentFence(id), parkSeq };
    assert.deepEqual(await store.acquireFenceIf(id, expectation), { fence: 2 });
  }
  if (!caps.fencing) {
    assert.equal(await store.currentFence(id), 0);
    const resumed = await store.append(id, event('EXECUTION_RESUMED'));
    assert.equal(resumed.sequence, parkSeq + 1, 'a non-fencing store never refuses for staleness');
  }
});

// ---------------------------------------------------------------------------
// append_if_parked.rs: the park-conditional append.

kase('append_if_parked::lands_while_the_park_is_open', needs.appendIfParked, async (store) => {
  const id = 'if-parked-open';
  const parkSeq = await park(store, id);
  await store.append(id, event('EXECUTION_DENIED'));
  await store.append(id, event('app.output'));
  const written = await appendedIfParked(store, id, parkSeq, [event('EXECUTION_RESUMED')]);
  assert.equal(written.length, 1);
  assert.equal(written[0].sequence, parkSeq + 3);
  assert.equal(written[0].kind, 'EXECUTION_RESUMED');
});

kase('append_if_parked::is_refused_once_the_park_is_answered', needs.appendIfParked, async (store) => {
  for (const [n, answer] of [event('EXECUTION_RESUMED'), stamped(event('EXECUTION_PAUSED'))].entries()) {
    const id = `if-parked-answered-${n}`;
    const parkSeq = await park(store, id);
    await store.append(id, answer);
    const before = await Witness.capture(store, id);
    assert.deepEqual(await store.appendIfParked(id, parkSeq, [event('EXECUTION_RESUMED')]), { parkAnswered: true });
    await before.assertUnchanged(store, 'a conditional append on an answered park');
  }
});

kase('append_if_parked::still_applies_the_guard', needs.fencedAppendIfParked, async (store) => {
  const id = 'if-parked-guard';
  const parkSeq = await park(store, id);
  const token = await store.acquireFence(id);
  const before = await Witness.capture(store, id);
  await assertStale(store.appendIfParked(id, parkSeq, [event('EXECUTION_RESUMED')]), null, token);
  await before.assertUnchanged(store, 'an unfenced conditional append on a fenced execution');
  const written = await appendedIfParked(store, id, parkSeq, [fenced(event('EXECUTION_RESUMED'), token)]);
  assert.equal(written[0].sequence, parkSeq + 1);
});

kase('append_if_parked::eight_unfenced_resumers_one_lands', needs.appendIfParked, async (store) => {
  const id = 'if-parked-eight';
  const parkSeq = await park(store, id);
  const answers = await Promise.all(
    Array.from({ length: 8 }, () => store.appendIfParked(id, parkSeq, [event('EXECUTION_RESUMED')])),
  );
  assert.equal(answers.filter(Array.isArray).length, 1, `answers: ${show(answers)}`);
  assert.equal(answers.filter((a) => a?.parkAnswered === true).length, 7);
  assert.equal((await resumesOf(store, id)).length, 1);
});

kase('append_if_parked::a_park_seq_naming_no_park_is_refused_and_writes_nothing', needs.appendIfParked, async (store) => {
  // The start before the park, an audit record and an application event
  // after it: none is a park, so the append is refused (NOT_A_PARK) before
  // anything else is judged, and writes nothing; the real park still takes
  // the resume, and after it the start is still not a park (not "answered").
  const id = 'if-parked-not-a-park';
  const parkSeq = await park(store, id);
  await store.append(id, event('EXECUTION_DENIED'));
  await store.append(id, event('app.output'));
  let before = await Witness.capture(store, id);
  for (const [notAPark, kind] of [[parkSeq - 1, 'EXECUTION_STARTED'], [parkSeq + 1, 'EXECUTION_DENIED'], [parkSeq + 2, 'app.output']]) {
    await assertRejects(
      store.appendIfParked(id, notAPark, [event('EXECUTION_RESUMED')]),
      expect.notAPark,
      `appendIfParked(${notAPark}) on ${kind}`,
    );
  }
  await before.assertUnchanged(store, 'conditional appends on sequences that are not a park');
  const written = await appendedIfParked(store, id, parkSeq, [event('EXECUTION_RESUMED')]);
  assert.equal(written[0].sequence, parkSeq + 3);
  before = await Witness.capture(store, id);
  await assertRejects(
    store.appendIfParked(id, parkSeq - 1, [event('EXECUTION_RESUMED')]),
    expect.notAPark,
    'appendIfParked on the start, answered after',
  );
  await before.assertUnchanged(store, 'a conditional append on the start of an answered log');
});

// ---------------------------------------------------------------------------
// acquire.rs: the unconditional acquire.

kase('acquire::acquire_returns_the_next_token', needs.fencing, async (store) => {
  const id = 'acquire-next';
  assert.equal(await store.currentFence(id), 0);
  assert.equal(await store.acquireFence(id), 1);
  assert.equal(await store.acquireFence(id), 2);
  assert.equal(await store.currentFence(id), 2);
  await park(store, 'acquire-next-logged');
  assert.equal(await store.acquireFence('acquire-next-logged'), 1);
});

kase('acquire::acquire_fences_out_the_old_holder', needs.fencing, async (store) => {
  const id = 'acquire-fence-out';
  await park(store, id);
  const holder = await store.acquireFence(id);
  await store.append(id, fenced(event('EXECUTION_RESUMED'), holder));
  const rival = await store.acquireFence(id);
  assert.equal(rival, holder + 1);
  const before = await Witness.capture(store, id);
  await assertStale(store.append(id, fenced(event('STEP_COMPLETED'), holder)), holder, rival);
  await before.assertUnchanged(store, "the old holder's refused append");
  const landed = await store.append(id, fenced(event('STEP_COMPLETED'), rival));
  assert.equal(landed.sequence, before.events.length + 1);
});

// ---------------------------------------------------------------------------
// acquire_if.rs: the conditional acquire.

kase('acquire_if::a_matching_expectation_acquires_the_next_token', needs.conditional, async (store) => {
  const id = 'if-match';
  const parkSeq = await park(store, id);
  assert.deepEqual(await acquireIf(store, id, 0, parkSeq), { fence: 1 });
  assert.equal(await store.currentFence(id), 1);
});

kase('acquire_if::a_moved_token_is_stale_and_changes_nothing', needs.conditional, async (store) => {
  const id = 'if-moved';
  const parkSeq = await park(store, id);
  const current = await store.acquireFence(id);
  const before = await Witness.capture(store, id);
  assert.deepEqual(await acquireIf(store, id, 0, parkSeq), { stale: true, fence: current });
  assert.deepEqual(await acquireIf(store, id, current + 5, parkSeq), { stale: true, fence: current });
  await before.assertUnchanged(store, 'a stale acquireFenceIf');
});

kase('acquire_if::eight_concurrent_callers_one_winner', needs.conditional, async (store) => {
  const id = 'if-eight';
  const parkSeq = await park(store, id);
  const outcomes = await Promise.all(Array.from({ length: 8 }, () => acquireIf(store, id, 0, parkSeq)));
  assert.equal(outcomes.filter((o) => o.stale !== true).length, 1, `outcomes: ${show(outcomes)}`);
  assert.equal(outcomes.filter((o) => o.stale === true).length, 7, `outcomes: ${show(outcomes)}`);
  assert.ok(outcomes.every((o) => o.fence === 1), `every caller is told token 1: ${show(outcomes)}`);
  assert.equal(await store.currentFence(id), 1);
});

kase('acquire_if::a_dead_acquirer_is_passed_by_retrying_on_the_current_token', needs.conditional, async (store) => {
  const id = 'if-dead';
  const parkSeq = await park(store, id);
  const dead = await store.acquireFence(id);
  const stale = await acquireIf(store, id, 0, parkSeq);
  assert.deepEqual(stale, { stale: true, fence: dead });
  assert.deepEqual(await acquireIf(store, id, stale.fence, parkSeq), { fence: dead + 1 });
});

kase('acquire_if::a_landed_resume_makes_a_retry_stale', needs.conditional, async (store) => {
  const id = 'if-landed';
  const parkSeq = await park(store, id);
  const winner = (await acquireIf(store, id, 0, parkSeq)).fence;
  await store.append(id, fenced(event('EXECUTION_RESUMED'), winner));
  const before = await Witness.capture(store, id);
  assert.deepEqual(await acquireIf(store, id, winner, parkSeq), { stale: true, fence: winner });
  await before.assertUnchanged(store, "a rival's retry after the resume landed");
  const step = await store.append(id, fenced(event('STEP_STARTED'), winner));
  assert.equal(step.sequence, before.events.length + 1, "the winner's body is not fenced out");
});

kase('acquire_if::a_park_written_without_a_fence_expects_zero', needs.conditional, async (store) => {
  const id = 'if-zero';
  const parkSeq = await park(store, id);
  assert.deepEqual(await acquireIf(store, id, 1, parkSeq), { stale: true, fence: 0 });
  assert.deepEqual(await acquireIf(store, id, 0, parkSeq), { fence: 1 });

  const other = 'if-zero-fenced';
  await store.append(other, event('EXECUTION_STARTED'));
  for (let i = 0; i < 3; i++) await store.acquireFence(other);
  const parked = await store.append(other, fenced(event('EXECUTION_SUSPENDED'), 3));
  assert.equal(parked.metadata.fence, 3);
  assert.deepEqual(await acquireIf(store, other, 3, parked.sequence), { fence: 4 });
});

kase('acquire_if::answering_appends_race_the_acquire_never_both', needs.conditional, async (store) => {
  const outcomes = { appendWon: 0, acquireWon: 0 };
  for (let trial = 0; trial < 25; trial++) {
    const id = `if-race-${trial}`;
    const parkSeq = await park(store, id);
    const token = (await acquireIf(store, id, 0, parkSeq)).fence;
    const appending = () => store.append(id, fenced(event('EXECUTION_RESUMED'), token));
    const acquiring = () => acquireIf(store, id, token, parkSeq);
    // Start them together, in alternating order, so both orders are tried.
    let appended, acquired;
    if (trial % 2 === 0) [appended, acquired] = await Promise.allSettled([appending(), acquiring()]);
    else [acquired, appended] = await Promise.allSettled([acquiring(), appending()]);
    assert.equal(acquired.status, 'fulfilled', `trial ${trial}: the acquire threw ${show(acquired.reason?.message)}`);
    const outcome = acquired.value;
    if (appended.status === 'fulfilled') {
      assert.deepEqual(outcome, { stale: true, fence: token }, `trial ${trial}: the append landed, so the acquire must be stale`);
      outcomes.appendWon++;
    } else {
      assert.deepEqual(outcome, { fence: token + 1 }, `trial ${trial}: the append was refused (${appended.reason?.message}), so the acquire must have won`);
      await assertStale(Promise.reject(appended.reason), token, token + 1, `trial ${trial}: the losing append`);
      outcomes.acquireWon++;
    }
    const resumes = (await resumesOf(store, id)).length;
    assert.equal(resumes, appended.status === 'fulfilled' ? 1 : 0, `trial ${trial}`);
  }
  assert.equal(outcomes.appendWon + outcomes.acquireWon, 25);
});

kase('acquire_if::a_park_seq_naming_no_park_is_refused_and_changes_nothing', needs.conditional, async (store) => {
  // The start before the park, an audit record and an application event
  // after it: none is a park, so the acquire is refused (NOT_A_PARK)
  // whatever the expected token, and takes no token; the real park still
  // acquires.
  const id = 'if-not-a-park';
  const parkSeq = await park(store, id);
  await store.append(id, event('EXECUTION_DENIED'));
  await store.append(id, event('app.output'));
  const before = await Witness.capture(store, id);
  for (const [notAPark, kind] of [[parkSeq - 1, 'EXECUTION_STARTED'], [parkSeq + 1, 'EXECUTION_DENIED'], [parkSeq + 2, 'app.output']]) {
    for (const fence of [0, 7]) {
      await assertRejects(
        store.acquireFenceIf(id, { fence, parkSeq: notAPark }),
        expect.notAPark,
        `acquireFenceIf({ fence: ${fence}, parkSeq: ${notAPark} }) on ${kind}`,
      );
    }
  }
  await before.assertUnchanged(store, 'acquires of sequences that are not a park');
  assert.deepEqual(await acquireIf(store, id, 0, parkSeq), { fence: 1 });
});

// ---------------------------------------------------------------------------
// kinds.rs: which events after a park make a conditional acquire stale.

/** Parks `id`, appends `after` (unfenced, at token 0), and returns what a
 * conditional acquire with the park's own expectation answers; a stale
 * answer must have changed nothing. */
async function acquireAfter(store, id, after) {
  const parkSeq = await park(store, id);
  await store.append(id, after);
  const before = await Witness.capture(store, id);
  const outcome = await acquireIf(store, id, 0, parkSeq);
  if (outcome.stale) await before.assertUnchanged(store, 'a stale acquire');
  return outcome;
}

kase('kinds::each_answering_kind_after_the_park_is_stale', needs.conditional, async (store) => {
  assert.equal(ANSWERING_KINDS.length, 6, "the design's six answering kinds");
  for (const kind of ANSWERING_KINDS) {
    const outcome = await acquireAfter(store, `kinds-answer-${kind}`, event(kind));
    assert.deepEqual(outcome, { stale: true, fence: 0 }, `${kind} after the park`);
  }
});

kase('kinds::answering_events_at_or_before_the_park_are_not', needs.conditional, async (store) => {
  const id = 'kinds-before';
  const written = await store.appendMany(id, [
    event('EXECUTION_STARTED'),
    event('EXECUTION_SUSPENDED'),
    event('EXECUTION_RESUMED'),
    event('EXECUTION_SUSPENDED'),
  ]);
  const [oldPark, newPark] = [written[1].sequence, written[3].sequence];
  assert.deepEqual(await acquireIf(store, id, 0, oldPark), { stale: true, fence: 0 });
  assert.deepEqual(await acquireIf(store, id, 0, newPark), { fence: 1 });
});

kase('kinds::ignorable_kinds_after_the_park_are_not', needs.conditional, async (store) => {
  const listed = ['EXECUTION_DENIED', 'OUTCOME_RECORDED', 'STEP_FAILED', 'MESSAGE_CONSUMED', 'EXECUTION_MIGRATED', 'STEP_COMPLETED'];
  for (const kind of listed) assert.ok(IGNORABLE_KINDS.includes(kind), `${kind} must be ignorable`);
  for (const kind of IGNORABLE_KINDS) {
    const outcome = await acquireAfter(store, `kinds-ignore-${kind}`, event(kind));
    assert.deepEqual(outcome, { fence: 1 }, `${kind} after the park`);
  }
});

kase('kinds::application_events_after_the_park_are_not', needs.conditional, async (store) => {
  for (const [n, kind] of ['app.emit', 'order.shipped', 'execution_resumed', 'EXECUTION_RESUMED '].entries()) {
    const outcome = await acquireAfter(store, `kinds-app-${n}`, event(kind));
    assert.deepEqual(outcome, { fence: 1 }, `${JSON.stringify(kind)} after the park`);
  }
});

kase('kinds::an_unknown_kind_stamped_kernel_is_stale', needs.conditional, async (store) => {
  const outcome = await acquireAfter(store, 'kinds-stamped', stamped(event('EXECUTION_PAUSED')));
  assert.deepEqual(outcome, { stale: true, fence: 0 });
});

kase('kinds::unknown_kinds_without_the_boolean_stamp_are_not', needs.conditional, async (store) => {
  const stamps = [undefined, 'true', 1, false, null];
  for (const [n, stamp] of stamps.entries()) {
    const newer = stamp === undefined ? event('EXECUTION_PAUSED') : event('EXECUTION_PAUSED', { metadata: { kernel: stamp } });
    const outcome = await acquireAfter(store, `kinds-unstamped-${n}`, newer);
    assert.deepEqual(outcome, { fence: 1 }, `stamp ${show(stamp)}`);
  }
});

kase('kinds::a_stamp_does_not_reclassify_a_kernel_kind', needs.conditional, async (store) => {
  const outcome = await acquireAfter(store, 'kinds-stamped-denial', stamped(event('EXECUTION_DENIED')));
  assert.deepEqual(outcome, { fence: 1 });
});

// ---------------------------------------------------------------------------
// guard.rs: the append guard, one decision per batch.

kase('guard::a_lower_token_is_refused', needs.fencing, async (store) => {
  const id = 'guard-lower';
  await park(store, id);
  await store.acquireFence(id);
  const current = await store.acquireFence(id);
  const before = await Witness.capture(store, id);
  for (const late of [event('EXECUTION_RESUMED'), event('STEP_COMPLETED'), event('app.output')]) {
    await assertStale(store.append(id, fenced(late, current - 1)), current - 1, current, `${late.kind} under a lower token`);
  }
  await assertStale(store.appendMany(id, [fenced(event('STEP_COMPLETED'), current - 1)]), current - 1, current, 'a batch under a lower token');
  await before.assertUnchanged(store, 'appends under a lower token');
});

kase('guard::the_current_token_passes', needs.fencing, async (store) => {
  const id = 'guard-current';
  await park(store, id);
  const token = await store.acquireFence(id);
  const written = await store.appendMany(id, [fenced(event('EXECUTION_RESUMED'), token), fenced(event('STEP_STARTED'), token)]);
  assert.deepEqual(sequences(written), [3, 4]);
});

kase('guard::an_unfenced_answering_batch_is_refused_once_fenced', needs.fencing, async (store) => {
  const id = 'guard-unfenced-answer';
  await park(store, id);
  const current = await store.acquireFence(id);
  const before = await Witness.capture(store, id);
  await assertStale(store.append(id, event('EXECUTION_RESUMED')), null, current, 'an unfenced resume');
  await assertStale(store.appendMany(id, [event('EXECUTION_DENIED'), event('EXECUTION_RESUMED')]), null, current, 'a mixed unfenced batch');
  await assertStale(store.appendMany(id, [stamped(event('EXECUTION_PAUSED'))]), null, current, 'an unfenced stamped kind');
  await before.assertUnchanged(store, 'unfenced answering appends');
});

kase('guard::an_unfenced_answering_append_passes_before_any_acquire', needs.any, async (store) => {
  const id = 'guard-unfenced-zero';
  await park(store, id);
  const resumed = await store.append(id, event('EXECUTION_RESUMED'));
  assert.equal(resumed.sequence, 3);
});

kase('guard::an_unfenced_audit_append_passes_when_fenced', needs.fencing, async (store) => {
  const id = 'guard-audit';
  await park(store, id);
  await store.acquireFence(id);
  await store.append(id, event('EXECUTION_DENIED'));
  const batch = await store.appendMany(id, [event('STEP_FAILED'), event('app.output'), event('ANNOTATION_ADDED')]);
  assert.deepEqual(sequences(batch), [4, 5, 6]);
});

kase('guard::a_refused_batch_writes_none_of_its_events', needs.fencing, async (store) => {
  const id = 'guard-batch';
  await park(store, id);
  const current = await store.acquireFence(id);
  const before = await Witness.capture(store, id);
  const batch = [0, 1, 2, 3, 4].map((n) => event(n === 4 ? 'EXECUTION_COMPLETED' : 'STEP_COMPLETED'));
  await assertStale(store.appendMany(id, batch), null, current);
  await before.assertUnchanged(store, 'a refused batch');
  const next = await store.append(id, fenced(event('STEP_STARTED'), current));
  assert.equal(next.sequence, before.events.length + 1);
});

// ---------------------------------------------------------------------------
// concurrency.rs: concurrent appenders get contiguous, unique sequences.

const WRITERS = 8;

/** Runs WRITERS concurrent writers, each calling `write(writer, round)` for
 * `rounds` rounds; resolves to every envelope they were handed back. */
async function raceWriters(rounds, write) {
  const writers = Array.from({ length: WRITERS }, async (_, writer) => {
    const mine = [];
    for (let round = 0; round < rounds; round++) mine.push(...(await write(writer, round)));
    return mine;
  });
  return (await Promise.all(writers)).flat();
}

/** The log is exactly 1..=n, every handed-back envelope is in it at its
 * sequence, and no sequence was handed out twice. */
async function assertLogMatches(store, id, returned) {
  const log = await store.readRange(id, 1);
  assert.equal(returned.length, log.length, 'every append is in the log once');
  assert.deepEqual(sequences(log), log.map((_, i) => i + 1));
  const seen = new Set();
  for (const envelope of returned) {
    assert.ok(!seen.has(envelope.sequence), `sequence ${envelope.sequence} was handed out twice`);
    seen.add(envelope.sequence);
    assert.deepEqual(log[envelope.sequence - 1], envelope);
  }
}

kase('concurrency::concurrent_appenders_get_contiguous_unique_sequences', needs.any, async (store) => {
  const id = 'concurrent-single';
  const returned = await raceWriters(25, async (writer, round) => [
    await store.append(id, event('app.tick', { payload: { writer, round } })),
  ]);
  await assertLogMatches(store, id, returned);
  assert.equal(returned.length, 200);
});

kase('concurrency::concurrent_batches_are_never_interleaved', needs.any, async (store) => {
  const id = 'concurrent-batch';
  const returned = await raceWriters(5, async (writer, round) => {
    const written = await store.appendMany(
      id,
      [0, 1, 2, 3].map((part) => event('app.part', { payload: { writer, round, part } })),
    );
    written.forEach((envelope, offset) => {
      assert.equal(envelope.sequence, written[0].sequence + offset, 'the batch is contiguous');
      assert.equal(envelope.payload.writer, writer, 'the batch is not interleaved');
    });
    return written;
  });
  await assertLogMatches(store, id, returned);
  assert.equal(returned.length, 160);
});

// ---------------------------------------------------------------------------
// bad_input.rs: every malformed id, token, event or argument gets a typed
// error, and nothing changes.

/** Sets up a parked (and, on a fencing store, fenced) execution and
 * captures it. */
async function witness(store, caps, id) {
  await park(store, id);
  if (caps.fencing) await store.acquireFence(id);
  return Witness.capture(store, id);
}

kase('bad_input::bad_ids_are_refused_and_change_nothing', needs.any, async (store, caps) => {
  // `a` is what a backend that truncated at the NUL of "a\0b" would hit.
  const before = await witness(store, caps, 'a');
  for (const id of ['', 'x'.repeat(256), 'é'.repeat(128), 'a\0b']) {
    const what = (op) => `${op}(${show(id)})`;
    const resumed = fenced(event('EXECUTION_RESUMED'), 1);
    await assertRejects(store.append(id, resumed), expect.badId, what('append'));
    await assertRejects(store.appendMany(id, [resumed]), expect.badId, what('appendMany'));
    await assertRejects(store.readRange(id, 1), expect.badId, what('readRange'));
    await assertRejects(store.currentFence(id), expect.badId, what('currentFence'));
    await assertRejects(store.deleteExecution(id), expect.badId, what('deleteExecution'));
    if (caps.fencing) await assertRejects(store.acquireFence(id), expect.badId, what('acquireFence'));
    if (caps.conditional) {
      await assertRejects(store.acquireFenceIf(id, { fence: 1, parkSeq: 2 }), expect.badId, what('acquireFenceIf'));
    }
    if (caps.appendIfParked) {
      await assertRejects(store.appendIfParked(id, 2, [resumed]), expect.badId, what('appendIfParked'));
    }
  }
  await before.assertUnchanged(store, 'operations on bad ids');
});

kase('bad_input::the_longest_id_is_stored_verbatim', needs.any, async (store) => {
  const id = `${'é'.repeat(127)}x`;
  assert.equal(new TextEncoder().encode(id).length, 255);
  const stored = await store.append(id, event('app.x'));
  assert.equal(stored.executionId, id);
  assert.deepEqual(await store.readRange(id, 1), [stored]);
  assert.deepEqual(await store.readRange('é'.repeat(127), 1), [], 'a prefix of the id is another execution');
});

kase('bad_input::bad_fences_are_refused_and_change_nothing', needs.any, async (store, caps) => {
  const id = 'bad-fence';
  const before = await witness(store, caps, id);
  // The Rust case's 2.0 has no JavaScript twin: 2.0 === 2, a valid token.
  for (const found of [-1, 1.5, '1', null, 2 ** 53]) {
    const single = event('EXECUTION_RESUMED', { metadata: { fence: found } });
    await assertRejects(store.append(id, single), expect.badFence(found), `append with fence ${show(found)}`);
    await assertRejects(
      store.appendMany(id, [event('STEP_STARTED'), single]),
      expect.badFence(found),
      `appendMany with fence ${show(found)} on event 1`,
    );
  }
  await before.assertUnchanged(store, 'appends with bad fences');
});

kase('bad_input::mixed_fences_in_a_batch_are_refused', needs.any, async (store, caps) => {
  const id = 'bad-mixed';
  const before = await witness(store, caps, id);
  const token = before.fence;
  await assertRejects(
    store.appendMany(id, [fenced(event('MESSAGE_CONSUMED'), token), event('EXECUTION_RESUMED')]),
    expect.mixedFences,
    'a fenced and an unfenced event',
  );
  await assertRejects(
    store.appendMany(id, [fenced(event('STEP_STARTED'), token), fenced(event('STEP_COMPLETED'), token + 1)]),
    expect.mixedFences,
    'two tokens',
  );
  await before.assertUnchanged(store, 'mixed-token batches');
});

kase('bad_input::malformed_events_are_refused_and_change_nothing', needs.any, async (store, caps) => {
  const id = 'bad-event';
  const before = await witness(store, caps, id);
  const cases = [
    ['an empty kind', event(''), expect.invalidEvent],
    ['a 256-byte kind', event('k'.repeat(256)), expect.invalidEvent],
    ['a 256-byte kind of 2-byte characters', event('é'.repeat(128)), expect.invalidEvent],
    ['a NUL in the kind', event('a\0b'), expect.invalidEvent],
    ['a NUL in a payload string', event('app.x', { payload: { text: 'nul \0 inside' } }), expect.invalidEvent],
    ['a NUL in a metadata key', event('app.x', { metadata: { 'k\0': 1 } }), expect.invalidEvent],
    ['at = 2^53', { kind: 'app.x', at: 2 ** 53 }, expect.atOutOfRange],
    ['at = -(2^53)', { kind: 'app.x', at: -(2 ** 53) }, expect.atOutOfRange],
  ];
  for (const [what, bad, expected] of cases) {
    await assertRejects(store.append(id, bad), expected, `append of an event with ${what}`);
    await assertRejects(store.appendMany(id, [event('app.ok'), bad]), expected, `appendMany with ${what} as event 1`);
  }
  await before.assertUnchanged(store, 'malformed events');
});

kase('bad_input::a_park_seq_outside_the_log_is_refused', needs.conditional, async (store, caps) => {
  const id = 'bad-park-seq';
  const before = await witness(store, caps, id);
  const head = before.events.length;
  for (const parkSeq of [0, head + 1, 2 ** 32 - 1]) {
    await assertRejects(
      store.acquireFenceIf(id, { fence: before.fence, parkSeq }),
      expect.parkSeqOutOfRange,
      `acquireFenceIf with parkSeq ${parkSeq} (head ${head})`,
    );
    if (caps.appendIfParked) {
      await assertRejects(
        store.appendIfParked(id, parkSeq, [fenced(event('EXECUTION_RESUMED'), before.fence)]),
        expect.parkSeqOutOfRange,
        `appendIfParked with parkSeq ${parkSeq} (head ${head})`,
      );
    }
  }
  await assertRejects(
    store.acquireFenceIf('bad-never-written', { fence: 0, parkSeq: 1 }),
    expect.parkSeqOutOfRange,
    'acquireFenceIf on an unknown execution',
  );
  assert.equal(await store.currentFence('bad-never-written'), 0);
  assert.deepEqual(await store.readRange('bad-never-written'), []);
  await before.assertUnchanged(store, 'acquires outside the log');
});

kase('bad_input::out_of_range_numbers_are_refused', needs.any, async (store, caps) => {
  const id = 'bad-range';
  const before = await witness(store, caps, id);
  const huge = 2 ** 53;
  await assertRejects(store.readRange(id, huge), expect.outOfRange, 'readRange fromSeq 2^53');
  await assertRejects(store.readRange(id, 1, huge), expect.outOfRange, 'readRange toSeq 2^53');
  if (caps.conditional) {
    await assertRejects(store.acquireFenceIf(id, { fence: huge, parkSeq: 2 }), expect.outOfRange, 'acquireFenceIf fence 2^53');
    await assertRejects(store.acquireFenceIf(id, { fence: 0, parkSeq: huge }), { type: RangeError }, 'acquireFenceIf parkSeq 2^53');
  }
  if (caps.appendIfParked) {
    await assertRejects(store.appendIfParked(id, huge, [event('EXECUTION_RESUMED')]), { type: RangeError }, 'appendIfParked parkSeq 2^53');
  }
  await before.assertUnchanged(store, 'out-of-range arguments');
});

/** The Rust kit's `hostile::awkward_ids`: SQL quoting and comments,
 * placeholder spellings, LIKE and glob wildcards, case, spaces, control
 * characters, composed and decomposed forms, and three 255-byte ids. */
function awkwardIds() {
  const ids = [
    "it's", "''", 'say "hi"', '"', 'back\\slash', '\\', "\\'", 'a%', 'ab', 'a_', 'a\\%', '%', '_', '*', 'a*',
    '[a]', '?', "'; DROP TABLE events; --", "x'); DROP TABLE fences; --", '" OR 1=1 --', '$1', '$$', '?1', ':id',
    '@id', '$id', 'a', 'A', 'a ', ' a', 'tab\there', 'line\nbreak', '\u007f', '日本語-🦀', 'é', 'e\u0301', 'ß', 'ss',
    '\u202ertl',
  ];
  ids.push('x'.repeat(255), `${'é'.repeat(127)}x`, `${'🦀'.repeat(63)}xyz`);
  for (const id of ids.slice(-3)) assert.equal(new TextEncoder().encode(id).length, 255);
  return ids;
}

kase('hostile::awkward_ids_round_trip_verbatim_and_never_collide', needs.any, async (store, caps) => {
  const ids = awkwardIds();
  assert.equal(new Set(ids).size, ids.length, 'distinct ids');
  for (const id of ids) {
    await store.appendMany(id, [event('EXECUTION_STARTED', { payload: { id } }), event('EXECUTION_SUSPENDED')]);
  }
  for (const id of ids) {
    const log = await store.readRange(id, 1);
    assert.equal(log.length, 2, `${show(id)} has exactly its own two events`);
    assert.ok(log.every((e) => e.executionId === id), show(id));
    assert.equal(log[0].payload.id, id, show(id));
  }
  if (caps.fencing) {
    assert.equal(await store.acquireFence('a%'), 1);
    assert.equal(await store.acquireFence('a*'), 1);
  }
  if (caps.conditional) assert.deepEqual(await acquireIf(store, 'a_', 0, 2), { fence: 1 });
  for (const untouched of ['ab', 'a', 'A', 'e\u0301', '*', '%', '_']) {
    assert.equal(await store.currentFence(untouched), 0, `${show(untouched)} shares no token with a look-alike`);
  }
  for (const deleted of ['é', 'a', '%']) assert.equal(await store.deleteExecution(deleted), true, show(deleted));
  for (const kept of ['e\u0301', 'A', 'a ', ' a', 'ab', 'a%', 'a_']) {
    assert.equal((await store.readRange(kept, 1)).length, 2, `${show(kept)} survives the deletes of its look-alikes`);
  }
  await assertRejects(store.append('x'.repeat(256), event('EXECUTION_STARTED')), expect.badId, 'a 256-byte id');
});

kase('hostile::nul_is_refused_everywhere_and_nothing_is_written', needs.any, async (store, caps) => {
  const target = 'nul-target';
  const parkSeq = await park(store, target);
  await park(store, 'a');
  const before = [await Witness.capture(store, target), await Witness.capture(store, 'a')];
  const badId = 'a\0b';
  const resumed = event('EXECUTION_RESUMED');
  const calls = [
    ['append', () => store.append(badId, event('EXECUTION_STARTED'))],
    ['appendMany', () => store.appendMany(badId, [event('EXECUTION_STARTED')])],
    ['readRange', () => store.readRange(badId, 1)],
    ['currentFence', () => store.currentFence(badId)],
    ['deleteExecution', () => store.deleteExecution(badId)],
  ];
  if (caps.appendIfParked) calls.push(['appendIfParked', () => store.appendIfParked(badId, 1, [resumed])]);
  if (caps.fencing) calls.push(['acquireFence', () => store.acquireFence(badId)]);
  if (caps.conditional) calls.push(['acquireFenceIf', () => store.acquireFenceIf(badId, { fence: 0, parkSeq: 1 })]);
  for (const [operation, call] of calls) await assertRejects(call(), expect.badId, operation);
  const badEvents = [
    event('EXECUTION_RESUMED', { payload: { s: 'a\0b' } }),
    event('EXECUTION_RESUMED', { payload: { 'k\0': 1 } }),
    event('EXECUTION_RESUMED', { payload: { deep: [{ deeper: ['ok', '\0'] }] } }),
    event('EXECUTION_RESUMED', { metadata: { note: '\0' } }),
    event('APP\0KIND'),
  ];
  for (const [index, bad] of badEvents.entries()) {
    await assertRejects(store.append(target, bad), expect.invalidEvent, `event ${index} alone`);
    await assertRejects(
      store.appendMany(target, [event('STEP_STARTED'), bad]),
      expect.invalidEvent,
      `event ${index} second in a batch`,
    );
    if (caps.appendIfParked) {
      await assertRejects(store.appendIfParked(target, parkSeq, [bad]), expect.invalidEvent, `event ${index} conditionally`);
    }
  }
  for (const witness of before) await witness.assertUnchanged(store, 'NUL refusals');
});

kase('hostile::a_16_mb_payload_round_trips_verbatim', needs.any, async (store) => {
  const id = 'sixteen-mb';
  await park(store, id);
  const unit = 'quote" back\\slash tab\t nl\n é 日本 🦀 \u0001 ';
  const blob = unit.repeat(Math.floor((16 * 1024 * 1024) / unit.length) + 1);
  assert.ok(blob.length >= 16 * 1024 * 1024);
  const payload = {
    blob,
    numbers: [0, -1, 2 ** 53 - 1, 1.5, -0.25],
    nested: { empty: {}, list: [], null: null, bool: false },
  };
  const written = await store.append(id, event('EXECUTION_RESUMED', { payload }));
  assert.equal(written.sequence, 3);
  const log = await store.readRange(id, 3, 3);
  assert.equal(log.length, 1);
  assert.deepEqual(log[0].payload, payload, 'the payload comes back verbatim');
});

// ---------------------------------------------------------------------------
// delete.rs: deleting an execution.

kase('delete::delete_keeps_a_real_token_against_zombies', needs.fencing, async (store) => {
  const id = 'delete-fenced';
  await park(store, id);
  const zombie = await store.acquireFence(id);
  const current = await store.acquireFence(id);
  assert.equal(await store.deleteExecution(id), true);
  assert.deepEqual(await store.readRange(id, 1), []);
  assert.equal(await store.currentFence(id), current);
  await assertStale(store.append(id, fenced(event('EXECUTION_STARTED'), zombie)), zombie, current, "a zombie's append");
  const reborn = await store.append(id, fenced(event('EXECUTION_STARTED'), current));
  assert.equal(reborn.sequence, 1);
});

kase('delete::delete_of_an_unfenced_execution_leaves_nothing', needs.any, async (store) => {
  const id = 'delete-unfenced';
  await park(store, id);
  await store.append(id, event('app.x'));
  assert.equal(await store.deleteExecution(id), true);
  assert.equal(await store.deleteExecution(id), false);
  assert.equal(await store.deleteExecution('delete-never-written'), false);
  assert.equal(await store.currentFence(id), 0);
  assert.deepEqual(await store.readRange(id, 1), []);
  assert.equal((await store.append(id, event('app.y'))).sequence, 1);
});

kase('delete::a_delete_under_a_fenced_resume_writes_nothing', needs.fencedAppendIfParked, async (store, caps) => {
  // A resume racing a delete must not recreate the log. The resumer's
  // acquire wins (token 1); the execution is deleted, which keeps the token
  // by design; the resumer's append, fenced and conditional on its park, is
  // then refused as PARK_SEQ_OUT_OF_RANGE (the park is no longer in the log)
  // and writes nothing: no phantom one-event log, the token still 1. The
  // same holds once the id is reborn with a log shorter than the park.
  const id = 'delete-under-resume';
  const parkSeq = await park(store, id);
  let token;
  if (caps.conditional) {
    const outcome = await acquireIf(store, id, 0, parkSeq);
    assert.deepEqual(outcome, { fence: 1 });
    token = outcome.fence;
  } else {
    token = await store.acquireFence(id);
  }
  assert.equal(token, 1);
  assert.equal(await store.deleteExecution(id), true);
  const deleted = await Witness.capture(store, id);
  assert.deepEqual({ events: deleted.events.length, fence: deleted.fence }, { events: 0, fence: token });
  const resumed = () => [fenced(event('EXECUTION_RESUMED'), token)];
  await assertRejects(store.appendIfParked(id, parkSeq, resumed()), expect.parkSeqOutOfRange, 'a fenced resume of a deleted park');
  await deleted.assertUnchanged(store, 'a fenced resume of a deleted park');
  assert.deepEqual(await store.readRange(id, 1), [], 'no phantom log');
  assert.equal(await store.currentFence(id), token);

  const reborn = await store.append(id, fenced(event('EXECUTION_STARTED'), token));
  assert.equal(reborn.sequence, 1);
  const before = await Witness.capture(store, id);
  await assertRejects(store.appendIfParked(id, parkSeq, resumed()), expect.parkSeqOutOfRange, 'a fenced resume of a park past a reborn log');
  await before.assertUnchanged(store, 'a fenced resume of a park past a reborn log');
});

kase('delete::a_log_regrown_past_the_park_after_a_delete_is_not_taken_for_the_park', needs.fencedAppendIfParked, async (store, caps) => {
  // After a delete (which keeps a real token, by design) a log can grow back
  // past the sequence a slow resumer read as its park: the body that won
  // token 1 writes its step at 1, an unfenced audit record lands at 2, where
  // the park was. A conditional acquire or a park-conditional append naming
  // "park" 2 must not take that log for the park: both are refused
  // (NOT_A_PARK), the token stays 1 (the live body is not fenced out) and no
  // resume is written on the regrown log.
  const id = 'delete-regrown';
  const parkSeq = await park(store, id);
  assert.equal(parkSeq, 2);
  const token = caps.conditional ? (await acquireIf(store, id, 0, parkSeq)).fence : await store.acquireFence(id);
  assert.equal(token, 1);
  assert.equal(await store.deleteExecution(id), true);
  const step = await store.append(id, fenced(event('STEP_COMPLETED'), token));
  const audit = await store.append(id, event('EXECUTION_DENIED'));
  assert.deepEqual([step.sequence, audit.sequence], [1, parkSeq]);
  const regrown = await Witness.capture(store, id);
  assert.equal(regrown.fence, token, 'the delete kept the token');
  if (caps.conditional) {
    await assertRejects(
      store.acquireFenceIf(id, { fence: token, parkSeq }),
      expect.notAPark,
      'a late acquire of a park the regrown log covers',
    );
    await regrown.assertUnchanged(store, 'a late acquire on the regrown log');
  }
  await assertRejects(
    store.appendIfParked(id, parkSeq, [fenced(event('EXECUTION_RESUMED'), token)]),
    expect.notAPark,
    'a late resume of a park the regrown log covers',
  );
  await regrown.assertUnchanged(store, 'a late resume on the regrown log');
  await store.append(id, fenced(event('STEP_COMPLETED'), token));
});

// ---------------------------------------------------------------------------
// resume: the runtime's resume scenarios (host-adapters/runtime/tests and the
// core's resume tests), driven through the package's `resume` against the
// store under test. The path resume takes is read off the store's methods.

/** Asserts `promise` rejects with ResumeRefusedError not-suspended. */
async function assertRefused(promise, id, parkSeq, what) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof ResumeRefusedError, `${what}: expected ResumeRefusedError, got ${show(error?.message)}`);
    assert.equal(error.name, 'ResumeRefusedError');
    assert.deepEqual(
      { reason: error.reason, executionId: error.executionId, parkSeq: error.parkSeq },
      { reason: 'not-suspended', executionId: id, parkSeq },
      what,
    );
    return true;
  });
}

/** Asserts `promise` rejects with ResumeContendedError after `attempts`. */
async function assertContended(promise, id, attempts, what) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof ResumeContendedError, `${what}: expected ResumeContendedError, got ${show(error?.message)}`);
    assert.equal(error.name, 'ResumeContendedError');
    assert.deepEqual(
      { retryable: error.retryable, executionId: error.executionId, attempts: error.attempts },
      { retryable: true, executionId: id, attempts },
      what,
    );
    return true;
  });
}

kase('resume::a_resume_lands_and_its_body_appends_under_the_token', needs.resumable, async (store, caps) => {
  const id = 'resume-lands';
  const parkSeq = await park(store, id);
  const resumed = await resume(store, id, { fenceIfParkedAt: parkSeq, answer: { child: 'done' }, at: AT + 11 });
  const fence = caps.fencing ? 1 : null;
  const envelope = {
    executionId: id,
    sequence: parkSeq + 1,
    kind: 'EXECUTION_RESUMED',
    payload: { answer: { child: 'done' } },
    metadata: caps.fencing ? { fence: 1 } : {},
    at: AT + 11,
  };
  assert.deepEqual(resumed, { executionId: id, fence, resumed: envelope, attempts: caps.fencing ? 1 : 0, head: parkSeq + 1 });
  assert.deepEqual((await store.readRange(id, parkSeq + 1))[0], envelope, 'the stored resume is the one reported');
  assert.equal(await store.currentFence(id), caps.fencing ? 1 : 0);
  const stamp = (ev) => (resumed.fence === null ? ev : fenced(ev, resumed.fence));
  const step = await store.append(id, stamp(event('STEP_COMPLETED')));
  const done = await store.append(id, stamp(event('EXECUTION_COMPLETED', { payload: { output: { ok: true } } })));
  assert.deepEqual([step.sequence, done.sequence], [resumed.head + 1, resumed.head + 2]);
  await assertRefused(resume(store, id, { fenceIfParkedAt: parkSeq, answer: null, at: AT }), id, parkSeq, 'a second resume of the same park');
});

kase('resume::a_dead_acquirer_is_passed_on_the_retry', needs.fencedAppendIfParked, async (store, caps) => {
  const id = 'resume-dead';
  const parkSeq = await park(store, id);
  const dead = await store.acquireFence(id);
  const resumed = await resume(store, id, { fenceIfParkedAt: parkSeq, answer: null, at: AT });
  // The conditional path is told "stale, token 1" first and retries on it;
  // the unconditional one simply acquires past the dead token.
  assert.equal(resumed.fence, dead + 1);
  assert.equal(resumed.attempts, caps.conditional ? 2 : 1);
  assert.equal(resumed.resumed.metadata.fence, dead + 1);
  assert.equal(await store.currentFence(id), dead + 1);
  assert.equal((await resumesOf(store, id)).length, 1);
});

kase('resume::three_dead_acquirers_make_it_contended_and_leave_the_log_alone', needs.conditionalResumable, async (store) => {
  const id = 'resume-three-dead';
  const parkSeq = await park(store, id);
  const before = await store.readRange(id);
  let conditionalAcquires = 0;
  // A rival that takes the fence, unconditionally, right before every
  // conditional acquire, and dies: the worst contention a resumer can meet.
  const hostile = wrap(store, {
    async acquireFenceIf(executionId, expectation) {
      conditionalAcquires++;
      await store.acquireFence(executionId);
      return store.acquireFenceIf(executionId, expectation);
    },
  });
  await assertContended(resume(hostile, id, { fenceIfParkedAt: parkSeq, answer: null, at: AT }), id, 3, 'three dead acquirers');
  assert.equal(conditionalAcquires, 3);
  assert.deepEqual(await store.readRange(id), before, 'the log is untouched');
  assert.equal(await store.currentFence(id), 3, 'only the dead acquirers took tokens');
  // Contended is retryable: once the rivals are gone, the park is resumed.
  const resumed = await resume(store, id, { fenceIfParkedAt: parkSeq, answer: null, at: AT });
  assert.equal(resumed.fence, 4);
});

kase('resume::a_rival_behind_every_append_makes_it_contended', needs.fencedAppendIfParked, async (store) => {
  const id = 'resume-rival-append';
  const parkSeq = await park(store, id);
  const before = await store.readRange(id);
  // A rival that acquires between the resumer's acquire and its append (the
  // park-conditional one, under its token), every time: each append is
  // stale, on either fencing path.
  const hostile = wrap(store, {
    async appendIfParked(executionId, seq, events) {
      await store.acquireFence(executionId);
      return store.appendIfParked(executionId, seq, events);
    },
  });
  await assertContended(resume(hostile, id, { fenceIfParkedAt: parkSeq, answer: null, at: AT }), id, 3, 'a rival behind every append');
  assert.deepEqual(await store.readRange(id), before, 'the log is untouched');
  assert.equal(await store.currentFence(id), 6, 'three acquires by the resumer, three by the rival');
});

kase('resume::an_answered_park_is_refused_and_takes_no_token', needs.resumable, async (store) => {
  const id = 'resume-answered';
  const parkSeq = await park(store, id);
  await store.append(id, event('EXECUTION_RESUMED'));
  const before = await Witness.capture(store, id);
  await assertRefused(resume(store, id, { fenceIfParkedAt: parkSeq, answer: null, at: AT }), id, parkSeq, 'an answered park');
  await before.assertUnchanged(store, 'a refused resume');
  assert.equal(before.fence, 0, 'no token was ever taken');
  assert.equal((await resumesOf(store, id)).length, 1);
});

kase('resume::a_sequence_that_is_not_a_park_is_refused', needs.resumable, async (store) => {
  const id = 'resume-not-a-park';
  await park(store, id);
  const before = await Witness.capture(store, id);
  for (const parkSeq of [1, 99]) {
    await assertRefused(resume(store, id, { fenceIfParkedAt: parkSeq, answer: null, at: AT }), id, parkSeq, `parkSeq ${parkSeq}`);
  }
  await before.assertUnchanged(store, 'resumes of sequences that are not the open park');
});

kase('resume::an_unfenced_denial_after_the_park_does_not_block_the_resume', needs.resumable, async (store) => {
  const id = 'resume-after-denial';
  const parkSeq = await park(store, id);
  await store.append(id, event('EXECUTION_DENIED'));
  await store.append(id, event('app.output'));
  const resumed = await resume(store, id, { fenceIfParkedAt: parkSeq, answer: null, at: AT });
  assert.equal(resumed.resumed.sequence, parkSeq + 3);
  assert.equal(resumed.head, parkSeq + 3);
});

kase('resume::sixteen_concurrent_resumers_one_lands', needs.resumable, async (store) => {
  const id = 'resume-sixteen';
  const parkSeq = await park(store, id);
  const results = await Promise.allSettled(
    Array.from({ length: 16 }, (_, n) => resume(store, id, { fenceIfParkedAt: parkSeq, answer: n, at: AT })),
  );
  const landed = results.filter((r) => r.status === 'fulfilled');
  assert.equal(landed.length, 1, `results: ${show(results.map((r) => r.status))}`);
  for (const r of results.filter((x) => x.status === 'rejected')) {
    assert.ok(
      r.reason instanceof ResumeRefusedError || r.reason instanceof ResumeContendedError,
      `a losing resumer is refused or contended, not ${show(r.reason?.message)}`,
    );
  }
  const resumes = await resumesOf(store, id);
  assert.equal(resumes.length, 1);
  assert.deepEqual(resumes[0], landed[0].value.resumed);
});

kase('resume::a_body_fenced_out_by_a_rival_learns_it_on_its_next_append', needs.fencedAppendIfParked, async (store) => {
  const id = 'resume-fenced-out';
  const parkSeq = await park(store, id);
  const resumed = await resume(store, id, { fenceIfParkedAt: parkSeq, answer: null, at: AT });
  assert.equal(resumed.fence, 1);
  await store.acquireFence(id);
  await assertStale(store.append(id, fenced(event('STEP_STARTED'), resumed.fence)), 1, 2, "the fenced-out body's append");
});

kase('resume::a_park_deleted_under_the_resume_is_refused', needs.resumable, async (store, caps) => {
  const id = 'resume-deleted';
  const parkSeq = await park(store, id);
  // The execution is deleted between the resumer's read and its conditional
  // step, which then reports PARK_SEQ_OUT_OF_RANGE: the park is gone. On a
  // conditional store that step is the acquire (no token taken); otherwise
  // it is the park-conditional append, after a fencing-only store's acquire
  // (whose token the delete keeps).
  const method = caps.conditional ? 'acquireFenceIf' : 'appendIfParked';
  const deleting = wrap(store, {
    async [method](...args) {
      await store.deleteExecution(id);
      return store[method](...args);
    },
  });
  await assertRefused(resume(deleting, id, { fenceIfParkedAt: parkSeq, answer: null, at: AT }), id, parkSeq, 'a deleted park');
  assert.deepEqual(await store.readRange(id), [], 'nothing was appended to a reborn log');
  const taken = caps.fencing && !caps.conditional ? 1 : 0;
  assert.equal(await store.currentFence(id), taken, 'no token beyond the one a fencing-only acquire took before the delete');
});

/**
 * A view of `store` that deletes `id` right after every acquire that takes
 * a token (conditional or not), the widest window a delete can hit a resume
 * in: between its acquire and its append. `deletes` counts them.
 */
function deletingAfterAcquire(store, id) {
  const view = wrap(store, {
    async acquireFence(executionId) {
      const token = await store.acquireFence(executionId);
      await deleteFound();
      return token;
    },
    async acquireFenceIf(executionId, expectation) {
      const outcome = await store.acquireFenceIf(executionId, expectation);
      if (outcome.stale !== true) await deleteFound();
      return outcome;
    },
  });
  async function deleteFound() {
    assert.equal(await store.deleteExecution(id), true, 'the deleter found a log');
    view.deletes++;
  }
  view.deletes = 0;
  return view;
}

kase('resume::a_delete_under_a_fenced_resume_is_refused_and_writes_nothing', needs.fencedAppendIfParked, async (store) => {
  // The resume's acquire wins (token 1); the execution is deleted, which
  // keeps the token by design; the resume's append, under token 1 and
  // conditional on its park, is refused (the park is gone): not suspended,
  // final, and nothing written (no phantom one-event log).
  const id = 'resume-delete-under';
  const parkSeq = await park(store, id);
  const deleting = deletingAfterAcquire(store, id);
  await assertRefused(
    resume(deleting, id, { fenceIfParkedAt: parkSeq, answer: { paid: true }, at: AT + 1 }),
    id,
    parkSeq,
    'a delete between the acquire and the append',
  );
  assert.equal(deleting.deletes, 1, 'one acquire');
  assert.deepEqual(await store.readRange(id), [], 'no phantom log');
  assert.equal(await store.currentFence(id), 1, "the delete kept the resume's token");
});

kase('resume::a_log_regrown_past_the_park_after_a_delete_is_refused_and_writes_nothing', needs.resumable, async (store, caps) => {
  // A slow resumer reads the park; before it goes on, another resume lands,
  // the execution is deleted (which keeps a real token, by design) and its
  // log grows back past the park: the body's step at 1, under its token,
  // and an unfenced audit record at 2, where the park was. Going on from
  // what it read, the slow resumer is refused as not suspended and writes
  // nothing (no resume on the regrown log); except on a fencing-only store,
  // whose unconditional acquire is the documented residual window, it takes
  // no token either, so the live body is not fenced out.
  const id = 'resume-regrown';
  const parkSeq = await park(store, id);
  let regrown;
  const slow = wrap(store, {
    async readRange(executionId, ...range) {
      const read = await store.readRange(executionId, ...range);
      if (regrown === undefined) {
        const winner = await resume(store, id, { fenceIfParkedAt: parkSeq, answer: { first: true }, at: AT + 1 });
        assert.equal(await store.deleteExecution(id), true);
        const step = event('STEP_COMPLETED');
        await store.append(id, winner.fence === null ? step : fenced(step, winner.fence));
        const audit = await store.append(id, event('EXECUTION_DENIED'));
        assert.equal(audit.sequence, parkSeq, 'the log has grown back to the park');
        regrown = await Witness.capture(store, id);
      }
      return read;
    },
  });
  await assertRefused(
    resume(slow, id, { fenceIfParkedAt: parkSeq, answer: { late: true }, at: AT + 2 }),
    id,
    parkSeq,
    'a late resume on the regrown log',
  );
  if (caps.fencing && !caps.conditional) {
    assert.deepEqual((await Witness.capture(store, id)).events, regrown.events, 'no resume on the regrown log');
  } else {
    await regrown.assertUnchanged(store, 'a late resume on the regrown log');
  }
});

kase('forged_ack::a_forged_append_acknowledgement_fails_the_resume_and_nothing_lands', needs.resumable, async (store) => {
  // A store whose appendIfParked writes nothing and answers the event sent
  // with one field changed: another payload, at or metadata (the token
  // dropped, or one never sent). The core machine compares the ack with
  // what it sent, so the resume rejects as a broken store contract and the
  // log is as before. (A token the resume acquired first stays taken.)
  const forgeries = [
    ['payload', (e) => ({ ...e, payload: { answer: 'forged' } })],
    ['at', (e) => ({ ...e, at: e.at + 1 })],
    ['metadata', (e) => ({ ...e, metadata: { ...e.metadata, host: 'forged' } })],
    ['the token', (e) => ({ ...e, metadata: 'fence' in e.metadata ? {} : { fence: 7 } })],
  ];
  for (const [n, [what, forge]] of forgeries.entries()) {
    const id = `resume-forged-ack-${n}`;
    const parkSeq = await park(store, id);
    const before = await Witness.capture(store, id);
    const lying = wrap(store, {
      async appendIfParked(executionId, _parkSeq, [sent]) {
        const head = (await store.readRange(executionId)).length;
        return [forge({ executionId, sequence: head + 1, kind: sent.kind, payload: sent.payload ?? {}, metadata: sent.metadata ?? {}, at: sent.at })];
      },
    });
    await assertRejects(resume(lying, id, { fenceIfParkedAt: parkSeq, answer: { paid: true }, at: AT + 1 }), expect.storeContract, `forged ${what}`);
    assert.deepEqual((await Witness.capture(store, id)).events, before.events, `forged ${what}: the log is as before`);
  }
});

kase('resume::a_park_after_the_end_is_refused_and_takes_no_token', needs.resumable, async (store) => {
  // Both appends pass while the token is 0, so a buggy or unfenced writer can
  // leave a park after the execution's end. Terminal is absorbing: that park
  // is not open, for resume as for locatePark, whatever the entry point.
  const id = 'resume-after-the-end';
  const written = await store.appendMany(id, [
    event('EXECUTION_STARTED'),
    event('EXECUTION_COMPLETED'),
    event('EXECUTION_SUSPENDED'),
  ]);
  const parkSeq = written[2].sequence;
  const before = await Witness.capture(store, id);
  assert.equal(locatePark(before.events), undefined, 'locatePark finds no open park after the end');
  await assertRefused(resume(store, id, { fenceIfParkedAt: parkSeq, answer: null, at: AT }), id, parkSeq, 'a park after the end');
  await before.assertUnchanged(store, 'a resume of a park after the end');
  assert.equal(before.fence, 0, 'no token was taken');
});

kase('resume::a_store_without_append_if_parked_is_refused_up_front', needs.notResumable, async (store) => {
  // Without the park-conditional append, a non-fencing store would let two
  // resumers both land, and any store would let a delete during the resume
  // recreate the log: resume refuses it before calling it at all.
  const id = 'resume-no-append-if-parked';
  const parkSeq = await park(store, id);
  const before = await Witness.capture(store, id);
  const calls = [];
  const watched = wrap(store, Object.fromEntries(
    Object.entries(wrap(store)).map(([name, method]) => [name, (...args) => (calls.push(name), method(...args))]),
  ));
  await assertRejects(
    resume(watched, id, { fenceIfParkedAt: parkSeq, answer: null, at: AT }),
    { type: TypeError, code: 'NOT_A_STORE' },
    'resume of a store without appendIfParked',
  );
  await assert.rejects(resume(watched, id, { fenceIfParkedAt: parkSeq, at: AT }), /appendIfParked/, 'the error names the missing method');
  assert.deepEqual(calls, [], 'resume called nothing on the store');
  await before.assertUnchanged(store, 'a refused resume');
});

// ---------------------------------------------------------------------------
// retention.rs, sweep.rs, sweep_undecided.rs and sweep_contract.rs: the
// paged listing, the guarded delete and the package's sweep over the store,
// in their own files; any store runs them.

for (const [name, run] of [...RETENTION_CASES, ...SWEEP_CASES, ...SWEEP_UNDECIDED_CASES, ...SWEEP_CONTRACT_CASES]) {
  kase(name, needs.any, run);
}
for (const [name, need, run] of SWEEP_BATCH_CASES) kase(name, needs[need], run);

// supervisor.rs and the runtime's supervisor scenarios: the package's
// ChildSupervisor over the store, in their own file; each says what it
// needs (`resume` refuses a store without appendIfParked).

for (const [name, need, run] of SUPERVISOR_CASES) kase(name, needs[need], run);

// feed.rs: the change feed, the open parks and the wait, in their own file;
// and the package's Follower over the store, which reads nothing else.

for (const [name, run] of FEED_CASES) kase(name, needs.feed, run);
for (const [name, run] of FOLLOWER_CASES) kase(name, needs.followable, run);

// ---------------------------------------------------------------------------

/** The names of every case, in order (for reports and comparisons with the
 * Rust kit). */
export const CASE_NAMES = Object.freeze(CASES.map((c) => c.name));

/**
 * Registers every case of the kit under `describe('conformance[label]')`,
 * each run against a fresh store from `makeStore` (sync or async).
 */
export function conformance(label, makeStore, capabilities) {
  const caps = {
    fencing: Boolean(capabilities.fencing || capabilities.conditional),
    conditional: Boolean(capabilities.conditional),
    appendIfParked: Boolean(capabilities.appendIfParked),
    feed: Boolean(capabilities.feed),
    batched: Boolean(capabilities.batched),
  };
  describe(`conformance[${label}]`, () => {
    for (const { name, need, run } of CASES) {
      if (!need.admits(caps)) {
        test(name, { skip: `not applicable: needs ${need.label}` }, () => {});
        continue;
      }
      test(name, async () => run(await makeStore(), caps));
    }
  });
}
