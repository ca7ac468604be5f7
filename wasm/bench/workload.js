import { performance } from 'node:perf_hooks';

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

/** One execution, start to finish. */
export async function parkAndResume({ resume, locatePark }, store, id) {
  await store.append(id, started(id));
  await store.append(id, parked());
  const park = locatePark(await store.readRange(id));
  const { fence } = await resume(store, id, resumeOptions(park.sequence));
  await store.append(id, step(fence));
  await store.append(id, completed(fence));
}

/** Runs `count` executions, `concurrency` at a time; resolves to the seconds taken. */
export async function run(column, store, prefix, count, concurrency) {
  let next = 0;
  const worker = async () => {
    while (next < count) await parkAndResume(column, store, `${prefix}-${next++}`);
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return (performance.now() - t0) / 1000;
}

/** Every execution of a round ended as it should. */
export async function check(store, prefix, count) {
  for (let n = 0; n < count; n++) {
    const id = `${prefix}-${n}`;
    const log = await store.readRange(id);
    const kinds = log.map((e) => e.kind).join(',');
    const expected = 'EXECUTION_STARTED,EXECUTION_SUSPENDED,EXECUTION_RESUMED,STEP_COMPLETED,EXECUTION_COMPLETED';
    if (kinds !== expected || (await store.currentFence(id)) !== 1) {
      throw new Error(`${id}: unexpected log ${kinds} / token ${await store.currentFence(id)}`);
    }
  }
}

export const median = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
