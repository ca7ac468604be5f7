// The keys of an object and the elements of a list a caller handed in (an
// argument, a store's reply, a callback's answer), read here, in
// JavaScript, so that nothing they throw crosses into WebAssembly: a
// revoked Proxy, an `ownKeys` trap or an element `get` trap that throws is
// caught here and answered as a value, and the Rust side refuses it with
// the input's own error. An exception unwinding through the WebAssembly
// frames would leak their stack and leave the object it was reading for
// borrowed.

/** The own enumerable keys of `value` when it is an object and not an
 * array; `undefined` otherwise, or when reading them threw. */
export function objectKeys(value) {
  try {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    return Object.keys(value);
  } catch {
    return undefined;
  }
}

/**
 * A plain copy of the elements of `value` when it is an array of at most
 * `max`; its length (a number) when it is longer, read before any element
 * so a 2^32-1 hole array costs nothing; `undefined` when it is not an
 * array; `{ thrown }` when reading it threw. The copy is a fresh array with
 * data elements only, so the Rust side walks it without meeting a trap;
 * each element is still the caller's value, read by the catching readers.
 */
export function listOf(value, max) {
  try {
    if (!Array.isArray(value)) return undefined;
    const length = value.length;
    if (length > max) return length;
    const copy = new Array(length);
    for (let i = 0; i < length; i++) copy[i] = value[i];
    return copy;
  } catch (thrown) {
    return { thrown };
  }
}

/** `list[index]`, or `undefined` when reading it threw: caught here, in
 * plain JavaScript, rather than by wasm-bindgen's catching glue, which
 * costs a `Function.prototype.apply` on every call of a hot path. */
export function elementAt(list, index) {
  try {
    return list[index];
  } catch {
    return undefined;
  }
}
