//! The child supervisor's supervision of one parent, one store interaction
//! per step: a pump over the core's [`SuperviseMachine`], run as the
//! supervisor's supervision on a child's end, and as the supervisor's
//! re-driver inside a fire of a re-drive row.
//!
//! Every decision is the machine's (its steps head
//! `core/src/supervise/machine.rs`); this pump performs the action it names
//! against the world's store and timer table, feeds the answer back, and
//! keeps the ledger. A resume the machine asks for is the real
//! [`ResumeMachine`], driven one store action per step ([`drive_one`]).
//! What a step does besides its one store interaction is what needs none:
//! building the next resume, and the draw of a re-drive row (from the
//! world's random source, at the world's time).
//!
//! The world's part: the supervisor writes the first re-drive row on
//! contention ([`OnContention::WriteRow`]) and the re-driver does not
//! ([`OnContention::Answer`]); control (a) ([`Variant::NoRedriveRow`])
//! runs the supervisor with [`OnContention::Answer`] too, which is a fleet
//! with re-drive off. A resume machine that rejects a store answer is a
//! finding, and the run ends [`End::Rejected`].

use loomfence_core::{
    ResumeMachine,
    redrive::Draw,
    supervise::{
        OnContention, SuperviseAction, SuperviseMachine, SuperviseOptions, SuperviseOutcome,
        SupervisePoll,
    },
    timer::RedriveAnswer,
};
use rand::RngExt;

use super::actors::{Driven, Env, drive_one, land};
use super::config::Variant;
use super::error::RedriveSimError;
use super::ledger::{RowSource, RunEnd, RunId};

/// How a supervision ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum End {
    /// The machine's outcome.
    Outcome(SuperviseOutcome),
    /// A resume machine rejected a store answer (a finding).
    Rejected,
}

impl End {
    /// Whether it resumed the parent.
    #[must_use]
    pub fn resumed(&self) -> bool {
        matches!(self, End::Outcome(SuperviseOutcome::Resumed(_)))
    }

    /// The re-driver's answer for this end: the machine's, or failed for a
    /// rejection.
    #[must_use]
    pub fn answer(&self) -> RedriveAnswer {
        match self {
            End::Outcome(outcome) => outcome.redrive_answer(),
            End::Rejected => RedriveAnswer::Failed,
        }
    }
}

/// One supervision of one parent.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SuperviseTask {
    /// The parent.
    pub parent: usize,
    /// Its run in the ledger.
    pub run: RunId,
    /// Whether this is the re-driver (writes no row on contention).
    pub redriver: bool,
    /// The machine, made at the first step from the world's configuration.
    machine: Option<SuperviseMachine>,
    /// The resume in flight.
    resume: Option<Box<ResumeMachine>>,
    /// How it ended, once it has.
    end: Option<End>,
}

impl SuperviseTask {
    /// A supervision of `parent` as `run`.
    #[must_use]
    pub fn new(parent: usize, run: RunId, redriver: bool) -> Self {
        Self {
            parent,
            run,
            redriver,
            machine: None,
            resume: None,
            end: None,
        }
    }

    /// How it ended, once it has.
    #[must_use]
    pub fn outcome(&self) -> Option<&End> {
        self.end.as_ref()
    }

    /// The token its resume holds and has not appended under yet.
    #[must_use]
    pub fn holds_fence(&self) -> Option<u64> {
        self.resume.as_ref()?.holds_fence()
    }

