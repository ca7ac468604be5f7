// The checks of the options the package's pumps take (timer-service.js,
// supervisor.js, retention.js): shapes only JavaScript has (an object with
// known keys, a function, an integer, a store's methods), each refused with
// the caller's own error. Whatever the core reads, the core checks.

/** The longest delay setTimeout honours: the bound of every poll interval. */
export const MAX_INTERVAL_MS = 2 ** 31 - 1;

/**
 * A value for a message: its JSON where it has one, 'a function' for a
 * function, else its type. Never throws: a value nested too deep for
 * JSON.stringify (a stack overflow), a cycle, a revoked Proxy or a
 * `toString` that throws is shown by its type, so the refusal it is for is
 * the one the caller gets.
 */
export function show(value) {
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'symbol') return 'a symbol';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return value === null ? 'null' : `a ${typeof value}`;
  }
}

/** A plain copy of `options`, each value read once, if it is an object with
 * no key outside `allowed`, else `refuse(message)`; one that cannot be read
 * (a revoked Proxy, a trap or a getter that throws) is refused too, never
 * with what it threw. */
export function known(options, allowed, shape, refuse) {
  if (options === null || typeof options !== 'object') throw refuse(`options must be an object ${shape}`);
  let copy;
  try {
    copy = { ...options };
  } catch {
    throw refuse(`options could not be read; they must be an object ${shape}`);
  }
  const unknown = Object.keys(copy).filter((key) => !allowed.has(key));
  if (unknown.length > 0) throw refuse(`unknown option ${unknown.map(show).join(', ')}`);
  return copy;
}

/** `value` if `ok(value)`, else `refuse('options.<name> must be <what>, got <value>')`. */
export function checked(name, value, ok, what, refuse) {
  if (!ok(value)) throw refuse(`options.${name} must be ${what}, got ${show(value)}`);
  return value;
}

/** `value`, if it is a function; else `refuse`'s error. */
export function functionIn(name, value, refuse) {
  return checked(name, value, (v) => typeof v === 'function', 'a function', refuse);
}

/** `value`, if it is an integer in `min..=max`; else `refuse`'s error. */
export function integerIn(name, value, min, max, refuse) {
  return checked(name, value, (v) => Number.isSafeInteger(v) && v >= min && v <= max, `an integer in ${min}..=${max}`, refuse);
}

/** `value` if it has every one of `methods`, else a refusal naming the
 * missing ones; a store that throws while looked at (a revoked Proxy, a
 * trap or a getter that throws) is refused too, never with what it threw. */
export function store(name, value, methods, refuse) {
  let missing;
  try {
    missing = value === null || (typeof value !== 'object' && typeof value !== 'function') ? methods : methods.filter((m) => typeof value[m] !== 'function');
  } catch {
    throw refuse(`options.${name} could not be read; it must be a store with ${methods.join(', ')}`);
  }
  if (missing.length > 0) throw refuse(`options.${name} must be a store with ${methods.join(', ')}; missing ${missing.join(', ')}`);
  return value;
}
