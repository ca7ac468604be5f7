// The inbox conformance kit for JavaScript inboxes: the cases of the Rust
// inbox kit (tests/conformance/src/inbox/), ported, plus checks of the
// JavaScript edge, written ONCE and run against any object with the inbox
// methods (send, pending, markConsumed, purge, messages) and the timer
// store's `due`:
//
//   import { inboxConformance } from './inbox-kit.js';
//   inboxConformance('memory', () => new MemoryTimerStore());
//
// Each case gets a fresh store from the factory. The rules are the core's
// InboxTable (core/src/inbox/table.rs): a key stored once (the first payload
// stands, and only the first send writes its intent row), arrival order per
// channel, consuming only marks, purge by execution, and every bad input
// refused with a TimerInputError that changes nothing.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';

import { assertTimerInput } from './timer-kit.js';

/** The base time of the cases, in ms. */
export const T0 = 1_700_000_000_000;
/** How long after a send its intent row comes due in these cases. */
export const INTENT_MS = 5_000;
/** The core's limits: a name's bytes, a payload's bytes, a listing. */
export const MAX_NAME_BYTES = 255;
export const MAX_MESSAGE_BYTES = 256 * 1024;
export const MAX_PENDING_LIMIT = 1_000;

/** A message of `execution` on `channel`, sent `offset` ms after T0. */
export function message(execution, channel, messageId, payload = { n: messageId }, offset = 0) {
  return { executionId: execution, channel, messageId, payload, sentAt: T0 + offset };
}

/** The intent row of `message`: try 0 of a re-drive, due INTENT_MS after the send. */
export function intent(sent) {
  return { executionId: sent.executionId, wakeAt: sent.sentAt + INTENT_MS, redrive: { attempt: 0 } };
}

/** Sends `sent` with its intent row. */
export function send(store, sent) {
  return store.send(sent, intent(sent));
}

/** Every row due by the end of time: the intent rows a case looks for. */
function rows(store) {
  return store.due(Number.MAX_SAFE_INTEGER, 10_000);
}

/** What the store holds for `ids`, messages and rows: the witness of a refused call. */
async function witness(store, ids) {
  const messages = [];
  for (const id of ids) messages.push(await store.messages(id));
  return { messages, rows: await rows(store) };
}

/** The keys of listed messages. */
const ids = (listed) => listed.map((m) => m.messageId);

/** Every case: [name, run(store)]. */
const CASES = [];
function kase(name, run) {
  CASES.push({ name, run });
}

kase('send::a_message_round_trips', async (store) => {
  const sent = message('e', 'approval', 'm1', { ok: true, nested: { list: [1, 'two', null] }, text: 'é 🕰' });
  assert.deepEqual(await send(store, sent), { duplicate: false, arrival: 1 });
  assert.deepEqual(await store.pending('e', ['approval'], 10), [{ ...sent, arrival: 1 }]);
  assert.deepEqual(await store.messages('e'), [{ ...sent, arrival: 1, consumed: false }]);
});

kase('send::a_duplicate_stores_once_with_the_first_payload', async (store) => {
  const first = message('e', 'c', 'm', { v: 1 });
  const second = message('e', 'c', 'm', { v: 2 }, 1_000);
  assert.deepEqual(await send(store, first), { duplicate: false, arrival: 1 });
  assert.deepEqual(await send(store, second), { duplicate: true, arrival: 1 });
  assert.deepEqual(await store.messages('e'), [{ ...first, arrival: 1, consumed: false }]);
  assert.deepEqual(await rows(store), [intent(first)], 'the duplicate wrote no intent row of its own');
});

kase('send::the_intent_row_is_due_with_the_message', async (store) => {
  const sent = message('e', 'c', 'm', null, 7);
  await send(store, sent);
  assert.deepEqual(await store.due(sent.sentAt + INTENT_MS - 1, 10), [], 'not due before its time');
  assert.deepEqual(await store.due(sent.sentAt + INTENT_MS, 10), [intent(sent)]);
});

