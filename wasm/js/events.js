// Events and envelopes on their way into WebAssembly, checked and turned
// into JSON text here, in one pass in JavaScript: the Rust side reads the
// text (wasm/src/json_text.rs) instead of the object, field by field across
// the boundary: one crossing per call instead of dozens. Each check is the one
// the package documents for the value, with the same error class and code;
// what only the core knows (an id's or a kind's length, NUL characters)
// the core checks after parsing.
//
// Each function returns the text on success and the error object (not
// thrown) on failure, so the binding needs no exception handler per call.
// A value that throws while it is read (a getter, a Proxy trap, a revoked
// Proxy) is refused the same way, with the InputError of what was being
// read: nothing thrown ever crosses into WebAssembly.
// Several values come back as one text, one JSON value per line.

import { InputError, rangeError, typeError, unreadable } from './errors.js';
import { jsonText } from './json.js';

const EVENT_FIELDS = new Set(['kind', 'payload', 'metadata', 'at']);

const isObject = (value) => typeof value === 'object' && value !== null;

/** `read(value, what, code)`, or the InputError with `code` saying `what`
 * threw while it was read. The reader and its arguments are passed, not a
 * closure over them: no allocation per call on the append path. */
function guarded(what, code, read, value) {
  try {
    return read(value, what, code);
  } catch (thrown) {
    return unreadable(what, code, thrown);
  }
}

/** A timestamp in ms: a number (else InputError with `code`) that is a safe
 * integer, negative allowed (else RangeError AT_OUT_OF_RANGE). */
function checkAt(name, code, at) {
  if (typeof at !== 'number') return new InputError(`${name} must be a number of milliseconds`, code);
  if (!Number.isSafeInteger(at)) return rangeError(`${name} must be a safe integer, got ${at}`, 'AT_OUT_OF_RANGE');
  return null;
}

/** A JSON object member of an event or envelope (`undefined` is `{}`), as
 * text, or the InputError with `code` naming why it is not one. */
function objectText(path, code, value) {
  if (value === undefined) return '{}';
  if (!isObject(value) || Array.isArray(value)) return new InputError(`${path} must be a plain object`, code);
  return jsonText(value, path, code);
}

/** Whether `value` is neither a plain object nor undefined. */
function notPlain(value) {
  if (value === undefined) return false;
  const proto = isObject(value) ? Object.getPrototypeOf(value) : undefined;
  return proto !== Object.prototype && proto !== null;
}

/** The InputError for a value that is neither a plain object nor
 * undefined, or undefined. */
function shallow(path, code, value) {
  return notPlain(value) ? new InputError(`${path} must be a plain object`, code) : undefined;
}

/** An event's InputError, saying `detail`. */
const bad = (detail) => new InputError(`event: ${detail}`, 'INVALID_EVENT');

/** One event as a writer hands it over: `{ kind, payload?, metadata?, at }`. */
function eventLine(event) {
  if (!isObject(event) || Array.isArray(event)) {
    return typeError('event must be an object { kind, payload?, metadata?, at }', 'NOT_AN_OBJECT');
  }
  for (const key of Object.keys(event)) {
    if (!EVENT_FIELDS.has(key)) return bad(`unknown field \`${key}\`, expected one of kind, payload, metadata, at`);
  }
  const { kind, at, metadata, payload } = event;
  if (typeof kind !== 'string') return bad('`kind` must be a string');
  const badAt = checkAt('event.at', 'INVALID_EVENT', at);
  if (badAt) return badAt;
  const fence = isObject(metadata) ? metadata.fence : undefined;
  if (fence !== undefined) {
    if (typeof fence !== 'number') return typeError("metadata.fence must be a number (the writer's token)", 'BAD_FENCE');
    if (!Number.isSafeInteger(fence) || fence < 0) {
      return rangeError(`metadata.fence must be a safe non-negative integer, got ${fence}`, 'BAD_FENCE');
    }
  }
  const metadataText = objectText('event.metadata', 'INVALID_EVENT', metadata);
  if (typeof metadataText !== 'string') return metadataText;
  const payloadText = objectText('event.payload', 'INVALID_EVENT', payload);
  if (typeof payloadText !== 'string') return payloadText;
  lastKind = kind;
  lastPayload = payloadText;
  lastMetadata = metadataText;
  lastAt = at;
  return `{"kind":${JSON.stringify(kind)},"payload":${payloadText},"metadata":${metadataText},"at":${at}}`;
}

// The parts of the last event `eventText` wrote, while `lastText` is its
// text: what `storedEnvelope` builds that event's envelope from, instead of
// parsing the whole text again. `lastText` is cleared before every event is
// read, so it names the parts' event or nothing.
let lastText;
let lastKind;
let lastPayload;
let lastMetadata;
let lastAt;

/** One event, as text or its error. */
export function eventText(event) {
  lastText = undefined;
  const text = guarded('event', 'INVALID_EVENT', eventLine, event);
  if (typeof text === 'string') lastText = text;
  return text;
}

