//! The race's options after validation.
//!
//! clap checks types; the ranges it cannot express on its own (a
//! probability, a non-zero count, a backend name) are checked here, so that
//! every bad option ends the same way: one `error: …` line and exit code 2,
//! before anything runs.

use loomfence_core::Capability;
use loomfence_sqlite::Durability;

use crate::error::CliError;
use crate::store::StoreArg;

/// Everything a race needs to know, checked.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Settings {
    /// M: executions parked before the race.
    pub(crate) parks: u32,
    /// N: concurrent resumer tasks.
    pub(crate) resumers: u32,
    /// K: step events each winning body appends before completing.
    pub(crate) steps: u32,
    /// Probability, per resume attempt, that the resumer crashes during it.
    pub(crate) crash_rate: f64,
    /// Root of every random decision; printed so a run can be repeated.
    pub(crate) seed: u64,
    /// The capability every resume machine is built with:
    /// [`Capability::Conditional`] normally, [`Capability::FencingOnly`] for
    /// the `--unconditional` negative control.
    pub(crate) capability: Capability,
    /// The backend.
    pub(crate) store: StoreArg,
    /// Dead acquirers per resume: each takes the token right before one of
    /// the first `dead_acquirers` acquires of every racing resume (see
    /// [`crate::harness::race::resumer`]).
    pub(crate) dead_acquirers: u32,
    /// Whether a resume that ends contended writes a re-drive row, fired by
    /// a timer service with the race's re-driver (off with `--no-redrive`,
    /// and in the `--unconditional` control).
    pub(crate) redrive: bool,
    /// What the racers do to the parks: resume them, or deliver a message
    /// to them (`--wait message`).
    pub(crate) wait: WaitOn,
    /// The negative control of the race of messages: each sender appends
    /// the delivery's `[MESSAGE_CONSUMED, EXECUTION_RESUMED]` under a plain
    /// `acquire_fence`, without the park condition, so the report must show
    /// double deliveries (`--unguarded-delivery`, hidden; only with
    /// `--wait message`).
    pub(crate) unguarded_delivery: bool,
}

/// What the race's parks wait on, and so what the racers do to them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum WaitOn {
    /// The racers resume the parks with the resume machine.
    #[default]
    Resume,
    /// The racers send each park the same message through the inbox's
    /// notify, which delivers it.
    Message,
}

impl Settings {
    /// Whether this is the negative control, where fenced-out bodies are
    /// the expected result rather than a bug.
    pub(crate) fn unconditional(&self) -> bool {
        self.capability != Capability::Conditional
    }
}

/// The options as typed, before the checks clap cannot do.
#[derive(Clone, Debug)]
pub(crate) struct RawSettings {
    /// `--parks`.
    pub(crate) parks: u32,
    /// `--resumers`.
    pub(crate) resumers: u32,
    /// `--steps`.
    pub(crate) steps: u32,
    /// `--crash-rate`.
    pub(crate) crash_rate: f64,
    /// `--seed`, if given.
    pub(crate) seed: Option<u64>,
    /// `--unconditional`.
    pub(crate) unconditional: bool,
    /// `--store`, unparsed.
    pub(crate) store: String,
    /// `--sqlite-durability`, if given.
    pub(crate) sqlite_durability: Option<Durability>,
    /// `--dead-acquirers`.
    pub(crate) dead_acquirers: u32,
    /// `--no-redrive`.
    pub(crate) no_redrive: bool,
    /// `--wait`.
    pub(crate) wait: WaitOn,
    /// `--unguarded-delivery`.
    pub(crate) unguarded_delivery: bool,
}

impl RawSettings {
    /// Checks the ranges; draws a fresh seed when none was given.
    pub(crate) fn validate(self) -> Result<Settings, CliError> {
        if !(0.0..=1.0).contains(&self.crash_rate) {
            return Err(CliError::OutOfRange {
                option: "crash-rate",
                given: self.crash_rate.to_string(),
                range: "a probability between 0 and 1",
            });
        }
        for (option, value) in [("parks", self.parks), ("resumers", self.resumers)] {
            if value == 0 {
                return Err(CliError::zero(option));
            }
        }
        if self.unguarded_delivery && self.wait != WaitOn::Message {
            return Err(CliError::OnlyWith {
                option: "unguarded-delivery",
                with: "--wait message",
            });
        }
        if self.unconditional && self.wait == WaitOn::Message {
            return Err(CliError::BadValue {
                option: "unconditional",
                reason: "not with --wait message: a delivery always resumes conditionally \
                         (the control there is the delivery without its guard)"
                    .to_owned(),
            });
        }
        let store = StoreArg::from_options(&self.store, self.sqlite_durability)?;
        Ok(Settings {
            parks: self.parks,
            resumers: self.resumers,
            steps: self.steps,
            crash_rate: self.crash_rate,
            seed: self.seed.unwrap_or_else(fresh_seed),
            capability: if self.unconditional {
                Capability::FencingOnly
            } else {
                Capability::Conditional
            },
            store,
            dead_acquirers: self.dead_acquirers,
            // Re-drive re-derives a conditional resume; the control has none.
            redrive: !self.no_redrive && !self.unconditional,
            wait: self.wait,
            unguarded_delivery: self.unguarded_delivery,
        })
    }
}

