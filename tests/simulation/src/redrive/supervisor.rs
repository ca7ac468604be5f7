//! A supervisor node: supervises the parents it is told about, one at a
//! time, one store interaction per step.
//!
//! A child's end notifies one supervisor (the one on the node the child ran
//! on, drawn at random): the runtime's `child_ended`. A notification to a
//! node that is down is lost. A crash drops the node's queue and its
//! supervision in hand (a resume holding a token becomes a dead acquirer);
//! a restarted node rebuilds (the world's model of a supervisor's restart):
//! it supervises every parent again, which is what makes a lost
//! notification or a lost row harmless.

use std::collections::VecDeque;

use super::actors::Env;
use super::error::RedriveSimError;
use super::ledger::{RunEnd, RunKind};
use super::supervise::SuperviseTask;

/// One supervisor node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Supervisor {
    /// Its index.
    pub index: usize,
    /// Whether it is running.
    pub up: bool,
    /// When a crashed node starts again.
    pub restart_at: Option<i64>,
    /// Parents to supervise, in order.
    pub inbox: VecDeque<usize>,
    /// The supervision in hand.
    pub task: Option<SuperviseTask>,
}

impl Supervisor {
    /// Supervisor `index`, up, with nothing to do.
    #[must_use]
    pub fn new(index: usize) -> Self {
        Self {
            index,
            up: true,
            restart_at: None,
            inbox: VecDeque::new(),
            task: None,
        }
    }

    /// Whether it can act.
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        self.up && (self.task.is_some() || !self.inbox.is_empty())
    }

    /// A child of `parent` ended here: queue the parent (once), unless the
    /// node is down (the notification is lost).
    pub fn notify(&mut self, parent: usize) {
        if self.up && !self.inbox.contains(&parent) {
            self.inbox.push_back(parent);
        }
    }

    /// The parent whose resume this node holds an unused token of, if any.
    #[must_use]
    pub fn holding(&self) -> Option<(usize, u64)> {
        let task = self.task.as_ref()?;
        Some((task.parent, task.holds_fence()?))
    }

    /// Crashes the node.
    pub fn crash(&mut self, env: &mut Env<'_>, restart_at: i64) {
        if let Some(task) = self.task.take() {
            env.ledger.end_run(task.run, RunEnd::Crashed);
        }
        self.inbox.clear();
        self.up = false;
        self.restart_at = Some(restart_at);
    }

    /// Starts the node again and rebuilds: every parent is supervised anew.
    pub fn restart(&mut self, parents: usize) {
        self.up = true;
        self.restart_at = None;
        self.inbox = (0..parents).collect();
    }

    /// One interaction of the supervision in hand (starting the next one if
    /// none is).
    pub fn step(&mut self, env: &mut Env<'_>) -> Result<(), RedriveSimError> {
        let mut task = match self.task.take() {
            Some(task) => task,
            None => {
                let Some(parent) = self.inbox.pop_front() else {
                    return Ok(());
                };
                let run = env
                    .ledger
                    .new_run(parent, RunKind::Supervisor { node: self.index });
                let node = self.index;
                env.note(|| format!("  supervisor {node} starts run {run} on p{parent}"));
                SuperviseTask::new(parent, run, false)
            }
        };
        task.step(env)?;
        if let Some(outcome) = task.outcome() {
            let (node, run) = (self.index, task.run);
            env.note(|| format!("  supervisor {node} run {run}: {outcome:?}"));
        } else {
            self.task = Some(task);
        }
        Ok(())
    }
}
