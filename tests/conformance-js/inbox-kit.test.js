// The inbox kit against the package's MemoryTimerStore (the core's
// InboxTable and TimerTable, compiled to WebAssembly), directly and behind a
// view that yields to the event loop before every call, and against the
// plain-JavaScript reference inbox of plain-store.js.

import { MemoryTimerStore } from 'loomfence';

import { inboxConformance } from './inbox-kit.js';
import { PlainInbox } from './plain-store.js';

/** A view of `inner` that yields one event-loop turn before every call, so concurrent senders interleave. */
function yieldingInbox(inner) {
  const overrides = {};
  for (const name of ['send', 'pending', 'markConsumed', 'purge', 'messages', 'due', 'schedule']) {
    overrides[name] = async (...args) => {
      await new Promise((resolve) => setImmediate(resolve));
      return inner[name](...args);
    };
  }
  return overrides;
}

inboxConformance('memory', () => new MemoryTimerStore());
inboxConformance('memory, yielding', () => yieldingInbox(new MemoryTimerStore()));
inboxConformance('plain JavaScript', () => new PlainInbox());
