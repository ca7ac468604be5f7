// The hostile values the JS kit's property suites throw at the package:
// one fast-check arbitrary of descriptions, and `build`, which
// turns a description into the hostile value. The arbitrary yields plain
// data, so fast-check can print and shrink a counterexample without calling
// a getter or a trap; the value is built inside the property.
//
// What it covers: wrong types (BigInt, symbols, functions, null-prototype
// objects, Maps, typed arrays, …), objects with a throwing getter, Proxies
// whose every trap throws, revoked Proxies, arrays that are Proxies whose
// element `get` throws, cyclic objects and arrays, nesting up to 10,000
// deep, unsafe numbers, lone-surrogate strings, objects with an own
// `__proto__` key, a 2^32-1 hole array, and each of these in place of one
// field of a valid value (`base`) a call site hands in.

import fc from 'fast-check';

/** A Proxy that has been revoked: every operation on it throws. */
export function revoked(target = {}) {
  const { proxy, revoke } = Proxy.revocable(target, {});
  revoke();
  return proxy;
}

/** A Proxy over `target` whose every trap that reads throws `thrown`. */
export function trapping(thrown, target = {}) {
  const fail = () => {
    throw thrown;
  };
  return new Proxy(target, { get: fail, has: fail, ownKeys: fail, getPrototypeOf: fail, getOwnPropertyDescriptor: fail });
}

/** An array of `length` whose own keys and length read, but whose element
 * `get` throws `thrown`: what an `Array.isArray` check lets through. */
export function throwingElements(thrown, length = 1) {
  return new Proxy(new Array(length).fill(0), {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) throw thrown;
      return Reflect.get(target, key, receiver);
    },
  });
}

/** An array nested `depth` deep (an object, when `!array`). */
export function nested(depth, array = true) {
  let value = array ? [] : {};
  for (let i = 0; i < depth; i++) value = array ? [value] : { v: value };
  return value;
}

/** Numbers outside what any id, sequence, time or count takes. */
export const UNSAFE_NUMBERS = Object.freeze([2 ** 53, -0, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1e308, -1, 0.5, -(2 ** 53)]);

/** Values of a type no field of the package takes (by kind). */
const WRONG = {
  bigint: () => 7n,
  symbol: () => Symbol('hostile'),
  function: () => function hostile() {},
  nullProto: () => Object.create(null),
  map: () => new Map([['kind', 'EXECUTION_STARTED']]),
  set: () => new Set([1]),
  typedArray: () => new Uint8Array([1, 2, 3]),
  date: () => new Date(0),
  regexp: () => /x/,
  promise: () => Promise.resolve(1),
  weakMap: () => new WeakMap(),
  arrayBuffer: () => new ArrayBuffer(8),
  boxedString: () => new String('e'),
  null: () => null,
  undefined: () => undefined,
  true: () => true,
  emptyString: () => '',
  nul: () => 'a\u0000b',
};

/** What a getter or a trap throws: an Error, a sentinel object, an array the
 * pre-fix option reader took as options, or anything fast-check makes. */
const thrownArb = fc.oneof(
  fc.constant({ error: true }),
  fc.constant({ sentinel: true }),
  fc.constant({ array: true }),
  fc.record({ anything: fc.anything({ maxDepth: 2 }) }),
);

/** Makes the thrown value of a description; every object one is recorded in
 * `thrownValues` so a check can say "this escaped as the refusal itself". */
export const thrownValues = new WeakSet();
function makeThrown(t) {
  let value;
  if (t.error) value = new Error('boom: thrown by a hostile caller value');
  else if (t.sentinel) value = { hostile: 'sentinel' };
  else if (t.array) value = [2, '"x"', 5];
  else value = t.anything;
  if (value !== null && typeof value === 'object') thrownValues.add(value);
  return value;
}

