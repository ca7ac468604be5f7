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

use crate::harness::race::settings::{Settings, WaitOn};

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
    /// Tokens taken by dead acquirers (`--dead-acquirers`).
    pub(crate) dead_acquires: u64,
    /// Re-drive rows written by contended resumes.
    pub(crate) redrive_rows: u64,
    /// Sends (in a race of messages) whose sender died right after the
    /// message was stored, before delivering it.
    pub(crate) crashed_after_send: u64,
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
        self.dead_acquires += other.dead_acquires;
        self.redrive_rows += other.redrive_rows;
        self.crashed_after_send += other.crashed_after_send;
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
    /// Executions whose resume was the re-driver's (its answer is
    /// `{"redrive": true}`): resumed by the timer service's re-drive.
    pub(crate) redriven: u64,
    /// Executions left parked although a contended resume wrote a re-drive
    /// row for them and the service reported no exhaustion: re-drive lost
    /// them. Always 0 with re-drive off.
    pub(crate) lost_to_redrive: u64,
    /// What the logs and the inbox hold of the messages; all 0 in a race
    /// of resumes, which sends none.
    pub(crate) messages: MessageCounts,
}

/// The messages of a race of messages, from the logs and the inbox.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MessageCounts {
    /// Distinct messages the inbox stored.
    pub(crate) sent: u64,
    /// `MESSAGE_CONSUMED` events in the logs.
    pub(crate) consumed: u64,
    /// Messages consumed more than once, plus parks resumed more than
    /// once: what the conditional delivery exists to prevent.
    pub(crate) double_deliveries: u64,
    /// Messages stored and never consumed while their execution is still
    /// parked: a delivery the intent row failed to finish.
    pub(crate) lost: u64,
}

/// What the timer service did, with re-drive on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RedriveCounts {
    /// Re-drives whose resume landed.
    pub(crate) landed: u64,
    /// Re-drives contended again, rescheduled with backoff.
    pub(crate) contended: u64,
    /// Re-driven bodies fenced out (a kernel bug, counted in `fenced_out`).
    pub(crate) fenced_out: u64,
    /// Chains that gave up, reported once each by the service.
    pub(crate) exhausted: u64,
    /// Time from the end of the race to the last row retired.
    pub(crate) drain: Duration,
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
    /// What the timer service did; `None` with re-drive off.
    pub(crate) redrive: Option<RedriveCounts>,
    /// Wall time of the race itself and, with re-drive on, of the drain
    /// until the timer store held no row; set-up and verification
    /// excluded.
    pub(crate) elapsed: Duration,
}

impl Report {
    /// Executions with no `EXECUTION_RESUMED` at the end: every resumer
    /// that got far enough to win crashed first (expected with crashes, not
    /// a bug), or every resume was contended and re-drive is off or gave
    /// up (a park for an operator).
    pub(crate) fn left_parked(&self) -> u64 {
        u64::from(self.settings.parks).saturating_sub(self.logs.resumed)
    }

    /// Bodies fenced out: the racing winners' and the re-driven ones.
    pub(crate) fn fenced_out(&self) -> u64 {
        self.tally.fenced_out + self.redrive.map_or(0, |r| r.fenced_out)
    }

    /// Whether the run shows a kernel bug. The `--unconditional` control is
    /// expected to fence bodies out (that is what it demonstrates), so only a
    /// conditional run can fail.
    pub(crate) fn kernel_bug(&self) -> bool {
        !self.settings.unconditional() && (self.logs.double_resumes > 0 || self.fenced_out() > 0)
    }

    /// Whether re-drive lost a park: one whose resume ended contended (a
    /// re-drive row was written) is still parked after the service drained,
    /// and the service did not report its chain exhausted. An exhausted
    /// chain is the design's answer (the park goes to an operator, reported
    /// once), and a park left by crashes alone never got a row; neither
    /// fails the run.
    pub(crate) fn redrive_failed(&self) -> bool {
        self.logs.lost_to_redrive > 0
    }

    /// Whether a race of messages failed: a double delivery (always, the
    /// `--unguarded-delivery` control included: showing it is that
    /// control's job), a lost message, or a park left parked (a stored
    /// message must reach its park: the intent row sees to it even when
    /// the sender crashed or every try was contended).
    pub(crate) fn delivery_failed(&self) -> bool {
        let m = &self.logs.messages;
        self.settings.wait == WaitOn::Message
            && (m.double_deliveries > 0 || m.lost > 0 || self.left_parked() > 0)
    }

