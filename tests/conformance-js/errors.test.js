// The package's errors, as a JavaScript caller meets them:
// - the classes are real Error subclasses, one identity for `import` and
//   `require`;
// - `resume` understands a host store's refusals however the host spells
//   them (its own class, a plain object with the right `name`, a `code`);
// - malformed input from JavaScript (wrong types, unknown fields, NUL
//   characters, bad timestamps, bad tokens and sequences, bad ids) gets the
//   documented typed error and leaves the store unchanged, on the package's
//   MemoryEventStore and on the plain-JavaScript store alike.
//
// The documented errors (wasm/src/js_errors.rs, the package README):
//   a number that is not a safe non-negative integer   RangeError (code)
//   a value that is not a number where one is needed   TypeError (code)
//   a bad execution id, a malformed event, mixed fences InputError (a TypeError) with code
//   a stale writer                                       StaleFenceError

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, test } from 'node:test';
import * as loomfence from 'loomfence';

import { PlainEventStore } from './plain-store.js';
import { AT, Witness, assertRejects, describe as describeError, event, expect, fenced, park, show, wrap } from './support.js';

const { InputError, MemoryEventStore, ResumeContendedError, ResumeRefusedError, StaleFenceError, isAnsweringKind, resume } = loomfence;
const CLASSES = { StaleFenceError, ResumeRefusedError, ResumeContendedError, InputError };

// ---------------------------------------------------------------------------
// The classes.

/** One instance of each class, as the package itself throws it. */
async function thrownByThePackage() {
  const store = new MemoryEventStore();
  const parkSeq = await park(store, 'e');
  const caught = {};
  const catching = async (name, promise) => {
    try {
      await promise;
    } catch (error) {
      caught[name] = error;
      return;
    }
    assert.fail(`expected ${name}`);
  };
  await catching('InputError', store.append('', event('app.x')));
  await store.acquireFence('e');
  await catching('StaleFenceError', store.append('e', fenced(event('STEP_STARTED'), 0)));
  const hostile = wrap(store, {
    async acquireFenceIf(id, expectation) {
      await store.acquireFence(id);
      return store.acquireFenceIf(id, expectation);
    },
  });
  await catching('ResumeContendedError', resume(hostile, 'e', { fenceIfParkedAt: parkSeq, answer: null, at: AT }));
  await resume(store, 'e', { fenceIfParkedAt: parkSeq, answer: null, at: AT });
  await catching('ResumeRefusedError', resume(store, 'e', { fenceIfParkedAt: parkSeq, answer: null, at: AT }));
  return caught;
}

