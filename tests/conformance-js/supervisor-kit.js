// The kit's child supervisor cases (`supervisor::…`, the Rust kit's from
// tests/conformance/src/cases/supervisor.rs, and the runtime's supervisor
// scenarios of host-adapters/runtime/tests/supervisor*.rs): the package's
// ChildSupervisor (a pump over the core's SuperviseMachine, the machine the
// Rust runtime's ChildSupervisor pumps) over the store, with
// MemoryTimerStore. Registered by kit.js for every store, each case with
// what it needs (`resumable`, `fencedAppendIfParked`,
// `conditionalResumable`: the kit's `needs`).

import assert from 'node:assert/strict';
import {
  ResumeContendedError,
  resume,
} from 'loomfence';
import {
  ChildSupervisor,
  MemoryTimerStore,
  RedrivePolicy,
  TimerInputError,
  TimerService,
} from 'loomfence/services';

import { AT, event, resumesOf, wrap } from './support.js';

const NOW = AT + 1_000;
const child = (key) => ({ kind: 'CHILD_DONE', key });
const group = (...keys) => ({ kind: 'CHILD_DONE', group: keys });

/** Starts `id` and parks it on `waits`; resolves to the park's sequence. */
async function parkOn(store, id, waits) {
  const written = await store.appendMany(id, [event('EXECUTION_STARTED'), event('EXECUTION_SUSPENDED', { payload: { waits } })]);
  return written[1].sequence;
}

/** Runs `id` to `kind` with `output`. */
async function end(store, id, kind = 'EXECUTION_COMPLETED', output = null) {
  await store.appendMany(id, [event('EXECUTION_STARTED'), event(kind, { payload: { output } })]);
}

/** A view of `store` where a rival takes the token before every conditional acquire, while `rival.on`. */
function hostile(store) {
  const rival = { on: true, bumps: 0 };
  const view = wrap(store, {
    async acquireFenceIf(id, expectation) {
      if (rival.on) {
        rival.bumps++;
        await store.acquireFence(id);
      }
      return store.acquireFenceIf(id, expectation);
    },
  });
  return { view, rival };
}

/** A supervisor over `events` with a fixed clock and draw, its errors collected. */
function supervisor(events, options = {}) {
  const errors = [];
  const resumed = [];
  const made = new ChildSupervisor({
    events,
    now: () => NOW,
    random: () => 0.5,
    onError: (error, parent) => errors.push({ error, parent }),
    onResumed: (r) => resumed.push(r),
    ...options,
  });
  return Object.assign(made, { errors, resumed });
}

/** Every case: [name, what it needs, run(store)]. */
export const SUPERVISOR_CASES = [];
function kase(name, need, run) {
  SUPERVISOR_CASES.push([name, need, run]);
}

kase('supervisor::a_parent_is_resumed_unfenced_once_its_group_has_ended', 'resumable', async (store) => {
  await parkOn(store, 'parent', [group('a', 'b'), child('z')]);
  const sup = supervisor(store);
  assert.deepEqual(await sup.watch('parent'), { outcome: 'waiting', answer: 'noop' });
  assert.deepEqual(sup.parentsWaitingOn('a'), ['parent']);
  await end(store, 'a', 'EXECUTION_COMPLETED', { total: 7 });
  assert.deepEqual(await sup.childEnded('a'), [{ parent: 'parent', supervised: { outcome: 'waiting', answer: 'noop' } }]);
  await end(store, 'b', 'EXECUTION_FAILED', 'boom');
  const [{ parent, supervised }] = await sup.childEnded('b');
  assert.equal(parent, 'parent');
  assert.equal(supervised.outcome, 'resumed');
  assert.equal(supervised.answer, 'done');
  assert.equal(supervised.resumed.fence, null, 'the first try takes no token');
  assert.equal(supervised.resumed.resumed.at, NOW);
  assert.deepEqual(supervised.resumed.resumed.payload.answer, {
    wait: 0,
    children: {
      a: { status: 'completed', output: { output: { total: 7 } } },
      b: { status: 'failed', output: { output: 'boom' } },
    },
  });
  assert.equal((await resumesOf(store, 'parent')).length, 1);
  assert.deepEqual(sup.parentsWaitingOn('a'), [], 'no longer listed');
  assert.deepEqual(sup.errors, []);
  assert.deepEqual(sup.resumed, [], "a watcher's resume is the caller's, not onResumed's");
});

kase('supervisor::an_already_answered_park_is_a_noop', 'resumable', async (store) => {
  const park = await parkOn(store, 'parent', [child('c')]);
  await end(store, 'c');
  // A rival answers the park between the supervisor's read and its append.
  let raced = false;
  const racing = wrap(store, {
    async appendIfParked(...args) {
      if (!raced) {
        raced = true;
        await resume(store, 'parent', { fenceIfParkedAt: park, answer: 'manual', at: AT });
      }
      return store.appendIfParked(...args);
    },
  });
  const sup = supervisor(racing);
  assert.deepEqual(await sup.watch('parent'), { outcome: 'alreadyAnswered', answer: 'noop' });
  assert.equal((await resumesOf(store, 'parent')).length, 1, "the rival's resume only");
  assert.deepEqual(await sup.watch('parent'), { outcome: 'notWaitingOnChildren', answer: 'noop' });
  assert.equal(await sup.redriver()('parent'), 'noop');
  assert.deepEqual(sup.parentsWaitingOn('c'), []);
  assert.deepEqual(sup.errors, []);
});

