// The wait behind `MemoryEventStore.waitForFeed`: one promise shared by
// every waiter until the next append resolves it. Made here because a
// promise whose resolve function WebAssembly holds would need a closure
// crossing the boundary, which costs the .wasm more than these few lines.

/** A fresh wait: the promise and the function that ends it. */
export function feedWaiter() {
  let wake;
  const promise = new Promise((resolve) => {
    wake = resolve;
  });
  return { promise, wake };
}

/** The promise a waiter hands out. */
export function feedWaiting(waiter) {
  return waiter.promise;
}

/** Ends the wait: every promise handed out resolves. */
export function feedWake(waiter) {
  waiter.wake();
}
