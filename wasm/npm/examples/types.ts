// Type check of the package's index.d.ts and services.d.ts, as a TypeScript user meets it:
// every export used once, with the types the contract promises. Compiled
// with `tsc --noEmit --strict` against the installed tarball; never run.
import {
  MemoryEventStore,
  resume,
  isAnsweringKind,
  locatePark,
  KERNEL_EVENT_KINDS,
  StaleFenceError,
  ResumeRefusedError,
  ResumeContendedError,
  InputError,
  type Envelope,
  type EventStore,
  type NewEvent,
  type Resumed,
  type AcquireIfResult,
  type ExecutionSummary,
  type DeleteGuard,
  type GuardedDelete,
  type RetentionStore,
  type FeedCursor,
  type FeedEntry,
  type FeedStore,
} from 'loomfence';
import {
  TimerInputError,
  RedriveExhaustedError,
  UnreadableTimerRowError,
  RedrivePolicy,
  redriveWakeAt,
  WakeBackoff,
  FireMachine,
  MemoryTimerStore,
  TimerService,
  ChildSupervisor,
  Follower,
  sweep,
  startedChild,
  parentOf,
  pinParkedChildren,
  type TimerRow,
  type TimerStore,
  type Claim,
  type ClaimAnswer,
  type UnreadableRow,
  type Completed,
  type BackoffEntry,
  type FireOutcome,
  type FirePoll,
  type PollReport,
  type FireReport,
  type Redriver,
  type RedriveAnswer,
  type TimerServiceOptions,
  type TimerServiceErrorInfo,
  type TimerServiceStage,
  type ChildSupervisorOptions,
  type Supervised,
  type SweepOptions,
  type SweepReport,
  type Pinned,
  type Kept,
  type Undecided,
  type FollowerOptions,
  type FollowerErrorInfo,
  type FollowerRebuild,
} from 'loomfence/services';

async function main(): Promise<void> {
  const store: EventStore = new MemoryEventStore();
  const event: NewEvent = { kind: 'EXECUTION_SUSPENDED', at: 0, metadata: { fence: 0 } };
  const park: Envelope = await store.append('t', event);
  const seq: number = park.sequence;
  const log: Envelope[] = await store.readRange('t', 1);
  const open: Envelope | undefined = locatePark(log);
  const answering: boolean = isAnsweringKind(park);
  const kinds: readonly string[] = KERNEL_EVENT_KINDS;
  const memory = new MemoryEventStore();
  const outcome: AcquireIfResult = await memory.acquireFenceIf('t', { fence: 0, parkSeq: seq });
  const token: number = outcome.fence;
  const stale: true | undefined = outcome.stale;
  const conditional = await memory.appendIfParked('t', 1, [event]);
  const landed: boolean = Array.isArray(conditional);
  const current: number = await memory.currentFence('t');
  const deleted: boolean = await memory.deleteExecution('t');
  try {
    const resumed: Resumed = await resume(store, 't', { fenceIfParkedAt: seq, answer: { ok: true }, at: 1 });
    const fence: number | null = resumed.fence;
    void fence;
  } catch (error) {
    if (error instanceof ResumeRefusedError) {
      const reason: 'not-suspended' = error.reason;
      void reason;
    } else if (error instanceof ResumeContendedError) {
      const retryable: true = error.retryable;
      const attempts: number = error.attempts;
      void retryable, attempts;
    } else if (error instanceof StaleFenceError) {
      const presented: number | null = error.presented;
      void presented;
    } else if (error instanceof InputError) {
      const code: string = error.code;
      const isType: TypeError = error;
      void code, isType;
    }
  }
  // A host store written in TypeScript: the interface is all resume needs.
  const host: EventStore = {
    async readRange() { return []; },
    async append(id: string, e: NewEvent) { return { executionId: id, sequence: 1, kind: e.kind, payload: {}, metadata: {}, at: e.at }; },
    async appendIfParked(id: string, parkSeq: number, events: NewEvent[]) {
      if (parkSeq > 1) return { parkAnswered: true as const };
      return events.map((e, i) => ({ executionId: id, sequence: parkSeq + 1 + i, kind: e.kind, payload: {}, metadata: e.metadata ?? {}, at: e.at }));
    },
  };
  await resume(host, 't', { fenceIfParkedAt: 1 });
  throw new StaleFenceError('stale', { executionId: 't', presented: 1, current: 2 });
  void open, answering, kinds, token, stale, landed, current, deleted;
}

