// A hand-written, pure-JavaScript event store and resume: what a JavaScript
// host writes for itself before it adopts `loomfence`, and the yardstick the
// package is measured against in park-resume.js. NOT part of the package and
// NOT a conformance-tested store (tests/conformance-js/plain-store.js is that):
// it does what D1 and D2 ask on the bench's workload, in the most direct
// JavaScript, and checks nothing a well-behaved caller would not get wrong.
//
// - The store: a Map of arrays (index = sequence - 1) and a Map of tokens,
//   `structuredClone` on the way in and out so a caller never shares an
//   object with the log. Each method is one synchronous run, so it is atomic
//   against every other call in flight.
// - D1: the append guard (one decision per batch: a token below the current
//   one is stale; an unfenced batch with an answering event is refused once
//   the execution is fenced) and `acquireFenceIf` (bump only if the token is
//   the expected one and nothing answered the park since).
// - D2: `resume` reads the log, checks the park is the open one, takes the
//   token last (`acquireFenceIf` with the park's own token), re-reads the
//   tail, and lands the resume with `appendIfParked`; a stale answer re-reads
//   and retries on the store's token, three attempts in all.

import { ANSWERING_KINDS, IGNORABLE_KINDS } from '../../tests/conformance-js/support.js';

// The design's kind table (docs/design.md), as the conformance kit states it.
const ANSWERING = new Set(ANSWERING_KINDS);
const IGNORABLE = new Set(IGNORABLE_KINDS);
const PARK = 'EXECUTION_SUSPENDED';
const MAX_ATTEMPTS = 3;

/** D1's allow-list: a kernel kind by the table, any other kind only when it
 * is stamped `metadata.kernel: true`. */
const answers = (event) => ANSWERING.has(event.kind) || (!IGNORABLE.has(event.kind) && event.metadata?.kernel === true);

export class StaleFence extends Error {}
export class Refused extends Error {}
export class Contended extends Error {}

export class PureJsStore {
  #logs = new Map();
  #fences = new Map();

  #answeredAfter(id, parkSeq) {
    const log = this.#logs.get(id) ?? [];
    if (log[parkSeq - 1]?.kind !== PARK) return true;
    for (let i = parkSeq; i < log.length; i++) if (answers(log[i])) return true;
    return false;
  }

  #write(id, events) {
    const current = this.#fences.get(id) ?? 0;
    const token = events[0].metadata?.fence;
    if (token === undefined ? current > 0 && events.some(answers) : token < current) {
      throw new StaleFence(`${id}: token ${token} is stale, the current one is ${current}`);
    }
    let log = this.#logs.get(id);
    if (!log) this.#logs.set(id, (log = []));
    return events.map(({ kind, payload = {}, metadata = {}, at }) => {
      const envelope = structuredClone({ executionId: id, sequence: log.length + 1, kind, payload, metadata, at });
      log.push(envelope);
      return structuredClone(envelope);
    });
  }

  async append(id, event) {
    return this.#write(id, [event])[0];
  }

  async appendIfParked(id, parkSeq, events) {
    return this.#answeredAfter(id, parkSeq) ? { parkAnswered: true } : this.#write(id, events);
  }

  async readRange(id, fromSeq = 1, toSeq = Infinity) {
    return (this.#logs.get(id) ?? []).slice(fromSeq - 1, toSeq).map((e) => structuredClone(e));
  }

  async currentFence(id) {
    return this.#fences.get(id) ?? 0;
  }

  async acquireFenceIf(id, { fence, parkSeq }) {
    const current = this.#fences.get(id) ?? 0;
    if (current !== fence || this.#answeredAfter(id, parkSeq)) return { stale: true, fence: current };
    this.#fences.set(id, current + 1);
    return { fence: current + 1 };
  }
}

/** The open park: the newest park with no answering event after it. */
export function pureLocatePark(log) {
  for (let i = log.length - 1; i >= 0; i--) {
    if (log[i].kind === PARK) return log[i];
    if (answers(log[i])) return null;
  }
  return null;
}

/** D2: resolves to `{ fence, resumed }`, or rejects with `Refused` (the park
 * is not the open one; nothing written) or `Contended` (three stale tries). */
export async function pureResume(store, id, { fenceIfParkedAt: parkSeq, answer, at }) {
  let log = await store.readRange(id);
  let expect = log[parkSeq - 1]?.metadata?.fence ?? 0;
  for (let attempt = 1; ; attempt++) {
    if (pureLocatePark(log)?.sequence !== parkSeq) throw new Refused(`${id}: not suspended at ${parkSeq}`);
    const acquired = await store.acquireFenceIf(id, { fence: expect, parkSeq });
    if (!acquired.stale) {
      log = log.concat(await store.readRange(id, log.length + 1));
      if (pureLocatePark(log)?.sequence !== parkSeq) throw new Refused(`${id}: answered under the acquire`);
      const event = { kind: 'EXECUTION_RESUMED', payload: { answer }, metadata: { fence: acquired.fence, kernel: true }, at };
      try {
        const stored = await store.appendIfParked(id, parkSeq, [event]);
        if (stored.parkAnswered) throw new Refused(`${id}: answered under the append`);
        return { fence: acquired.fence, resumed: stored[0] };
      } catch (error) {
        if (!(error instanceof StaleFence)) throw error;
        expect = await store.currentFence(id);
      }
    } else {
      expect = acquired.fence;
    }
    if (attempt === MAX_ATTEMPTS) throw new Contended(`${id}: ${MAX_ATTEMPTS} attempts, all stale`);
    log = log.concat(await store.readRange(id, log.length + 1));
  }
}
