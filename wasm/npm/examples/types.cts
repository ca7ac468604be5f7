// Type check of the package's types from CommonJS (`require`), compiled
// with `tsc --noEmit --strict` against the installed tarball; never run.
import loomfence = require('loomfence');
import services = require('loomfence/services');

async function main(): Promise<void> {
  const store = new loomfence.MemoryEventStore();
  const token: number = await store.acquireFence('x');
  const error = new loomfence.StaleFenceError('stale', { executionId: 'x', presented: 1, current: token });
  const isError: Error = error;
  const timers = new services.MemoryTimerStore();
  await timers.schedule({ executionId: 'x', wakeAt: token });
  const claims: services.Claim[] = await timers.claimDue({ holder: 'n', now: token, durationMs: 1_000 }, 1);
  const fire = new services.FireMachine(claims[0]!.row, { now: token, random: 0 });
  const step: services.FirePoll = fire.poll();
  const refused = new services.TimerInputError('bad', 'INVALID_ROW');
  const service = new services.TimerService({ events: store, timers, now: () => token, random: () => 0 });
  service.registerRedriver(async (): Promise<services.RedriveAnswer> => 'noop');
  const report: services.PollReport = await service.pollOnce();
  await service.stop();
  const swept: services.SweepReport = await services.sweep(store, { endedBefore: token });
  const edge: string | null = services.parentOf(await store.readRange('x'));
  void isError, step, refused, report, swept, edge;
}

void main;