    /// Milliseconds, whole, for the JSON.
    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX)
    }

    /// The `--json` object: exactly these thirteen keys, in both modes, so
    /// scripts and tests can rely on the shape.
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "parks": self.settings.parks,
            "resumed": self.logs.resumed,
            "left_parked": self.left_parked(),
            "redriven": self.logs.redriven,
            "double_resumes": self.logs.double_resumes,
            "fenced_out": self.fenced_out(),
            "contended": self.tally.contended,
            "refused": self.tally.refused,
            "messages_sent": self.logs.messages.sent,
            "messages_consumed": self.logs.messages.consumed,
            "double_deliveries": self.logs.messages.double_deliveries,
            "messages_lost": self.logs.messages.lost,
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
        let what = match (s.wait, s.unguarded_delivery) {
            (WaitOn::Resume, _) => "",
            (WaitOn::Message, false) => "messages delivered by notify, ",
            (WaitOn::Message, true) => "messages delivered WITHOUT the guard (negative control), ",
        };
        let mut out = format!(
            "loomfence race: {what}{} parks, {} resumers, {} steps per body, crash rate {}, {acquire}, {} store, seed {}\n",
            s.parks,
            s.resumers,
            s.steps,
            s.crash_rate,
            s.store.summary(),
            s.seed
        );
        out += &format!(
            "  resumed {} of {} ({} left parked), {} re-driven, completed {}, double resumes {}, fenced out {}\n",
            self.logs.resumed,
            s.parks,
            self.left_parked(),
            self.logs.redriven,
            self.logs.completed,
            self.logs.double_resumes,
            self.fenced_out()
        );
        if s.wait == WaitOn::Message {
            let m = &self.logs.messages;
            out += &format!(
                "  messages: {} sent, {} consumed, {} double deliveries, {} lost; {} sends crashed before delivering\n",
                m.sent, m.consumed, m.double_deliveries, m.lost, t.crashed_after_send
            );
        }
        out += &format!(
            "  {} attempts: {} refused, {} contended, {crashes} crashed ({} after acquire, {} before append); {} dead acquirers per resume, {} dead acquires\n",
            t.attempts,
            t.refused,
            t.contended,
            t.crashed_after_acquire,
            t.crashed_before_append,
            s.dead_acquirers,
            t.dead_acquires
        );
        out += &match &self.redrive {
            None if s.unconditional() => {
                "  re-drive off (the control has no conditional resume to re-drive)\n".to_owned()
            }
            None => "  re-drive off (--no-redrive): contended parks are left for an operator\n"
                .to_owned(),
            Some(r) => format!(
                "  re-drive on: {} written, {} re-drives landed, {} contended again, {} exhausted, {} parks lost; drained in {:.1} ms\n",
                count(t.redrive_rows, "row", "rows"),
                r.landed,
                r.contended,
                r.exhausted,
                self.logs.lost_to_redrive,
                r.drain.as_secs_f64() * 1000.0
            ),
        };
        out += &format!(
            "  {:.1} ms, {rate:.0} resumes/s; repeat with --seed {}",
            secs * 1000.0,
            s.seed
        );
        out
    }
}

/// `n` and the noun it counts, singular for one: "1 row", "2 rows".
fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use loomfence_core::Capability;

    use super::*;
    use crate::store::StoreArg;

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
                dead_acquirers: 0,
                redrive: true,
                wait: WaitOn::Resume,
                unguarded_delivery: false,
            },
            tally: Tally {
                fenced_out,
                ..Tally::default()
            },
            logs: LogCounts {
                resumed: 9,
                redriven: 2,
                ..LogCounts::default()
            },
            redrive: Some(RedriveCounts::default()),
            elapsed: Duration::from_millis(5),
        }
    }

    /// The summary counts its re-drive rows in words: "1 row written"
    /// ("1 rows written" before), "2 rows written".
    #[test]
    fn the_summary_counts_rows_in_words() {
        for (rows, words) in [
            (0, "0 rows written"),
            (1, "1 row written"),
            (2, "2 rows written"),
        ] {
            let mut report = report(Capability::Conditional, 0);
            report.tally.redrive_rows = rows;
            let text = report.human();
            assert!(text.contains(&format!("re-drive on: {words},")), "{text}");
        }
    }

    #[test]
    fn json_has_exactly_the_thirteen_keys() {
        let json = report(Capability::Conditional, 0).to_json();
        let mut keys: Vec<_> = json.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "contended",
                "double_deliveries",
                "double_resumes",
                "elapsed_ms",
                "fenced_out",
                "left_parked",
                "messages_consumed",
                "messages_lost",
                "messages_sent",
                "parks",
                "redriven",
                "refused",
                "resumed"
            ]
        );
        assert_eq!(json["elapsed_ms"], 5);
        assert_eq!(json["left_parked"], 1);
        assert_eq!(json["redriven"], 2);
    }

    #[test]
    fn a_race_of_messages_fails_on_a_double_delivery_a_lost_message_or_a_park_left() {
        let mut run = report(Capability::Conditional, 0);
        run.logs.resumed = 10;
        assert!(
            !run.delivery_failed(),
            "a race of resumes has no deliveries"
        );
        run.settings.wait = WaitOn::Message;
        assert!(!run.delivery_failed());
        for (double_deliveries, lost, resumed) in [(1, 0, 10), (0, 1, 10), (0, 0, 9)] {
            let mut failed = run.clone();
            failed.logs.messages.double_deliveries = double_deliveries;
            failed.logs.messages.lost = lost;
            failed.logs.resumed = resumed;
            assert!(failed.delivery_failed(), "{:?}", failed.logs);
        }
        run.logs.messages.double_deliveries = 2;
        assert_eq!(run.to_json()["double_deliveries"], 2);
        assert!(
            run.human().contains("2 double deliveries"),
            "{}",
            run.human()
        );
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
        assert!(text.contains("(1 left parked), 2 re-driven"), "{text}");
        assert!(text.contains("re-drive on"), "{text}");
    }

    #[test]
    fn a_park_lost_to_redrive_fails_the_run_and_a_redriven_body_fenced_out_is_a_bug() {
        let mut lost = report(Capability::Conditional, 0);
        assert!(!lost.redrive_failed());
        lost.logs.lost_to_redrive = 1;
        assert!(lost.redrive_failed());
        let mut fenced = report(Capability::Conditional, 0);
        fenced.redrive = Some(RedriveCounts {
            fenced_out: 1,
            ..RedriveCounts::default()
        });
        assert!(fenced.kernel_bug());
        assert_eq!(fenced.to_json()["fenced_out"], 1);
    }
}
