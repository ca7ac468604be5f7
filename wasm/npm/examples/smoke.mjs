// Smoke test of the published package, ESM side. `cargo xtask test` runs it
// with `node` in a fresh folder where the `npm pack` tarball is installed, so
// 'loomfence' resolves the way it does for a user. Exits non-zero on failure.
import assert from 'node:assert/strict';
import {
  MemoryEventStore,
  resume,
  isAnsweringKind,
  locatePark,
  KERNEL_EVENT_KINDS,
  ResumeRefusedError,
  StaleFenceError,
} from 'loomfence';
import {
  MemoryTimerStore,
  FireMachine,
  TimerInputError,
  TimerService,
  ChildSupervisor,
  Follower,
  sweep,
  startedChild,
  parentOf,
  pinParkedChildren,
} from 'loomfence/services';

const store = new MemoryEventStore();
const [, park] = await store.appendMany('order-7', [
  { kind: 'EXECUTION_STARTED', at: 0 },
  { kind: 'EXECUTION_SUSPENDED', at: 1 },
]);
assert.equal(park.sequence, 2);
assert.equal(locatePark(await store.readRange('order-7')).sequence, park.sequence);

// The first resume answers the park and takes the token.
const first = await resume(store, 'order-7', { fenceIfParkedAt: park.sequence, answer: 'paid', at: 2 });
assert.equal(first.resumed.kind, 'EXECUTION_RESUMED');
assert.equal(first.fence, 1);
assert.equal(first.resumed.payload.answer, 'paid');
assert.equal(await store.currentFence('order-7'), 1);
assert.ok(isAnsweringKind(first.resumed));
assert.ok(KERNEL_EVENT_KINDS.includes('EXECUTION_RESUMED'));

// A second resume of the same park is refused: it is no longer open.
await assert.rejects(
  resume(store, 'order-7', { fenceIfParkedAt: park.sequence, answer: 'paid again', at: 3 }),
  (error) => {
    assert.ok(error instanceof ResumeRefusedError, `not a ResumeRefusedError: ${error}`);
    assert.ok(error instanceof Error);
    assert.equal(error.reason, 'not-suspended');
    return true;
  },
);

// A writer holding no token cannot answer on a fenced execution.
await assert.rejects(
  store.append('order-7', { kind: 'EXECUTION_COMPLETED', at: 4 }),
  (error) => error instanceof StaleFenceError && error.current === 1,
);

const log = await store.readRange('order-7');
assert.equal(locatePark(log), undefined);
assert.deepEqual(log.map((event) => event.kind), ['EXECUTION_STARTED', 'EXECUTION_SUSPENDED', 'EXECUTION_RESUMED']);
// A timer: scheduled, claimed, fired (its wait is gone, so obsolete), retired.
const timers = new MemoryTimerStore();
await timers.schedule({ executionId: 'order-7', wakeAt: 10 });
const [claim] = await timers.claimDue({ holder: 'smoke', now: 20, durationMs: 1_000 }, 10);
const fire = new FireMachine(claim.row, { now: 20, random: 0.5 });
assert.deepEqual(fire.poll(), { act: 'readLog' });
fire.handleRead(log);
assert.deepEqual(fire.poll(), { act: 'complete', row: { executionId: 'order-7', wakeAt: 10 } });
assert.equal(await timers.complete(claim), 'done');
fire.handleCompleted();
assert.deepEqual(fire.poll(), { done: { outcome: 'obsolete', retired: true } });
await assert.rejects(timers.schedule({ executionId: 'order-7', wakeAt: -1 }), TimerInputError);
// The timer service (timer-service.js, shipped beside the glue): one tick
// fires a due plain wake.
const [, sleeping] = await store.appendMany('nap-1', [
  { kind: 'EXECUTION_STARTED', at: 0 },
  { kind: 'EXECUTION_SUSPENDED', at: 1, payload: { waits: [{ kind: 'TIMER', wakeAt: 30 }] } },
]);
await timers.schedule({ executionId: 'nap-1', wakeAt: 30 });
const service = new TimerService({ events: store, timers, node: 'smoke', now: () => 40, random: () => 0.5 });
const report = await service.pollOnce();
assert.equal(report.fired, 1);
assert.deepEqual((await store.readRange('nap-1', sleeping.sequence + 1)).map((e) => e.payload.answer), [{ wait: 0, timer: { wakeAt: 30 } }]);
await service.stop();

