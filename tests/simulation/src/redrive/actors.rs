//! The simple participants (children, dead acquirers, parent bodies), what
//! every step is given ([`Env`]), and the one-step drive of a resume
//! machine that records who moved a token.

use loomfence_core::Error as CoreError;
use loomfence_core::drive;
use loomfence_core::{
    AcquireOutcome, AppendError, Capability, ExecutionId, KernelKind, MemoryStore, NewEvent,
    ParkExpectation, Poll, ResumeError, ResumeMachine, Resumed, park::Wait, timer::TimerTable,
};

use super::Rng64;
use super::config::Config;
use super::error::RedriveSimError;
use super::ledger::{Finding, Landing, Ledger, RunEnd, RunId, Tag};

/// The sequence of every parent's park (`EXECUTION_STARTED`, then the park).
pub const PARK_SEQ: u64 = 2;

/// A parent execution, parked at [`PARK_SEQ`] on its children (and maybe a
/// timer).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Parent {
    /// Its id.
    pub id: ExecutionId,
    /// Its children, in the order the world made them.
    pub children: Vec<ExecutionId>,
    /// What its park waits on.
    pub waits: Vec<Wait>,
}

/// What a step is given: the shared state, the clock, the draw source.
#[derive(Debug)]
pub struct Env<'a> {
    /// Every log and token.
    pub store: &'a mut MemoryStore,
    /// Every timer row.
    pub timers: &'a mut TimerTable,
    /// The harness's record.
    pub ledger: &'a mut Ledger,
    /// Parent bodies running after their resume.
    pub bodies: &'a mut Vec<Body>,
    /// The parents.
    pub parents: &'a [Parent],
    /// The world's parameters.
    pub config: &'a Config,
    /// The virtual clock, ms.
    pub now: i64,
    /// The seeded random source (draws, choices).
    pub rng: &'a mut Rng64,
    /// Where a verbose run writes what each step did.
    pub trace: Option<&'a mut Vec<String>>,
}

impl Env<'_> {
    /// Records a line of the verbose trace, built only when tracing.
    pub fn note(&mut self, line: impl FnOnce() -> String) {
        if let Some(trace) = self.trace.as_deref_mut() {
            trace.push(line());
        }
    }

    /// The index of the parent with this id.
    pub fn parent_index(&self, id: &ExecutionId) -> Result<usize, RedriveSimError> {
        self.parents
            .iter()
            .position(|parent| parent.id == *id)
            .ok_or(RedriveSimError::Ledger(
                "a row names no parent of the world",
            ))
    }
}

/// Where a resume machine is after one driven step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Driven {
    /// It has more to do.
    Pending,
    /// It finished.
    Done(Result<Resumed, ResumeError>),
    /// It rejected the store's answer (recorded as a finding; the run ends).
    Rejected,
}

/// Performs `machine`'s pending store action for `run` (about `parent`),
/// recording any bump of the parent's token as the run's, and any rejection
/// as a finding.
pub fn drive_one(
    env: &mut Env<'_>,
    machine: &mut ResumeMachine,
    parent: usize,
    run: RunId,
) -> Result<Driven, RedriveSimError> {
    let id = machine.execution_id().clone();
    let before = env.store.current_fence(&id);
    let pending = machine.poll();
    match drive::step(env.store, machine) {
        Ok(_) => {}
        Err(CoreError::Contract(error)) => {
            env.ledger.findings.push(Finding::Rejected { run, error });
            env.ledger.end_run(run, RunEnd::Rejected);
            return Ok(Driven::Rejected);
        }
        Err(other) => return Err(other.into()),
    }
    let after = env.store.current_fence(&id);
    for _ in before..after {
        env.ledger.bump(parent, Tag::Run(run));
    }
    env.note(|| format!("  run {run} on p{parent}: {pending:?} (token {before} -> {after})"));
    Ok(match machine.poll() {
        Poll::Done(result) => Driven::Done(result),
        _ => Driven::Pending,
    })
}

/// Records a landed resume of `parent` by `run` and starts its body.
pub fn land(env: &mut Env<'_>, parent: usize, run: RunId, resumed: &Resumed) {
    let landing = Landing {
        run,
        sequence: resumed.resumed.sequence,
        fence: resumed.fence,
    };
    env.ledger.landed(parent, landing);
    env.ledger.end_run(run, RunEnd::Resumed);
    env.bodies.push(Body::new(parent, resumed.fence));
    env.note(|| {
        format!(
            "  run {run} LANDED p{parent} at {} under {:?}",
            landing.sequence, landing.fence
        )
    });
}

/// A child execution that completes at a time.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Child {
    /// Its parent.
    pub parent: usize,
    /// Its id.
    pub id: ExecutionId,
    /// When it completes (it may complete later: it is scheduled like
    /// anyone else).
    pub finish_at: i64,
    /// Whether it has completed.
    pub done: bool,
}

