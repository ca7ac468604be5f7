// The unreadable-row cases of the timer service, for JavaScript host timer
// stores: the JavaScript twin of tests/conformance/src/timers/unreadable.rs,
// written ONCE and run against any store with the TimerStore interface:
//
//   import { unreadableConformance } from './unreadable-kit.js';
//   unreadableConformance('memory', () => new MemoryTimerStore());
//
// A host store that holds a row it cannot read answers it beside its claims,
// `claimDue` resolving to `{ claims, unreadable }`; a claim element that is
// malformed is read the same way by the service. Either way the well-formed
// claims fire, and each unreadable row is reported to onError once per node
// (an UnreadableTimerRowError, stage 'unreadable') and counted in the poll
// report's `unreadable`, never in `errors` or `failed`.
//
// The kit wraps the store's `claimDue` to put the unreadable rows and the
// malformed elements in its answer: the package's MemoryTimerStore cannot
// hold an unreadable row (it is the core's typed table). `SIM_SEED=<n>`
// replays the property's generated answers.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { MemoryEventStore } from 'loomfence';
import { TimerService, UnreadableTimerRowError } from 'loomfence/services';

import { event, wrapTimers } from './support.js';
import { LEASE_MS, T0 } from './timer-kit.js';

const SEED = process.env.SIM_SEED ? Number(process.env.SIM_SEED) : Math.floor(Math.random() * 2 ** 31);
console.log(`unreadable-kit.js: SIM_SEED=${SEED}`);

/** An UnreadableRow as a host store answers it. */
function unreadableRow(executionId, wakeAt, field, detail) {
  return { executionId, wakeAt, field, detail };
}

/** Starts `id` and parks it on one timer at T0. */
async function parkOnTimer(events, id) {
  await events.appendMany(id, [event('EXECUTION_STARTED'), event('EXECUTION_SUSPENDED', { payload: { waits: [{ kind: 'TIMER', wakeAt: T0 }] } })]);
}

/** `ids` parked on a timer at T0, each with its row in `timers`. */
async function sleepers(events, timers, ids) {
  for (const id of ids) {
    await parkOnTimer(events, id);
    await timers.schedule({ executionId: id, wakeAt: T0 });
  }
}

/** A view of `inner` whose `claimDue` answer is rewritten by `answer(claims)`. */
function rewriting(inner, answer) {
  return wrapTimers(inner, { claimDue: async (...args) => answer(await inner.claimDue(...args)) });
}

/** A service at T0 over `events` and `timers`, its onError into `seen`. */
function service(events, timers, node, seen) {
  return new TimerService({ events, timers, node, now: () => T0, random: () => 0.5, onError: (error, info) => seen.push({ error, info }) });
}

/** Whether `id` was resumed, exactly once. */
async function resumedOnce(events, id) {
  const resumes = (await events.readRange(id)).filter((e) => e.kind === 'EXECUTION_RESUMED');
  return resumes.length === 1;
}

/** Checks that every report in `seen` is one unreadable row, reported as such. */
function assertUnreadableReports(seen) {
  for (const { error, info } of seen) {
    assert.ok(error instanceof UnreadableTimerRowError, `reported ${error}`);
    assert.ok(error instanceof Error, 'a real Error');
    assert.equal(error.code, 'UNREADABLE_TIMER_ROW');
    assert.equal(info.stage, 'unreadable');
    assert.deepEqual(info.row, error.row, 'onError is told the row');
  }
}

/** The cases, by name. */
export const UNREADABLE_CASE_NAMES = [
  'unreadable::a_store_answering_claims_and_unreadable_rows_fires_the_claims_and_reports_each_row_once',
  'unreadable::malformed_claim_elements_are_skipped_and_reported_while_the_rest_fire',
  'unreadable::any_hostile_elements_beside_real_claims_never_stop_them',
];

