// The timer kit against the package's MemoryTimerStore (the core's
// TimerTable, compiled to WebAssembly), directly and behind a view that
// yields to the event loop before every call, so concurrent claimers
// interleave at every store operation. And the kit keeps step with the Rust
// one: every case in the Rust timer kit's table
// (tests/conformance/src/timers/mod.rs) has a port here under the same name,
// so a case added there fails this test until it is ported (Rust ⊆
// JavaScript: the JavaScript kit keeps its own checks of the JavaScript edge).

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { MemoryTimerStore } from 'loomfence/services';

import { yieldingTimers } from './support.js';
import { TIMER_CASE_NAMES, timerConformance } from './timer-kit.js';

timerConformance('memory', () => new MemoryTimerStore());
timerConformance('memory, yielding', () => yieldingTimers(new MemoryTimerStore()));

test('every case of the Rust timer kit is ported under the same name', () => {
  const table = readFileSync(new URL('../conformance/src/timers/mod.rs', import.meta.url), 'utf8');
  const rust = [...table.matchAll(/case!\(\s*([\w:]+)\s*\)/g)].map((m) => m[1]);
  assert.ok(rust.length >= 28, `read ${rust.length} cases from timers/mod.rs; has its table changed shape?`);
  assert.deepEqual(rust.filter((name) => !TIMER_CASE_NAMES.includes(name)), [], 'Rust timer cases with no JavaScript port');
  assert.equal(new Set(TIMER_CASE_NAMES).size, TIMER_CASE_NAMES.length, 'every JavaScript case has its own name');
});
