// Node entry of the resume entry `loomfence` (import and, through index.cjs,
// require): loads its WebAssembly module synchronously from the package
// folder, then exports. The timers, retention, supervision, the follower and
// the inbox are `loomfence/services` (services.js), a second module that is
// loaded only when imported.
import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import * as wasm from './dist/loomfence_resume.js';
import { guardReceivers } from './receivers.js';

// Node 20's V8 (11.3) can crash the process ("Fatal error: unreachable code"
// in Deoptimizer::DoComputeBuiltinContinuation) when optimized code that
// inlined a call into WebAssembly is deoptimized while that call runs; the
// pumps' calls into the machines hit it (timer-service.test.js, 5 runs in
// 6). On V8 11 that inlining is turned off, before any code of the package
// is optimized. Newer V8s were not tried here; docs/decisions.md, "The npm
// package".
if (Number.parseInt(process.versions.v8, 10) < 12) setFlagsFromString('--no-turbo-inline-js-wasm-calls');

wasm.initSync({ module: readFileSync(new URL('./dist/loomfence_resume_bg.wasm', import.meta.url)) });

// Before any instance exists: each class's methods refuse another's instances.
guardReceivers(wasm);

const classes = wasm.errorClasses();

export const MemoryEventStore = wasm.MemoryEventStore;
export const isAnsweringKind = wasm.isAnsweringKind;
export const locatePark = wasm.locatePark;
// JavaScript around the glue (resume.js), not in the .wasm.
export { resume } from './resume.js';
export const KERNEL_EVENT_KINDS = Object.freeze(wasm.kernelEventKinds());
export const StaleFenceError = classes.StaleFenceError;
export const ResumeRefusedError = classes.ResumeRefusedError;
export const ResumeContendedError = classes.ResumeContendedError;
export const InputError = classes.InputError;
