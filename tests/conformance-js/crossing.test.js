// Values crossing into and out of the package's WebAssembly as JSON text
// (wasm/js/events.js and json.js write it, wasm/src/json_text.rs reads and
// writes it): every JSON value comes back exactly, on every way out (the
// append's answer, a read, a resume's answer, both resume paths), and text a
// Rust string cannot hold is refused with nothing stored, never reshaped.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { InputError, MemoryEventStore, locatePark, resume } from 'loomfence';

import { AT, assertRejects, event, expect, park, wrap } from './support.js';

/** Values JSON holds, the awkward ones first. */
const EXACT = {
  floats: [1.5, 0.1, 0.1 + 0.2, -1.25e-7, 5e-324, Number.MAX_VALUE, 1e21, 2 ** 60, -(2 ** 53) - 2],
  integers: [0, -0, 1, -1, 2 ** 53 - 1, -(2 ** 53 - 1)],
  strings: ['', 'é', '\u{1F600}', 'a"b\\c', 'line\nbreak\ttab\r', '\u0001\u001f', '\u2028\u2029', '</script>'],
  nested: { a: [[[]], {}, [null, true, false]], 'key with "quotes"': { '': 'empty key' } },
};

/** EXACT as JSON gives it back (-0 is written 0). */
const AS_JSON = JSON.parse(JSON.stringify(EXACT));

/** `value` nested `depth` arrays deep. */
const nest = (depth, value = 1) => Array.from({ length: depth }).reduce((inner) => [inner], value);

describe('JSON crosses exactly', () => {
  for (const [label, make] of [['MemoryEventStore', () => new MemoryEventStore()], ['a view of it (the host path)', () => wrap(new MemoryEventStore())]]) {
    test(`${label}: an append, a read and a resume answer every value as written`, async () => {
      const store = make();
      const payload = structuredClone(EXACT);
      const appended = await store.append('x', event('EXECUTION_STARTED', { payload, metadata: { note: EXACT.strings } }));
      assert.deepEqual(appended.payload, AS_JSON);
      assert.ok(Object.is(appended.payload.integers[1], 0), '-0 is stored as 0, as JSON writes it');
      const [read] = await store.readRange('x');
      assert.deepEqual(read, appended);
      const parkSeq = (await store.append('x', event('EXECUTION_SUSPENDED'))).sequence;
      const resumed = await resume(store, 'x', { fenceIfParkedAt: parkSeq, answer: EXACT, at: AT });
      assert.deepEqual(resumed.resumed.payload.answer, AS_JSON);
      assert.deepEqual((await store.readRange('x', resumed.head))[0], resumed.resumed);
    });
  }

  test('an own `__proto__` key is data, in and out, and no object gets a new prototype', async () => {
    const store = new MemoryEventStore();
    const payload = JSON.parse('{"__proto__": {"polluted": true}, "ok": 1}');
    const appended = await store.append('p', event('X', { payload }));
    const [read] = await store.readRange('p');
    for (const copy of [appended.payload, read.payload]) {
      assert.equal(Object.getPrototypeOf(copy), Object.prototype);
      assert.deepEqual(Object.getOwnPropertyDescriptor(copy, '__proto__')?.value, { polluted: true });
    }
    assert.equal({}.polluted, undefined);
  });

  test('the envelope an append answers is a fresh copy, as a read gives it: no object shared, -0 as 0', async () => {
    const store = new MemoryEventStore();
    const payload = { a: { b: 1 } };
    const metadata = {};
    const first = await store.append('f', { kind: 'K', payload, metadata, at: -0 });
    assert.ok(Object.is(first.at, 0), 'at -0 is stored as 0');
    assert.notEqual(first.payload, payload);
    assert.notEqual(first.payload.a, payload.a);
    assert.notEqual(first.metadata, metadata);
    const second = await store.append('f', { kind: 'K', payload, metadata, at: -0 });
    assert.notEqual(second.payload, first.payload);
    assert.notEqual(second.metadata, first.metadata);
    payload.a.b = 2;
    first.payload.a.b = 3;
    assert.deepEqual(await store.readRange('f'), [{ ...first, payload: { a: { b: 1 } } }, second]);
    // A refused event, then a batch, then one event: each answer is its own event's.
    await assertRejects(store.append('f', { kind: 'K', payload: { n: 1n }, at: 1 }), expect.invalidEvent, 'a BigInt');
    const [batched] = await store.appendMany('f', [{ kind: 'B', payload: { x: 1 }, at: 5 }]);
    const third = await store.append('f', { kind: 'C', at: 6 });
    assert.deepEqual([batched.kind, batched.payload, third.kind, third.payload, third.metadata, third.at], ['B', { x: 1 }, 'C', {}, {}, 6]);
    assert.deepEqual((await store.readRange('f', 3)), [batched, third]);
  });

  test('nesting: 128 levels below the payload are stored, 129 are refused', async () => {
    const store = new MemoryEventStore();
    const deep = await store.append('d', event('X', { payload: { v: nest(127) } }));
    assert.deepEqual(deep.payload, { v: nest(127) });
    await assertRejects(store.append('d', event('X', { payload: { v: nest(128) } })), expect.invalidEvent, 'too deep');
    assert.equal((await store.readRange('d')).length, 1);
  });
});

