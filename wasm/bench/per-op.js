// Per-operation cost of the park/resume workload, the package against the
// pure-JavaScript yardstick (./pure-js.js): microseconds per call, each
// operation run N times in a row on one store, both in one process, three
// rounds. NOT a test; where park-resume.js says how far apart the two are,
// this says where.
//
//   node wasm/bench/per-op.js [--executions N]   (default 20000)

import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { MemoryEventStore, locatePark, resume } from 'loomfence';

import { PureJsStore, pureLocatePark, pureResume } from './pure-js.js';
import { parked, positiveArg, resumeOptions, started, step } from './workload.js';

const { values: args } = parseArgs({ options: { executions: { type: 'string', default: '20000' } } });
const N = positiveArg(args, 'executions');
const SIDES = [
  { name: 'package', make: () => new MemoryEventStore(), locate: locatePark, resume },
  { name: 'pure JS', make: () => new PureJsStore(), locate: pureLocatePark, resume: pureResume },
];

/** Microseconds per call of `call(i)` for i < N. */
async function perCall(call) {
  const started = performance.now();
  for (let i = 0; i < N; i++) await call(i);
  return ((performance.now() - started) * 1000) / N;
}

/** Each operation of the workload, in order, on a fresh store. */
async function measure({ make, locate, resume: resumeWith }) {
  const store = make();
  const logs = [];
  const fences = [];
  const times = {
    start: await perCall((i) => store.append(`e${i}`, started(`e${i}`))),
    park: await perCall((i) => store.append(`e${i}`, parked())),
    read: await perCall(async (i) => logs.push(await store.readRange(`e${i}`))),
    locatePark: await perCall(async (i) => {
      logs[i] = locate(logs[i]).sequence;
    }),
    resume: await perCall(async (i) => {
      fences[i] = (await resumeWith(store, `e${i}`, resumeOptions(logs[i]))).fence;
    }),
    step: await perCall((i) => store.append(`e${i}`, step(fences[i]))),
  };
  store.free?.();
  return times;
}

console.log(`## µs per call, ${N} calls each, package / pure JS; Node ${process.version}\n`);
for (let round = 1; round <= 3; round++) {
  const [pkg, pure] = [await measure(SIDES[0]), await measure(SIDES[1])];
  console.log(`round ${round}: ${Object.keys(pkg).map((op) => `${op} ${pkg[op].toFixed(2)} / ${pure[op].toFixed(2)}`).join(', ')}`);
}
