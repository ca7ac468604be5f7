// `resume(store, executionId, options)`: one entry for every store, two ways
// through the core's resume machine.
//
// - The package's own MemoryEventStore, its methods untouched: the whole
//   resume runs inside WebAssembly as one synchronous step (resumeInMemory),
//   with no boundary crossing and no promise per store call.
// - Any other store, including a MemoryEventStore wrapped, subclassed or with
//   a method replaced (a host's fault injection, a logging decorator): the
//   loop below steps the machine (the core's, bound as ResumeMachine), which
//   starts each store call through the store's JavaScript methods; the loop
//   awaits it and hands back what it settled to. The host sees every call
//   it asked to see, and every check of the store's answers is the
//   machine's.
//
// Both resolve and reject alike: the same answer, the same error classes.
import { MemoryEventStore, ResumeMachine, resumeInMemory } from './dist/loomfence_resume.js';

const OWN = MemoryEventStore.prototype;
const DRIVEN = ['readRange', 'appendIfParked', 'acquireFenceIf', 'acquireFence'];

/** Whether `store` is exactly the package's store, every method the
 * machine would call the package's own. A store that throws while it is
 * looked at (a revoked Proxy, a trap or getter that throws) is not: the
 * machine's own check of it then refuses it (`NOT_A_STORE`), and the
 * resume rejects instead of throwing. */
function isOwnStore(store) {
  try {
    return (
      typeof store === 'object' &&
      store !== null &&
      Object.getPrototypeOf(store) === OWN &&
      DRIVEN.every((name) => store[name] === OWN[name])
    );
  } catch {
    return false;
  }
}

/**
 * Drives a ResumeMachine over its store's JavaScript methods, one awaited
 * call a step, to its answer (or its error). Also what the ChildSupervisor
 * runs the resumes its SuperviseMachine builds (`resumeOn`) with.
 */
export async function drive(machine) {
  for (;;) {
    const pending = machine.step();
    if (machine.finished) return pending;
    let settled;
    let failed = false;
    try {
      settled = await pending;
    } catch (error) {
      settled = error;
      failed = true;
    }
    machine.handle(settled, failed);
  }
}

/**
 * Runs the resume a machine asks for (a SuperviseMachine's or a
 * DeliverMachine's `resume` action) over `store`, and hands its end back
 * to the machine: one that finished (landed, refused, contended, stale) is
 * an answer; anything else (a store failure) rejects.
 */
export async function resumeFor(machine, store) {
  const resume = machine.resumeOn(store);
  try {
    await drive(resume).catch((error) => {
      if (!resume.finished) throw error;
    });
    machine.handleResumed(resume);
  } finally {
    resume.free();
  }
}

/** The resume over a store's JavaScript methods. */
async function resumeThroughMethods(store, executionId, options) {
  const machine = new ResumeMachine(store, executionId, options);
  try {
    return await drive(machine);
  } finally {
    machine.free();
  }
}

export function resume(store, executionId, options) {
  if (!isOwnStore(store)) return resumeThroughMethods(store, executionId, options);
  try {
    return resumeInMemory(store, executionId, options);
  } catch (error) {
    // A freed store: wasm-bindgen throws before the call; a resume rejects.
    return Promise.reject(error);
  }
}
