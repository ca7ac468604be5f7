// Types for `loomfence/services`: the timers, the re-drive, retention's
// sweep, the supervision, the change feed's follower and the inbox, in a
// second WebAssembly module that a host loads only when it imports this
// entry. Hand-written, like `index.d.ts`, whose store, event and error types
// these build on. Every method and getter here refuses a foreign receiver
// and a badly formed id exactly as `index.d.ts` says.

import type { NewEvent, Envelope, EventStore, FeedCursor, FeedStore, RetentionStore, Resumed, StaleFenceError, ResumeRefusedError, ResumeContendedError } from './index.js';

// ---------------------------------------------------------------------------
// Retention: the sweep over a RetentionStore (index.d.ts), and the child →
// parent edge and the pin it judges by.

/** A finished execution kept because its parent is parked on it. */
export interface Pinned {
  child: string;
  parent: string;
}

/** An eligible, unpinned execution whose guarded delete the store refused: still there, judged again next sweep. */
export interface Kept {
  executionId: string;
  refusal: { logChanged: true; head: number } | { parentMoved: true; parent: string };
}

/**
 * An eligible execution the sweep kept because it cannot judge it; every
 * sweep keeps (and lists) it until the data in the way is repaired or removed.
 */
export interface Undecided {
  executionId: string;
  /**
   * Why, stable: `'UNREADABLE_LOG'` (the store threw `retryable: false` reading
   * its log), `'INVALID_LINEAGE'` (its recorded parent is not an execution id),
   * `'UNREADABLE_PARENT'` (the store threw `retryable: false` reading a parent),
   * `'INVALID_PARK'` (a parent's open park cannot be read), `'UNKNOWN_KIND'` (a
   * kernel kind this node does not know follows a parent's open park).
   */
  code: 'UNREADABLE_LOG' | 'INVALID_LINEAGE' | 'UNREADABLE_PARENT' | 'INVALID_PARK' | 'UNKNOWN_KIND';
  /** The parent the reason is about; `null` for the child's own log. */
  parent: string | null;
  /** A sentence for a person. */
  detail: string;
}

/** What a sweep did (in a dry run, would do). */
export interface SweepReport {
  dryRun: boolean;
  /** Executions listed. */
  examined: number;
  /** Of those, the ones that ended before the cutoff. */
  eligible: number;
  /** Listed but not eligible (running, or ended too recently): `examined - eligible`. Nothing else of them was read. */
  skipped: number;
  /** Deleted (would be, in a dry run). */
  deleted: number;
  /** Handed to the archive. */
  archived: number;
  pinned: Pinned[];
  kept: Kept[];
  /** Kept because the sweep cannot judge them: an answer, not a failure. */
  undecided: Undecided[];
  /** Listing pages read (the last one empty). */
  pages: number;
  /** Logs of eligible executions read (or tried): one each. */
  logReads: number;
  /** Parent logs read (or tried) for pins: only ever for eligible executions, each parent once per page. */
  parentReads: number;
  /** Batches of guarded deletes sent (each locks at most 256 executions). */
  deleteBatches: number;
}

export interface SweepOptions {
  /** Executions whose first terminal event is strictly before this time (ms since the epoch, a safe integer) are eligible. */
  endedBefore: number;
  /** Executions per listing page, 1 to 10 000 (default 1 000; `INVALID_LIMIT` otherwise). */
  pageLimit?: number;
  /** Decide everything and read what deciding needs, change nothing: no archive, no delete. `deleted` counts what would be. */
  dryRun?: boolean;
  /**
   * The archive itself, a function (anything else, `true` included, is refused
   * with `INVALID_OPTIONS` before anything is listed). Takes each log of a
   * listing page, one call per log, before any of that page's deletes, and
   * resolves once it is durable; a rejection stops the sweep with the page's
   * logs kept. At least once: a log
   * archived and then kept (a parent moved) is archived again by a later
   * sweep, so dedupe by `(executionId, sequence)`.
   */
  archive?: (executionId: string, events: Envelope[]) => Promise<void> | void;
  /**
   * Parents the host knows wait on a child besides the one its log records
   * (`payload.parent`): the edges of a supervisor, for logs written without
   * the field. Each is read and can pin the child, never unpin it. Must
   * return at most 1 000 execution ids (`UNEXPECTED_ANSWER` otherwise, and
   * for an answer that cannot be read: a revoked Proxy, a `then` that throws).
   */
  knownParents?: (childId: string) => string[] | Promise<string[]>;
}

/**
 * One retention sweep of `store`: pages through every execution with a log;
 * reads the log of those that ended before `endedBefore` (only those), then
 * each parent that could wait on it (its recorded parent and `knownParents`),
 * a page at a time (`readLogs` and `deleteExecutionsIf` when the store has them);
 * keeps it if a parent is parked on it (`pinned`); otherwise archives it (with
 * `archive`) and deletes it under a guard of what it read, so a parent that
 * parks on it in between keeps it (`kept`). Every decision is the core's
 * (`SweepMachine`). Run it from a service or a cron job.
 *
 * A child it cannot judge is kept and listed in `undecided` with a reason
 * code, and the sweep goes on. A store read that rejects with
 * `retryable: false` is such a case (`UNREADABLE_LOG`, `UNREADABLE_PARENT`).
 *
 * Rejects before touching the store with a `TypeError` `NOT_A_STORE` (a
 * method missing), an `InputError` `INVALID_OPTIONS` / `INVALID_LIMIT`. Any
 * other failure (the store, `archive`, `knownParents`, an answer outside the
 * interface: `InputError` `STORE_CONTRACT`) is rethrown as it came, with
 * `report` (what was done before; those deletes stand) set on it when it is
 * an object.
 */
export function sweep(store: RetentionStore, options: SweepOptions): Promise<SweepReport>;

/**
 * The `EXECUTION_STARTED` of a child started by `parentId`, at `at`: it
 * records `payload.parent`, the edge retention reads to find the one park that
 * could pin the child, after any restart. Write it as the child's first event.
 */
export function startedChild(parentId: string, at: number): NewEvent & { kind: 'EXECUTION_STARTED'; payload: { parent: string } };