/// A seed nobody chose. std's `RandomState` is keyed from the OS's
/// randomness once per process, which is all a seed needs; it spares the
/// `rand` crate's OS-entropy feature (and its `getrandom` dependency).
pub(crate) fn fresh_seed() -> u64 {
    use std::collections::hash_map::RandomState;
    use std::hash::BuildHasher;
    RandomState::new().hash_one(std::time::SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw() -> RawSettings {
        RawSettings {
            parks: 10,
            resumers: 2,
            steps: 3,
            crash_rate: 0.1,
            seed: Some(7),
            unconditional: false,
            store: "memory".to_owned(),
            sqlite_durability: None,
            dead_acquirers: 0,
            no_redrive: false,
            wait: WaitOn::Resume,
            unguarded_delivery: false,
        }
    }

    #[test]
    fn the_message_race_refuses_the_unconditional_control_and_its_own_control_needs_it() {
        let message = RawSettings {
            wait: WaitOn::Message,
            ..raw()
        };
        assert_eq!(message.clone().validate().unwrap().wait, WaitOn::Message);
        let unconditional = RawSettings {
            unconditional: true,
            ..message.clone()
        };
        assert!(matches!(
            unconditional.validate(),
            Err(CliError::BadValue {
                option: "unconditional",
                ..
            })
        ));
        let unguarded = RawSettings {
            unguarded_delivery: true,
            ..raw()
        };
        assert!(matches!(
            unguarded.validate(),
            Err(CliError::OnlyWith {
                option: "unguarded-delivery",
                ..
            })
        ));
        let control = RawSettings {
            unguarded_delivery: true,
            ..message
        };
        assert!(control.validate().unwrap().unguarded_delivery);
    }

    #[test]
    fn accepts_the_defaults_and_keeps_the_seed() {
        let settings = raw().validate().unwrap();
        assert_eq!(settings.seed, 7);
        assert_eq!(settings.capability, Capability::Conditional);
        assert!(!settings.unconditional());
        assert!(settings.redrive, "re-drive is on by default");
        assert_eq!(settings.dead_acquirers, 0);
    }

    #[test]
    fn redrive_is_off_with_no_redrive_and_in_the_control() {
        let off = RawSettings {
            no_redrive: true,
            ..raw()
        };
        assert!(!off.validate().unwrap().redrive);
        let control = RawSettings {
            unconditional: true,
            ..raw()
        };
        assert!(!control.validate().unwrap().redrive);
    }

    #[test]
    fn unconditional_means_fencing_only() {
        let settings = RawSettings {
            unconditional: true,
            ..raw()
        }
        .validate()
        .unwrap();
        assert_eq!(settings.capability, Capability::FencingOnly);
    }

    #[test]
    fn refuses_out_of_range_values() {
        for rate in [-0.1, 1.5, f64::NAN] {
            let err = RawSettings {
                crash_rate: rate,
                ..raw()
            }
            .validate()
            .unwrap_err();
            assert!(matches!(
                err,
                CliError::OutOfRange {
                    option: "crash-rate",
                    ..
                }
            ));
        }
        for rate in [0.0, 1.0] {
            assert!(
                RawSettings {
                    crash_rate: rate,
                    ..raw()
                }
                .validate()
                .is_ok()
            );
        }
        let zero_parks = RawSettings { parks: 0, ..raw() }.validate();
        assert_eq!(
            zero_parks.unwrap_err().to_string(),
            "--parks 0: must be at least 1"
        );
        let zero_resumers = RawSettings {
            resumers: 0,
            ..raw()
        }
        .validate();
        assert_eq!(
            zero_resumers.unwrap_err().to_string(),
            "--resumers 0: must be at least 1"
        );
        let store = RawSettings {
            store: "nosuch".to_owned(),
            ..raw()
        }
        .validate();
        assert!(matches!(store, Err(CliError::UnknownStore(_))));
    }

    #[test]
    fn draws_a_seed_when_none_is_given() {
        let settings = RawSettings {
            seed: None,
            ..raw()
        }
        .validate();
        assert!(settings.is_ok());
    }
}
