// Types for the `loomfence` package's resume entry (the timers, retention's
// sweep, the supervision, the follower and the inbox are `loomfence/services`,
// services.d.ts). Hand-written: they describe the contract (numbers, errors,
// the store interface), which the generated bindings cannot say.
//
// Every method and getter of the package's classes (and of the services'
// classes, TimerService and ChildSupervisor included) refuses a receiver that is not an instance of
// its class (`Class.prototype.method.call(other, …)`) with a `TypeError`
// whose `code` is `'WRONG_RECEIVER'`, before anything changes: thrown, or,
// from a method that returns a promise, rejected with.
// Every id (an execution id, a lease holder) is a string with no lone
// surrogate (`str.isWellFormed()`), refused otherwise, as any bad id is.

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
  /** Retention's paged listing; see `RetentionStore`. */
  listExecutions?(after: string | null | undefined, limit: number): Promise<ExecutionSummary[]>;
  /** Retention's guarded delete; see `RetentionStore`. */
  deleteExecutionIf?(executionId: string, guard: DeleteGuard): Promise<GuardedDelete>;
  /** The change feed; see `FeedStore`. */
  feed?(after: FeedCursor, limit: number): Promise<FeedEntry[]>;
  /** The feed's head; see `FeedStore`. */
  feedHead?(): Promise<FeedCursor>;
  /** The open parks; see `FeedStore`. */
  openParks?(after: string | null | undefined, limit: number): Promise<string[]>;
  /** The wait for the next commit; see `FeedStore`. */
  waitForFeed?(after: FeedCursor): Promise<void>;
}

/**
 * A place in a store's change feed: everything at or before it has been read.
 * Compared `epoch` first, then `position`; both safe non-negative integers.
 * `{ epoch: 0, position: 0 }` is before every event. A store with one writer
 * keeps `epoch` 0; a store whose commits interleave (PostgreSQL) uses it for
 * the committing transaction.
 */
export interface FeedCursor {
  epoch: number;
  position: number;
}

/** One event of the feed, with the cursor a follower holds once it has read it. */
export interface FeedEntry {
  cursor: FeedCursor;
  event: Envelope;
}

/**
 * What a `Follower` needs of a store: its change feed, every committed event
 * once, in an order a cursor can keep. In the store's words:
 * - `feed(after, limit)`: up to `limit` (1 to 10 000) events committed after
 *   `after`, cursors strictly increasing, each execution's events in sequence
 *   order. **No skip**: an event committed after a reader reached cursor `c`
 *   is listed by a later read after `c` (never hand out a cursor past an
 *   event not yet visible). An event whose log was deleted is not listed;
 *   a cursor is never reused.
 * - `feedHead()`: the cursor of the last event a read could list now; it
 *   never goes back.
 * - `openParks(after, limit)`: up to `limit` (1 to 10 000) executions with
 *   ids after `after` (`null` for the first page), in id order, whose last
 *   answering event (`isAnsweringKind`) is an `EXECUTION_SUSPENDED`, kept in
 *   the same atomic step as the appends. It may list one whose park is no
 *   longer open, never omit one that is.
 * - `waitForFeed(after)`: resolves once the feed may hold something after
 *   `after`: at once when the head is past it, else on a commit (a wake that
 *   is lost costs the follower its poll interval, never an event).
 * A limit out of bounds rejects (`InputError` `INVALID_LIMIT`); a follower
 * checks every answer (the core's checks, the Rust runtime's too): one
 * outside this interface is an `InputError` `STORE_CONTRACT`, handed to its
 * `onError`, and the same read is tried again after its poll interval.
 */
export interface FeedStore {
  feed(after: FeedCursor, limit: number): Promise<FeedEntry[]>;
  feedHead(): Promise<FeedCursor>;
  openParks(after: string | null | undefined, limit: number): Promise<string[]>;
  waitForFeed(after: FeedCursor): Promise<void>;
}

/**
 * The core's in-memory store. Every method settles at once; concurrent calls
 * never overlap inside it. Malformed input rejects with `InputError`,
 * `RangeError` or `TypeError` and changes nothing.
 */
