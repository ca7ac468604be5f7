//! One resumer task: a node that tries to resume every parked execution.
//!
//! It walks all executions in its own seeded-random order. For each it reads
//! the log, finds the open park, and drives a real [`ResumeMachine`] with
//! [`perform`], one step at a time, so that a crash can be injected between
//! two steps. A resume that lands runs a body through
//! [`Body`](loomfence_runtime::Body): `K` step events and a completion, all
//! under the resume's token. A body whose own
//! append is refused as stale has been fenced out.
//!
//! Dead acquirers (`--dead-acquirers K`) are modelled where they hurt, as
//! the design's "three dead acquirers in a row" race does: right
//! before each of the first `K` acquires of every racing resume, a node
//! that read the same log takes the token with the same expectation (the
//! conditional acquire, or `acquire_fence` in the `--unconditional`
//! control) and dies without appending. Dead acquires made before the race
//! would not contend anything: the resume retries on the token the store
//! reports, and passes them. With `K < MAX_ATTEMPTS` (3) a resume alone on
//! its park lands on a later try (rivals' dead acquirers on the same park
//! can add up to three stale tries); with `K >= 3` every racing resume ends
//! contended. The dead acquirers strike racing resumes only, never the
//! timer service's re-drives, and die with the race. A conditional dead
//! acquire is refused once the park is answered, so it never fences out a
//! running body.
//!
//! A resume that ends contended writes a re-drive row when re-drive is on
//! (see [`crate::harness::redrive`]).
//!
//! The memory store never awaits internally, so every step ends with
//! [`yield_now`]: without it a task would run a whole resume without letting
//! a rival in, and there would be no race to speak of.

use std::sync::Arc;

use indicatif::ProgressBar;
use loomfence_core::AcquireOutcome;
use loomfence_core::{
    Action, Capability, ExecutionId, ExecutionView, Poll, ResumeError, ResumeMachine,
    ResumeRequest, Resumed, resume::Stepped,
};
use loomfence_runtime::step::perform;
use loomfence_store::EventStore;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use serde_json::json;
use tokio::task::yield_now;

use crate::clock::now_ms;
use crate::error::CliError;
use crate::harness::body::{BodyEnd, run_body};
use crate::harness::race::report::Tally;
use crate::harness::redrive::RedriveRows;

/// A parked execution, as set up before the race.
#[derive(Clone, Debug)]
pub(crate) struct Parked {
    /// Its id.
    pub(crate) id: ExecutionId,
    /// The sequence of its park. A resumer that finds no open park still
    /// names this one, as a node holding a stale wake-up would, and lets the
    /// machine refuse it.
    pub(crate) park_seq: u64,
}

/// Where an attempt is to crash, decided before it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Crash {
    /// Right after the step that performed an acquire (conditional or not).
    /// After a successful acquire the resumer dies holding a token: a dead
    /// acquirer, which the next resumer must get past.
    AfterAcquire,
    /// When the machine's next action is the resume's append: the resumer
    /// holds a token and never uses it.
    BeforeAppend,
}

/// How one attempt ended.
#[derive(Debug)]
enum Attempt {
    /// The resume landed; the body is to run.
    Won(Resumed),
    /// The machine finished without a resume.
    Lost(ResumeError),
    /// The resumer crashed at this point.
    Crashed(Crash),
}

/// What every resumer of one race shares.
#[derive(Clone)]
pub(crate) struct Arena {
    /// The store.
    pub(crate) store: Arc<dyn EventStore>,
    /// The executions, in set-up order; each resumer shuffles its own order.
    pub(crate) parked: Arc<[Parked]>,
    /// What every machine is built with.
    pub(crate) capability: Capability,
    /// Step events per body.
    pub(crate) steps: u32,
    /// Crash probability per attempt.
    pub(crate) crash_rate: f64,
    /// Ticked once per attempt.
    pub(crate) progress: ProgressBar,
    /// Dead acquires in front of each resume's first acquires.
    pub(crate) dead_acquirers: u32,
    /// Where a contended resume writes its re-drive row; `None` with
    /// re-drive off.
    pub(crate) redrive: Option<Arc<RedriveRows>>,
}

/// One racing node.
pub(crate) struct Resumer {
    /// Its index, 0-based; part of its seed and of its resume answers.
    index: u32,
    /// The race it is in.
    arena: Arena,
    /// Its own PRNG: its order and its crashes depend only on the seed.
    rng: StdRng,
}

impl Resumer {
    /// A resumer whose random decisions derive from `seed` and `index`.
    pub(crate) fn new(index: u32, seed: u64, arena: Arena) -> Self {
        Self {
            index,
            arena,
            rng: StdRng::seed_from_u64(resumer_seed(seed, index)),
        }
    }

