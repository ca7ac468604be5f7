// Browser entry of the resume entry `loomfence`: fetches and instantiates its
// WebAssembly module (top-level await), then exports. Bundlers resolve the
// .wasm URL from import.meta.url. `loomfence/services` (services-browser.js)
// fetches the second module, only when a page imports it.
import * as wasm from './dist/loomfence_resume.js';
import { guardReceivers } from './receivers.js';

await wasm.default({ module_or_path: new URL('./dist/loomfence_resume_bg.wasm', import.meta.url) });

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