describe('error classes', () => {
  test('each is a real Error subclass with its own name, a message and a stack', async () => {
    const thrown = await thrownByThePackage();
    for (const [name, Class] of Object.entries(CLASSES)) {
      assert.equal(typeof Class, 'function', `${name} is exported`);
      assert.equal(Class.name, name);
      assert.ok(Class.prototype instanceof Error, `${name}.prototype inherits from Error.prototype`);
      const constructed = name === 'InputError' ? new Class('made here', 'SOME_CODE') : new Class('made here', {});
      for (const [how, error] of [['thrown by the package', thrown[name]], ['constructed', constructed]]) {
        const what = `${name} ${how}`;
        assert.ok(error instanceof Error, `${what}: instanceof Error`);
        assert.ok(error instanceof Class, `${what}: instanceof its own class`);
        assert.equal(error.constructor, Class, `${what}: its constructor`);
        assert.equal(error.name, name, `${what}: name`);
        assert.equal(Object.prototype.toString.call(error), '[object Error]', `${what}: a genuine Error object`);
        assert.ok(typeof error.message === 'string' && error.message.length > 0, `${what}: a message`);
        assert.ok(typeof error.stack === 'string' && error.stack.length > 0, `${what}: a stack`);
        assert.ok(error.stack.startsWith(`${name}: ${error.message}`), `${what}: the stack starts with name and message: ${error.stack.split('\n')[0]}`);
        assert.ok(error.stack.includes('\n    at '), `${what}: the stack has frames`);
        for (const [otherName, Other] of Object.entries(CLASSES)) {
          if (otherName !== name) assert.ok(!(error instanceof Other), `${what} is not a ${otherName}`);
        }
      }
    }
    assert.ok(thrown.InputError instanceof TypeError, 'InputError is a TypeError');
    assert.equal(typeof thrown.InputError.code, 'string');
    assert.deepEqual(
      { executionId: thrown.StaleFenceError.executionId, presented: thrown.StaleFenceError.presented, current: thrown.StaleFenceError.current },
      { executionId: 'e', presented: 0, current: 1 },
    );
    assert.deepEqual(
      { retryable: thrown.ResumeContendedError.retryable, attempts: thrown.ResumeContendedError.attempts, executionId: thrown.ResumeContendedError.executionId },
      { retryable: true, attempts: 3, executionId: 'e' },
    );
    assert.deepEqual(
      { reason: thrown.ResumeRefusedError.reason, parkSeq: thrown.ResumeRefusedError.parkSeq, executionId: thrown.ResumeRefusedError.executionId },
      { reason: 'not-suspended', parkSeq: 2, executionId: 'e' },
    );
  });

  test('import and require give the same module: the same classes, functions and store', async () => {
    const required = createRequire(import.meta.url)('loomfence');
    for (const name of Object.keys(loomfence)) {
      assert.equal(required[name], loomfence[name], `require('loomfence').${name} is import's ${name}`);
    }
    for (const name of ['StaleFenceError', 'ResumeRefusedError', 'ResumeContendedError', 'InputError', 'MemoryEventStore', 'resume', 'isAnsweringKind', 'locatePark', 'KERNEL_EVENT_KINDS']) {
      assert.ok(name in required, `require('loomfence') exports ${name}`);
    }
    // An error thrown by a store made through require is an instance of the
    // classes made through import, and the other way round.
    const store = new required.MemoryEventStore();
    await assert.rejects(store.append('', event('x')), InputError);
    await assert.rejects(new MemoryEventStore().append('', event('x')), required.InputError);
    await store.acquireFence('e');
    await assert.rejects(store.append('e', fenced(event('x'), 0)), StaleFenceError);
  });

  test('loomfence/services: import and require give the same module, and its errors are the resume entry\'s classes', async () => {
    const services = await import('loomfence/services');
    const required = createRequire(import.meta.url)('loomfence/services');
    for (const name of Object.keys(services)) {
      assert.equal(required[name], services[name], `require('loomfence/services').${name} is import's ${name}`);
    }
    // The services run in a second WebAssembly module, whose glue imports
    // the same errors.js: what it throws is an instance of the classes the
    // resume entry exports, not of a copy.
    const malformed = { listExecutions: async () => 'not a list', readRange: async () => [], deleteExecutionIf: async () => ({ deleted: false }) };
    const refusal = await services.sweep(malformed, { endedBefore: AT }).then(
      () => assert.fail('a listing that is not a list must be refused'),
      (error) => error,
    );
    assert.ok(refusal instanceof InputError, `${refusal}`);
    assert.equal(refusal.code, 'STORE_CONTRACT');
    assert.throws(() => services.parentOf([{ executionId: 'c', sequence: 1, kind: 'EXECUTION_STARTED', payload: { parent: 7 }, metadata: {}, at: 0 }]), InputError);
    assert.throws(() => new services.RedrivePolicy({ maxAttempts: -1 }), services.TimerInputError);
    assert.equal(services.TimerInputError, required.TimerInputError);
  });
});

// ---------------------------------------------------------------------------
// resume over host stores that refuse in their own words.

/** A host store over a plain store whose first resume append (the
 * park-conditional one) is refused: a rival acquires, and the store throws
 * `makeError(current)`. */
function refusingOnce(makeError) {
  const inner = new PlainEventStore();
  let refused = false;
  return {
    inner,
    store: wrap(inner, {
      async appendIfParked(id, parkSeq, events) {
        if (!refused) {
          refused = true;
          const current = await inner.acquireFence(id);
          throw makeError(current, id, events[0].metadata?.fence);
        }
        return inner.appendIfParked(id, parkSeq, events);
      },
    }),
  };
}

