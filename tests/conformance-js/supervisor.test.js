// The child supervisor kit (supervisor-kit.js) against the package's
// MemoryEventStore, the same store driven through its methods, and the
// plain-JavaScript store in its fencing capabilities.

import { MemoryEventStore } from 'loomfence';

import { PlainEventStore, withCapability } from './plain-store.js';
import { supervisorConformance } from './supervisor-kit.js';
import { wrap } from './support.js';

supervisorConformance('memory', () => new MemoryEventStore(), { fencing: true, conditional: true });
supervisorConformance('memory, through its methods', () => wrap(new MemoryEventStore()), { fencing: true, conditional: true });
supervisorConformance('plain', () => new PlainEventStore(), { fencing: true, conditional: true });
supervisorConformance('plain fencing-only', () => withCapability(new PlainEventStore(), 'fencing-only'), {
  fencing: true,
  conditional: false,
});
