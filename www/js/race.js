// The race, on the real package, in the page: `resumers` nodes each try to
// resume every one of `parks` parked executions on one MemoryEventStore, as
// the CLI's `loomfence race` does (cli/src/race.rs, cli/src/resumer.rs):
//
// - each resumer walks the executions in its own seeded order, reads the log,
//   finds the open park and calls the package's `resume` with
//   `fenceIfParkedAt` (the conditional acquire), or, in the unconditional
//   control, through a store that offers only `acquireFence` (the
//   fencing-only path, as `race --unconditional`);
// - a crash is decided up front per attempt (crash rate): right after an
//   acquire that won (the node dies holding a token) or right before the
//   resume's append;
// - `deadAcquirers` K: right before each of the first K acquires of every
//   racing resume, a node that read the same log takes the token with the
//   same expectation and dies without appending;
// - a resume that lands runs a body: BODY_STEPS STEP_COMPLETED and an
//   EXECUTION_COMPLETED, all under the resume's token; a stale refusal of one
//   of its appends means its body was fenced out;
// - a resume that ends contended writes a re-drive row (conditional mode, as
//   the CLI turns re-drive off for --unconditional), which the package's
//   TimerService (over a MemoryTimerStore) hands to a re-driver that
//   re-derives the resume from the log and runs the same body.
//
// Interleaving: every store call first waits for its turn from a seeded
// scheduler, which releases one waiting call at a time and lets it run to its
// next store call. The memory store settles at once, so between two turns
// only microtasks run: the same seed gives the same interleaving, the same
// decisions and the same logs. The clock is virtual (one ms per turn).
//
// The counters are read from the logs at the end (`verify`), not counted by
// the actors: what the store holds is the verdict.

import { shuffle, streamOf } from './prng.js';

export const BODY_STEPS = 3;
/** The virtual clock's start, ms. */
const T0 = 1_767_225_600_000;
/** The race's re-drive schedule: the CLI's (20 ms doubling to 1 s, 8 tries). */
const POLICY = { baseMs: 20, capMs: 1000, maxAttempts: 8 };
/** Turns before a run is declared stuck. */
const MAX_TURNS = 200_000;

/** What a crashed node throws out of its store call (and so out of `resume`). */
class Crash extends Error {
  constructor(where) {
    super(`crashed ${where}`);
    this.name = 'Crash';
    this.where = where;
  }
}

// A macrotask that does not get clamped like a nested setTimeout(0).
const channel = new MessageChannel();
const wakers = [];
channel.port1.onmessage = () => wakers.shift()();
const macrotask = () =>
  new Promise((resolve) => {
    wakers.push(resolve);
    channel.port2.postMessage(0);
  });

/** The seeded scheduler: one store call at a time, chosen by `random`. */
class Scheduler {
  constructor(random) {
    this.random = random;
    this.waiting = [];
    this.now = T0;
    this.turns = 0;
  }

