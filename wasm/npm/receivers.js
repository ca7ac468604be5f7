// Receivers: a method of one of the package's classes called on an object
// that is not one of its instances is a TypeError `WRONG_RECEIVER`, before
// anything crosses into WebAssembly: thrown, or rejected with from a method
// that returns a promise.
//
// The generated glue reads `this.__wbg_ptr` and hands it to Rust as a
// pointer to its own type, without checking the class: before this,
// `MemoryEventStore.prototype.append.call(aTimerStore, …)` wrote an event
// into the timer store's memory. Each class's prototype gets `__wbg_ptr` as
// an accessor over a WeakMap of that class's own: the glue's constructor
// and `__wrap` store the pointer through it, so only the objects the glue
// made as instances of the class are in it (swapping a prototype afterwards
// does not add one). Every method and getter of the prototype checks that
// its receiver is in it. Someone who assigns `__wbg_ptr` by hand is
// handling the glue's internals and is not guarded against.

/** The glue's classes whose every public method but `free` returns a
 * promise: a foreign receiver rejects there, as every promise-returning call
 * does. */
const PROMISING = new Set(['MemoryEventStore', 'MemoryTimerStore']);

/** Guards every class the glue module `wasm` exports. */
export function guardReceivers(wasm) {
  for (const value of Object.values(wasm)) {
    if (typeof value === 'function' && typeof value.prototype?.__destroy_into_raw === 'function') guardGlue(value);
  }
}

/**
 * Guards a JavaScript class of the package (TimerService, ChildSupervisor):
 * `owns(receiver)` says whether it is an instance (a `#field in receiver`
 * check, from the class body); the methods named in `promising` reject.
 * Without it, a foreign receiver threw V8's codeless "Cannot read private
 * member" TypeError, synchronously even from a promise-returning method.
 */
export function guardClass(Class, owns, promising) {
  guard(Class, owns, (key) => promising.has(key));
}

function guardGlue(Class) {
  const pointers = new WeakMap();
  guard(Class, (receiver) => pointers.has(receiver), (key) => PROMISING.has(Class.name) && key !== 'free' && !String(key).startsWith('__'));
  Object.defineProperty(Class.prototype, '__wbg_ptr', {
    get() {
      // 0 (the glue's null pointer, refused by Rust) for any other object.
      return pointers.get(this) ?? 0;
    },
    set(pointer) {
      pointers.set(this, pointer);
    },
  });
}

/** Wraps every method and accessor of `Class.prototype` in the check. */
function guard(Class, owns, isPromising) {
  const proto = Class.prototype;
  const refusal = (key) => {
    const error = new TypeError(`${Class.name}.prototype.${String(key)} called on an object that is not a ${Class.name}`);
    error.code = 'WRONG_RECEIVER';
    return error;
  };
  for (const key of Reflect.ownKeys(proto)) {
    if (key === 'constructor') continue;
    const descriptor = Object.getOwnPropertyDescriptor(proto, key);
    if (typeof descriptor.value === 'function') {
      const method = descriptor.value;
      const promising = isPromising(key);
      descriptor.value = {
        [key](...args) {
          if (!owns(this)) {
            if (promising) return Promise.reject(refusal(key));
            throw refusal(key);
          }
          return method.apply(this, args);
        },
      }[key];
    }
    for (const part of ['get', 'set']) {
      const accessor = descriptor[part];
      if (accessor) {
        descriptor[part] = function (...args) {
          if (!owns(this)) throw refusal(key);
          return accessor.apply(this, args);
        };
      }
    }
    Object.defineProperty(proto, key, descriptor);
  }
}
