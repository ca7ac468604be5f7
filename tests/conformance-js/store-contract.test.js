// `resume` checks a host store's answers instead of trusting them.
//
// A JavaScript store is the host's code: `resume` reads every answer against
// the interface, and an answer outside it is an `InputError` (a TypeError)
// with code 'STORE_CONTRACT', thrown before anything is appended:
// - `acquireFenceIf` resolves to `{ fence }` with `fence` the expected token
//   plus one, or to `{ stale: true, fence }` (`stale` the boolean true), with
//   `fence` a safe non-negative integer; anything else (a wrong number, a
//   truthy `stale` that is not `true`, no fence, not an object) is refused;
// - `acquireFence` resolves to the new token, a safe integer from 1;
// - `appendIfParked` resolves to the stored envelopes, each the event the
//   resume sent, field by field (kind, payload, `at`, metadata with the
//   token), or to `{ parkAnswered: true }`; a StaleFenceError it throws
//   names a `current` token above the one the resume presented; and a
//   TimerService over such a store reports the fire failed, not fired;
// - `acquireFenceIf` never throws StaleFenceError (it answers stale).
// And a store without `appendIfParked` is refused up front (code
// 'NOT_A_STORE'), whatever its fencing: resume's only append is the
// park-conditional one.
//
// Each bad answer comes from a view of a real store that answers without
// touching it, so every test also checks the store is exactly as before.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { InputError, MemoryEventStore, resume } from 'loomfence';
import { MemoryTimerStore, TimerService } from 'loomfence/services';

import { PlainEventStore, withCapability } from './plain-store.js';
import { AT, Witness, assertRejects, event, park, resumesOf, show, wrap } from './support.js';

const STORE_CONTRACT = { type: InputError, code: 'STORE_CONTRACT' };
const NOT_A_STORE = { type: TypeError, code: 'NOT_A_STORE' };
const ID = 'contract';

const STORES = [
  { label: 'memory', make: () => new MemoryEventStore() },
  { label: 'plain', make: () => new PlainEventStore() },
];

/** The methods of `store` a view of the given shape keeps (`append` is
 * never called by resume, but a store a body writes through has it). */
const SHAPES = {
  conditional: ['readRange', 'append', 'appendIfParked', 'acquireFence', 'acquireFenceIf'],
  'fencing-only': ['readRange', 'append', 'appendIfParked', 'acquireFence'],
  'non-fencing': ['readRange', 'append', 'appendIfParked'],
};

/**
 * A view of `inner` with the methods of `shape`, `overrides` replacing some,
 * and every call counted by name in `view.calls`.
 */
function view(inner, shape, overrides = {}) {
  const methods = { ...wrap(inner), ...overrides };
  const calls = [];
  const store = { calls };
  for (const name of SHAPES[shape]) {
    store[name] = (...args) => {
      calls.push(name);
      return methods[name](...args);
    };
  }
  return store;
}

/** Parks the execution in a fresh `inner`, runs `resume` over
 * `makeView(inner, parkSeq)`, expects it to reject with `expected`, and
 * checks the store is exactly as before and no append reached it. */
async function refused(make, makeView, expected, what) {
  const inner = make();
  const parkSeq = await park(inner, ID);
  const before = await Witness.capture(inner, ID);
  const store = makeView(inner, parkSeq);
  await assertRejects(resume(store, ID, { fenceIfParkedAt: parkSeq, answer: 'x', at: AT }), expected, what);
  await before.assertUnchanged(inner, what);
  return store.calls;
}

/** A view whose method `name` answers `answer` (resolves to it) without
 * touching the store. */
const answering = (name, answer) => ({ [name]: async () => answer });

/** A view whose method `name` throws `error` without touching the store. */
const throwing = (name, error) => ({
  [name]: async () => {
    throw error;
  },
});

/** A stored resume, as a store would hand it back, with `metadata`. */
const stored = (parkSeq, metadata = {}) => ({
  executionId: ID,
  sequence: parkSeq + 1,
  kind: 'EXECUTION_RESUMED',
  payload: { answer: 'x' },
  metadata,
  at: AT,
});

