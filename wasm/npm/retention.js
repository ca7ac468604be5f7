// sweep: the package's retention sweep, a loop around the core's
// SweepMachine. Hand-written JavaScript shipped beside the wasm-bindgen glue,
// like timer-service.js, re-exported by index.js and browser.js. It costs the
// .wasm nothing.
//
// It makes no decision of its own. The machine (core/src/retention/sweep.rs,
// bound in wasm/src/sweep.rs) decides who is eligible, whom to read, who is
// pinned and what each delete's guard is; this loop performs the actions it
// names against the store and feeds the answers back:
//   list       -> store.listExecutions(after, limit)
//   readLog    -> store.readRange(executionId, 1), with knownParents(executionId)
//   readParent -> store.readRange(parent, 1)
// A read the store rejects with `retryable: false` (it cannot read that log
// for good: a corrupt row) is answered with handleUnreadable: the machine
// keeps the child, lists it in `report.undecided`, and the sweep goes on.
//   archive    -> options.archive(executionId, events), awaited before the delete
//   delete     -> store.deleteExecutionIf(executionId, guard)
//
// Every answer of the store is checked here against the interface before
// the machine sees it, as resume checks its store's (wasm/src/host_store.rs):
// one outside it is an InputError 'STORE_CONTRACT' and stops the sweep. The
// checks are JavaScript because here they cost the .wasm nothing; the
// binding only converts what passed them (and refuses, with one short
// STORE_CONTRACT error, anything that would not convert after all).
//
// A child the sweep cannot judge (a corrupt lineage or park, a kernel kind
// this node does not know, a log the store cannot read for good) is kept and
// listed in `report.undecided`: an answer, not a failure. A sweep that stops
// carries what it did: any failure (the store, the archive, knownParents, a
// contract error) is rethrown as it came with the partial report attached as
// `error.report`. Deletes made before the failure stand: each one is atomic.

import { SweepMachine, errorClasses } from './dist/loomfence_wasm.js';

/** The options `sweep` reads; any other key is refused. */
const OPTIONS = new Set(['endedBefore', 'pageLimit', 'dryRun', 'archive', 'knownParents']);

/** What a store must have for a sweep. */
const STORE_METHODS = ['readRange', 'listExecutions', 'deleteExecutionIf'];

/** The largest listing page, and the default one. */
const MAX_PAGE_LIMIT = 10_000;
const DEFAULT_PAGE_LIMIT = 1_000;

/** The longest execution id, in UTF-8 bytes. */
const MAX_ID_BYTES = 255;
const utf8 = new TextEncoder();

/** The package's error classes (the wasm module is initialised by the entry
 * point before anything here runs). */
let classes;
function refuse(message, code) {
  classes ??= errorClasses();
  return new classes.InputError(message, code);
}

function contract(message) {
  return refuse(message, 'STORE_CONTRACT');
}

function show(value) {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'bigint') return `${value}n`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function isObject(value) {
  return value !== null && typeof value === 'object';
}

/** Whether `value` is an integer from `min` to 2^53-1. */
function isCount(value, min) {
  return Number.isSafeInteger(value) && value >= min;
}

/** Whether `id` is an execution id: 1 to 255 bytes of UTF-8, no NUL. */
function isId(id) {
  if (typeof id !== 'string' || id.length === 0 || id.includes('\0')) return false;
  // A UTF-16 code unit is at most 3 bytes of UTF-8: short ids need no encoding.
  return id.length * 3 <= MAX_ID_BYTES || utf8.encode(id).length <= MAX_ID_BYTES;
}

/** A listing page after `after`: an array of at most `limit` summaries
 * `{ executionId, head, ended }`, none of them `after` itself, `ended` null
 * or `{ sequence, at }` within the log. Strict
 * as the interface is written: a summary without `ended` would read as
 * running forever, and the sweep would quietly never delete anything. */
