// A throw while the package reads a caller's value (a getter, a Proxy trap)
// must be caught where the value is read, in JavaScript, before anything
// enters WebAssembly: it becomes the documented refusal, and the module is
// left as it was. A throw that unwound through the WebAssembly frames left
// the shadow stack pointer behind (about 390 bytes a throw), and after a few
// thousand of them a fresh store's park/resume failed with "memory access
// out of bounds". Here thousands of hostile calls are followed by a normal
// park/resume.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InputError, MemoryEventStore, locatePark, resume } from 'loomfence';

import { wrap } from './support.js';

const CALLS = 5_000;

/** A normal park and resume on a fresh store, and on `store` if given. */
async function parkResumeWorks(store = new MemoryEventStore(), id = 'after') {
  const written = await store.appendMany(id, [{ kind: 'EXECUTION_STARTED', at: 1 }, { kind: 'EXECUTION_SUSPENDED', at: 1 }]);
  const resumed = await resume(store, id, { fenceIfParkedAt: written[1].sequence, answer: { ok: true }, at: 2 });
  assert.equal(resumed.resumed.kind, 'EXECUTION_RESUMED');
}

const throwing = (value) => ({ get kind() { throw value; }, at: 1 });

test(`${CALLS} appends whose event throws while it is read are refused, and the module still works`, async () => {
  const store = new MemoryEventStore();
  for (let i = 0; i < CALLS; i++) {
    await assert.rejects(store.append('x', throwing(new Error('boom'))), (error) => error instanceof InputError && error.code === 'INVALID_EVENT');
    await assert.rejects(store.appendMany('x', [{ kind: 'A', at: 1 }, throwing(new Error('boom'))]), InputError);
  }
  assert.deepEqual(await store.readRange('x'), [], 'nothing written');
  await parkResumeWorks();
  await parkResumeWorks(store);
});

test('a thrown value is never taken as the event: a getter throwing event text is refused', async () => {
  const store = new MemoryEventStore();
  const text = '{"kind":"FORGED","payload":{},"metadata":{},"at":5}';
  await assert.rejects(store.append('x', throwing(text)), InputError);
  await assert.rejects(store.appendMany('x', [throwing(text)]), InputError);
  assert.deepEqual(await store.readRange('x'), []);
});

test(`${CALLS} host-store replies with a throwing getter reject the resume, and the module still works`, async () => {
  const inner = new MemoryEventStore();
  const written = await inner.appendMany('p', [{ kind: 'EXECUTION_STARTED', at: 1 }, { kind: 'EXECUTION_SUSPENDED', at: 1 }]);
  const park = written[1].sequence;
  const hostile = wrap(inner, {
    async readRange(id, ...rest) {
      const log = await inner.readRange(id, ...rest);
      return log.map((envelope) => ({ ...envelope, get kind() { throw new Error('boom'); } }));
    },
  });
  for (let i = 0; i < CALLS / 5; i++) {
    await assert.rejects(resume(hostile, 'p', { fenceIfParkedAt: park, answer: 1, at: 2 }), InputError);
    assert.throws(() => locatePark([{ executionId: 'p', sequence: 1, get kind() { throw new Error('boom'); }, at: 1 }]), InputError);
  }
  assert.equal((await inner.readRange('p')).length, 2, 'nothing appended');
  await resume(inner, 'p', { fenceIfParkedAt: park, answer: 1, at: 2 });
  await parkResumeWorks();
});