export class MemoryEventStore implements EventStore, FeedStore {
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
  /**
   * Up to `limit` executions that have a log, ids after `after` (exclusive;
   * `null` or omitted for the first page), in id order (UTF-8 byte order).
   * `limit` is 1 to 10 000: a `TypeError` `NOT_A_NUMBER` for a non-number,
   * an `InputError` `INVALID_LIMIT` for any other value out of bounds.
   */
  listExecutions(after: string | null | undefined, limit: number): Promise<ExecutionSummary[]>;
  /**
   * Deletes the log as `deleteExecution` does (a real token is kept), only
   * while `guard` still holds, decided in the same step as the delete.
   * Rejects before anything changes with a `RangeError` `OUT_OF_RANGE` for a
   * `head` or `seen` that is not a safe non-negative integer, an
   * `InputError` `INVALID_LIMIT` for more than 1 000 parents, an
   * `InputError` `INVALID_ID` for a bad id.
   */
  deleteExecutionIf(executionId: string, guard: DeleteGuard): Promise<GuardedDelete>;
  /**
   * Up to `limit` (1 to 10 000) events written after `after`, in the order
   * they were written; every cursor's `epoch` is 0. A cursor that is not an
   * object rejects with a `TypeError` `NOT_AN_OBJECT`, a part that is not a
   * number with a `TypeError` `NOT_A_NUMBER`, one that is not a safe
   * non-negative integer with a `RangeError` `OUT_OF_RANGE`; a limit that is
   * not a number with a `TypeError` `NOT_A_NUMBER`, any other out of bounds
   * with an `InputError` `INVALID_LIMIT`.
   */
  feed(after: FeedCursor, limit: number): Promise<FeedEntry[]>;
  /** The cursor of the last event written (deleted or not), `{ epoch: 0, position: 0 }` before any. */
  feedHead(): Promise<FeedCursor>;
  /** Up to `limit` (1 to 10 000) parked executions, ids after `after`, in id order. Refuses a bad limit as `feed` does. */
  openParks(after: string | null | undefined, limit: number): Promise<string[]>;
  /** Resolves at once when the head is past `after`, else on the next append. Refuses a bad cursor as `feed` does. */
  waitForFeed(after: FeedCursor): Promise<void>;
}

// ---------------------------------------------------------------------------
// Retention's store side: the listing and the guarded delete, which
// `sweep` (`loomfence/services`) drives (docs/design.md, Retention). A
// finished child is never deleted while its parent is parked on it.

/** When an execution ended: its first terminal event (terminal is absorbing). */
export interface Ended {
  sequence: number;
  /** The terminal event's `at`, ms since the epoch: what a sweep's cutoff is compared with. */
  at: number;
}

/** One execution as a listing reports it. */
export interface ExecutionSummary {
  executionId: string;
  /** Its last sequence; from 1 (a listed execution has a log). */
  head: number;
  /** Its first terminal event (`EXECUTION_COMPLETED`, `_FAILED`, `_CANCELLED`, `_CONTINUED`), `null` while it runs. */
  ended: Ended | null;
}

/** A parent's log as a sweep's pin check saw it: its head then (0 for no log). */
export interface ParentMark {
  parent: string;
  seen: number;
}

/**
 * What a sweep saw, which must still hold for its delete to happen: the head
 * of the log being deleted, and every parent whose pin was checked with the
 * head it was checked at (at most 1 000; `parents` omitted: none).
 */
export interface DeleteGuard {
  head: number;
  parents?: ParentMark[];
}

/**
 * What a guarded delete answers, exactly one of: `{ deleted: true }`;
 * `{ logChanged: true, head }` (the log's head is `head`, not the guard's: it
 * grew, or is gone at 0; nothing changed); `{ parentMoved: true, parent }`
 * (`parent`, one of the guard's, has a log shorter than `seen` or an
 * answering event after it: a park, a resume, an end; nothing changed).
 */
export type GuardedDelete =
  | { deleted: true }
  | { logChanged: true; head: number }
  | { parentMoved: true; parent: string };

