// The shared inbox scenarios (tests/scenarios/inbox/*.json, format in
// tests/scenarios/README.md) against the npm package's Inbox and a TimerService with its
// re-driver, over the package's memory stores. The Rust Inbox runs the same
// files (host-adapters/runtime/tests/inbox_scenarios.rs); both must give
// each step's expected answer and end in the same stores.
//
// The runner only builds the world a scenario describes and compares: every
// rule under test is the delivery machine's.

import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { test } from 'node:test';
import { MemoryEventStore, StaleFenceError } from 'loomfence';
import { Inbox, MemoryTimerStore, TimerService } from 'loomfence/services';

import { wrap } from './support.js';

const DIR = new URL('../scenarios/inbox/', import.meta.url);
const files = readdirSync(DIR).filter((name) => name.endsWith('.json')).sort();

test('the scenario folder holds the shared inbox scenarios', () => {
  assert.ok(files.length >= 7, `found ${files.length} scenarios`);
});

/** The world a scenario describes: dead acquirers in front of every conditional acquire while `contend` is on. */
async function world(scenario) {
  const options = scenario.options ?? {};
  const memory = new MemoryEventStore();
  const timers = new MemoryTimerStore();
  const state = { clock: 0, contend: false, resumed: [] };
  const dead = options.deadAcquirers ?? 0;
  const events = wrap(memory, {
    async acquireFenceIf(id, expectation) {
      if (state.contend) for (let n = 0; n < dead; n++) await memory.acquireFence(id);
      return memory.acquireFenceIf(id, expectation);
    },
  });
  for (const execution of scenario.executions ?? []) {
    const written = [{ kind: 'EXECUTION_STARTED', at: 1 }];
    if (execution.waits) written.push({ kind: 'EXECUTION_SUSPENDED', at: 1, payload: { waits: execution.waits } });
    if (execution.ended) written.push({ kind: 'EXECUTION_COMPLETED', at: 1 });
    await memory.appendMany(execution.id, written);
    for (let n = 0; n < (execution.fenced ?? 0); n++) await memory.acquireFence(execution.id);
  }
  const now = () => state.clock;
  const intentDelayMs = options.intentDelayMs ?? 1_000;
  const inbox = new Inbox(events, timers, {
    now,
    intentDelayMs,
    redrive: options.redrive ?? false,
    random: () => 0.5,
    onResumed: (resumed) => state.resumed.push(resumed.executionId),
  });
  const service = new TimerService({ events, timers, node: 'n', now, random: () => 0.5, onError: () => {} });
  service.registerRedriver(inbox.redriver());
  return { memory, timers, inbox, service, state, intentDelayMs };
}

/** Performs one step; its answer as the scenarios state answers. */
async function step(w, s) {
  w.state.clock = s.at;
  if (s.notify) {
    const answer = await w.inbox.notify(s.notify);
    if (answer.result === 'refused') return { result: 'refused', reason: answer.reason };
    if (answer.result === 'delivered') return { result: 'delivered', message: answer.message.messageId, duplicate: answer.duplicate };
    return { result: 'stored', duplicate: answer.duplicate };
  }
  if (s.park) {
    const { executionId, waits, fence } = s.park;
    try {
      const parked = await w.inbox.park(executionId, waits, fence === undefined ? {} : { fence });
      return { delivered: parked.delivered?.message.messageId ?? null };
    } catch (error) {
      if (error instanceof StaleFenceError) return { error: 'stale' };
      throw error;
    }
  }
  if (s.send) {
    const { sentAt, ...message } = s.send;
    await w.timers.send({ ...message, sentAt }, { executionId: message.executionId, wakeAt: sentAt + w.intentDelayMs, redrive: { attempt: 0 } });
    return undefined;
  }
  if (s.schedule) {
    await w.timers.schedule(s.schedule);
    return undefined;
  }
  if (s.poll) return w.service.pollOnce();
  if ('contend' in s) {
    w.state.contend = s.contend;
    return undefined;
  }
  throw new Error(`a step the scenarios do not know: ${JSON.stringify(s)}`);
}

for (const file of files) {
  const scenario = JSON.parse(readFileSync(new URL(file, DIR), 'utf8'));
  test(`${file}: ${scenario.name}`, async () => {
    const w = await world(scenario);
    for (const [n, s] of scenario.steps.entries()) {
      const answer = await step(w, s);
      for (const [name, value] of Object.entries(s.expect ?? {})) {
        assert.deepEqual(answer?.[name], value, `${scenario.name}, step ${n}: ${name} (got ${JSON.stringify(answer)})`);
      }
    }
    const end = scenario.end;
    for (const id of Object.keys(end.logs)) {
      assert.deepEqual((await w.memory.readRange(id, 1)).map((e) => e.kind), end.logs[id], `${scenario.name}: the log of ${id}`);
      const messages = (await w.timers.messages(id)).map((entry) => [entry.messageId, entry.consumed]);
      assert.deepEqual(messages, end.messages[id], `${scenario.name}: the messages of ${id}`);
    }
    assert.deepEqual(await w.timers.due(Number.MAX_SAFE_INTEGER, 1_000), end.rows, `${scenario.name}: the timer rows`);
    if (end.onResumed) assert.deepEqual(w.state.resumed, end.onResumed, `${scenario.name}: onResumed`);
  });
}