/** The arbitrary of hostile descriptions; `build` makes the value. */
export const hostile = fc.oneof(
  fc.record({ how: fc.constant('wrong'), which: fc.constantFrom(...Object.keys(WRONG)) }),
  fc.record({ how: fc.constant('getter'), pick: fc.nat(), thrown: thrownArb }),
  fc.record({ how: fc.constant('trap'), array: fc.boolean(), thrown: thrownArb }),
  fc.record({ how: fc.constant('revoked'), array: fc.boolean() }),
  fc.record({ how: fc.constant('elements'), length: fc.constantFrom(1, 2, 5), thrown: thrownArb }),
  fc.record({ how: fc.constant('cycle'), array: fc.boolean(), pick: fc.nat() }),
  fc.record({ how: fc.constant('deep'), array: fc.boolean(), depth: fc.oneof(fc.integer({ min: 129, max: 2_000 }), fc.constant(10_000)) }),
  fc.record({ how: fc.constant('number'), value: fc.constantFrom(...UNSAFE_NUMBERS.keys()) }),
  fc.record({
    how: fc.constant('surrogate'),
    text: fc
      .tuple(fc.string({ maxLength: 6 }), fc.integer({ min: 0xd800, max: 0xdfff }), fc.string({ maxLength: 6 }))
      .map(([a, unit, b]) => a + String.fromCharCode(unit) + b)
      .filter((s) => !s.isWellFormed()),
  }),
  fc.record({ how: fc.constant('protoKey'), inner: fc.constantFrom('{}', '1', '"x"', '[1]', '{"fence":1}', 'null') }),
  fc.record({ how: fc.constant('sparse') }),
);

/** The own keys of `base` (a valid value a call site hands in), or a fixed
 * list of field names the package reads, for a getter to sit on. */
const FIELDS = [
  'kind', 'at', 'payload', 'metadata', 'executionId', 'wakeAt', 'redrive', 'holder', 'now', 'durationMs', 'row', 'number',
  'expiresAt', 'fence', 'parkSeq', 'head', 'parents', 'endedBefore', 'fenceIfParkedAt', 'answer', 'sequence', 'events', 'timers',
];
const keysOf = (base) => (base !== null && typeof base === 'object' && Object.keys(base).length > 0 ? Object.keys(base) : FIELDS);

/** A copy of `base` (a plain object or array), or `{}`. */
function copyOf(base, array) {
  if (Array.isArray(base)) return [...base];
  if (base !== null && typeof base === 'object') return { ...base };
  return array ? [] : {};
}

/**
 * The hostile value a description stands for. `base`, when given, is the
 * valid value the call site would hand in: a getter, a trap or a cycle is
 * put on it, so the hostile part is reached past the checks of shape.
 * Also builds rejects.test.js's older descriptions (`how: 'nested'`).
 */
export function build(description, base) {
  const d = description;
  switch (d.how) {
    case 'wrong':
      return WRONG[d.which]();
    case 'getter': {
      const target = copyOf(base, false);
      const key = d.key ?? keysOf(base)[d.pick % keysOf(base).length];
      const thrown = wrapThrown(d.thrown);
      return Object.defineProperty(target, key, {
        enumerable: true,
        configurable: true,
        get() {
          throw thrown;
        },
      });
    }
    case 'trap':
      return trapping(wrapThrown(d.thrown), d.array ? copyOf(base, true) : copyOf(base, false));
    case 'revoked':
      return revoked(d.array ? [] : {});
    case 'elements':
      return throwingElements(makeThrown(d.thrown), d.length);
    case 'cycle': {
      const target = copyOf(base, d.array);
      if (Array.isArray(target)) target.push(target);
      else target[keysOf(base)[d.pick % keysOf(base).length]] = target;
      return target;
    }
    case 'deep':
      return nested(d.depth, d.array);
    case 'nested':
      return nested(d.depth);
    case 'number':
      return UNSAFE_NUMBERS[d.value];
    case 'surrogate':
      return d.text;
    case 'protoKey':
      return JSON.parse(`{"__proto__": ${d.inner}}`);
    case 'sparse':
      return new Array(2 ** 32 - 1);
    default:
      throw new Error(`hostile.js: no such description ${JSON.stringify(d)}`);
  }
}

/** A description's thrown value: a generated one is made (and recorded);
 * a value given as is (rejects.test.js's) is used as is. */
function wrapThrown(t) {
  return t !== null && typeof t === 'object' && ('error' in t || 'sentinel' in t || 'array' in t || 'anything' in t) ? makeThrown(t) : t;
}
