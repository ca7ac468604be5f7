// The timer conformance kit for JavaScript timer stores: the cases of the
// Rust timer kit (tests/conformance/src/timers/*.rs), ported one for one
// under the same names, plus checks of the JavaScript edge (values that are
// not rows, claims, leases or numbers at all), written ONCE and run against
// any store with the TimerStore interface:
//
//   import { timerConformance } from './timer-kit.js';
//   timerConformance('memory', () => new MemoryTimerStore());
//
// Timer stores have no capability levels: every case applies to every store.
// Each case gets a fresh store from the factory. The rules are the core's
// TimerTable (core/src/timer_table.rs): an upsert that keeps the re-drive
// flag, due filtered before the limit, numbered lease claims, retire and
// release only by the current claim, a schedule voiding a claim, and every
// bad input refused with a TimerInputError that changes nothing.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryEventStore } from 'loomfence';
import { MemoryTimerStore, TimerInputError, TimerService } from 'loomfence/services';

import { describe as describeError, prng, show } from './support.js';

/** The base time of the cases, in ms; any value in range would do. */
export const T0 = 1_700_000_000_000;

/** The lease every case claims with unless it says otherwise. */
export const LEASE_MS = 30_000;

/** The largest stored time (2^53-1), the largest listing, the longest lease
 * and the largest re-drive attempt, as the core defines them. */
export const MAX_TIMER_MS = Number.MAX_SAFE_INTEGER;
export const MAX_DUE_LIMIT = 10_000;
export const MAX_LEASE_MS = 86_400_000;
export const MAX_REDRIVE_ATTEMPT = 2 ** 31 - 1;

/** The longest execution id: 255 bytes of UTF-8. */
const MAX_ID_BYTES = 255;

/** A plain wake of `execution` at `T0 + offset`. */
export function wake(execution, offset) {
  return { executionId: execution, wakeAt: T0 + offset };
}

/** A re-drive row of `execution` at `T0 + offset`, try `attempt`. */
export function redrive(execution, offset, attempt) {
  return { executionId: execution, wakeAt: T0 + offset, redrive: { attempt } };
}

/** A lease for `holder` at `T0 + offset`, for `LEASE_MS`. */
export function lease(holder, offset) {
  return { holder, now: T0 + offset, durationMs: LEASE_MS };
}

/** Schedules every row, in order. */
export async function scheduleAll(store, rows) {
  for (const row of rows) await store.schedule(row);
}

/** Every row of the store, earliest first: the witness a case compares
 * before and after a refused call. */
export function allRows(store) {
  return store.due(MAX_TIMER_MS, MAX_DUE_LIMIT);
}

/** Claims due rows under `lease` (every kind, up to 100). */
export function claim(store, byLease) {
  return store.claimDue(byLease, 100);
}

/** Claims under `lease` and expects exactly the row `row`. */
export async function claimOnly(store, byLease, row) {
  const claims = await claim(store, byLease);
  assert.deepEqual(claims.map((c) => c.row), [row], `${byLease.holder} should claim exactly ${show(row)}`);
  return claims[0];
}

/** Sorts rows the way a store orders them: by time, then by id in byte order
 * (UTF-8 bytes, not UTF-16 code units). */
function byKey(a, b) {
  if (a.wakeAt !== b.wakeAt) return a.wakeAt - b.wakeAt;
  return Buffer.compare(Buffer.from(a.executionId), Buffer.from(b.executionId));
}

/** Asserts `promise` rejects with a TimerInputError with `code`. */
export async function assertTimerInput(promise, code, what) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof TimerInputError, `${what}: expected a TimerInputError (${code}), got ${describeError(error)}`);
    assert.equal(error.name, 'TimerInputError');
    assert.equal(error.code, code, `${what}: wrong code on ${describeError(error)}`);
    assert.ok(typeof error.message === 'string' && error.message.length > 0, `${what}: the error has no message`);
    return true;
  });
}

/** Every case: [name, run(store)]. */
const CASES = [];
function kase(name, run) {
  CASES.push({ name, run });
}

// ---------------------------------------------------------------------------
// schedule.rs: rows round-trip, and the upsert keeps or adds the re-drive
// flag but never clears it.

kase('schedule::rows_round_trip_with_their_flag', async (store) => {
  await scheduleAll(store, [redrive('b', 20, 3), wake('a', 10)]);
  assert.deepEqual(await allRows(store), [wake('a', 10), redrive('b', 20, 3)]);
});

kase('schedule::times_at_both_ends_of_the_range_round_trip', async (store) => {
  const rows = [
    { executionId: 'zero', wakeAt: 0 },
    { executionId: 'max', wakeAt: MAX_TIMER_MS, redrive: { attempt: MAX_REDRIVE_ATTEMPT } },
  ];
  await scheduleAll(store, rows);
  assert.deepEqual(await allRows(store), rows);
});