/**
 * The parent the log's first `EXECUTION_STARTED` records, `null` for none (no
 * start; `parent` absent or `null`: a root, or a log written before the field).
 * A recorded parent that is not an execution id throws `InputError`
 * `INVALID_LINEAGE`: corrupt, never guessed.
 */
export function parentOf(events: Envelope[]): string | null;

/**
 * Whether `childId` must be kept because the parent whose whole log is
 * `parentEvents` is parked on it: the parent is not terminal and its open park
 * has a `CHILD_DONE` wait naming the child, by `key` or in a `group`. A parent
 * running, answered, ended, parked on something else, or with no log (`[]`)
 * does not pin. An open park whose waits cannot be read throws `InputError`
 * `INVALID_PARK`, one followed by a kernel kind this node does not know (stamped
 * `kernel: true` by a newer node) `UNKNOWN_KIND`: never a guess either way.
 */
export function pinParkedChildren(childId: string, parentEvents: Envelope[]): boolean;

// ---------------------------------------------------------------------------
// Timers: the re-drive backoff, the fire decision and the timer store.
//
// Times are milliseconds since the epoch, safe integers; a stored time is in
// 0..=2^53-1. Every refusal of input below is a `TimerInputError` whose `code`
// names the input, thrown (or rejected with, for the store's promises) before
// anything changed. An id or holder with a lone surrogate is `INVALID_ID` or
// `INVALID_HOLDER`. A host timer store's `claimDue` answer holds at most
// 10 000 claims and 10 000 unreadable rows (`UNEXPECTED_ANSWER` otherwise,
// refused by its length before any element is read).

/**
 * One row of a timer store, keyed by `(executionId, wakeAt)`. A plain wake
 * (no `redrive`) answers the TIMER wait at `wakeAt` of the execution's open
 * park; a re-drive row (`redrive: { attempt }`, the try of its chain from 0)
 * is handed to the host's re-drivers. `redrive: undefined` or `null` is read
 * as a plain wake; rows the package returns leave it out. Unknown fields are
 * refused (`INVALID_ROW`).
 */
export interface TimerRow {
  executionId: string;
  /** When the row is due, 0..=2^53-1 (`INVALID_TIME` otherwise). */
  wakeAt: number;
  /** 0..=2^31-1 (`INVALID_ATTEMPT` otherwise). */
  redrive?: { attempt: number } | null;
}

/** What a claim asks for: who claims, at what time, for how long. */
export interface Lease {
  /** The claiming node: 1 to 255 bytes of UTF-8, no NUL (`INVALID_HOLDER`). Unique per process. */
  holder: string;
  /** The claimer's clock: rows due by then are claimed, leases that ended by then are taken over. */
  now: number;
  /** 1..=86 400 000 ms, ending by 2^53-1 (`INVALID_LEASE` otherwise). Longer than one fire takes. */
  durationMs: number;
}

/**
 * A row held under a lease, exactly as `claimDue` returned it; `complete`
 * and `release` act only while it is the row's current claim.
 */
export interface Claim {
  /** The row as claimed (its flag included). */
  row: TimerRow;
  holder: string;
  /** The row's claim count at this claim, from 1: a later claim has a higher one. */
  number: number;
  /** When the lease ends. */
  expiresAt: number;
}

/**
 * A due row a host timer store could not read (a hand edit, a buggy or
 * foreign writer), or a malformed element of its claim list: not claimed,
 * not fired until someone repairs or deletes it, and named by its key as
 * stored so an operator can find it.
 */
export interface UnreadableRow {
  /** The stored id, as text (JSON text when it is not a string); it may not be a valid id. */
  executionId: string;
  /** The stored time, `null` when it is not a safe integer. */
  wakeAt: number | null;
  /** Which field did not read: `'claim'` for a claim malformed as a whole or outside its row. */
  field: 'executionId' | 'wakeAt' | 'redrive' | 'claims' | 'claim';
  /** What was wrong with it, short, for the operator. */
  detail: string;
}

/**
 * What `claimDue` resolves to: the claims, or, from a store that holds due
 * rows it could not read, `{ claims, unreadable }`. An unreadable row takes
 * no place in `limit` and is never claimed; one left out of `unreadable`
 * is simply not reported.
 */
export type ClaimAnswer = Claim[] | { claims: Claim[]; unreadable?: UnreadableRow[] };

/** Listing options. `redrive: false` leaves re-drive rows out before the limit. Default: every due row. */
export interface DueOptions {
  redrive?: boolean;
}

/** What a fire records when it gives up on a row: the tries made, and when (ms). */
export interface Exhaustion {
  attempts: number;
  at: number;
}

/**
 * What `complete`, `release`, `reschedule` and `exhaust` answer: `'done'` (the claim was current: the
 * row was retired, or handed back) or `'notHeld'` (the row is gone, was
 * scheduled again, or was claimed by someone else since: nothing changed; a
 * fire's decision is void).
 */
export type Completed = 'done' | 'notHeld';

/**
 * The timer store interface: rows keyed `(executionId, wakeAt)`, shared by
 * every node, under the core's rules (see `MemoryTimerStore`). Every method
 * is one atomic step. `tests/conformance-js/timer-kit.js` holds a store to it.
 * `reschedule` and `exhaust` are required (the `TimerService` refuses a
 * store without them): a `schedule` then a `complete` in place of the one
 * would let a fire that outlived its lease fork its re-drive chain, and a
 * `complete` in place of the other would leave no record of a chain that
 * ran out, for an operator to find and recover. A store that can hold rows it cannot
 * read (a database table edited by hand) answers them from `claimDue`
 * beside its claims (`ClaimAnswer`) rather than failing the claim: one bad
 * row must not stop every timer of the fleet. The `TimerService` also reads
 * each claim element on its own: a malformed one is not fired but reported
 * as an unreadable row, and the others fire.
 */
export interface TimerStore {
  schedule(row: TimerRow): Promise<void>;
  due(now: number, limit: number, options?: DueOptions): Promise<TimerRow[]>;
  claimDue(lease: Lease, limit: number, options?: DueOptions): Promise<ClaimAnswer>;
  complete(claim: Claim): Promise<Completed>;
  release(claim: Claim): Promise<Completed>;
  reschedule(claim: Claim, next: TimerRow): Promise<Completed>;
  /** Retires the claimed row and records its exhaustion in one step, only for the current claim. */
  exhaust(claim: Claim, exhaustion: Exhaustion): Promise<Completed>;
}

