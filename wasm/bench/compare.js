// Two or more builds of the npm package side by side, in ONE process, against
// the pure-JavaScript column of park-resume.js: the tool for "did this change
// cost park/resume speed?". NOT a test.
//
// Usage (from wasm/bench, after `(cd tests/conformance-js && npm ci)` for the
// yardstick's imports; each PATH a copy of wasm/npm with its dist/ built,
// e.g. a second `git worktree` at the old commit after `cargo xtask npm`):
//
//   node compare.js --package before=PATH --package after=PATH \
//     [--executions N] [--rounds R] [--concurrency C]
//
// Same workload, warm-up and checks as park-resume.js (./workload.js); the
// columns (each package's MemoryEventStore + resume, then pure JavaScript)
// run interleaved round-robin, each round starting with a different column,
// so machine noise falls on all alike. What is compared is each package's
// ratio to the pure-JavaScript column of the same round: per round and the
// median of those ratios.

import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

import { PureJsStore, pureLocatePark, pureResume } from './pure-js.js';
import { check, median, positiveArg, run } from './workload.js';

const { values: args } = parseArgs({
  options: {
    package: { type: 'string', multiple: true, default: [] },
    executions: { type: 'string', default: '3000' },
    rounds: { type: 'string', default: '7' },
    concurrency: { type: 'string', default: '16' },
  },
});
const EXECUTIONS = positiveArg(args, 'executions');
const ROUNDS = positiveArg(args, 'rounds');
const CONCURRENCY = positiveArg(args, 'concurrency');
if (args.package.length === 0) {
  console.error('node compare.js --package NAME=PATH [--package NAME=PATH …]');
  process.exit(2);
}

const columns = [];
for (const spec of args.package) {
  const at = spec.indexOf('=');
  const name = spec.slice(0, at);
  const pkg = await import(pathToFileURL(resolve(spec.slice(at + 1), 'index.js')).href);
  columns.push({ name, make: () => new pkg.MemoryEventStore(), resume: pkg.resume, locatePark: pkg.locatePark });
}
const PURE = columns.length;
columns.push({ name: 'pure JavaScript', make: () => new PureJsStore(), resume: pureResume, locatePark: pureLocatePark });


for (const column of columns) {
  const store = column.make();
  await run(column, store, 'warm', Math.min(EXECUTIONS, 1000), CONCURRENCY);
  store.free?.();
}

const rates = columns.map(() => []);
for (let round = 0; round < ROUNDS; round++) {
  for (let k = 0; k < columns.length; k++) {
    const i = (k + round) % columns.length;
    const store = columns[i].make();
    const seconds = await run(columns[i], store, `r${round}`, EXECUTIONS, CONCURRENCY);
    await check(store, `r${round}`, EXECUTIONS);
    store.free?.();
    rates[i].push(EXECUTIONS / seconds);
  }
}

console.log(`${EXECUTIONS} executions, ${ROUNDS} rounds, ${CONCURRENCY} in flight, Node ${process.version}`);
console.log('| package | median ratio to pure JS | per round | median exec/s |');
console.log('| --- | ---: | --- | ---: |');
for (let i = 0; i < PURE; i++) {
  const ratios = rates[i].map((r, k) => r / rates[PURE][k]);
  const row = ratios.map((x) => x.toFixed(2)).join(' ');
  console.log(`| ${columns[i].name} | **${median(ratios).toFixed(3)}** | ${row} | ${Math.round(median(rates[i]))} |`);
}
console.log(`| pure JavaScript | 1 | | ${Math.round(median(rates[PURE]))} |`);
