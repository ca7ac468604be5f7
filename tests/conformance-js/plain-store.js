// An event store written in plain JavaScript: an example of a host adapter
// for the `loomfence` package, and the second store the conformance kit runs
// against (the first is the package's own MemoryEventStore).
//
// Everything a store must do is here, in about the simplest form it can take:
//
// - a log per execution (a Map of arrays; index = sequence - 1) and a fence
//   token per execution (a Map; absent means 0);
// - the append guard: one decision per batch, in the same step as the insert;
// - `acquireFenceIf`, the conditional acquire, using the package's
//   `isAnsweringKind` so this store classifies events exactly as every other
//   backend does;
// - `appendIfParked`, the park-conditional append every resume lands with
//   (under its token when it took one): at most once per park without
//   tokens, and never into a log deleted under the resume;
// - in both conditional operations, the check that `parkSeq` is in the log
//   AND that its event is a park: after a delete (which keeps a real token)
//   a log can grow back past the sequence a slow resumer read as its park;
// - what a retention sweep needs: `listExecutions`, the paged listing (by
//   the last id, in UTF-8 byte order, each execution with its head and its
//   first terminal event), and `deleteExecutionIf`, the guarded delete that
//   re-checks, in the same step as the delete, that the log and every parent
//   the sweep read are as it read them;
// - what a Follower needs: the change feed (`feed`, `feedHead`), a position
//   stamped on every event as it is written, never reused, so a reader's
//   cursor stays good across deletes; the open parks (`openParks`), the
//   executions whose last answering event is a park and that never ended;
//   and `waitForFeed`, resolved by the next write;
// - the same typed errors as the package on bad input, thrown before anything
//   changes: `InputError` (a TypeError) for a bad id or a malformed event,
//   `RangeError` for a number out of range, `TypeError` for a value that is
//   not even the right type, and `StaleFenceError` for a stale writer.
//
// Atomicity: each method validates its input, then does its whole read-check-
// write in one synchronous run with no `await` in between. JavaScript runs one
// piece of code at a time, so that run is atomic with respect to every other
// call, however many are in flight. A store backed by a database must get the
// same effect from a transaction (see docs/design.md: SQLite's BEGIN IMMEDIATE,
// Postgres' row locks).
//
// Capabilities are read off the methods by `resume`: a store with
// `acquireFenceIf` is conditional, one with only `acquireFence` is
// fencing-only, one with neither takes no tokens; one without
// `appendIfParked` is refused by `resume`. `withCapability` below builds the
// weaker variants from a full store.

import { InputError, StaleFenceError, isAnsweringKind } from 'loomfence';
import { TimerInputError } from 'loomfence/services';

/** The longest execution id and event kind, in UTF-8 bytes. */
const MAX_ID_BYTES = 255;
const MAX_KIND_BYTES = 255;
const EVENT_FIELDS = new Set(['kind', 'payload', 'metadata', 'at']);
const utf8 = new TextEncoder();

/** The `code` a store puts on the error for a park sequence outside the log;
 * `resume` reads it as "the park is gone". */
export const PARK_SEQ_OUT_OF_RANGE = 'PARK_SEQ_OUT_OF_RANGE';

/** The `code` a store puts on the error for a park sequence whose event is
 * not a park; `resume` reads it as "the park is gone" too. */
export const NOT_A_PARK = 'NOT_A_PARK';

/** The one kind that is a park. */
const PARK_KIND = 'EXECUTION_SUSPENDED';

/** The kinds that end an execution (terminal is absorbing: the first one is
 * when it ended). */
const TERMINAL_KINDS = new Set(['EXECUTION_COMPLETED', 'EXECUTION_FAILED', 'EXECUTION_CANCELLED', 'EXECUTION_CONTINUED']);

/** The largest listing page, and the most parents one guarded delete names. */
const MAX_PAGE_LIMIT = 10_000;
const MAX_GUARD_PARENTS = 1_000;
const MAX_DELETE_BATCH = 1_000;

/** Orders ids by their UTF-8 bytes, which is code point order (UTF-16 code
 * units order U+E000..U+FFFF before the astral planes; bytes do not). */
function compareIds(a, b) {
  const left = a[Symbol.iterator]();
  const right = b[Symbol.iterator]();
  for (;;) {
    const x = left.next();
    const y = right.next();
    if (x.done || y.done) return (x.done ? 0 : 1) - (y.done ? 0 : 1);
    const order = x.value.codePointAt(0) - y.value.codePointAt(0);
    if (order !== 0) return order;
  }
}

function rangeError(message, code) {
  return Object.assign(new RangeError(message), { code });
}

