//! What a fleet found, and the two ways of printing it.

use std::time::Duration;

use serde_json::{Value, json};

use super::args::FleetArgs;
use super::history::{History, Untouched};
use super::rebuilds::Rebuilds;
use super::sender::SenderCounts;
use super::verdict::Verdict;

/// A finished fleet run.
#[derive(Clone, Debug)]
pub(crate) struct Report {
    /// The options it ran with.
    pub(crate) args: FleetArgs,
    /// The seed of its workload and faults.
    pub(crate) seed: u64,
    /// What the logs say.
    pub(crate) verdict: Verdict,
    /// Workers SIGKILLed.
    pub(crate) kills: u32,
    /// Worker connections ended.
    pub(crate) terminated: u32,
    /// Workers that exited on their own (each was started again).
    pub(crate) died: u32,
    /// Workers that did not exit 0 after SIGTERM.
    pub(crate) unclean: u32,
    /// Whether every parent was resumed and the logs settled before the
    /// drain timeout.
    pub(crate) drained: bool,
    /// What the fleet's sender did.
    pub(crate) sent: SenderCounts,
    /// From the first child's end to the end of the drain.
    pub(crate) elapsed: Duration,
    /// What the listing says of the history (`--history`) after the run.
    pub(crate) history: Untouched,
    /// The workers' rebuilds, every start and restart.
    pub(crate) rebuilds: Rebuilds,
}

impl Report {
    /// Whether the kernel held and every worker behaved.
    pub(crate) fn passed(&self) -> bool {
        self.failures().is_empty()
    }

    /// What went wrong, one phrase each.
    pub(crate) fn failures(&self) -> Vec<String> {
        let v = &self.verdict;
        let mut failures = Vec::new();
        if v.violations() > 0 {
            failures.push(format!(
                "{} violations: {} double resumes, {} fenced-out bodies, {} parents left parked, {} sequence faults, {} double deliveries, {} lost messages",
                v.violations(),
                v.double_resumes,
                v.fenced_out,
                v.left_parked,
                v.sequence_faults,
                v.double_deliveries,
                v.messages_lost
            ));
        }
        if v.children_open > 0 {
            failures.push(format!("{} children never ended", v.children_open));
        }
        if self.history.touched > 0 {
            failures.push(format!(
                "{} history executions were touched",
                self.history.touched
            ));
        }
        let expected = History {
            trees: self.args.history,
            children: self.args.children,
        }
        .executions();
        if self.history.listed != expected {
            failures.push(format!(
                "{} history executions listed, {expected} written",
                self.history.listed
            ));
        }
        if self.died > 0 {
            failures.push(format!("{} workers exited on their own", self.died));
        }
        if self.unclean > 0 {
            failures.push(format!(
                "{} workers did not stop cleanly on SIGTERM",
                self.unclean
            ));
        }
        failures
    }

    /// Parents resumed per second of the run.
    fn rate(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        // Counts stay far below 2^53, so the float is exact.
        #[allow(clippy::cast_precision_loss)]
        let resumed = self.verdict.resumed as f64;
        if secs > 0.0 { resumed / secs } else { 0.0 }
    }

    /// Parents offered per second: the parents over the spread their
    /// children end in.
    fn offered(&self) -> f64 {
        let secs = self.args.spread.as_secs_f64();
        #[allow(clippy::cast_precision_loss)]
        let parents = self.verdict.parents as f64;
        if secs > 0.0 { parents / secs } else { 0.0 }
    }

    /// How long the fleet took to drain after the last child's end (the
    /// end of the spread): the measure of whether it kept pace with the
    /// offered rate.
    fn drain_after(&self) -> Duration {
        self.elapsed.saturating_sub(self.args.spread)
    }

    /// One JSON object.
    pub(crate) fn to_json(&self) -> Value {
        let v = &self.verdict;
        json!({
            "parents": v.parents,
            "resumed": v.resumed,
            "double_resumes": v.double_resumes,
            "fenced_out": v.fenced_out,
            "left_parked": v.left_parked,
            "kills": self.kills,
            "elapsed_ms": u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX),
            "violations": v.violations(),
            "sequence_faults": v.sequence_faults,
            "resumed_by_children": v.resumed_by_children,
            "resumed_by_timer": v.resumed_by_timer,
            "resumed_by_message": v.resumed_by_message,
            "message_parents": v.message_parents,
            "messages_sent": v.messages_sent,
            "messages_consumed": v.messages_consumed,
            "double_deliveries": v.double_deliveries,
            "messages_lost": v.messages_lost,
            "notifies": self.sent.notifies,
            "delivered_by_sender": self.sent.delivered,
            "completed": v.completed,
            "unfinished": v.unfinished,
            "children_open": v.children_open,
            "terminated_backends": self.terminated,
            "workers": self.args.workers,
            "workers_died": self.died,
            "unclean_shutdowns": self.unclean,
            "drained": self.drained,
            "parents_per_second": tenths(self.rate()),
            "offered_per_s": tenths(self.offered()),
            "drain_after_ms": u64::try_from(self.drain_after().as_millis()).unwrap_or(u64::MAX),
            "history": self.args.history,
            "history_touched": self.history.touched,
            "rebuilds": self.rebuilds.count,
            "rebuild_ms": self.rebuilds.slowest_ms,
            "unconditional": self.args.unconditional,
            "seed": self.seed,
        })
    }

    /// The human summary.
    pub(crate) fn human(&self) -> String {
        let (a, v) = (&self.args, &self.verdict);
        let acquire = if a.unconditional {
            "unconditional acquire (negative control)"
        } else {
            "conditional acquire"
        };
        let mut out = format!(
            "loomfence fleet: {} workers, {} parents x {} children, {acquire}, seed {}\n",
            a.workers, v.parents, a.children, self.seed
        );
        out += &format!(
            "  faults: {} workers killed, {} connections ended, {} workers died on their own\n",
            self.kills, self.terminated, self.died
        );
        out += &format!(
            "  resumed {} of {} ({} by children, {} by deadline, {} by message), {} completed, {} unfinished (killed mid-body)\n",
            v.resumed,
            v.parents,
            v.resumed_by_children,
            v.resumed_by_timer,
            v.resumed_by_message,
            v.completed,
            v.unfinished
        );
        out += &format!(
            "  messages: {} parents wait on one, {} sent ({} notifies, {} delivered by the sender), {} consumed\n",
            v.message_parents,
            v.messages_sent,
            self.sent.notifies,
            self.sent.delivered,
            v.messages_consumed
        );
        out += &format!(
            "  violations {}: double resumes {}, fenced out {}, left parked {}, sequence faults {}, double deliveries {}, lost messages {}\n",
            v.violations(),
            v.double_resumes,
            v.fenced_out,
            v.left_parked,
            v.sequence_faults,
            v.double_deliveries,
            v.messages_lost
        );
        out += &format!(
            "  history: {} finished trees written before the run, {} executions touched; slowest of {} worker rebuilds {} ms\n",
            a.history, self.history.touched, self.rebuilds.count, self.rebuilds.slowest_ms
        );
        out += &format!(
            "  {:.1} s ({:.1} s after the last child's end), {:.1} parents offered and {:.1} resumed per second; shutdown: {} unclean",
            self.elapsed.as_secs_f64(),
            self.drain_after().as_secs_f64(),
            self.offered(),
            self.rate(),
            self.unclean
        );
        out
    }
}

/// `value` rounded to tenths, as the JSON carries rates.
fn tenths(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}