/** Registers the unreadable-row cases against stores from `makeTimers`. */
export function unreadableConformance(label, makeTimers) {
  describe(`${label}: unreadable timer rows`, () => {
    test(UNREADABLE_CASE_NAMES[0], async () => {
      const events = new MemoryEventStore();
      const inner = makeTimers();
      await sleepers(events, inner, ['a', 'b']);
      const poison = unreadableRow('poison', T0, 'redrive', 'is not a re-drive flag {"attempt": n}: not a JSON object');
      const timers = rewriting(inner, (claims) => ({ claims, unreadable: [poison] }));
      const seen = [];
      const node = service(events, timers, 'n1', seen);

      const first = await node.pollOnce();
      assert.equal(first.fired, 2, 'both readable rows fired');
      assert.equal(first.unreadable, 1, 'the unreadable row counted');
      assert.equal(first.errors, 0, 'an unreadable row is not an error of the tick');
      assert.equal(seen.length, 1, 'reported once');
      assertUnreadableReports(seen);
      assert.deepEqual(seen[0].error.row, poison, 'named as the store named it');
      assert.match(seen[0].error.message, /poison/);
      assert.ok(await resumedOnce(events, 'a'));
      assert.ok(await resumedOnce(events, 'b'));

      // The store keeps answering it: this node has reported it already.
      const second = await node.pollOnce();
      assert.equal(second.unreadable, 0);
      assert.equal(seen.length, 1, 'not reported again by the same node');

      // Another node reports it once too.
      const other = [];
      assert.equal((await service(events, timers, 'n2', other).pollOnce()).unreadable, 1);
      assert.equal(other.length, 1);
    });

    test(UNREADABLE_CASE_NAMES[1], async () => {
      const events = new MemoryEventStore();
      const inner = makeTimers();
      await sleepers(events, inner, ['a', 'b']);
      const held = { holder: 'n1', number: 1, expiresAt: T0 + LEASE_MS };
      const malformed = [
        null,
        { ...held, row: { executionId: '', wakeAt: T0 } },
        { ...held, row: { executionId: 'late', wakeAt: 'soon' } },
        { ...held, row: { executionId: 'chain', wakeAt: T0, redrive: { attempt: -1 } } },
        { ...held, holder: 5, row: { executionId: 'holder', wakeAt: T0 } },
        42,
      ];
      const timers = rewriting(inner, ([a, b]) => [malformed[0], a, ...malformed.slice(1, 4), b, ...malformed.slice(4)]);
      const seen = [];
      const node = service(events, timers, 'n1', seen);

      const report = await node.pollOnce();
      assert.equal(report.fired, 2, 'the well-formed claims fired');
      assert.equal(report.errors, 0);
      assert.ok(await resumedOnce(events, 'a'));
      assert.ok(await resumedOnce(events, 'b'));
      assertUnreadableReports(seen);
      // null and 42 name no row: one key ('', no time), reported once.
      const rows = seen.map(({ error }) => ({ executionId: error.row.executionId, wakeAt: error.row.wakeAt, field: error.row.field }));
      assert.deepEqual(rows, [
        { executionId: '', wakeAt: null, field: 'claim' },
        { executionId: '', wakeAt: T0, field: 'executionId' },
        { executionId: 'late', wakeAt: null, field: 'wakeAt' },
        { executionId: 'chain', wakeAt: T0, field: 'redrive' },
        { executionId: 'holder', wakeAt: T0, field: 'claim' },
      ]);
      assert.equal(report.unreadable, rows.length);
      for (const { error } of seen) assert.ok(error.row.detail.length > 0, 'says what was wrong');
      assert.equal((await node.pollOnce()).unreadable, 0, 'each reported once');
    });

    test(UNREADABLE_CASE_NAMES[2], async () => {
      const hostile = fc.anything({ withBigInt: true, withNullPrototype: true, withMap: true, withSet: true, withTypedArray: true });
      const property = fc.asyncProperty(fc.array(hostile, { maxLength: 8 }), fc.integer({ min: 1, max: 4 }), async (elements, readable) => {
        const events = new MemoryEventStore();
        const inner = makeTimers();
        const ids = Array.from({ length: readable }, (_, n) => `e${n}`);
        await sleepers(events, inner, ids);
        // The hostile elements interleaved with the real claims.
        const timers = rewriting(inner, (claims) => {
          const answer = [...elements];
          claims.forEach((claim, n) => answer.splice((n * 3) % (answer.length + 1), 0, claim));
          return answer;
        });
        const seen = [];
        const node = service(events, timers, 'n1', seen);
        const report = await node.pollOnce();
        assert.equal(report.fired, readable, 'every real claim fired');
        assert.equal(report.errors, 0, `nothing failed: ${seen.map((s) => s.error).join('; ')}`);
        assertUnreadableReports(seen);
        assert.equal(report.unreadable, seen.length);
        assert.ok(report.unreadable <= elements.length, 'at most one report per element');
        if (elements.length > 0) assert.ok(report.unreadable >= 1, 'a hostile element is reported');
        for (const id of ids) assert.ok(await resumedOnce(events, id), `${id} resumed once`);
        // Still usable: a new row fires on the next tick, nothing reported again.
        await sleepers(events, inner, ['later']);
        const next = await node.pollOnce();
        assert.equal(next.fired, 1);
        assert.equal(next.unreadable, 0);
      });
      await fc.assert(property, { seed: SEED, numRuns: 60 });
    });
  });
}
