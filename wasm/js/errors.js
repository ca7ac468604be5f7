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

/**
 * A timer call refused its input before it touched anything: a row, a claim,
 * a lease, a listing, a policy, a random draw, a backoff entry or a fire
 * machine's answer that the core does not accept. `code` says which input
 * ('INVALID_ROW', 'INVALID_ID', 'INVALID_TIME', 'INVALID_ATTEMPT',
 * 'INVALID_LIMIT', 'INVALID_LEASE', 'INVALID_HOLDER', 'INVALID_CLAIM',
 * 'INVALID_FILTER', 'INVALID_DRAW', 'INVALID_POLICY', 'INVALID_BACKOFF',
 * 'INVALID_CONTEXT', 'INVALID_OUTCOME', 'NOT_DUE', 'UNEXPECTED_ANSWER', and
 * 'UNREADABLE' for a field that threw while it was read); the
 * TimerService (npm/timer-service.js) adds 'INVALID_OPTIONS'.
 */
export class TimerInputError extends Error {
  constructor(message, code) {
    super(message);
    this.name = 'TimerInputError';
    this.code = code;
  }
}

/**
 * A chain of timer retries that gave up: carried (not thrown) by the one
 * fire outcome that retired its row, for the host to report once. The
 * execution is left to recover().
 */
export class RedriveExhaustedError extends Error {
  constructor(message, { executionId, wakeAt, attempts } = {}) {
    super(message);
    this.name = 'RedriveExhaustedError';
    this.executionId = executionId;
    this.wakeAt = wakeAt;
    this.attempts = attempts;
  }
}

/**
 * A due timer row the host's timer store could not read (answered beside its
 * claims in `unreadable`, or a malformed element of its claim list): not
 * claimed, not fired until someone repairs or deletes it. The TimerService
 * hands it to onError (stage 'unreadable') once per node and row, and counts
 * it in its poll report's `unreadable`; the other rows go on. `row` is the
 * `UnreadableRow` ({ executionId, wakeAt, field, detail }) naming it.
 */
export class UnreadableTimerRowError extends Error {
  constructor(message, row) {
    super(message);
    this.name = 'UnreadableTimerRowError';
    this.code = 'UNREADABLE_TIMER_ROW';
    this.row = row;
  }
}

/**
 * The refusal of an input that threw while the package read it: an
 * InputError with `code`, its message naming `what` and what was thrown,
 * the thrown value kept as `cause` (for the caller's debugging; the package
 * never reads it).
 */
export function unreadable(what, code, thrown) {
  const error = new InputError(`${what} could not be read: ${thrownText(thrown)}`, code);
  error.cause = thrown;
  return error;
}

/** `unreadable`'s twin for a timer input: a TimerInputError with `code`. */
export function timerUnreadable(what, code, thrown) {
  const error = new TimerInputError(`${what} could not be read: ${thrownText(thrown)}`, code);
  error.cause = thrown;
  return error;
}

/**
 * What a caller's object threw while the package read it, for a message:
 * its `message` when it is an Error, else its type. Never throws itself,
 * whatever was thrown (a revoked Proxy, a `toString` that throws), and never
 * hands the thrown value on: it is the caller's, not data.
 */
export function thrownText(thrown) {
  try {
    if (thrown instanceof Error) return String(thrown.message);
  } catch {
    // A revoked Proxy, or a getter that throws: described by its type.
  }
  return thrown === null ? 'null' : `a ${typeof thrown}`;
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

export function timerInputError(message, code) {
  return new TimerInputError(message, code);
}

export function redriveExhaustedError(message, executionId, wakeAt, attempts) {
  return new RedriveExhaustedError(message, { executionId, wakeAt, attempts });
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
  return {
    StaleFenceError,
    ResumeRefusedError,
    ResumeContendedError,
    InputError,
    TimerInputError,
    RedriveExhaustedError,
    UnreadableTimerRowError,
  };
}
