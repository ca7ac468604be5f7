// Park/resume throughput of the npm package against what a JavaScript host
// would otherwise write for itself. NOT a test. Three columns:
//
//   1. the package: its MemoryEventStore (the Rust core's in-memory store,
//      compiled to WebAssembly) driven by its `resume` and `locatePark`;
//   2. the package's `resume` and `locatePark` over the plain-JavaScript store
//      of the conformance kit (tests/conformance-js/plain-store.js), which
//      checks its input as the package does: the cost of a host store;
//   3. pure JavaScript: a hand-written store and resume (./pure-js.js: a Map of
//      arrays, structuredClone in and out, D1 and D2 written in JavaScript),
//      no WebAssembly at all: the yardstick a host that adopts the package
//      must not fall below.
//
// Usage (from the repository root):
//
//   cargo xtask npm                                  # builds wasm/npm/dist
//   (cd wasm/bench && npm install)                   # links the package
//   (cd tests/conformance-js && npm install)         # for the plain store's import
//   node wasm/bench/park-resume.js [--executions N] [--rounds R] [--concurrency C]
//
//   --executions N   executions per column per round (default 3000)
//   --rounds R       measured rounds (default 5); the table reports the median
//   --concurrency C  executions in flight at once (default 64)
//
// One execution is a park and a conditional resume
// (fenceIfParkedAt), as a JavaScript host runs it:
//
//   append EXECUTION_STARTED; append EXECUTION_SUSPENDED (the park);
//   readRange + locatePark; resume(store, id, { fenceIfParkedAt, answer });
//   append STEP_COMPLETED and EXECUTION_COMPLETED under the token resume got.
//
// The columns run interleaved round-robin in ONE process (round r runs all
// three, starting with a different one each round), each round on a fresh
// store, after an unmeasured warm-up, so that JIT warm-up and machine noise
// fall on all alike. Every round is checked afterwards (each execution: five
// events, token 1), outside the timing. Prints a Markdown table with the
// package's ratio to each of the others, per round and of the medians.
//
// Each round's MemoryEventStore is released with free() once the round is
// checked, as a host that is done with a store does; otherwise the dropped
// stores stay in the WebAssembly memory until their FinalizationRegistry
// callbacks run, which this all-microtask loop never lets happen.

import { parseArgs } from 'node:util';
import { MemoryEventStore, locatePark, resume } from 'loomfence';

import { PlainEventStore } from '../../tests/conformance-js/plain-store.js';
import { PureJsStore, pureLocatePark, pureResume } from './pure-js.js';
import { check, median, positiveArg, run } from './workload.js';

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
const EXECUTIONS = positiveArg(args, 'executions');
const ROUNDS = positiveArg(args, 'rounds');
const CONCURRENCY = positiveArg(args, 'concurrency');

const COLUMNS = [
  { name: 'package: MemoryEventStore + resume', make: () => new MemoryEventStore(), resume, locatePark },
  { name: 'package resume + PlainEventStore (JS)', make: () => new PlainEventStore(), resume, locatePark },
  { name: 'pure JavaScript store + resume', make: () => new PureJsStore(), resume: pureResume, locatePark: pureLocatePark },
];

const fmt = (n) => Math.round(n).toLocaleString('en-US');

// Warm-up, unmeasured.
for (const column of COLUMNS) {
  const store = column.make();
  await run(column, store, 'warm', Math.min(EXECUTIONS, 1000), CONCURRENCY);
  store.free?.();
}

const rates = COLUMNS.map(() => []);
for (let round = 0; round < ROUNDS; round++) {
  const order = COLUMNS.map((_, i) => (i + round) % COLUMNS.length);
  for (const i of order) {
    const store = COLUMNS[i].make();
    const seconds = await run(COLUMNS[i], store, `r${round}`, EXECUTIONS, CONCURRENCY);
    await check(store, `r${round}`, EXECUTIONS);
    store.free?.();
    rates[i].push(EXECUTIONS / seconds);
  }
}

const medians = rates.map(median);
const roundHeaders = rates[0].map((_, r) => `round ${r + 1}`);
console.log(
  `## park/resume under fenceIfParkedAt, executions/s\n\n` +
    `${EXECUTIONS} executions per column per round, ${CONCURRENCY} in flight, ${ROUNDS} rounds interleaved round-robin; ` +
    `Node ${process.version}, ${process.platform}/${process.arch}.\n`,
);
console.log(`| column | median | ${roundHeaders.join(' | ')} |`);
console.log(`| --- | ---: | ${roundHeaders.map(() => '---:').join(' | ')} |`);
COLUMNS.forEach(({ name }, i) => {
  console.log(`| ${name} | **${fmt(medians[i])}** | ${rates[i].map(fmt).join(' | ')} |`);
});
for (const [i, label] of [[2, 'pure JavaScript'], [1, 'plain store']]) {
  const perRound = rates[0].map((rate, r) => (rate / rates[i][r]).toFixed(2));
  console.log(`| ratio package / ${label} | **${(medians[0] / medians[i]).toFixed(2)}** | ${perRound.join(' | ')} |`);
}
