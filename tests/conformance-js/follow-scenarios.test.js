// The shared follower scenarios (tests/scenarios/follow/*.json, see the README
// there) against the npm package's Follower and a ChildSupervisor over the
// package's memory store. The Rust Follower runs the same files
// (host-adapters/runtime/tests/follow_scenarios.rs); both must watch as many
// parents in the rebuild and resume exactly what each step expects.
//
// The runner only builds the world a scenario describes (executions, store
// faults, a store that refuses every listing) and compares: every rule under
// test is the follow and supervise machines'.

import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { MemoryEventStore } from 'loomfence';
import { ChildSupervisor, Follower, startedChild } from 'loomfence/services';

import { show, wrap } from './support.js';

const DIR = new URL('../scenarios/follow/', import.meta.url);

/** The follower's own poll: short, so a scenario's lost wake costs little. */
const POLL_MS = 20;

/** The step verbs, each one write. */
const VERBS = ['start', 'park', 'end'];

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Takes one of `remaining[id]`, if any is left. */
function take(remaining, id) {
  const left = remaining.get(id) ?? 0;
  if (left > 0) remaining.set(id, left - 1);
  return left > 0;
}

/** The memory store behind a view that refuses (and counts) every listing and
 * fails the reads the scenario's faults name, as a dropped connection does. */
function world(scenario) {
  const memory = new MemoryEventStore();
  const failRead = new Map();
  for (const fault of scenario.faults ?? []) {
    assert.equal(fault.kind, 'failRead', `${scenario.name}: a known fault`);
    failRead.set(fault.executionId, fault.times);
  }
  const counts = { listings: 0 };
  const events = wrap(memory, {
    async listExecutions() {
      counts.listings++;
      throw new Error('scenario: a follower listed the store');
    },
    async readRange(id, ...rest) {
      if (take(failRead, id)) throw Object.assign(new Error('scenario: connection dropped'), { retryable: true });
      return memory.readRange(id, ...rest);
    },
  });
  return { memory, events, failRead, counts };
}

/** Writes what a `start`, `park` or `end` (or an initial execution) says, past the faults. */
async function write(memory, item) {
  const { id } = item;
  if ((await memory.readRange(id, 1)).length === 0) {
    await memory.append(id, item.parent === undefined ? { kind: 'EXECUTION_STARTED', at: 1 } : startedChild(item.parent, 1));
  }
  if (item.waits !== undefined) await memory.append(id, { kind: 'EXECUTION_SUSPENDED', at: 2, payload: { waits: item.waits } });
  if (item.resumed === true) await memory.append(id, { kind: 'EXECUTION_RESUMED', at: 3 });
  const end = item.ended === undefined ? item.kind : `EXECUTION_${item.ended}`;
  if (end !== undefined) await memory.append(id, { kind: end, at: 4 });
}

/** `EXECUTION_RESUMED` events per execution that has any, read past the faults. */
async function resumes(memory, ids) {
  const counts = {};
  for (const id of ids) {
    const count = (await memory.readRange(id)).filter((e) => e.kind === 'EXECUTION_RESUMED').length;
    if (count > 0) counts[id] = count;
  }
  return counts;
}

/** A scenario's expected resumes, an execution with 0 left out. */
const expected = (want) => Object.fromEntries(Object.entries(want).filter(([, count]) => count !== 0));

/** Every id a scenario names, in order. */
function idsOf(scenario) {
  const items = [...(scenario.executions ?? []), ...(scenario.steps ?? []).map((step) => VERBS.map((verb) => step[verb]).find(Boolean))];
  return [...new Set(items.filter(Boolean).map((item) => item.id))];
}

/** Waits (bounded) until the resumes are `want`, then a few polls more, and
 * checks they still are: a resume too many is caught too. */
async function settle(memory, ids, want, at, errors) {
  for (let n = 0; n < 500; n++) {
    if (isDeepStrictEqual(await resumes(memory, ids), want)) break;
    await sleep(10);
  }
  await sleep(POLL_MS * 4);
  assert.deepEqual(await resumes(memory, ids), want, `${at} (${errors.length} failures reported: ${show([...new Set(errors.map((e) => String(e.error)))])})`);
}

const files = readdirSync(DIR).filter((name) => name.endsWith('.json')).sort();

test('the scenario folder holds the shared follower scenarios', () => {
  assert.ok(files.length >= 4, `found ${files.length} scenarios`);
});

for (const file of files) {
  const scenario = JSON.parse(readFileSync(new URL(file, DIR), 'utf8'));
  test(`${file}: ${scenario.name}`, async () => {
    const { name } = scenario;
    const { memory, events, failRead, counts } = world(scenario);
    for (const item of scenario.executions ?? []) await write(memory, item);
    const ids = idsOf(scenario);
    const errors = [];
    const supervisor = new ChildSupervisor({ events, onError: (error, parent) => errors.push({ error, parent }) });
    const follower = new Follower({ events, supervisor, pollIntervalMs: POLL_MS, onError: (error, info) => errors.push({ error, info }) });
    follower.start();
    try {
      const until = Date.now() + 10_000;
      while (follower.rebuild === null) {
        if (Date.now() > until) assert.fail(`${name}: not caught up within 10 s`);
        await sleep(5);
      }
      assert.equal(follower.rebuild.watched, scenario.rebuild.watched, `${name}: parents watched by the rebuild`);
      await settle(memory, ids, expected(scenario.rebuild.resumes), `${name}: rebuild`, errors);
      for (const [index, step] of scenario.steps.entries()) {
        const item = VERBS.map((verb) => step[verb]).find(Boolean);
        assert.ok(item, `${name}: step ${index} is start, park or end`);
        await write(memory, item);
        await settle(memory, ids, expected(step.expect.resumes), `${name}: step ${index}`, errors);
      }
    } finally {
      await follower.stop();
    }
    assert.equal(follower.running, false, `${name}: stopped`);
    assert.equal(counts.listings, 0, `${name}: a follower never lists the store`);
    const left = [...failRead.values()].reduce((sum, n) => sum + n, 0);
    assert.equal(left, 0, `${name}: every planned failure happened`);
  });
}