function typeError(message, code) {
  return Object.assign(new TypeError(message), { code });
}

/** An execution id: a string (else TypeError) of 1 to 255 UTF-8 bytes with
 * no NUL (else InputError). */
function checkId(id) {
  if (typeof id !== 'string') throw typeError('executionId must be a string', 'NOT_A_STRING');
  const bytes = utf8.encode(id).length;
  if (bytes === 0) throw new InputError('executionId: execution id is empty', 'INVALID_ID');
  if (bytes > MAX_ID_BYTES) {
    throw new InputError(`executionId: execution id is ${bytes} bytes long; the limit is ${MAX_ID_BYTES}`, 'INVALID_ID');
  }
  if (id.includes('\0')) throw new InputError('executionId: execution id contains a NUL character', 'INVALID_ID');
  return id;
}

/** A fence or sequence argument: a number (else TypeError) that is a safe,
 * non-negative integer (else RangeError). */
function checkCounter(name, value) {
  if (typeof value !== 'number') throw typeError(`${name} must be a number`, 'NOT_A_NUMBER');
  if (!Number.isSafeInteger(value) || value < 0) {
    throw rangeError(`${name} must be a safe non-negative integer, got ${value}`, 'OUT_OF_RANGE');
  }
  return value + 0; // -0 becomes 0
}

/** A listing's page limit: a number (else TypeError) that is an integer from
 * 1 to MAX_PAGE_LIMIT (else InputError INVALID_LIMIT). */
function checkLimit(limit) {
  if (typeof limit !== 'number') throw typeError('limit must be a number', 'NOT_A_NUMBER');
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT) {
    throw new InputError(`limit = ${limit} is out of bounds: at most ${MAX_PAGE_LIMIT}, and a limit is at least 1`, 'INVALID_LIMIT');
  }
  return limit;
}

/** A feed cursor: an object (else TypeError NOT_AN_OBJECT) of two counters. */
function checkCursor(cursor) {
  if (typeof cursor !== 'object' || cursor === null) {
    throw typeError('a feed cursor must be an object { epoch, position }', 'NOT_AN_OBJECT');
  }
  return { epoch: checkCounter('cursor.epoch', cursor.epoch), position: checkCounter('cursor.position', cursor.position) };
}

/** A delete guard `{ head, parents: [{ parent, seen }] }` (`parents` omitted:
 * none), checked whole before anything is read. */
function checkGuard(guard) {
  if (typeof guard !== 'object' || guard === null) {
    throw typeError('guard must be an object { head, parents: [{ parent, seen }] }', 'NOT_AN_OBJECT');
  }
  const head = checkCounter('head', guard.head);
  const marks = guard.parents ?? [];
  if (!Array.isArray(marks)) throw typeError('guard.parents must be an array of { parent, seen }', 'NOT_AN_ARRAY');
  if (marks.length > MAX_GUARD_PARENTS) {
    throw new InputError(`parents = ${marks.length} is out of bounds: at most ${MAX_GUARD_PARENTS}`, 'INVALID_LIMIT');
  }
  const parents = marks.map((mark) => {
    if (typeof mark !== 'object' || mark === null) {
      throw typeError('each of guard.parents must be an object { parent, seen }', 'NOT_AN_OBJECT');
    }
    return { parent: checkId(mark.parent), seen: checkCounter('seen', mark.seen) };
  });
  return { head, parents };
}

