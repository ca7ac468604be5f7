// Receivers: a method of one WebAssembly-backed class called on an object
// that is not one of its instances is a TypeError `WRONG_RECEIVER`, thrown
// before anything crosses into WebAssembly.
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

/** Guards every class the glue module `wasm` exports. */
export function guardReceivers(wasm) {
  for (const value of Object.values(wasm)) {
    if (typeof value === 'function' && typeof value.prototype?.__destroy_into_raw === 'function') guard(value);
  }
}

function guard(Class) {
  const proto = Class.prototype;
  const pointers = new WeakMap();
  const check = (receiver, key) => {
    if (!pointers.has(receiver)) {
      const error = new TypeError(`${Class.name}.prototype.${String(key)} called on an object that is not a ${Class.name}`);
      error.code = 'WRONG_RECEIVER';
      throw error;
    }
  };
  for (const key of Reflect.ownKeys(proto)) {
    if (key === 'constructor') continue;
    const descriptor = Object.getOwnPropertyDescriptor(proto, key);
    if (typeof descriptor.value === 'function') {
      const method = descriptor.value;
      descriptor.value = {
        [key](...args) {
          check(this, key);
          return method.apply(this, args);
        },
      }[key];
    }
    for (const part of ['get', 'set']) {
      const accessor = descriptor[part];
      if (accessor) {
        descriptor[part] = function (...args) {
          check(this, key);
          return accessor.apply(this, args);
        };
      }
    }
    Object.defineProperty(proto, key, descriptor);
  }
  Object.defineProperty(proto, '__wbg_ptr', {
    get() {
      // 0 (the glue's null pointer, refused by Rust) for any other object.
      return pointers.get(this) ?? 0;
    },
    set(pointer) {
      pointers.set(this, pointer);
    },
  });
}