/**
 * The core's timer table in memory. Every method settles at once, so
 * concurrent calls never overlap inside it. The rules:
 * - `schedule` is an upsert that never downgrades: a re-drive flag already
 *   there is kept, one that comes is added (its attempt wins); it also ends
 *   any claim on the row, which is due again at once.
 * - `due` / `claimDue` take the earliest rows first, by `wakeAt` then by
 *   `executionId` in byte order; `{ redrive: false }` filters before `limit`
 *   (1..=10 000, `INVALID_LIMIT` otherwise).
 * - `claimDue` claims only rows nobody holds, or whose lease ended at or
 *   before `lease.now`; two claimers never hold one row.
 * - `complete` / `release` act only for the current claim (same holder and
 *   number); a claimer whose lease ended but whose row nobody claimed since
 *   still holds it.
 * - `reschedule` retires the claimed row and schedules `next` (the upsert
 *   above) in one step, only for the current claim; otherwise it answers
 *   `'notHeld'` and writes nothing. A `next` with the claimed row's key
 *   rejects with `TimerInputError` `INVALID_RESCHEDULE`.
 * - `exhaust` retires the claimed row and records its exhaustion beside
 *   the rows, in one step, only for the current claim; otherwise it answers
 *   `'notHeld'` and records nothing.
 * Malformed input rejects with `TimerInputError` and changes nothing.
 * Its rows are the core's typed values, never unreadable, so `claimDue`
 * answers a plain array. It is also an inbox (`InboxStore`, the core's
 * `InboxTable`): a send and its intent row are one step with the timers.
 */
export class MemoryTimerStore implements InboxStore {
  constructor();
  free(): void;
  /** Stores the message and schedules its intent row in one step, unless its key is there (then writes nothing). */
  send(message: Message, intent: TimerRow): Promise<Sent>;
  pending(executionId: string, channels: string[], limit: number): Promise<StoredMessage[]>;
  markConsumed(key: MessageKey): Promise<boolean>;
  purge(executionId: string): Promise<number>;
  messages(executionId: string): Promise<InboxEntry[]>;
  schedule(row: TimerRow): Promise<void>;
  /** Due rows (`wakeAt <= now`), claimed or not: for inspection. */
  due(now: number, limit: number, options?: DueOptions): Promise<TimerRow[]>;
  claimDue(lease: Lease, limit: number, options?: DueOptions): Promise<Claim[]>;
  /** Retires the row if `claim` is still its current claim. */
  complete(claim: Claim): Promise<Completed>;
  /** Hands the row back, due again at once, if `claim` is still its current claim. */
  release(claim: Claim): Promise<Completed>;
  /** Retires the row and schedules `next` in one step, if `claim` is still its current claim. */
  reschedule(claim: Claim, next: TimerRow): Promise<Completed>;
  /** Retires the row and records its exhaustion in one step, if `claim` is still its current claim. */
  exhaust(claim: Claim, exhaustion: Exhaustion): Promise<Completed>;
}

/** A policy's fields; each one left out takes its default. */
export interface RedrivePolicyInit {
  /** The first try's ceiling, ms (default 200). */
  baseMs?: number;
  /** The largest ceiling, ms (default 30 000). */
  capMs?: number;
  /** Retries before a chain gives up (default 8). */
  maxAttempts?: number;
}

/**
 * How contended wakes are retried: try `attempt` (from 0) waits
 * `floor(random * min(capMs, baseMs * 2^attempt))` ms; a chain gives up once
 * a try would be the `maxAttempts`-th. `baseMs` and `capMs` are safe
 * non-negative integers, `maxAttempts` a 32-bit unsigned one; an unknown field
 * is refused (`INVALID_POLICY`).
 */
export class RedrivePolicy {
  constructor(init?: RedrivePolicyInit);
  free(): void;
  readonly baseMs: number;
  readonly capMs: number;
  readonly maxAttempts: number;
  /** `min(capMs, baseMs * 2^attempt)`; `attempt` a 32-bit unsigned integer (`INVALID_ATTEMPT`). */
  ceilingMs(attempt: number): number;
  /**
   * The full-jitter delay of try `attempt` for the draw `random`, in
   * `[0, ceilingMs(attempt))` (0 when that is 0). `random` must be a number in
   * `[0, 1)`, as `Math.random()` gives (`INVALID_DRAW` otherwise; -0 is 0).
   */
  delayMs(attempt: number, random: number): number;
}

/**
 * When the row of a re-drive's next try is due: `max(now + delayMs,
 * firedWakeAt + 1)`, `now + delayMs` capped at 2^53-1; `undefined` when no
 * time in 0..=2^53-1 results (the chain cannot continue with a storable row).
 */
export function redriveWakeAt(now: number, delayMs: number, firedWakeAt: number): number | undefined;

/**
 * What a `WakeBackoff` remembers about one execution: the contended wake, the
 * next try (from 0), and the time before which no fire of the execution's
 * timers on this node acquires.
 */
export interface BackoffEntry {
  wakeAt: number;
  attempt: number;
  nextTryAt: number;
}

/**
 * This node's backoff of contended plain wakes, per execution, holding at most
 * `bound` executions (default 1024; `INVALID_BACKOFF` below 1). A new
 * execution in a full map evicts the entry with the earliest `nextTryAt`.
 * Give `get(row.executionId)` to each fire as `context.backoff`, and `apply`
 * what the fire ended in.
 */
export class WakeBackoff {
  constructor(bound?: number);
  free(): void;
  /** How many executions it holds at most. */
  readonly bound: number;
  /** How many it holds now. */
  readonly len: number;
  get(executionId: string): BackoffEntry | undefined;
  /**
   * Applies a fire's outcome for `row` (the `done` of its last poll): a
   * `backedOff` is recorded, a final outcome of the row the entry belongs to
   * (`fired`, `obsolete`, `exhausted`) clears it, anything else (re-drive
   * rows included) changes nothing. Returns what recording evicted.
   */
  apply(row: TimerRow, outcome: FireOutcome): { executionId: string; entry: BackoffEntry } | undefined;
}

