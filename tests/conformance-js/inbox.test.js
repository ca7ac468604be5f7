// The package's Inbox: notify, the park that checks its inbox, the
// re-driver, over the package's MemoryEventStore and MemoryTimerStore and
// over the plain-JavaScript stores. Every rule is the core's DeliverMachine;
// these tests hold the pump to it: what lands in the log (MESSAGE_CONSUMED
// and EXECUTION_RESUMED, adjacent, from one append), what the caller is
// answered, and that hostile input changes nothing.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { InputError, MemoryEventStore, ResumeContendedError } from 'loomfence';
import { Inbox, MemoryTimerStore, TimerInputError, TimerService } from 'loomfence/services';

import { PlainEventStore, PlainInbox } from './plain-store.js';
import { AT, event } from './support.js';

const WAIT = { kind: 'MESSAGE', channel: 'approval' };
const INTENT_MS = 1_000;

/** A fake clock from AT, moved by hand. */
function clock() {
  let t = AT;
  return { now: () => t, advance: (ms) => (t += ms) };
}

/** A store, an inbox, an Inbox over them, and a started execution `e`. */
async function setup({ events = new MemoryEventStore(), inbox = new MemoryTimerStore(), options = {} } = {}) {
  const time = clock();
  const resumed = [];
  const messages = new Inbox(events, inbox, { now: time.now, intentDelayMs: INTENT_MS, onResumed: (r) => resumed.push(r), ...options });
  await events.append('e', event('EXECUTION_STARTED'));
  return { events, inbox, messages, time, resumed };
}

/** The kinds of `id`'s log. */
async function kinds(events, id) {
  return (await events.readRange(id, 1)).map((e) => e.kind);
}

/** Everything the stores hold for `id`: its log, its messages and every row. */
async function witness({ events, inbox }, id = 'e') {
  return { log: await events.readRange(id, 1), messages: await inbox.messages(id), rows: await inbox.due(Number.MAX_SAFE_INTEGER, 10_000) };
}

/** The body's answer for `payload` on the park's wait 0. */
const answerOf = (payload, messageId = 'm1', sentAt = AT) => ({ wait: 0, message: { channel: 'approval', messageId, payload, sentAt } });

const STORES = [
  ['memory', () => ({ events: new MemoryEventStore(), inbox: new MemoryTimerStore() })],
  ['plain JavaScript', () => ({ events: new PlainEventStore(), inbox: new PlainInbox() })],
];

