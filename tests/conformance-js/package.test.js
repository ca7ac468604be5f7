// The package's store-independent exports, checked against docs/design.md:
// KERNEL_EVENT_KINDS, isAnsweringKind (the classification every store and the
// kit rely on) and locatePark.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KERNEL_EVENT_KINDS, isAnsweringKind, locatePark } from 'loomfence';

import { ANSWERING_KINDS, IGNORABLE_KINDS, expect } from './support.js';

const envelope = (sequence, kind, extra = {}) => ({ executionId: 'e', sequence, kind, payload: {}, metadata: {}, at: 1, ...extra });

describe('KERNEL_EVENT_KINDS', () => {
  test('is the design\'s fifteen kernel kinds, frozen', () => {
    assert.ok(Array.isArray(KERNEL_EVENT_KINDS));
    assert.ok(Object.isFrozen(KERNEL_EVENT_KINDS));
    assert.deepEqual([...KERNEL_EVENT_KINDS].sort(), [...ANSWERING_KINDS, ...IGNORABLE_KINDS].sort());
    assert.throws(() => KERNEL_EVENT_KINDS.push('X'), TypeError);
  });
});

describe('isAnsweringKind', () => {
  test('classifies every kernel kind as the design does', () => {
    for (const kind of ANSWERING_KINDS) assert.equal(isAnsweringKind({ kind }), true, kind);
    for (const kind of IGNORABLE_KINDS) assert.equal(isAnsweringKind({ kind }), false, kind);
  });

  test('an application kind is ignorable unless stamped metadata.kernel === true', () => {
    for (const kind of ['app.emit', 'EXECUTION_PAUSED', 'execution_resumed', 'EXECUTION_RESUMED ']) {
      assert.equal(isAnsweringKind({ kind }), false, kind);
      assert.equal(isAnsweringKind({ kind, metadata: {} }), false, kind);
      assert.equal(isAnsweringKind({ kind, metadata: { kernel: true } }), true, `${kind} stamped`);
      for (const stamp of ['true', 1, false, null, {}]) {
        assert.equal(isAnsweringKind({ kind, metadata: { kernel: stamp } }), false, `${kind} stamped ${JSON.stringify(stamp)}`);
      }
    }
  });

  test('a stamp does not reclassify a kernel kind', () => {
    for (const kind of IGNORABLE_KINDS) assert.equal(isAnsweringKind({ kind, metadata: { kernel: true } }), false, kind);
  });

  test('takes an envelope as well as a new event', () => {
    assert.equal(isAnsweringKind(envelope(3, 'EXECUTION_RESUMED')), true);
    assert.equal(isAnsweringKind(envelope(3, 'X', { metadata: { kernel: true, fence: 2 } })), true);
    assert.equal(isAnsweringKind(envelope(3, 'EXECUTION_DENIED')), false);
  });

  test('refuses what is not an event with a TypeError', () => {
    for (const bad of [null, undefined, 'EXECUTION_RESUMED', 7]) {
      assert.throws(() => isAnsweringKind(bad), (e) => e instanceof TypeError && e.code === 'NOT_AN_OBJECT', String(bad));
    }
    assert.throws(() => isAnsweringKind({ kind: 5 }), (e) => e instanceof TypeError && e.code === 'NOT_A_STRING');
  });
});

describe('locatePark', () => {
  test('is the newest park with no answering event after it', () => {
    const log = [envelope(1, 'EXECUTION_STARTED'), envelope(2, 'EXECUTION_SUSPENDED'), envelope(3, 'EXECUTION_DENIED'), envelope(4, 'app.output')];
    assert.deepEqual(locatePark(log), log[1]);
    const reparked = [envelope(1, 'EXECUTION_SUSPENDED'), envelope(2, 'EXECUTION_RESUMED'), envelope(3, 'EXECUTION_SUSPENDED'), envelope(4, 'STEP_FAILED')];
    assert.deepEqual(locatePark(reparked), reparked[2]);
    const fenced = [envelope(1, 'EXECUTION_SUSPENDED', { metadata: { fence: 3 } })];
    assert.equal(locatePark(fenced).metadata.fence, 3, 'the park keeps its token, which acquireFenceIf expects');
  });

  test('is undefined when nothing is parked or the park was answered', () => {
    assert.equal(locatePark([]), undefined);
    assert.equal(locatePark([envelope(1, 'EXECUTION_STARTED')]), undefined);
    for (const answer of ANSWERING_KINDS.filter((k) => k !== 'EXECUTION_SUSPENDED')) {
      assert.equal(locatePark([envelope(1, 'EXECUTION_SUSPENDED'), envelope(2, answer)]), undefined, answer);
    }
    assert.equal(locatePark([envelope(1, 'EXECUTION_SUSPENDED'), envelope(2, 'X', { metadata: { kernel: true } })]), undefined);
  });

  test('refuses what is not a log of envelopes', () => {
    assert.throws(() => locatePark({}), (e) => e instanceof TypeError && e.code === 'NOT_AN_ARRAY');
    assert.throws(() => locatePark([{ kind: 'EXECUTION_SUSPENDED', at: 1 }]), (e) => e instanceof expect.invalidEvent.type);
  });
});