kase('pending::lists_only_unconsumed_messages_of_the_asked_channels_in_arrival_order', async (store) => {
  await send(store, message('e', 'a', 'a1'));
  await send(store, message('e', 'b', 'b1'));
  await send(store, message('e', 'a', 'a2'));
  await send(store, message('other', 'a', 'x1'));
  await send(store, message('e', 'c', 'c1'));
  await send(store, message('e', 'a', 'a3'));
  assert.equal(await store.markConsumed({ executionId: 'e', channel: 'a', messageId: 'a2' }), true);
  const listed = await store.pending('e', ['a', 'b'], 10);
  assert.deepEqual(ids(listed), ['a1', 'b1', 'a3']);
  const arrivals = listed.map((m) => m.arrival);
  assert.deepEqual(arrivals, [...arrivals].sort((x, y) => x - y), 'increasing arrival');
  assert.deepEqual(ids(await store.pending('e', ['c'], 10)), ['c1']);
  assert.deepEqual(ids(await store.pending('e', ['none'], 10)), []);
  assert.deepEqual(ids(await store.pending('e', [], 10)), []);
});

kase('pending::stops_at_the_limit', async (store) => {
  for (const n of [1, 2, 3, 4]) await send(store, message('e', 'c', `m${n}`));
  assert.deepEqual(ids(await store.pending('e', ['c'], 2)), ['m1', 'm2']);
  assert.deepEqual(ids(await store.pending('e', ['c'], 1)), ['m1']);
  assert.deepEqual(ids(await store.pending('e', ['c'], MAX_PENDING_LIMIT)), ['m1', 'm2', 'm3', 'm4']);
});

kase('mark_consumed::true_once_then_false', async (store) => {
  await send(store, message('e', 'c', 'm'));
  const key = { executionId: 'e', channel: 'c', messageId: 'm' };
  assert.equal(await store.markConsumed(key), true);
  assert.equal(await store.markConsumed(key), false);
  assert.equal(await store.markConsumed({ ...key, messageId: 'absent' }), false, 'an absent key');
  assert.deepEqual(ids(await store.pending('e', ['c'], 10)), []);
  assert.equal((await store.messages('e'))[0].consumed, true);
  assert.deepEqual(await send(store, message('e', 'c', 'm', 'late')), { duplicate: true, arrival: 1 }, 'a late duplicate is still one');
});

kase('purge::deletes_only_that_execution_and_counts', async (store) => {
  await send(store, message('gone', 'a', '1'));
  await send(store, message('gone', 'b', '2'));
  await send(store, message('kept', 'a', '1'));
  assert.equal(await store.purge('gone'), 2);
  assert.deepEqual(await store.messages('gone'), []);
  assert.deepEqual(ids(await store.messages('kept')), ['1']);
  assert.equal(await store.purge('gone'), 0);
  assert.equal(await store.purge('never'), 0);
});