kase('schedule::awkward_ids_round_trip', async (store) => {
  const long = 'é'.repeat(MAX_ID_BYTES >> 1) + 'x';
  assert.equal(Buffer.byteLength(long), MAX_ID_BYTES);
  const ids = ['it\'s "quoted"', "'); DROP TABLE timers; --", '{"attempt": 1}', 'timer 🕰 ünïcode', long];
  const rows = ids.map((id) => ({ executionId: id, wakeAt: T0 }));
  await scheduleAll(store, rows);
  assert.deepEqual(await allRows(store), [...rows].sort(byKey));
});

kase('schedule::a_redrive_schedule_flags_a_plain_row', async (store) => {
  await scheduleAll(store, [wake('p', 0), redrive('p', 0, 0)]);
  assert.deepEqual(await allRows(store), [redrive('p', 0, 0)]);
});

kase('schedule::a_plain_schedule_never_clears_the_flag', async (store) => {
  await scheduleAll(store, [redrive('p', 0, 2), wake('p', 0)]);
  assert.deepEqual(await allRows(store), [redrive('p', 0, 2)]);
});

kase('schedule::a_later_redrive_schedule_carries_its_attempt', async (store) => {
  await scheduleAll(store, [redrive('p', 0, 1), redrive('p', 0, 4)]);
  assert.deepEqual(await allRows(store), [redrive('p', 0, 4)]);
});

kase('schedule::scheduling_twice_keeps_one_row', async (store) => {
  await scheduleAll(store, [wake('p', 0), wake('p', 0), wake('p', 1)]);
  assert.deepEqual(await allRows(store), [wake('p', 0), wake('p', 1)]);
});

// ---------------------------------------------------------------------------
// due.rs: which rows a listing returns, in what order, and how the re-drive
// filter and the limit combine.

kase('due::only_rows_at_or_before_now_are_due', async (store) => {
  await scheduleAll(store, [wake('early', -1), wake('now', 0), wake('late', 1)]);
  assert.deepEqual(await store.due(T0, MAX_DUE_LIMIT), [wake('early', -1), wake('now', 0)]);
});

kase('due::due_rows_come_earliest_first_then_by_id_in_byte_order', async (store) => {
  await scheduleAll(store, [wake('b', 5), wake('a', 5), wake('B', 5), wake('z', 1), wake('é', 5)]);
  assert.deepEqual(await store.due(T0 + 5, MAX_DUE_LIMIT), [
    wake('z', 1),
    wake('B', 5),
    wake('a', 5),
    wake('b', 5),
    wake('é', 5),
  ]);
});

kase('due::the_limit_takes_the_earliest', async (store) => {
  const rows = Array.from({ length: 10 }, (_, i) => 9 - i).map((n) => wake(`e${n}`, n));
  await scheduleAll(store, rows);
  assert.deepEqual(await store.due(T0 + 100, 3), [wake('e0', 0), wake('e1', 1), wake('e2', 2)]);
});

kase('due::the_redrive_filter_applies_before_the_limit', async (store) => {
  const rows = Array.from({ length: 5 }, (_, n) => redrive(`r${n}`, n, 0));
  rows.push(wake('plain', 10));
  await scheduleAll(store, rows);
  assert.deepEqual(await store.due(T0 + 10, 2, { redrive: false }), [wake('plain', 10)]);
  assert.deepEqual(await store.due(T0 + 10, 2), [redrive('r0', 0, 0), redrive('r1', 1, 0)]);
  assert.deepEqual(await store.due(T0 + 10, 2, { redrive: true }), [redrive('r0', 0, 0), redrive('r1', 1, 0)]);
});

kase('due::claimed_rows_are_still_listed', async (store) => {
  await scheduleAll(store, [wake('held', 0), wake('free', 1)]);
  const held = await claim(store, lease('n1', 0));
  assert.equal(held.length, 1);
  assert.deepEqual(await store.due(T0 + 1, MAX_DUE_LIMIT), [wake('held', 0), wake('free', 1)]);
});

// ---------------------------------------------------------------------------
// lease.rs: who may fire a row, until when, and who may retire it.

kase('lease::a_claim_takes_due_free_rows_earliest_first', async (store) => {
  await scheduleAll(store, [wake('c', 2), wake('a', 0), wake('b', 1), wake('later', 9)]);
  const claims = await store.claimDue(lease('n1', 5), 2);
  assert.deepEqual(claims, [
    { row: wake('a', 0), holder: 'n1', number: 1, expiresAt: T0 + 5 + LEASE_MS },
    { row: wake('b', 1), holder: 'n1', number: 1, expiresAt: T0 + 5 + LEASE_MS },
  ]);
  const rest = await claim(store, lease('n2', 5));
  assert.deepEqual(rest.map((c) => c.row), [wake('c', 2)]);
});

