// The inbox conformance kit for JavaScript inboxes: every case of the Rust
// inbox kit (tests/conformance/src/inbox/), ported under its Rust name
// (`module::case`), plus checks of the JavaScript edge, written ONCE and run
// against any object with the inbox methods (send, pending, markConsumed,
// purge, messages) and the timer store's `schedule`, `due`, `claimDue` and
// `complete`:
//
//   import { inboxConformance } from './inbox-kit.js';
//   inboxConformance('memory', () => new MemoryTimerStore());
//
// Each case gets a fresh store from the factory. The rules are the core's
// InboxTable (core/src/inbox/table.rs): a key stored once (the first payload
// stands, and only the first send writes its intent row), arrival order per
// channel, consuming only marks, purge by execution, and every bad input
// refused with a TimerInputError that changes nothing. inbox-kit.test.js
// fails when a Rust case has no port here under the same name.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryTimerStore } from 'loomfence/services';

import { prng } from './support.js';
import { MAX_DUE_LIMIT, MAX_REDRIVE_ATTEMPT, MAX_TIMER_MS, assertTimerInput } from './timer-kit.js';

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

/** The key of `sent`. */
export function keyOf(sent) {
  return { executionId: sent.executionId, channel: sent.channel, messageId: sent.messageId };
}

/** The intent row of `message`: try 0 of a re-drive, due INTENT_MS after the send. */
export function intent(sent) {
  return { executionId: sent.executionId, wakeAt: sent.sentAt + INTENT_MS, redrive: { attempt: 0 } };
}

/** Sends `sent` with its intent row. */
export function send(store, sent) {
  return store.send(sent, intent(sent));
}

/** Sends `sent` and expects it stored; its arrival number. */
async function stored(store, sent) {
  const answer = await send(store, sent);
  assert.equal(answer.duplicate, false, `${JSON.stringify(keyOf(sent))} should be stored, got ${JSON.stringify(answer)}`);
  return answer.arrival;
}

/** `sent` as a listing gives it back, stored with `arrival`. */
const listed = (sent, arrival) => ({ ...sent, arrival });

/** Every pending message of `execution` on `channels`. */
function allPending(store, execution, channels) {
  return store.pending(execution, channels, MAX_PENDING_LIMIT);
}

/** Every timer row of the store, earliest first: the intent rows a case looks for. */
function rows(store) {
  return store.due(MAX_TIMER_MS, MAX_DUE_LIMIT);
}

/** What the store holds for `ids`, messages and rows: the witness of a refused call. */
async function witness(store, ids) {
  const messages = [];
  for (const id of ids) messages.push(await store.messages(id));
  return { messages, rows: await rows(store) };
}

/** The message ids of listed messages. */
const ids = (list) => list.map((m) => m.messageId);

/** Whether `numbers` strictly increase. */
const increasing = (numbers) => numbers.every((n, i) => i === 0 || numbers[i - 1] < n);

/** Every case: [name, run(store)]. */
const CASES = [];
function kase(name, run) {
  CASES.push({ name, run });
}

// ---------------------------------------------------------------------------
// send.rs: a message round-trips exactly, and a key is stored once.

kase('send::a_send_round_trips_through_pending_and_messages', async (store) => {
  const first = message('a', 'approvals', 'm-1', { ok: true, by: 'ann', nested: { list: [1, 'two', null] }, text: 'é 🕰' }, 7);
  const second = message('a', 'approvals', 'm-0', [1, 2.5, null, 'three']);
  const one = await stored(store, first);
  const two = await stored(store, second);
  assert.ok(two > one, `arrivals increase: ${one} then ${two}`);
  const expected = [listed(first, one), listed(second, two)];
  assert.deepEqual(await allPending(store, 'a', ['approvals']), expected);
  assert.deepEqual(
    await store.messages('a'),
    expected.map((m) => ({ ...m, consumed: false })),
  );
});

