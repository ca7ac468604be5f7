// Types for the `loomfence` package. Hand-written: they describe the
// contract (numbers, errors, the store interface), which the generated
// bindings cannot say.

/** A JSON object: an event's payload or metadata. */
export type JsonObject = { [key: string]: unknown };

/** An event as a writer hands it to a store. */
export interface NewEvent {
  /** A kernel kind (see `KERNEL_EVENT_KINDS`) or an application kind. */
  kind: string;
  payload?: JsonObject;
  /**
   * `fence`: the writer's token (a safe non-negative integer).
   * `kernel: true`: stamps an unknown kind as a kernel kind from a newer node.
   */
  metadata?: JsonObject;
  /** Milliseconds since the epoch, supplied by the caller. */
  at: number;
}

/** A stored event. */
export interface Envelope {
  executionId: string;
  /** From 1, contiguous, assigned by the store. */
  sequence: number;
  kind: string;
  payload: JsonObject;
  metadata: JsonObject;
  at: number;
}

/** What `acquireFenceIf` expects: the token the park was written under, and the park. */
export interface ParkExpectation {
  fence: number;
  parkSeq: number;
}

/** `{ fence }`: acquired, `fence` is the new token. `{ stale: true, fence }`: lost, `fence` is the current token. */
export type AcquireIfResult = { fence: number; stale?: undefined } | { fence: number; stale: true };

/**
 * The store interface `resume` drives. Only `readRange` and `append` are
 * required; the rest decide the resume path:
 * - `acquireFenceIf`: the conditional acquire (both race windows closed);
 * - `acquireFence` alone: fencing-only (the documented residual window);
 * - neither: no tokens; `appendIfParked`, when present, still lands a
 *   resume at most once.
 *
 * A store refuses a stale append by throwing `StaleFenceError` (or any error
 * whose `name` is `'StaleFenceError'`, with `current` set to the current
 * token), and a `parkSeq` past the log's head by throwing an error whose
 * `code` is `'PARK_SEQ_OUT_OF_RANGE'`.
 */
export interface EventStore {
  readRange(executionId: string, fromSeq?: number, toSeq?: number): Promise<Envelope[]>;
  append(executionId: string, event: NewEvent): Promise<Envelope>;
  appendMany?(executionId: string, events: NewEvent[]): Promise<Envelope[]>;
  acquireFence?(executionId: string): Promise<number>;
  acquireFenceIf?(executionId: string, expect: ParkExpectation): Promise<AcquireIfResult>;
  appendIfParked?(
    executionId: string,
    parkSeq: number,
    events: NewEvent[],
  ): Promise<Envelope[] | { parkAnswered: true }>;
  deleteExecution?(executionId: string): Promise<boolean>;
}

/**
 * The core's in-memory store. Every method settles at once; concurrent calls
 * never overlap inside it. Malformed input rejects with `InputError`,
 * `RangeError` or `TypeError` and changes nothing.
 */
export class MemoryEventStore implements EventStore {
  constructor();
  free(): void;
  /** Rejects with `StaleFenceError` when the event's token is older than the current one. */
  append(executionId: string, event: NewEvent): Promise<Envelope>;
  /** All or nothing, one guard decision for the batch. */
  appendMany(executionId: string, events: NewEvent[]): Promise<Envelope[]>;
  /** From `fromSeq` (default 1) to `toSeq` (default: the head), inclusive. */
  readRange(executionId: string, fromSeq?: number, toSeq?: number): Promise<Envelope[]>;
  /** Bumps the token unconditionally; resolves to the new one. */
  acquireFence(executionId: string): Promise<number>;
  /** Bumps the token only if it is `fence` and nothing answered the park at `parkSeq`. */
  acquireFenceIf(executionId: string, expect: ParkExpectation): Promise<AcquireIfResult>;
  /** Appends only while the park at `parkSeq` is unanswered; `{ parkAnswered: true }` otherwise, with nothing written. */
  appendIfParked(
    executionId: string,
    parkSeq: number,
    events: NewEvent[],
  ): Promise<Envelope[] | { parkAnswered: true }>;
  /** The current token, 0 if nobody ever acquired. */
  currentFence(executionId: string): Promise<number>;
  /** Deletes the log, keeping a real token; resolves to whether a log existed. */
  deleteExecution(executionId: string): Promise<boolean>;
}

export interface ResumeOptions {
  /** The sequence of the park being answered, as `locatePark` gives it. */
  fenceIfParkedAt: number;
  /** Stored as the resume's `payload.answer`. */
  answer?: unknown;
  /** The resume's timestamp in ms; defaults to `Date.now()`. */
  at?: number;
}

export interface Resumed {
  executionId: string;
  /** The token the body now holds; `null` when no token was taken. */
  fence: number | null;
  /** The stored `EXECUTION_RESUMED`. */
  resumed: Envelope;
  /** Acquisitions it took (0 without a token). */
  attempts: number;
  /** The sequence the body continues after. */
  head: number;
}

/**
 * Answers the park at `options.fenceIfParkedAt` with one `EXECUTION_RESUMED`
 * under a fresh token. Rejects with `ResumeRefusedError` (the park is not
 * open; nothing appended, no token taken), `ResumeContendedError` (rivals
 * kept the token moving; retry later), a typed input error, or whatever the
 * store threw.
 */
export function resume(store: EventStore, executionId: string, options: ResumeOptions): Promise<Resumed>;

/** Whether the event answers a park: a kernel answering kind, or an unknown kind stamped `metadata.kernel === true`. */
export function isAnsweringKind(event: { kind: string; metadata?: JsonObject }): boolean;

/** The newest `EXECUTION_SUSPENDED` with no answering event after it. */
export function locatePark(events: Envelope[]): Envelope | undefined;

/** Every kernel event kind. */
export const KERNEL_EVENT_KINDS: readonly string[];

/** A writer whose token is older than the execution's current one. Nothing was written. */
export class StaleFenceError extends Error {
  constructor(message?: string, fields?: { executionId?: string; presented?: number | null; current?: number });
  readonly name: 'StaleFenceError';
  executionId: string;
  /** The token the append carried; `null` for an unfenced append. */
  presented: number | null;
  /** The execution's current token. */
  current: number;
}

/** The park is not open (answered, superseded, gone). Final for this park. */
export class ResumeRefusedError extends Error {
  readonly name: 'ResumeRefusedError';
  executionId: string;
  parkSeq: number;
  reason: 'not-suspended';
}

/** Rivals kept moving the token while the park stayed open. Retry later. */
export class ResumeContendedError extends Error {
  readonly name: 'ResumeContendedError';
  readonly retryable: true;
  executionId: string;
  attempts: number;
}

/** Malformed input other than a bad number: an execution id, an event, a batch. */
export class InputError extends TypeError {
  readonly name: 'InputError';
  /** `'INVALID_ID'`, `'INVALID_EVENT'`, `'MIXED_FENCES'`, … */
  code: string;
}