describe('resume understands a host store', () => {
  class HostsOwnStaleFenceError extends Error {
    constructor(current) {
      super(`stale: the token is now ${current}`);
      this.name = 'StaleFenceError';
      this.current = current;
    }
  }
  const spellings = {
    "that throws the package's StaleFenceError": (current, id, presented) =>
      new StaleFenceError('stale', { executionId: id, presented, current }),
    "that throws a plain object { name: 'StaleFenceError', current }": (current) => ({ name: 'StaleFenceError', current }),
    "that throws its own class named 'StaleFenceError'": (current) => new HostsOwnStaleFenceError(current),
    "that throws an Error whose name is set to 'StaleFenceError'": (current) => Object.assign(new Error('stale'), { name: 'StaleFenceError', current }),
  };
  for (const [how, makeError] of Object.entries(spellings)) {
    test(how, async () => {
      const { inner, store } = refusingOnce(makeError);
      const parkSeq = await park(inner, 'h');
      const resumed = await resume(store, 'h', { fenceIfParkedAt: parkSeq, answer: 'late', at: AT });
      // Told "stale, current 2", resume re-read the park and retried on 2.
      assert.deepEqual({ fence: resumed.fence, attempts: resumed.attempts }, { fence: 3, attempts: 2 });
      assert.equal(resumed.resumed.metadata.fence, 3);
      assert.deepEqual((await inner.readRange('h')).map((e) => e.kind), ['EXECUTION_STARTED', 'EXECUTION_SUSPENDED', 'EXECUTION_RESUMED']);
    });
  }

  test("that reports a park gone with a plain object { code: 'PARK_SEQ_OUT_OF_RANGE' }", async () => {
    const inner = new PlainEventStore();
    const parkSeq = await park(inner, 'g');
    const store = wrap(inner, {
      async acquireFenceIf() {
        throw { code: 'PARK_SEQ_OUT_OF_RANGE' };
      },
    });
    await assert.rejects(resume(store, 'g', { fenceIfParkedAt: parkSeq, answer: null, at: AT }), (error) => {
      assert.ok(error instanceof ResumeRefusedError, describeError(error));
      assert.equal(error.reason, 'not-suspended');
      return true;
    });
    assert.equal(await inner.currentFence('g'), 0);
  });

  for (const method of ['acquireFenceIf', 'appendIfParked']) {
    test(`that reports a park gone from ${method}() with a plain object { code: 'NOT_A_PARK' }`, async () => {
      const inner = new PlainEventStore();
      const parkSeq = await park(inner, 'n');
      const before = await Witness.capture(inner, 'n');
      const store = wrap(inner, {
        async [method]() {
          throw { code: 'NOT_A_PARK' };
        },
      });
      await assert.rejects(resume(store, 'n', { fenceIfParkedAt: parkSeq, answer: null, at: AT }), (error) => {
        assert.ok(error instanceof ResumeRefusedError, describeError(error));
        assert.equal(error.reason, 'not-suspended');
        return true;
      });
      const after = await Witness.capture(inner, 'n');
      assert.deepEqual(after.events, before.events, 'nothing appended');
    });
  }

  test("whose other errors reach the caller unchanged (the very same value)", async () => {
    const inner = new PlainEventStore();
    const parkSeq = await park(inner, 'f');
    const failures = [new Error('disk on fire'), { name: 'SomethingElse', current: 7 }, 'a thrown string'];
    for (const failure of failures) {
      for (const method of ['readRange', 'acquireFenceIf', 'appendIfParked']) {
        const store = wrap(inner, {
          async [method]() {
            throw failure;
          },
        });
        await assert.rejects(resume(store, 'f', { fenceIfParkedAt: parkSeq, answer: null, at: AT }), (error) => {
          assert.equal(error, failure, `${method}() threw ${show(failure)}`);
          return true;
        });
      }
    }
    assert.equal((await inner.readRange('f')).length, 2, 'nothing was appended');
  });

  test('whose methods answer plain values instead of promises', async () => {
    const inner = new MemoryEventStore();
    const parkSeq = await park(inner, 's');
    const log = await inner.readRange('s');
    const fences = new Map();
    // A synchronous toy store: every method returns its answer directly.
    const store = {
      readRange: (id, from) => log.filter((e) => e.sequence >= (from ?? 1)),
      acquireFenceIf: (id, { fence }) => {
        const current = fences.get(id) ?? 0;
        if (current !== fence) return { stale: true, fence: current };
        fences.set(id, current + 1);
        return { fence: current + 1 };
      },
      appendIfParked: (id, parkSeq, [ev]) => {
        if (log.slice(parkSeq).some(isAnsweringKind)) return { parkAnswered: true };
        const envelope = { executionId: id, sequence: log.length + 1, payload: {}, metadata: {}, ...ev };
        log.push(envelope);
        return [envelope];
      },
    };
    const resumed = await resume(store, 's', { fenceIfParkedAt: parkSeq, answer: 1, at: AT });
    assert.deepEqual({ fence: resumed.fence, sequence: resumed.resumed.sequence }, { fence: 1, sequence: 3 });
  });
});