kase('supervisor::a_fenced_parent_is_resumed_conditionally_past_a_dead_acquirer', 'fencedAppendIfParked', async (store) => {
  await parkOn(store, 'parent', [child('c')]);
  await store.acquireFence('parent');
  await end(store, 'c');
  const supervised = await supervisor(store).watch('parent');
  assert.equal(supervised.outcome, 'resumed');
  assert.equal(supervised.resumed.fence, 2);
  assert.equal((await resumesOf(store, 'parent')).length, 1);
});

kase('supervisor::every_try_contended_is_a_value_and_writes_no_row_without_redrive', 'conditionalResumable', async (store) => {
  await parkOn(store, 'parent', [child('c')]);
  await store.acquireFence('parent');
  await end(store, 'c');
  const { view, rival } = hostile(store);
  const sup = supervisor(view, { conditionalTries: 2 });
  const supervised = await sup.watch('parent');
  assert.equal(supervised.outcome, 'contended');
  assert.equal(supervised.answer, 'contended');
  assert.ok(supervised.error instanceof ResumeContendedError);
  assert.equal(rival.bumps, 6, 'two conditional resumes of three acquires each');
  assert.equal(sup.errors.length, 1, 'reported once');
  assert.deepEqual(sup.parentsWaitingOn('c'), ['parent'], 'still listed');
  assert.equal((await resumesOf(store, 'parent')).length, 0);
});

kase('supervisor::contention_writes_the_first_redrive_row', 'conditionalResumable', async (store) => {
  await parkOn(store, 'parent', [child('c')]);
  await store.acquireFence('parent');
  await end(store, 'c');
  const timers = new MemoryTimerStore();
  const { view } = hostile(store);
  const sup = supervisor(view, { timers, redrive: true });
  const supervised = await sup.watch('parent');
  const delay = new RedrivePolicy().delayMs(0, 0.5);
  const row = { executionId: 'parent', wakeAt: NOW + Math.max(delay, 1), redrive: { attempt: 0 } };
  assert.deepEqual(supervised, { outcome: 'redriveScheduled', answer: 'noop', row });
  assert.deepEqual(await timers.due(Number.MAX_SAFE_INTEGER, 10), [row]);
  assert.deepEqual(sup.errors, [], 'the contention is handled');
  assert.deepEqual(sup.parentsWaitingOn('c'), ['parent']);
});

kase('supervisor::its_redriver_on_a_timer_service_resumes_the_parent', 'conditionalResumable', async (store) => {
  await parkOn(store, 'parent', [child('c')]);
  await store.acquireFence('parent');
  await end(store, 'c');
  const timers = new MemoryTimerStore();
  const { view, rival } = hostile(store);
  const sup = supervisor(view, { timers, redrive: true });
  const { row } = await sup.watch('parent');
  rival.on = false;
  let now = row.wakeAt;
  const service = new TimerService({ events: view, timers, now: () => now, random: () => 0.5, onError: (e) => assert.fail(e) });
  service.registerRedriver(sup.redriver());
  const report = await service.pollOnce();
  assert.equal(report.redriven, 1, JSON.stringify(report.fires));
  assert.equal(sup.resumed.length, 1, "the re-driver's resume goes to onResumed");
  assert.equal(sup.resumed[0].fence, await store.currentFence('parent'), 'under the current token');
  assert.equal((await resumesOf(store, 'parent')).length, 1);
  assert.deepEqual(await timers.due(Number.MAX_SAFE_INTEGER, 10), [], 'the row is retired');
  now += 1;
  assert.equal(await sup.redriver()('parent'), 'noop', 'nothing left to re-drive');
});

kase('supervisor::a_resume_the_store_failed_keeps_the_parent_listed', 'resumable', async (store) => {
  // A resume the store failed leaves the park open: the parent stays listed
  // under its child, so the next notice tries it again.
  await parkOn(store, 'parent', [child('c')]);
  await end(store, 'c');
  const diskFull = Object.assign(new Error('disk full'), { retryable: false });
  const failing = wrap(store, {
    async appendIfParked() {
      throw diskFull;
    },
  });
  const sup = supervisor(failing);
  await assert.rejects(sup.watch('parent'), (error) => error === diskFull);
  assert.deepEqual(sup.parentsWaitingOn('c'), ['parent'], 'still listed');
  const [again] = await sup.childEnded('c');
  assert.equal(again.error, diskFull, 'the notice tried it again');
  assert.equal(sup.errors.length, 2, 'each failure reported once');
});

kase('supervisor::options_are_checked_up_front', 'resumable', async (store) => {
  for (const options of [{ events: store, redrive: true }, { events: store, colour: 1 }, { events: store, conditionalTries: -1 }, {}]) {
    assert.throws(() => new ChildSupervisor(options), (e) => e instanceof TimerInputError && /INVALID_(OPTIONS|POLICY)/.test(e.code));
  }
});