/**
 * What `sweep` needs of a store, beyond `readRange(id, 1)` (the whole log;
 * no log reads as `[]`):
 * - `listExecutions(after, limit)`: up to `limit` executions that have a log
 *   (a token without a log is not listed), ids after `after` (exclusive;
 *   `null` for the first page) in the store's id order, each with its head and
 *   its first terminal event; an empty page is the end;
 * - `deleteExecutionIf(id, guard)`, in ONE atomic step: the log's head (0
 *   for none) differs from `guard.head` → `{ logChanged: true, head }`; else,
 *   for each mark in order, the parent's head is below `seen` or it has an
 *   answering event (`isAnsweringKind`) after `seen` → `{ parentMoved: true,
 *   parent }`; else delete exactly as `deleteExecution` does →
 *   `{ deleted: true }`.
 * `tests/conformance-js/plain-store.js` is one in plain JavaScript, and the
 * kit (`retention::…`) holds a store to it. `sweep` checks every answer (the
 * core's checks, the Rust runtime's too): one outside this interface rejects
 * it with an `InputError` `STORE_CONTRACT`.
 */
export interface RetentionStore {
  readRange(executionId: string, fromSeq?: number, toSeq?: number): Promise<Envelope[]>;
  listExecutions(after: string | null | undefined, limit: number): Promise<ExecutionSummary[]>;
  deleteExecutionIf(executionId: string, guard: DeleteGuard): Promise<GuardedDelete>;
  /**
   * Optional: the whole logs of `executionIds` (at most 10 000), one per id in
   * the same order, `[]` for an id with no log: a page's reads in one call.
   * Without it the sweep calls `readRange(id, 1)` for each.
   */
  readLogs?(executionIds: string[]): Promise<Envelope[][]>;
  /**
   * Optional: each entry's guarded delete, as `deleteExecutionIf` does it, in
   * order, one outcome per entry (one transaction for the lot on a SQL store).
   * Without it the sweep calls `deleteExecutionIf` for each.
   */
  deleteExecutionsIf?(batch: { executionId: string; guard: DeleteGuard }[]): Promise<GuardedDelete[]>;
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
 * (no `readRange` or `appendIfParked`, or a store that throws when looked
 * at), or whatever the store threw. Options that throw while they are read
 * (a getter, a Proxy trap, a revoked Proxy) reject with an `InputError`
 * `INVALID_OPTIONS` whose `cause` is what was thrown; it never throws
 * synchronously.
 * Given the package's own `MemoryEventStore` (its methods untouched), the
 * whole resume runs inside WebAssembly as one step; given any other store
 * (a wrapper, a subclass, a method replaced), it calls the store's methods,
 * one awaited call a step. Both answer alike.
 */
export function resume(store: EventStore, executionId: string, options: ResumeOptions): Promise<Resumed>;

/** Whether the event answers a park: a kernel answering kind, or an unknown kind stamped `metadata.kernel === true`. */
export function isAnsweringKind(event: { kind: string; metadata?: JsonObject }): boolean;

/**
 * The newest `EXECUTION_SUSPENDED` with no answering event after it, in a log
 * given from its first event; `undefined` when there is none, or when the
 * execution has ended (terminal is absorbing: a park after the end is not open).
 * The answer is the element of `events` itself, not a copy. Each envelope's
 * fields are checked for their types (an `InputError` `INVALID_EVENT`, a
 * `TypeError` or a `RangeError` otherwise); payloads, which the fold never
 * reads, are not walked.
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

/** Malformed input other than a bad number: an execution id, an event, a batch, a count out of its bounds (`code: 'INVALID_LIMIT'`), or a host store's answer outside the interface (`code: 'STORE_CONTRACT'`). */
export class InputError extends TypeError {
  constructor(message?: string, code?: string);
  readonly name: 'InputError';
  /** `'INVALID_ID'`, `'INVALID_EVENT'`, `'MIXED_FENCES'`, `'NOT_A_PARK'`, `'INVALID_LIMIT'`, `'INVALID_LINEAGE'`, `'INVALID_PARK'`, `'UNKNOWN_KIND'`, `'INVALID_OPTIONS'`, `'UNEXPECTED_ANSWER'`, `'STORE_CONTRACT'`, `'UNREADABLE'` (a field of the input threw while read; what it threw is `cause`), … */
  code: string;
}
