// What the property suites (props.test.js, replies.test.js) accept of a call
// handed a hostile value: how its outcome is taken (a promise-returning call
// must not throw synchronously), what a documented refusal is, and what the
// package's error classes, which a caller builds, may do.

import assert from 'node:assert/strict';
import * as resumeEntry from 'loomfence';
import * as servicesEntry from 'loomfence/services';

import { thrownValues } from './hostile.js';
import { describe as describeError } from './support.js';

/** Every export of the package: the resume entry's and the services'. */
const pkg = { ...resumeEntry, ...servicesEntry };

/** Classes whose instances are refusals the package documents without a `code`. */
const CODELESS = [pkg.StaleFenceError, pkg.ResumeRefusedError, pkg.ResumeContendedError];
/** Classes a refusal with a `code` may have. */
const CODED = [pkg.InputError, pkg.TimerInputError, pkg.UnreadableTimerRowError, TypeError, RangeError];
/** What must never surface: a WebAssembly trap, or the glue's borrow errors. */
const BROKEN = /unreachable|memory access out of bounds|recursive use of an object|borrowed|null pointer passed to rust|already mutably borrowed/i;

/**
 * `{ value }` or `{ error }` of `call()`. For `entry.async`, a synchronous
 * throw fails: a promise-returning call rejects.
 */
export async function outcomeOf(entry, call) {
  let returned;
  try {
    returned = call();
  } catch (error) {
    if (entry.async) assert.fail(`${entry.name}: threw synchronously instead of rejecting: ${describeError(error)}`);
    return { error };
  }
  if (!entry.async) return { value: returned };
  assert.ok(returned instanceof Promise, `${entry.name}: did not return a promise`);
  try {
    return { value: await returned };
  } catch (error) {
    return { error };
  }
}

/**
 * Asserts `error` is a refusal the package documents: one of its classes
 * (with a string `code` where the class has one), or a TypeError or
 * RangeError with a string `code`; never what a caller's object threw, never
 * a trap or a borrow error. An error class of the package built by the
 * caller (`entry.error`) may throw what `new Error(message)` throws.
 */
export function assertDocumented(error, entry) {
  const what = `${entry.name}: ${describeError(error)}`;
  assert.ok(!thrownValues.has(error), `${entry.name}: what the caller's object threw escaped as the refusal itself: ${what}`);
  assert.ok(error instanceof Error, `${entry.name}: refused with a non-Error: ${what}`);
  assert.ok(!(error instanceof WebAssembly.RuntimeError), `${entry.name}: a WebAssembly trap: ${what}`);
  assert.ok(!BROKEN.test(String(error.message)), `${entry.name}: the glue broke: ${what}`);
  if (CODELESS.some((Class) => error instanceof Class)) return;
  assert.ok(CODED.some((Class) => error instanceof Class), `${entry.name}: not a class the package documents: ${what}`);
  assert.equal(typeof error.code, 'string', `${entry.name}: a refusal without a code: ${what}`);
}

/**
 * The rule for the package's error classes, which a caller builds (a host
 * store throws StaleFenceError): plain JavaScript, they take a message as
 * `new Error(message)` does (constructed exactly when it is; what it throws,
 * they throw) and read their fields as a destructuring does (what a getter
 * throws escapes, as from any destructuring). Never a WebAssembly failure.
 */
export function assertLikeError(entry, value, outcome) {
  const throws = (f) => {
    try {
      f();
      return false;
    } catch {
      return true;
    }
  };
  if (entry.slot === 'message') {
    const expected = throws(() => new Error(value));
    assert.equal('error' in outcome, expected, `${entry.name}: ${'error' in outcome ? `threw ${describeError(outcome.error)}` : 'constructed'}, unlike new Error(message)`);
  }
  if ('error' in outcome) assert.ok(!(outcome.error instanceof WebAssembly.RuntimeError) && !BROKEN.test(String(outcome.error?.message)), `${entry.name}: the glue broke`);
}