/** What a fire is given besides its row. */
export interface FireContext {
  /** The current time (default `Date.now()`); the row must be due by then (`NOT_DUE`). */
  now?: number;
  /** The one random draw in `[0, 1)` the fire may need (default `Math.random()`). */
  random?: number;
  /** The retry schedule: a `RedrivePolicy` or its fields (default: the default policy). */
  policy?: RedrivePolicy | RedrivePolicyInit;
  /** This node's backoff entry for the execution, `WakeBackoff.get(executionId)`. Read for plain wakes. */
  backoff?: BackoffEntry | null;
  /** How many re-drivers this node has registered (default 0). Read for re-drive rows. */
  redrivers?: number;
}

/**
 * The answer a fired TIMER wait resumes its park with: the index of the wait
 * in the park's `waits`, and the timer.
 */
export interface TimerAnswer {
  wait: number;
  timer: { wakeAt: number };
}

/**
 * One thing for the host to do, then to answer:
 * - `readLog`: read the execution's whole log (`readRange(executionId, 1)`),
 *   answer `handleRead(events)`;
 * - `resume`: `resume(eventStore, row.executionId, request)` as given, answer
 *   `handleResumed` with what it resolved to, or with the
 *   `ResumeRefusedError` / `ResumeContendedError` it rejected with (any other
 *   failure is not an answer: drop the machine, leave the row to its claim);
 * - `redrive`: hand `row` to re-driver number `redriver` (registration order,
 *   from 0), answer `handleRedrive('done' | 'noop' | 'contended' | 'failed')`
 *   (a re-driver that threw is `'failed'`);
 * - `reschedule`: retire the fired row and write the next `row`, in one
 *   step under the claim (the timer store's `reschedule(claim, row)`), answer
 *   `handleRescheduled()` once it answered `'done'`. A `'notHeld'` voids the
 *   fire (nothing was written): drop the machine;
 * - `complete`: retire the fired row (the timer store's `complete` of the
 *   claim), answer `handleCompleted()` once it answered `'done'`. A
 *   `'notHeld'` voids the fire: drop the machine; the outcome is not final;
 * - `exhaust`: the retries ran out: retire the fired row and record its
 *   `exhaustion`, in one step under the claim (the timer store's
 *   `exhaust(claim, exhaustion)`), answer `handleExhausted()` once it
 *   answered `'done'`. A `'notHeld'` voids the fire, as for `complete`.
 */
export type FireAction =
  | { act: 'readLog' }
  | { act: 'resume'; request: { fenceIfParkedAt: number; answer: TimerAnswer; at: number } }
  | { act: 'redrive'; redriver: number; row: TimerRow }
  | { act: 'reschedule'; row: TimerRow }
  | { act: 'complete'; row: TimerRow }
  | { act: 'exhaust'; exhaustion: Exhaustion };

/**
 * How a fire ended. `retired`: whether the fired row was retired (then the
 * host's claim is spent; otherwise release it or let it expire).
 * - `fired`: plain wake, its park was resumed with the timer's answer;
 * - `obsolete`: plain wake, its wait is no longer pending;
 * - `notYet`: plain wake, this node's backoff holds the execution until `nextTryAt`; nothing was read;
 * - `backedOff`: plain wake, the resume was contended; `apply` it to the `WakeBackoff`;
 * - `redriven`: re-drive row, a re-driver re-drove it;
 * - `nothingToRedrive`: re-drive row, every re-driver answered noop;
 * - `rescheduled`: re-drive row, contended or failed: the fired row was retired and `row` written for the next try, in one step;
 * - `left`: re-drive row, no re-driver is registered here; the row is left for a node that has one;
 * - `exhausted`: either kind, the retries ran out; report `error` once (this is the only
 *   fire that gets it), the execution is left to recover().
 */
export type FireOutcome =
  | { outcome: 'fired'; retired: true }
  | { outcome: 'obsolete'; retired: true }
  | { outcome: 'notYet'; retired: false; nextTryAt: number }
  | { outcome: 'backedOff'; retired: false; entry: BackoffEntry }
  | { outcome: 'redriven'; retired: true }
  | { outcome: 'nothingToRedrive'; retired: true }
  | { outcome: 'rescheduled'; retired: true; row: TimerRow }
  | { outcome: 'left'; retired: false }
  | { outcome: 'exhausted'; retired: true; error: RedriveExhaustedError };

/** What `FireMachine.poll` says: an action, or the outcome. */
export type FirePoll = FireAction | { done: FireOutcome };

/**
 * The fire of one due timer row: the core's decision as a sans-IO machine.
 * `poll()` names the next action (asking again gives the same); the host
 * performs it and answers through the matching `handle*` method, until
 * `poll()` gives `{ done: outcome }`. An answer that does not fit the pending
 * action, or names another execution, throws `TimerInputError`
 * (`UNEXPECTED_ANSWER`) and leaves the machine as it was. The constructor
 * throws `TimerInputError` for a bad row or context, and `NOT_DUE` for a row
 * due after `now`.
 */
export class FireMachine {
  constructor(row: TimerRow, context?: FireContext);
  free(): void;
  /** The row being fired. */
  readonly row: TimerRow;
  poll(): FirePoll;
  /** The whole log, from sequence 1 (possibly empty). */
  handleRead(events: Envelope[]): void;
  /** What `resume` resolved to, or the `ResumeRefusedError` / `ResumeContendedError` it rejected with. */
  handleResumed(result: Resumed | ResumeRefusedError | ResumeContendedError): void;
  handleRedrive(answer: 'done' | 'noop' | 'contended' | 'failed'): void;
  handleRescheduled(): void;
  handleCompleted(): void;
  handleExhausted(): void;
}

// ---------------------------------------------------------------------------
// The timer service: a poll loop around FireMachine (JavaScript, not wasm).

/**
 * What a re-driver answers: `'done'` (its resume landed, or had landed),
 * `'noop'` (nothing of its own to do: the park was answered meanwhile, or it
 * is not waiting on what this re-driver knows; the next one is asked),
 * `'contended'` (rivals kept the token moving again).
 */
export type RedriveAnswer = 'done' | 'noop' | 'contended';

/**
 * A re-driver: re-derives its resume of `executionId` from the log and tries
 * it conditionally (`resume` with `fenceIfParkedAt`). A throw, or an answer
 * that is not a `RedriveAnswer`, is a failed try: reported to `onError` and
 * treated as contended (the chain goes on). Every node that fires re-drive
 * rows must register the same re-drivers, in the same order.
 */