/** A batch of events, one per line, or the first error, its message
 * prefixed with where in the batch it was. */
export function eventsText(events) {
  return guarded('events', 'INVALID_EVENT', eventsLines, events);
}

function eventsLines(events) {
  lastText = undefined;
  if (!Array.isArray(events)) return typeError('events must be an array', 'NOT_AN_ARRAY');
  const lines = [];
  for (let i = 0; i < events.length; i++) {
    const line = eventLine(events[i]);
    if (typeof line !== 'string') {
      line.message = `events[${i}]: ${line.message}`;
      return line;
    }
    lines.push(line);
  }
  return lines.join('\n');
}

/** Stored events as a store hands them back (or a log handed to
 * locatePark), one per line, or an InputError with `code`. Fields an
 * envelope does not have are left out: a host store may keep its own. */
export function envelopesText(envelopes, what, code) {
  return guarded(what, code, envelopesLines, envelopes);
}

function envelopesLines(envelopes, what, code) {
  if (!Array.isArray(envelopes)) return new InputError(`${what} must be an array of envelopes`, code);
  const lines = [];
  for (let i = 0; i < envelopes.length; i++) {
    const line = envelopeLine(envelopes[i], `${what}[${i}]`, code);
    if (typeof line !== 'string') return line;
    lines.push(line);
  }
  return lines.join('\n');
}

/** One stored event, as text or its InputError with `code`. */
export function envelopeText(envelope, what, code) {
  return guarded(what, code, envelopeLine, envelope);
}

/**
 * What a fold reads of a log (locatePark's), one line per envelope: `1` or
 * `0` for whether `metadata.kernel` is the boolean `true`, then the kind as
 * JSON text. Each envelope is checked as far as its fields' types (the
 * payload and metadata plain objects, not walked: a fold never reads them),
 * with the InputError `envelopesText` would give (locatePark's: `events`,
 * INVALID_EVENT).
 */
export function foldText(envelopes, what = 'events', code = 'INVALID_EVENT') {
  return guarded(what, code, foldLines, envelopes);
}

function foldLines(envelopes, what, code) {
  // An array: locatePark refused anything else (a TypeError) before calling.
  let text = '';
  for (let i = 0; i < envelopes.length; i++) {
    const envelope = envelopes[i];
    const where = `${what}[${i}]`;
    const wrong = fieldTypes(envelope, where, code) ?? shallow(`${where}.payload`, code, envelope.payload) ?? shallow(`${where}.metadata`, code, envelope.metadata);
    if (wrong) return wrong;
    text += `${i > 0 ? '\n' : ''}${envelope.metadata?.kernel === true ? 1 : 0}${JSON.stringify(envelope.kind)}`;
  }
  return text;
}

/** The kernel kinds' names (the core's table, handed over once by
 * `setKernelKinds`), each with the code `foldCodes` writes for it. */
let kernelCodes = null;

/** Takes the core's kernel kinds, one name a line, in the core's order:
 * the i-th is written by `foldCodes` as the character 65 + i. */
export function setKernelKinds(names) {
  kernelCodes = new Map(names.split('\n').map((name, i) => [name, String.fromCharCode(65 + i)]));
}

/**
 * What `foldText` says of a log, shorter: one character per envelope, the
 * code of its kind when it is a kernel kind (`setKernelKinds`), else `1`
 * or `0` for whether it carries the kernel stamp, which is all the fold
 * asks of any other kind. No kind is written out or read back. The same
 * checks and reads as `foldText`, in the same order, with its errors;
 * `null` when a kind is not a well-formed string (the text path then reads
 * the log as it always did, and says what is wrong with it).
 */
export function foldCodes(envelopes, what = 'events', code = 'INVALID_EVENT') {
  return guarded(what, code, codeLines, envelopes);
}

function codeLines(envelopes, what, code) {
  // An array: locatePark refused anything else (a TypeError) before calling.
  let codes = '';
  for (let i = 0; i < envelopes.length; i++) {
    const envelope = envelopes[i];
    // foldLines' checks, its paths written only for an error.
    const detail = fieldProblem(envelope);
    if (detail !== undefined) return new InputError(`${what}[${i}]: ${detail}`, code);
    if (notPlain(envelope.payload)) return new InputError(`${what}[${i}].payload must be a plain object`, code);
    if (notPlain(envelope.metadata)) return new InputError(`${what}[${i}].metadata must be a plain object`, code);
    const stamped = envelope.metadata?.kernel === true;
    const kind = envelope.kind;
    if (typeof kind !== 'string') return null;
    const known = kernelCodes.get(kind);
    if (known !== undefined) codes += known;
    else if (kind.isWellFormed()) codes += stamped ? '1' : '0';
    else return null;
  }
  return codes;
}

/** The envelope a store hands back for an event it stored: the event's own
 * text (`eventText`'s), under its execution id and sequence. */