for (const [label, make] of STORES) {
  describe(`Inbox over ${label} stores`, () => {
    test('a message sent before the park is delivered when the park is written', async () => {
      const s = await setup(make());
      const sent = await s.messages.notify({ executionId: 'e', channel: 'approval', messageId: 'm1', payload: { ok: true } });
      assert.deepEqual(sent, { result: 'stored', outcome: 'waiting', duplicate: false });
      assert.deepEqual(await kinds(s.events, 'e'), ['EXECUTION_STARTED'], 'nothing appended without a park');
      const parked = await s.messages.park('e', [WAIT]);
      assert.equal(parked.park.kind, 'EXECUTION_SUSPENDED');
      assert.deepEqual(parked.park.payload, { waits: [WAIT] });
      assert.ok(parked.delivered, 'the park-time check delivered it');
      assert.deepEqual(parked.delivered.message, { executionId: 'e', channel: 'approval', messageId: 'm1' });
      assert.deepEqual(parked.delivered.resumed.resumed.payload.answer, answerOf({ ok: true }));
      assert.deepEqual(await kinds(s.events, 'e'), ['EXECUTION_STARTED', 'EXECUTION_SUSPENDED', 'MESSAGE_CONSUMED', 'EXECUTION_RESUMED']);
      assert.equal((await s.inbox.messages('e'))[0].consumed, true);
    });

    test('a park on a channel writes its intent row first; a park without one writes none', async () => {
      const s = await setup(make());
      await s.messages.park('e', [WAIT]);
      const rows = await s.inbox.due(Number.MAX_SAFE_INTEGER, 10);
      assert.deepEqual(rows, [{ executionId: 'e', wakeAt: AT + INTENT_MS, redrive: { attempt: 0 } }]);
      const t = await setup(make());
      await t.messages.park('e', [{ kind: 'TIMER', wakeAt: AT + 60_000 }]);
      assert.deepEqual(await t.inbox.due(Number.MAX_SAFE_INTEGER, 10), []);
    });

    test('a notify while parked delivers at once: the two events adjacent, the answer the message', async () => {
      const s = await setup(make());
      assert.equal((await s.messages.park('e', [{ kind: 'TIMER', wakeAt: AT + 60_000 }, WAIT])).delivered, null);
      s.time.advance(5);
      const sent = await s.messages.notify({ executionId: 'e', channel: 'approval', messageId: 'm1', payload: 'yes' });
      assert.equal(sent.result, 'delivered');
      assert.equal(sent.duplicate, false);
      const log = await s.events.readRange('e', 1);
      const [consumed, resumed] = log.slice(-2);
      assert.deepEqual([consumed.kind, resumed.kind], ['MESSAGE_CONSUMED', 'EXECUTION_RESUMED']);
      assert.equal(resumed.sequence, consumed.sequence + 1, 'adjacent');
      assert.deepEqual(consumed.payload, { channel: 'approval', messageId: 'm1' });
      assert.deepEqual(resumed.payload.answer, { wait: 1, message: { channel: 'approval', messageId: 'm1', payload: 'yes', sentAt: AT + 5 } });
      assert.deepEqual(sent.resumed.resumed, resumed);
    });

    test('a duplicate notify stores once and delivers once', async () => {
      const s = await setup(make());
      await s.messages.park('e', [WAIT]);
      const first = await s.messages.notify({ executionId: 'e', channel: 'approval', messageId: 'm1', payload: 1 });
      const again = await s.messages.notify({ executionId: 'e', channel: 'approval', messageId: 'm1', payload: 2 });
      assert.equal(first.result, 'delivered');
      assert.deepEqual(again, { result: 'stored', outcome: 'waiting', duplicate: true });
      const log = await kinds(s.events, 'e');
      assert.equal(log.filter((k) => k === 'MESSAGE_CONSUMED').length, 1);
      assert.equal(log.filter((k) => k === 'EXECUTION_RESUMED').length, 1);
      assert.equal((await s.inbox.messages('e')).length, 1);
      assert.equal((await s.inbox.messages('e'))[0].payload, 1, 'the first payload stands');
    });

    test('a notify to an unknown or ended execution is refused with nothing stored', async () => {
      const s = await setup(make());
      await s.events.append('done', event('EXECUTION_STARTED'));
      await s.events.append('done', event('EXECUTION_COMPLETED'));
      const before = [await witness(s, 'nobody'), await witness(s, 'done')];
      const unknown = await s.messages.notify({ executionId: 'nobody', channel: 'approval', messageId: 'm', payload: null });
      const ended = await s.messages.notify({ executionId: 'done', channel: 'approval', messageId: 'm', payload: null });
      assert.deepEqual(unknown, { result: 'refused', reason: 'unknown', duplicate: false });
      assert.deepEqual(ended, { result: 'refused', reason: 'ended', duplicate: false });
      assert.deepEqual([await witness(s, 'nobody'), await witness(s, 'done')], before, 'nothing stored, no intent row');
    });

    test('concurrent notifies to one park: exactly one is delivered, the others wait', async () => {
      const s = await setup(make());
      await s.messages.park('e', [WAIT]);
      const answers = await Promise.all(['m1', 'm2', 'm3', 'm4'].map((id) => s.messages.notify({ executionId: 'e', channel: 'approval', messageId: id, payload: id })));
      assert.equal(answers.filter((a) => a.result === 'delivered').length, 1, JSON.stringify(answers.map((a) => a.result)));
      const log = await kinds(s.events, 'e');
      assert.equal(log.filter((k) => k === 'EXECUTION_RESUMED').length, 1, 'one resume per park');
      assert.equal(log.filter((k) => k === 'MESSAGE_CONSUMED').length, 1, 'one message consumed');
      const delivered = answers.find((a) => a.result === 'delivered').message.messageId;
      assert.equal(delivered, 'm1', 'the channel is consumed in arrival order');
      assert.deepEqual((await s.inbox.messages('e')).map((m) => [m.messageId, m.consumed]), [['m1', true], ['m2', false], ['m3', false], ['m4', false]]);
    });

    test('each channel is consumed in arrival order, one message per park', async () => {
      const s = await setup(make());
      for (const id of ['m1', 'm2']) await s.messages.notify({ executionId: 'e', channel: 'approval', messageId: id, payload: id });
      const first = await s.messages.park('e', [WAIT]);
      assert.equal(first.delivered.message.messageId, 'm1');
      // The resumed body parks again under the token its resume took.
      const second = await s.messages.park('e', [WAIT], { fence: first.delivered.resumed.fence });
      assert.equal(second.delivered.message.messageId, 'm2');
      assert.equal((await s.messages.park('e', [WAIT], { fence: second.delivered.resumed.fence })).delivered, null, 'nothing left');
      const consumed = (await s.events.readRange('e', 1)).filter((e) => e.kind === 'MESSAGE_CONSUMED').map((e) => e.payload.messageId);
      assert.deepEqual(consumed, ['m1', 'm2']);
    });
  });
}