// The timer API: policy, backoff, the fire machine over both stores.
async function timers(events: EventStore): Promise<void> {
  const policy = new RedrivePolicy({ baseMs: 100 });
  const ceiling: number = policy.ceilingMs(3);
  const delay: number = policy.delayMs(3, Math.random());
  const fields: [number, number, number] = [policy.baseMs, policy.capMs, policy.maxAttempts];
  const next: number | undefined = redriveWakeAt(Date.now(), delay, 1_000);
  const timerStore: TimerStore = new MemoryTimerStore();
  const row: TimerRow = { executionId: 't', wakeAt: 1_000 };
  await timerStore.schedule(row);
  await timerStore.schedule({ executionId: 't', wakeAt: 1_001, redrive: { attempt: 0 } });
  const due: TimerRow[] = await timerStore.due(2_000, 10, { redrive: false });
  const answer: ClaimAnswer = await timerStore.claimDue({ holder: 'node-1', now: 2_000, durationMs: 30_000 }, 10);
  const claims: Claim[] = Array.isArray(answer) ? answer : answer.claims;
  const unreadable: UnreadableRow[] = Array.isArray(answer) ? [] : (answer.unreadable ?? []);
  for (const bad of unreadable) {
    const key: [string, number | null] = [bad.executionId, bad.wakeAt];
    void key;
  }
  const backoff = new WakeBackoff(16);
  const size: number = backoff.len + backoff.bound;
  for (const claim of claims) {
    const entry: BackoffEntry | undefined = backoff.get(claim.row.executionId);
    const fire = new FireMachine(claim.row, { now: 2_000, random: 0.5, policy, backoff: entry, redrivers: 0 });
    const fired: TimerRow = fire.row;
    let outcome: FireOutcome | undefined;
    while (outcome === undefined) {
      const step: FirePoll = fire.poll();
      if ('done' in step) {
        outcome = step.done;
        break;
      }
      switch (step.act) {
        case 'readLog':
          fire.handleRead(await events.readRange(fired.executionId, 1));
          break;
        case 'resume':
          fire.handleResumed(await resume(events, fired.executionId, step.request).catch((e: ResumeRefusedError) => e));
          break;
        case 'redrive':
          fire.handleRedrive(step.redriver === 0 ? 'noop' : 'failed');
          break;
        case 'reschedule': {
          const moved: Completed = await timerStore.reschedule(claim, step.row);
          if (moved === 'done') fire.handleRescheduled();
          break;
        }
        case 'complete': {
          const done: Completed = await timerStore.complete(claim);
          if (done === 'done') fire.handleCompleted();
          break;
        }
      }
    }
    const evicted = backoff.apply(claim.row, outcome);
    const retired: boolean = outcome.retired;
    if (outcome.outcome === 'exhausted') {
      const error: RedriveExhaustedError = outcome.error;
      const attempts: number = error.attempts;
      void attempts;
    } else if (outcome.outcome === 'backedOff') {
      const nextTryAt: number = outcome.entry.nextTryAt;
      void nextTryAt;
    }
    void evicted, retired;
  }
  const released: Completed = await timerStore.release(claims[0]!);
  try {
    await timerStore.due(-1, 10);
  } catch (error) {
    if (error instanceof TimerInputError) {
      const code: string = error.code;
      const isError: Error = error;
      void code, isError;
    }
  }
  void ceiling, fields, next, due, size, released;
}

