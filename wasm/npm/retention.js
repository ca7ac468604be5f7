// sweep: the package's retention sweep, a pump of the core's SweepMachine
// (core/src/retention/sweep.rs, bound in wasm/src/sweep.rs). Hand-written
// JavaScript shipped beside the wasm-bindgen glue, like timer-service.js,
// re-exported by index.js and browser.js.
//
// It holds no rule. The machine decides the options' default and bounds, who
// is eligible, whom to read, who is pinned, each delete's guard, whether a
// store's answer is within the interface (else an InputError STORE_CONTRACT)
// and what a failed action means. This loop converts the caller's options,
// performs each action the machine names, and feeds back the answer, or the
// failure (`retryable: false` says it cannot succeed for good):
//   list        -> store.listExecutions(after, limit)
//   readLogs    -> store.readLogs(executionIds), with knownParents(id) for each
//   readParents -> store.readLogs(parents)
//   archive     -> options.archive(executionId, events), for each log in turn
//   delete      -> store.deleteExecutionsIf(batch)
// A store without readLogs or deleteExecutionsIf (both optional) is asked
// one execution at a time (readRange(id, 1), deleteExecutionIf(id, guard)),
// as the Rust trait's defaults do.
// A sweep that stops rethrows the error as it came, with the partial report
// attached as `error.report`. Deletes made before it stand: each is atomic.

import { SweepMachine, errorClasses } from './dist/loomfence_services.js';
import { settled } from './answers.js';
import { show } from './options.js';

/** The options `sweep` reads; any other key is refused. */
const OPTIONS = new Set(['endedBefore', 'pageLimit', 'dryRun', 'archive', 'knownParents']);

/** What a store must have for a sweep. */
const STORE_METHODS = ['readRange', 'listExecutions', 'deleteExecutionIf'];

/** The package's error classes (the wasm module is initialised by the entry
 * point before anything here runs). */
let classes;
function invalidOptions(message) {
  classes ??= errorClasses();
  return new classes.InputError(`sweep(store, options): ${message}`, 'INVALID_OPTIONS');
}

/** knownParents answered a value that could not be read. */
function unreadableParents(thrown) {
  classes ??= errorClasses();
  const error = new classes.InputError('sweep: options.knownParents answered a value that could not be read; it answers an array of execution ids', 'UNEXPECTED_ANSWER');
  error.cause = thrown;
  return error;
}

function notAStore(message) {
  return Object.assign(new TypeError(`sweep(store, options): ${message}`), { code: 'NOT_A_STORE' });
}

/** `value` if it is a function or left out, else an `INVALID_OPTIONS` refusal. */
function optionalFunction(name, value) {
  if (value !== undefined && typeof value !== 'function') throw invalidOptions(`options.${name} must be a function`);
  return value;
}

/** `read()`, or `refuse('<what> could not be read')` when it threw (a
 * revoked Proxy, a getter or trap that throws). */
function readable(read, refuse, what) {
  try {
    return read();
  } catch {
    throw refuse(`${what} could not be read`);
  }
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
    throw notAStore('store must be an object with readRange, listExecutions and deleteExecutionIf');
  }
  const missing = readable(() => STORE_METHODS.filter((name) => typeof store[name] !== 'function'), notAStore, 'store');
  if (missing.length > 0) throw notAStore(`store has no ${missing.join(', ')}; a sweep needs ${STORE_METHODS.join(', ')}`);
  if (options === null || typeof options !== 'object') throw invalidOptions('options must be an object { endedBefore, … }');
  // Read once, here: a getter or a Proxy trap that throws is a refusal of the options.
  const { keys, endedBefore, pageLimit, dryRun = false, archive, knownParents } = readable(
    () => {
      const { endedBefore, pageLimit, dryRun, archive, knownParents } = options;
      return { keys: Object.keys(options), endedBefore, pageLimit, dryRun, archive, knownParents };
    },
    invalidOptions,
    'options',
  );
  const unknown = keys.filter((key) => !OPTIONS.has(key));
  if (unknown.length > 0) throw invalidOptions(`unknown option ${unknown.map((k) => JSON.stringify(k)).join(', ')}`);
  if (!Number.isSafeInteger(endedBefore)) {
    throw invalidOptions(
      `options.endedBefore must be a time in ms since the epoch (a safe integer): executions that ended before it are eligible; got ${show(endedBefore)}`,
    );
  }
  if (typeof dryRun !== 'boolean') throw invalidOptions(`options.dryRun must be a boolean, got ${show(dryRun)}`);
  optionalFunction('archive', archive);
  optionalFunction('knownParents', knownParents);
  const machine = new SweepMachine(endedBefore, pageLimit, archive !== undefined, dryRun);
  try {
    return await pump(store, machine, archive, knownParents);
  } finally {
    machine.free();
  }
}

/** Polls the machine and performs its actions until it is done; a failure
 * that stops the sweep leaves with the report of what was done attached. */
async function pump(store, machine, archive, knownParents) {
  const batched = (name) => readable(() => typeof store[name] === 'function', notAStore, 'store');
  const readLogs = batched('readLogs')
    ? (ids) => store.readLogs(ids)
    : (ids) => inTurn(ids, (id) => store.readRange(id, 1));
  const deleteAll = batched('deleteExecutionsIf')
    ? (batch) => store.deleteExecutionsIf(batch)
    : (batch) => inTurn(batch, (entry) => store.deleteExecutionIf(entry.executionId, entry.guard));
  const io = {
    list: (step) => store.listExecutions(step.after, step.limit),
    readLogs: (step) => readLogs(step.executionIds),
    readParents: (step) => readLogs(step.parents),
    archive: (step) => inTurn(step.logs, (log) => archive(log.executionId, log.events)),
    delete: (step) => deleteAll(step.batch),
  };
  for (;;) {
    const step = machine.poll();
    if (step.done !== undefined) return step.done;
    try {
      if (io[step.act] === undefined) {
        throw new Error(`sweep: the sweep machine asked for ${JSON.stringify(step)}, which this loop does not know`);
      }
      let answer;
      try {
        answer = await io[step.act](step);
      } catch (error) {
        const forGood = error !== null && typeof error === 'object' && error.retryable === false;
        if (machine.handleFailed(forGood ? String(error.message ?? error) : undefined)) continue;
        throw error;
      }
      await answerWith(machine, step, answer, knownParents);
    } catch (error) {
      throw withReport(error, machine.report);
    }
  }
}

/** `perform` for each item in turn, awaited one after the other: the
 * answers, in order. */
async function inTurn(items, perform) {
  const answers = [];
  for (const item of items) answers.push(await perform(item));
  return answers;
}

/** Hands the answer to `step` to the machine. */
async function answerWith(machine, step, answer, knownParents) {
  switch (step.act) {
    case 'list':
      return machine.handlePage(answer);
    case 'readLogs':
      return machine.handleLogs(
        answer,
        knownParents && (await inTurn(step.executionIds, (id) => settled(knownParents(id), unreadableParents))),
      );
    case 'readParents':
      return machine.handleParents(answer);
    case 'archive':
      return machine.handleArchived();
    default:
      return machine.handleDeleted(answer);
  }
}
