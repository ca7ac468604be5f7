// The unreadable-row kit (unreadable-kit.js) against the package's
// MemoryTimerStore, directly and behind a view that yields before every call.

import { MemoryTimerStore } from 'loomfence/services';

import { unreadableConformance } from './unreadable-kit.js';
import { yieldingTimers } from './support.js';

unreadableConformance('memory', () => new MemoryTimerStore());
unreadableConformance('memory, yielding', () => yieldingTimers(new MemoryTimerStore()));