export type Redriver = (executionId: string) => RedriveAnswer | Promise<RedriveAnswer>;

/**
 * Where a failure reported to `onError` happened: claiming (`'claim'`),
 * building the fire (`'fire'`: a row the core refuses, a row not due by the
 * service clock, a bad random draw), performing one of the fire machine's
 * actions (`'readLog'`, `'resume'`, `'redrive'`, `'reschedule'`, `'complete'`),
 * releasing a claim (`'release'`),
 * handing a landed resume on (`'onResumed'`: the hook threw or its promise
 * rejected; the resume stands); `'exhausted'` for the one
 * `RedriveExhaustedError` of a chain that gave up; and `'unreadable'` for an
 * `UnreadableTimerRowError` (a row the store could not read, reported once
 * per node; not a failure of the tick).
 */
export type TimerServiceStage =
  | 'claim'
  | 'fire'
  | 'readLog'
  | 'resume'
  | 'redrive'
  | 'reschedule'
  | 'complete'
  | 'release'
  | 'exhausted'
  | 'onResumed'
  | 'unreadable';

/**
 * What `onError` is told besides the error: where, and which row (absent for
 * `'claim'`; the `UnreadableRow` for `'unreadable'`).
 */
export interface TimerServiceErrorInfo {
  stage: TimerServiceStage;
  row?: TimerRow | UnreadableRow;
}

export interface TimerServiceOptions {
  /** The event store the fires read and resume (any `EventStore`; `MemoryEventStore` included). */
  events: EventStore;
  /** The timer store shared by every node (any `TimerStore`; `MemoryTimerStore` included). */
  timers: TimerStore;
  /** This node's holder name in leases (default `js-<pid>-<random>`); unique per process. */
  node?: string;
  /** Between the end of one tick of `start()`'s loop and the next (default 250; 0..=2^31-1). */
  pollIntervalMs?: number;
  /** The lease of each claim (default 30 000; 1..=86 400 000): longer than a batch takes to fire. */
  leaseMs?: number;
  /** Rows claimed per tick (default 100; 1..=10 000). */
  batch?: number;
  /** The retry schedule of contended wakes and re-drives (default: the default policy; `INVALID_POLICY`). */
  policy?: RedrivePolicy | RedrivePolicyInit;
  /** How many executions the in-process `WakeBackoff` holds (default 1024; `INVALID_BACKOFF`). */
  backoffBound?: number;
  /** The clock, ms since the epoch (default `Date.now`). A virtual one in tests. */
  now?: () => number;
  /** One draw in `[0, 1)` per fire (default `Math.random`). A seeded one in tests. */
  random?: () => number;
  /**
   * Failures, and the exhaustion of a chain (a `RedriveExhaustedError`, given
   * exactly once, by the fire that retired its row). Default: `console.error`.
   * A handler that throws does not stop the service.
   */
  onError?: (error: unknown, info: TimerServiceErrorInfo) => void;
  /**
   * Each resume a plain wake lands, for the host to start the execution's
   * body from: nobody else receives it. Called before the row is retired and
   * not awaited; a throw or a rejected promise goes to `onError` (stage
   * `'onResumed'`) and the resume stands. Default: nothing, so no body runs
   * on this node. A re-drive's resume is its re-driver's to hand on.
   */
  onResumed?: (resumed: Resumed) => void | Promise<void>;
}

/**
 * How the fire of one claimed row ended in a tick: a fire outcome (`outcome`
 * is the fire machine's), or `'notHeld'` (the complete or reschedule
 * answered `'notHeld'`: the claim was lost, the decision void, nothing
 * applied), `'lapsed'` (its lease ended before its turn: not fired,
 * released), `'failed'` (the action at `stage` failed with `error`, reported
 * to `onError`; the claim is left to expire). Claims a `stop()` kept from
 * firing have no entry: they are released and counted in `released`.
 */
export type FireReport =
  | { row: TimerRow; result: FireOutcome['outcome']; outcome: FireOutcome }
  | { row: TimerRow; result: 'notHeld' }
  | { row: TimerRow; result: 'lapsed' }
  | { row: TimerRow; result: 'failed'; stage: TimerServiceStage; error: unknown };

/**
 * One tick, in the core `TickReport`'s counts (the Rust `PollReport` has the
 * same, in snake case): rows claimed, fires ended in each outcome, fires
 * whose decision was void (`notHeld`), claims not fired because their lease
 * had ended (`lapsed`), claims handed back (`released`), failures
 * (`errors`: actions that failed, re-drivers that threw; an exhaustion is
 * counted in `exhausted`, an unreadable row in `unreadable`), and each
 * fire's `FireReport` in firing order.
 */
export interface PollReport {
  claimed: number;
  fired: number;
  obsolete: number;
  notYet: number;
  backedOff: number;
  redriven: number;
  nothingToRedrive: number;
  rescheduled: number;
  left: number;
  exhausted: number;
  notHeld: number;
  lapsed: number;
  released: number;
  /** Unreadable rows this tick reported (each once per node; not in `errors`). */
  unreadable: number;
  errors: number;
  fires: FireReport[];
}

/**
 * The timer service of one node, over any `EventStore` and `TimerStore`. Each
 * tick claims up to `batch` due rows under a `leaseMs` lease (re-drive rows
 * only once a re-driver is registered: `{ redrive: false }` otherwise, so a
 * node that cannot judge them leaves them for one that can), and fires them
 * one at a time through a `FireMachine`, performing its actions: `readLog`
 * with `events.readRange(id, 1)`, `resume` with the package's `resume`
 * (its refusal or contention fed back as the answer), `redrive` with the
 * registered re-driver the machine names, `schedule` and `complete` on the
 * timer store. Every outcome is applied to the node's `WakeBackoff`. Every
 * decision is the core's; the service only holds the claims:
 * - a fire that ends without retiring its row (`notYet`, `backedOff`,
 *   `left`) releases its claim at once; the backoff gate (`notYet`) keeps
 *   this node from acquiring before the next try;
 * - a complete that answers `'notHeld'` voids the fire: nothing is applied or
 *   reported (an exhaustion is reported only after its complete was `'done'`);
 * - any other failure (a store that throws or answers outside its interface,
 *   a `resume` rejecting with anything but `ResumeRefusedError` /
 *   `ResumeContendedError`) drops the fire, goes to `onError`, and leaves the
 *   claim to expire: the next claimer decides again from scratch.
 * Options it cannot use throw `TimerInputError` (`INVALID_OPTIONS`, or the
 * core's `INVALID_POLICY` / `INVALID_BACKOFF`) at construction.
 */