  /** Resolves when the scheduler gives the caller its turn. */
  turn() {
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Runs `tasks` (async functions) to the end, one turn at a time;
   * `onTurn` is awaited after each turn (rendering, pacing). */
  async run(tasks, onTurn) {
    const failures = [];
    let live = tasks.length;
    for (const task of tasks) {
      (async () => {
        await this.turn();
        await task();
      })()
        .catch((error) => failures.push(error))
        .finally(() => {
          live -= 1;
        });
    }
    for (;;) {
      // Every microtask has run: each task waits for a turn, or has ended.
      await macrotask();
      if (failures.length > 0) throw failures[0];
      if (this.waiting.length === 0) break;
      if (++this.turns > MAX_TURNS) throw new Error(`the race did not end within ${MAX_TURNS} turns`);
      const [next] = this.waiting.splice(Math.floor(this.random() * this.waiting.length), 1);
      this.now += 1;
      next();
      await onTurn();
    }
    if (live > 0) throw new Error(`${live} task(s) stuck outside the scheduler`);
  }
}

/**
 * Runs one race. `pkg` is the package's browser module; `settings`:
 * { seed, resumers, parks, crashRate, deadAcquirers, unconditional };
 * `onTurn(race)` is awaited after every turn.
 * Resolves to the race (see `Race`), with `counters` filled from the logs.
 */
export async function runRace(pkg, settings, onTurn = async () => {}) {
  const race = new Race(pkg, settings);
  await race.setUp();
  await race.scheduler.run(race.tasks(), () => onTurn(race));
  race.done = true;
  race.counters = await race.verify();
  // Every task has ended: give the wasm objects' memory back.
  race.store.free();
  race.timers.free();
  race.policy.free();
  return race;
}

/**
 * The first seed from `settings.seed` on (trying at most `limit`, one after
 * another, wrapping at 2^32) whose race, run at once without drawing,
 * satisfies `wanted(counters)`: { seed, race }, or null when none does. The
 * same start gives the same answer, as a seed gives the same race.
 */
export async function findSeed(pkg, settings, wanted, limit) {
  for (let i = 0; i < limit; i++) {
    const seed = (settings.seed + i) >>> 0;
    const race = await runRace(pkg, { ...settings, seed });
    if (race.failures.length === 0 && wanted(race.counters.counters)) return { seed, race };
  }
  return null;
}

export class Race {
  constructor(pkg, settings) {
    this.pkg = pkg;
    this.settings = settings;
    this.scheduler = new Scheduler(streamOf(settings.seed, 1000));
    this.store = new pkg.MemoryEventStore();
    this.timers = new pkg.MemoryTimerStore();
    this.policy = new pkg.RedrivePolicy(POLICY);
    this.redrive = !settings.unconditional;
    this.ids = [];
    /** Per execution, what happened to it, in order: writes and sightings. */
    this.journal = new Map();
    /** Executions whose body is running, by id: a count. */
    this.running = new Map();
    /** Racing resumers still going. */
    this.resumersLeft = settings.resumers;
    this.done = false;
    this.counters = null;
    this.failures = [];
  }

  note(id, entry) {
    this.journal.get(id).push({ at: this.scheduler.now, ...entry });
  }

  async setUp() {
    const width = String(this.settings.parks).length;
    for (let i = 0; i < this.settings.parks; i++) {
      const id = `race-${String(i).padStart(width, '0')}`;
      this.ids.push(id);
      this.journal.set(id, []);
      const written = await this.store.appendMany(id, [
        { kind: 'EXECUTION_STARTED', at: T0 },
        { kind: 'EXECUTION_SUSPENDED', payload: { waits: [{ kind: 'MESSAGE', channel: 'race' }] }, at: T0 },
      ]);
      for (const envelope of written) this.note(id, { type: 'write', actor: 'set-up', seq: envelope.sequence });
    }
  }

  tasks() {
    const tasks = [];
    for (let index = 0; index < this.settings.resumers; index++) tasks.push(() => this.resumer(index));
    if (this.redrive) tasks.push(() => this.service());
    return tasks;
  }

  /**
   * The store as one node sees it: every call waits for its turn first, and
   * what it meets is noted in the journal. `plan`: { dead, crash }.
   */
  view(actor, plan = { dead: 0, crash: null }) {
    const { store, scheduler } = this;
    const turn = () => scheduler.turn();
    const isStale = (error) => error?.name === 'StaleFenceError';
    let acquires = 0;
    let holding = null;
    const acquired = (id, fence) => {
      holding = fence;
      this.note(id, { type: 'acquired', actor, fence });
      if (plan.crash === 'afterAcquire') {
        this.note(id, { type: 'crash', actor, fence, where: 'right after acquiring' });
        throw new Crash('after acquire');
      }
    };
    const view = {
      readRange: async (id, from, to) => {
        await turn();
        return store.readRange(id, from, to);
      },
      append: async (id, event) => {
        await turn();
        try {
          const envelope = await store.append(id, event);
          this.note(id, { type: 'write', actor, seq: envelope.sequence });
          return envelope;
        } catch (error) {
          if (isStale(error)) this.note(id, { type: 'fencedOut', actor, fence: event.metadata?.fence, current: error.current, kind: event.kind });
          throw error;
        }
      },
      appendIfParked: async (id, parkSeq, events) => {
        await turn();
        if (plan.crash === 'beforeAppend') {
          this.note(id, { type: 'crash', actor, fence: holding, where: 'right before its append' });
          throw new Crash('before append');
        }
        try {
          const written = await store.appendIfParked(id, parkSeq, events);
          if (Array.isArray(written)) {
            for (const envelope of written) this.note(id, { type: 'write', actor, seq: envelope.sequence });
          } else {
            this.note(id, { type: 'answered', actor, fence: holding });
          }
          return written;
        } catch (error) {
          if (isStale(error)) this.note(id, { type: 'stale', actor, fence: holding, current: error.current, where: 'append' });
          throw error;
        }
      },
    };
    if (this.settings.unconditional) {
      view.acquireFence = async (id) => {
        if (acquires < plan.dead) {
          await turn();
          const fence = await store.acquireFence(id);
          this.note(id, { type: 'dead', actor, fence });
        }
        acquires += 1;
        await turn();
        const fence = await store.acquireFence(id);
        acquired(id, fence);
        return fence;
      };
    } else {
      view.acquireFenceIf = async (id, expect) => {
        if (acquires < plan.dead) {
          await turn();
          const dead = await store.acquireFenceIf(id, expect);
          this.note(id, dead.stale ? { type: 'deadRefused', actor, current: dead.fence } : { type: 'dead', actor, fence: dead.fence });
        }
        acquires += 1;
        await turn();
        const answer = await store.acquireFenceIf(id, expect);
        if (answer.stale) this.note(id, { type: 'stale', actor, fence: expect.fence, current: answer.fence, where: 'acquire' });
        else acquired(id, answer.fence);
        return answer;
      };
    }
    return view;
  }

