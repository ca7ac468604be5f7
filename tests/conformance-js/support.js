// Helpers the kit's cases share: event builders, park set-up, the "nothing
// changed" witness and typed-error matchers. The JavaScript twin of
// tests/conformance/src/support.rs.

import assert from 'node:assert/strict';
import { InputError, StaleFenceError } from 'loomfence';
import { mulberry32 as prng } from '../../www/js/prng.js';

/** The timestamp every kit event carries; the kernel never reads a clock. */
export const AT = 1_700_000_000_000;

/** The design's classification of the kernel kinds (docs/design.md), written out
 * here rather than read from the package, so the kit checks the table
 * instead of trusting it. */
export const ANSWERING_KINDS = Object.freeze([
  'EXECUTION_RESUMED',
  'EXECUTION_SUSPENDED',
  'EXECUTION_COMPLETED',
  'EXECUTION_FAILED',
  'EXECUTION_CANCELLED',
  'EXECUTION_CONTINUED',
]);
export const IGNORABLE_KINDS = Object.freeze([
  'EXECUTION_STARTED',
  'EXECUTION_DENIED',
  'EXECUTION_MIGRATED',
  'OUTCOME_RECORDED',
  'STEP_STARTED',
  'STEP_COMPLETED',
  'STEP_FAILED',
  'MESSAGE_CONSUMED',
  'ANNOTATION_ADDED',
]);

/** An unfenced event of `kind`; `extra` may set payload and metadata. */
export function event(kind, extra = {}) {
  return { kind, at: AT, ...extra };
}

/** `ev` written under token `fence`. */
export function fenced(ev, fence) {
  return { ...ev, metadata: { ...ev.metadata, fence } };
}

/** `ev` stamped as a kernel kind (`metadata.kernel === true`). */
export function stamped(ev) {
  return { ...ev, metadata: { ...ev.metadata, kernel: true } };
}

/** Starts `id` and parks it, unfenced; resolves to the park's sequence. */
export async function park(store, id) {
  const written = await store.appendMany(id, [event('EXECUTION_STARTED'), event('EXECUTION_SUSPENDED')]);
  assert.equal(written.length, 2, 'starting and parking a fresh execution writes two events');
  return written[1].sequence;
}

/** The sequences of some envelopes. */
export function sequences(envelopes) {
  return envelopes.map((e) => e.sequence);
}

/** How many EXECUTION_RESUMED events the log of `id` holds. */
export async function resumesOf(store, id) {
  return (await store.readRange(id)).filter((e) => e.kind === 'EXECUTION_RESUMED');
}

/**
 * Everything observable about one execution: its log and its token. Taken
 * before a refused call and compared after, it proves the call changed
 * nothing.
 */
export class Witness {
  static async capture(store, id) {
    const witness = new Witness();
    witness.id = id;
    witness.events = await store.readRange(id);
    witness.fence = await store.currentFence(id);
    return witness;
  }

  async assertUnchanged(store, after) {
    const now = await Witness.capture(store, this.id);
    assert.deepEqual(
      { events: now.events, fence: now.fence },
      { events: this.events, fence: this.fence },
      `execution ${JSON.stringify(this.id)} changed after ${after}`,
    );
  }
}

/** Asserts `promise` rejects with a StaleFenceError carrying these tokens
 * (`presented` is null for an unfenced batch). */
export async function assertStale(promise, presented, current, what = 'the append') {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof StaleFenceError, `${what}: expected a StaleFenceError, got ${describe(error)}`);
    assert.equal(error.name, 'StaleFenceError');
    assert.deepEqual(
      { presented: error.presented, current: error.current },
      { presented, current },
      `${what}: the stale refusal carries the wrong tokens`,
    );
    return true;
  });
}

/**
 * Asserts `promise` rejects with an error of class `type` (InputError,
 * RangeError, TypeError, …) and, when given, this `code`. An `InputError` is
 * also a TypeError, so `type: TypeError` accepts one; `type: InputError`
 * requires it.
 */
export async function assertRejects(promise, { type, code }, what) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof type, `${what}: expected a ${type.name}${code ? ` (${code})` : ''}, got ${describe(error)}`);
    if (code !== undefined) assert.equal(error.code, code, `${what}: wrong code on ${describe(error)}`);
    assert.ok(typeof error.message === 'string' && error.message.length > 0, `${what}: the error has no message`);
    return true;
  });
}