kase('send::awkward_names_and_payloads_round_trip', async (store) => {
  const long = 'é'.repeat((MAX_NAME_BYTES - 1) / 2) + 'x';
  assert.equal(Buffer.byteLength(long), MAX_NAME_BYTES);
  const names = ['it\'s "quoted"', "'); DROP TABLE inbox; --", '{"channel": 1}', 'ünïcode 📨', long];
  // u64::MAX has no exact JavaScript number: 2^64 is the nearest.
  const payloads = [null, false, -9_007_199_254_740_991, 2 ** 64, 0.1, 'line\nbreak "quote" \\ tab\t é', { nested: { deeper: [[[{ k: 'v' }]]] }, '': '' }];
  const sent = [];
  for (const name of names) {
    for (const [m, payload] of payloads.entries()) {
      // Each name is a channel, and the id of its first message.
      const messageId = m === 0 ? name : String(m);
      const one = message('awkward', name, messageId, payload, m);
      sent.push(listed(one, await stored(store, one)));
    }
  }
  assert.deepEqual(
    (await store.messages('awkward')).map(({ consumed, ...m }) => m),
    sent,
  );
  assert.deepEqual(await allPending(store, 'awkward', names), sent);
});

kase('send::sending_the_same_key_twice_stores_it_once', async (store) => {
  const first = message('a', 'c', 'm', { n: 1 });
  const arrival = await stored(store, first);
  const before = await rows(store);
  assert.deepEqual(before, [intent(first)], "the first send's intent row");
  const changed = { ...first, payload: { n: 2 }, sentAt: T0 + 60_000 };
  for (const again of [first, changed]) {
    assert.deepEqual(await send(store, again), { duplicate: true, arrival });
  }
  assert.deepEqual(await store.messages('a'), [{ ...listed(first, arrival), consumed: false }], 'the first payload stands');
  assert.deepEqual(await rows(store), before, 'no second intent row');
});

kase('send::the_same_id_on_another_channel_or_execution_is_another_message', async (store) => {
  const here = message('a', 'c', 'm', 1);
  const otherChannel = message('a', 'd', 'm', 2);
  const otherExecution = message('b', 'c', 'm', 3);
  const arrivals = [];
  for (const sent of [here, otherChannel, otherExecution]) arrivals.push(await stored(store, sent));
  assert.ok(increasing(arrivals), `three stored messages, three increasing arrivals: ${arrivals}`);
  assert.equal((await store.messages('a')).length, 2);
  assert.equal((await store.messages('b')).length, 1);
  const { arrival: _, ...listedOther } = (await allPending(store, 'a', ['d']))[0];
  assert.deepEqual(listedOther, otherChannel);
});

// JavaScript edge: the longest names and the largest payload, in one message.
kase('send::the_largest_names_and_payload_are_stored', async (store) => {
  const name = 'é'.repeat((MAX_NAME_BYTES - 1) / 2) + 'x';
  assert.equal(Buffer.byteLength(name), MAX_NAME_BYTES);
  // JSON text of a string is its characters plus two quotes.
  const sent = message('e', name, name, 'y'.repeat(MAX_MESSAGE_BYTES - 2));
  assert.deepEqual(await send(store, sent), { duplicate: false, arrival: 1 });
  assert.deepEqual(await store.pending('e', [name], 1), [listed(sent, 1)]);
});

// ---------------------------------------------------------------------------
// intent.rs: the send's intent row, written in the same step as the message,
// under the timer store's upsert rules.