export function storedEnvelope(executionId, sequence, text) {
  if (text !== lastText) return envelopeOf(executionId, sequence, JSON.parse(text));
  // What JSON.parse(text) gives, from the parts the text was made of: the
  // kind as it was (JSON.stringify and JSON.parse give back any string),
  // the two objects parsed from their own texts, the time as its text
  // reads (a safe integer; -0 reads as 0).
  return {
    executionId,
    sequence,
    kind: lastKind,
    payload: lastPayload === '{}' ? {} : JSON.parse(lastPayload),
    metadata: lastMetadata === '{}' ? {} : JSON.parse(lastMetadata),
    at: lastAt + 0,
  };
}

/** The envelopes for a batch `eventsText` wrote, from `first` on. */
export function storedEnvelopes(executionId, first, lines) {
  if (lines === '') return [];
  return lines.split('\n').map((line, i) => envelopeOf(executionId, first + i, JSON.parse(line)));
}

/** An event `eventLine` wrote, parsed, as its envelope, in the envelope's
 * key order. The fields are put around the parsed event rather than the
 * text spliced and parsed whole: no `JSON.stringify` of the id, no
 * concatenated string to flatten (about 0.3 µs less per append). */
function envelopeOf(executionId, sequence, { kind, payload, metadata, at }) {
  return { executionId, sequence, kind, payload, metadata, at };
}

/** A JSON string the Rust side wrote (json_text.rs), as its value: the text
 * between the quotes when there is no escape in it (that writer escapes
 * every backslash), else what JSON.parse reads. */
const stringOf = (text) => (text.includes('\\') ? JSON.parse(text) : text.slice(1, -1));

/** A JSON object the Rust side wrote, as a fresh plain object. */
const objectOf = (text) => (text === '{}' ? {} : JSON.parse(text));

/** The envelope whose six lines (json_text.rs's write_envelope_lines) start
 * at `lines[at]`: what JSON.parse of the envelope as one object would give,
 * in its key order, for about half of that parse's cost. */
function envelopeAt(lines, at) {
  return {
    executionId: stringOf(lines[at]),
    sequence: Number(lines[at + 1]),
    kind: stringOf(lines[at + 2]),
    payload: objectOf(lines[at + 3]),
    metadata: objectOf(lines[at + 4]),
    at: Number(lines[at + 5]),
  };
}

/** Stored events the Rust side wrote as lines, six per event, as an array of
 * envelopes. */
export function envelopesFromLines(text) {
  if (text === '') return [];
  const lines = text.split('\n');
  const envelopes = [];
  for (let at = 0; at < lines.length; at += 6) envelopes.push(envelopeAt(lines, at));
  return envelopes;
}

/** A resume's answer the Rust side wrote as lines (resume.rs's answer_of). */
export function resumeAnswerFromLines(text) {
  const lines = text.split('\n');
  return {
    executionId: stringOf(lines[0]),
    fence: lines[1] === 'null' ? null : Number(lines[1]),
    resumed: envelopeAt(lines, 4),
    attempts: Number(lines[2]),
    head: Number(lines[3]),
  };
}

/** The InputError for an envelope whose fields are not of their types
 * (payload and metadata aside), or undefined. */
function fieldTypes(envelope, what, code) {
  const detail = fieldProblem(envelope);
  return detail === undefined ? undefined : new InputError(`${what}: ${detail}`, code);
}

/** What is wrong with an envelope's fields (payload and metadata aside),
 * or undefined: nothing allocated for a good one. */
function fieldProblem(envelope) {
  if (!isObject(envelope) || Array.isArray(envelope)) return 'not an envelope object';
  const { executionId, sequence, kind, at } = envelope;
  if (typeof executionId !== 'string') return '`executionId` must be a string';
  if (typeof kind !== 'string') return '`kind` must be a string';
  if (typeof sequence !== 'number' || !Number.isSafeInteger(sequence) || sequence < 0) {
    return '`sequence` must be a safe non-negative integer';
  }
  // A stored event's time, checked as the rest of it: a bad one is the
  // envelope's fault (a host store's answer: STORE_CONTRACT), not a RangeError
  // of the caller's.
  if (typeof at !== 'number') return '`at` must be a number of milliseconds';
  if (!Number.isSafeInteger(at)) return `\`at\` must be a safe integer of milliseconds, got ${at}`;
  return undefined;
}

function envelopeLine(envelope, what, code) {
  const wrong = fieldTypes(envelope, what, code);
  if (wrong) return wrong;
  const { executionId, sequence, kind, payload, metadata, at } = envelope;
  const payloadText = objectText(`${what}.payload`, code, payload);
  if (typeof payloadText !== 'string') return payloadText;
  const metadataText = objectText(`${what}.metadata`, code, metadata);
  if (typeof metadataText !== 'string') return metadataText;
  return (
    `{"executionId":${JSON.stringify(executionId)},"sequence":${sequence},"kind":${JSON.stringify(kind)},` +
    `"payload":${payloadText},"metadata":${metadataText},"at":${at}}`
  );
}