// The child supervisor (supervisor.js, shipped beside the glue): a parent
// whose child has ended is resumed with the child's outcome.
const trips = new MemoryEventStore();
await trips.appendMany('trip-1', [
  { kind: 'EXECUTION_STARTED', at: 0 },
  { kind: 'EXECUTION_SUSPENDED', at: 1, payload: { waits: [{ kind: 'CHILD_DONE', key: 'trip-1/hotel' }] } },
]);
await trips.appendMany('trip-1/hotel', [{ kind: 'EXECUTION_STARTED', at: 0 }, { kind: 'EXECUTION_COMPLETED', at: 2 }]);
const supervised = await new ChildSupervisor({ events: trips, now: () => 50 }).watch('trip-1');
assert.equal(supervised.outcome, 'resumed');
assert.equal(supervised.resumed.resumed.payload.answer.children['trip-1/hotel'].status, 'completed');

// The follower (follower.js, shipped beside the glue): a parent parked on a
// child is resumed once the child ends, found through the store's change feed.
const flights = new MemoryEventStore();
await flights.appendMany('flight-1', [
  { kind: 'EXECUTION_STARTED', at: 0 },
  { kind: 'EXECUTION_SUSPENDED', at: 1, payload: { waits: [{ kind: 'CHILD_DONE', key: 'flight-1/seat' }] } },
]);
const follower = new Follower({ events: flights, supervisor: new ChildSupervisor({ events: flights, now: () => 50 }) });
follower.start();
await flights.appendMany('flight-1/seat', [{ kind: 'EXECUTION_STARTED', at: 0 }, { kind: 'EXECUTION_COMPLETED', at: 2 }]);
for (let turns = 0; (await flights.readRange('flight-1')).length < 3; turns++) {
  assert.ok(turns < 1_000, 'the follower resumes the parent');
  await new Promise((resolve) => setTimeout(resolve, 5));
}
await follower.stop();
assert.equal((await flights.readRange('flight-1', 3))[0].kind, 'EXECUTION_RESUMED');

// Retention (retention.js, shipped beside the glue): a finished child is kept
// while its parent is parked on it, and swept once the park is answered.
await store.append('shop-1', { kind: 'EXECUTION_STARTED', at: 0 });
await store.appendMany('shop-1/pay', [startedChild('shop-1', 1), { kind: 'EXECUTION_COMPLETED', at: 2 }]);
assert.equal(parentOf(await store.readRange('shop-1/pay')), 'shop-1');
await store.append('shop-1', { kind: 'EXECUTION_SUSPENDED', at: 3, payload: { waits: [{ kind: 'CHILD_DONE', key: 'shop-1/pay' }] } });
assert.ok(pinParkedChildren('shop-1/pay', await store.readRange('shop-1')));
const kept = await sweep(store, { endedBefore: 100 });
assert.deepEqual(kept.pinned, [{ child: 'shop-1/pay', parent: 'shop-1' }]);
await store.append('shop-1', { kind: 'EXECUTION_RESUMED', at: 4 });
const swept = await sweep(store, { endedBefore: 100, pageLimit: 10 });
assert.deepEqual([swept.examined, swept.eligible, swept.deleted, swept.pinned.length], [4, 1, 1, 0]);
assert.deepEqual(await store.readRange('shop-1/pay'), []);
assert.deepEqual(swept.undecided, []);
console.log('smoke.mjs: ok (import)');