kase('lease::a_claim_honours_the_redrive_filter_before_the_limit', async (store) => {
  const rows = Array.from({ length: 5 }, (_, n) => redrive(`r${n}`, n, 0));
  rows.push(wake('plain', 10));
  await scheduleAll(store, rows);
  const plain = await store.claimDue(lease('no-redrivers', 10), 1, { redrive: false });
  assert.deepEqual(plain.map((c) => c.row), [wake('plain', 10)]);
  const redrives = await claim(store, lease('redriver', 10));
  assert.equal(redrives.length, 5, `the re-drive rows stayed free: ${show(redrives)}`);
});

kase('lease::a_held_row_is_not_claimed_again', async (store) => {
  await scheduleAll(store, [wake('p', 0)]);
  await claimOnly(store, lease('n1', 0), wake('p', 0));
  assert.deepEqual(await claim(store, lease('n2', LEASE_MS - 1)), []);
  assert.deepEqual(await claim(store, lease('n1', 1)), []);
});

kase('lease::eight_concurrent_claimers_one_winner', async (store) => {
  for (let round = 0; round < 20; round++) {
    const row = wake(`round-${round}`, round);
    await scheduleAll(store, [row]);
    const claimed = await Promise.all(
      Array.from({ length: 8 }, (_, n) => claim(store, lease(`node-${n}`, round))),
    );
    assert.deepEqual(claimed.flat().map((c) => c.row), [row], `round ${round}: exactly one claimer gets the row`);
  }
});

kase('lease::concurrent_claimers_split_many_rows_without_overlap', async (store) => {
  const rows = Array.from({ length: 64 }, (_, n) => wake(`row-${String(n).padStart(2, '0')}`, n % 7));
  await scheduleAll(store, rows);
  const drained = await Promise.all(
    Array.from({ length: 8 }, async (_, n) => {
      const mine = [];
      for (;;) {
        const page = await store.claimDue(lease(`node-${n}`, 10), 5);
        if (page.length === 0) return mine;
        mine.push(...page.map((c) => c.row));
      }
    }),
  );
  const claimed = drained.flat();
  assert.equal(claimed.length, 64, `every row claimed once: ${show(claimed)}`);
  assert.deepEqual([...claimed].sort(byKey), [...rows].sort(byKey));
});

kase('lease::an_expired_lease_comes_back_with_a_higher_number', async (store) => {
  await scheduleAll(store, [wake('p', 0)]);
  const crashed = await claimOnly(store, lease('crashed', 0), wake('p', 0));
  assert.deepEqual(await claim(store, lease('n2', LEASE_MS - 1)), []);
  const taken = await claimOnly(store, lease('n2', LEASE_MS), wake('p', 0));
  assert.equal(taken.number, crashed.number + 1);
  assert.equal(await store.complete(crashed), 'notHeld');
  assert.deepEqual(await allRows(store), [wake('p', 0)]);
  assert.equal(await store.complete(taken), 'done');
  assert.deepEqual(await allRows(store), []);
});

kase('lease::complete_retires_only_for_the_claimer', async (store) => {
  await scheduleAll(store, [wake('p', 0)]);
  const held = await claimOnly(store, lease('owner', 0), wake('p', 0));
  const impostor = { ...held, holder: 'impostor' };
  const wrongNumber = { ...held, number: held.number + 1 };
  for (const refused of [impostor, wrongNumber]) {
    assert.equal(await store.complete(refused), 'notHeld', show(refused));
  }
  assert.deepEqual(await allRows(store), [wake('p', 0)]);
  assert.deepEqual(await claim(store, lease('third', 1)), [], 'the owner still holds the row');
  assert.equal(await store.complete(held), 'done');
  assert.deepEqual(await allRows(store), []);
});

kase('lease::complete_twice_retires_once', async (store) => {
  await scheduleAll(store, [wake('p', 0), wake('p', 1)]);
  const claims = await claim(store, lease('n1', 0));
  assert.equal(claims.length, 1);
  assert.equal(await store.complete(claims[0]), 'done');
  assert.equal(await store.complete(claims[0]), 'notHeld');
  assert.deepEqual(await allRows(store), [wake('p', 1)]);
});

kase('lease::a_claimer_whose_lease_ended_unclaimed_still_completes', async (store) => {
  await scheduleAll(store, [wake('p', 0)]);
  const slow = await claimOnly(store, lease('slow', 0), wake('p', 0));
  assert.equal(await store.complete(slow), 'done');
  assert.deepEqual(await allRows(store), []);
});

kase('lease::release_hands_the_row_back_at_once', async (store) => {
  await scheduleAll(store, [wake('p', 0)]);
  const first = await claimOnly(store, lease('stopping', 0), wake('p', 0));
  assert.equal(await store.release(first), 'done');
  const second = await claimOnly(store, lease('n2', 1), wake('p', 0));
  assert.equal(second.number, first.number + 1);
  assert.equal(await store.complete(first), 'notHeld');
  assert.equal(await store.release(first), 'notHeld');
  assert.equal(await store.complete(second), 'done');
});

