// What may be stored as an event's payload, metadata or a resume's answer:
// JSON. Checked here, in one walk in JavaScript, before the value crosses
// into WebAssembly, because the conversion there would quietly reshape
// what JSON cannot hold (NaN into null, a Map or an array into an object, a
// BigInt into a rounded number).
//
// `undefined` members of an object are dropped, as JSON.stringify drops
// them (so `{ a: undefined }` is stored as `{}`); anything else that is not
// JSON is refused with a message naming where it is.

const MAX_DEPTH = 128;

/**
 * `{ value }`: the JSON value to convert (`value` itself, or a copy without
 * its `undefined` members); `{ problem }`: why it is not JSON.
 */
export function jsonValue(value, path) {
  try {
    return { value: walk(value, path, 0) };
  } catch (problem) {
    if (problem instanceof NotJson) return { problem: problem.message };
    throw problem;
  }
}

class NotJson extends Error {}

function walk(value, path, depth) {
  if (depth > MAX_DEPTH) {
    throw new NotJson(`${path}: nested deeper than ${MAX_DEPTH} levels (a cycle?)`);
  }
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw new NotJson(`${path}: ${value} is not a JSON number`);
      return value;
    case 'object':
      if (value === null) return value;
      if (Array.isArray(value)) return walkArray(value, path, depth);
      return walkObject(value, path, depth);
    default:
      throw new NotJson(`${path}: a ${typeof value} is not JSON`);
  }
}

function walkArray(array, path, depth) {
  let copy = null;
  for (let i = 0; i < array.length; i++) {
    const item = array[i];
    if (item === undefined) throw new NotJson(`${path}[${i}]: undefined is not JSON`);
    const converted = walk(item, `${path}[${i}]`, depth + 1);
    if (converted !== item) {
      copy ??= array.slice();
      copy[i] = converted;
    }
  }
  return copy ?? array;
}

function walkObject(object, path, depth) {
  const proto = Object.getPrototypeOf(object);
  if (proto !== Object.prototype && proto !== null) {
    const name = object.constructor?.name ?? 'an object with a prototype';
    throw new NotJson(`${path}: a ${name} is not a plain JSON object`);
  }
  let copy = null;
  for (const key of Object.keys(object)) {
    const member = object[key];
    if (member === undefined) {
      copy ??= { ...object };
      delete copy[key];
      continue;
    }
    const converted = walk(member, `${path}.${key}`, depth + 1);
    if (converted !== member) {
      copy ??= { ...object };
      copy[key] = converted;
    }
  }
  return copy ?? object;
}
