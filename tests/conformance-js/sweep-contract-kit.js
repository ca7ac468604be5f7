// The kit's cases of what the sweep refuses: options, before anything is
// listed; and a store that answers outside the interface (a listing past
// its limit or with an end past its own head, a log that does not run from
// sequence 1, a delete refusal that does not answer the guard), each of
// which stops the sweep with an InputError STORE_CONTRACT and the partial
// report, the child and its parent kept. The rules are the core
// SweepMachine's, the Rust runtime's too. The cases of
// tests/conformance/src/cases/sweep_contract.rs, ported one for one under
// the same names.

import assert from 'node:assert/strict';
import { startedChild, sweep } from 'loomfence/services';

import { describe as describeError, wrap } from './support.js';

const LONG_AGO = 1_000;
const CUTOFF = 5_000;

async function exists(store, id) {
  return (await store.readRange(id, 1)).length > 0;
}

/** The lies, each an override of the store's methods about `child`. */
const LIES = {
  pastTheLimit: (store) => ({
    listExecutions: (after, limit) => store.listExecutions(after, limit + 1),
  }),
  endedPastHead: (store, child) => ({
    async listExecutions(after, limit) {
      const page = await store.listExecutions(after, limit);
      return page.map((s) => (s.executionId === child ? { ...s, ended: { sequence: s.head + 1, at: LONG_AGO } } : s));
    },
  }),
  logWithoutItsStart: (store, child) => ({
    async readRange(id, ...range) {
      const events = await store.readRange(id, ...range);
      return id === child ? events.slice(1) : events;
    },
  }),
  guardsOwnHead: (store, child) => ({
    deleteExecutionIf: (id, guard) => (id === child ? { logChanged: true, head: guard.head } : store.deleteExecutionIf(id, guard)),
  }),
  strangerMoved: (store, child) => ({
    deleteExecutionIf: (id, guard) =>
      id === child ? { parentMoved: true, parent: 'contract-stranger' } : store.deleteExecutionIf(id, guard),
  }),
};

/** Sweeps `store` through `lie` about an old child of a running parent;
 * expects STORE_CONTRACT, the child and its parent kept. */
async function expectContract(store, lie) {
  const [parent, child] = [`contract-${lie}-parent`, `contract-${lie}-child`];
  await store.append(parent, { kind: 'EXECUTION_STARTED', at: 0 });
  await store.appendMany(child, [startedChild(parent, 0), { kind: 'EXECUTION_COMPLETED', at: LONG_AGO }]);
  await assert.rejects(sweep(wrap(store, LIES[lie](store, child)), { endedBefore: CUTOFF, pageLimit: 1 }), (error) => {
    assert.equal(error.code, 'STORE_CONTRACT', `${lie}: ${describeError(error)}`);
    assert.ok(error.report.kept.every((kept) => kept.executionId !== child), `${lie}: not a kept execution`);
    return true;
  });
  assert.ok(await exists(store, child), `${lie}: the child is kept`);
  assert.ok(await exists(store, parent), `${lie}: the parent is kept`);
}

/** The cases: [name, run(store, capabilities)]. */
export const SWEEP_CONTRACT_CASES = [
  [
    'sweep_contract::a_page_limit_out_of_bounds_is_refused_before_listing',
    async (store) => {
      await store.appendMany('contract-limit-root', [{ kind: 'EXECUTION_STARTED', at: 0 }, { kind: 'EXECUTION_COMPLETED', at: LONG_AGO }]);
      let listed = 0;
      const counting = wrap(store, {
        listExecutions: (...args) => ((listed += 1), store.listExecutions(...args)),
      });
      for (const pageLimit of [0, 10_001]) {
        await assert.rejects(sweep(counting, { endedBefore: CUTOFF, pageLimit }), (error) => {
          assert.equal(error.code, 'INVALID_LIMIT', `${pageLimit}: ${describeError(error)}`);
          return true;
        });
      }
      assert.equal(listed, 0, 'nothing was listed');
      assert.ok(await exists(store, 'contract-limit-root'));
    },
  ],
  [
    'sweep_contract::a_listing_outside_the_interface_stops_the_sweep',
    async (store) => {
      await expectContract(store, 'pastTheLimit');
      await expectContract(store, 'endedPastHead');
    },
  ],
  ['sweep_contract::a_log_not_from_sequence_one_stops_the_sweep', (store) => expectContract(store, 'logWithoutItsStart')],
  [
    'sweep_contract::a_delete_answer_outside_the_guard_stops_the_sweep',
    async (store) => {
      await expectContract(store, 'guardsOwnHead');
      await expectContract(store, 'strangerMoved');
    },
  ],
];