kase('intent::the_intent_row_is_written_with_the_send', async (store) => {
  assert.deepEqual(await rows(store), []);
  const sent = message('a', 'c', 'm', 'hi');
  // Any intent the caller picks is the one written: here a minute out.
  const row = { executionId: 'a', wakeAt: sent.sentAt + 60_000, redrive: { attempt: 0 } };
  assert.equal((await store.send(sent, row)).duplicate, false);
  assert.deepEqual(await store.due(row.wakeAt, MAX_DUE_LIMIT), [row]);
  assert.deepEqual(await store.due(row.wakeAt - 1, MAX_DUE_LIMIT), [], 'not due before its time');
  assert.deepEqual(await store.due(row.wakeAt, MAX_DUE_LIMIT, { redrive: false }), [], 'the intent is a re-drive row');
});

kase('intent::an_intent_on_a_plain_row_of_its_key_flags_it', async (store) => {
  const sent = message('a', 'c', 'm', 1);
  const row = intent(sent);
  const wake = { executionId: 'a', wakeAt: row.wakeAt };
  const other = { executionId: 'b', wakeAt: row.wakeAt };
  await store.schedule(wake);
  await store.schedule(other);
  await stored(store, sent);
  assert.deepEqual(
    await rows(store),
    [{ ...wake, redrive: { attempt: 0 } }, other],
    "one row for the key, now flagged; the other execution's wake untouched",
  );
  assert.equal((await store.messages('a')).length, 1);
});

kase('intent::an_intent_on_a_redrive_row_carries_its_own_attempt', async (store) => {
  const sent = message('a', 'c', 'm', 1);
  const row = intent(sent);
  await store.schedule({ ...row, redrive: { attempt: 3 } });
  await stored(store, sent);
  assert.deepEqual(await rows(store), [row]);
  await store.schedule({ executionId: 'a', wakeAt: row.wakeAt });
  assert.deepEqual(await rows(store), [row], 'the flag stays');
});

kase('intent::a_duplicate_send_leaves_a_claimed_intent_row_held', async (store) => {
  const sent = message('a', 'c', 'm', 1);
  await stored(store, sent);
  const row = intent(sent);
  const lease = { holder: 'redriver', now: row.wakeAt, durationMs: 30_000 };
  const claims = await store.claimDue(lease, 10);
  assert.deepEqual(claims.map((c) => c.row), [row]);
  assert.equal((await store.send(sent, row)).duplicate, true);
  assert.deepEqual(await store.claimDue({ ...lease, holder: 'rival' }, 10), [], 'the row is still held');
  assert.equal(await store.complete(claims[0]), 'done');
  assert.deepEqual(await rows(store), []);
});

// ---------------------------------------------------------------------------
// pending.rs: one execution's unconsumed messages on the channels asked for,
// in arrival order, at most the limit.

kase('pending::pending_lists_only_the_executions_unconsumed_messages_on_its_channels', async (store) => {
  const sendListed = async (sent) => listed(sent, await stored(store, sent));
  const x1 = await sendListed(message('a', 'x', '1', 'x1'));
  const bX = await sendListed(message('b', 'x', '1', 'b'));
  const y1 = await sendListed(message('a', 'y', '1', 'y1'));
  const z1 = await sendListed(message('a', 'z', '1', 'z1'));
  const x2 = await sendListed(message('a', 'x', '2', 'x2'));
  const abX = await sendListed(message('ab', 'x', '1', 'ab'));
  assert.deepEqual(await allPending(store, 'a', ['x']), [x1, x2]);
  assert.deepEqual(await allPending(store, 'a', ['y', 'x']), [x1, y1, x2], 'arrival order, whatever order the channels are named in');
  assert.deepEqual(await allPending(store, 'a', ['x', 'z', 'x']), [x1, z1, x2]);
  assert.deepEqual(await allPending(store, 'b', ['x']), [bX]);
  assert.deepEqual(await allPending(store, 'ab', ['x', 'y']), [abX]);
  assert.deepEqual(await allPending(store, 'a', ['w']), []);
  assert.deepEqual(await allPending(store, 'A', ['x']), [], 'ids are exact');
  assert.deepEqual(await allPending(store, 'nobody', ['x']), []);
  assert.deepEqual(await allPending(store, 'a', ['X']), [], 'channels are exact');
  assert.deepEqual(await allPending(store, 'a', ['y']), [y1]);
  assert.deepEqual(await allPending(store, 'a', []), [], 'no channels, nothing listed');
  // JavaScript edge: a consumed message leaves every listing it was in.
  assert.equal(await store.markConsumed(keyOf(x1)), true);
  assert.deepEqual(await allPending(store, 'a', ['x', 'y']), [y1, x2]);
});

