// The property suite over every export of the package: each
// function, constructor, method and getter of the table (exports-table.js),
// each argument position (nested ones too) replaced by a hostile value
// (hostile.js). For every call:
// - a promise-returning call never throws synchronously;
// - it refuses with one of the package's documented errors (its classes, or
//   a TypeError / RangeError with a `code`), never with what the caller's
//   object threw (that may be `cause`), never a WebAssembly trap, "recursive
//   use of an object" or a "borrowed" error; or it succeeds, for a value
//   that is legitimately acceptable;
// - after a refusal, everything the context's instances expose is unchanged.
// 10,000 such calls a run, then a normal park/resume, a timer fire and a
// supervision on the SAME instances, and a park/resume on a fresh store.
// Host-store replies are in replies.test.js. The seed is printed; SIM_SEED
// replays a run.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import * as resumeEntry from 'loomfence';
import * as servicesEntry from 'loomfence/services';
import { MemoryEventStore, locatePark, resume } from 'loomfence';
import { FireMachine } from 'loomfence/services';

import { INTERNAL, TABLE, calls, setup, snapshot } from './exports-table.js';
import { build, hostile } from './hostile.js';
import { assertDocumented, assertLikeError, outcomeOf } from './refusals.js';
import { AT, event } from './support.js';

/** Every export of the package: the resume entry's and the services'. */
const pkg = { ...resumeEntry, ...servicesEntry };

const SEED = process.env.SIM_SEED ? Number(process.env.SIM_SEED) : Math.floor(Math.random() * 2 ** 31);
console.log(`props.test.js: SIM_SEED=${SEED} (replay: cd tests/conformance-js && SIM_SEED=${SEED} node --test props.test.js)`);

/** Hostile calls per run. */
const RUNS = 10_000;

describe('the table of exports is complete', () => {
  test('every export of the Node entries is in the table, and nothing else', () => {
    assert.deepEqual(Object.keys(TABLE).sort(), Object.keys(pkg).sort());
  });

  test('the two entries export no name in common', () => {
    const shared = Object.keys(resumeEntry).filter((name) => name in servicesEntry);
    assert.deepEqual(shared, []);
  });

  test('every method and getter of every class is in the table', () => {
    for (const [name, entry] of Object.entries(TABLE)) {
      if (entry.kind !== 'class') continue;
      const own = Object.getOwnPropertyNames(pkg[name].prototype).filter((key) => !INTERNAL.has(key));
      assert.deepEqual(Object.keys(entry.methods).sort(), own.sort(), `${name}'s methods`);
    }
  });

  test('each browser entry and its types export the same names as its Node entry', () => {
    for (const [node, browserFile, typesFile] of [
      [resumeEntry, 'browser.js', 'index.d.ts'],
      [servicesEntry, 'services-browser.js', 'services.d.ts'],
    ]) {
      const browser = readFileSync(new URL(`node_modules/loomfence/${browserFile}`, import.meta.url), 'utf8');
      const exported = [...browser.matchAll(/^export (?:const (\w+)|\{ (\w+) \})/gm)].map((m) => m[1] ?? m[2]);
      assert.deepEqual(exported.sort(), Object.keys(node).sort(), browserFile);
      const types = readFileSync(new URL(`node_modules/loomfence/${typesFile}`, import.meta.url), 'utf8');
      for (const name of Object.keys(node)) {
        assert.match(types, new RegExp(`^export (?:declare )?(?:class|function|const) ${name}\\b`, 'm'), `${typesFile} declares ${name}`);
      }
    }
  });
});

/** After a call that succeeded: re-park 'e' if it was answered, and a new
 * fire machine if the old one moved on, so later calls still reach them. */
async function restore(ctx) {
  if (locatePark(await ctx.events.readRange('e')) === undefined) {
    const fence = await ctx.events.currentFence('e');
    const park = fence === 0 ? event('EXECUTION_SUSPENDED') : event('EXECUTION_SUSPENDED', { metadata: { fence } });
    ctx.parkSeq = (await ctx.events.append('e', park)).sequence;
  }
  if (ctx.fire.poll().act !== 'readLog') ctx.fire = new FireMachine({ executionId: 'e', wakeAt: AT }, { now: AT, random: 0.5 });
}

/** A normal park/resume on `store`, under a new id. */
async function parkResume(store, id) {
  const [, parked] = await store.appendMany(id, [event('EXECUTION_STARTED'), event('EXECUTION_SUSPENDED', { payload: { waits: [{ kind: 'TIMER', wakeAt: AT }] } })]);
  const resumed = await resume(store, id, { fenceIfParkedAt: parked.sequence, answer: { ok: true }, at: AT });
  assert.equal(resumed.head, parked.sequence + 1, `${id}: the resume lands after the park`);
  assert.deepEqual(resumed.resumed.payload, { answer: { ok: true } });
  return parked;
}

describe(`every export under hostile input (seed ${SEED})`, () => {
  test(`${RUNS} hostile calls refuse with a documented error and change nothing; then the same instances park, resume, fire and supervise`, async () => {
    const ctx = await setup();
    const table = calls();
    let before = await snapshot(ctx);
    const tally = { refused: 0, succeeded: 0, errorClasses: 0 };
    await fc.assert(
      fc.asyncProperty(fc.noBias(fc.nat({ max: table.length - 1 })), hostile, async (index, description) => {
        const entry = table[index];
        const value = build(description, entry.base?.(ctx));
        const outcome = await outcomeOf(entry, () => entry.call(ctx, value));
        if (entry.error) {
          tally.errorClasses++;
          assertLikeError(entry, value, outcome);
        } else if ('error' in outcome) {
          tally.refused++;
          assertDocumented(outcome.error, entry);
          assert.deepEqual(await snapshot(ctx), before, `${entry.name}: refused, but the state changed`);
        } else {
          tally.succeeded++;
          await restore(ctx);
          before = await snapshot(ctx);
        }
      }),
      { seed: SEED, numRuns: RUNS, includeErrorInReport: true },
    );
    const made = tally.refused + tally.succeeded + tally.errorClasses;
    console.log(`props.test.js: ${made} hostile calls over ${table.length} positions: ${tally.refused} refused, ${tally.succeeded} accepted, ${tally.errorClasses} error classes built`);
    assert.ok(made >= RUNS, `only ${made} hostile calls were made`);

    // The same instances still work: a park/resume, a timer fire, a supervision.
    await parkResume(ctx.events, 'final');
    const [, parked] = await ctx.events.appendMany('timed', [event('EXECUTION_STARTED'), event('EXECUTION_SUSPENDED', { payload: { waits: [{ kind: 'TIMER', wakeAt: 1 }] } })]);
    await ctx.timers.schedule({ executionId: 'timed', wakeAt: 1 });
    ctx.clock = AT + 10;
    const report = await ctx.service.pollOnce();
    const fire = report.fires.find((f) => f.row.executionId === 'timed');
    assert.equal(fire?.result, 'fired', `the timer fires on the same service: ${JSON.stringify(report.fires)}`);
    assert.equal((await ctx.events.readRange('timed')).at(-1).kind, 'EXECUTION_RESUMED');
    assert.equal((await ctx.events.readRange('timed')).length, parked.sequence + 1);
    await ctx.events.append('c', event('EXECUTION_COMPLETED'));
    const supervised = await ctx.supervisor.watch('p');
    assert.equal(supervised.outcome, 'resumed', 'the supervisor resumes the parent whose child ended');
    // And a fresh instance.
    await parkResume(new MemoryEventStore(), 'fresh');
  });
});