    /// One store interaction (a read, an acquire, an append, the row's
    /// schedule), and what follows it without one.
    pub fn step(&mut self, env: &mut Env<'_>) -> Result<(), RedriveSimError> {
        if self.end.is_some() {
            return Ok(());
        }
        let (parent, run) = (self.parent, self.run);
        let mut machine = match self.machine.take() {
            Some(machine) => machine,
            None => self.machine_for(env),
        };
        if let Some(mut resume) = self.resume.take() {
            match drive_one(env, &mut resume, parent, run)? {
                Driven::Pending => {
                    self.resume = Some(resume);
                    self.machine = Some(machine);
                }
                Driven::Rejected => self.finish(env, End::Rejected),
                Driven::Done(result) => {
                    if let Ok(resumed) = &result {
                        land(env, parent, run, resumed);
                    }
                    machine.handle_resumed(result.as_ref())?;
                    let contended = matches!(
                        machine.poll(),
                        SupervisePoll::Act(SuperviseAction::Draw)
                            | SupervisePoll::Done(SuperviseOutcome::Contended(_))
                    );
                    if contended && !self.redriver {
                        env.ledger.counts.contended_supervisors += 1;
                    }
                    self.follow(env, machine)?;
                }
            }
            return Ok(());
        }
        match machine.poll() {
            SupervisePoll::Act(SuperviseAction::ReadParent) => {
                let id = &env.parents[parent].id;
                let log = env.store.read_range(id, 1, None)?;
                machine.handle_parent(&log)?;
            }
            SupervisePoll::Act(SuperviseAction::ReadChild(child)) => {
                let log = env.store.read_range(&child, 1, None)?;
                machine.handle_child(&log, env.now)?;
            }
            SupervisePoll::Act(SuperviseAction::WriteRow(row)) => {
                env.timers.schedule(&row)?;
                let max = env.config.policy.max_attempts;
                env.ledger
                    .scheduled(&row, parent, RowSource::Supervisor(run), max);
                env.note(|| {
                    format!(
                        "  run {run}: re-drive row 0 for p{parent} at {}",
                        row.wake_at
                    )
                });
                machine.handle_written()?;
            }
            _ => {
                // Resumes and draws are started by `follow`; anything else
                // is of a newer core.
                self.machine = Some(machine);
                return Err(RedriveSimError::Ledger(
                    "the supervise machine asked for an action this pump does not know",
                ));
            }
        }
        self.follow(env, machine)
    }

    /// The machine of this supervision: the world's tries and policy; a
    /// row on contention for the supervisor, unless control (a) leaves it
    /// out.
    fn machine_for(&self, env: &Env<'_>) -> SuperviseMachine {
        let writes_row = !self.redriver && env.config.variant != Variant::NoRedriveRow;
        SuperviseMachine::new(
            env.parents[self.parent].id.clone(),
            SuperviseOptions {
                conditional_tries: env.config.conditional_tries,
                policy: env.config.policy,
                on_contention: if writes_row {
                    OnContention::WriteRow
                } else {
                    OnContention::Answer
                },
            },
        )
    }

    /// After an answer: what needs no store interaction (the next resume's
    /// machine, the draw of a re-drive row, the end), up to the next
    /// action that does.
    fn follow(
        &mut self,
        env: &mut Env<'_>,
        mut machine: SuperviseMachine,
    ) -> Result<(), RedriveSimError> {
        loop {
            match machine.poll() {
                SupervisePoll::Act(SuperviseAction::Resume { request, log }) => {
                    let id = machine.parent().clone();
                    let resume =
                        ResumeMachine::with_events(id, request, env.config.capability(), &log)?;
                    self.resume = Some(Box::new(resume));
                }
                SupervisePoll::Act(SuperviseAction::Draw) => {
                    let draw = Draw::new(env.rng.random::<f64>())?;
                    machine.handle_draw(draw, env.now)?;
                    continue;
                }
                SupervisePoll::Done(outcome) => self.finish(env, End::Outcome(outcome)),
                _ => {}
            }
            self.machine = Some(machine);
            return Ok(());
        }
    }

    /// Records the end in the ledger.
    fn finish(&mut self, env: &mut Env<'_>, end: End) {
        let run_end = match &end {
            End::Outcome(SuperviseOutcome::Resumed(_)) => RunEnd::Resumed,
            End::Outcome(SuperviseOutcome::Waiting) => RunEnd::Waiting,
            End::Outcome(
                SuperviseOutcome::Contended(_)
                | SuperviseOutcome::RedriveScheduled(_)
                | SuperviseOutcome::Fenced(_),
            ) => RunEnd::Contended,
            End::Outcome(_) => RunEnd::Nothing,
            End::Rejected => RunEnd::Rejected,
        };
        env.ledger.end_run(self.run, run_end);
        self.end = Some(end);
    }
}
