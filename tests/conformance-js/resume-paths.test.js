// `resume` takes one of two ways through the core's resume machine: over the
// package's own MemoryEventStore, whose methods are untouched, the whole resume
// runs inside WebAssembly in one step; over any other store (a wrapper, a
// subclass, one method replaced) it calls the store's methods. These tests pin
// which way a store takes, and that both answer alike.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryEventStore, ResumeRefusedError, resume } from 'loomfence';

import { AT, park, resumesOf, wrap } from './support.js';

/** Parks `id` on `store`, resumes it once and again; resolves to both
 * outcomes (the second is always a refusal). */
async function resumeTwice(store, id) {
  const parkSeq = await park(store, id);
  const first = await resume(store, id, { fenceIfParkedAt: parkSeq, answer: { ok: 1 }, at: AT });
  const second = await resume(store, id, { fenceIfParkedAt: parkSeq, answer: { ok: 2 }, at: AT }).catch((e) => e);
  return { first, second };
}

/** The store with `name` replaced by a counting pass-through. */
function counting(store, name, calls) {
  const original = store[name];
  store[name] = function (...args) {
    calls.push(name);
    return original.apply(this, args);
  };
  return store;
}

test('the package store and a view of it answer the same resume alike', async () => {
  const own = await resumeTwice(new MemoryEventStore(), 'e');
  const viewed = await resumeTwice(wrap(new MemoryEventStore()), 'e');
  assert.deepEqual(own.first, viewed.first);
  assert.ok(own.second instanceof ResumeRefusedError && viewed.second instanceof ResumeRefusedError);
  assert.deepEqual({ ...own.second, message: own.second.message }, { ...viewed.second, message: viewed.second.message });
});

test('a store with a method replaced is driven through its methods, so the host sees the calls', async () => {
  for (const name of ['readRange', 'appendIfParked', 'acquireFenceIf']) {
    const calls = [];
    const store = counting(new MemoryEventStore(), name, calls);
    const parkSeq = await park(store, 'e');
    calls.length = 0;
    const resumed = await resume(store, 'e', { fenceIfParkedAt: parkSeq, answer: null, at: AT });
    assert.ok(calls.length > 0, `${name} replaced, but resume never called it`);
    assert.equal(resumed.fence, 1);
    assert.equal((await resumesOf(store, 'e')).length, 1);
  }
});

test('a subclass that overrides a method is driven through its methods', async () => {
  const calls = [];
  class Logged extends MemoryEventStore {
    readRange(...args) {
      calls.push(args[1] ?? 1);
      return super.readRange(...args);
    }
  }
  const store = new Logged();
  const parkSeq = await park(store, 'e');
  calls.length = 0;
  await resume(store, 'e', { fenceIfParkedAt: parkSeq, answer: null, at: AT });
  assert.deepEqual(calls, [1, parkSeq + 1], 'the whole log, then the tail after the acquire');
});

test('a freed store rejects the resume (no synchronous throw), and the error is an Error', async () => {
  const store = new MemoryEventStore();
  const parkSeq = await park(store, 'e');
  store.free();
  let returned;
  assert.doesNotThrow(() => {
    returned = resume(store, 'e', { fenceIfParkedAt: parkSeq, answer: null, at: AT });
  });
  await assert.rejects(returned, Error);
});

test('bad input is refused the same way on both paths, before anything is read', async () => {
  for (const make of [() => new MemoryEventStore(), () => wrap(new MemoryEventStore())]) {
    const store = make();
    const parkSeq = await park(store, 'e');
    await assert.rejects(resume(store, '', { fenceIfParkedAt: parkSeq }), { name: 'InputError', code: 'INVALID_ID' });
    await assert.rejects(resume(store, 'e', { fenceIfParkedAt: -1 }), RangeError);
    await assert.rejects(resume(store, 'e', { fenceIfParkedAt: parkSeq, answer: 1n }), { code: 'INVALID_ANSWER' });
    await assert.rejects(resume(store, 'e', null), { code: 'NOT_AN_OBJECT' });
    assert.equal(await store.currentFence('e'), 0, 'nothing acquired');
    assert.equal((await store.readRange('e')).length, parkSeq);
  }
});