// The timer service over the memory stores and over host objects: a
// re-driver, a virtual clock, one tick, the loop, the stop.
async function service(events: EventStore, timerStore: TimerStore): Promise<void> {
  let virtual = 1_000;
  const seen: TimerServiceErrorInfo[] = [];
  const options: TimerServiceOptions = {
    events,
    timers: timerStore,
    node: 'node-1',
    pollIntervalMs: 100,
    leaseMs: 10_000,
    batch: 50,
    policy: { baseMs: 50, maxAttempts: 4 },
    backoffBound: 64,
    now: () => virtual,
    random: () => 0.5,
    onError: (error: unknown, info: TimerServiceErrorInfo) => {
      seen.push(info);
      if (info.stage === 'exhausted' && error instanceof RedriveExhaustedError) {
        const attempts: number = error.attempts;
        void attempts;
      }
      if (info.stage === 'unreadable' && error instanceof UnreadableTimerRowError) {
        const bad: UnreadableRow = error.row;
        const field: UnreadableRow['field'] = bad.field;
        void field;
      }
    },
    onResumed: (resumed: Resumed) => {
      const token: number | null = resumed.fence;
      void token;
    },
  };
  const timerService = new TimerService(options);
  const redriver: Redriver = async (executionId: string): Promise<RedriveAnswer> => {
    const log = await events.readRange(executionId, 1);
    const park = locatePark(log);
    if (park === undefined) return 'noop';
    try {
      await resume(events, executionId, { fenceIfParkedAt: park.sequence, answer: { child: 'c1' } });
      return 'done';
    } catch (error) {
      if (error instanceof ResumeContendedError) return 'contended';
      if (error instanceof ResumeRefusedError) return 'noop';
      throw error;
    }
  };
  timerService.registerRedriver(redriver);
  timerService.registerRedriver(() => 'noop');
  const report: PollReport = await timerService.pollOnce();
  const counts: number[] = [report.claimed, report.fired, report.rescheduled, report.exhausted, report.notHeld, report.lapsed, report.unreadable, report.errors];
  for (const fire of report.fires) {
    const row: TimerRow = fire.row;
    const fireReport: FireReport = fire;
    if (fire.result === 'failed') {
      const error: unknown = fire.error;
      const stage: TimerServiceStage = fire.stage;
      void error, stage;
    } else if (fire.result !== 'notHeld' && fire.result !== 'lapsed') {
      const outcome: FireOutcome = fire.outcome;
      void outcome;
    }
    void row, fireReport;
  }
  timerService.start();
  const state: [string, boolean, number] = [timerService.node, timerService.running, timerService.redrivers];
  await timerService.stop();
  const memory = new TimerService({ events: new MemoryEventStore(), timers: new MemoryTimerStore() });
  virtual += 1;
  void counts, state, seen, memory;
}

// Retention: the edge, the pin, the listing, the guarded delete and the
// sweep over the memory store and over a host store.
async function retention(host: RetentionStore): Promise<void> {
  const store = new MemoryEventStore();
  const start = startedChild('parent-1', 0);
  const recorded: string = start.payload.parent;
  await store.appendMany('child-1', [start, { kind: 'EXECUTION_COMPLETED', at: 1 }]);
  const parent: string | null = parentOf(await store.readRange('child-1'));
  const pinned: boolean = pinParkedChildren('child-1', await store.readRange('parent-1'));
  const page: ExecutionSummary[] = await store.listExecutions(null, 100);
  const next: ExecutionSummary[] = await store.listExecutions(page[0]?.executionId, 100);
  const ended: number | undefined = page[0]?.ended?.at;
  const guard: DeleteGuard = { head: 2, parents: [{ parent: 'parent-1', seen: 0 }] };
  const outcome: GuardedDelete = await store.deleteExecutionIf('child-1', guard);
  if ('parentMoved' in outcome) {
    const moved: string = outcome.parent;
    void moved;
  } else if ('logChanged' in outcome) {
    const head: number = outcome.head;
    void head;
  }
  const archived: Envelope[][] = [];
  const options: SweepOptions = {
    endedBefore: Date.now() - 7 * 24 * 3_600_000,
    pageLimit: 500,
    dryRun: false,
    archive: async (_executionId: string, events: Envelope[]) => {
      archived.push(events);
    },
    knownParents: (childId: string) => (childId === 'child-1' ? ['parent-1'] : []),
  };
  try {
    const report: SweepReport = await sweep(store, options);
    const counts: number[] = [report.examined, report.eligible, report.skipped, report.deleted, report.archived, report.pages, report.logReads, report.parentReads];
    const pins: Pinned[] = report.pinned;
    const kept: Kept[] = report.kept;
    const undecided: Undecided[] = report.undecided;
    for (const u of undecided) {
      const code: 'UNREADABLE_LOG' | 'INVALID_LINEAGE' | 'UNREADABLE_PARENT' | 'INVALID_PARK' | 'UNKNOWN_KIND' = u.code;
      const parent: string | null = u.parent;
      const detail: string = u.detail;
      void code, parent, detail;
    }
    void counts, pins, kept;
  } catch (error) {
    const partial: SweepReport | undefined = (error as { report?: SweepReport }).report;
    void partial;
  }
  await sweep(host, { endedBefore: 0, dryRun: true });
  void recorded, parent, pinned, next, ended;
}