function checkPage(page, after, limit) {
  if (!Array.isArray(page)) {
    throw contract(`listExecutions() must resolve to an array of { executionId, head, ended }, got ${show(page)}`);
  }
  if (page.length > limit) throw contract(`listExecutions() listed ${page.length} executions to a limit of ${limit}`);
  for (let i = 0; i < page.length; i++) {
    const summary = page[i];
    const where = `listExecutions() result[${i}]`;
    if (!isObject(summary)) throw contract(`${where} must be { executionId, head, ended }, got ${show(summary)}`);
    const { executionId, head, ended } = summary;
    if (!isId(executionId)) throw contract(`${where}.executionId must be an execution id, got ${show(executionId)}`);
    if (executionId === after) {
      throw contract(`listExecutions(${show(after)}, ${limit}) listed ${show(after)} again: the cursor is exclusive, or the sweep would never end`);
    }
    if (!isCount(head, 1)) {
      throw contract(`${where}.head must be a safe integer from 1 (a listed execution has a log), got ${show(head)}`);
    }
    if (ended === null) continue;
    if (!isObject(ended)) throw contract(`${where}.ended must be null or { sequence, at }, got ${show(ended)}`);
    if (!isCount(ended.sequence, 1) || ended.sequence > head) {
      throw contract(`${where}.ended.sequence must be a sequence of the log (1..=${head}), got ${show(ended.sequence)}`);
    }
    if (!Number.isSafeInteger(ended.at)) throw contract(`${where}.ended.at must be a safe integer, got ${show(ended.at)}`);
  }
}

/** A whole log of `executionId` as `readRange(executionId, 1)` gives it:
 * an array of its envelopes, contiguous from sequence 1 (the envelopes'
 * fields are the binding's to check). */
function checkLog(events, executionId) {
  const what = `readRange(${show(executionId)}, 1)`;
  if (!Array.isArray(events)) throw contract(`${what} must resolve to an array of envelopes, got ${show(events)}`);
  for (let i = 0; i < events.length; i++) {
    const event = events[i];
    if (!isObject(event) || event.sequence !== i + 1 || event.executionId !== executionId) {
      throw contract(`${what} result[${i}] is not event ${i + 1} of ${show(executionId)}'s log: the log runs from sequence 1, contiguous`);
    }
  }
}

/** A guarded delete's answer to `guard`: exactly one of `{ deleted: true }`,
 * `{ logChanged: true, head }` with a head other than the guard's (else
 * nothing changed), `{ parentMoved: true, parent }` naming a parent of the
 * guard. Each flag absent or exactly `true`. */
function checkOutcome(outcome, guard) {
  const wrong = () =>
    contract(
      'deleteExecutionIf() must resolve to { deleted: true }, { logChanged: true, head } with a head other than ' +
        `the guard's (${guard.head}), or { parentMoved: true, parent } naming a parent of the guard; got ${show(outcome)}`,
    );
  if (!isObject(outcome)) throw wrong();
  const flags = ['deleted', 'logChanged', 'parentMoved'].filter((flag) => outcome[flag] !== undefined);
  if (flags.length !== 1 || outcome[flags[0]] !== true) throw wrong();
  if (flags[0] === 'logChanged' && !(isCount(outcome.head, 0) && outcome.head !== guard.head)) throw wrong();
  if (flags[0] === 'parentMoved' && !guard.parents.some((mark) => mark.parent === outcome.parent)) throw wrong();
}

/** What `knownParents` gave: an array of execution ids (nothing: none). */
function checkParents(parents, executionId) {
  if (parents === undefined || parents === null) return [];
  if (!Array.isArray(parents) || !parents.every(isId)) {
    throw refuse(
      `options.knownParents(${show(executionId)}) must return an array of execution ids, got ${show(parents)}`,
      'UNEXPECTED_ANSWER',
    );
  }
  return parents;
}

function notAStore(message) {
  return Object.assign(new TypeError(message), { code: 'NOT_A_STORE' });
}

/** `value` if it is a function or left out, else an `INVALID_OPTIONS` refusal. */
function optionalFunction(name, value) {
  if (value !== undefined && typeof value !== 'function') {
    throw refuse(`sweep(store, options): options.${name} must be a function`, 'INVALID_OPTIONS');
  }
  return value;
}

/** Puts the report of what was done on a failure, when it can carry one. */
function withReport(error, report) {
  if (error !== null && (typeof error === 'object' || typeof error === 'function')) {
    try {
      error.report = report;
    } catch {
      // A frozen error is rethrown as it is.
    }
  }
  return error;
}

/**
 * One retention sweep of `store` (the package's MemoryEventStore, or any
 * store with readRange, listExecutions and deleteExecutionIf). See
 * index.d.ts.
 */
