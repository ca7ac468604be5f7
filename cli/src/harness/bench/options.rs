//! `loomfence bench`'s options after validation: what is measured, on
//! which store, how hard. Everything that can be refused before the bench
//! runs is refused here, with one `error: …` line and exit code 2.

use loomfence_sqlite::Durability;

use crate::error::CliError;
use crate::harness::bench::workloads::Workload;
use crate::store::StoreArg;

/// Which measurement `loomfence bench` makes (`--workload`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Suite {
    /// The kernel's workloads: appends, fences, park/resume.
    Kernel,
    /// One retention sweep over a store of mixed executions.
    Retention,
}

/// Executions per run of each kernel workload by default.
pub(crate) const KERNEL_EXECUTIONS: u32 = 3_000;
/// Executions in the retention bench's store by default (the size of the
/// conformance kit's sweep case).
pub(crate) const RETENTION_EXECUTIONS: u32 = 10_000;
/// Measured rounds of the kernel workloads by default.
pub(crate) const KERNEL_RUNS: u32 = 3;

/// The bench's options after validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BenchSettings {
    /// What is measured.
    pub(crate) suite: Suite,
    /// The backend.
    pub(crate) store: StoreArg,
    /// Concurrent tasks.
    pub(crate) concurrency: u32,
    /// Executions per run of each workload.
    pub(crate) executions: u32,
    /// Measured rounds.
    pub(crate) runs: u32,
    /// PostgreSQL connections per store.
    pub(crate) pool: usize,
    /// Retention only: time a second sweep that archives.
    pub(crate) archive: bool,
    /// Kernel only: the workloads to run; empty: every one.
    pub(crate) only: Vec<Workload>,
}

/// The options as typed, before the checks clap cannot do.
#[derive(Clone, Debug)]
pub(crate) struct RawBench {
    /// `--workload`.
    pub(crate) suite: Suite,
    /// `--store`, unparsed.
    pub(crate) store: String,
    /// `--concurrency`.
    pub(crate) concurrency: u32,
    /// `--executions`, if given.
    pub(crate) executions: Option<u32>,
    /// `--runs`, if given.
    pub(crate) runs: Option<u32>,
    /// `--archive`.
    pub(crate) archive: bool,
    /// `--pool`, if given.
    pub(crate) pool: Option<u32>,
    /// `--sqlite-durability`, if given.
    pub(crate) sqlite_durability: Option<Durability>,
    /// `--only`: workload keys.
    pub(crate) only: Vec<String>,
}