kase('lease::release_by_a_non_claimer_changes_nothing', async (store) => {
  await scheduleAll(store, [wake('p', 0)]);
  const held = await claimOnly(store, lease('owner', 0), wake('p', 0));
  assert.equal(await store.release({ ...held, holder: 'impostor' }), 'notHeld');
  assert.deepEqual(await claim(store, lease('third', 1)), []);
  assert.equal(await store.complete(held), 'done');
});

kase('lease::a_schedule_on_a_claimed_row_voids_the_claim', async (store) => {
  await scheduleAll(store, [redrive('p', 0, 1)]);
  const firing = await claimOnly(store, lease('firing', 0), redrive('p', 0, 1));
  await scheduleAll(store, [wake('p', 0)]);
  assert.equal(await store.complete(firing), 'notHeld');
  assert.deepEqual(await allRows(store), [redrive('p', 0, 1)]);
  const next = await claimOnly(store, lease('next', 1), redrive('p', 0, 1));
  assert.ok(next.number > firing.number);
  assert.equal(await store.release(firing), 'notHeld');
});

// ---------------------------------------------------------------------------
// reschedule.rs: a re-drive chain moves on in one step under the claim, so a
// fire that outlived its lease cannot fork it.

kase('reschedule::a_reschedule_under_the_claim_retires_the_row_and_schedules_the_next', async (store) => {
  await scheduleAll(store, [redrive('p', 0, 0), wake('other', 5)]);
  const held = await claimOnly(store, lease('n1', 0), redrive('p', 0, 0));
  const next = redrive('p', 200, 1);
  assert.equal(await store.reschedule(held, next), 'done');
  assert.deepEqual(await allRows(store), [wake('other', 5), next]);
  assert.equal(await store.complete(held), 'notHeld', 'the claimed row is gone');
  await claimOnly(store, lease('n2', 199), wake('other', 5));
  await claimOnly(store, lease('n3', 200), next);
});

kase('reschedule::a_reschedule_after_the_lease_was_lost_writes_nothing', async (store) => {
  await scheduleAll(store, [redrive('p', 0, 0)]);
  const stale = await claimOnly(store, lease('n1', 0), redrive('p', 0, 0));
  const current = await claimOnly(store, lease('n2', LEASE_MS), redrive('p', 0, 0));
  assert.equal(await store.reschedule(stale, redrive('p', 200, 1)), 'notHeld');
  assert.deepEqual(await allRows(store), [redrive('p', 0, 0)]);
  // A schedule on the row voids a claim too: its reschedule writes nothing.
  await store.schedule(redrive('p', 0, 0));
  assert.equal(await store.reschedule(current, redrive('p', 300, 1)), 'notHeld');
  assert.deepEqual(await allRows(store), [redrive('p', 0, 0)]);
});

kase('reschedule::a_next_row_on_the_claimed_key_is_refused', async (store) => {
  await scheduleAll(store, [redrive('p', 0, 0)]);
  const held = await claimOnly(store, lease('n1', 0), redrive('p', 0, 0));
  await assertTimerInput(store.reschedule(held, redrive('p', 0, 1)), 'INVALID_RESCHEDULE', 'a next row on the claimed key');
  await assertTimerInput(store.reschedule(held, { executionId: 'p', wakeAt: -1 }), 'INVALID_TIME', 'a next row out of range');
  await assertTimerInput(store.reschedule({ ...held, number: -1 }, redrive('p', 9, 1)), 'INVALID_CLAIM', 'a value that is not a claim');
  assert.deepEqual(await allRows(store), [redrive('p', 0, 0)]);
  assert.equal(await store.complete(held), 'done', 'the claim still holds');
});

kase('reschedule::a_next_row_that_exists_merges_like_a_schedule', async (store) => {
  await scheduleAll(store, [redrive('p', 0, 0), wake('p', 200), redrive('q', 0, 0), redrive('q', 200, 5)]);
  const [p, q] = await claim(store, lease('n1', 0));
  assert.deepEqual([p.row, q.row], [redrive('p', 0, 0), redrive('q', 0, 0)]);
  // A plain row at the next key: flagged by the re-drive row that lands.
  assert.equal(await store.reschedule(p, redrive('p', 200, 1)), 'done');
  // A re-drive row at the next key: the new attempt wins.
  assert.equal(await store.reschedule(q, redrive('q', 200, 1)), 'done');
  assert.deepEqual(await allRows(store), [redrive('p', 200, 1), redrive('q', 200, 1)]);
  // A claimed next row loses its claim to the merge.
  const nextClaims = await claim(store, lease('n2', 200));
  assert.equal(nextClaims.length, 2);
  await scheduleAll(store, [redrive('r', 0, 0)]);
  const r = await claimOnly(store, lease('n3', 200), redrive('r', 0, 0));
  assert.equal(await store.reschedule(r, wake('p', 200)), 'done');
  assert.equal(await store.complete(nextClaims[0]), 'notHeld', 'the merge ended the claim on the next row');
  assert.deepEqual(await allRows(store), [redrive('p', 200, 1), redrive('q', 200, 1)], 'a plain next row never clears the flag');
});