export class TimerService {
  constructor(options: TimerServiceOptions);
  /** This node's holder name. */
  readonly node: string;
  /** Whether `start()`'s loop is running. */
  readonly running: boolean;
  /** How many re-drivers are registered. */
  readonly redrivers: number;
  /** Adds a re-driver after the others (`TimerInputError` `INVALID_OPTIONS` if not a function). */
  registerRedriver(redriver: Redriver): void;
  /**
   * One tick, as `start()`'s loop runs it; deterministic given `now` and
   * `random`. Failures go to `onError`, not to the promise. A tick asked for
   * while one is in hand runs after it; one asked for during a stop does
   * nothing.
   */
  pollOnce(): Promise<PollReport>;
  /** Ticks now, then `pollIntervalMs` after each tick ends (never overlapping), until `stop()`. Throws while a stop is in progress. */
  start(): void;
  /**
   * Ends the loop: the tick in hand finishes the fire it is in and releases
   * the claims it has not fired; resolves once it has.
   */
  stop(): Promise<void>;
}

/** A message's key: sending one key twice stores it once. `channel` and `messageId` are 1 to 255 bytes of UTF-8, no NUL. */
export interface MessageKey {
  executionId: string;
  channel: string;
  messageId: string;
}

/** A message as sent: what the body receives is `payload` (any JSON, at most 256 KiB serialized). */
export interface Message extends MessageKey {
  payload: unknown;
  /** When it was sent, ms since the epoch (0..=2^53-1). */
  sentAt: number;
}

/** A stored message, with its place in the order messages arrived (from 1, increasing on each channel). */
export interface StoredMessage extends Message {
  arrival: number;
}

/** A message as `messages` lists it: whether a delivery marked it consumed (the log's `MESSAGE_CONSUMED` is the truth). */
export interface InboxEntry extends StoredMessage {
  consumed: boolean;
}

/** What a send answers: `duplicate` when a message with its key was there (nothing written; the first payload stands). */
export interface Sent {
  duplicate: boolean;
  arrival: number;
}

/**
 * The inbox interface, on a timer store: messages keyed `(executionId,
 * channel, messageId)` under the core's `InboxTable` rules (see
 * `MemoryTimerStore`). `send` writes the message AND its intent row (a
 * re-drive row of the execution, with `schedule`'s upsert rules) in one
 * atomic step, only when the message is stored, so a sender that dies
 * right after still leaves the row whose re-driver (`Inbox.redriver()`)
 * finishes the delivery. `pending` lists up to `limit` (1..=1000) messages
 * not marked consumed on any of `channels`, in arrival order, which is the
 * order the sends committed in on each channel. Malformed input rejects
 * with `TimerInputError` (`INVALID_MESSAGE`, `INVALID_ID`, `INVALID_TIME`,
 * `INVALID_LIMIT`, `UNREADABLE`) and changes nothing.
 * `tests/conformance-js/inbox-kit.js` holds a store to it.
 */
export interface InboxStore extends TimerStore {
  send(message: Message, intent: TimerRow): Promise<Sent>;
  pending(executionId: string, channels: string[], limit: number): Promise<StoredMessage[]>;
  /** Whether it was there unmarked. */
  markConsumed(key: MessageKey): Promise<boolean>;
  /** Deletes every message of the execution (retention, with its log); how many there were. */
  purge(executionId: string): Promise<number>;
  messages(executionId: string): Promise<InboxEntry[]>;
}

/** Options of `new Inbox`; any other key is refused (`TimerInputError`, `INVALID_OPTIONS`). */
export interface InboxOptions {
  /** The time (default `Date.now`): a message's `sentAt`, a park's `at`, a delivery's `at`. */
  now?: () => number;
  /** A draw in `[0, 1)` (default `Math.random`), called once per re-drive row written. */
  random?: () => number;
  /**
   * A notify or check whose every resume was contended writes the
   * execution's first re-drive row (try 0, `inbox.schedule`) instead of
   * ending contended. Default false. Register `redriver()` on every node's
   * `TimerService` either way: it finishes what a sender that died left.
   */
  redrive?: boolean;
  /** The schedule of the first re-drive row's delay: the timer services' policy. */
  policy?: RedrivePolicy | RedrivePolicyInit;
  /** How long after a send its intent row comes due, ms (default 5 000, at least 1). */
  intentDelayMs?: number;
  /** Receives each resume the re-driver lands (no caller receives it); starts the body. */
  onResumed?: (resumed: Resumed) => void | Promise<void>;
  /** Receives what an `onResumed` threw or rejected with. */
  onError?: (error: unknown, executionId: string) => void;
}

/**
 * What the body of a delivered message receives as the resume's
 * `payload.answer`: the MESSAGE wait it answers (its index in the park's
 * waits) and the message.
 */
export interface MessageAnswer {
  wait: number;
  message: { channel: string; messageId: string; payload: unknown; sentAt: number };
}

/**
 * What a notify or a check answers. `delivered`: a message's
 * `MESSAGE_CONSUMED` and the resume landed in one append (`message` may be
 * an older message of the channel than the one sent: a channel is consumed
 * in arrival order). `refused` (a notify only): the execution has no log
 * (`'unknown'`) or has ended (`'ended'`); nothing was stored. Otherwise
 * nothing was delivered now: `stored` from a notify, `waiting` from a
 * check, `outcome` saying why (`'waiting'`: no open park waits on the
 * channel; `'contended'`, with its `error`; `'redriveScheduled'`, with the
 * `row` written). A notify's answer says whether its send was a duplicate.
 */
export type Delivery =
  | { result: 'delivered'; message: MessageKey; resumed: Resumed; duplicate?: boolean }
  | { result: 'refused'; reason: 'unknown' | 'ended'; duplicate: false }
  | {
      result: 'stored' | 'waiting';
      outcome: 'waiting' | 'contended' | 'redriveScheduled';
      error?: ResumeContendedError;
      row?: TimerRow;
      duplicate?: boolean;
    };

