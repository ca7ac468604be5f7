// Browser entry of `loomfence/services`: fetches and instantiates the second
// WebAssembly module (top-level await) when a page first imports this entry,
// statically or with `await import('loomfence/services')`, after the resume
// entry, whose module these services resume through and whose error classes
// are theirs.
import './browser.js';
import * as wasm from './dist/loomfence_services.js';
import { guardReceivers } from './receivers.js';

await wasm.default({ module_or_path: new URL('./dist/loomfence_services_bg.wasm', import.meta.url) });

// Before any instance exists: each class's methods refuse another's instances.
guardReceivers(wasm);

const classes = wasm.errorClasses();

export const RedrivePolicy = wasm.RedrivePolicy;
export const redriveWakeAt = wasm.redriveWakeAt;
export const WakeBackoff = wasm.WakeBackoff;
export const FireMachine = wasm.FireMachine;
export const MemoryTimerStore = wasm.MemoryTimerStore;
export const startedChild = wasm.startedChild;
export const parentOf = wasm.parentOf;
export const pinParkedChildren = wasm.pinParkedChildren;
// JavaScript around the glue (timer-service.js, retention.js, supervisor.js, follower.js, inbox.js), not in the .wasm.
export { TimerService } from './timer-service.js';
export { sweep } from './retention.js';
export { ChildSupervisor } from './supervisor.js';
export { Follower } from './follower.js';
export { Inbox } from './inbox.js';
export const TimerInputError = classes.TimerInputError;
export const RedriveExhaustedError = classes.RedriveExhaustedError;
export const UnreadableTimerRowError = classes.UnreadableTimerRowError;
