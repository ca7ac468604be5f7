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

/**
 * What `acquireFenceIf` resolves to, exactly one of two shapes:
 * `{ fence }`: acquired, `fence` is the new token, the expected one plus one;
 * `{ stale: true, fence }`: lost, `fence` is the current token. `fence` is a
 * safe non-negative integer; `stale` is absent or the boolean `true` (not
 * `false`, not another truthy value). `resume` refuses any other reply with
 * an `InputError` whose `code` is `'STORE_CONTRACT'`, having appended nothing.
 */
export type AcquireIfResult = { fence: number; stale?: undefined } | { fence: number; stale: true };

/**
 * The store interface `resume` drives. `readRange` and `appendIfParked` are
 * required: a resume's one append is `appendIfParked(id, parkSeq, [event])`,
 * with the resume's token in `event.metadata.fence` when it took one, so a
 * park answered or deleted meanwhile is refused with nothing written. `resume`
 * refuses a store without it up front (`TypeError`, `code: 'NOT_A_STORE'`),
 * whatever its fencing: without the park-conditional append, two tokenless
 * resumers would both land, and a delete between a resume's acquire and its
 * append would recreate the log. The fencing methods decide the path:
 * - `acquireFenceIf`: the conditional acquire (both race windows closed);
 * - `acquireFence` alone: fencing-only (the documented residual window);
 * - neither: no tokens; `appendIfParked` lands a resume at most once.
 *
 * `append` is what a resumed body writes through; `resume` itself never
 * calls it.
 *
 * A store refuses a stale append by throwing `StaleFenceError` (or any error
 * whose `name` is `'StaleFenceError'`), with `current` set to the current
 * token, above the one the append carried; a `parkSeq` that is not in the
 * log by throwing an error whose `code` is `'PARK_SEQ_OUT_OF_RANGE'`; and a
 * `parkSeq` whose event is not an `EXECUTION_SUSPENDED` (after a delete, a
 * log can grow back past the sequence a resumer read as its park) by throwing
 * an error whose `code` is `'NOT_A_PARK'`, checked in the same atomic step as
 * the rest of `acquireFenceIf` / `appendIfParked`; `resume` reads either as
 * "the park is gone" and refuses (`ResumeRefusedError`). Every
 * answer is checked: one outside this interface (see `AcquireIfResult`; an
 * `acquireFence` token below 1; an `appendIfParked` envelope that is not the
 * event sent, token included; a `parkAnswered` that is not `true`; a stale
 * refusal without such a `current`) rejects `resume` with an `InputError`
 * whose `code` is `'STORE_CONTRACT'`, and nothing more is written.
 */
export interface EventStore {
  readRange(executionId: string, fromSeq?: number, toSeq?: number): Promise<Envelope[]>;
  append(executionId: string, event: NewEvent): Promise<Envelope>;
  appendMany?(executionId: string, events: NewEvent[]): Promise<Envelope[]>;
  acquireFence?(executionId: string): Promise<number>;
  acquireFenceIf?(executionId: string, expect: ParkExpectation): Promise<AcquireIfResult>;
  appendIfParked(
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
  /** Bumps the token only if it is `fence` and nothing answered the park at `parkSeq`. Rejects with a `RangeError` `PARK_SEQ_OUT_OF_RANGE` when `parkSeq` is not in the log, and an `InputError` `NOT_A_PARK` when its event is not a park. */
  acquireFenceIf(executionId: string, expect: ParkExpectation): Promise<AcquireIfResult>;
  /** Appends only while the park at `parkSeq` is unanswered; `{ parkAnswered: true }` otherwise, with nothing written. Rejects like `acquireFenceIf` when `parkSeq` is not in the log or not a park. */
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
 * under a fresh token, appended with `store.appendIfParked`. Rejects with
 * `ResumeRefusedError` (the park is not open: answered, superseded, after the
 * execution ended, or deleted under the resume; nothing appended),
 * `ResumeContendedError` (rivals kept the token moving; retry later), a typed
 * input error, an `InputError` with `code: 'STORE_CONTRACT'` (the store
 * answered outside the interface), a `TypeError` with `code: 'NOT_A_STORE'`
 * (no `readRange` or `appendIfParked`), or whatever the store threw.
 */
export function resume(store: EventStore, executionId: string, options: ResumeOptions): Promise<Resumed>;

/** Whether the event answers a park: a kernel answering kind, or an unknown kind stamped `metadata.kernel === true`. */
export function isAnsweringKind(event: { kind: string; metadata?: JsonObject }): boolean;

/**
 * The newest `EXECUTION_SUSPENDED` with no answering event after it, in a log
 * given from its first event; `undefined` when there is none, or when the
 * execution has ended (terminal is absorbing: a park after the end is not open).
 */
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

/** Malformed input other than a bad number: an execution id, an event, a batch, or a host store's answer outside the interface (`code: 'STORE_CONTRACT'`). */
export class InputError extends TypeError {
  readonly name: 'InputError';
  /** `'INVALID_ID'`, `'INVALID_EVENT'`, `'MIXED_FENCES'`, `'NOT_A_PARK'`, `'STORE_CONTRACT'`, … */
  code: string;
}
