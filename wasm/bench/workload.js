// The park/resume workload both benches run (park-resume.js whole,
// per-op.js operation by operation), and their one option check: the events
// and the resume each step writes, in one place.

export const AT = 1_700_000_000_000;

/** The execution's start. */
export const started = (id) => ({ kind: 'EXECUTION_STARTED', payload: { input: { n: id.length } }, at: AT });

/** The park, on a timer. */
export const parked = () => ({ kind: 'EXECUTION_SUSPENDED', payload: { waits: [{ kind: 'TIMER', wakeAt: AT + 1000 }] }, at: AT + 1 });

/** The resume of the park at `parkSeq`, as the timer answers it. */
export const resumeOptions = (parkSeq) => ({ fenceIfParkedAt: parkSeq, answer: { fired: true }, at: AT + 1000 });

/** The body's step, under the token the resume took. */
export const step = (fence) => ({ kind: 'STEP_COMPLETED', payload: { step: 'after-wake' }, metadata: { fence }, at: AT + 1001 });

/** The body's completion, under the same token. */
export const completed = (fence) => ({ kind: 'EXECUTION_COMPLETED', payload: { output: { ok: true } }, metadata: { fence }, at: AT + 1002 });

/** `args[name]` (parseArgs' string) as a positive integer, or exit 2. */
export function positiveArg(args, name) {
  const n = Number(args[name]);
  if (!Number.isSafeInteger(n) || n < 1) {
    console.error(`--${name} must be a positive integer, got ${args[name]}`);
    process.exit(2);
  }
  return n;
}