kase('input::bad_input_is_refused_and_changes_nothing', async (store) => {
  const good = message('e', 'c', 'm');
  await send(store, good);
  const before = await witness(store, ['e', 'x']);
  const long = 'x'.repeat(MAX_NAME_BYTES + 1);
  const refusals = [
    [store.send({ ...good, messageId: 'new', channel: '' }, intent(good)), 'INVALID_MESSAGE', 'an empty channel'],
    [store.send({ ...good, messageId: long }, intent(good)), 'INVALID_MESSAGE', 'a message id over 255 bytes'],
    [store.send({ ...good, messageId: 'a\0b' }, intent(good)), 'INVALID_MESSAGE', 'a NUL in the id'],
    [store.send({ ...good, messageId: 'new', channel: 7 }, intent(good)), 'INVALID_MESSAGE', 'a channel that is not a string'],
    [store.send({ ...good, messageId: 'new', payload: { text: 'a\0b' } }, intent(good)), 'INVALID_MESSAGE', 'a NUL in the payload'],
    [store.send({ ...good, messageId: 'new', payload: 'x'.repeat(MAX_MESSAGE_BYTES) }, intent(good)), 'INVALID_LIMIT', 'a payload over 256 KiB'],
    [store.send({ ...good, messageId: 'new', sentAt: -1 }, intent(good)), 'INVALID_TIME', 'a negative sentAt'],
    [store.send({ ...good, messageId: 'new', extra: 1 }, intent(good)), 'INVALID_MESSAGE', 'an unknown field'],
    [store.send({ ...good, messageId: 'new', executionId: '' }, intent(good)), 'INVALID_ID', 'an empty execution id'],
    [store.send({ ...good, messageId: 'new' }, { ...intent(good), wakeAt: -5 }), 'INVALID_TIME', 'an intent row out of range'],
    [store.send('message', intent(good)), 'INVALID_MESSAGE', 'a message that is not an object'],
    [store.pending('e', ['c'], 0), 'INVALID_LIMIT', 'a limit of 0'],
    [store.pending('e', ['c'], MAX_PENDING_LIMIT + 1), 'INVALID_LIMIT', 'a limit over 1000'],
    [store.pending('e', ['c', ''], 10), 'INVALID_MESSAGE', 'an empty channel asked for'],
    [store.pending('e', 'c', 10), 'INVALID_MESSAGE', 'channels that are not an array'],
    [store.pending(5, ['c'], 10), 'INVALID_ID', 'an id that is not a string'],
    [store.markConsumed({ executionId: 'e', channel: 'c' }), 'INVALID_MESSAGE', 'a key without its id'],
    [store.markConsumed({ executionId: 'e', channel: 'c', messageId: '' }), 'INVALID_MESSAGE', 'a key with an empty id'],
    [store.purge(''), 'INVALID_ID', 'purge of an empty id'],
    [store.messages(null), 'INVALID_ID', 'messages of null'],
  ];
  for (const [promise, code, what] of refusals) await assertTimerInput(promise, code, what);
  assert.deepEqual(await witness(store, ['e', 'x']), before, 'nothing changed');
  assert.deepEqual(await send(store, message('e', 'c', 'after')), { duplicate: false, arrival: 2 }, 'the store is still usable');
});

kase('send::the_largest_names_and_payload_are_stored', async (store) => {
  const name = 'é'.repeat((MAX_NAME_BYTES - 1) / 2) + 'x';
  assert.equal(Buffer.byteLength(name), MAX_NAME_BYTES);
  // JSON text of a string is its characters plus two quotes.
  const sent = message('e', name, name, 'y'.repeat(MAX_MESSAGE_BYTES - 2));
  assert.deepEqual(await send(store, sent), { duplicate: false, arrival: 1 });
  assert.deepEqual(await store.pending('e', [name], 1), [{ ...sent, arrival: 1 }]);
});

kase('concurrency::concurrent_sends_of_one_key_store_one', async (store) => {
  const sends = Array.from({ length: 8 }, (_, n) => send(store, message('e', 'c', 'same', { n }, n)));
  const answers = await Promise.all(sends);
  assert.equal(answers.filter((a) => !a.duplicate).length, 1, 'exactly one send stored it');
  assert.ok(answers.every((a) => a.arrival === answers[0].arrival), 'every send names the one arrival');
  const stored = await store.messages('e');
  assert.equal(stored.length, 1);
  const winner = answers.findIndex((a) => !a.duplicate);
  assert.deepEqual(stored[0].payload, { n: winner }, "the stored payload is the storing send's");
  assert.equal((await rows(store)).length, 1, 'one intent row');
});

// ---------------------------------------------------------------------------
// The model: a random sequence of sends, listings, marks and purges against
// a plain model of the inbox's rules, compared after every step.

