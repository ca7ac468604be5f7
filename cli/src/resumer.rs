//! One resumer task: a node that tries to resume every parked execution.
//!
//! It walks all executions in its own seeded-random order. For each it reads
//! the log, finds the open park, and drives a real [`ResumeMachine`] with
//! [`perform`], one step at a time, so that a crash can be injected between
//! two steps. A resume that lands runs a body through [`Body`]: `K` step
//! events and a completion, all under the resume's token. A body whose own
//! append is refused as stale has been fenced out.
//!
//! The memory store never awaits internally, so every step ends with
//! [`yield_now`]: without it a task would run a whole resume without letting
//! a rival in, and there would be no race to speak of.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use indicatif::ProgressBar;
use loomfence_core::{
    Action, Capability, ExecutionId, ExecutionView, JsonObject, KernelKind, MachineError, NewEvent,
    Poll, ResumeError, ResumeMachine, ResumeRequest, Resumed, Stepped,
};
use loomfence_runtime::{Body, ResumeFailure, perform};
use loomfence_store::{EventStore, StoreError};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};
use tokio::task::yield_now;

use crate::report::Tally;

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

/// What stopped a resumer: a store or machine failure, never a lost race.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResumerError {
    /// The store failed outside the resume protocol (a read, a body append).
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// A resume step failed: the store refused the request or the machine
    /// rejected its answer (or the resume ended in a way this CLI does not
    /// know, which it will not guess how to count).
    #[error("resume step: {0}")]
    Resume(#[from] ResumeFailure),
    /// The machine rejected the events it was started from.
    #[error("resume machine: {0}")]
    Machine(#[from] MachineError),
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

/// How a body ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BodyEnd {
    /// Every step and the completion were appended.
    Completed,
    /// An append was refused as stale: a rival acquired after the resume.
    FencedOut,
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
    pub(crate) async fn run(mut self) -> Result<Tally, ResumerError> {
        let parked = Arc::clone(&self.arena.parked);
        let mut order: Vec<&Parked> = parked.iter().collect();
        order.shuffle(&mut self.rng);
        let mut tally = Tally::default();
        for execution in order {
            tally.attempts += 1;
            match self.attempt(execution).await? {
                Attempt::Won(resumed) => {
                    tally.won += 1;
                    match self.body(resumed).await? {
                        BodyEnd::Completed => tally.completed += 1,
                        BodyEnd::FencedOut => tally.fenced_out += 1,
                    }
                }
                Attempt::Lost(ResumeError::Refused(_)) => tally.refused += 1,
                Attempt::Lost(ResumeError::Contended(_)) => tally.contended += 1,
                // Only an unfenced resume ends like this, and the race
                // never asks for one; count it with the refusals rather
                // than stop the run over it.
                Attempt::Lost(ResumeError::StaleFence(_)) => tally.refused += 1,
                Attempt::Lost(other) => return Err(ResumeFailure::Resume(other).into()),
                Attempt::Crashed(Crash::AfterAcquire) => tally.crashed_after_acquire += 1,
                Attempt::Crashed(Crash::BeforeAppend) => tally.crashed_before_append += 1,
            }
            self.arena.progress.inc(1);
        }
        Ok(tally)
    }

    /// One resume attempt, step by step, with the crash (if any) decided
    /// up front so the run is repeatable from the seed.
    async fn attempt(&mut self, execution: &Parked) -> Result<Attempt, ResumerError> {
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
            let acquiring = match machine.poll() {
                // Every resume, fenced or not, is appended park-conditionally.
                Poll::Act(Action::AppendIfParked { .. }) if crash == Some(Crash::BeforeAppend) => {
                    return Ok(Attempt::Crashed(Crash::BeforeAppend));
                }
                Poll::Act(Action::AcquireFenceIf(_) | Action::AcquireFence) => true,
                _ => false,
            };
            match perform(&*self.arena.store, &mut machine).await? {
                Stepped::Progressed => {}
                Stepped::Done(Ok(resumed)) => return Ok(Attempt::Won(resumed)),
                Stepped::Done(Err(lost)) => return Ok(Attempt::Lost(lost)),
                other => {
                    let unknown = ResumeFailure::Unsupported(format!("{other:?}"));
                    return Err(unknown.into());
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

    /// The winner's body: `steps` step events, then the completion, all
    /// under the resume's token, yielding between appends so rivals can
    /// interleave.
    async fn body(&self, resumed: Resumed) -> Result<BodyEnd, ResumerError> {
        let mut body = Body::new(&*self.arena.store, resumed);
        for step in 0..self.arena.steps {
            yield_now().await;
            let mut payload = JsonObject::new();
            payload.insert("step".to_owned(), Value::from(step));
            let event = NewEvent::kernel(KernelKind::StepCompleted, now_ms()).with_payload(payload);
            match body.append(event).await {
                Ok(_) => {}
                Err(StoreError::StaleFence(_)) => return Ok(BodyEnd::FencedOut),
                Err(other) => return Err(other.into()),
            }
        }
        yield_now().await;
        let output = json!({ "by": self.index });
        match body.complete(output, now_ms()).await {
            Ok(_) => Ok(BodyEnd::Completed),
            Err(StoreError::StaleFence(_)) => Ok(BodyEnd::FencedOut),
            Err(other) => Err(other.into()),
        }
    }
}

/// Resumer `index`'s seed. The index is spread over all 64 bits first, so
/// that nearby seeds (42 and 43) do not give resumers swapped streams, as a
/// plain `seed ^ index` would.
fn resumer_seed(seed: u64, index: u32) -> u64 {
    seed ^ u64::from(index)
        .wrapping_add(1)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Now, in ms since the epoch: the CLI is a host, so it reads the clock the
/// core never does. A clock before 1970 reads as 0.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
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
