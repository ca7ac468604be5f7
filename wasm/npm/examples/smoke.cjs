// Smoke test of the published package, CommonJS side: `require('loomfence')`
// and `require('loomfence/services')` must give the same modules, and the
// same error classes, as `import`.
// `cargo xtask test` runs it with `node` in a fresh folder where the
// `npm pack` tarball is installed. Exits non-zero on failure.
'use strict';
const assert = require('node:assert/strict');
const { MemoryEventStore, resume, ResumeRefusedError, InputError } = require('loomfence');
const { TimerInputError, MemoryTimerStore } = require('loomfence/services');

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
  const services = await import('loomfence/services');
  assert.equal(esm.ResumeRefusedError, ResumeRefusedError);
  assert.equal(esm.MemoryEventStore, MemoryEventStore);
  assert.equal(services.TimerInputError, TimerInputError);
  assert.equal(services.TimerService, require('loomfence/services').TimerService);
  assert.equal(services.sweep, require('loomfence/services').sweep);
  assert.equal(esm.TimerService, undefined, 'the services are not in the resume entry');
  const report = await require('loomfence/services').sweep(store, { endedBefore: 0 });
  assert.equal(report.examined, 1);
  await assert.rejects(new MemoryTimerStore().due(-1, 1), services.TimerInputError);
  // An error the services' module throws is the resume entry's class.
  assert.throws(() => services.startedChild('', 0), InputError);
  console.log('smoke.cjs: ok (require)');
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
