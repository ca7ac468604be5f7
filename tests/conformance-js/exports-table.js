// The table of every export of the `loomfence` package for the property
// suite (props.test.js): each function, class constructor, method and
// getter, whether it returns a promise, and the argument positions a hostile
// value may take (`slots`), nested ones included (an event's payload, a
// row's redrive, an option). A slot is `[call, base, { async }]`:
// `call(ctx, value)` makes the call with `value` in that position;
// `base(ctx)`, when given, is the valid value the position holds, on which
// a getter, a trap or a cycle is put; `async` overrides the entry's. props.test.js fails when an export, a method or a getter of the
// package is missing here, so the table stays complete.
//
// The calls act on the instances of one context (`setup`), chosen so that a
// call that succeeds with a legitimately acceptable value changes little: a
// claim that is not current, a sweep that is a dry run, a claim with a lease
// at a time nothing is due.

import * as resumeEntry from 'loomfence';
import * as servicesEntry from 'loomfence/services';
import {
  MemoryEventStore,
  isAnsweringKind,
  locatePark,
  resume,
} from 'loomfence';
import {
  ChildSupervisor,
  FireMachine,
  Follower,
  Inbox,
  MemoryTimerStore,
  RedrivePolicy,
  TimerService,
  WakeBackoff,
  parentOf,
  pinParkedChildren,
  redriveWakeAt,
  startedChild,
  sweep,
} from 'loomfence/services';

import { AT, event } from './support.js';

/** Every export of the package: the resume entry's and the services'. */
const pkg = { ...resumeEntry, ...servicesEntry };

/** Own names of a class's prototype the glue or the guard adds, not the API. */
export const INTERNAL = new Set(['constructor', '__destroy_into_raw', '__wbg_ptr']);

/** The lease every claim of the context takes: a day. */
const DAY = 86_400_000;

/** The instances every call acts on, and what their state is checked by. */
export async function setup() {
  const events = new MemoryEventStore();
  const [, parked] = await events.appendMany('e', [event('EXECUTION_STARTED'), event('EXECUTION_SUSPENDED')]);
  await events.appendMany('done', [event('EXECUTION_STARTED'), event('EXECUTION_COMPLETED')]);
  await events.appendMany('p', [event('EXECUTION_STARTED'), event('EXECUTION_SUSPENDED', { payload: { waits: [{ kind: 'CHILD_DONE', key: 'c' }] } })]);
  await events.append('c', startedChild('p', AT));
  await events.append('i', event('EXECUTION_STARTED'));
  const timers = new MemoryTimerStore();
  await timers.schedule({ executionId: 'e', wakeAt: AT });
  await timers.schedule({ executionId: 'x', wakeAt: AT + 5 });
  const [claim] = await timers.claimDue({ holder: 'n', now: AT, durationMs: DAY }, 1);
  const reported = [];
  const onError = (error, info) => reported.push({ error, info });
  const ctx = {
    /** The service's clock: 0 (nothing due) while the property runs. */
    clock: 0,
    events,
    timers,
    parkSeq: parked.sequence,
    /** A claim of the row 'e' that is not its current one: complete and release answer 'notHeld'. */
    stale: { ...claim, number: claim.number + 100 },
    policy: new RedrivePolicy(),
    backoff: new WakeBackoff(4),
    fire: new FireMachine({ executionId: 'e', wakeAt: AT }, { now: AT, random: 0.5 }),
    service: new TimerService({ events, timers, node: 'n2', now: () => ctx.clock, random: () => 0.5, onError }),
    supervisor: new ChildSupervisor({ events, timers, onError: (error, parent) => reported.push({ error, parent }), now: () => AT }),
    follower: undefined,
    inbox: new Inbox(events, timers, { now: () => AT, random: () => 0.5, onError: (error, id) => reported.push({ error, id }) }),
    reported,
  };
  await ctx.supervisor.watch('p');
  // Never started: its methods are called on it, its loop never runs.
  ctx.follower = new Follower({ events, supervisor: ctx.supervisor, pollIntervalMs: 10, onError: (error, info) => reported.push({ error, info }) });
  return ctx;
}

