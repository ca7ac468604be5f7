// Concurrent resumes on one store, as a JavaScript host produces them: two
// `resume` calls started together (Promise.all), many rounds, with appends and
// reads in flight at the same time. Run on the package's MemoryEventStore and
// on the plain-JavaScript store, each also behind `yielding` (every store call
// waits a turn of the event loop first, so the calls interleave at every step)
// and behind `jittery` (a seeded random 0-3 turns before every call, so the
// interleaving differs from round to round), and on the plain store's weaker
// capabilities.
//
// What must hold, every round:
// - exactly one EXECUTION_RESUMED is recorded;
// - the other resumer rejects with ResumeRefusedError (not-suspended), having
//   perhaps been told "stale" and retried first; or, when the two kept fencing
//   each other out, with ResumeContendedError (retryable) after its three
//   attempts, and its retry is then refused;
// - on a conditional store, the winner's body is never fenced out: its appends
//   under its token all land (the kernel's whole point); and on the same race
//   without the conditional acquire (fencing-only), some winner IS fenced out,
//   which shows the check bites;
// - the log stays contiguous, every read is a prefix of the final log, and no
//   error mentioning "recursive use of an object" (a wasm-bindgen borrow
//   error) ever reaches the caller.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryEventStore, ResumeContendedError, ResumeRefusedError, resume } from 'loomfence';

import { PlainEventStore, withCapability } from './plain-store.js';
import { AT, event, fenced, jittery, park, resumesOf, sequences, show, yielding } from './support.js';

const ROUNDS = 200;
// The jittery stores' seed: a fresh one per run, printed; set SIM_SEED to
// replay a failing run (the same variable as the Rust simulation's).
const SEED = process.env.SIM_SEED ? Number(process.env.SIM_SEED) : Math.floor(Math.random() * 2 ** 32);
console.log(`concurrency.test.js: SIM_SEED=${SEED}`);
const MIXED_ROUNDS = 100;
const BODY_STEPS = 3;

const STORES = [
  { label: 'memory', make: () => new MemoryEventStore(), conditional: true },
  { label: 'memory, yielding', make: () => yielding(new MemoryEventStore()), conditional: true },
  { label: 'plain', make: () => new PlainEventStore(), conditional: true },
  { label: 'plain, yielding', make: () => yielding(new PlainEventStore()), conditional: true },
  { label: 'memory, jittery', make: () => jittery(new MemoryEventStore(), SEED), conditional: true },
  { label: 'plain, jittery', make: () => jittery(new PlainEventStore(), SEED), conditional: true },
  // Without the conditional acquire a landed resume CAN be fenced out by a
  // rival's unconditional acquire (the design's documented residual), so the
  // body check is left out; at most one resume still holds.
  { label: 'plain fencing-only, jittery', make: () => jittery(withCapability(new PlainEventStore(), 'fencing-only'), SEED), conditional: false, negativeControl: true },
  { label: 'plain non-fencing, jittery', make: () => jittery(withCapability(new PlainEventStore(), 'non-fencing'), SEED), conditional: false, tokenless: true },
];

/** Fails on any settled result whose error is a wasm-bindgen borrow error. */
function assertNoRecursiveUse(results, where) {
  for (const r of results) {
    const message = r.status === 'rejected' ? String(r.reason?.message ?? r.reason) : '';
    assert.ok(!message.includes('recursive use of an object'), `${where}: a borrow error reached the caller: ${message}`);
  }
}

/** Checks the error of a resumer that lost: ResumeRefusedError
 * (not-suspended), or ResumeContendedError (retryable) whose retry is then
 * refused because the park was answered meanwhile. Counts which in `tally`. */
async function assertLost(store, id, parkSeq, error, where, tally = {}) {
  if (error instanceof ResumeContendedError) {
    assert.deepEqual(
      { retryable: error.retryable, executionId: error.executionId, attempts: error.attempts },
      { retryable: true, executionId: id, attempts: 3 },
      where,
    );
    await assert.rejects(resume(store, id, { fenceIfParkedAt: parkSeq, answer: 'retry', at: AT }), ResumeRefusedError, `${where}: the contended loser's retry`);
    tally.contendedThenRefused = (tally.contendedThenRefused ?? 0) + 1;
    return;
  }
  assert.ok(error instanceof ResumeRefusedError, `${where}: the loser must be refused or contended, got ${error?.name}: ${error?.message}`);
  assert.deepEqual(
    { reason: error.reason, executionId: error.executionId, parkSeq: error.parkSeq },
    { reason: 'not-suspended', executionId: id, parkSeq },
    where,
  );
  tally.refused = (tally.refused ?? 0) + 1;
}

