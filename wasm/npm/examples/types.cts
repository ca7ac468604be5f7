// Type check of the package's types from CommonJS (`require`), compiled
// with `tsc --noEmit --strict` against the installed tarball; never run.
import loomfence = require('loomfence');

async function main(): Promise<void> {
  const store = new loomfence.MemoryEventStore();
  const token: number = await store.acquireFence('x');
  const error = new loomfence.StaleFenceError('stale', { executionId: 'x', presented: 1, current: token });
  const isError: Error = error;
  void isError;
}

void main;