// Every reply below answers an acquireFenceIf expecting { fence: 0 } (the
// park's token): the only acquired reply is { fence: 1 }.
const BAD_ACQUIRE_IF_REPLIES = [
  ['{ fence: 0 }: the expected token, not the next', { fence: 0 }],
  ['{ fence: 2 }: a token past the next', { fence: 2 }],
  ['{ fence: 99 }', { fence: 99 }],
  ["{ fence: 1, stale: 'yes' }", { fence: 1, stale: 'yes' }],
  ["{ fence: 1, stale: 'true' }", { fence: 1, stale: 'true' }],
  ['{ fence: 1, stale: 1 }', { fence: 1, stale: 1 }],
  ['{ fence: 1, stale: false }', { fence: 1, stale: false }],
  ['{ fence: 1, stale: null }', { fence: 1, stale: null }],
  ['{ fence: 1, stale: {} }', { fence: 1, stale: {} }],
  ['{ stale: true }: no fence', { stale: true }],
  ['{}: no fence', {}],
  ['{ fence: -1 }', { fence: -1 }],
  ['{ stale: true, fence: -1 }', { stale: true, fence: -1 }],
  ['{ fence: 1.5 }', { fence: 1.5 }],
  ["{ fence: '1' }", { fence: '1' }],
  ["{ stale: true, fence: '1' }", { stale: true, fence: '1' }],
  ['{ fence: 1n }', { fence: 1n }],
  ['{ fence: NaN }', { fence: NaN }],
  ['{ fence: 2^53 }', { fence: 2 ** 53 }],
  ['{ stale: true, fence: 2^53 }', { stale: true, fence: 2 ** 53 }],
  ['null', null],
  ['undefined', undefined],
  ['1: a bare token', 1],
  ['true', true],
  ["'{\"fence\":1}': JSON text", '{"fence":1}'],
  ['[1]', [1]],
  // Replies whose reading throws: the thrown value is the cause of the
  // store-contract error, never the rejection itself.
  ['{ get fence() throws }', { get fence() { throw new Error('boom'); } }],
  ['{ fence: 1, get stale() throws }', { fence: 1, get stale() { throw new Error('boom'); } }],
  ['a Proxy whose get trap throws (but for `then`)', throwingProxy({})],
];

/**
 * A Proxy over `target` whose get trap throws for every key but `then`: a
 * promise resolved with it reads `then` (a throw there would reject the
 * store's own promise, its refusal, not a reply), the reader meets the rest.
 */
function throwingProxy(target) {
  return new Proxy(target, {
    get(t, key, receiver) {
      if (key === 'then') return undefined;
      throw new Error('boom');
    },
  });
}

const BAD_ACQUIRE_REPLIES = [
  ['0: no acquire yields 0', 0],
  ['-1', -1],
  ['1.5', 1.5],
  ["'1'", '1'],
  ['1n', 1n],
  ['2^53', 2 ** 53],
  ['null', null],
  ['undefined', undefined],
  ['{ fence: 1 }', { fence: 1 }],
];