    /// Tries to resume every execution once, in this resumer's order.
    pub(crate) async fn run(mut self) -> Result<Tally, CliError> {
        let parked = Arc::clone(&self.arena.parked);
        let mut order: Vec<&Parked> = parked.iter().collect();
        order.shuffle(&mut self.rng);
        let mut tally = Tally::default();
        for execution in order {
            tally.attempts += 1;
            match self.attempt(execution, &mut tally).await? {
                Attempt::Won(resumed) => {
                    tally.won += 1;
                    match self.body(resumed).await? {
                        BodyEnd::Completed => tally.completed += 1,
                        BodyEnd::FencedOut => tally.fenced_out += 1,
                    }
                }
                Attempt::Lost(ResumeError::Refused(_)) => tally.refused += 1,
                Attempt::Lost(ResumeError::Contended(_)) => {
                    tally.contended += 1;
                    if let Some(rows) = &self.arena.redrive {
                        rows.schedule(&execution.id, self.rng.random::<f64>())
                            .await?;
                        tally.redrive_rows += 1;
                    }
                }
                // Only an unfenced resume ends like this, and the race
                // never asks for one; count it with the refusals rather
                // than stop the run over it.
                Attempt::Lost(ResumeError::StaleFence(_)) => tally.refused += 1,
                Attempt::Lost(other) => return Err(CliError::runtime("resume step")(other.into())),
                Attempt::Crashed(Crash::AfterAcquire) => tally.crashed_after_acquire += 1,
                Attempt::Crashed(Crash::BeforeAppend) => tally.crashed_before_append += 1,
            }
            self.arena.progress.inc(1);
        }
        Ok(tally)
    }

    /// One resume attempt, step by step, with the crash (if any) decided
    /// up front so the run is repeatable from the seed.
    async fn attempt(
        &mut self,
        execution: &Parked,
        tally: &mut Tally,
    ) -> Result<Attempt, CliError> {
        let crash = self.rng.random_bool(self.arena.crash_rate).then(|| {
            if self.rng.random_bool(0.5) {
                Crash::AfterAcquire
            } else {
                Crash::BeforeAppend
            }
        });
        let events = self.arena.store.read_range(&execution.id, 1, None).await?;
        yield_now().await;
        let park_seq = ExecutionView::fold(&events)
            .open_park
            .map_or(execution.park_seq, |park| park.sequence);
        let answer = json!({ "resumer": self.index });
        let request = ResumeRequest::new(park_seq, answer, now_ms());
        let mut machine = ResumeMachine::with_events(
            execution.id.clone(),
            request,
            self.arena.capability,
            &events,
        )?;
        loop {
            // The dead acquirers take the first tries' windows, one each.
            let dead_acquirer = machine.attempts() < self.arena.dead_acquirers;
            let acquiring = match machine.poll() {
                // Every resume, fenced or not, is appended park-conditionally.
                Poll::Act(Action::AppendIfParked { .. }) if crash == Some(Crash::BeforeAppend) => {
                    return Ok(Attempt::Crashed(Crash::BeforeAppend));
                }
                Poll::Act(Action::AcquireFenceIf(expect)) => {
                    if dead_acquirer {
                        let store = &self.arena.store;
                        let outcome = store.acquire_fence_if(&execution.id, expect).await?;
                        if matches!(outcome, AcquireOutcome::Acquired { .. }) {
                            tally.dead_acquires += 1;
                        }
                        yield_now().await;
                    }
                    true
                }
                Poll::Act(Action::AcquireFence) => {
                    if dead_acquirer {
                        self.arena.store.acquire_fence(&execution.id).await?;
                        tally.dead_acquires += 1;
                        yield_now().await;
                    }
                    true
                }
                _ => false,
            };
            let stepped = perform(&*self.arena.store, &mut machine)
                .await
                .map_err(CliError::runtime("resume step"))?;
            match stepped {
                Stepped::Progressed => {}
                Stepped::Done(Ok(resumed)) => return Ok(Attempt::Won(resumed)),
                Stepped::Done(Err(lost)) => return Ok(Attempt::Lost(lost)),
                other => {
                    return Err(CliError::UnknownStep {
                        step: format!("{other:?}"),
                    });
                }
            }
            // Only an acquire that won leaves a dead acquirer behind; after a
            // stale answer the crash waits for the retry's acquire.
            if acquiring && crash == Some(Crash::AfterAcquire) && machine.holds_fence().is_some() {
                return Ok(Attempt::Crashed(Crash::AfterAcquire));
            }
            yield_now().await;
        }
    }

    /// The winner's body, answered as this resumer.
    async fn body(&self, resumed: Resumed) -> Result<BodyEnd, CliError> {
        let by = json!(self.index);
        Ok(run_body(&*self.arena.store, resumed, self.arena.steps, by).await?)
    }
}

/// Resumer `index`'s seed. The index is spread over all 64 bits first, so
/// that nearby seeds (42 and 43) do not give resumers swapped streams, as a
/// plain `seed ^ index` would.
pub(crate) fn resumer_seed(seed: u64, index: u32) -> u64 {
    seed ^ u64::from(index)
        .wrapping_add(1)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resumer_seeds_differ_and_repeat() {
        assert_ne!(resumer_seed(42, 0), resumer_seed(42, 1));
        assert_ne!(resumer_seed(42, 1), resumer_seed(43, 0));
        assert_eq!(resumer_seed(42, 3), resumer_seed(42, 3));
    }
}