impl RawBench {
    /// Checks the ranges and the options that belong to one workload
    /// only; fills in the workload's defaults; the pool defaults to one
    /// connection per task.
    pub(crate) fn validate(self) -> Result<BenchSettings, CliError> {
        match self.suite {
            Suite::Kernel if self.archive => {
                return Err(CliError::OnlyWith {
                    option: "archive",
                    with: "--workload retention",
                });
            }
            // The retention bench times one sweep: there are no rounds.
            Suite::Retention if self.runs.is_some() => {
                return Err(CliError::OnlyWith {
                    option: "runs",
                    with: "--workload kernel",
                });
            }
            Suite::Retention if !self.only.is_empty() => {
                return Err(CliError::OnlyWith {
                    option: "only",
                    with: "--workload kernel",
                });
            }
            _ => {}
        }
        let executions = self.executions.unwrap_or(match self.suite {
            Suite::Kernel => KERNEL_EXECUTIONS,
            Suite::Retention => RETENTION_EXECUTIONS,
        });
        let runs = self.runs.unwrap_or(match self.suite {
            Suite::Kernel => KERNEL_RUNS,
            Suite::Retention => 1,
        });
        for (name, value) in [
            ("concurrency", self.concurrency),
            ("executions", executions),
            ("runs", runs),
            ("pool", self.pool.unwrap_or(1)),
        ] {
            if value == 0 {
                return Err(CliError::zero(name));
            }
        }
        let only = self
            .only
            .iter()
            .map(|key| {
                Workload::ALL
                    .into_iter()
                    .find(|w| w.key() == key)
                    .ok_or_else(|| CliError::BadValue {
                        option: "only",
                        reason: format!("no workload {key:?}"),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let store = StoreArg::from_options(&self.store, self.sqlite_durability)?;
        // A pool of connections is PostgreSQL's: elsewhere the option would
        // be accepted and mean nothing.
        if self.pool.is_some() && !matches!(store, StoreArg::Postgres { .. }) {
            return Err(CliError::OnlyForStore {
                option: "pool",
                store: "postgres:URL",
            });
        }
        Ok(BenchSettings {
            only,
            suite: self.suite,
            store,
            concurrency: self.concurrency,
            executions,
            runs,
            pool: self.pool.unwrap_or(self.concurrency) as usize,
            archive: self.archive,
        })
    }
}

impl BenchSettings {
    /// Executions of each workload in the warm-up round: a tenth of a run,
    /// but at least one per task, and never more than a run.
    pub(crate) fn warmup(&self) -> u32 {
        (self.executions / 10)
            .max(self.concurrency)
            .min(self.executions)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The defaults, on memory.
    pub(crate) fn raw() -> RawBench {
        RawBench {
            suite: Suite::Kernel,
            store: "memory".to_owned(),
            concurrency: 64,
            executions: None,
            runs: None,
            archive: false,
            pool: None,
            sqlite_durability: None,
            only: Vec::new(),
        }
    }

    #[test]
    fn only_names_workloads_by_their_keys() {
        let settings = RawBench {
            only: vec!["fenced_append".to_owned(), "unfenced".to_owned()],
            ..raw()
        }
        .validate()
        .unwrap();
        assert_eq!(settings.only, [Workload::FencedAppend, Workload::Unfenced]);
        let bad = RawBench {
            only: vec!["nosuch".to_owned()],
            ..raw()
        };
        assert_eq!(
            bad.validate().unwrap_err().to_string(),
            "--only: no workload \"nosuch\""
        );
        let retention = RawBench {
            suite: Suite::Retention,
            only: vec!["unfenced".to_owned()],
            ..raw()
        };
        assert_eq!(
            retention.validate().unwrap_err().to_string(),
            "--only: only with --workload kernel"
        );
    }

    #[test]
    fn validates_and_defaults_the_pool_to_the_concurrency() {
        let settings = raw().validate().unwrap();
        assert_eq!(settings.pool, 64);
        assert_eq!(settings.warmup(), 300);
        for (field, bad) in [
            (
                "concurrency",
                RawBench {
                    concurrency: 0,
                    ..raw()
                },
            ),
            (
                "executions",
                RawBench {
                    executions: Some(0),
                    ..raw()
                },
            ),
            (
                "runs",
                RawBench {
                    runs: Some(0),
                    ..raw()
                },
            ),
            (
                "pool",
                RawBench {
                    pool: Some(0),
                    ..raw()
                },
            ),
        ] {
            assert_eq!(
                bad.validate().unwrap_err().to_string(),
                format!("--{field} 0: must be at least 1")
            );
        }
        for (store, durability) in [
            ("sqlite:", None),
            ("nosuch", None),
            ("memory", Some(Durability::Normal)),
        ] {
            let bad = RawBench {
                store: store.to_owned(),
                sqlite_durability: durability,
                ..raw()
            };
            assert!(
                matches!(bad.validate(), Err(error) if error.is_usage()),
                "{store}"
            );
        }
    }

    #[test]
    fn each_workload_has_its_defaults_and_its_own_options() {
        let kernel = raw().validate().unwrap();
        assert_eq!((kernel.executions, kernel.runs), (3_000, 3));
        let retention = RawBench {
            suite: Suite::Retention,
            archive: true,
            ..raw()
        }
        .validate()
        .unwrap();
        assert_eq!((retention.executions, retention.archive), (10_000, true));
        assert_eq!(
            RawBench {
                archive: true,
                ..raw()
            }
            .validate()
            .unwrap_err()
            .to_string(),
            "--archive: only with --workload retention"
        );
        assert_eq!(
            RawBench {
                suite: Suite::Retention,
                runs: Some(3),
                ..raw()
            }
            .validate()
            .unwrap_err()
            .to_string(),
            "--runs: only with --workload kernel"
        );
    }

    #[test]
    fn the_warmup_is_short_but_covers_every_task() {
        let small = RawBench {
            executions: Some(50),
            ..raw()
        };
        assert_eq!(small.validate().unwrap().warmup(), 50);
        let many = RawBench {
            executions: Some(100_000),
            concurrency: 8,
            ..raw()
        };
        assert_eq!(many.validate().unwrap().warmup(), 10_000);
    }
}