for (const { label, make } of STORES) {
  describe(`resume checks acquireFenceIf's reply [${label}]`, () => {
    for (const [what, reply] of BAD_ACQUIRE_IF_REPLIES) {
      test(`${what} -> InputError STORE_CONTRACT, nothing appended`, async () => {
        const calls = await refused(make, (inner) => view(inner, 'conditional', answering('acquireFenceIf', reply)), STORE_CONTRACT, what);
        assert.deepEqual(calls, ['readRange', 'acquireFenceIf'], `${what}: resume stopped at the reply`);
      });
    }

    test('a StaleFenceError thrown by acquireFenceIf (it answers stale instead) -> STORE_CONTRACT', async () => {
      const error = { name: 'StaleFenceError', current: 1 };
      const calls = await refused(make, (inner) => view(inner, 'conditional', throwing('acquireFenceIf', error)), STORE_CONTRACT, 'a thrown stale');
      assert.ok(!calls.includes('appendIfParked'));
    });

    test('the two shapes the interface allows are accepted: { fence } and { stale: true, fence }', async () => {
      // Answered by the view, the store untouched until the append: stale
      // first (retry on the token it names), then acquired on the next one.
      const inner = make();
      const parkSeq = await park(inner, ID);
      const replies = [{ stale: true, fence: 0 }, { fence: 1, stale: undefined }];
      const store = view(inner, 'conditional', { acquireFenceIf: async () => replies.shift() });
      const resumed = await resume(store, ID, { fenceIfParkedAt: parkSeq, answer: 'x', at: AT });
      assert.deepEqual({ fence: resumed.fence, attempts: resumed.attempts }, { fence: 1, attempts: 2 });
      assert.deepEqual(store.calls, ['readRange', 'acquireFenceIf', 'readRange', 'acquireFenceIf', 'readRange', 'appendIfParked']);
    });
  });

  describe(`resume checks acquireFence's reply [${label}]`, () => {
    for (const [what, reply] of BAD_ACQUIRE_REPLIES) {
      test(`${show(reply)} (${what}) -> InputError STORE_CONTRACT, nothing appended`, async () => {
        const calls = await refused(make, (inner) => view(inner, 'fencing-only', answering('acquireFence', reply)), STORE_CONTRACT, what);
        assert.deepEqual(calls, ['readRange', 'acquireFence'], `${what}: resume stopped at the reply`);
      });
    }
  });

  describe(`resume checks appendIfParked's answer [${label}]`, () => {
    // Unfenced (a non-fencing view): no token is taken, so the store stays
    // exactly as it was while the view answers.
    const unfenced = [
      ["{ parkAnswered: 'yes' }", { parkAnswered: 'yes' }],
      ['{ parkAnswered: 1 }', { parkAnswered: 1 }],
      ["{ parkAnswered: 'true' }", { parkAnswered: 'true' }],
      ['{}', {}],
      ['null', null],
      ['undefined', undefined],
      ['true', true],
      ["'ok'", 'ok'],
      ['[{}]: not an envelope', [{}]],
      ['[]: no envelope', []],
      ['{ get parkAnswered() throws }', { get parkAnswered() { throw new Error('boom'); } }],
      ['a Proxy whose get trap throws (but for `then`)', throwingProxy({})],
      ['an array Proxy whose element get throws', new Proxy([1], { get(t, k, r) { if (k === '0') throw new Error('boom'); return Reflect.get(t, k, r); } })],
    ];
    for (const [what, answer] of unfenced) {
      test(`${what} -> InputError STORE_CONTRACT`, async () => {
        await refused(make, (inner) => view(inner, 'non-fencing', answering('appendIfParked', answer)), STORE_CONTRACT, what);
      });
    }

    test('two envelopes for the one resume event -> STORE_CONTRACT', async () => {
      await refused(
        make,
        (inner, parkSeq) => view(inner, 'non-fencing', answering('appendIfParked', [stored(parkSeq), { ...stored(parkSeq), sequence: parkSeq + 2 }])),
        STORE_CONTRACT,
        'two envelopes',
      );
    });

    test('an envelope of another kind -> STORE_CONTRACT', async () => {
      await refused(
        make,
        (inner, parkSeq) => view(inner, 'non-fencing', answering('appendIfParked', [{ ...stored(parkSeq), kind: 'STEP_STARTED' }])),
        STORE_CONTRACT,
        'another kind',
      );
    });

    test('a stored resume carrying a token the unfenced resume did not send -> STORE_CONTRACT', async () => {
      await refused(
        make,
        (inner, parkSeq) => view(inner, 'non-fencing', answering('appendIfParked', [stored(parkSeq, { fence: 1 })])),
        STORE_CONTRACT,
        'a token never sent',
      );
    });

    test('a stored resume without the token the fenced resume sent -> STORE_CONTRACT', async () => {
      // The view grants token 1 (a valid reply) without touching the store.
      for (const metadata of [{}, { fence: 2 }, { fence: 0 }]) {
        await refused(
          make,
          (inner, parkSeq) =>
            view(inner, 'conditional', {
              ...answering('acquireFenceIf', { fence: 1 }),
              ...answering('appendIfParked', [stored(parkSeq, metadata)]),
            }),
          STORE_CONTRACT,
          `stored with metadata ${show(metadata)}`,
        );
      }
    });

    // Each forgery changes one field of the event the resume sent and
    // nothing else; `echoing(forge)` answers appendIfParked with it.
    const forged = [
      ['another payload', (e) => ({ ...e, payload: { answer: 'forged' } })],
      ['a payload with one more field', (e) => ({ ...e, payload: { ...e.payload, extra: 1 } })],
      ['an empty payload', (e) => ({ ...e, payload: {} })],
      ['another at', (e) => ({ ...e, at: e.at + 1 })],
      ['metadata with one more field', (e) => ({ ...e, metadata: { ...e.metadata, host: 'forged' } })],
      ['metadata with a kernel stamp', (e) => ({ ...e, metadata: { ...e.metadata, kernel: true } })],
    ];
    const echoing = (forge) => ({
      appendIfParked: async (id, parkSeq, [sent]) => [
        forge({ executionId: id, sequence: parkSeq + 1, kind: sent.kind, payload: sent.payload, metadata: sent.metadata ?? {}, at: sent.at }),
      ],
    });

    test('control: an ack echoing the event sent is taken', async () => {
      for (const shape of ['conditional', 'non-fencing']) {
        const inner = make();
        const parkSeq = await park(inner, ID);
        const store = view(inner, shape, { ...answering('acquireFenceIf', { fence: 1 }), ...echoing((e) => e) });
        const resumed = await resume(store, ID, { fenceIfParkedAt: parkSeq, answer: 'x', at: AT });
        assert.deepEqual(resumed.resumed, stored(parkSeq, shape === 'conditional' ? { fence: 1 } : {}), shape);
      }
    });

    for (const [what, forge] of forged) {
      for (const shape of ['conditional', 'non-fencing']) {
        test(`a stored resume with ${what} (${shape}) -> STORE_CONTRACT`, async () => {
          await refused(
            make,
            (inner, parkSeq) =>
              view(inner, shape, { ...answering('acquireFenceIf', { fence: 1 }), ...echoing(forge) }),
            STORE_CONTRACT,
            `${what} (${shape})`,
          );
        });
      }
    }

    test('a TimerService over a store whose ack is forged reports the fire failed, not fired', async () => {
      for (const [what, forge] of forged) {
        const inner = make();
        // Parked on a timer due at AT, so the service's fire is a resume.
        await inner.appendMany(ID, [event('EXECUTION_STARTED'), event('EXECUTION_SUSPENDED', { payload: { waits: [{ kind: 'TIMER', wakeAt: AT }] } })]);
        const before = await Witness.capture(inner, ID);
        const timers = new MemoryTimerStore();
        await timers.schedule({ executionId: ID, wakeAt: AT });
        const events = view(inner, 'conditional', { ...answering('acquireFenceIf', { fence: 1 }), ...echoing(forge) });
        const errors = [];
        const resumed = [];
        const service = new TimerService({
          events,
          timers,
          now: () => AT,
          random: () => 0,
          onError: (error, info) => errors.push({ error, info }),
          onResumed: (r) => resumed.push(r),
        });
        const report = await service.pollOnce();
        assert.deepEqual(
          report.fires.map((f) => [f.result, f.stage]),
          [['failed', 'resume']],
          `${what}: ${show(report.fires.map((f) => f.result))}`,
        );
        assert.equal(report.fired, 0, what);
        assert.deepEqual(resumed, [], `${what}: nothing handed on`);
        assert.equal(errors.length, 1, what);
        assert.ok(errors[0].error instanceof InputError && errors[0].error.code === 'STORE_CONTRACT', `${what}: ${errors[0].error}`);
        assert.deepEqual(await timers.due(Number.MAX_SAFE_INTEGER, 10), [{ executionId: ID, wakeAt: AT }], `${what}: the row stays`);
        await before.assertUnchanged(inner, what);
        assert.equal((await resumesOf(inner, ID)).length, 0, what);
      }
    });

    const badStale = [
      ['no current', { name: 'StaleFenceError' }, 'non-fencing'],
      ['current 0 for an unfenced resume', { name: 'StaleFenceError', current: 0 }, 'non-fencing'],
      ["current '2'", { name: 'StaleFenceError', current: '2' }, 'non-fencing'],
      ['current -1', { name: 'StaleFenceError', current: -1 }, 'non-fencing'],
      ['current 1 for a resume under token 1', { name: 'StaleFenceError', current: 1 }, 'conditional'],
      ['current 0 for a resume under token 1', { name: 'StaleFenceError', current: 0 }, 'conditional'],
    ];
    for (const [what, error, shape] of badStale) {
      test(`a StaleFenceError with ${what} -> STORE_CONTRACT`, async () => {
        const calls = await refused(
          make,
          (inner) =>
            view(inner, shape, {
              ...answering('acquireFenceIf', { fence: 1 }),
              ...throwing('appendIfParked', error),
            }),
          STORE_CONTRACT,
          what,
        );
        assert.equal(calls.filter((c) => c === 'appendIfParked').length, 1, 'no retry on a refusal that names no newer token');
      });
    }
  });

  describe(`resume refuses a store without appendIfParked up front [${label}]`, () => {
    for (const shape of Object.keys(SHAPES)) {
      test(`${shape}, no appendIfParked -> TypeError NOT_A_STORE naming appendIfParked, no call made`, async () => {
        const inner = make();
        const parkSeq = await park(inner, ID);
        const before = await Witness.capture(inner, ID);
        const store = view(inner, shape);
        // It still has a plain append, which is what resume used to fall back on.
        delete store.appendIfParked;
        await assertRejects(resume(store, ID, { fenceIfParkedAt: parkSeq, answer: 'x', at: AT }), NOT_A_STORE, shape);
        await assert.rejects(resume(store, ID, { fenceIfParkedAt: parkSeq, at: AT }), /appendIfParked\(\)/);
        assert.deepEqual(store.calls, [], 'resume called nothing');
        await before.assertUnchanged(inner, `resume of a ${shape} store without appendIfParked`);
      });
    }
  });
}

test('a valid host store still resumes: the checks refuse only answers outside the interface', async () => {
  for (const shape of Object.keys(SHAPES)) {
    const inner = new PlainEventStore();
    const parkSeq = await park(inner, ID);
    const store = view(shape === 'conditional' ? inner : withCapability(inner, shape), shape);
    const resumed = await resume(store, ID, { fenceIfParkedAt: parkSeq, answer: 'x', at: AT });
    const token = shape === 'non-fencing' ? null : 1;
    assert.equal(resumed.fence, token, shape);
    assert.deepEqual(resumed.resumed.metadata, token === null ? {} : { fence: token }, shape);
    assert.deepEqual((await inner.readRange(ID)).at(-1), resumed.resumed, `${shape}: the stored resume is the one reported`);
  }
});