  /** One racing node: tries every execution once, in its own order. */
  async resumer(index) {
    const { pkg, settings } = this;
    const random = streamOf(settings.seed, index);
    const actor = `R${index}`;
    try {
      for (const id of shuffle(this.ids, random)) {
        const crash = random() < settings.crashRate ? (random() < 0.5 ? 'afterAcquire' : 'beforeAppend') : null;
        const view = this.view(actor, { dead: settings.deadAcquirers, crash });
        const log = await view.readRange(id);
        // No open park: still name the one set up, as a node holding a
        // stale wake-up would, and let resume refuse it.
        const parkSeq = pkg.locatePark(log)?.sequence ?? 2;
        let resumed;
        try {
          resumed = await pkg.resume(view, id, { fenceIfParkedAt: parkSeq, answer: { resumer: index }, at: this.scheduler.now });
        } catch (error) {
          if (error instanceof Crash) continue;
          if (error instanceof pkg.ResumeRefusedError) {
            this.note(id, { type: 'refused', actor, reason: error.reason });
            continue;
          }
          if (error instanceof pkg.ResumeContendedError) {
            this.note(id, { type: 'contended', actor, attempts: error.attempts });
            if (this.redrive) await this.scheduleRedrive(id, random());
            continue;
          }
          throw error;
        }
        this.note(id, { type: 'won', actor, fence: resumed.fence, attempts: resumed.attempts });
        await this.body(view, actor, id, resumed);
      }
    } finally {
      this.resumersLeft -= 1;
    }
  }

  /** The first re-drive row of a contended park, as the child supervisor writes it. */
  async scheduleRedrive(id, draw) {
    const now = this.scheduler.now;
    const wakeAt = this.pkg.redriveWakeAt(now, this.policy.delayMs(0, draw), now);
    await this.timers.schedule({ executionId: id, wakeAt, redrive: { attempt: 0 } });
    this.note(id, { type: 'redriveRow', actor: 'supervisor', wakeAt });
  }

  /** A resumed body: steps, then the completion, under the resume's token. */
  async body(view, actor, id, resumed) {
    const fence = resumed.fence;
    this.running.set(id, (this.running.get(id) ?? 0) + 1);
    try {
      for (let step = 0; step <= BODY_STEPS; step++) {
        const at = this.scheduler.now;
        const event =
          step < BODY_STEPS
            ? { kind: 'STEP_COMPLETED', payload: { step, by: actor }, metadata: { fence }, at }
            : { kind: 'EXECUTION_COMPLETED', payload: { output: { by: actor } }, metadata: { fence }, at };
        try {
          await view.append(id, event);
        } catch (error) {
          if (error?.name === 'StaleFenceError') return;
          throw error;
        }
      }
    } finally {
      this.running.set(id, this.running.get(id) - 1);
    }
  }

