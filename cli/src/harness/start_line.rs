//! The start of a timed run: every task spawned and waiting, then the
//! clock, then the release.
//!
//! A barrier the timer also waits at releases the tasks and the timer at
//! once, so on a busy machine the tasks can run (even finish) before the
//! timer reads its clock: `bench` once reported 126 million executions a
//! second and `race` an elapsed time of 0 ms. Here the timer reads the
//! clock while the tasks are still held, and only then lets them go.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{Barrier, OwnedRwLockWriteGuard, RwLock};

/// Held by the timer until [`StartLine::start`]; each task waits at
/// [`Runner::ready`].
pub(crate) struct StartLine {
    /// Every task and the timer meet here: all are spawned and waiting.
    ready: Arc<Barrier>,
    /// Read by the tasks after `ready`; the timer's write guard holds them.
    gate: Arc<RwLock<()>>,
    /// The timer's hold on the gate, dropped at the start.
    hold: OwnedRwLockWriteGuard<()>,
}

/// What a task waits at.
#[derive(Clone)]
pub(crate) struct Runner {
    /// See [`StartLine`].
    ready: Arc<Barrier>,
    /// See [`StartLine`].
    gate: Arc<RwLock<()>>,
}

impl StartLine {
    /// A start line for `tasks` tasks (each given a [`StartLine::runner`]).
    pub(crate) fn new(tasks: usize) -> Self {
        let gate = Arc::new(RwLock::new(()));
        let hold = Arc::clone(&gate)
            .try_write_owned()
            .expect("a new lock is free");
        Self {
            ready: Arc::new(Barrier::new(tasks + 1)),
            gate,
            hold,
        }
    }

    /// What one task waits at.
    pub(crate) fn runner(&self) -> Runner {
        Runner {
            ready: Arc::clone(&self.ready),
            gate: Arc::clone(&self.gate),
        }
    }

    /// Waits until every task is waiting, reads the clock, then releases
    /// them: no task's work falls before the instant returned.
    pub(crate) async fn start(self) -> Instant {
        self.ready.wait().await;
        let began = Instant::now();
        drop(self.hold);
        began
    }
}

impl Runner {
    /// Waits until the timer has read its clock.
    pub(crate) async fn ready(self) {
        self.ready.wait().await;
        drop(self.gate.read().await);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every task's first instant is at or after the clock's start, however
    /// the runtime schedules them; with a barrier the timer shared, a task
    /// on another thread could run before the timer read its clock.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn no_task_starts_before_the_clock() {
        for _ in 0..200 {
            let line = StartLine::new(8);
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..8 {
                let runner = line.runner();
                tasks.spawn(async move {
                    runner.ready().await;
                    Instant::now()
                });
            }
            let began = line.start().await;
            while let Some(first) = tasks.join_next().await {
                assert!(first.expect("the task ran") >= began);
            }
        }
    }
}