/**
 * Messages to parked executions: a pump over the core's delivery machine
 * (the Rust runtime runs the same one). A park waits on a channel with
 * `{ kind: 'MESSAGE', channel }`; a delivery appends `[MESSAGE_CONSUMED,
 * EXECUTION_RESUMED]` as one park-conditional batch, so a message is
 * consumed at most once, and the send's intent row makes sure it is
 * consumed at least once.
 */
export class Inbox {
  /** `store`: where every log lives (`readRange`, `appendIfParked`, `append`, `currentFence`); `inbox`: an `InboxStore` (`send`, `pending`, `markConsumed`, `schedule` are called). */
  constructor(store: EventStore, inbox: Pick<InboxStore, 'send' | 'pending' | 'markConsumed' | 'schedule'> & Partial<InboxStore>, options?: InboxOptions);
  /**
   * Sends a message (stamped `now()`) with its intent row, then delivers
   * what the execution's open park can take. Malformed input rejects with
   * `TimerInputError` (`INVALID_MESSAGE`, `INVALID_ID`, `INVALID_LIMIT` for
   * a payload over 256 KiB, `UNREADABLE`) before anything is read or
   * stored; a store failure rejects with what the store threw.
   */
  notify(message: { executionId: string; channel: string; messageId: string; payload?: unknown }): Promise<Delivery>;
  /**
   * Appends the park (`EXECUTION_SUSPENDED`, payload `{ waits }`, under the
   * token `fence` when given, stamped `at` or `now()`), then checks the
   * inbox: a message that came before the park is delivered at once. A
   * park on a channel first writes its own intent row (`inbox.schedule`,
   * due `intentDelayMs` after `at`), so a host that dies between the park
   * and its check, or a contended check, leaves the delivery to the
   * re-driver. Waits the core cannot read reject with `InputError`
   * `INVALID_PARK`, and a stale `fence` with `StaleFenceError`, before
   * anything is written.
   */
  park(executionId: string, waits: unknown[], options?: { fence?: number; at?: number }): Promise<{ park: Envelope; delivered: { message: MessageKey; resumed: Resumed } | null }>;
  /** Delivers what the execution's open park can take from the inbox. */
  check(executionId: string): Promise<Delivery>;
  /**
   * This inbox as a re-driver for `TimerService.registerRedriver`: it
   * checks the row's execution without writing a row and answers `'done'`
   * (the resume goes to onResumed), `'noop'` or `'contended'`; it throws on
   * a failure.
   */
  redriver(): (executionId: string) => Promise<RedriveAnswer>;
}

/** Where a `Follower` met a failure, for `onError`. */
export interface FollowerErrorInfo {
  /** The step: `'readHead'`, `'listOpenParks'`, `'readFeed'`, `'wait'`, `'ended'` (a `childEnded` that threw), `'failed'`, `'resumed'` (an `onResumed` that threw), or `'poll'` (a bug of the follow machine, which stops the follower). */
  stage: string;
  /** The execution concerned, when there is one. */
  id?: string;
}

/** What a `Follower`'s rebuild took: the Rust runtime's `Rebuilt`. */
export interface FollowerRebuild {
  /** From the first `start()` until it was caught up and had supervised what it watched, in ms. */
  readonly elapsedMs: number;
  /** The parents watched before it was first caught up: the open parks, and the parks the feed brought meanwhile (a parent watched again counts again). */
  readonly watched: number;
}

/** Options of `new Follower`; any other key is refused (`TimerInputError`, `INVALID_OPTIONS`). */
export interface FollowerOptions {
  /** The store whose feed is followed. */
  events: FeedStore;
  /** Who is told: a `ChildSupervisor`, or anything with its `watch` and `childEnded`. */
  supervisor: Pick<ChildSupervisor, 'watch' | 'childEnded'>;
  /** Entries per read of the feed or of the open parks, 1 to 10 000 (`InputError` `INVALID_LIMIT`). Default 256. */
  pageLimit?: number;
  /** Notices handled at once, 1 to 1 024. Default 8. */
  concurrency?: number;
  /** The longest wait for a commit the store did not signal, and the pause after a failed read, in ms. Default 1 000. */
  pollIntervalMs?: number;
  /** Told of every failed read (the same read is tried again after the poll interval). Default: `console.error`. */
  onError?: (error: unknown, info: FollowerErrorInfo) => void;
  /** Receives each resume a supervision landed, to start the parent's body (no caller receives it). An `onResumed` that throws or rejects goes to `onError`, stage `'resumed'`; the resume stands. Default: nothing. */
  onResumed?: (resumed: Resumed) => void | Promise<void>;
}

/**
 * Follows a store's change feed and hands the child supervisor its work: a
 * pump over the core's follow machine, the one the Rust runtime pumps. On
 * `start()` it reads the feed's head, then watches every open park (the
 * rebuild, what a restart costs), then follows the feed from that head: a
 * park on a child is `watch`ed, an end is `childEnded`. Caught up, it waits
 * for `waitForFeed` or its poll interval, whichever is first. A parent whose
 * supervision failed (a `watch` that rejects, a `childEnded` result with an
 * `error`) is watched again after the next wake. Nothing lists the store.
 */
export class Follower {
  constructor(options: FollowerOptions);
  /** Whether it is started. */
  readonly running: boolean;
  /** Everything up to this cursor has been read. */
  readonly cursor: FeedCursor;
  /** Whether the rebuild (the head and every open park) is done. */
  readonly rebuilt: boolean;
  /** What the rebuild took, once the follower was first caught up (its first wait, every notice handed out before it done); `null` before. */
  readonly rebuild: FollowerRebuild | null;
  /** Starts following; a no-op when running. Throws while a `stop()` is in progress. */
  start(): void;
  /** Stops following; resolves once the read in hand and every notice handed out are done. */
  stop(): Promise<void>;
}