export async function sweep(store, options) {
  if (store === null || (typeof store !== 'object' && typeof store !== 'function')) {
    throw notAStore('sweep(store, options): store must be an object with readRange, listExecutions and deleteExecutionIf');
  }
  const missing = STORE_METHODS.filter((name) => typeof store[name] !== 'function');
  if (missing.length > 0) {
    throw notAStore(`sweep(store, options): store has no ${missing.join(', ')}; a sweep needs ${STORE_METHODS.join(', ')}`);
  }
  if (options === null || typeof options !== 'object') {
    throw refuse('sweep(store, options): options must be an object { endedBefore, … }', 'INVALID_OPTIONS');
  }
  const unknown = Object.keys(options).filter((key) => !OPTIONS.has(key));
  if (unknown.length > 0) {
    throw refuse(`sweep(store, options): unknown option ${unknown.map((k) => JSON.stringify(k)).join(', ')}`, 'INVALID_OPTIONS');
  }
  const { endedBefore, pageLimit = DEFAULT_PAGE_LIMIT, dryRun = false } = options;
  if (!Number.isSafeInteger(endedBefore)) {
    throw refuse(
      `sweep(store, options): options.endedBefore must be a time in ms since the epoch (a safe integer): executions that ended before it are eligible; got ${show(endedBefore)}`,
      'INVALID_OPTIONS',
    );
  }
  if (!Number.isInteger(pageLimit) || pageLimit < 1 || pageLimit > MAX_PAGE_LIMIT) {
    throw refuse(`sweep(store, options): options.pageLimit must be an integer from 1 to ${MAX_PAGE_LIMIT}, got ${show(pageLimit)}`, 'INVALID_LIMIT');
  }
  if (typeof dryRun !== 'boolean') {
    throw refuse(`sweep(store, options): options.dryRun must be a boolean, got ${show(dryRun)}`, 'INVALID_OPTIONS');
  }
  const archive = optionalFunction('archive', options.archive);
  const knownParents = optionalFunction('knownParents', options.knownParents);
  const machine = new SweepMachine(endedBefore, pageLimit, archive !== undefined, dryRun);
  try {
    return await drive(store, machine, archive, knownParents);
  } finally {
    machine.free();
  }
}

/** Polls the machine and performs its actions until it is done; a failure
 * of an action leaves with the report of what was done attached. */
async function drive(store, machine, archive, knownParents) {
  for (;;) {
    const step = machine.poll();
    if (step.done !== undefined) return step.done;
    await perform(store, machine, step, archive, knownParents).catch((error) => {
      throw withReport(error, machine.report);
    });
  }
}

/** A whole log, or `undefined` once the machine was told the store cannot
 * read it for good (the store threw with `retryable: false`). Any other
 * failure is rethrown: it may pass, and the next sweep reads again. */
async function read(store, machine, executionId) {
  try {
    return await store.readRange(executionId, 1);
  } catch (error) {
    if (error === null || typeof error !== 'object' || error.retryable !== false) throw error;
    machine.handleUnreadable(String(error.message ?? error));
    return undefined;
  }
}

/** Performs one action and hands its answer to the machine. */
async function perform(store, machine, step, archive, knownParents) {
  switch (step.act) {
    case 'list': {
      const page = await store.listExecutions(step.after, step.limit);
      checkPage(page, step.after, step.limit);
      machine.handlePage(page);
      break;
    }
    case 'readLog': {
      const events = await read(store, machine, step.executionId);
      if (events === undefined) break;
      checkLog(events, step.executionId);
      const known = knownParents === undefined ? [] : checkParents(await knownParents(step.executionId), step.executionId);
      machine.handleLog(events, known);
      break;
    }
    case 'readParent': {
      const events = await read(store, machine, step.parent);
      if (events === undefined) break;
      checkLog(events, step.parent);
      machine.handleParent(events);
      break;
    }
    case 'archive':
      await archive(step.executionId, step.events);
      machine.handleArchived();
      break;
    case 'delete': {
      const outcome = await store.deleteExecutionIf(step.executionId, step.guard);
      checkOutcome(outcome, step.guard);
      machine.handleDeleted(outcome);
      break;
    }
    default:
      throw new Error(`sweep: the sweep machine asked for ${JSON.stringify(step)}, which this loop does not know`);
  }
}
