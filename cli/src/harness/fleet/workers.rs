//! The fleet's worker processes: started as `loomfence worker` children of
//! this process, killed with SIGKILL and started again, stopped with
//! SIGTERM at the end.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

use super::args::FleetArgs;
use crate::error::CliError;

/// The application name the workers' PostgreSQL connections carry, by
/// which the chaos monkey finds them.
pub(crate) const APPLICATION_NAME: &str = "loomfence-worker";

/// How a worker is started: everything but its node name.
#[derive(Clone, Debug)]
pub(crate) struct Launch {
    /// `--store` as the workers take it.
    pub(crate) store: String,
    /// `--schema`, on PostgreSQL.
    pub(crate) schema: Option<String>,
    /// Further options, passed as they are.
    pub(crate) options: Vec<String>,
    /// Where each worker's log goes (`worker-<k>.log`, appended to by
    /// every incarnation).
    pub(crate) logs: PathBuf,
}

/// How the workers ended when they were stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stopped {
    /// Workers that exited 0 after SIGTERM.
    pub(crate) clean: u32,
    /// Workers that exited otherwise, or had to be killed.
    pub(crate) unclean: u32,
}

/// The running workers.
pub(crate) struct Workers {
    /// How each is started.
    launch: Launch,
    /// One slot per worker: its process and how many times it was started.
    slots: Vec<(Child, u32)>,
    /// Workers that exited on their own during the run (a worker never
    /// should: it runs until SIGTERM).
    pub(crate) died: u32,
}

impl Workers {
    /// Starts `count` workers.
    pub(crate) fn start(launch: Launch, count: usize) -> Result<Self, CliError> {
        let mut slots = Vec::with_capacity(count);
        for index in 0..count {
            slots.push((spawn(&launch, index, 0)?, 1));
        }
        Ok(Self {
            launch,
            slots,
            died: 0,
        })
    }

    /// How many workers there are.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// SIGKILLs worker `index` and starts it again at once.
    pub(crate) async fn kill_and_restart(&mut self, index: usize) -> Result<(), CliError> {
        let (child, incarnation) = &mut self.slots[index];
        child.kill().await.map_err(|e| CliError::StopWorker {
            index,
            reason: e.to_string(),
        })?;
        *child = spawn(&self.launch, index, *incarnation)?;
        *incarnation += 1;
        Ok(())
    }

    /// Restarts every worker that exited on its own, counting each in
    /// [`Workers::died`]: the run goes on with W workers, and the report
    /// says it happened.
    pub(crate) fn restart_the_dead(&mut self) -> Result<(), CliError> {
        for index in 0..self.slots.len() {
            let (child, incarnation) = &mut self.slots[index];
            if let Ok(Some(status)) = child.try_wait() {
                say(
                    index,
                    &format!("exited on its own ({status}); starting it again"),
                );
                self.died += 1;
                *child = spawn(&self.launch, index, *incarnation)?;
                *incarnation += 1;
            }
        }
        Ok(())
    }

    /// Sends SIGTERM to every worker and waits up to `patience` for each
    /// to exit; one still running then is killed and counted unclean.
    pub(crate) async fn stop(self, patience: Duration) -> Result<Stopped, CliError> {
        let mut slots = self.slots;
        for (index, (child, _)) in slots.iter().enumerate() {
            if let Some(pid) = child.id() {
                let pid = Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX));
                kill(pid, Signal::SIGTERM).map_err(|e| CliError::StopWorker {
                    index,
                    reason: e.to_string(),
                })?;
            }
        }
        let mut stopped = Stopped::default();
        for (index, (child, _)) in slots.iter_mut().enumerate() {
            match tokio::time::timeout(patience, child.wait()).await {
                Ok(Ok(status)) if status.success() => stopped.clean += 1,
                Ok(Ok(status)) => {
                    say(index, &format!("ended {status} after SIGTERM"));
                    stopped.unclean += 1;
                }
                Ok(Err(error)) => {
                    return Err(CliError::StopWorker {
                        index,
                        reason: error.to_string(),
                    });
                }
                Err(_) => {
                    say(index, "still running after SIGTERM; killed");
                    let _ = child.kill().await;
                    stopped.unclean += 1;
                }
            }
        }
        Ok(stopped)
    }
}

/// Starts incarnation `incarnation` of worker `index`.
fn spawn(launch: &Launch, index: usize, incarnation: u32) -> Result<Child, CliError> {
    let failed = |source| CliError::Io {
        what: format!("starting worker {index}"),
        source,
    };
    let log = log_file(&launch.logs, index).map_err(failed)?;
    let exe = std::env::current_exe().map_err(failed)?;
    let mut command = Command::new(exe);
    command
        .arg("worker")
        .arg("--store")
        .arg(&launch.store)
        .arg("--node")
        .arg(format!("worker-{index}-{incarnation}"))
        .args(&launch.options)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        // A fleet that dies takes its workers with it.
        .kill_on_drop(true);
    if let Some(schema) = &launch.schema {
        command.arg("--schema").arg(schema);
    }
    command.spawn().map_err(failed)
}

/// Worker `index`'s log, appended to.
fn log_file(dir: &Path, index: usize) -> std::io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("worker-{index}.log")))
}

/// A line about worker `index` on the fleet's stderr.
fn say(index: usize, what: &str) {
    eprintln!("fleet: worker {index} {what}");
}

/// `--store` as the workers take it: on PostgreSQL, with the application
/// name `loomfence-worker`, by which `--terminate-every` finds their
/// connections.
pub(super) fn worker_store(store: &str) -> String {
    let Some(url) = store.strip_prefix("postgres:") else {
        return store.to_owned();
    };
    let tagged = if url.contains("://") {
        let join = if url.contains('?') { '&' } else { '?' };
        format!("{url}{join}application_name={}", APPLICATION_NAME)
    } else {
        format!("{url} application_name={}", APPLICATION_NAME)
    };
    format!("postgres:{tagged}")
}

/// The options every worker gets.
pub(super) fn worker_options(args: &FleetArgs) -> Vec<String> {
    let mut options = vec![
        "--steps".to_owned(),
        args.steps.to_string(),
        "--feed-poll".to_owned(),
        format!("{}ms", args.feed_poll.as_millis()),
        "--log-json".to_owned(),
    ];
    if args.unconditional {
        options.push("--unconditional".to_owned());
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_stores_carry_the_application_name() {
        assert_eq!(
            worker_store("postgres:postgres://u@h/db"),
            "postgres:postgres://u@h/db?application_name=loomfence-worker"
        );
        assert_eq!(
            worker_store("postgres:postgres://u@h/db?sslmode=disable"),
            "postgres:postgres://u@h/db?sslmode=disable&application_name=loomfence-worker"
        );
        assert_eq!(
            worker_store("postgres:host=/tmp user=u"),
            "postgres:host=/tmp user=u application_name=loomfence-worker"
        );
        assert_eq!(worker_store("sqlite:/tmp/f.db"), "sqlite:/tmp/f.db");
    }
}
