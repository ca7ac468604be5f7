// Park/resume throughput: the package's MemoryEventStore (the Rust core's
// in-memory store, compiled to WebAssembly) against the plain-JavaScript store
// of the conformance kit (tests/conformance-js/plain-store.js). NOT a test.
//
// Usage (from the repository root):
//
//   cargo xtask npm                                  # builds wasm/npm/dist
//   (cd wasm/bench && npm install)                   # links the package
//   (cd tests/conformance-js && npm install)         # for the plain store's import
//   node wasm/bench/park-resume.js [--executions N] [--rounds R] [--concurrency C]
//
//   --executions N   executions per store per round (default 3000)
//   --rounds R       measured rounds (default 5); the table reports the median
//   --concurrency C  executions in flight at once (default 64)
//
// One execution is the workload of ADR 0118's "park/resume under
// fenceIfParkedAt" column, as a JavaScript host runs it:
//
//   append EXECUTION_STARTED; append EXECUTION_SUSPENDED (the park);
//   readRange + locatePark; resume(store, id, { fenceIfParkedAt, answer });
//   append STEP_COMPLETED and EXECUTION_COMPLETED under the token resume got.
//
// `resume` is the package's in both cases (the core's resume machine driving
// the store through its JavaScript methods), so the comparison is between the
// stores: the WebAssembly one pays for crossing the boundary and converting
// values on every call, the plain one for doing the same checks in JavaScript.
//
// The stores run interleaved round-robin in ONE process (round r runs both,
// starting with a different one each round), each round on a fresh store,
// after an unmeasured warm-up, so that JIT warm-up and machine noise fall on
// both alike. Every round is checked afterwards (each execution: five events,
// token 1), outside the timing. Prints a Markdown table.
//
// Each round's MemoryEventStore is released with free() once the round is
// checked. Without it the dropped stores stay in the WebAssembly memory until
// their FinalizationRegistry callbacks run, which this all-microtask loop never
// lets happen; and once that memory passes about 64 MB, every further
// memory.grow costs a full (mark-compact) GC in V8 (Node 20), so the figures
// would measure the leftovers of earlier rounds. A single round large enough
// to pass that size (about 13,000 executions of this workload) shows the same
// slowdown; that is the store's behaviour, not the benchmark's.

import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { MemoryEventStore, locatePark, resume } from 'loomfence';

import { PlainEventStore } from '../../tests/conformance-js/plain-store.js';

const { values: args } = parseArgs({
  options: {
    executions: { type: 'string', default: '3000' },
    rounds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '64' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  console.log('node wasm/bench/park-resume.js [--executions N] [--rounds R] [--concurrency C]');
  process.exit(0);
}
const positive = (name) => {
  const n = Number(args[name]);
  if (!Number.isSafeInteger(n) || n < 1) {
    console.error(`--${name} must be a positive integer, got ${args[name]}`);
    process.exit(2);
  }
  return n;
};
const EXECUTIONS = positive('executions');
const ROUNDS = positive('rounds');
const CONCURRENCY = positive('concurrency');
const AT = 1_700_000_000_000;

const STORES = [
  { name: 'MemoryEventStore (WebAssembly)', make: () => new MemoryEventStore() },
  { name: 'PlainEventStore (plain JavaScript)', make: () => new PlainEventStore() },
];

/** One execution, start to finish. */
async function parkAndResume(store, id) {
  await store.append(id, { kind: 'EXECUTION_STARTED', payload: { input: { n: id.length } }, at: AT });
  await store.append(id, {
    kind: 'EXECUTION_SUSPENDED',
    payload: { waits: [{ kind: 'TIMER', wakeAt: AT + 1000 }] },
    at: AT + 1,
  });
  const park = locatePark(await store.readRange(id));
  const { fence } = await resume(store, id, { fenceIfParkedAt: park.sequence, answer: { fired: true }, at: AT + 1000 });
  await store.append(id, { kind: 'STEP_COMPLETED', payload: { step: 'after-wake' }, metadata: { fence }, at: AT + 1001 });
  await store.append(id, { kind: 'EXECUTION_COMPLETED', payload: { output: { ok: true } }, metadata: { fence }, at: AT + 1002 });
}

/** Runs `count` executions, `CONCURRENCY` at a time; resolves to the seconds taken. */
async function run(store, prefix, count) {
  let next = 0;
  const worker = async () => {
    while (next < count) await parkAndResume(store, `${prefix}-${next++}`);
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, count) }, worker));
  return (performance.now() - started) / 1000;
}

/** Every execution of a round ended as it should. */
async function check(store, prefix, count) {
  for (let n = 0; n < count; n++) {
    const id = `${prefix}-${n}`;
    const log = await store.readRange(id);
    const kinds = log.map((e) => e.kind).join(',');
    const expected = 'EXECUTION_STARTED,EXECUTION_SUSPENDED,EXECUTION_RESUMED,STEP_COMPLETED,EXECUTION_COMPLETED';
    if (kinds !== expected || (await store.currentFence(id)) !== 1) {
      throw new Error(`${id}: unexpected log ${kinds} / token ${await store.currentFence(id)}`);
    }
  }
}

const median = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const fmt = (n) => Math.round(n).toLocaleString('en-US');

// Warm-up, unmeasured.
for (const { make } of STORES) {
  const store = make();
  await run(store, 'warm', Math.min(EXECUTIONS, 1000));
  store.free?.();
}

const rates = STORES.map(() => []);
for (let round = 0; round < ROUNDS; round++) {
  const order = STORES.map((_, i) => (i + round) % STORES.length);
  for (const i of order) {
    const store = STORES[i].make();
    const seconds = await run(store, `r${round}`, EXECUTIONS);
    await check(store, `r${round}`, EXECUTIONS);
    store.free?.();
    rates[i].push(EXECUTIONS / seconds);
  }
}

const medians = rates.map(median);
const roundHeaders = rates[0].map((_, r) => `round ${r + 1}`);
console.log(
  `## park/resume under fenceIfParkedAt, executions/s\n\n` +
    `${EXECUTIONS} executions per store per round, ${CONCURRENCY} in flight, ${ROUNDS} rounds interleaved round-robin; ` +
    `Node ${process.version}, ${process.platform}/${process.arch}.\n`,
);
console.log(`| store | median | ${roundHeaders.join(' | ')} |`);
console.log(`| --- | ---: | ${roundHeaders.map(() => '---:').join(' | ')} |`);
STORES.forEach(({ name }, i) => {
  console.log(`| ${name} | **${fmt(medians[i])}** | ${rates[i].map(fmt).join(' | ')} |`);
});
const perRound = rates[0].map((rate, r) => (rate / rates[1][r]).toFixed(2));
console.log(`| ratio memory / plain | **${(medians[0] / medians[1]).toFixed(2)}** | ${perRound.join(' | ')} |`);