describe('the Inbox re-driver', () => {
  test('delivers, exactly once, a message whose sender crashed after its send', async () => {
    const events = new MemoryEventStore();
    const timers = new MemoryTimerStore();
    const s = await setup({ events, inbox: timers });
    await s.messages.park('e', [WAIT]);
    // The sender's send landed (message and intent row) and it died before delivering.
    const message = { executionId: 'e', channel: 'approval', messageId: 'm1', payload: { v: 1 }, sentAt: AT };
    assert.deepEqual(await timers.send(message, { executionId: 'e', wakeAt: AT + INTENT_MS, redrive: { attempt: 0 } }), { duplicate: false, arrival: 1 });
    assert.deepEqual(await kinds(events, 'e'), ['EXECUTION_STARTED', 'EXECUTION_SUSPENDED']);
    const errors = [];
    const service = new TimerService({ events, timers, node: 'n1', now: s.time.now, random: () => 0.5, onError: (error) => errors.push(error) });
    service.registerRedriver(s.messages.redriver());
    const early = await service.pollOnce();
    assert.deepEqual(early.fires, [], 'not due before the intent delay');
    s.time.advance(INTENT_MS);
    const fired = await service.pollOnce();
    assert.equal(fired.fires.length, 1);
    assert.equal(fired.fires[0].result, 'redriven');
    assert.deepEqual(errors, []);
    assert.deepEqual(await kinds(events, 'e'), ['EXECUTION_STARTED', 'EXECUTION_SUSPENDED', 'MESSAGE_CONSUMED', 'EXECUTION_RESUMED']);
    assert.equal(s.resumed.length, 1, 'onResumed got the resume');
    assert.deepEqual(s.resumed[0].resumed.payload.answer, answerOf({ v: 1 }));
    // Nothing is left to fire, and a later check delivers nothing again.
    s.time.advance(60_000);
    assert.deepEqual((await service.pollOnce()).fires, []);
    assert.equal((await s.messages.check('e')).result, 'waiting');
    assert.equal((await kinds(events, 'e')).filter((k) => k === 'MESSAGE_CONSUMED').length, 1, 'delivered exactly once');
  });

  test("answers the machine's redriveAnswer: 'noop' with nothing to deliver", async () => {
    const s = await setup();
    const redrive = s.messages.redriver();
    assert.equal(await redrive('e'), 'noop');
    await s.messages.park('e', [WAIT]);
    await s.inbox.send({ executionId: 'e', channel: 'approval', messageId: 'm', payload: 0, sentAt: AT }, { executionId: 'e', wakeAt: AT, redrive: { attempt: 0 } });
    assert.equal(await redrive('e'), 'done');
    assert.equal(await redrive('e'), 'noop');
  });
});