kase('pending::pending_comes_in_arrival_order_and_stops_at_the_limit', async (store) => {
  const sent = [];
  for (let n = 0; n < 10; n += 1) {
    const one = message('a', 'c', `m-${9 - n}`, n, -n);
    sent.push(listed(one, await stored(store, one)));
  }
  assert.ok(increasing(sent.map((m) => m.arrival)), 'arrivals increase with each send');
  assert.deepEqual(await allPending(store, 'a', ['c']), sent);
  for (const limit of [1, 3, 9, 10, 11]) {
    assert.deepEqual(await store.pending('a', ['c'], limit), sent.slice(0, limit), `limit ${limit}`);
  }
});

// ---------------------------------------------------------------------------
// consume.rs: marking a message consumed, once, and it only leaves the
// listings.

kase('consume::mark_consumed_answers_true_once_then_false', async (store) => {
  const first = message('a', 'c', '1', 1);
  const second = message('a', 'c', '2', 2);
  const one = await stored(store, first);
  const two = await stored(store, second);
  const mark = (key) => store.markConsumed(key);
  assert.equal(await mark(keyOf(first)), true, 'the first mark');
  assert.equal(await mark(keyOf(first)), false, 'already marked');
  assert.equal(await mark({ executionId: 'a', channel: 'c', messageId: '3' }), false, 'never sent');
  assert.equal(await mark({ executionId: 'a', channel: 'd', messageId: '1' }), false, 'another channel');
  assert.equal(await mark({ executionId: 'b', channel: 'c', messageId: '1' }), false, 'another execution');
  assert.deepEqual(await allPending(store, 'a', ['c']), [listed(second, two)]);
  assert.deepEqual(await store.messages('a'), [
    { ...listed(first, one), consumed: true },
    { ...listed(second, two), consumed: false },
  ]);
  assert.deepEqual(await store.messages('b'), [], 'a mark creates nothing');
  assert.equal(await mark(keyOf(second)), true);
  assert.deepEqual(await allPending(store, 'a', ['c']), []);
});

kase('consume::a_consumed_key_sent_again_is_still_a_duplicate', async (store) => {
  const sent = message('a', 'c', '1', 1);
  const arrival = await stored(store, sent);
  assert.equal(await store.markConsumed(keyOf(sent)), true);
  assert.deepEqual(await send(store, sent), { duplicate: true, arrival });
  assert.deepEqual(await allPending(store, 'a', ['c']), []);
  assert.equal((await store.messages('a'))[0].consumed, true);
});

// ---------------------------------------------------------------------------
// purge.rs: an execution's messages go with its retention, and only its.

kase('purge::purge_deletes_only_that_executions_messages', async (store) => {
  for (const [execution, channel, messageId] of [
    ['a', 'x', '1'],
    ['a', 'x', '2'],
    ['a', 'y', '1'],
    ['ab', 'x', '1'],
    ['b', 'x', '1'],
  ]) {
    await stored(store, message(execution, channel, messageId, null));
  }
  assert.equal(await store.markConsumed({ executionId: 'a', channel: 'x', messageId: '1' }), true);
  const keptAb = await store.messages('ab');
  const keptB = await store.messages('b');
  const before = await rows(store);
  assert.equal(await store.purge('a'), 3);
  assert.deepEqual(await store.messages('a'), []);
  assert.deepEqual(await allPending(store, 'a', ['x', 'y']), []);
  assert.deepEqual(await store.messages('ab'), keptAb);
  assert.deepEqual(await store.messages('b'), keptB);
  assert.deepEqual(await rows(store), before, 'timer rows are not messages');
  assert.equal(await store.purge('a'), 0);
  assert.equal(await store.purge('nobody'), 0);
});