kase('reschedule::a_fire_that_outlives_its_lease_does_not_fork_the_chain', async (store) => {
  // Two real TimerServices over one store. Node A claims the chain's first
  // row and stalls inside its fire, at the write, past its lease; node B
  // claims the row and fires it; then A goes on. One next row, one report.
  const LEASE = 1_000;
  const first = redrive('chain', 0, 0);
  await scheduleAll(store, [first]);
  let now = T0;
  let exhausted = 0;
  const failures = [];
  const onError = (error, info) => {
    if (info.stage === 'exhausted') exhausted += 1;
    else failures.push([info.stage, error]);
  };
  let arrive;
  const arrived = new Promise((resolve) => { arrive = resolve; });
  let open;
  const gate = new Promise((resolve) => { open = resolve; });
  let armed = true;
  const hold = async () => {
    if (!armed) return;
    armed = false;
    arrive();
    await gate;
  };
  const stalled = {
    schedule: async (row) => { await hold(); return store.schedule(row); },
    due: (...args) => store.due(...args),
    claimDue: (...args) => store.claimDue(...args),
    complete: (c) => store.complete(c),
    release: (c) => store.release(c),
    reschedule: async (c, next) => { await hold(); return store.reschedule(c, next); },
    exhaust: (c, exhaustion) => store.exhaust(c, exhaustion),
  };
  const service = (node, timers) => {
    const s = new TimerService({
      events: new MemoryEventStore(),
      timers,
      node,
      leaseMs: LEASE,
      policy: { maxAttempts: 2 },
      now: () => now,
      random: () => 0.5,
      onError,
    });
    s.registerRedriver(async () => 'contended');
    return s;
  };
  const a = service('node-a', stalled);
  const b = service('node-b', store);
  const tickA = a.pollOnce();
  await arrived;
  now = T0 + LEASE;
  const reportB = await b.pollOnce();
  assert.equal(reportB.rescheduled, 1, `node B moved the chain on: ${show(reportB)}`);
  open();
  const reportA = await tickA;
  const nextRows = (await allRows(store)).filter((row) => row.executionId === first.executionId);
  // Drain the chain with node B: every row left exhausts.
  now = T0 + 1_000_000;
  for (let n = 0; n < 4; n += 1) await b.pollOnce();
  assert.deepEqual(
    [nextRows.length, exhausted],
    [1, 1],
    `one next row and one exhaustion report; the rows after both fires: ${show(nextRows)}, exhaustion reported ${exhausted} time(s); node A: notHeld ${reportA.notHeld}, rescheduled ${reportA.rescheduled}`,
  );
  assert.equal(reportA.notHeld, 1, "node A's decision was void");
  assert.deepEqual(failures, [], 'no other failure');
  assert.deepEqual(await allRows(store), [], 'the chain is drained');
});

// ---------------------------------------------------------------------------
// lapsed.rs: a tick's claim whose lease ended before its fire is released,
// not fired.

kase('lapsed::a_claim_whose_lease_ended_is_released_not_fired', async (store) => {
  // A re-driver whose every call takes the whole lease: the tick's first
  // fire outlives the lease of the two claims behind it.
  const LEASE = 1_000;
  await scheduleAll(store, [redrive('a', 0, 0), redrive('b', 0, 0), redrive('c', 0, 0)]);
  let now = T0;
  const failures = [];
  const service = new TimerService({
    events: new MemoryEventStore(),
    timers: store,
    node: 'node-a',
    leaseMs: LEASE,
    now: () => now,
    random: () => 0.5,
    onError: (error, info) => failures.push([info.stage, error]),
  });
  service.registerRedriver(async () => {
    now += LEASE;
    return 'done';
  });
  const report = await service.pollOnce();
  assert.deepEqual(
    [report.claimed, report.redriven, report.lapsed, report.released],
    [3, 1, 2, 2],
    show(report),
  );
  assert.deepEqual(failures, []);
  const taken = await claim(store, lease('node-b', 1));
  assert.equal(taken.length, 2, 'the lapsed claims were handed back');
});

// ---------------------------------------------------------------------------
// bad_input.rs: every refusal is a typed TimerInputError and leaves the store
// as it was.

kase('bad_input::bad_rows_are_refused_and_change_nothing', async (store) => {
  await scheduleAll(store, [wake('p', 0)]);
  const before = await allRows(store);
  const cases = [
    [{ executionId: 'p', wakeAt: -1 }, 'INVALID_TIME'],
    [{ executionId: 'p', wakeAt: MAX_TIMER_MS + 1 }, 'INVALID_TIME'],
    [{ executionId: 'p', wakeAt: T0, redrive: { attempt: MAX_REDRIVE_ATTEMPT + 1 } }, 'INVALID_ATTEMPT'],
    [{ executionId: 'p', wakeAt: T0, redrive: { attempt: 2 ** 32 - 1 } }, 'INVALID_ATTEMPT'],
  ];
  for (const [row, code] of cases) {
    await assertTimerInput(store.schedule(row), code, `schedule(${show(row)})`);
  }
  assert.deepEqual(await allRows(store), before);
});