describe('hostile input to the Inbox', () => {
  /** Asserts `promise` rejects with `type` and `code`. */
  async function refused(promise, type, code, what) {
    await assert.rejects(promise, (error) => {
      assert.ok(error instanceof type, `${what}: expected a ${type.name}, got ${error?.name}: ${error?.message}`);
      assert.ok(error instanceof Error, `${what}: a real Error`);
      assert.equal(error.code, code, `${what}: ${error.message}`);
      return true;
    });
  }

  test('malformed notifies are refused with typed errors and change nothing', async () => {
    const s = await setup();
    await s.messages.park('e', [WAIT]);
    const before = await witness(s);
    const base = { executionId: 'e', channel: 'approval', messageId: 'm', payload: 1 };
    const throwing = Object.defineProperty({ ...base }, 'payload', { enumerable: true, get: () => { throw new Error('boom'); } });
    const deepThrow = { ...base, payload: Object.defineProperty({}, 'x', { enumerable: true, get: () => { throw new Error('boom'); } }) };
    const cases = [
      [{ ...base, channel: 42 }, 'INVALID_MESSAGE', 'a channel that is not a string'],
      [{ ...base, channel: '' }, 'INVALID_MESSAGE', 'an empty channel'],
      [{ ...base, channel: 'a\uD800' }, 'INVALID_MESSAGE', 'a channel with a lone surrogate'],
      [{ ...base, messageId: ['m'] }, 'INVALID_MESSAGE', 'a message id that is an array'],
      [{ ...base, messageId: 'x'.repeat(256) }, 'INVALID_MESSAGE', 'a message id over 255 bytes'],
      [{ ...base, messageId: 'a\0b' }, 'INVALID_MESSAGE', 'a NUL in the id'],
      [{ ...base, payload: 'x'.repeat(300 * 1024) }, 'INVALID_LIMIT', 'a payload over 256 KiB'],
      [{ ...base, payload: { n: 1n } }, 'INVALID_MESSAGE', 'a BigInt payload'],
      [{ ...base, executionId: '' }, 'INVALID_ID', 'an empty execution id'],
      [{ ...base, executionId: 7 }, 'INVALID_ID', 'an id that is not a string'],
      [{ ...base, executionId: 'x'.repeat(256) }, 'INVALID_ID', 'an id over 255 bytes'],
      [{ ...base, sentAt: 1 }, 'INVALID_MESSAGE', 'a field the caller does not give'],
      [null, 'INVALID_MESSAGE', 'null'],
      [throwing, 'UNREADABLE', 'a getter that throws'],
      [deepThrow, 'INVALID_MESSAGE', 'a payload with a getter that throws'],
      [new Proxy({}, { ownKeys: () => { throw new Error('trap'); } }), 'UNREADABLE', 'a Proxy whose trap throws'],
    ];
    for (const [input, code, what] of cases) await refused(s.messages.notify(input), TimerInputError, code, what);
    assert.deepEqual(await witness(s), before, 'nothing changed');
    assert.equal((await s.messages.notify(base)).result, 'delivered', 'the Inbox still works');
  });

  test('malformed parks are refused before anything is written', async () => {
    const s = await setup();
    const before = await witness(s);
    await refused(s.messages.park('e', [{ kind: 'MESSAGE' }]), InputError, 'INVALID_PARK', 'a MESSAGE wait without its channel');
    await refused(s.messages.park('e', [{ kind: 'MESSAGE', channel: 5 }]), InputError, 'INVALID_PARK', 'a channel that is not a string');
    await refused(s.messages.park('e', 'waits'), InputError, 'INVALID_PARK', 'waits that are not an array');
    await refused(s.messages.park('', [WAIT]), TimerInputError, 'INVALID_ID', 'an empty id');
    await refused(s.messages.park('e', [WAIT], { bogus: 1 }), TimerInputError, 'INVALID_OPTIONS', 'an unknown option');
    assert.deepEqual(await witness(s), before, 'nothing changed');
  });

  test('bad options are refused when the Inbox is made', () => {
    const events = new MemoryEventStore();
    const inbox = new MemoryTimerStore();
    const bad = (options, code = 'INVALID_OPTIONS') => assert.throws(() => new Inbox(events, inbox, options), (e) => e instanceof TimerInputError && e.code === code);
    bad({ unknown: 1 });
    bad({ now: 5 });
    bad({ intentDelayMs: 0 });
    bad({ intentDelayMs: 1.5 });
    bad({ policy: { baseMs: -1 } }, 'INVALID_POLICY');
    assert.throws(() => new Inbox({}, inbox), (e) => e instanceof TimerInputError && e.code === 'INVALID_OPTIONS');
    assert.throws(() => new Inbox(events, {}), (e) => e instanceof TimerInputError && e.code === 'INVALID_OPTIONS');
  });
});

describe('a contended delivery', () => {
  /** The memory store behind a rival that takes a new token before every park-conditional append. */
  function rivalled(inner) {
    return {
      readRange: (...args) => inner.readRange(...args),
      append: (...args) => inner.append(...args),
      currentFence: (...args) => inner.currentFence(...args),
      acquireFenceIf: (...args) => inner.acquireFenceIf(...args),
      acquireFence: (...args) => inner.acquireFence(...args),
      appendIfParked: async (id, parkSeq, events) => {
        await inner.acquireFence(id);
        return inner.appendIfParked(id, parkSeq, events);
      },
    };
  }

  for (const redrive of [false, true]) {
    test(`ends ${redrive ? 'writing the first re-drive row' : 'contended'} with the message kept${redrive ? ' (redrive: true)' : ''}`, async () => {
      const events = new MemoryEventStore();
      const inbox = new MemoryTimerStore();
      const s = await setup({ events: rivalled(events), inbox, options: { redrive, random: () => 0.5 } });
      await s.messages.park('e', [WAIT]);
      const sent = await s.messages.notify({ executionId: 'e', channel: 'approval', messageId: 'm1', payload: 1 });
      assert.equal(sent.result, 'stored', JSON.stringify(sent));
      const log = await kinds(events, 'e');
      assert.ok(!log.includes('MESSAGE_CONSUMED') && !log.includes('EXECUTION_RESUMED'), `nothing delivered: ${log}`);
      assert.equal((await inbox.messages('e'))[0].consumed, false, 'the message waits');
      const rows = await inbox.due(Number.MAX_SAFE_INTEGER, 100);
      if (redrive) {
        assert.equal(sent.outcome, 'redriveScheduled');
        assert.deepEqual(sent.row.redrive, { attempt: 0 });
        assert.ok(rows.some((row) => row.wakeAt === sent.row.wakeAt), 'the re-drive row is stored');
      } else {
        assert.equal(sent.outcome, 'contended');
        assert.ok(sent.error instanceof ResumeContendedError, `got ${sent.error}`);
      }
      assert.ok(rows.some((row) => row.wakeAt === AT + INTENT_MS && row.redrive), 'the intent row stays either way');
    });
  }
});