kase('purge::a_key_sent_after_a_purge_is_stored_anew', async (store) => {
  const before = message('a', 'c', 'm', 'before');
  const first = await stored(store, before);
  assert.equal(await store.markConsumed(keyOf(before)), true);
  assert.equal(await store.purge('a'), 1);
  const after = { ...before, payload: 'after', sentAt: T0 + 1 };
  const answer = await send(store, after);
  assert.equal(answer.duplicate, false, 'a purged key is stored anew');
  assert.ok(answer.arrival > first, `arrival ${answer.arrival} after ${first}`);
  assert.deepEqual(await allPending(store, 'a', ['c']), [listed(after, answer.arrival)], 'unconsumed, with the new payload');
});

// ---------------------------------------------------------------------------
// bad_input.rs: every refusal is a TimerInputError with the code the core's
// check maps to, and it leaves the inbox and the timer rows as they were.

/** The executions the witnesses watch. */
const WATCHED = ['a', 'b'];

/** Names a key must not have: empty, one byte too long, a NUL. */
const BAD_NAMES = ['', 'n'.repeat(MAX_NAME_BYTES + 1), 'nul\0here'];

kase('bad_input::bad_messages_are_refused_and_change_nothing', async (store) => {
  const good = message('a', 'c', 'm', { n: 1 });
  await stored(store, good);
  const before = await witness(store, WATCHED);
  const bad = [];
  for (const name of BAD_NAMES) {
    bad.push([{ ...good, channel: name }, 'INVALID_MESSAGE', `channel ${JSON.stringify(name.slice(0, 9))}`]);
    bad.push([{ ...good, messageId: name }, 'INVALID_MESSAGE', `messageId ${JSON.stringify(name.slice(0, 9))}`]);
  }
  // Exactly one byte over: the quotes count.
  bad.push([{ ...good, payload: 'x'.repeat(MAX_MESSAGE_BYTES - 1) }, 'INVALID_LIMIT', 'a payload one byte over']);
  for (const payload of [{ text: 'a\0b' }, { 'k\0ey': 1 }, ['deep', ['\0']]]) {
    bad.push([{ ...good, payload }, 'INVALID_MESSAGE', `a NUL in ${JSON.stringify(payload)}`]);
  }
  for (const sentAt of [-1, MAX_TIMER_MS + 1, -(2 ** 63)]) {
    bad.push([{ ...good, sentAt }, 'INVALID_TIME', `sentAt ${sentAt}`]);
  }
  // A well-formed intent, so only the message is at fault; the key is
  // stored already, and a bad resend is still no duplicate.
  const row = { executionId: 'a', wakeAt: 5_000, redrive: { attempt: 0 } };
  for (const [sent, code, what] of bad) await assertTimerInput(store.send(sent, row), code, what);
  assert.deepEqual(await witness(store, WATCHED), before, 'the inbox changed after bad messages');
  // A payload of exactly the limit is taken.
  await stored(store, { ...good, messageId: 'largest', payload: 'x'.repeat(MAX_MESSAGE_BYTES - 2) });
  assert.equal((await allPending(store, 'a', ['c'])).length, 2);
});

