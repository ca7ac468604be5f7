// The conformance kit against the plain-JavaScript store (plain-store.js), in
// each capability a host store can have: the full store (conditional acquire
// and appendIfParked), a fencing-only one (no acquireFenceIf), a non-fencing
// one (no tokens at all, appendIfParked only), and a non-fencing one with
// nothing but reads and appends, which `resume` refuses up front. Same kit,
// capability flags, no forked cases.

import { PlainEventStore, withCapability } from './plain-store.js';
import { conformance } from './kit.js';

conformance('plain', () => new PlainEventStore(), { fencing: true, conditional: true, appendIfParked: true, feed: true, batched: true });

conformance('plain fencing-only', () => withCapability(new PlainEventStore(), 'fencing-only'), {
  fencing: true,
  conditional: false,
  appendIfParked: true,
  feed: true,
});

conformance('plain non-fencing', () => withCapability(new PlainEventStore(), 'non-fencing'), {
  fencing: false,
  conditional: false,
  appendIfParked: true,
  feed: true,
});

conformance(
  'plain non-fencing, no appendIfParked',
  () => withCapability(new PlainEventStore(), 'non-fencing', { appendIfParked: false }),
  { fencing: false, conditional: false, appendIfParked: false, feed: true },
);
