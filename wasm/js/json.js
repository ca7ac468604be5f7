// What may be stored as an event's payload, metadata or a resume's answer:
// JSON. Checked here, in one walk in JavaScript, before the value crosses
// into WebAssembly, because the conversion there would quietly reshape
// what JSON cannot hold (NaN into null, a Map or an array into an object, a
// BigInt into a rounded number).
//
// `undefined` members of an object are dropped, as JSON.stringify drops
// them (so `{ a: undefined }` is stored as `{}`); anything else that is not
// JSON is refused with a message naming where it is.
//
// What crosses into WebAssembly is the JSON text (`jsonText`), which the Rust
// side parses: one crossing instead of one per member. What comes back is
// JSON text too, turned into plain values by `parseJson`.

import { InputError, thrownText } from './errors.js';

const MAX_DEPTH = 128;

/**
 * `value` as JSON text, or the InputError with `code` naming where it is not
 * JSON. Checked first, then written by JSON.stringify (which drops the
 * `undefined` members the check let through). A getter is read twice: one
 * that throws, or answers a BigInt the second time, is an InputError; one
 * that answers other JSON the second time is stored as JSON.stringify wrote
 * it, which is still JSON.
 */
export function jsonText(value, path, code) {
  try {
    walk(value, path, 0);
    return JSON.stringify(value);
  } catch (problem) {
    if (problem instanceof NotJson) return new InputError(problem.message, code);
    return new InputError(`${path}: could not be read as JSON (${thrownText(problem)})`, code);
  }
}

/** JSON text the Rust side wrote (always valid) as plain values. */
export function parseJson(text) {
  return JSON.parse(text);
}

class NotJson extends Error {}

function walk(value, path, depth) {
  if (depth > MAX_DEPTH) {
    throw new NotJson(`${path}: nested deeper than ${MAX_DEPTH} levels (a cycle?)`);
  }
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new NotJson(`${path}: ${value} is not a JSON number`);
      return;
    case 'object':
      if (value === null) return;
      if (Array.isArray(value)) return walkArray(value, path, depth);
      return walkObject(value, path, depth);
    default:
      throw new NotJson(`${path}: a ${typeof value} is not JSON`);
  }
}

function walkArray(array, path, depth) {
  for (let i = 0; i < array.length; i++) {
    const item = array[i];
    if (item === undefined) throw new NotJson(`${path}[${i}]: undefined is not JSON`);
    walk(item, `${path}[${i}]`, depth + 1);
  }
}

function walkObject(object, path, depth) {
  const proto = Object.getPrototypeOf(object);
  if (proto !== Object.prototype && proto !== null) {
    const name = object.constructor?.name ?? 'an object with a prototype';
    throw new NotJson(`${path}: a ${name} is not a plain JSON object`);
  }
  for (const key of Object.keys(object)) {
    const member = object[key];
    // Left out, as JSON.stringify leaves it out.
    if (member !== undefined) walk(member, `${path}.${key}`, depth + 1);
  }
}

/** A JSON number token that is not a safe integer, as JSON.parse reads it. */
export function numberOf(text) {
  return Number(text);
}

/** A float as JSON.stringify writes it. */
export function textOf(number) {
  return String(number);
}

/** `value` when it is a string of well-formed UTF-16 (no lone surrogate),
 * which crosses into Rust unchanged rather than with U+FFFD in its place;
 * otherwise `undefined`. The id reader's one crossing: test and text in a
 * single call. */
export function wellFormedText(value) {
  return typeof value === 'string' && value.isWellFormed() ? value : undefined;
}

/** `Array.isArray(value)`, and `false` where it throws (a revoked Proxy):
 * caught here, in plain JavaScript, rather than by wasm-bindgen's catching
 * glue, which costs a `Function.prototype.apply` per call. */
export function isArray(value) {
  try {
    return Array.isArray(value);
  } catch {
    return false;
  }
}