function isPlainObject(value) {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Deep-copies a JSON value, refusing anything JSON cannot hold exactly and
 * any NUL character in a key or a string. `where` names the field. */
function copyJson(value, where) {
  const bad = (what) => new InputError(`${where}: ${what}`, 'INVALID_EVENT');
  switch (typeof value) {
    case 'string':
      if (value.includes('\0')) throw bad('contains a NUL character');
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw bad(`${value} is not a JSON number`);
      return value + 0;
    case 'boolean':
      return value;
    case 'object':
      if (value === null) return null;
      if (Array.isArray(value)) return value.map((item, i) => copyJson(item, `${where}[${i}]`));
      if (!isPlainObject(value)) throw bad('only plain objects, arrays, strings, finite numbers, booleans and null are JSON');
      return copyObject(value, where);
    default:
      throw bad(`a ${typeof value} is not a JSON value`);
  }
}

function copyObject(object, where) {
  const copy = {};
  for (const [key, item] of Object.entries(object)) {
    if (key.includes('\0')) throw new InputError(`${where}: a key contains a NUL character`, 'INVALID_EVENT');
    // A property set to undefined is left out, as JSON.stringify does. A
    // '__proto__' key is defined as a data property, as JSON.parse does: an
    // assignment would set the copy's prototype and drop the key.
    if (item !== undefined) Object.defineProperty(copy, key, { value: copyJson(item, `${where}.${key}`), enumerable: true, writable: true, configurable: true });
  }
  return copy;
}

/** Validates one event and returns a private copy plus what the guard needs:
 * its token (or undefined) and whether it answers a park. */
function checkEvent(event, index) {
  const where = `events[${index}]`;
  if (!isPlainObject(event)) {
    throw typeError(`${where}: event must be an object { kind, payload?, metadata?, at }`, 'NOT_AN_OBJECT');
  }
  const bad = (what, code = 'INVALID_EVENT') => new InputError(`${where}: ${what}`, code);
  for (const key of Object.keys(event)) {
    if (!EVENT_FIELDS.has(key)) throw bad(`unknown field ${JSON.stringify(key)}`);
  }
  const { kind, at } = event;
  if (typeof kind !== 'string') throw bad('kind must be a string');
  if (kind === '') throw bad('event kind is empty');
  const kindBytes = utf8.encode(kind).length;
  if (kindBytes > MAX_KIND_BYTES) throw bad(`event kind is ${kindBytes} bytes long; the limit is ${MAX_KIND_BYTES}`);
  if (kind.includes('\0')) throw bad('kind contains a NUL character');
  if (typeof at !== 'number') throw bad('at must be a number (ms since the epoch)');
  if (!Number.isSafeInteger(at)) {
    throw rangeError(`${where}: at = ${at} ms is not an integer within ±(2^53-1)`, 'AT_OUT_OF_RANGE');
  }
  // The token first, so that a bad one (NaN included) is reported as a bad
  // token: a RangeError when it is a number, a TypeError when it is not.
  let fence;
  if (isPlainObject(event.metadata) && event.metadata.fence !== undefined) {
    fence = event.metadata.fence;
    if (!Number.isSafeInteger(fence) || fence < 0) {
      const found = typeof fence === 'bigint' ? `${fence}n` : String(JSON.stringify(fence) ?? fence);
      const message = `${where}: metadata.fence must be an integer from 0 to 2^53-1, found ${found}`;
      throw typeof fence === 'number' ? rangeError(message, 'BAD_FENCE') : typeError(message, 'BAD_FENCE');
    }
    fence += 0; // -0 becomes 0
  }
  const section = (name) => {
    const value = event[name];
    if (value === undefined) return {};
    if (!isPlainObject(value)) throw bad(`${name} must be a plain object`);
    return copyObject(value, `${where}.${name}`);
  };
  const payload = section('payload');
  const metadata = section('metadata');
  const copy = { kind, payload, metadata, at: at + 0 };
  return { event: copy, fence, answering: isAnsweringKind(copy) };
}

/** Validates a batch: an array of valid events under one token or none. */
function checkBatch(events) {
  if (!Array.isArray(events)) throw typeError('events must be an array', 'NOT_AN_ARRAY');
  const checked = events.map(checkEvent);
  const fence = checked[0]?.fence;
  const mixed = checked.findIndex((c) => c.fence !== fence);
  if (mixed !== -1) {
    throw new InputError(
      `event ${mixed} carries fence ${checked[mixed].fence} but event 0 carries ${fence}: a batch is written under one token or none`,
      'MIXED_FENCES',
    );
  }
  return { checked, fence, answering: checked.some((c) => c.answering) };
}

/** The full store: conditional acquire and park-conditional append. */
export class PlainEventStore {
  /** id -> [{ envelope, answering }], index = sequence - 1 */
  #logs = new Map();
  /** id -> token; absent means 0 */
  #fences = new Map();
  /** The feed position of the last event written; one writer, so the epoch is always 0. */
  #position = 0;
  /** What `waitForFeed` resolves on the next write. */
  #waiters = [];

  #token(id) {
    return this.#fences.get(id) ?? 0;
  }

  #log(id) {
    return this.#logs.get(id) ?? [];
  }

  /** Whether an answering event follows `parkSeq`, which must be in the log
   * (else PARK_SEQ_OUT_OF_RANGE) and be a park (else NOT_A_PARK). */
  #answeredAfter(id, parkSeq) {
    const log = this.#log(id);
    if (parkSeq === 0 || parkSeq > log.length) {
      throw rangeError(`parkSeq ${parkSeq} is not in the log, whose head is ${log.length}`, PARK_SEQ_OUT_OF_RANGE);
    }
    const { kind } = log[parkSeq - 1].envelope;
    if (kind !== PARK_KIND) {
      throw new InputError(`parkSeq ${parkSeq} is not a park: the event there is ${JSON.stringify(kind)}`, NOT_A_PARK);
    }
    for (let i = parkSeq; i < log.length; i++) if (log[i].answering) return true;
    return false;
  }

  /** The guard and the insert, one synchronous step. */
  #write(id, batch) {
    if (batch.checked.length === 0) return [];
    const current = this.#token(id);
    const passes = batch.fence !== undefined ? batch.fence >= current : !batch.answering || current === 0;
    if (!passes) {
      const held = batch.fence === undefined ? 'no token (an unfenced answering batch)' : `token ${batch.fence}`;
      throw new StaleFenceError(
        `stale fence on execution ${JSON.stringify(id)}: the batch holds ${held}, the current token is ${current}`,
        { executionId: id, presented: batch.fence ?? null, current },
      );
    }
    let log = this.#logs.get(id);
    if (!log) this.#logs.set(id, (log = []));
    const written = batch.checked.map(({ event, answering }) => {
      const envelope = { executionId: id, sequence: log.length + 1, ...event };
      log.push({ envelope, answering, position: ++this.#position });
      return structuredClone(envelope);
    });
    for (const wake of this.#waiters.splice(0)) wake();
    return written;
  }

  async append(executionId, event) {
    const id = checkId(executionId);
    const [stored] = this.#write(id, checkBatch([event]));
    return stored;
  }

  async appendMany(executionId, events) {
    const id = checkId(executionId);
    return this.#write(id, checkBatch(events));
  }

  /** Appends `events` only while the event at `parkSeq` is a park and nothing
   * has answered it;
   * resolves to the envelopes, or `{ parkAnswered: true }` and writes nothing.
   * The guard still applies. */
  async appendIfParked(executionId, parkSeq, events) {
    const id = checkId(executionId);
    parkSeq = checkCounter('parkSeq', parkSeq);
    const batch = checkBatch(events);
    if (this.#answeredAfter(id, parkSeq)) return { parkAnswered: true };
    return this.#write(id, batch);
  }

  /** Events with fromSeq <= sequence <= toSeq (from 1, to the head when
   * omitted); an unknown execution reads as empty. */
  async readRange(executionId, fromSeq, toSeq) {
    const id = checkId(executionId);
    const from = fromSeq == null ? 1 : checkCounter('fromSeq', fromSeq);
    const to = toSeq == null ? Infinity : checkCounter('toSeq', toSeq);
    const log = this.#log(id);
    const first = Math.max(from, 1);
    const last = Math.min(to, log.length);
    return log.slice(first - 1, Math.max(last, first - 1)).map((r) => structuredClone(r.envelope));
  }

  async currentFence(executionId) {
    return this.#token(checkId(executionId));
  }

  /** Bumps the token unconditionally; resolves to the new one. */
  async acquireFence(executionId) {
    const id = checkId(executionId);
    const token = this.#token(id) + 1;
    this.#fences.set(id, token);
    return token;
  }

  /** Bumps the token only if it is `fence`, the event at `parkSeq` is a park
   * and no answering event follows it; otherwise `{ stale: true, fence:
   * current }` (or a PARK_SEQ_OUT_OF_RANGE / NOT_A_PARK error), nothing
   * changed. */
  async acquireFenceIf(executionId, expect) {
    const id = checkId(executionId);
    if (typeof expect !== 'object' || expect === null) {
      throw typeError('expect must be an object { fence, parkSeq }', 'NOT_AN_OBJECT');
    }
    const fence = checkCounter('fence', expect.fence);
    const parkSeq = checkCounter('parkSeq', expect.parkSeq);
    const current = this.#token(id);
    if (this.#answeredAfter(id, parkSeq) || current !== fence) return { stale: true, fence: current };
    this.#fences.set(id, current + 1);
    return { fence: current + 1 };
  }

  /** Drops the log. A real token (above 0) is kept, so a zombie holder of an
   * old token stays fenced out of a re-created id. Resolves to whether a log
   * existed. */
  async deleteExecution(executionId) {
    return this.#delete(checkId(executionId));
  }

  #delete(id) {
    if (this.#fences.get(id) === 0) this.#fences.delete(id);
    return this.#logs.delete(id);
  }

  /** Up to `limit` executions with a log (a token alone is not listed), ids
   * after `after` (exclusive; null or omitted: from the first), in UTF-8
   * byte order: `[{ executionId, head, ended: { sequence, at } | null }]`,
   * `ended` the first terminal event. */
  async listExecutions(after, limit) {
    const cursor = after == null ? null : checkId(after);
    limit = checkLimit(limit);
    const ids = [];
    for (const [id, log] of this.#logs) {
      if (log.length > 0 && (cursor === null || compareIds(id, cursor) > 0)) ids.push(id);
    }
    ids.sort(compareIds);
    return ids.slice(0, limit).map((executionId) => {
      const log = this.#logs.get(executionId);
      const end = log.findIndex((record) => TERMINAL_KINDS.has(record.envelope.kind));
      return {
        executionId,
        head: log.length,
        ended: end === -1 ? null : { sequence: end + 1, at: log[end].envelope.at },
      };
    });
  }

  /** Deletes the log as `deleteExecution` does, only while `guard` still
   * holds, checked in the same synchronous step as the delete: the log's head
   * (0 when none) is `guard.head`, else `{ logChanged: true, head }`; no
   * parent has a log again shorter than the head the sweep saw, or an
   * answering event after it, else `{ parentMoved: true, parent }` (a parent
   * with no log waits on nothing); then `{ deleted: true }`. */
  async deleteExecutionIf(executionId, guard) {
    return this.#deleteIf(checkId(executionId), checkGuard(guard));
  }

  /** Each entry's `deleteExecutionIf`, in order, in one synchronous step:
   * every entry is checked before anything is deleted, so a batch holding
   * one bad entry is refused whole. */
  async deleteExecutionsIf(batch) {
    if (!Array.isArray(batch)) throw typeError('batch must be an array of { executionId, guard }', 'NOT_AN_ARRAY');
    if (batch.length > MAX_DELETE_BATCH) {
      throw new InputError(`deletes = ${batch.length} is out of bounds: at most ${MAX_DELETE_BATCH}`, 'INVALID_LIMIT');
    }
    const entries = batch.map((entry) => {
      if (typeof entry !== 'object' || entry === null) {
        throw typeError('each entry must be an object { executionId, guard }', 'NOT_AN_OBJECT');
      }
      return [checkId(entry.executionId), checkGuard(entry.guard)];
    });
    const named = new Set();
    for (const [id] of entries) {
      if (named.has(id)) throw new InputError(`the batch names execution ${JSON.stringify(id)} twice`, 'REPEATED_ID');
      named.add(id);
    }
    return entries.map(([id, guard]) => this.#deleteIf(id, guard));
  }

  /** The whole logs of `executionIds`, in order (`[]` for an id with none),
   * read in one synchronous step. */
  async readLogs(executionIds) {
    if (!Array.isArray(executionIds)) throw typeError('executionIds must be an array', 'NOT_AN_ARRAY');
    if (executionIds.length > MAX_PAGE_LIMIT) {
      throw new InputError(`ids = ${executionIds.length} is out of bounds: at most ${MAX_PAGE_LIMIT}`, 'INVALID_LIMIT');
    }
    return executionIds.map(checkId).map((id) => this.#log(id).map((r) => structuredClone(r.envelope)));
  }

  /** A checked guarded delete of `id`. */
  #deleteIf(id, { head, parents }) {
    const current = this.#log(id).length;
    if (current !== head) return { logChanged: true, head: current };
    for (const { parent, seen } of parents) {
      const log = this.#log(parent);
      if ((log.length > 0 && log.length < seen) || log.slice(seen).some((record) => record.answering)) {
        return { parentMoved: true, parent };
      }
    }
    this.#delete(id);
    return { deleted: true };
  }

  /** Up to `limit` events written after `after`, in the order they were
   * written: `[{ cursor, event }]`. A deleted log's events are gone with it. */
  async feed(after, limit) {
    const cursor = checkCursor(after);
    limit = checkLimit(limit);
    if (cursor.epoch > 0) return [];
    const records = [];
    for (const log of this.#logs.values()) {
      for (const record of log) if (record.position > cursor.position) records.push(record);
    }
    records.sort((a, b) => a.position - b.position);
    return records.slice(0, limit).map((record) => ({ cursor: { epoch: 0, position: record.position }, event: structuredClone(record.envelope) }));
  }

  /** The cursor of the last event written, deleted or not: it never goes back. */
  async feedHead() {
    return { epoch: 0, position: this.#position };
  }

  /** Up to `limit` executions with ids after `after` (null or omitted: from
   * the first), in UTF-8 byte order, whose last answering event is a park and
   * that never ended (an end is final: a park after it is not open). */
  async openParks(after, limit) {
    const cursor = after == null ? null : checkId(after);
    limit = checkLimit(limit);
    const ids = [];
    for (const [id, log] of this.#logs) {
      if (cursor !== null && compareIds(id, cursor) <= 0) continue;
      if (log.some((record) => TERMINAL_KINDS.has(record.envelope.kind))) continue;
      const last = log.findLast((record) => record.answering);
      if (last?.envelope.kind === PARK_KIND) ids.push(id);
    }
    return ids.sort(compareIds).slice(0, limit);
  }

  /** Resolves at once when an event was written after `after`, else on the next write. */
  async waitForFeed(after) {
    const cursor = checkCursor(after);
    if (cursor.epoch === 0 && this.#position > cursor.position) return;
    await new Promise((resolve) => this.#waiters.push(resolve));
  }
}

/** The change feed's methods, which every capability keeps. */
const FEED_METHODS = ['feed', 'feedHead', 'openParks', 'waitForFeed'];

/** The methods of each capability, beyond reading and appending. */
const OPTIONAL = {
  conditional: ['acquireFence', 'acquireFenceIf', 'appendIfParked'],
  'fencing-only': ['acquireFence', 'appendIfParked'],
  'non-fencing': ['appendIfParked'],
};

/**
 * A view of `store` with only the methods of `capability`
 * ('conditional' | 'fencing-only' | 'non-fencing'); pass
 * `{ appendIfParked: false }` to leave that one out too. This is how a host
 * whose database cannot do the conditional acquire (or cannot fence at all)
 * looks to `resume`, which refuses one without `appendIfParked`.
 */
export function withCapability(store, capability, { appendIfParked = true } = {}) {
  const optional = OPTIONAL[capability];
  if (!optional) throw new TypeError(`unknown capability ${capability}`);
  const view = {};
  for (const name of ['append', 'appendMany', 'readRange', 'currentFence', 'deleteExecution', 'listExecutions', 'deleteExecutionIf', ...FEED_METHODS, ...optional]) {
    if (name === 'appendIfParked' && !appendIfParked) continue;
    view[name] = store[name].bind(store);
  }
  return view;
}

// An inbox written in plain JavaScript, on the few timer-store methods the
// inbox kit reads (`schedule`, `due`, `claimDue`, `complete`): the reference a host's inbox is
// compared with, the second store the inbox kit runs against (the first is
// the package's MemoryTimerStore). Messages are keyed (executionId, channel,
// messageId); a send stores a key once and writes its intent row in the same
// synchronous run, so the two are one step; arrival numbers increase with
// every stored message; consuming only marks. Every input is checked before
// anything changes, refused with the package's TimerInputError and the codes
// the package uses.

/** The longest channel or message id in UTF-8 bytes, the largest payload
 * serialized, and the largest listing (the core's MAX_NAME_BYTES,
 * MAX_MESSAGE_BYTES, MAX_PENDING_LIMIT). */
const MAX_NAME_BYTES = 255;
const MAX_MESSAGE_BYTES = 256 * 1024;
const MAX_PENDING_LIMIT = 1_000;
const MESSAGE_FIELDS = new Set(['executionId', 'channel', 'messageId', 'payload', 'sentAt']);
const KEY_FIELDS = new Set(['executionId', 'channel', 'messageId']);
const ROW_FIELDS = new Set(['executionId', 'wakeAt', 'redrive']);
const LEASE_FIELDS = new Set(['holder', 'now', 'durationMs']);
const CLAIM_FIELDS = new Set(['row', 'holder', 'number', 'expiresAt']);
/** The longest lease and the largest listing of rows (the core's MAX_LEASE_MS, MAX_DUE_LIMIT). */
const MAX_LEASE_MS = 86_400_000;
const MAX_DUE_LIMIT = 10_000;

const timerError = (message, code) => new TimerInputError(message, code);

/** A plain object with no field outside `allowed`, its fields read once. */
function timerObject(value, allowed, what, code) {
  if (!isPlainObject(value)) throw timerError(`${what} must be an object`, code);
  const copy = { ...value };
  const unknown = Object.keys(copy).filter((key) => !allowed.has(key));
  if (unknown.length > 0) throw timerError(`${what}: unknown field ${unknown.join(', ')}`, code);
  return copy;
}

function timerId(value) {
  if (typeof value !== 'string' || !value.isWellFormed()) throw timerError('executionId must be a well-formed string', 'INVALID_ID');
  try {
    return checkId(value);
  } catch (error) {
    throw timerError(error.message, 'INVALID_ID');
  }
}

function timerTime(name, value) {
  if (!Number.isSafeInteger(value) || value < 0) throw timerError(`${name} must be an integer in 0..=2^53-1`, 'INVALID_TIME');
  return value;
}

/** A channel or message id: 1 to 255 bytes of well-formed UTF-8, no NUL. */
function messageName(name, value) {
  if (typeof value !== 'string' || !value.isWellFormed()) throw timerError(`${name} must be a well-formed string`, 'INVALID_MESSAGE');
  const bytes = utf8.encode(value).length;
  if (bytes === 0 || bytes > MAX_NAME_BYTES || value.includes('\0')) throw timerError(`${name} must be 1 to ${MAX_NAME_BYTES} bytes with no NUL`, 'INVALID_MESSAGE');
  return value;
}

/** A node id holding a lease: as an execution id, refused with INVALID_HOLDER. */
function timerHolder(value) {
  try {
    return timerId(value);
  } catch (error) {
    throw timerError(`holder: ${error.message}`, 'INVALID_HOLDER');
  }
}

function dueLimit(limit) {
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_DUE_LIMIT) throw timerError(`limit must be in 1..=${MAX_DUE_LIMIT}`, 'INVALID_LIMIT');
  return limit;
}

/** A lease `{ holder, now, durationMs }` and a limit; the lease and when it ends. */
function checkLease(value, limit) {
  const lease = timerObject(value, LEASE_FIELDS, 'lease', 'INVALID_LEASE');
  const holder = timerHolder(lease.holder);
  const now = timerTime('lease.now', lease.now);
  dueLimit(limit);
  const { durationMs } = lease;
  if (!Number.isSafeInteger(durationMs) || durationMs < 1 || durationMs > MAX_LEASE_MS || now + durationMs > Number.MAX_SAFE_INTEGER) {
    throw timerError(`lease.durationMs must be in 1..=${MAX_LEASE_MS} and end by 2^53-1`, 'INVALID_LEASE');
  }
  return { holder, now, expiresAt: now + durationMs };
}

/** A claim as `claimDue` gave it. */
function checkClaim(value) {
  const claim = timerObject(value, CLAIM_FIELDS, 'claim', 'INVALID_CLAIM');
  const row = checkRow(claim.row, 'claim.row');
  const holder = timerHolder(claim.holder);
  if (!Number.isSafeInteger(claim.number) || claim.number < 0) throw timerError('claim.number must be a safe non-negative integer', 'INVALID_CLAIM');
  if (!Number.isSafeInteger(claim.expiresAt)) throw timerError('claim.expiresAt must be a safe integer', 'INVALID_TIME');
  return { row, holder, number: claim.number };
}

function checkRow(value, what) {
  const row = timerObject(value, ROW_FIELDS, what, 'INVALID_ROW');
  const out = { executionId: timerId(row.executionId), wakeAt: timerTime(`${what}.wakeAt`, row.wakeAt) };
  if (row.redrive !== undefined && row.redrive !== null) {
    const { attempt } = timerObject(row.redrive, new Set(['attempt']), `${what}.redrive`, 'INVALID_ROW');
    if (!Number.isSafeInteger(attempt) || attempt < 0 || attempt > 2 ** 31 - 1) throw timerError(`${what}.redrive.attempt must be in 0..=2^31-1`, 'INVALID_ATTEMPT');
    out.redrive = { attempt };
  }
  return out;
}

function checkMessage(value) {
  const message = timerObject(value, MESSAGE_FIELDS, 'message', 'INVALID_MESSAGE');
  const executionId = timerId(message.executionId);
  const channel = messageName('message.channel', message.channel);
  const messageId = messageName('message.messageId', message.messageId);
  let payload;
  try {
    payload = copyJson(message.payload, 'message.payload');
  } catch (error) {
    throw timerError(error.message, 'INVALID_MESSAGE');
  }
  const bytes = utf8.encode(JSON.stringify(payload)).length;
  if (bytes > MAX_MESSAGE_BYTES) throw timerError(`message payload is ${bytes} bytes; the limit is ${MAX_MESSAGE_BYTES}`, 'INVALID_LIMIT');
  return { executionId, channel, messageId, payload, sentAt: timerTime('message.sentAt', message.sentAt) };
}

function checkKey(value) {
  const key = timerObject(value, KEY_FIELDS, 'key', 'INVALID_MESSAGE');
  return { executionId: timerId(key.executionId), channel: messageName('key.channel', key.channel), messageId: messageName('key.messageId', key.messageId) };
}

/** The map key of a message key: its three strings, none holding a NUL. */
const keyOf = ({ executionId, channel, messageId }) => `${executionId}\0${channel}\0${messageId}`;
/** The map key of a timer row. */
const rowKey = ({ executionId, wakeAt }) => `${executionId}\0${wakeAt}`;

/** A plain-JavaScript inbox on its own timer rows. */
export class PlainInbox {
  /** message key -> { message, arrival, consumed } */
  #messages = new Map();
  #lastArrival = 0;
  /** row key -> { row, held: { holder, expiresAt } | null, claims }: a row, who holds it, and how often it was claimed. */
  #rows = new Map();

  /** Writes `row`, or merges it into the row with its key: a re-drive flag is kept or added, never cleared. */
  async schedule(row) {
    this.#schedule(checkRow(row, 'row'));
  }

  /** Up to `limit` rows with `wakeAt <= now`, claimed or not, earliest first, then by id in byte order. */
  async due(now, limit, options = {}) {
    timerTime('now', now);
    dueLimit(limit);
    return this.#due(now, options)
      .slice(0, limit)
      .map((slot) => structuredClone(slot.row));
  }

  /** Claims up to `limit` due rows no live lease holds, for `lease.holder` until the lease ends. */
  async claimDue(lease, limit, options = {}) {
    const { holder, now, expiresAt } = checkLease(lease, limit);
    const claims = [];
    for (const slot of this.#due(now, options)) {
      if (claims.length === limit) break;
      if (slot.held && slot.held.expiresAt > now) continue;
      slot.claims += 1;
      slot.held = { holder, expiresAt };
      claims.push({ row: structuredClone(slot.row), holder, number: slot.claims, expiresAt });
    }
    return claims;
  }

  /** Retires the claimed row if `claim` is still its current claim: 'done', else 'notHeld'. */
  async complete(claim) {
    const { row, holder, number } = checkClaim(claim);
    const slot = this.#rows.get(rowKey(row));
    if (!slot || slot.claims !== number || slot.held?.holder !== holder) return 'notHeld';
    this.#rows.delete(rowKey(row));
    return 'done';
  }

  async send(message, intent) {
    const checked = checkMessage(message);
    const row = checkRow(intent, 'intent');
    const stored = this.#messages.get(keyOf(checked));
    if (stored) return { duplicate: true, arrival: stored.arrival };
    const arrival = ++this.#lastArrival;
    this.#messages.set(keyOf(checked), { message: checked, arrival, consumed: false });
    this.#schedule(row);
    return { duplicate: false, arrival };
  }

  async pending(executionId, channels, limit) {
    const id = timerId(executionId);
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PENDING_LIMIT) throw timerError(`limit must be in 1..=${MAX_PENDING_LIMIT}`, 'INVALID_LIMIT');
    if (!Array.isArray(channels)) throw timerError('channels must be an array of strings', 'INVALID_MESSAGE');
    if (channels.length > MAX_PENDING_LIMIT) throw timerError(`at most ${MAX_PENDING_LIMIT} channels`, 'INVALID_LIMIT');
    const asked = new Set(channels.map((channel, i) => messageName(`channels[${i}]`, channel)));
    return this.#of(id)
      .filter((entry) => !entry.consumed && asked.has(entry.message.channel))
      .slice(0, limit)
      .map(({ message, arrival }) => ({ ...structuredClone(message), arrival }));
  }

  async markConsumed(key) {
    const entry = this.#messages.get(keyOf(checkKey(key)));
    if (!entry || entry.consumed) return false;
    entry.consumed = true;
    return true;
  }

  async purge(executionId) {
    const entries = this.#of(timerId(executionId));
    for (const entry of entries) this.#messages.delete(keyOf(entry.message));
    return entries.length;
  }

  async messages(executionId) {
    return this.#of(timerId(executionId)).map(({ message, arrival, consumed }) => ({ ...structuredClone(message), arrival, consumed }));
  }

  /** The entries of one execution, in arrival order. */
  #of(id) {
    return [...this.#messages.values()].filter((entry) => entry.message.executionId === id).sort((a, b) => a.arrival - b.arrival);
  }

  /** The rows due at `now` that `options` admits, earliest first, then by id in byte order. */
  #due(now, options) {
    return [...this.#rows.values()]
      .filter(({ row }) => row.wakeAt <= now && (options?.redrive !== false || !row.redrive))
      .sort((a, b) => a.row.wakeAt - b.row.wakeAt || compareIds(a.row.executionId, b.row.executionId));
  }

  /** Writes `row`, or merges it into the row of its key: the re-drive flag kept or added, any claim ended. */
  #schedule(row) {
    const key = rowKey(row);
    const old = this.#rows.get(key);
    const redrive = row.redrive ?? old?.row.redrive;
    const merged = redrive ? { ...row, redrive } : { executionId: row.executionId, wakeAt: row.wakeAt };
    this.#rows.set(key, { row: merged, held: null, claims: old?.claims ?? 0 });
  }
}
