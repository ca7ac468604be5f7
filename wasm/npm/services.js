// Node entry of `loomfence/services`: the timers, the re-drive, retention's
// sweep, the supervision, the change feed's follower and the inbox, in a
// second WebAssembly module, loaded synchronously when this entry is first
// imported. The resume entry is loaded first: these services resume
// through it, and its error classes are theirs (both modules' glue imports
// one errors.js).
import { readFileSync } from 'node:fs';
import './index.js';
import * as wasm from './dist/loomfence_services.js';
import { guardReceivers } from './receivers.js';

wasm.initSync({ module: readFileSync(new URL('./dist/loomfence_services_bg.wasm', import.meta.url)) });

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
