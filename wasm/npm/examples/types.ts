// Type check of the package's index.d.ts, as a TypeScript user meets it:
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
} from 'loomfence';

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

void main;