describe('what a Rust string cannot hold is refused, nothing stored', () => {
  const LONE = ['\uD800', 'a\uDC00b', '\uDBFF'];
  test('a lone surrogate in a payload, a metadata key or a kind: INVALID_EVENT', async () => {
    const store = new MemoryEventStore();
    await store.append('s', event('EXECUTION_STARTED'));
    for (const text of LONE) {
      await assertRejects(store.append('s', event('X', { payload: { text } })), expect.invalidEvent, `payload ${JSON.stringify(text)}`);
      await assertRejects(store.append('s', event('X', { metadata: { [text]: 1 } })), expect.invalidEvent, `metadata key ${JSON.stringify(text)}`);
      await assertRejects(store.append('s', event(`K${text}`)), expect.invalidEvent, `kind ${JSON.stringify(text)}`);
      await assertRejects(store.appendMany('s', [event('X'), event('Y', { payload: { text } })]), expect.invalidEvent, 'in a batch');
    }
    assert.equal((await store.readRange('s')).length, 1, 'nothing was stored');
  });

  test('a lone surrogate in a resume answer: INVALID_ANSWER, no token taken', async () => {
    for (const store of [new MemoryEventStore(), wrap(new MemoryEventStore())]) {
      const parkSeq = await park(store, 'r');
      await assertRejects(resume(store, 'r', { fenceIfParkedAt: parkSeq, answer: '\uD800', at: AT }), { type: TypeError, code: 'INVALID_ANSWER' }, 'answer');
      assert.equal(await store.currentFence('r'), 0);
      assert.equal((await store.readRange('r')).length, parkSeq);
    }
  });

  test('a lone surrogate in an execution id: INVALID_ID, on every call that takes one', async () => {
    const store = new MemoryEventStore();
    for (const id of LONE) {
      await assertRejects(store.append(id, event('EXECUTION_STARTED')), expect.badId, `append ${JSON.stringify(id)}`);
      await assertRejects(store.appendMany(id, [event('EXECUTION_STARTED')]), expect.badId, 'appendMany');
      await assertRejects(store.readRange(id), expect.badId, 'readRange');
      await assertRejects(store.currentFence(id), expect.badId, 'currentFence');
      await assertRejects(resume(store, id, { fenceIfParkedAt: 1, at: AT }), expect.badId, 'resume');
    }
    assert.deepEqual(await store.listExecutions(null, 10), [], 'nothing was stored under a reshaped id');
  });

  test('a surrogate pair is a character, and crosses whole', async () => {
    const store = new MemoryEventStore();
    const stored = await store.append('u', event('X', { payload: { face: '\uD83D\uDE00' } }));
    assert.equal(stored.payload.face, '\u{1F600}');
  });
});