kase('bad_input::bad_intent_rows_are_refused_and_change_nothing', async (store) => {
  await stored(store, message('b', 'c', 'kept', 1));
  const before = await witness(store, WATCHED);
  const fresh = message('a', 'c', 'm', 1);
  for (const [row, code] of [
    [{ executionId: 'a', wakeAt: -1, redrive: { attempt: 0 } }, 'INVALID_TIME'],
    [{ executionId: 'a', wakeAt: MAX_TIMER_MS + 1, redrive: { attempt: 0 } }, 'INVALID_TIME'],
    [{ executionId: 'a', wakeAt: -(2 ** 63) }, 'INVALID_TIME'],
    [{ executionId: 'a', wakeAt: 5_000, redrive: { attempt: MAX_REDRIVE_ATTEMPT + 1 } }, 'INVALID_ATTEMPT'],
  ]) {
    await assertTimerInput(store.send(fresh, row), code, `intent ${JSON.stringify(row)}`);
  }
  assert.deepEqual(await witness(store, WATCHED), before, 'the inbox changed after bad intent rows');
  await stored(store, fresh);
  const after = await rows(store);
  assert.equal(after.length, 2, 'the good send wrote its intent row');
  assert.ok(after.some((r) => JSON.stringify(r) === JSON.stringify(intent(fresh))), JSON.stringify(after));
});

kase('bad_input::bad_listings_and_marks_are_refused_and_change_nothing', async (store) => {
  const sent = message('a', 'c', 'm', 1);
  await stored(store, sent);
  const before = await witness(store, WATCHED);
  const listings = [0, MAX_PENDING_LIMIT + 1, Number.MAX_SAFE_INTEGER].map((limit) => [['c'], limit, 'INVALID_LIMIT']);
  for (const name of BAD_NAMES) listings.push([['c', name], 10, 'INVALID_MESSAGE']);
  listings.push([Array(MAX_PENDING_LIMIT + 1).fill('c'), 10, 'INVALID_LIMIT']);
  for (const [names, limit, code] of listings) {
    await assertTimerInput(store.pending('a', names, limit), code, `${names.length} channels, limit ${limit}`);
  }
  for (const name of BAD_NAMES) {
    for (const key of [{ executionId: 'a', channel: name, messageId: 'm' }, { executionId: 'a', channel: 'c', messageId: name }]) {
      await assertTimerInput(store.markConsumed(key), 'INVALID_MESSAGE', `a mark of ${JSON.stringify(key).slice(0, 60)}`);
    }
  }
  assert.deepEqual(await witness(store, WATCHED), before, 'the inbox changed after bad listings and marks');
  assert.equal((await allPending(store, 'a', ['c'])).length, 1);
  assert.equal(await store.markConsumed(keyOf(sent)), true);
});

// JavaScript edge: values of the wrong type or shape, which Rust's types rule
// out, refused with their codes and changing nothing.
kase('input::javascript_values_of_the_wrong_shape_are_refused_and_change_nothing', async (store) => {
  const good = message('e', 'c', 'm');
  await send(store, good);
  const before = await witness(store, ['e', 'x']);
  const refusals = [
    [store.send({ ...good, messageId: 'new', channel: 7 }, intent(good)), 'INVALID_MESSAGE', 'a channel that is not a string'],
    [store.send({ ...good, messageId: 'new', sentAt: 1.5 }, intent(good)), 'INVALID_TIME', 'a sentAt that is not an integer'],
    [store.send({ ...good, messageId: 'new', extra: 1 }, intent(good)), 'INVALID_MESSAGE', 'an unknown field'],
    [store.send({ ...good, messageId: 'new', executionId: '' }, intent(good)), 'INVALID_ID', 'an empty execution id'],
    [store.send('message', intent(good)), 'INVALID_MESSAGE', 'a message that is not an object'],
    [store.pending('e', 'c', 10), 'INVALID_MESSAGE', 'channels that are not an array'],
    [store.pending(5, ['c'], 10), 'INVALID_ID', 'an id that is not a string'],
    [store.markConsumed({ executionId: 'e', channel: 'c' }), 'INVALID_MESSAGE', 'a key without its id'],
    [store.purge(''), 'INVALID_ID', 'purge of an empty id'],
    [store.messages(null), 'INVALID_ID', 'messages of null'],
  ];
  for (const [promise, code, what] of refusals) await assertTimerInput(promise, code, what);
  assert.deepEqual(await witness(store, ['e', 'x']), before, 'nothing changed');
  assert.deepEqual(await send(store, message('e', 'c', 'after')), { duplicate: false, arrival: 2 }, 'the store is still usable');
});