/** Everything the context's instances expose, compared before and after each refused call. */
export async function snapshot(ctx) {
  const ids = ['e', 'done', 'p', 'c', 'i'];
  return {
    logs: await Promise.all(ids.map((id) => ctx.events.readRange(id))),
    fences: await Promise.all(ids.map((id) => ctx.events.currentFence(id))),
    listing: await ctx.events.listExecutions(null, 10_000),
    rows: await ctx.timers.due(2 ** 53 - 1, 10_000),
    policy: [ctx.policy.baseMs, ctx.policy.capMs, ctx.policy.maxAttempts],
    backoff: [ctx.backoff.bound, ctx.backoff.len, ctx.backoff.get('e')],
    fire: [ctx.fire.poll(), ctx.fire.row],
    service: [ctx.service.node, ctx.service.running, ctx.service.redrivers],
    supervisor: ctx.supervisor.parentsWaitingOn('c'),
    feed: [await ctx.events.feed(START, 10_000), await ctx.events.feedHead(), await ctx.events.openParks(null, 10_000)],
    follower: [ctx.follower.running, ctx.follower.cursor, ctx.follower.rebuilt, ctx.follower.rebuild],
    messages: await Promise.all(ids.map((id) => ctx.timers.messages(id))),
  };
}

// Valid values of each position.
const ev = () => event('ANNOTATION_ADDED', { payload: { note: 1 }, metadata: {} });
const envelope = () => ({ executionId: 'e', sequence: 1, kind: 'EXECUTION_STARTED', payload: {}, metadata: {}, at: AT });
const log = () => [envelope(), { ...envelope(), sequence: 2, kind: 'EXECUTION_SUSPENDED' }];
const row = () => ({ executionId: 'e', wakeAt: AT + 1 });
const exhaustion = () => ({ attempts: 8, at: AT + 1 });
const lease = () => ({ holder: 'n3', now: 0, durationMs: DAY });
const guard = () => ({ head: 1_000, parents: [{ parent: 'p', seen: 2 }] });
const resumeOptions = (ctx) => ({ fenceIfParkedAt: ctx.parkSeq, answer: 1, at: AT });
const sweepOptions = () => ({ endedBefore: AT + 1, dryRun: true });
const fireContext = () => ({ now: AT, random: 0.5, policy: { baseMs: 10 }, backoff: null, redrivers: 0 });
const outcome = () => ({ outcome: 'backedOff', retired: false, entry: { wakeAt: AT, attempt: 0, nextTryAt: AT + 10 } });
const serviceOptions = (ctx) => ({ events: ctx.events, timers: ctx.timers, node: 'n4', pollIntervalMs: 10, leaseMs: 10, batch: 1, policy: {}, backoffBound: 2, now: () => 0, random: () => 0.5, onError: () => {}, onResumed: () => {} });
const message = () => ({ executionId: 'i', channel: 'c', messageId: 'm', payload: { n: 1 }, sentAt: AT });
const MESSAGE_FIELDS = [['executionId'], ['channel'], ['messageId'], ['payload'], ['sentAt']];
const intentRow = () => ({ executionId: 'i', wakeAt: AT + 5_000, redrive: { attempt: 0 } });
const messageKey = () => ({ executionId: 'i', channel: 'c', messageId: 'm' });
const note = () => ({ executionId: 'i', channel: 'c', messageId: 'n', payload: [1] });
const wait = () => ({ kind: 'MESSAGE', channel: 'c' });
const inboxOptions = () => ({ now: () => AT, random: () => 0.5, redrive: false, policy: {}, intentDelayMs: 10, onResumed: () => {}, onError: () => {} });
const START = { epoch: 0, position: 0 };
const cursor = () => ({ ...START });
const followerOptions = (ctx) => ({ events: ctx.events, supervisor: ctx.supervisor, pageLimit: 1, concurrency: 1, pollIntervalMs: 10, onError: () => {} });
const supervisorOptions = (ctx) => ({ events: ctx.events, timers: ctx.timers, redrive: false, conditionalTries: 1, policy: {}, now: () => AT, random: () => 0.5, onError: () => {}, onResumed: () => {} });