kase('bad_input::bad_listings_are_refused', async (store) => {
  await scheduleAll(store, [wake('p', 0)]);
  await assertTimerInput(store.due(-1, 10), 'INVALID_TIME', 'due(-1)');
  await assertTimerInput(store.due(2 ** 63, 10), 'INVALID_TIME', 'due(2^63)');
  for (const limit of [0, MAX_DUE_LIMIT + 1, 2 ** 64]) {
    await assertTimerInput(store.due(T0, limit), 'INVALID_LIMIT', `due(limit ${limit})`);
  }
});

kase('bad_input::bad_leases_are_refused_and_claim_nothing', async (store) => {
  await scheduleAll(store, [wake('p', 0)]);
  const withLease = (now, durationMs) => ({ holder: 'n1', now, durationMs });
  for (const [now, durationMs] of [[T0, 0], [T0, MAX_LEASE_MS + 1], [MAX_TIMER_MS - 10, 11]]) {
    await assertTimerInput(store.claimDue(withLease(now, durationMs), 10), 'INVALID_LEASE', `a lease of ${durationMs} ms at ${now}`);
  }
  await assertTimerInput(store.claimDue(withLease(-5, 1_000), 10), 'INVALID_TIME', 'a lease at -5');
  await assertTimerInput(store.claimDue(withLease(T0, 1_000), 0), 'INVALID_LIMIT', 'a claim of 0 rows');
  // The longest lease that ends exactly at 2^53-1 is accepted.
  const edge = await store.claimDue(withLease(MAX_TIMER_MS - 10, 10), 10);
  assert.equal(edge.length, 1);
  assert.equal(edge[0].expiresAt, MAX_TIMER_MS);
});

kase('bad_input::bad_claims_are_refused_and_change_nothing', async (store) => {
  await scheduleAll(store, [wake('p', 0)]);
  const held = await claimOnly(store, lease('owner', 0), wake('p', 0));
  const badTime = { ...held, row: { executionId: 'p', wakeAt: -1 } };
  const badAttempt = { ...held, row: redrive('p', 0, MAX_REDRIVE_ATTEMPT + 1) };
  for (const [bad, code] of [[badTime, 'INVALID_TIME'], [badAttempt, 'INVALID_ATTEMPT']]) {
    await assertTimerInput(store.complete(bad), code, `complete(${show(bad)})`);
    await assertTimerInput(store.release(bad), code, `release(${show(bad)})`);
  }
  assert.deepEqual(await allRows(store), [wake('p', 0)]);
  assert.equal(await store.complete(held), 'done');
});

kase('model::agrees_with_the_reference_table_call_for_call', async (store) => {
  // The reference is the package's MemoryTimerStore: the core's TimerTable.
  const table = new MemoryTimerStore();
  const seed = Number(process.env.TIMER_KIT_SEED ?? 0x5eed7153);
  console.log(`TIMER_KIT_SEED=${seed}`);
  const random = prng(seed);
  const below = (n) => Math.floor(random() * n);
  const pick = (items) => items[below(items.length)];
  const ids = ['a', 'B', 'é', 'a b', 'z'];
  const holders = ['n1', 'n2', 'n3'];
  const claims = [];
  for (let step = 0; step < 2_000; step += 1) {
    const filter = { redrive: below(3) !== 0 };
    const choice = below(6);
    if (choice <= 1) {
      const executionId = pick(ids);
      const wakeAt = below(6) * 10;
      const row = below(3) === 0 ? { executionId, wakeAt, redrive: { attempt: below(3) } } : { executionId, wakeAt };
      await table.schedule(row);
      await store.schedule(row);
    } else if (choice === 2) {
      const now = below(70);
      const limit = 1 + below(4);
      assert.deepEqual(await store.due(now, limit, filter), await table.due(now, limit, filter), `step ${step}: due(${now}, ${limit}, ${show(filter)})`);
    } else if (choice === 3) {
      const byLease = { holder: pick(holders), now: below(80), durationMs: 1 + below(30) };
      const limit = 1 + below(3);
      const expected = await table.claimDue(byLease, limit, filter);
      const got = await store.claimDue(byLease, limit, filter);
      assert.deepEqual(got, expected, `step ${step}: claimDue(${show(byLease)}, ${limit})`);
      claims.push(...got);
    } else if (claims.length > 0) {
      const held = claims[below(claims.length)];
      const how = ['complete', 'release', 'reschedule'][below(3)];
      if (how === 'reschedule') {
        // The next row: a later time of the same execution (sometimes a key
        // that exists), a plain or a re-drive row.
        const wakeAt = held.row.wakeAt + 10 * (1 + below(3));
        const attempt = below(3);
        const next = below(4) === 0 ? { executionId: held.row.executionId, wakeAt } : { executionId: held.row.executionId, wakeAt, redrive: { attempt } };
        assert.equal(await store.reschedule(held, next), await table.reschedule(held, next), `step ${step}: reschedule(${show(held)}, ${show(next)})`);
      } else {
        assert.equal(await store[how](held), await table[how](held), `step ${step}: ${how}(${show(held)})`);
      }
    }
  }
  assert.deepEqual(await allRows(store), await allRows(table), 'the final tables');
  assert.ok(claims.some((c) => c.number > 1), 'some row was claimed again (a lease taken over, or a release)');
});

