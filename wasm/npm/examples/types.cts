// Type check of the package's types from CommonJS (`require`), compiled
// with `tsc --noEmit --strict` against the installed tarball; never run.
import loomfence = require('loomfence');

async function main(): Promise<void> {
  const store = new loomfence.MemoryEventStore();
  const token: number = await store.acquireFence('x');
  const error = new loomfence.StaleFenceError('stale', { executionId: 'x', presented: 1, current: token });
  const isError: Error = error;
  const timers = new loomfence.MemoryTimerStore();
  await timers.schedule({ executionId: 'x', wakeAt: token });
  const claims: loomfence.Claim[] = await timers.claimDue({ holder: 'n', now: token, durationMs: 1_000 }, 1);
  const fire = new loomfence.FireMachine(claims[0]!.row, { now: token, random: 0 });
  const step: loomfence.FirePoll = fire.poll();
  const refused = new loomfence.TimerInputError('bad', 'INVALID_ROW');
  const service = new loomfence.TimerService({ events: store, timers, now: () => token, random: () => 0 });
  service.registerRedriver(async (): Promise<loomfence.RedriveAnswer> => 'noop');
  const report: loomfence.PollReport = await service.pollOnce();
  await service.stop();
  const swept: loomfence.SweepReport = await loomfence.sweep(store, { endedBefore: token });
  const edge: string | null = loomfence.parentOf(await store.readRange('x'));
  void isError, step, refused, report, swept, edge;
}

void main;
