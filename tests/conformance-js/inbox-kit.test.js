// The inbox kit against the package's MemoryTimerStore (the core's
// InboxTable and TimerTable, compiled to WebAssembly), directly and behind a
// view that yields to the event loop before every call, and against the
// plain-JavaScript reference inbox of plain-store.js. And the kit keeps step
// with the Rust one: every case in the Rust inbox kit's table
// (tests/conformance/src/inbox/mod.rs) has a port here under the same name,
// so a case added there fails this test until it is ported (Rust ⊆
// JavaScript: the JavaScript kit keeps its own checks of the JavaScript edge).

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { MemoryTimerStore } from 'loomfence/services';

import { INBOX_CASE_NAMES, inboxConformance } from './inbox-kit.js';
import { PlainInbox } from './plain-store.js';

/** A view of `inner` that yields one event-loop turn before every call, so concurrent senders interleave. */
function yieldingInbox(inner) {
  const overrides = {};
  for (const name of ['send', 'pending', 'markConsumed', 'purge', 'messages', 'due', 'schedule', 'claimDue', 'complete']) {
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

test('every case of the Rust inbox kit is ported under the same name', () => {
  const table = readFileSync(new URL('../conformance/src/inbox/mod.rs', import.meta.url), 'utf8');
  const rust = [...table.matchAll(/case!\(\s*([\w:]+)\s*\)/g)].map((m) => m[1]);
  assert.ok(rust.length >= 20, `read ${rust.length} cases from inbox/mod.rs; has its table changed shape?`);
  assert.deepEqual(rust.filter((name) => !INBOX_CASE_NAMES.includes(name)), [], 'Rust inbox cases with no JavaScript port');
  assert.equal(new Set(INBOX_CASE_NAMES).size, INBOX_CASE_NAMES.length, 'every JavaScript case has its own name');
});