// ---------------------------------------------------------------------------
// The JavaScript edge: values that are not rows, claims, leases, filters or
// numbers at all. The Rust kit's stores take typed values; a JavaScript store
// is handed anything, so these stay here.

kase('bad_input::values_that_are_not_rows_are_refused', async (store) => {
  await scheduleAll(store, [wake('p', 0)]);
  const before = await allRows(store);
  const cases = [
    [null, 'INVALID_ROW'],
    ['p', 'INVALID_ROW'],
    [[wake('p', 0)], 'INVALID_ROW'],
    [{ executionId: 'p', wakeAt: T0, extra: 1 }, 'INVALID_ROW'],
    [{ executionId: 'p', wakeat: T0 }, 'INVALID_ROW'],
    [{ executionId: 'p', wakeAt: T0, redrive: 1 }, 'INVALID_ROW'],
    [{ executionId: 'p', wakeAt: T0, redrive: { attempt: 0, at: 1 } }, 'INVALID_ROW'],
    [{ executionId: '', wakeAt: T0 }, 'INVALID_ID'],
    [{ executionId: 'nul\u0000', wakeAt: T0 }, 'INVALID_ID'],
    [{ executionId: 'x'.repeat(MAX_ID_BYTES + 1), wakeAt: T0 }, 'INVALID_ID'],
    [{ executionId: 7, wakeAt: T0 }, 'INVALID_ID'],
    [{ wakeAt: T0 }, 'INVALID_ID'],
    [{ executionId: 'p' }, 'INVALID_TIME'],
    [{ executionId: 'p', wakeAt: String(T0) }, 'INVALID_TIME'],
    [{ executionId: 'p', wakeAt: BigInt(T0) }, 'INVALID_TIME'],
    [{ executionId: 'p', wakeAt: T0 + 0.5 }, 'INVALID_TIME'],
    [{ executionId: 'p', wakeAt: NaN }, 'INVALID_TIME'],
    [{ executionId: 'p', wakeAt: Infinity }, 'INVALID_TIME'],
    [{ executionId: 'p', wakeAt: 2 ** 53 }, 'INVALID_TIME'],
    [{ executionId: 'p', wakeAt: T0, redrive: { attempt: -1 } }, 'INVALID_ATTEMPT'],
    [{ executionId: 'p', wakeAt: T0, redrive: { attempt: 0.5 } }, 'INVALID_ATTEMPT'],
    [{ executionId: 'p', wakeAt: T0, redrive: { attempt: '1' } }, 'INVALID_ATTEMPT'],
    [{ executionId: 'p', wakeAt: T0, redrive: {} }, 'INVALID_ATTEMPT'],
    [{ executionId: 'p', wakeAt: T0, redrive: { attempt: 2 ** 32 } }, 'INVALID_ATTEMPT'],
  ];
  for (const [row, code] of cases) {
    await assertTimerInput(store.schedule(row), code, `schedule(${show(row)})`);
  }
  assert.deepEqual(await allRows(store), before);
  // `redrive: undefined` or `null` is a plain wake, as leaving it out is.
  await scheduleAll(store, [{ executionId: 'u', wakeAt: T0, redrive: undefined }, { executionId: 'n', wakeAt: T0, redrive: null }]);
  assert.deepEqual(await allRows(store), [wake('n', 0), wake('p', 0), wake('u', 0)]);
});