// ---------------------------------------------------------------------------
// concurrency.rs: one key is stored once, and distinct messages on one
// channel all arrive, in an order every listing agrees on. JavaScript has
// one thread: the sends are started together and interleave at every await
// (the yielding view makes every call one).

/** Senders at once. */
const SENDERS = 16;
/** Rounds of the same-key race, each on a fresh execution. */
const ROUNDS = 8;

kase('concurrency::sixteen_senders_of_one_key_store_it_once', async (store) => {
  for (let round = 0; round < ROUNDS; round += 1) {
    const execution = `race-${round}`;
    const sent = Array.from({ length: SENDERS }, (_, n) => message(execution, 'c', 'same', n, n));
    const answers = await Promise.all(sent.map((one) => send(store, one)));
    const winners = answers.flatMap((a, n) => (a.duplicate ? [] : [n]));
    assert.equal(winners.length, 1, `round ${round}: ${JSON.stringify(answers)}`);
    const [winner] = winners;
    const { arrival } = answers[winner];
    for (const [n, answer] of answers.entries()) {
      if (n !== winner) assert.deepEqual(answer, { duplicate: true, arrival }, `round ${round}`);
    }
    const kept = await store.messages(execution);
    assert.deepEqual(kept, [{ ...listed(sent[winner], arrival), consumed: false }], `round ${round}: the winner's message`);
    const intents = (await rows(store)).filter((row) => row.executionId === execution);
    assert.deepEqual(intents, [intent(sent[winner])], `round ${round}: the winner's intent row only`);
  }
});

kase('concurrency::sixteen_senders_on_one_channel_all_arrive_in_order', async (store) => {
  const sent = Array.from({ length: SENDERS }, (_, n) => message('a', 'c', `m-${String(n).padStart(2, '0')}`, n));
  const answers = await Promise.all(sent.map((one) => send(store, one)));
  assert.ok(answers.every((a) => !a.duplicate), `distinct keys are all stored: ${JSON.stringify(answers)}`);
  const list = await allPending(store, 'a', ['c']);
  assert.equal(list.length, SENDERS);
  assert.ok(increasing(list.map((m) => m.arrival)), `strictly increasing arrivals: ${list.map((m) => m.arrival)}`);
  for (const one of list) {
    assert.deepEqual(one, listed(sent[one.payload], answers[one.payload].arrival), 'the arrival its send answered');
  }
  assert.equal(new Set(list.map((m) => m.payload)).size, SENDERS, "every sender's message, once");
});

// ---------------------------------------------------------------------------
// model.rs: the store against the core's InboxTable and TimerTable (the
// package's MemoryTimerStore), call for call: a thousand seeded random sends,
// resends, marks, purges and listings, every answer compared. Arrival
// numbers are the store's to hand out, so each of the reference's numbers is
// mapped to the store's as messages are stored, and the store is held to the
// same order: every stored message gets a number above all it handed out
// before, and every listing, mapped, is the reference's.

/** Calls per run. */
const STEPS = 1_000;
const MODEL_EXECUTIONS = ['a', 'b', 'é'];
const MODEL_CHANNELS = ['x', 'y', 'z z'];
const MODEL_IDS = ['1', '2', '3', '4'];

/** The model run's seed, printed; SIM_SEED replays it. */
export const MODEL_SEED = Number(process.env.SIM_SEED ?? 0x14b0c);