  /** The timer service beside the race, until no re-drive row is left. */
  async service() {
    const { pkg } = this;
    const service = new pkg.TimerService({
      events: this.view('timer service'),
      timers: this.timers,
      node: 'demo-node',
      now: () => this.scheduler.now,
      random: streamOf(this.settings.seed, 2000),
      policy: POLICY,
      onError: (error, info) => {
        const id = info.row?.executionId;
        if (info.stage === 'exhausted' && id) this.note(id, { type: 'exhausted', actor: 're-driver' });
        else this.failures.push(`timer service, ${info.stage}: ${error?.message ?? error}`);
      },
    });
    service.registerRedriver(async (id) => {
      const view = this.view('re-driver');
      const park = pkg.locatePark(await view.readRange(id));
      if (!park) {
        this.note(id, { type: 'noop', actor: 're-driver' });
        return 'noop';
      }
      let resumed;
      try {
        resumed = await pkg.resume(view, id, { fenceIfParkedAt: park.sequence, answer: { redrive: true }, at: this.scheduler.now });
      } catch (error) {
        if (error instanceof pkg.ResumeRefusedError) {
          this.note(id, { type: 'noop', actor: 're-driver' });
          return 'noop';
        }
        if (error instanceof pkg.ResumeContendedError) {
          this.note(id, { type: 'contended', actor: 're-driver', attempts: error.attempts });
          return 'contended';
        }
        throw error;
      }
      this.note(id, { type: 'won', actor: 're-driver', fence: resumed.fence, attempts: resumed.attempts });
      await this.body(view, 're-driver', id, resumed);
      return 'done';
    });
    for (;;) {
      await this.scheduler.turn();
      const report = await service.pollOnce();
      const left = await this.timers.due(Number.MAX_SAFE_INTEGER, 1);
      if (this.resumersLeft === 0 && left.length === 0) return;
      // Nothing due yet: let virtual time pass.
      if (report.claimed === 0) this.scheduler.now += 5;
    }
  }

  /**
   * The verdict, from what the store holds, as the CLI's check reads it:
   * per execution, its resumes; a resume whose body never completed under
   * its token (once no body is running) was fenced out; a resume carrying
   * the re-driver's answer was re-driven. `contended` cannot be read from a
   * log (a contended resume writes nothing): it is the racing resumes that
   * ended ResumeContendedError, as the CLI's tally counts it.
   */
  async verify() {
    const counters = { resumed: 0, double_resumes: 0, fenced_out: 0, contended: 0, redriven: 0, completed: 0, still_parked: 0 };
    const executions = [];
    for (const id of this.ids) {
      const log = await this.store.readRange(id);
      const resumes = log.filter((e) => e.kind === 'EXECUTION_RESUMED');
      const running = (this.running.get(id) ?? 0) > 0;
      const fencedOut = running
        ? []
        : resumes.filter((r) => !log.some((e) => e.kind === 'EXECUTION_COMPLETED' && e.sequence > r.sequence && e.metadata.fence === r.metadata.fence));
      const redriven = resumes.some((r) => r.payload.answer?.redrive === true);
      const completed = log.some((e) => e.kind === 'EXECUTION_COMPLETED');
      counters.resumed += resumes.length >= 1 ? 1 : 0;
      counters.double_resumes += resumes.length > 1 ? 1 : 0;
      counters.fenced_out += fencedOut.length;
      counters.redriven += redriven ? 1 : 0;
      counters.completed += completed ? 1 : 0;
      counters.still_parked += resumes.length === 0 ? 1 : 0;
      executions.push({ id, log, resumes, fencedOut, redriven, completed, running, journal: this.journal.get(id) });
    }
    for (const entries of this.journal.values()) {
      counters.contended += entries.filter((e) => e.type === 'contended' && e.actor !== 're-driver').length;
    }
    return { counters, executions };
  }

  /** A short digest of every log: the same seed must give the same one. */
  static fingerprint(executions) {
    let h = 0x811c9dc5;
    const text = JSON.stringify(executions.map((x) => x.log.map((e) => [e.sequence, e.kind, e.metadata.fence ?? null, e.payload])));
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
    return h.toString(16).padStart(8, '0');
  }
}