/** `make(ctx)` with `value` at `path` (keys, outermost first). */
function at(make, path) {
  return (ctx, value) => {
    const whole = make(ctx);
    let parent = whole;
    for (const key of path.slice(0, -1)) parent = parent[key];
    parent[path.at(-1)] = value;
    return whole;
  };
}

/** The valid value at `path` of `make(ctx)`. */
function within(make, path) {
  return (ctx) => path.reduce((value, key) => value[key], make(ctx));
}

/** Slots for each field of a value built by `make`, at each of `paths`. */
function fields(name, make, paths, call) {
  const slots = {};
  for (const path of paths) {
    const put = at(make, path);
    slots[`${name}.${path.join('.')}`] = [(ctx, value) => call(ctx, put(ctx, value)), within(make, path)];
  }
  return slots;
}

const EVENT_FIELDS = [['kind'], ['at'], ['payload'], ['payload', 'note'], ['metadata'], ['metadata', 'fence'], ['metadata', 'kernel']];
const ENVELOPE_FIELDS = [['executionId'], ['sequence'], ['kind'], ['payload'], ['metadata'], ['at']];
const ROW_FIELDS = [['executionId'], ['wakeAt'], ['redrive']];
const CLAIM_FIELDS = [['row'], ['row', 'executionId'], ['row', 'wakeAt'], ['holder'], ['number'], ['expiresAt']];

/**
 * Every export. `kind`: 'function', 'class', 'error' (an error class) or
 * 'value'. `async`: returns a promise (then it never throws). `slots`: the
 * positions. A class's `methods` (and getters) are listed the same way; each
 * also gets a `receiver` slot in props.test.js.
 */