// ---------------------------------------------------------------------------
// Malformed input: the typed error, and nothing changes.

const E = {
  badId: expect.badId,
  notAString: expect.notAString,
  notANumber: expect.notANumber,
  outOfRange: expect.outOfRange,
  notAnObject: expect.notAnObject,
  notAnArray: expect.notAnArray,
  invalidEvent: expect.invalidEvent,
  atOutOfRange: expect.atOutOfRange,
  /** Any TypeError, InputError included: a value of the wrong type. */
  wrongType: { type: TypeError },
  badFence: expect.badFence,
};

/** The witness executions: `w` (parked and fenced, where every valid-id case
 * writes) and what a backend that truncated a bad id would hit. */
const WITNESSES = ['w', 'a', 'x'.repeat(255)];

/** [what, call(store), expected] for every malformed input. */
function malformedInputs() {
  const cases = [];
  const add = (what, call, expected) => cases.push({ what, call, expected });
  const appendBoth = (what, bad, expected) => {
    add(`append: ${what}`, (s) => s.append('w', bad), expected);
    add(`appendMany: ${what}, as event 1`, (s) => s.appendMany('w', [event('app.ok'), bad]), expected);
  };

  // The event itself.
  for (const bad of [null, undefined, [], 'EXECUTION_STARTED', 7]) {
    add(`append: an event that is ${show(bad)}`, (s) => s.append('w', bad), E.notAnObject);
  }
  for (const bad of [{}, 'x', null, undefined]) {
    add(`appendMany: events that are ${show(bad)}`, (s) => s.appendMany('w', bad), E.notAnArray);
  }
  add('appendMany: events [null]', (s) => s.appendMany('w', [null]), E.notAnObject);

  // Wrong types and shapes inside the event.
  appendBoth('a kind that is a number', { kind: 1, at: AT }, E.invalidEvent);
  appendBoth('no kind', { at: AT }, E.invalidEvent);
  appendBoth('no at', { kind: 'app.x' }, E.invalidEvent);
  appendBoth('a payload that is null', event('app.x', { payload: null }), E.invalidEvent);
  appendBoth('a payload that is a string', event('app.x', { payload: 'text' }), E.invalidEvent);
  appendBoth('a payload that is an empty array', event('app.x', { payload: [] }), E.invalidEvent);
  appendBoth('a payload that is an array', event('app.x', { payload: [1, 2] }), E.invalidEvent);
  appendBoth('a payload that is a Map', event('app.x', { payload: new Map([['a', 1]]) }), E.invalidEvent);
  appendBoth("metadata that is an array ['a']", event('app.x', { metadata: ['a'] }), E.invalidEvent);
  appendBoth('metadata that is a number', event('app.x', { metadata: 5 }), E.invalidEvent);

  // Unknown fields: an event is { kind, payload?, metadata?, at } and
  // nothing else (a writer cannot choose its sequence or its execution).
  appendBoth('an unknown field "extra"', { ...event('app.x'), extra: 1 }, E.invalidEvent);
  appendBoth('a "sequence" field', { ...event('app.x'), sequence: 99 }, E.invalidEvent);
  appendBoth('an "executionId" field naming another execution', { ...event('app.x'), executionId: 'a' }, E.invalidEvent);
  appendBoth('a misspelt "metdata" field', { ...event('EXECUTION_RESUMED'), metdata: { fence: 1 } }, E.invalidEvent);

  // Values JSON cannot hold.
  for (const [what, value] of [
    ['NaN', NaN],
    ['Infinity', Infinity],
    ['a BigInt', 12345678901234567890n],
    ['a Date', new Date(0)],
    ['a function', () => 1],
    ['a Symbol', Symbol('s')],
  ]) {
    appendBoth(`${what} in the payload`, event('app.x', { payload: { value } }), E.invalidEvent);
  }

  // NUL characters.
  appendBoth('a NUL in the kind', event('a\0b'), E.invalidEvent);
  appendBoth('a NUL in a payload string', event('app.x', { payload: { text: 'a\0b' } }), E.invalidEvent);
  appendBoth('a NUL in a payload key', event('app.x', { payload: { 'k\0': 1 } }), E.invalidEvent);
  appendBoth('a NUL deep in the metadata', event('app.x', { metadata: { a: [{ b: ['\0'] }] } }), E.invalidEvent);

  // Timestamps: a number (else a TypeError) that is a safe integer, negative
  // allowed (else a RangeError, as for every other number).
  for (const at of ['1', null, true, 1n]) appendBoth(`at = ${show(at)}`, { kind: 'app.x', at }, E.wrongType);
  for (const at of [1.5, -0.5, NaN, Infinity, -Infinity, 2 ** 53, -(2 ** 53)]) {
    appendBoth(`at = ${show(at)}`, { kind: 'app.x', at }, E.atOutOfRange);
  }

  // Tokens: metadata.fence is a safe non-negative integer.
  for (const fence of [-1, -0.5, 1.5, 2 ** 53, 2 ** 64, NaN, Infinity, '1', null, true, {}, [1], 1n]) {
    appendBoth(`metadata.fence = ${show(fence)}`, event('EXECUTION_RESUMED', { metadata: { fence } }), E.badFence(fence));
  }
  add('appendMany: a fenced and an unfenced event', (s) => s.appendMany('w', [fenced(event('STEP_STARTED'), 1), event('STEP_COMPLETED')]), expect.mixedFences);

  // Sequences and tokens as arguments.
  for (const bad of [-1, 1.5, 2 ** 53, NaN, Infinity]) {
    add(`readRange: fromSeq = ${show(bad)}`, (s) => s.readRange('w', bad), E.outOfRange);
    add(`readRange: toSeq = ${show(bad)}`, (s) => s.readRange('w', 1, bad), E.outOfRange);
    add(`acquireFenceIf: fence = ${show(bad)}`, (s) => s.acquireFenceIf('w', { fence: bad, parkSeq: 2 }), E.outOfRange);
    add(`acquireFenceIf: parkSeq = ${show(bad)}`, (s) => s.acquireFenceIf('w', { fence: 1, parkSeq: bad }), E.outOfRange);
  }
  for (const bad of ['1', true, 1n, {}]) {
    add(`readRange: fromSeq = ${show(bad)}`, (s) => s.readRange('w', bad), E.notANumber);
    add(`readRange: toSeq = ${show(bad)}`, (s) => s.readRange('w', 1, bad), E.notANumber);
    add(`acquireFenceIf: fence = ${show(bad)}`, (s) => s.acquireFenceIf('w', { fence: bad, parkSeq: 2 }), E.notANumber);
    add(`acquireFenceIf: parkSeq = ${show(bad)}`, (s) => s.acquireFenceIf('w', { fence: 1, parkSeq: bad }), E.notANumber);
  }
  add('acquireFenceIf: no fence', (s) => s.acquireFenceIf('w', { parkSeq: 2 }), E.notANumber);
  for (const bad of [undefined, null, 'x', 1]) {
    add(`acquireFenceIf: an expectation that is ${show(bad)}`, (s) => s.acquireFenceIf('w', bad), E.notAnObject);
  }

  // Ids, on every operation.
  const operations = {
    append: (s, id) => s.append(id, fenced(event('EXECUTION_RESUMED'), 1)),
    appendMany: (s, id) => s.appendMany(id, [fenced(event('EXECUTION_RESUMED'), 1)]),
    readRange: (s, id) => s.readRange(id, 1),
    currentFence: (s, id) => s.currentFence(id),
    deleteExecution: (s, id) => s.deleteExecution(id),
    acquireFence: (s, id) => s.acquireFence(id),
    acquireFenceIf: (s, id) => s.acquireFenceIf(id, { fence: 1, parkSeq: 2 }),
  };
  const ids = [
    ['empty', '', E.badId],
    ['256 bytes', 'x'.repeat(256), E.badId],
    ['256 bytes of 2-byte characters', 'é'.repeat(128), E.badId],
    ['containing NUL', 'a\0b', E.badId],
    ['a number', 1, E.notAString],
    ['null', null, E.notAString],
    ['undefined', undefined, E.notAString],
    ['an object', { toString: () => 'w' }, E.notAString],
    ['a String object', new String('w'), E.notAString],
  ];
  for (const [what, id, expected] of ids) {
    for (const [name, call] of Object.entries(operations)) add(`${name}: an id ${what}`, (s) => call(s, id), expected);
  }

  // resume's own arguments.
  const resumeWith = (options, id = 'w') => (s) => resume(s, id, options);
  add('resume: fenceIfParkedAt = -1', resumeWith({ fenceIfParkedAt: -1 }), E.outOfRange);
  add('resume: fenceIfParkedAt = 1.5', resumeWith({ fenceIfParkedAt: 1.5 }), E.outOfRange);
  add('resume: fenceIfParkedAt = 2^53', resumeWith({ fenceIfParkedAt: 2 ** 53 }), E.outOfRange);
  add("resume: fenceIfParkedAt = '2'", resumeWith({ fenceIfParkedAt: '2' }), E.notANumber);
  add('resume: no fenceIfParkedAt', resumeWith({ answer: 1 }), E.notANumber);
  add('resume: at = 1.5', resumeWith({ fenceIfParkedAt: 2, at: 1.5 }), { type: RangeError });
  add('resume: at = 2^53', resumeWith({ fenceIfParkedAt: 2, at: 2 ** 53 }), { type: RangeError });
  add("resume: at = '1'", resumeWith({ fenceIfParkedAt: 2, at: '1' }), E.wrongType);
  add('resume: options that are undefined', (s) => resume(s, 'w'), E.notAnObject);
  add('resume: an empty execution id', resumeWith({ fenceIfParkedAt: 2 }, ''), E.badId);
  add('resume: an execution id containing NUL', resumeWith({ fenceIfParkedAt: 2 }, 'a\0b'), E.badId);
  add('resume: an execution id that is a number', resumeWith({ fenceIfParkedAt: 2 }, 7), E.notAString);
  add('resume: an answer holding a BigInt', resumeWith({ fenceIfParkedAt: 2, answer: { n: 1n } }), E.wrongType);
  add('resume: an answer holding a NUL', resumeWith({ fenceIfParkedAt: 2, answer: 'a\0b' }), E.wrongType);
  return cases;
}