impl Child {
    /// Whether it can complete now.
    #[must_use]
    pub fn is_enabled(&self, now: i64) -> bool {
        !self.done && now >= self.finish_at
    }

    /// Appends its `EXECUTION_COMPLETED`.
    pub fn step(&mut self, store: &mut MemoryStore, now: i64) -> Result<(), RedriveSimError> {
        let mut output = loomfence_core::JsonObject::new();
        output.insert("child".to_owned(), self.id.to_string().into());
        store.append(
            &self.id,
            NewEvent::kernel(KernelKind::ExecutionCompleted, now).with_payload(output),
        )?;
        self.done = true;
        Ok(())
    }
}

/// When a dead acquirer acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeadMode {
    /// Any step from this time on.
    Eager {
        /// From when.
        at: i64,
    },
    /// Only while a live resume of its parent holds the current token and
    /// has not appended under it yet (the rival fencing behind an acquire),
    /// or any step once this time has passed.
    Lurking {
        /// When it stops waiting for a window.
        deadline: i64,
    },
}

/// A node that acquires a parent's token once and dies without appending.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeadAcquirer {
    /// The parent.
    pub parent: usize,
    /// `Conditional`: reads the current token and `acquire_fence_if`s it
    /// for the park; `FencingOnly`: `acquire_fence`.
    pub via: Capability,
    /// When it acts.
    pub mode: DeadMode,
    /// The token it took, once it has acted (`Some(None)`: it was stale).
    pub took: Option<Option<u64>>,
}

impl DeadAcquirer {
    /// Whether it may act now; `window` says whether a live resume of its
    /// parent holds an unused token.
    #[must_use]
    pub fn is_enabled(&self, now: i64, window: bool) -> bool {
        self.took.is_none()
            && match self.mode {
                DeadMode::Eager { at } => now >= at,
                DeadMode::Lurking { deadline } => window || now >= deadline,
            }
    }

    /// The one acquire.
    pub fn step(
        &mut self,
        store: &mut MemoryStore,
        parent: &ExecutionId,
    ) -> Result<Option<u64>, RedriveSimError> {
        let took = match self.via {
            Capability::Conditional => {
                let expect = ParkExpectation {
                    fence: store.current_fence(parent),
                    park_seq: PARK_SEQ,
                };
                match store.acquire_fence_if(parent, expect)? {
                    AcquireOutcome::Acquired { fence } => Some(fence),
                    _ => None,
                }
            }
            Capability::FencingOnly => Some(store.acquire_fence(parent)),
            _ => None,
        };
        self.took = Some(took);
        Ok(took)
    }
}

/// A parent's body after its resume: one step, then its completion, both
/// under the token its resume landed with.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Body {
    /// The parent.
    pub parent: usize,
    /// The token (`None`: the resume was unfenced).
    pub fence: Option<u64>,
    /// Where it is.
    pub phase: BodyPhase,
}

/// Progress of a body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BodyPhase {
    /// Appends `STEP_COMPLETED` next.
    Step,
    /// Appends `EXECUTION_COMPLETED` next.
    Complete,
    /// Finished.
    Done,
    /// An append was refused as stale: fenced out (a breach).
    FencedOut {
        /// The token that beat it.
        current: u64,
    },
}

impl Body {
    /// A body starting after a resume under `fence`.
    #[must_use]
    pub fn new(parent: usize, fence: Option<u64>) -> Self {
        Self {
            parent,
            fence,
            phase: BodyPhase::Step,
        }
    }

    /// Whether it still runs.
    #[must_use]
    pub fn is_running(&self) -> bool {
        matches!(self.phase, BodyPhase::Step | BodyPhase::Complete)
    }

    /// Its next append.
    pub fn step(
        &mut self,
        store: &mut MemoryStore,
        parent: &ExecutionId,
        now: i64,
    ) -> Result<(), RedriveSimError> {
        let (kind, next) = match self.phase {
            BodyPhase::Step => (KernelKind::StepCompleted, BodyPhase::Complete),
            BodyPhase::Complete => (KernelKind::ExecutionCompleted, BodyPhase::Done),
            BodyPhase::Done | BodyPhase::FencedOut { .. } => return Ok(()),
        };
        let mut event = NewEvent::kernel(kind, now);
        if let Some(token) = self.fence {
            event = event.with_fence(token);
        }
        self.phase = match store.append(parent, event) {
            Ok(_) => next,
            Err(AppendError::Stale(stale)) => BodyPhase::FencedOut {
                current: stale.current,
            },
            Err(other) => return Err(other.into()),
        };
        Ok(())
    }
}
