import { MemoryEventStore, locatePark, resume } from 'loomfence';
const AT = 1_700_000_000_000;
async function one(store, id) {
  await store.append(id, { kind: 'EXECUTION_STARTED', payload: { input: { n: id.length } }, at: AT });
  await store.append(id, { kind: 'EXECUTION_SUSPENDED', payload: { waits: [{ kind: 'TIMER', wakeAt: AT + 1000 }] }, at: AT + 1 });
  const park = locatePark(await store.readRange(id));
  const { fence } = await resume(store, id, { fenceIfParkedAt: park.sequence, answer: { fired: true }, at: AT + 1000 });
  await store.append(id, { kind: 'STEP_COMPLETED', payload: { step: 'after-wake' }, metadata: { fence }, at: AT + 1001 });
  await store.append(id, { kind: 'EXECUTION_COMPLETED', payload: { output: { ok: true } }, metadata: { fence }, at: AT + 1002 });
}
for (let r = 0; r < 8; r++) {
  const store = new MemoryEventStore();
  let next = 0; const N = 3000;
  const t = performance.now();
  await Promise.all(Array.from({ length: 64 }, async () => { while (next < N) await one(store, `r${r}-${next++}`); }));
  console.log(r, Math.round(N / ((performance.now() - t) / 1000)));
  store.free();
}