kase('model::agrees_with_the_reference_table_call_for_call', async (store) => {
  console.log(`inbox-kit.js model: SIM_SEED=${MODEL_SEED} (replay: cd tests/conformance-js && SIM_SEED=${MODEL_SEED} node --test inbox-kit.test.js)`);
  const reference = new MemoryTimerStore();
  const random = prng(MODEL_SEED);
  const below = (n) => Math.floor(random() * n);
  const pick = (items) => items[below(items.length)];
  /** Reference arrival -> store arrival, and the highest the store handed out. */
  const map = new Map();
  let last = 0;
  const of = (step, arrival) => {
    assert.ok(map.has(arrival), `step ${step}: the reference's arrival ${arrival} is unmapped`);
    return map.get(arrival);
  };
  const mapped = (step, list) => list.map((m) => ({ ...m, arrival: of(step, m.arrival) }));
  const compareMessages = async (step, execution) => {
    const expected = mapped(step, await reference.messages(execution));
    assert.deepEqual(await store.messages(execution), expected, `step ${step}: messages(${execution})`);
  };
  const key = () => ({ executionId: pick(MODEL_EXECUTIONS), channel: pick(MODEL_CHANNELS), messageId: pick(MODEL_IDS) });
  // JavaScript edge: now and then a payload with a '__proto__' own key, as JSON carries it.
  const payload = (step) => (below(8) === 0 ? JSON.parse(`{"__proto__": {"step": ${step}}, "tag": [null, "é"]}`) : { step, tag: pick(MODEL_IDS) });
  for (let step = 0; step < STEPS; step += 1) {
    const choice = below(10);
    if (choice <= 3) {
      const sent = { ...key(), payload: payload(step), sentAt: T0 + below(5) * 1_000 };
      const expected = await send(reference, sent);
      const got = await send(store, sent);
      assert.equal(got.duplicate, expected.duplicate, `step ${step}: send ${JSON.stringify(keyOf(sent))}: ${JSON.stringify(got)}, not ${JSON.stringify(expected)}`);
      if (expected.duplicate) {
        assert.equal(got.arrival, of(step, expected.arrival), `step ${step}`);
      } else {
        assert.ok(got.arrival > last, `step ${step}: arrival ${got.arrival} is not above ${last}`);
        last = got.arrival;
        map.set(expected.arrival, got.arrival);
      }
    } else if (choice <= 5) {
      const execution = pick(MODEL_EXECUTIONS);
      const names = Array.from({ length: 1 + below(3) }, () => pick(['x', 'y', 'z z', 'w']));
      const limit = 1 + below(4);
      const expected = mapped(step, await reference.pending(execution, names, limit));
      assert.deepEqual(await store.pending(execution, names, limit), expected, `step ${step}: pending(${execution}, ${JSON.stringify(names)}, ${limit})`);
    } else if (choice <= 7) {
      const k = key();
      assert.equal(await store.markConsumed(k), await reference.markConsumed(k), `step ${step}: markConsumed(${JSON.stringify(k)})`);
    } else if (choice === 8) {
      await compareMessages(step, pick(MODEL_EXECUTIONS));
    } else if (below(3) === 0) {
      // Purges are rarer than the rest, so the inbox fills.
      const execution = pick(MODEL_EXECUTIONS);
      assert.equal(await store.purge(execution), await reference.purge(execution), `step ${step}: purge(${execution})`);
    }
  }
  for (const execution of MODEL_EXECUTIONS) await compareMessages(STEPS, execution);
  assert.deepEqual(await rows(store), await rows(reference), 'the intent rows');
  assert.ok(map.size > MODEL_EXECUTIONS.length * MODEL_CHANNELS.length * MODEL_IDS.length, `some keys were stored again after a purge: ${map.size} stored`);
});

/** Every case's name. */
export const INBOX_CASE_NAMES = Object.freeze(CASES.map((c) => c.name));

/** Runs every case against fresh stores from `make`. */
export function inboxConformance(label, make) {
  describe(`inbox conformance: ${label}`, () => {
    for (const { name, run } of CASES) {
      test(name, () => run(make()));
    }
  });
}
