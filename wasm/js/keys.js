// The keys of an object a caller handed in, read without letting anything
// it throws cross into WebAssembly: a revoked Proxy, or an `ownKeys` trap
// that throws, answers `undefined` as a value that is not an object does,
// and the Rust side refuses it with the input's own error.

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
