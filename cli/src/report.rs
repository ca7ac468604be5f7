//! What a race found, and the two ways of printing it.
//!
//! Two sources feed a report, on purpose: what the resumers counted as they
//! went ([`Tally`]: fenced-out bodies, contention, refusals, crashes), and
//! what the logs hold afterwards ([`LogCounts`]: resumes per execution). The
//! verdict on double resumes comes from the logs alone, so a bug in the
//! counting cannot hide a bug in the kernel.

use std::ops::AddAssign;
use std::time::Duration;

use serde_json::{Value, json};

use crate::settings::Settings;

/// What one resumer counted; summed over all resumers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    /// Resume attempts made (one per execution per resumer).
    pub(crate) attempts: u64,
    /// Resumes that landed (`Stepped::Done(Ok(_))`), each followed by a body.
    pub(crate) won: u64,
    /// Bodies that appended every step and completed.
    pub(crate) completed: u64,
    /// Bodies whose own append was refused as stale: a rival acquired after
    /// their resume landed.
    pub(crate) fenced_out: u64,
    /// Attempts that ended `ResumeError::Contended`.
    pub(crate) contended: u64,
    /// Attempts that ended `ResumeError::Refused`: the park was already
    /// answered, the normal fate of a loser.
    pub(crate) refused: u64,
    /// Attempts abandoned right after an acquire.
    pub(crate) crashed_after_acquire: u64,
    /// Attempts abandoned right before the resume's append, holding a token.
    pub(crate) crashed_before_append: u64,
}

impl AddAssign for Tally {
    fn add_assign(&mut self, other: Tally) {
        self.attempts += other.attempts;
        self.won += other.won;
        self.completed += other.completed;
        self.fenced_out += other.fenced_out;
        self.contended += other.contended;
        self.refused += other.refused;
        self.crashed_after_acquire += other.crashed_after_acquire;
        self.crashed_before_append += other.crashed_before_append;
    }
}

/// What the logs hold once the race is over, read execution by execution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LogCounts {
    /// Executions with at least one `EXECUTION_RESUMED`.
    pub(crate) resumed: u64,
    /// Executions with more than one: the bug the kernel exists to prevent.
    pub(crate) double_resumes: u64,
    /// Executions with an `EXECUTION_COMPLETED`.
    pub(crate) completed: u64,
}

/// A finished race.
#[derive(Clone, Debug)]
pub(crate) struct Report {
    /// The settings it ran with (the seed included).
    pub(crate) settings: Settings,
    /// What the resumers counted.
    pub(crate) tally: Tally,
    /// What the logs hold.
    pub(crate) logs: LogCounts,
    /// Wall time of the race itself, set-up and verification excluded.
    pub(crate) elapsed: Duration,
}

impl Report {
    /// Executions nobody resumed: every resumer that got far enough to win
    /// crashed first. Expected with crashes; not a bug.
    pub(crate) fn left_parked(&self) -> u64 {
        u64::from(self.settings.parks).saturating_sub(self.logs.resumed)
    }

    /// Whether the run shows a kernel bug. The `--unconditional` control is
    /// expected to fence bodies out (that is what it demonstrates), so only a
    /// conditional run can fail.
    pub(crate) fn kernel_bug(&self) -> bool {
        !self.settings.unconditional()
            && (self.logs.double_resumes > 0 || self.tally.fenced_out > 0)
    }

    /// Milliseconds, whole, for the JSON.
    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX)
    }

    /// The `--json` object: exactly these seven keys, so scripts and tests
    /// can rely on the shape.
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "parks": self.settings.parks,
            "resumed": self.logs.resumed,
            "double_resumes": self.logs.double_resumes,
            "fenced_out": self.tally.fenced_out,
            "contended": self.tally.contended,
            "refused": self.tally.refused,
            "elapsed_ms": self.elapsed_ms(),
        })
    }

    /// The human summary: the settings (with the seed, to repeat the run),
    /// the counts, and throughput.
    pub(crate) fn human(&self) -> String {
        let s = &self.settings;
        let t = &self.tally;
        let secs = self.elapsed.as_secs_f64();
        // Counts stay far below 2^53, so the float is exact.
        #[allow(clippy::cast_precision_loss)]
        let rate = if secs > 0.0 {
            self.logs.resumed as f64 / secs
        } else {
            0.0
        };
        let acquire = if s.unconditional() {
            "unconditional acquire (negative control)"
        } else {
            "conditional acquire"
        };
        let crashes = t.crashed_after_acquire + t.crashed_before_append;
        let mut out = format!(
            "loomfence race: {} parks, {} resumers, {} steps per body, crash rate {}, {acquire}, {} store, seed {}\n",
            s.parks,
            s.resumers,
            s.steps,
            s.crash_rate,
            s.store.summary(),
            s.seed
        );
        out += &format!(
            "  resumed {} of {} ({} left parked), completed {}, double resumes {}, fenced out {}\n",
            self.logs.resumed,
            s.parks,
            self.left_parked(),
            self.logs.completed,
            self.logs.double_resumes,
            t.fenced_out
        );
        out += &format!(
            "  {} attempts: {} refused, {} contended, {crashes} crashed ({} after acquire, {} before append)\n",
            t.attempts, t.refused, t.contended, t.crashed_after_acquire, t.crashed_before_append
        );
        out += &format!(
            "  {:.1} ms, {rate:.0} resumes/s; repeat with --seed {}",
            secs * 1000.0,
            s.seed
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use loomfence_core::Capability;

    use super::*;
    use crate::store_arg::StoreArg;

    fn report(capability: Capability, fenced_out: u64) -> Report {
        Report {
            settings: Settings {
                parks: 10,
                resumers: 2,
                steps: 3,
                crash_rate: 0.0,
                seed: 42,
                capability,
                store: StoreArg::Memory,
            },
            tally: Tally {
                fenced_out,
                ..Tally::default()
            },
            logs: LogCounts {
                resumed: 9,
                ..LogCounts::default()
            },
            elapsed: Duration::from_millis(5),
        }
    }

    #[test]
    fn json_has_exactly_the_seven_keys() {
        let json = report(Capability::Conditional, 0).to_json();
        let mut keys: Vec<_> = json.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "contended",
                "double_resumes",
                "elapsed_ms",
                "fenced_out",
                "parks",
                "refused",
                "resumed"
            ]
        );
        assert_eq!(json["elapsed_ms"], 5);
    }

    #[test]
    fn fenced_out_is_a_bug_only_when_conditional() {
        assert!(report(Capability::Conditional, 1).kernel_bug());
        assert!(!report(Capability::FencingOnly, 1).kernel_bug());
        assert!(!report(Capability::Conditional, 0).kernel_bug());
    }

    #[test]
    fn human_summary_names_the_seed_and_the_parked() {
        let text = report(Capability::Conditional, 0).human();
        assert!(text.contains("seed 42"), "{text}");
        assert!(text.contains("1 left parked"), "{text}");
    }
}
