// The conformance kit against the package's own MemoryEventStore (the Rust
// core's in-memory store, compiled to WebAssembly). It has the conditional
// acquire, the park-conditional append and the change feed.

import { MemoryEventStore } from 'loomfence';

import { conformance } from './kit.js';
import { wrap } from './support.js';

conformance(
  'memory',
  () => new MemoryEventStore(),
  { fencing: true, conditional: true, appendIfParked: true, feed: true },
);

// The same store behind a forwarding view: `resume` then drives it through
// its JavaScript methods, one awaited call per step, instead of running the
// whole resume inside WebAssembly. Both ways must pass the same kit.
conformance(
  'memory, driven through its methods',
  () => wrap(new MemoryEventStore()),
  { fencing: true, conditional: true, appendIfParked: true, feed: true },
);
