// Smoke test of the published package, CommonJS side: `require('loomfence')`
// must give the same module, and the same error classes, as `import`.
// `cargo xtask test` runs it with `node` in a fresh folder where the
// `npm pack` tarball is installed. Exits non-zero on failure.
'use strict';
const assert = require('node:assert/strict');
const { MemoryEventStore, resume, ResumeRefusedError, TimerInputError, MemoryTimerStore } = require('loomfence');

async function main() {
  const store = new MemoryEventStore();
  const [, park] = await store.appendMany('invoice-42', [
    { kind: 'EXECUTION_STARTED', at: 1000 },
    { kind: 'EXECUTION_SUSPENDED', at: 1001 },
  ]);

  const resumed = await resume(store, 'invoice-42', { fenceIfParkedAt: park.sequence, answer: { ok: true } });
  assert.equal(resumed.resumed.kind, 'EXECUTION_RESUMED');
  assert.equal(resumed.executionId, 'invoice-42');
  assert.deepEqual(resumed.resumed.payload.answer, { ok: true });

  await assert.rejects(
    resume(store, 'invoice-42', { fenceIfParkedAt: park.sequence, answer: null }),
    (error) => {
      assert.ok(error instanceof ResumeRefusedError, `not a ResumeRefusedError: ${error}`);
      assert.equal(error.reason, 'not-suspended');
      return true;
    },
  );

  // One module for both loaders: the classes `import` sees are these.
  const esm = await import('loomfence');
  assert.equal(esm.ResumeRefusedError, ResumeRefusedError);
  assert.equal(esm.MemoryEventStore, MemoryEventStore);
  assert.equal(esm.TimerInputError, TimerInputError);
  assert.equal(esm.TimerService, require('loomfence').TimerService);
  assert.equal(esm.sweep, require('loomfence').sweep);
  const report = await require('loomfence').sweep(store, { endedBefore: 0 });
  assert.equal(report.examined, 1);
  await assert.rejects(new MemoryTimerStore().due(-1, 1), esm.TimerInputError);
  console.log('smoke.cjs: ok (require)');
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
