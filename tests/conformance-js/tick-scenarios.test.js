// The shared tick scenarios (tests/scenarios/tick/*.json, see the README
// there) against the npm package's TimerService over the package's memory
// stores. The Rust TimerService runs the same files
// (host-adapters/runtime/tests/tick_scenarios.rs); both must produce the
// reports and the store state each scenario expects after each tick.
//
// The runner only builds the world a scenario describes (executions, rows,
// store faults, scripted re-drivers, the clock) and compares: every rule
// under test is the service's.

import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { test } from 'node:test';
import { MemoryEventStore } from 'loomfence';
import { MemoryTimerStore, TimerService } from 'loomfence/services';

import { wrap, wrapTimers } from './support.js';

const DIR = new URL('../scenarios/tick/', import.meta.url);

/** The report fields a scenario states; a field it leaves out is expected to be 0. */
const REPORT_FIELDS = ['claimed', 'fired', 'obsolete', 'notYet', 'backedOff', 'redriven', 'nothingToRedrive', 'rescheduled', 'left', 'exhausted', 'notHeld', 'lapsed', 'released', 'errors', 'unreadable'];

const pick = (report) => Object.fromEntries(REPORT_FIELDS.map((name) => [name, report[name] ?? 0]));

/** Takes one of `remaining[id]`, if any is left. */
function take(remaining, id) {
  const left = remaining.get(id) ?? 0;
  if (left > 0) remaining.set(id, left - 1);
  return left > 0;
}

/** The world a scenario describes, with its faults in front of the stores. */
async function world(scenario) {
  const memory = new MemoryEventStore();
  const table = new MemoryTimerStore();
  const faults = { contended: new Map(), failRead: new Map(), rescheduledBeforeComplete: new Map() };
  for (const fault of scenario.faults ?? []) {
    assert.ok(fault.kind in faults, `a fault the scenarios do not know: ${fault.kind}`);
    faults[fault.kind].set(fault.executionId, fault.times ?? Infinity);
  }
  const events = wrap(memory, {
    async readRange(id, ...rest) {
      if (take(faults.failRead, id)) throw new Error('scenario: the read fails');
      return memory.readRange(id, ...rest);
    },
    async acquireFenceIf(id, expectation) {
      if (take(faults.contended, id)) await memory.acquireFence(id);
      return memory.acquireFenceIf(id, expectation);
    },
  });
  const timers = wrapTimers(table, {
    async complete(claim) {
      if (take(faults.rescheduledBeforeComplete, claim.row.executionId)) await table.schedule(claim.row);
      return table.complete(claim);
    },
  });
  for (const execution of scenario.executions ?? []) {
    const written = [{ kind: 'EXECUTION_STARTED', at: 1 }];
    if (execution.waits) written.push({ kind: 'EXECUTION_SUSPENDED', at: 1, payload: { waits: execution.waits } });
    await memory.appendMany(execution.id, written);
  }
  for (const row of scenario.rows ?? []) await table.schedule(row);
  return { memory, table, events, timers };
}

/** A re-driver answering from a script, the last answer again once it is spent. */
function scripted(answers) {
  let calls = 0;
  return async () => {
    const answer = answers[Math.min(calls++, answers.length - 1)];
    if (answer === 'failed') throw new Error('scenario: the re-driver fails');
    return answer;
  };
}

const files = readdirSync(DIR).filter((name) => name.endsWith('.json')).sort();

test('the scenario folder holds the shared tick scenarios', () => {
  assert.ok(files.length >= 8, `found ${files.length} scenarios`);
});

for (const file of files) {
  const scenario = JSON.parse(readFileSync(new URL(file, DIR), 'utf8'));
  test(`${file}: ${scenario.name}`, async () => {
    const { memory, table, events, timers } = await world(scenario);
    const options = scenario.options ?? {};
    // The clock of a tick: its first reading is the tick's `at`, every later one its `laterAt`.
    let clock = { at: 0, later: 0, first: true };
    const now = () => {
      const reading = clock.first ? clock.at : clock.later;
      clock.first = false;
      return reading;
    };
    const draw = options.draw ?? 0.5;
    const service = new TimerService({
      events,
      timers,
      node: 'scenario-node',
      leaseMs: options.leaseMs ?? 30_000,
      batch: options.batch ?? 100,
      policy: options.policy ?? {},
      now,
      random: () => draw,
      onError: () => {},
    });
    for (const answers of options.redrivers ?? []) service.registerRedriver(scripted(answers));

    for (const [n, tick] of scenario.ticks.entries()) {
      clock = { at: tick.at, later: tick.laterAt ?? tick.at, first: true };
      const report = await service.pollOnce();
      const what = `${scenario.name}, tick ${n + 1} (at ${tick.at})`;
      assert.deepEqual(pick(report), pick(tick.expect.report), `${what}: the report`);
      assert.deepEqual(await table.due(Number.MAX_SAFE_INTEGER, 10_000), tick.expect.rows, `${what}: the timer rows`);
      for (const [id, count] of Object.entries(tick.expect.resumes ?? {})) {
        const resumes = (await memory.readRange(id)).filter((e) => e.kind === 'EXECUTION_RESUMED');
        assert.equal(resumes.length, count, `${what}: resumes of ${id}`);
      }
    }
  });
}
