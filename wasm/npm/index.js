// Node entry (import and, through index.cjs, require): loads the
// WebAssembly module synchronously from the package folder, then exports.
import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import * as wasm from './dist/loomfence_wasm.js';
import { guardReceivers } from './receivers.js';

// Node 20's V8 (11.3) can crash the process ("Fatal error: unreachable code"
// in Deoptimizer::DoComputeBuiltinContinuation) when optimized code that
// inlined a call into WebAssembly is deoptimized while that call runs; the
// pumps' calls into the machines hit it (timer-service.test.js, 5 runs in
// 6). On V8 11 that inlining is turned off, before any code of the package
// is optimized. Newer V8s were not tried here; docs/decisions.md, "The npm
// package".
if (Number.parseInt(process.versions.v8, 10) < 12) setFlagsFromString('--no-turbo-inline-js-wasm-calls');

wasm.initSync({ module: readFileSync(new URL('./dist/loomfence_wasm_bg.wasm', import.meta.url)) });

// Before any instance exists: each class's methods refuse another's instances.
guardReceivers(wasm);

const classes = wasm.errorClasses();

export const MemoryEventStore = wasm.MemoryEventStore;
export const isAnsweringKind = wasm.isAnsweringKind;
export const locatePark = wasm.locatePark;
export const RedrivePolicy = wasm.RedrivePolicy;
export const redriveWakeAt = wasm.redriveWakeAt;
export const WakeBackoff = wasm.WakeBackoff;
export const FireMachine = wasm.FireMachine;
export const MemoryTimerStore = wasm.MemoryTimerStore;
export const startedChild = wasm.startedChild;
export const parentOf = wasm.parentOf;
export const pinParkedChildren = wasm.pinParkedChildren;
// JavaScript around the glue (resume.js, timer-service.js, retention.js, supervisor.js, follower.js, inbox.js), not in the .wasm.
export { resume } from './resume.js';
export { TimerService } from './timer-service.js';
export { sweep } from './retention.js';
export { ChildSupervisor } from './supervisor.js';
export { Follower } from './follower.js';
export { Inbox } from './inbox.js';
export const KERNEL_EVENT_KINDS = Object.freeze(wasm.kernelEventKinds());
export const StaleFenceError = classes.StaleFenceError;
export const ResumeRefusedError = classes.ResumeRefusedError;
export const ResumeContendedError = classes.ResumeContendedError;
export const InputError = classes.InputError;
export const TimerInputError = classes.TimerInputError;
export const RedriveExhaustedError = classes.RedriveExhaustedError;
export const UnreadableTimerRowError = classes.UnreadableTimerRowError;