describe('resume options are read once, in order', () => {
  test('a getter that throws rejects the resume with INVALID_OPTIONS, its error the cause, and nothing is taken', async () => {
    const store = new MemoryEventStore();
    const parkSeq = await park(store, 'g');
    const boom = new Error('boom');
    const options = { fenceIfParkedAt: parkSeq, get answer() { throw boom; }, at: AT };
    await assert.rejects(resume(store, 'g', options), (error) => error instanceof InputError && error.code === 'INVALID_OPTIONS' && error.cause === boom);
    assert.equal(await store.currentFence('g'), 0);
  });

  test('the first bad field is the one reported', async () => {
    const store = new MemoryEventStore();
    await park(store, 'o');
    await assertRejects(resume(store, 'o', { fenceIfParkedAt: 'x', answer: 1n, at: 'y' }), expect.notANumber, 'fenceIfParkedAt first');
    await assertRejects(resume(store, 'o', { fenceIfParkedAt: 2, answer: 1n, at: 'y' }), { type: TypeError, code: 'INVALID_ANSWER' }, 'then the answer');
    await assertRejects(resume(store, 'o', { fenceIfParkedAt: 2, answer: 1, at: 'y' }), expect.notANumber, 'then at');
  });
});

describe('locatePark', () => {
  const log = [
    { executionId: 'e', sequence: 1, kind: 'EXECUTION_STARTED', payload: { big: EXACT }, metadata: {}, at: 1 },
    { executionId: 'e', sequence: 2, kind: 'EXECUTION_SUSPENDED', payload: { waits: [] }, metadata: { fence: 0 }, at: 2 },
  ];

  test('answers the caller\'s own envelope, as Array.prototype.find would', () => {
    assert.equal(locatePark(log), log[1]);
  });

  test('checks each envelope\'s fields, not the insides of payloads it never reads', () => {
    for (const [what, bad] of [
      ['a Map payload', { ...log[0], payload: new Map() }],
      ['an array metadata', { ...log[0], metadata: [] }],
      ['a string sequence', { ...log[0], sequence: '1' }],
      ['a missing executionId', { ...log[0], executionId: undefined }],
      ['a fractional at', { ...log[0], at: 1.5 }],
    ]) {
      assert.throws(() => locatePark([bad, log[1]]), (e) => e instanceof TypeError || e instanceof RangeError, what);
    }
    // A payload member JSON cannot hold is the store's business, not the fold's.
    assert.equal(locatePark([{ ...log[0], payload: { n: 1n } }, log[1]]), log[1]);
  });

  test('reads every kind as the fold does: kernel kinds by the table, any other by its stamp, odd text too', () => {
    const after = (kind, metadata = {}) => [...log, { executionId: 'e', sequence: 3, kind, payload: {}, metadata, at: 3 }];
    for (const [kind, metadata, open] of [
      ['EXECUTION_RESUMED', {}, false],
      ['STEP_COMPLETED', { kernel: true }, true],
      ['MY_KIND', {}, true],
      ['MY_KIND', { kernel: true }, false],
      ['MY_KIND', { kernel: 'true' }, true],
      ['', {}, true],
      ['A\u0000B', { kernel: true }, false],
      ['A\nB', {}, true],
      ['execution_resumed', {}, true],
      ['EXECUTION_RESUMED ', {}, true],
      ['\u{1F600}', { kernel: true }, false],
    ]) {
      assert.equal(locatePark(after(kind, metadata)), open ? log[1] : undefined, JSON.stringify([kind, metadata]));
    }
    assert.equal(locatePark([{ ...log[0], kind: 'EXECUTION_COMPLETED' }, log[1]]), undefined, 'ended');
    // A kind with a lone surrogate is not text the core can hold: refused.
    assert.throws(() => locatePark(after('A\uD800')), (e) => e instanceof InputError && e.code === 'INVALID_EVENT');
  });
});