export const TABLE = {
  MemoryEventStore: {
    kind: 'class',
    slots: { 'arguments[0]': [(ctx, v) => new MemoryEventStore(v)] },
    methods: {
      append: {
        async: true,
        slots: {
          executionId: [(ctx, v) => ctx.events.append(v, ev())],
          event: [(ctx, v) => ctx.events.append('e', v), ev],
          ...fields('event', ev, EVENT_FIELDS, (ctx, v) => ctx.events.append('e', v)),
        },
      },
      appendMany: {
        async: true,
        slots: {
          executionId: [(ctx, v) => ctx.events.appendMany(v, [ev()])],
          events: [(ctx, v) => ctx.events.appendMany('e', v), () => [ev(), ev()]],
          'events[1]': [(ctx, v) => ctx.events.appendMany('e', [ev(), v]), ev],
          ...fields('events[0]', ev, EVENT_FIELDS, (ctx, v) => ctx.events.appendMany('e', [v])),
        },
      },
      appendIfParked: {
        async: true,
        slots: {
          executionId: [(ctx, v) => ctx.events.appendIfParked(v, ctx.parkSeq, [ev()])],
          parkSeq: [(ctx, v) => ctx.events.appendIfParked('e', v, [ev()])],
          events: [(ctx, v) => ctx.events.appendIfParked('e', ctx.parkSeq, v), () => [ev()]],
          ...fields('events[0]', ev, EVENT_FIELDS, (ctx, v) => ctx.events.appendIfParked('e', ctx.parkSeq, [v])),
        },
      },
      readRange: {
        async: true,
        slots: {
          executionId: [(ctx, v) => ctx.events.readRange(v)],
          fromSeq: [(ctx, v) => ctx.events.readRange('e', v)],
          toSeq: [(ctx, v) => ctx.events.readRange('e', 1, v)],
        },
      },
      acquireFence: { async: true, slots: { executionId: [(ctx, v) => ctx.events.acquireFence(v)] } },
      acquireFenceIf: {
        async: true,
        slots: {
          executionId: [(ctx, v) => ctx.events.acquireFenceIf(v, { fence: 0, parkSeq: ctx.parkSeq })],
          expect: [(ctx, v) => ctx.events.acquireFenceIf('e', v), (ctx) => ({ fence: 7, parkSeq: ctx.parkSeq })],
          ...fields('expect', (ctx) => ({ fence: 7, parkSeq: ctx.parkSeq }), [['fence'], ['parkSeq']], (ctx, v) => ctx.events.acquireFenceIf('e', v)),
        },
      },
      currentFence: { async: true, slots: { executionId: [(ctx, v) => ctx.events.currentFence(v)] } },
      deleteExecution: { async: true, slots: { executionId: [(ctx, v) => ctx.events.deleteExecution(v)] } },
      listExecutions: {
        async: true,
        slots: {
          after: [(ctx, v) => ctx.events.listExecutions(v, 10)],
          limit: [(ctx, v) => ctx.events.listExecutions(null, v)],
        },
      },
      deleteExecutionIf: {
        async: true,
        slots: {
          executionId: [(ctx, v) => ctx.events.deleteExecutionIf(v, guard())],
          guard: [(ctx, v) => ctx.events.deleteExecutionIf('e', v), guard],
          ...fields('guard', guard, [['head'], ['parents'], ['parents', 0], ['parents', 0, 'parent'], ['parents', 0, 'seen']], (ctx, v) => ctx.events.deleteExecutionIf('e', v)),
        },
      },
      feed: {
        async: true,
        slots: {
          after: [(ctx, v) => ctx.events.feed(v, 10), cursor],
          ...fields('after', cursor, [['epoch'], ['position']], (ctx, v) => ctx.events.feed(v, 10)),
          limit: [(ctx, v) => ctx.events.feed(cursor(), v)],
        },
      },
      feedHead: { async: true, slots: {} },
      openParks: {
        async: true,
        slots: {
          after: [(ctx, v) => ctx.events.openParks(v, 10)],
          limit: [(ctx, v) => ctx.events.openParks(null, v)],
        },
      },
      // Behind the head: a cursor it accepts resolves at once.
      waitForFeed: {
        async: true,
        slots: {
          after: [(ctx, v) => ctx.events.waitForFeed(v), cursor],
          ...fields('after', cursor, [['epoch'], ['position']], (ctx, v) => ctx.events.waitForFeed(v)),
        },
      },
      free: { async: false, slots: {} },
    },
  },
  MemoryTimerStore: {
    kind: 'class',
    slots: { 'arguments[0]': [(ctx, v) => new MemoryTimerStore(v)] },
    methods: {
      schedule: {
        async: true,
        slots: {
          row: [(ctx, v) => ctx.timers.schedule(v), row],
          ...fields('row', () => ({ ...row(), redrive: { attempt: 1 } }), [...ROW_FIELDS, ['redrive', 'attempt']], (ctx, v) => ctx.timers.schedule(v)),
        },
      },
      due: {
        async: true,
        slots: {
          now: [(ctx, v) => ctx.timers.due(v, 10)],
          limit: [(ctx, v) => ctx.timers.due(AT, v)],
          options: [(ctx, v) => ctx.timers.due(AT, 10, v), () => ({ redrive: false })],
          'options.redrive': [(ctx, v) => ctx.timers.due(AT, 10, { redrive: v })],
        },
      },
      claimDue: {
        async: true,
        slots: {
          lease: [(ctx, v) => ctx.timers.claimDue(v, 10), lease],
          ...fields('lease', lease, [['holder'], ['now'], ['durationMs']], (ctx, v) => ctx.timers.claimDue(v, 10)),
          limit: [(ctx, v) => ctx.timers.claimDue(lease(), v)],
          options: [(ctx, v) => ctx.timers.claimDue(lease(), 10, v), () => ({ redrive: false })],
        },
      },
      complete: {
        async: true,
        slots: {
          claim: [(ctx, v) => ctx.timers.complete(v), (ctx) => structuredClone(ctx.stale)],
          ...fields('claim', (ctx) => structuredClone(ctx.stale), CLAIM_FIELDS, (ctx, v) => ctx.timers.complete(v)),
        },
      },
      release: {
        async: true,
        slots: {
          claim: [(ctx, v) => ctx.timers.release(v), (ctx) => structuredClone(ctx.stale)],
          ...fields('claim', (ctx) => structuredClone(ctx.stale), CLAIM_FIELDS, (ctx, v) => ctx.timers.release(v)),
        },
      },
      send: {
        async: true,
        slots: {
          message: [(ctx, v) => ctx.timers.send(v, intentRow()), message],
          ...fields('message', message, MESSAGE_FIELDS, (ctx, v) => ctx.timers.send(v, intentRow())),
          intent: [(ctx, v) => ctx.timers.send(message(), v), intentRow],
          ...fields('intent', intentRow, [...ROW_FIELDS, ['redrive', 'attempt']], (ctx, v) => ctx.timers.send(message(), v)),
        },
      },
      pending: {
        async: true,
        slots: {
          executionId: [(ctx, v) => ctx.timers.pending(v, ['c'], 10)],
          channels: [(ctx, v) => ctx.timers.pending('i', v, 10), () => ['c']],
          'channels[0]': [(ctx, v) => ctx.timers.pending('i', [v], 10)],
          limit: [(ctx, v) => ctx.timers.pending('i', ['c'], v)],
        },
      },
      markConsumed: {
        async: true,
        slots: {
          key: [(ctx, v) => ctx.timers.markConsumed(v), messageKey],
          ...fields('key', messageKey, [['executionId'], ['channel'], ['messageId']], (ctx, v) => ctx.timers.markConsumed(v)),
        },
      },
      purge: { async: true, slots: { executionId: [(ctx, v) => ctx.timers.purge(v)] } },
      messages: { async: true, slots: { executionId: [(ctx, v) => ctx.timers.messages(v)] } },
      reschedule: {
        async: true,
        slots: {
          claim: [(ctx, v) => ctx.timers.reschedule(v, row()), (ctx) => structuredClone(ctx.stale)],
          ...fields('claim', (ctx) => structuredClone(ctx.stale), CLAIM_FIELDS, (ctx, v) => ctx.timers.reschedule(v, row())),
          next: [(ctx, v) => ctx.timers.reschedule(ctx.stale, v), row],
          ...fields('next', row, ROW_FIELDS, (ctx, v) => ctx.timers.reschedule(ctx.stale, v)),
        },
      },
      exhaust: {
        async: true,
        slots: {
          claim: [(ctx, v) => ctx.timers.exhaust(v, exhaustion()), (ctx) => structuredClone(ctx.stale)],
          ...fields('claim', (ctx) => structuredClone(ctx.stale), CLAIM_FIELDS, (ctx, v) => ctx.timers.exhaust(v, exhaustion())),
          exhaustion: [(ctx, v) => ctx.timers.exhaust(ctx.stale, v), exhaustion],
          ...fields('exhaustion', exhaustion, [['attempts'], ['at']], (ctx, v) => ctx.timers.exhaust(ctx.stale, v)),
        },
      },
      free: { async: false, slots: {} },
    },
  },
  RedrivePolicy: {
    kind: 'class',
    slots: {
      init: [(ctx, v) => new RedrivePolicy(v), () => ({ baseMs: 10, capMs: 100, maxAttempts: 3 })],
      ...fields('init', () => ({ baseMs: 10, capMs: 100, maxAttempts: 3 }), [['baseMs'], ['capMs'], ['maxAttempts']], (ctx, v) => new RedrivePolicy(v)),
    },
    methods: {
      ceilingMs: { async: false, slots: { attempt: [(ctx, v) => ctx.policy.ceilingMs(v)] } },
      delayMs: {
        async: false,
        slots: {
          attempt: [(ctx, v) => ctx.policy.delayMs(v, 0.5)],
          random: [(ctx, v) => ctx.policy.delayMs(1, v)],
        },
      },
      baseMs: { getter: true, slots: {} },
      capMs: { getter: true, slots: {} },
      maxAttempts: { getter: true, slots: {} },
      free: { async: false, slots: {} },
    },
  },
  WakeBackoff: {
    kind: 'class',
    slots: { bound: [(ctx, v) => new WakeBackoff(v)] },
    methods: {
      get: { async: false, slots: { executionId: [(ctx, v) => ctx.backoff.get(v)] } },
      apply: {
        async: false,
        slots: {
          row: [(ctx, v) => ctx.backoff.apply(v, outcome()), row],
          ...fields('row', row, ROW_FIELDS, (ctx, v) => ctx.backoff.apply(v, outcome())),
          outcome: [(ctx, v) => ctx.backoff.apply(row(), v), outcome],
          ...fields('outcome', outcome, [['outcome'], ['retired'], ['entry'], ['entry', 'wakeAt'], ['entry', 'attempt'], ['entry', 'nextTryAt']], (ctx, v) => ctx.backoff.apply(row(), v)),
        },
      },
      bound: { getter: true, slots: {} },
      len: { getter: true, slots: {} },
      free: { async: false, slots: {} },
    },
  },
  FireMachine: {
    kind: 'class',
    slots: {
      row: [(ctx, v) => new FireMachine(v, { now: AT + 2 }), row],
      ...fields('row', row, ROW_FIELDS, (ctx, v) => new FireMachine(v, { now: AT + 2 })),
      context: [(ctx, v) => new FireMachine(row(), v), fireContext],
      ...fields('context', fireContext, [['now'], ['random'], ['policy'], ['policy', 'baseMs'], ['backoff'], ['redrivers']], (ctx, v) => new FireMachine(row(), v)),
    },
    methods: {
      poll: { async: false, slots: {} },
      handleRead: {
        async: false,
        slots: {
          events: [(ctx, v) => ctx.fire.handleRead(v), log],
          'events[1]': [(ctx, v) => ctx.fire.handleRead([envelope(), v]), () => log()[1]],
          ...fields('events[1]', log, ENVELOPE_FIELDS.map((path) => [1, ...path]), (ctx, v) => ctx.fire.handleRead(v)),
        },
      },
      handleResumed: { async: false, slots: { result: [(ctx, v) => ctx.fire.handleResumed(v)] } },
      handleRedrive: { async: false, slots: { answer: [(ctx, v) => ctx.fire.handleRedrive(v)] } },
      handleRescheduled: { async: false, slots: { 'arguments[0]': [(ctx, v) => ctx.fire.handleRescheduled(v)] } },
      handleCompleted: { async: false, slots: { 'arguments[0]': [(ctx, v) => ctx.fire.handleCompleted(v)] } },
      handleExhausted: { async: false, slots: { 'arguments[0]': [(ctx, v) => ctx.fire.handleExhausted(v)] } },
      row: { getter: true, slots: {} },
      free: { async: false, slots: {} },
    },
  },
  TimerService: {
    kind: 'class',
    slots: {
      options: [(ctx, v) => new TimerService(v), serviceOptions],
      ...fields(
        'options',
        serviceOptions,
        [['events'], ['timers'], ['node'], ['pollIntervalMs'], ['leaseMs'], ['batch'], ['policy'], ['backoffBound'], ['now'], ['random'], ['onError'], ['onResumed']],
        (ctx, v) => new TimerService(v),
      ),
    },
    methods: {
      registerRedriver: { async: false, slots: { redriver: [(ctx, v) => ctx.service.registerRedriver(v)] } },
      pollOnce: { async: true, slots: {} },
      start: { async: false, slots: {} },
      stop: { async: true, slots: {} },
      node: { getter: true, slots: {} },
      running: { getter: true, slots: {} },
      redrivers: { getter: true, slots: {} },
    },
  },
  Follower: {
    kind: 'class',
    slots: {
      options: [(ctx, v) => new Follower(v), followerOptions],
      ...fields(
        'options',
        followerOptions,
        [['events'], ['supervisor'], ['pageLimit'], ['concurrency'], ['pollIntervalMs'], ['onError']],
        (ctx, v) => new Follower(v),
      ),
    },
    methods: {
      start: { async: false, slots: {} },
      stop: { async: true, slots: {} },
      running: { getter: true, slots: {} },
      cursor: { getter: true, slots: {} },
      rebuilt: { getter: true, slots: {} },
      rebuild: { getter: true, slots: {} },
    },
  },
  ChildSupervisor: {
    kind: 'class',
    slots: {
      options: [(ctx, v) => new ChildSupervisor(v), supervisorOptions],
      ...fields(
        'options',
        supervisorOptions,
        [['events'], ['timers'], ['redrive'], ['conditionalTries'], ['policy'], ['now'], ['random'], ['onError'], ['onResumed']],
        (ctx, v) => new ChildSupervisor(v),
      ),
    },
    methods: {
      watch: { async: true, slots: { parent: [(ctx, v) => ctx.supervisor.watch(v)] } },
      childEnded: { async: true, slots: { child: [(ctx, v) => ctx.supervisor.childEnded(v)] } },
      rebuild: {
        async: true,
        slots: {
          parents: [(ctx, v) => ctx.supervisor.rebuild(v), () => ['p']],
          'parents[0]': [(ctx, v) => ctx.supervisor.rebuild([v])],
        },
      },
      parentsWaitingOn: { async: false, slots: { child: [(ctx, v) => ctx.supervisor.parentsWaitingOn(v)] } },
      // The re-driver it returns is a promise-returning function.
      redriver: { async: false, slots: { 'redriver()(executionId)': [(ctx, v) => ctx.supervisor.redriver()(v), undefined, { async: true }] } },
    },
  },
  Inbox: {
    kind: 'class',
    slots: {
      store: [(ctx, v) => new Inbox(v, ctx.timers)],
      inbox: [(ctx, v) => new Inbox(ctx.events, v)],
      options: [(ctx, v) => new Inbox(ctx.events, ctx.timers, v), inboxOptions],
      ...fields(
        'options',
        inboxOptions,
        [['now'], ['random'], ['redrive'], ['policy'], ['intentDelayMs'], ['onResumed'], ['onError']],
        (ctx, v) => new Inbox(ctx.events, ctx.timers, v),
      ),
    },
    methods: {
      notify: {
        async: true,
        slots: {
          message: [(ctx, v) => ctx.inbox.notify(v), note],
          ...fields('message', note, [['executionId'], ['channel'], ['messageId'], ['payload']], (ctx, v) => ctx.inbox.notify(v)),
        },
      },
      park: {
        async: true,
        slots: {
          executionId: [(ctx, v) => ctx.inbox.park(v, [wait()])],
          waits: [(ctx, v) => ctx.inbox.park('i', v), () => [wait()]],
          'waits[0]': [(ctx, v) => ctx.inbox.park('i', [v]), wait],
          options: [(ctx, v) => ctx.inbox.park('i', [wait()], v), () => ({ at: AT })],
          'options.fence': [(ctx, v) => ctx.inbox.park('i', [wait()], { fence: v })],
          'options.at': [(ctx, v) => ctx.inbox.park('i', [wait()], { at: v })],
        },
      },
      check: { async: true, slots: { executionId: [(ctx, v) => ctx.inbox.check(v)] } },
      // The re-driver it returns is a promise-returning function.
      redriver: { async: false, slots: { 'redriver()(executionId)': [(ctx, v) => ctx.inbox.redriver()(v), undefined, { async: true }] } },
    },
  },
  isAnsweringKind: {
    kind: 'function',
    slots: {
      event: [(ctx, v) => isAnsweringKind(v), ev],
      ...fields('event', ev, [['kind'], ['metadata'], ['metadata', 'kernel']], (ctx, v) => isAnsweringKind(v)),
    },
  },
  locatePark: {
    kind: 'function',
    slots: {
      events: [(ctx, v) => locatePark(v), log],
      'events[0]': [(ctx, v) => locatePark([v]), envelope],
      ...fields('events[1]', log, ENVELOPE_FIELDS.map((path) => [1, ...path]), (ctx, v) => locatePark(v)),
    },
  },
  redriveWakeAt: {
    kind: 'function',
    slots: {
      now: [(ctx, v) => redriveWakeAt(v, 10, AT)],
      delayMs: [(ctx, v) => redriveWakeAt(AT, v, AT)],
      firedWakeAt: [(ctx, v) => redriveWakeAt(AT, 10, v)],
    },
  },
  startedChild: {
    kind: 'function',
    slots: {
      parentId: [(ctx, v) => startedChild(v, AT)],
      at: [(ctx, v) => startedChild('p', v)],
    },
  },
  parentOf: {
    kind: 'function',
    slots: {
      events: [(ctx, v) => parentOf(v), () => [{ ...envelope(), payload: { parent: 'p' } }]],
      ...fields('events[0]', () => [{ ...envelope(), payload: { parent: 'p' } }], [...ENVELOPE_FIELDS.map((path) => [0, ...path]), [0, 'payload', 'parent']], (ctx, v) => parentOf(v)),
    },
  },
  pinParkedChildren: {
    kind: 'function',
    slots: {
      childId: [(ctx, v) => pinParkedChildren(v, [])],
      parentEvents: [(ctx, v) => pinParkedChildren('c', v), log],
      ...fields(
        'parentEvents[1]',
        () => [envelope(), { ...envelope(), sequence: 2, kind: 'EXECUTION_SUSPENDED', payload: { waits: [{ kind: 'CHILD_DONE', key: 'c' }] } }],
        [...ENVELOPE_FIELDS.map((path) => [1, ...path]), [1, 'payload', 'waits'], [1, 'payload', 'waits', 0], [1, 'payload', 'waits', 0, 'key']],
        (ctx, v) => pinParkedChildren('c', v),
      ),
    },
  },
  resume: {
    kind: 'function',
    async: true,
    slots: {
      store: [(ctx, v) => resume(v, 'e', resumeOptions(ctx))],
      executionId: [(ctx, v) => resume(ctx.events, v, resumeOptions(ctx))],
      options: [(ctx, v) => resume(ctx.events, 'e', v), resumeOptions],
      ...fields('options', resumeOptions, [['fenceIfParkedAt'], ['answer'], ['at']], (ctx, v) => resume(ctx.events, 'e', v)),
    },
  },
  sweep: {
    kind: 'function',
    async: true,
    slots: {
      store: [(ctx, v) => sweep(v, sweepOptions())],
      options: [(ctx, v) => sweep(ctx.events, v), sweepOptions],
      ...fields('options', sweepOptions, [['endedBefore'], ['pageLimit'], ['dryRun'], ['archive'], ['knownParents']], (ctx, v) => sweep(ctx.events, v)),
      'options.knownParents()': [(ctx, v) => sweep(ctx.events, { ...sweepOptions(), knownParents: () => v })],
      'options.knownParents()[0]': [(ctx, v) => sweep(ctx.events, { ...sweepOptions(), knownParents: () => [v] })],
    },
  },
  KERNEL_EVENT_KINDS: { kind: 'value' },
};