/** The inbox's rules over a list, as plainly as they can be written. */
class Model {
  entries = [];
  last = 0;
  send(m) {
    const found = this.entries.find((e) => e.executionId === m.executionId && e.channel === m.channel && e.messageId === m.messageId);
    if (found) return { duplicate: true, arrival: found.arrival };
    this.entries.push({ ...m, arrival: ++this.last, consumed: false });
    return { duplicate: false, arrival: this.last };
  }
  pending(id, channels, limit) {
    return this.entries.filter((e) => e.executionId === id && !e.consumed && channels.includes(e.channel)).slice(0, limit).map(({ consumed, ...m }) => m);
  }
  mark(key) {
    const found = this.entries.find((e) => e.executionId === key.executionId && e.channel === key.channel && e.messageId === key.messageId);
    if (!found || found.consumed) return false;
    found.consumed = true;
    return true;
  }
  purge(id) {
    const before = this.entries.length;
    this.entries = this.entries.filter((e) => e.executionId !== id);
    return before - this.entries.length;
  }
  messages(id) {
    return this.entries.filter((e) => e.executionId === id);
  }
}

const EXECUTIONS = ['e1', 'e2', 'e3'];
/** JSON payloads a log can hold (no NUL). */
const text = fc.string({ maxLength: 8 }).filter((t) => !t.includes('\0'));
const PAYLOAD = fc.oneof(fc.integer(), text, fc.constant(null), fc.boolean(), fc.array(fc.integer(), { maxLength: 3 }), fc.dictionary(text, fc.integer(), { maxKeys: 3 }));
const CHANNELS = ['a', 'b', 'c'];
const op = fc.oneof(
  fc.record({ op: fc.constant('send'), executionId: fc.constantFrom(...EXECUTIONS), channel: fc.constantFrom(...CHANNELS), messageId: fc.constantFrom('1', '2', '3', '4'), payload: PAYLOAD }),
  fc.record({ op: fc.constant('pending'), executionId: fc.constantFrom(...EXECUTIONS), channels: fc.subarray(CHANNELS), limit: fc.integer({ min: 1, max: 5 }) }),
  fc.record({ op: fc.constant('mark'), executionId: fc.constantFrom(...EXECUTIONS), channel: fc.constantFrom(...CHANNELS), messageId: fc.constantFrom('1', '2', '3', '4') }),
  fc.record({ op: fc.constant('purge'), executionId: fc.constantFrom(...EXECUTIONS) }),
);

/** The model-based property's seed, printed; SIM_SEED replays it. */
export const MODEL_SEED = process.env.SIM_SEED ? Number(process.env.SIM_SEED) : Math.floor(Math.random() * 2 ** 31);

kase('model::random_operations_match_the_model', async (_store, fresh) => {
  console.log(`inbox-kit.js model: SIM_SEED=${MODEL_SEED} (replay: cd tests/conformance-js && SIM_SEED=${MODEL_SEED} node --test inbox-kit.test.js)`);
  await fc.assert(
    fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => {
      const store = fresh();
      const model = new Model();
      let clock = 0;
      for (const step of ops) {
        if (step.op === 'send') {
          // As JSON carries it (a '__proto__' key an own data property).
          const payload = JSON.parse(JSON.stringify(step.payload));
          const m = message(step.executionId, step.channel, step.messageId, payload, clock++);
          assert.deepEqual(await send(store, m), model.send(m), `send ${JSON.stringify(m)}`);
        } else if (step.op === 'pending') {
          assert.deepEqual(await store.pending(step.executionId, step.channels, step.limit), model.pending(step.executionId, step.channels, step.limit), `pending ${JSON.stringify(step)}`);
        } else if (step.op === 'mark') {
          const { op: _, ...key } = step;
          assert.equal(await store.markConsumed(key), model.mark(key), `mark ${JSON.stringify(key)}`);
        } else {
          assert.equal(await store.purge(step.executionId), model.purge(step.executionId), `purge ${step.executionId}`);
        }
      }
      for (const id of EXECUTIONS) assert.deepEqual(await store.messages(id), model.messages(id), `messages of ${id}`);
    }),
    { seed: MODEL_SEED, numRuns: 100 },
  );
});

/** Every case's name. */
export const INBOX_CASE_NAMES = Object.freeze(CASES.map((c) => c.name));

/** Runs every case against fresh stores from `make`. */
export function inboxConformance(label, make) {
  describe(`inbox conformance: ${label}`, () => {
    for (const { name, run } of CASES) {
      test(name, () => run(make(), make));
    }
  });
}