/** Resumes the park and, if that lands, runs a body of BODY_STEPS appends
 * under the token it got. Resolves to { resumed, steps } or rejects with the
 * resume's error; a body append that is refused rejects too (fenced out). */
async function resumeAndRun(store, id, parkSeq, answer) {
  const resumed = await resume(store, id, { fenceIfParkedAt: parkSeq, answer, at: AT });
  const steps = [];
  for (let n = 0; n < BODY_STEPS; n++) {
    const step = event('STEP_COMPLETED', { payload: { by: answer, n } });
    try {
      steps.push(await store.append(id, resumed.fence === null ? step : fenced(step, resumed.fence)));
    } catch (error) {
      error.message = `the body of resumer ${answer} was fenced out after its resume landed: ${error.message}`;
      error.fencedOut = true;
      throw error;
    }
  }
  return { resumed, steps };
}

for (const { label, make, conditional, tokenless, negativeControl } of STORES) {
  describe(`concurrent resumes [${label}]`, () => {
    test(`two resumes started together, ${ROUNDS} rounds: exactly one lands, the other is refused`, async (t) => {
      const store = make();
      const tally = { A: 0, B: 0, retriedThenRefused: 0, fencedOutBodies: 0, refused: 0, contendedThenRefused: 0 };
      for (let round = 0; round < ROUNDS; round++) {
        const id = `pair-${round}`;
        const parkSeq = await park(store, id);
        const results = await Promise.allSettled([
          resumeAndRun(store, id, parkSeq, 'A'),
          resumeAndRun(store, id, parkSeq, 'B'),
        ]);
        assertNoRecursiveUse(results, `round ${round}`);
        const resumes = await resumesOf(store, id);
        assert.equal(resumes.length, 1, `round ${round}: ${resumes.length} EXECUTION_RESUMED recorded`);
        const winnerIndex = resumes[0].payload.answer === 'A' ? 0 : 1;
        const [winner, loser] = [results[winnerIndex], results[1 - winnerIndex]];
        tally[resumes[0].payload.answer]++;

        // The loser never resumed. It is refused (not-suspended), possibly
        // after a stale answer and a retry; or, when the two kept fencing each
        // other out (each acquire refuses the other's pending append), it ran
        // out of its three attempts first: ResumeContendedError, retryable,
        // and its retry is then refused, as the supervisor's re-drive is.
        assert.equal(loser.status, 'rejected', `round ${round}: both resumers resolved`);
        await assertLost(store, id, parkSeq, loser.reason, `round ${round}`, tally);

        if (winner.status === 'rejected') {
          // Only the documented residual of a store without acquireFenceIf.
          assert.ok(!conditional && winner.reason?.fencedOut, `round ${round}: the winner failed: ${winner.reason?.message}`);
          tally.fencedOutBodies++;
          continue;
        }
        const { resumed, steps } = winner.value;
        if (resumed.attempts > 1) tally.retriedThenRefused++;
        assert.deepEqual(resumes[0], resumed.resumed, `round ${round}: the recorded resume is the winner's`);
        if (conditional) {
          assert.equal(resumed.fence, await store.currentFence(id), `round ${round}: the winner holds the current token`);
        }
        if (tokenless) assert.equal(resumed.fence, null);
        assert.deepEqual(sequences(steps), [resumed.head + 1, resumed.head + 2, resumed.head + 3]);
        const log = await store.readRange(id);
        assert.deepEqual(sequences(log), log.map((_, i) => i + 1), `round ${round}: the log is contiguous`);
      }
      t.diagnostic(
        `A won ${tally.A}, B won ${tally.B}; the winner retried after a stale answer in ${tally.retriedThenRefused}; ` +
          `the loser was refused in ${tally.refused}, contended then refused on retry in ${tally.contendedThenRefused}; ` +
          `the winner's body was fenced out in ${tally.fencedOutBodies}`,
      );
      assert.equal(tally.A + tally.B, ROUNDS);
      if (conditional) assert.equal(tally.fencedOutBodies, 0, 'a landed resume is never fenced out on a conditional store');
      if (negativeControl) {
        // The same race without the conditional acquire must show the harm
        // it prevents, or this test could not tell the two apart.
        assert.ok(tally.fencedOutBodies > 0, `negative control: no winner was fenced out in ${ROUNDS} rounds without acquireFenceIf`);
      }
    });

    test(`resumes interleaved with appends and reads, ${MIXED_ROUNDS} rounds`, async () => {
      const store = make();
      for (let round = 0; round < MIXED_ROUNDS; round++) {
        const id = `mixed-${round}`;
        const parkSeq = await park(store, id);
        const operations = [
          resume(store, id, { fenceIfParkedAt: parkSeq, answer: 'A', at: AT }),
          store.append(id, event('EXECUTION_DENIED', { payload: { round } })),
          store.readRange(id),
          resume(store, id, { fenceIfParkedAt: parkSeq, answer: 'B', at: AT }),
          store.appendMany(id, [event('app.a'), event('app.b')]),
          store.readRange(id, parkSeq),
          store.currentFence(id),
          store.append(id, event('app.output', { payload: { round } })),
          resume(store, id, { fenceIfParkedAt: parkSeq, answer: 'C', at: AT }),
          store.readRange(id, 1, parkSeq + 2),
        ];
        const results = await Promise.allSettled(operations);
        assertNoRecursiveUse(results, `round ${round}`);
        const [a, denial, read1, b, batch, read2, fence, output, c, read3] = results;

        // Unfenced audit and application appends always land.
        for (const r of [denial, batch, output, read1, read2, read3, fence]) {
          assert.equal(r.status, 'fulfilled', `round ${round}: ${show(r.reason?.message)}`);
        }
        const resumers = [a, b, c];
        const landed = resumers.filter((r) => r.status === 'fulfilled');
        assert.equal(landed.length, 1, `round ${round}: ${landed.length} resumes landed`);
        for (const r of resumers.filter((x) => x.status === 'rejected')) {
          await assertLost(store, id, parkSeq, r.reason, `round ${round}`);
        }

        const log = await store.readRange(id);
        assert.equal(log.length, parkSeq + 1 + 1 + 2 + 1, `round ${round}: park, one resume, four audit/app events`);
        assert.deepEqual(sequences(log), log.map((_, i) => i + 1), `round ${round}: the log is contiguous`);
        assert.deepEqual((await resumesOf(store, id)).map((e) => e.payload.answer), [landed[0].value.resumed.payload.answer]);
        assert.deepEqual(log[landed[0].value.resumed.sequence - 1], landed[0].value.resumed);
        for (const envelope of [denial.value, ...batch.value, output.value]) {
          assert.deepEqual(log[envelope.sequence - 1], envelope, `round ${round}: a handed-back envelope is in the log`);
        }
        for (const read of [read1.value, read3.value]) {
          assert.deepEqual(read, log.slice(0, read.length), `round ${round}: a read is a prefix of the final log`);
        }
        assert.deepEqual(read2.value, log.slice(parkSeq - 1, parkSeq - 1 + read2.value.length));
        // On a conditional store the winner's body goes on under its token.
        const { fence: token, head } = landed[0].value;
        if (conditional || tokenless) {
          const step = await store.append(id, token === null ? event('STEP_STARTED') : fenced(event('STEP_STARTED'), token));
          assert.ok(step.sequence > head);
        }
      }
    });

    test('two resumers on each of 50 executions, all at once: one resume per execution', async () => {
      const store = make();
      const ids = Array.from({ length: 50 }, (_, n) => `many-${n}`);
      const parks = await Promise.all(ids.map((id) => park(store, id)));
      const results = await Promise.allSettled(
        ids.flatMap((id, n) => ['A', 'B'].map((answer) => resume(store, id, { fenceIfParkedAt: parks[n], answer, at: AT }))),
      );
      assertNoRecursiveUse(results, 'many executions');
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, ids.length);
      for (const [n, r] of results.entries()) {
        const id = ids[Math.floor(n / 2)];
        if (r.status === 'rejected') await assertLost(store, id, parks[Math.floor(n / 2)], r.reason, id);
      }
      for (const id of ids) assert.equal((await resumesOf(store, id)).length, 1, id);
    });
  });
}

describe('memory and plain agree', () => {
  test('under the same jitter, both stores give the same outcomes and the same logs, round for round', async () => {
    // Same seed, same calls: the two stores see the same interleaving, so any
    // difference in what they answer is a difference in semantics.
    const run = async (store) => {
      const transcript = [];
      for (let round = 0; round < ROUNDS; round++) {
        const id = `agree-${round}`;
        const parkSeq = await park(store, id);
        const results = await Promise.allSettled([
          resumeAndRun(store, id, parkSeq, 'A'),
          store.append(id, event('EXECUTION_DENIED')),
          resumeAndRun(store, id, parkSeq, 'B'),
        ]);
        transcript.push({
          results: results.map((r) => (r.status === 'fulfilled' ? r.value : { error: r.reason?.name, message: r.reason?.message })),
          log: await store.readRange(id),
          fence: await store.currentFence(id),
        });
      }
      return transcript;
    };
    const memory = await run(jittery(new MemoryEventStore(), SEED + 1));
    const plain = await run(jittery(new PlainEventStore(), SEED + 1));
    for (let round = 0; round < ROUNDS; round++) {
      assert.deepEqual(plain[round], memory[round], `round ${round}`);
    }
  });
});