// The error classes: a caller may build them (a host store throws
// StaleFenceError); plain JavaScript, never WebAssembly.
for (const name of ['StaleFenceError', 'ResumeRefusedError', 'ResumeContendedError', 'InputError', 'TimerInputError', 'RedriveExhaustedError', 'UnreadableTimerRowError']) {
  const Class = pkg[name];
  TABLE[name] = {
    kind: 'error',
    slots: {
      message: [(ctx, v) => new Class(v)],
      'arguments[1]': [(ctx, v) => new Class('m', v)],
    },
  };
}

/** The slot that calls `Class.prototype[name]` (a method or a getter) on `value`. */
function receiverSlot(Class, name) {
  const descriptor = Object.getOwnPropertyDescriptor(Class.prototype, name);
  const method = descriptor.get ?? descriptor.value;
  return [(ctx, value) => method.call(value)];
}

/** Every call of the table, flat: `{ name, slot, async, call, base, error }`;
 * each method and getter also with a hostile receiver. */
export function calls() {
  const list = [];
  for (const [name, entry] of Object.entries(TABLE)) {
    for (const [slot, [call, base, options]] of Object.entries(entry.slots ?? {})) {
      list.push({ name: `${name}(${slot})`, slot, async: Boolean(options?.async ?? entry.async), call, base, error: entry.kind === 'error' });
    }
    for (const [method, spec] of Object.entries(entry.methods ?? {})) {
      const all = { ...spec.slots, receiver: receiverSlot(pkg[name], method) };
      for (const [slot, [call, base, options]] of Object.entries(all)) {
        list.push({ name: `${name}#${method}(${slot})`, slot, async: Boolean(options?.async ?? spec.async), call, base });
      }
    }
  }
  return list;
}