/** The checks a refusal of malformed input must pass, by kind of input. */
export const expect = {
  badId: { type: InputError, code: 'INVALID_ID' },
  notAString: { type: TypeError, code: 'NOT_A_STRING' },
  notANumber: { type: TypeError, code: 'NOT_A_NUMBER' },
  outOfRange: { type: RangeError, code: 'OUT_OF_RANGE' },
  parkSeqOutOfRange: { type: RangeError, code: 'PARK_SEQ_OUT_OF_RANGE' },
  notAPark: { type: InputError, code: 'NOT_A_PARK' },
  invalidEvent: { type: InputError, code: 'INVALID_EVENT' },
  mixedFences: { type: InputError, code: 'MIXED_FENCES' },
  atOutOfRange: { type: RangeError, code: 'AT_OUT_OF_RANGE' },
  invalidLimit: { type: InputError, code: 'INVALID_LIMIT' },
  storeContract: { type: InputError, code: 'STORE_CONTRACT' },
  notAnObject: { type: TypeError, code: 'NOT_AN_OBJECT' },
  notAnArray: { type: TypeError, code: 'NOT_AN_ARRAY' },
  repeatedId: { type: InputError, code: 'REPEATED_ID' },
  /** A bad `metadata.fence`: RangeError for a number, TypeError otherwise. */
  badFence: (found) => ({ type: typeof found === 'number' ? RangeError : TypeError, code: 'BAD_FENCE' }),
};

/** A short description of a thrown value, for assertion messages. */
export function describe(error) {
  if (error instanceof Error) {
    return `${error.constructor.name}(name=${error.name}, code=${error.code}): ${error.message}`;
  }
  try {
    return `a non-Error ${JSON.stringify(error)}`;
  } catch {
    return `a non-Error ${String(error)}`;
  }
}

/** A value's description for test names and messages (handles -0, NaN,
 * BigInt, undefined and strings with NUL). */
export function show(value) {
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'number') return Object.is(value, -0) ? '-0' : String(value);
  if (value === undefined) return 'undefined';
  if (typeof value === 'string' && value.length > 24) return `${JSON.stringify(value.slice(0, 12))}…(${value.length} chars)`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * A store that forwards every call to `inner`, exposing exactly the methods
 * `inner` has (so `resume` sees the same capability), with `overrides`
 * replacing some. The kit uses it to put a rival in front of a call.
 */
export function wrap(inner, overrides = {}) {
  const view = {};
  for (const name of [
    'append',
    'appendMany',
    'appendIfParked',
    'readRange',
    'currentFence',
    'deleteExecution',
    'acquireFence',
    'acquireFenceIf',
    'listExecutions',
    'deleteExecutionIf',
    'feed',
    'feedHead',
    'openParks',
    'waitForFeed',
  ]) {
    if (typeof inner[name] === 'function') view[name] = inner[name].bind(inner);
  }
  for (const [name, method] of Object.entries(overrides)) {
    if (typeof inner[name] === 'function') view[name] = method;
  }
  return view;
}

/**
 * A view of `inner` that waits for the next turn of the event loop before
 * every call, so concurrent callers interleave at every store operation: the
 * widest race windows, every time (the twin of the runtime tests' Yielding).
 */
export function yielding(inner) {
  const overrides = {};
  for (const [name, method] of Object.entries(wrap(inner))) {
    overrides[name] = async (...args) => {
      await new Promise((resolve) => setImmediate(resolve));
      return method(...args);
    };
  }
  return wrap(inner, overrides);
}

/** The methods of a timer store (the package's `TimerStore` type). */
export const TIMER_METHODS = Object.freeze(['schedule', 'due', 'claimDue', 'complete', 'release', 'reschedule', 'exhaust']);

/** A timer store that forwards to `inner`, with `overrides` replacing some calls. */
export function wrapTimers(inner, overrides = {}) {
  const view = {};
  for (const name of TIMER_METHODS) view[name] = overrides[name] ?? inner[name].bind(inner);
  return view;
}

/** A timer store view that waits for the next turn of the event loop before every call. */
export function yieldingTimers(inner) {
  const overrides = {};
  for (const name of TIMER_METHODS) {
    overrides[name] = async (...args) => {
      await new Promise((resolve) => setImmediate(resolve));
      return inner[name](...args);
    };
  }
  return wrapTimers(inner, overrides);
}

/** A small seeded PRNG (mulberry32), so a jittery run can be replayed: the
 * browser demo's, one generator for both. */
export { prng };

/**
 * A view of `inner` that waits a random number (0 to 3) of event-loop turns
 * before every call, drawn from a PRNG seeded with `seed`: concurrent callers
 * interleave differently from call to call, so races are explored rather than
 * replayed in one fixed order.
 */
export function jittery(inner, seed) {
  const random = prng(seed);
  const overrides = {};
  for (const [name, method] of Object.entries(wrap(inner))) {
    overrides[name] = async (...args) => {
      for (let turns = Math.floor(random() * 4); turns > 0; turns--) {
        await new Promise((resolve) => setImmediate(resolve));
      }
      return method(...args);
    };
  }
  return wrap(inner, overrides);
}
