// The JavaScript kit keeps step with the Rust one: every case in the Rust
// kit's table (tests/conformance/src/cases/mod.rs) has a port here under the
// same name, so a case added there fails this test until it is ported.
//
// Only Rust ⊆ JavaScript is required. The JavaScript kit has cases of its
// own: the runtime's resume scenarios (`resume::…`, driven through the
// package's `resume`), and checks of the JavaScript edge that the Rust kit no
// longer needs (its stores take an already validated `&ExecutionId`, while a
// JavaScript store is handed any value, so the bad-id cases stay here).

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { CASE_NAMES } from './kit.js';

test('every case of the Rust kit is ported under the same name', () => {
  const table = readFileSync(new URL('../conformance/src/cases/mod.rs', import.meta.url), 'utf8');
  const rust = [...table.matchAll(/case!\(\s*\w+\s*,\s*([\w:]+)\s*,?\s*\)/g)].map((m) => m[1]);
  assert.ok(rust.length >= 40, `read ${rust.length} cases from mod.rs; has its table changed shape?`);
  assert.deepEqual(rust.filter((name) => !CASE_NAMES.includes(name)), [], 'Rust cases with no JavaScript port');
  assert.equal(new Set(CASE_NAMES).size, CASE_NAMES.length, 'every JavaScript case has its own name');
});