const STORES = [
  { label: 'memory', make: () => new MemoryEventStore() },
  { label: 'plain', make: () => new PlainEventStore() },
];

const UNDEFINED_FIELDS = 'an explicitly undefined payload or metadata is the same as leaving it out';

for (const { label, make } of STORES) {
  describe(`malformed input [${label}]`, () => {
    const cases = malformedInputs();
    for (const { what, call, expected } of cases) {
      const title = `${what} -> ${expected.type.name}${expected.code ? ` ${expected.code}` : ''}`;
      test(title, async () => {
        const store = make();
        await park(store, 'w');
        await store.acquireFence('w');
        await park(store, 'a');
        await park(store, 'x'.repeat(255));
        const before = await Promise.all(WITNESSES.map((id) => Witness.capture(store, id)));
        await assertRejects(Promise.resolve().then(() => call(store)), expected, title);
        for (const witness of before) await witness.assertUnchanged(store, title);
      });
    }

    test('the boundaries are accepted: at = ±(2^53-1), at = -1, fence = 2^53-1, a 255-byte id', async () => {
      const store = make();
      for (const at of [Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, -1, 0]) {
        assert.equal((await store.append('edge', { kind: 'app.x', at })).at, at);
      }
      const top = await store.append('edge-fence', event('EXECUTION_STARTED', { metadata: { fence: Number.MAX_SAFE_INTEGER } }));
      assert.equal(top.metadata.fence, Number.MAX_SAFE_INTEGER);
      const id = 'x'.repeat(255);
      assert.equal((await store.append(id, event('app.x'))).executionId, id);
      assert.equal((await store.readRange('edge', 0, Number.MAX_SAFE_INTEGER)).length, 4);
    });

    test(UNDEFINED_FIELDS, async () => {
      const store = make();
      const stored = await store.append('u', { kind: 'app.x', payload: undefined, metadata: undefined, at: AT });
      assert.deepEqual(stored, { executionId: 'u', sequence: 1, kind: 'app.x', payload: {}, metadata: {}, at: AT });
    });
  });
}