// The child supervisor over an event store and a timer store, its outcomes,
// and its re-driver on a timer service.
async function supervision(events: EventStore, timerStore: TimerStore): Promise<void> {
  const options: ChildSupervisorOptions = {
    events,
    timers: timerStore,
    redrive: true,
    conditionalTries: 2,
    policy: { baseMs: 50 },
    now: () => 1_000,
    random: () => 0.5,
    onError: (error: unknown, parent: string) => void [error, parent],
    onResumed: (resumed: Resumed) => void resumed.fence,
  };
  const supervisor = new ChildSupervisor(options);
  const supervised: Supervised = await supervisor.watch('parent');
  if (supervised.outcome === 'resumed') {
    const token: number | null = supervised.resumed.fence;
    void token;
  } else if (supervised.outcome === 'redriveScheduled') {
    const row: TimerRow = supervised.row;
    void row;
  } else if (supervised.outcome === 'contended') {
    const error: ResumeContendedError = supervised.error;
    void error;
  }
  const answer: RedriveAnswer = supervised.answer === 'failed' ? 'noop' : supervised.answer;
  for (const { parent, supervised: s, error } of await supervisor.childEnded('child')) {
    void parent, s, error;
  }
  await supervisor.rebuild(['parent']);
  const parents: string[] = supervisor.parentsWaitingOn('child');
  const redriver: Redriver = supervisor.redriver();
  new TimerService({ events, timers: timerStore }).registerRedriver(redriver);
  void answer, parents;
}

// The change feed of the package's store, a host's feed store, and a
// follower handing a child supervisor its work.
async function following(host: FeedStore, supervisor: ChildSupervisor): Promise<void> {
  const store = new MemoryEventStore();
  const head: FeedCursor = await store.feedHead();
  const entries: FeedEntry[] = await store.feed({ epoch: 0, position: 0 }, 100);
  const events: Envelope[] = entries.map((entry) => entry.event);
  const parked: string[] = await store.openParks(null, 100);
  await store.waitForFeed(head);
  const mine: FeedStore = store;
  const next: FeedEntry[] = await host.feed(head, 10);
  const options: FollowerOptions = {
    events: host,
    supervisor,
    pageLimit: 64,
    concurrency: 4,
    pollIntervalMs: 500,
    onError: (error: unknown, info: FollowerErrorInfo) => void [error, info.stage, info.id],
  };
  const follower = new Follower(options);
  follower.start();
  const at: FeedCursor = follower.cursor;
  const state: [boolean, boolean] = [follower.running, follower.rebuilt];
  const took: FollowerRebuild | null = follower.rebuild;
  if (took !== null) void [took.elapsedMs + took.watched];
  await follower.stop();
  void events, parked, mine, next, at, state, took;
}

void main, timers, service, retention, supervision, following;