kase('bad_input::bad_listing_arguments_are_refused', async (store) => {
  await scheduleAll(store, [wake('p', 0)]);
  for (const [now, limit, options, code] of [
    [undefined, 10, undefined, 'INVALID_TIME'],
    [String(T0), 10, undefined, 'INVALID_TIME'],
    [T0 + 0.5, 10, undefined, 'INVALID_TIME'],
    [T0, undefined, undefined, 'INVALID_LIMIT'],
    [T0, '10', undefined, 'INVALID_LIMIT'],
    [T0, 1.5, undefined, 'INVALID_LIMIT'],
    [T0, -1, undefined, 'INVALID_LIMIT'],
    [T0, 10, 'plain', 'INVALID_FILTER'],
    [T0, 10, { redrive: 'no' }, 'INVALID_FILTER'],
    [T0, 10, { redrive: 0 }, 'INVALID_FILTER'],
    [T0, 10, { redrives: false }, 'INVALID_FILTER'],
  ]) {
    const what = `(${show(now)}, ${show(limit)}, ${show(options)})`;
    await assertTimerInput(store.due(now, limit, options), code, `due${what}`);
    const byLease = { holder: 'n1', now, durationMs: LEASE_MS };
    await assertTimerInput(store.claimDue(byLease, limit, options), code, `claimDue${what}`);
  }
  assert.deepEqual(await store.due(T0, 10, null), [wake('p', 0)], 'null options: every due row');
  assert.deepEqual(await store.due(T0, 10, {}), [wake('p', 0)], 'empty options: every due row');
  assert.deepEqual(await allRows(store), [wake('p', 0)]);
  assert.equal((await claim(store, lease('n1', 0))).length, 1, 'nothing was claimed by the refused calls');
});

kase('bad_input::values_that_are_not_leases_are_refused_and_claim_nothing', async (store) => {
  await scheduleAll(store, [wake('p', 0)]);
  for (const [bad, code] of [
    [null, 'INVALID_LEASE'],
    ['n1', 'INVALID_LEASE'],
    [{ holder: 'n1', now: T0, durationMs: LEASE_MS, until: 1 }, 'INVALID_LEASE'],
    [{ holder: 'n1', now: T0 }, 'INVALID_LEASE'],
    [{ holder: 'n1', now: T0, durationMs: -1 }, 'INVALID_LEASE'],
    [{ holder: 'n1', now: T0, durationMs: 1.5 }, 'INVALID_LEASE'],
    [{ holder: 'n1', now: T0, durationMs: '30000' }, 'INVALID_LEASE'],
    [{ holder: '', now: T0, durationMs: LEASE_MS }, 'INVALID_HOLDER'],
    [{ holder: 'a\u0000b', now: T0, durationMs: LEASE_MS }, 'INVALID_HOLDER'],
    [{ holder: 'é'.repeat(128), now: T0, durationMs: LEASE_MS }, 'INVALID_HOLDER'],
    [{ holder: 1, now: T0, durationMs: LEASE_MS }, 'INVALID_HOLDER'],
    [{ now: T0, durationMs: LEASE_MS }, 'INVALID_HOLDER'],
    [{ holder: 'n1', durationMs: LEASE_MS }, 'INVALID_TIME'],
  ]) {
    await assertTimerInput(store.claimDue(bad, 10), code, `claimDue(${show(bad)})`);
  }
  await claimOnly(store, lease('n1', 0), wake('p', 0));
});

kase('bad_input::values_that_are_not_claims_are_refused_and_change_nothing', async (store) => {
  await scheduleAll(store, [wake('p', 0)]);
  const held = await claimOnly(store, lease('owner', 0), wake('p', 0));
  const { expiresAt: _, ...withoutExpiry } = held;
  for (const [bad, code] of [
    [null, 'INVALID_CLAIM'],
    [[held], 'INVALID_CLAIM'],
    [{ ...held, extra: true }, 'INVALID_CLAIM'],
    [{ ...held, number: -1 }, 'INVALID_CLAIM'],
    [{ ...held, number: 1.5 }, 'INVALID_CLAIM'],
    [{ ...held, number: '1' }, 'INVALID_CLAIM'],
    [{ ...held, row: undefined }, 'INVALID_ROW'],
    [{ ...held, row: { ...held.row, executionId: '' } }, 'INVALID_ID'],
    [{ ...held, holder: '' }, 'INVALID_HOLDER'],
    [{ ...held, holder: undefined }, 'INVALID_HOLDER'],
    [withoutExpiry, 'INVALID_TIME'],
    [{ ...held, expiresAt: 0.5 }, 'INVALID_TIME'],
  ]) {
    await assertTimerInput(store.complete(bad), code, `complete(${show(bad)})`);
    await assertTimerInput(store.release(bad), code, `release(${show(bad)})`);
  }
  assert.deepEqual(await claim(store, lease('third', 1)), [], 'the owner still holds the row');
  assert.equal(await store.complete(held), 'done');
  assert.deepEqual(await allRows(store), []);
});

// ---------------------------------------------------------------------------

/** The names of every case, in order (compared with the Rust kit's table). */
export const TIMER_CASE_NAMES = Object.freeze(CASES.map((c) => c.name));

/**
 * Registers every case of the timer kit under
 * `describe('timer-conformance[label]')`, each run against a fresh store
 * from `makeStore` (sync or async).
 */
export function timerConformance(label, makeStore) {
  describe(`timer-conformance[${label}]`, () => {
    for (const { name, run } of CASES) {
      test(name, async () => run(await makeStore()));
    }
  });
}
