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
import { FireMachine, MemoryTimerStore, TimerInputError, TimerService, WakeBackoff, sweep } from 'loomfence/services';

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

/** A Proxy already revoked: every operation on it throws a TypeError. */
function revoked() {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

test('WakeBackoff#apply refuses a revoked Proxy or a throwing row, and the map still works', () => {
  const backoff = new WakeBackoff();
  const row = { executionId: 'e', wakeAt: 1_000 };
  const fired = { outcome: 'fired', retired: true };
  for (let i = 0; i < CALLS / 5; i++) {
    assert.throws(() => backoff.apply(revoked(), fired), TimerInputError);
    assert.throws(() => backoff.apply(row, revoked()), TimerInputError);
    assert.throws(() => backoff.apply({ get executionId() { throw new Error('boom'); }, wakeAt: 1 }, fired), TimerInputError);
  }
  backoff.apply(row, { outcome: 'backedOff', retired: false, entry: { wakeAt: 1_000, attempt: 0, nextTryAt: 1_150 } });
  assert.equal(backoff.len, 1);
  assert.deepEqual(backoff.get('e'), { wakeAt: 1_000, attempt: 0, nextTryAt: 1_150 });
  backoff.free();
});

test('FireMachine#handleRead refuses a log whose envelope throws while read, and the machine goes on', async () => {
  const store = new MemoryEventStore();
  const written = await store.appendMany('w', [
    { kind: 'EXECUTION_STARTED', at: 1 },
    { kind: 'EXECUTION_SUSPENDED', at: 1, payload: { waits: [{ kind: 'TIMER', wakeAt: 5 }] } },
  ]);
  const fire = new FireMachine({ executionId: 'w', wakeAt: 5 }, { now: 10, random: 0.5 });
  assert.equal(fire.poll().act, 'readLog');
  for (let i = 0; i < CALLS / 5; i++) {
    // A log a machine asked for that is not envelopes is the timer side's
    // UNEXPECTED_ANSWER, whatever made it so.
    const unexpected = (error) => error instanceof TimerInputError && error.code === 'UNEXPECTED_ANSWER';
    assert.throws(() => fire.handleRead([{ ...written[0], get sequence() { throw new Error('boom'); } }]), unexpected);
    assert.throws(() => fire.handleRead(revoked()), unexpected);
  }
  fire.handleRead(await store.readRange('w'));
  const next = fire.poll();
  assert.equal(next.act, 'resume', JSON.stringify(next));
  assert.equal(next.request.fenceIfParkedAt, written[1].sequence);
  fire.free();
});

test("TimerService.pollOnce over an event store whose log throws while read: onError, and the next tick fires", async () => {
  const inner = new MemoryEventStore();
  await inner.appendMany('w', [
    { kind: 'EXECUTION_STARTED', at: 1 },
    { kind: 'EXECUTION_SUSPENDED', at: 1, payload: { waits: [{ kind: 'TIMER', wakeAt: 5 }] } },
  ]);
  let hostile = true;
  const events = wrap(inner, {
    async readRange(id, ...rest) {
      const log = await inner.readRange(id, ...rest);
      return hostile ? log.map((envelope) => ({ ...envelope, get kind() { throw new Error('boom'); } })) : log;
    },
  });
  const timers = new MemoryTimerStore();
  await timers.schedule({ executionId: 'w', wakeAt: 5 });
  const errors = [];
  let now = 10;
  const service = new TimerService({ events, timers, now: () => now, leaseMs: 1_000, onError: (error, stage) => errors.push([error, stage]) });
  const first = await service.pollOnce();
  assert.equal(first.errors, 1, JSON.stringify(first));
  assert.equal(errors.length, 1);
  assert.ok(errors[0][0] instanceof TimerInputError, String(errors[0][0]));
  assert.equal(errors[0][0].code, 'UNEXPECTED_ANSWER');
  assert.equal(errors[0][1].stage, 'readLog');
  hostile = false;
  now = 10_000;
  const second = await service.pollOnce();
  assert.equal(second.fired, 1, JSON.stringify(second));
  assert.equal((await inner.readRange('w')).at(-1).kind, 'EXECUTION_RESUMED');
});

test('sweep over a store whose log throws while read rejects with its report attached, nothing deleted', async () => {
  const inner = new MemoryEventStore();
  await inner.appendMany('done', [{ kind: 'EXECUTION_STARTED', at: 1 }, { kind: 'EXECUTION_COMPLETED', at: 2 }]);
  const store = {
    listExecutions: (...args) => inner.listExecutions(...args),
    deleteExecutionIf: (...args) => inner.deleteExecutionIf(...args),
    async readRange(id, ...rest) {
      const log = await inner.readRange(id, ...rest);
      return log.map((envelope) => ({ ...envelope, get kind() { throw new Error('boom'); } }));
    },
  };
  await assert.rejects(sweep(store, { endedBefore: 10 }), (error) => {
    assert.ok(error instanceof InputError, String(error));
    assert.equal(error.code, 'STORE_CONTRACT');
    assert.equal(typeof error.report, 'object', 'the partial report is attached');
    assert.equal(error.report.deleted, 0);
    return true;
  });
  assert.equal((await inner.readRange('done')).length, 2);
});
