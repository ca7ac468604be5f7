// The error classes of the `loomfence` package, and the factories the
// WebAssembly side calls to throw them. They are plain JavaScript classes so
// that they are real `Error`s: `instanceof` works, and V8 gives them a stack.
// This file is bundled by wasm-bindgen as a snippet; the package's entry
// points re-export the classes from it, so there is exactly one of each.

/**
 * An append (or a resume's append) was refused because its writer no longer
 * holds the execution: someone acquired the fence after it. Nothing was
 * written. A host store throws this (or any error whose `name` is
 * 'StaleFenceError') to refuse a stale append.
 */
export class StaleFenceError extends Error {
  constructor(message, { executionId, presented = null, current } = {}) {
    super(message);
    this.name = 'StaleFenceError';
    this.executionId = executionId;
    this.presented = presented;
    this.current = current;
  }
}

/** A resume refused without appending anything: the park is not open. Final. */
export class ResumeRefusedError extends Error {
  constructor(message, { executionId, parkSeq, reason = 'not-suspended' } = {}) {
    super(message);
    this.name = 'ResumeRefusedError';
    this.executionId = executionId;
    this.parkSeq = parkSeq;
    this.reason = reason;
  }
}

/** Rivals kept moving the fence; the park is still open. Retry later. */
export class ResumeContendedError extends Error {
  constructor(message, { executionId, attempts } = {}) {
    super(message);
    this.name = 'ResumeContendedError';
    this.retryable = true;
    this.executionId = executionId;
    this.attempts = attempts;
  }
}

/**
 * Malformed input that is neither a bad number (RangeError) nor a value of
 * the wrong type (TypeError): a bad execution id, a malformed event, a batch
 * with mixed fences. A TypeError, so generic checks still catch it.
 */
export class InputError extends TypeError {
  constructor(message, code) {
    super(message);
    this.name = 'InputError';
    this.code = code;
  }
}

export function staleFenceError(message, executionId, presented, current) {
  return new StaleFenceError(message, { executionId, presented, current });
}

export function resumeRefusedError(message, executionId, parkSeq) {
  return new ResumeRefusedError(message, { executionId, parkSeq, reason: 'not-suspended' });
}

export function resumeContendedError(message, executionId, attempts) {
  return new ResumeContendedError(message, { executionId, attempts });
}

export function inputError(message, code) {
  return new InputError(message, code);
}

export function rangeError(message, code) {
  const error = new RangeError(message);
  error.code = code;
  return error;
}

export function typeError(message, code) {
  const error = new TypeError(message);
  error.code = code;
  return error;
}

/** A bug in the binding (a core answer it does not know), never bad input. */
export function internalError(message) {
  const error = new Error(message);
  error.code = 'INTERNAL';
  return error;
}

/** The classes, for the package's entry points to re-export. */
export function errorClasses() {
  return { StaleFenceError, ResumeRefusedError, ResumeContendedError, InputError };
}
