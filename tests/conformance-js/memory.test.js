// The conformance kit against the package's own MemoryEventStore (the Rust
// core's in-memory store, compiled to WebAssembly). It has the conditional
// acquire and the park-conditional append.

import { MemoryEventStore } from 'loomfence';

import { conformance } from './kit.js';

conformance(
  'memory',
  () => new MemoryEventStore(),
  { fencing: true, conditional: true, appendIfParked: true },
);