/** Options of `new ChildSupervisor`; any other key is refused (`TimerInputError`, `INVALID_OPTIONS`). */
export interface ChildSupervisorOptions {
  /** Where every log lives: `readRange` and `appendIfParked` (and `acquireFenceIf` or `acquireFence`, as for `resume`). */
  events: EventStore;
  /** The timer store re-drive rows are written to (its `schedule`): the one the fleet's `TimerService`s claim from. */
  timers?: Pick<TimerStore, 'schedule'>;
  /**
   * With `timers`: a resume whose every try was contended writes the first
   * re-drive row of the parent (try 0) instead of ending contended. Default
   * false. Register `redriver()` on every node's `TimerService` first.
   */
  redrive?: boolean;
  /** Conditional resumes after the unfenced try met a stale fence (default 3). */
  conditionalTries?: number;
  /** The schedule of the first re-drive row's delay: the timer services' policy. */
  policy?: RedrivePolicy | RedrivePolicyInit;
  /** The time (default `Date.now`): the resume's `at`, the re-drive row's base. */
  now?: () => number;
  /** A draw in `[0, 1)` (default `Math.random`), called once per re-drive row written. */
  random?: () => number;
  /** Receives every failure, and every contended or fenced end, once per call. */
  onError?: (error: unknown, parent: string) => void;
  /** Receives each resume the re-driver lands (no caller receives it); starts the parent's body. */
  onResumed?: (resumed: Resumed) => void | Promise<void>;
}

/**
 * How one supervision ended, the core's `SuperviseOutcome`; `answer` is what
 * the re-driver answers a `TimerService` for it.
 */
export type Supervised =
  | { outcome: 'resumed'; answer: 'done'; resumed: Resumed }
  | { outcome: 'alreadyAnswered' | 'waiting' | 'notWaitingOnChildren'; answer: 'noop' }
  | { outcome: 'contended'; answer: 'contended'; error: ResumeContendedError }
  | { outcome: 'fenced'; answer: 'failed'; error: StaleFenceError }
  | { outcome: 'redriveScheduled'; answer: 'noop'; row: TimerRow };

/**
 * The child supervisor: resumes parents parked on `CHILD_DONE` waits once
 * their children have ended, with the children's outcomes as the answer. A
 * pump over the core's supervise machine (the Rust runtime's supervisor
 * runs the same one): the first try is unfenced and lands with one
 * park-conditional append; only a stale fence switches to up to
 * `conditionalTries` conditional resumes; if every try was contended it
 * ends `contended` (a value, also passed to onError), or, with `redrive`,
 * writes the parent's first re-drive row. Its edge cache (child -> parents)
 * is rebuilt from the parents' parks.
 */
export class ChildSupervisor {
  constructor(options: ChildSupervisorOptions);
  /** Reads `parent`'s park, lists it under its children, resumes it if they have ended. Rejects on a store failure. */
  watch(parent: string): Promise<Supervised>;
  /** Supervises every parent listed under `child`, in id order. */
  childEnded(child: string): Promise<Array<{ parent: string; supervised?: Supervised; error?: unknown }>>;
  /**
   * Forgets every edge and watches `parents` again (after a restart). The
   * parents are read first, at most 100 000 of them (`TimerInputError`
   * `INVALID_LIMIT` beyond: rebuild in parts; `UNREADABLE` for parents that
   * cannot be read), and the edges are kept when they are refused.
   */
  rebuild(parents: Iterable<string>): Promise<Array<{ parent: string; supervised?: Supervised; error?: unknown }>>;
  /** The parents currently listed under `child`, sorted: what retention must not delete it under. */
  parentsWaitingOn(child: string): string[];
  /**
   * This supervisor as a re-driver for `TimerService.registerRedriver`: it
   * supervises the row's parent again without writing a row and answers
   * `'done'` (the resume goes to onResumed), `'noop'` or `'contended'`; it
   * throws on a failure or a fenced parent.
   */
  redriver(): (executionId: string) => Promise<RedriveAnswer>;
}

/**
 * A timer call refused its input before anything changed. `code` names the
 * input: `'INVALID_ROW'` (a row's shape), `'INVALID_ID'` (an execution id),
 * `'INVALID_TIME'` (a time that is not a safe integer, or a stored time
 * outside 0..=2^53-1), `'INVALID_ATTEMPT'`, `'INVALID_LIMIT'`,
 * `'INVALID_LEASE'`, `'INVALID_HOLDER'`, `'INVALID_CLAIM'`,
 * `'INVALID_FILTER'`, `'INVALID_DRAW'` (a random draw outside `[0, 1)`),
 * `'INVALID_DELAY'`, `'INVALID_POLICY'`, `'INVALID_BACKOFF'`,
 * `'INVALID_CONTEXT'`, `'INVALID_OUTCOME'`, `'NOT_DUE'` (a fire before its
 * row's time), `'UNEXPECTED_ANSWER'` (a fire machine answer that does not fit,
 * or a store or re-driver answer a `TimerService` cannot use),
 * `'INVALID_OPTIONS'` (a `TimerService`, `ChildSupervisor`, `Follower` or `Inbox` option),
 * `'INVALID_MESSAGE'` (a message, key or channel the inbox refuses),
 * `'UNREADABLE'` (a field of the input threw while read: a getter, a Proxy
 * trap, a revoked Proxy; what it threw is `cause`).
 */
export class TimerInputError extends Error {
  constructor(message?: string, code?: string);
  readonly name: 'TimerInputError';
  code: string;
}

/**
 * A due timer row the timer store could not read, or a malformed element of
 * its claim list: handed to the `TimerService`'s `onError` (stage
 * `'unreadable'`) once per node and row. The row is not fired until someone
 * repairs or deletes it; the other rows go on.
 */
export class UnreadableTimerRowError extends Error {
  constructor(message?: string, row?: UnreadableRow);
  readonly name: 'UnreadableTimerRowError';
  readonly code: 'UNREADABLE_TIMER_ROW';
  row: UnreadableRow;
}

/**
 * A chain of timer retries that gave up: carried by the `exhausted` fire
 * outcome (not thrown), for the host to report once. The execution is left to
 * recover().
 */
export class RedriveExhaustedError extends Error {
  constructor(message?: string, fields?: { executionId?: string; wakeAt?: number; attempts?: number });
  readonly name: 'RedriveExhaustedError';
  executionId: string;
  /** The `wakeAt` of the row that was retired. */
  wakeAt: number;
  /** Retries made. */
  attempts: number;
}
