//! What `loomfence retention` prints: a short summary for a person, or one
//! JSON object for a script, for a sweep that finished, failed or was
//! interrupted (the last two with what was done before).

use std::time::{Duration, UNIX_EPOCH};

use loomfence_core::retention::{GuardedDelete, SweepReport};
use serde_json::{Value, json};

/// Pinned (and undecided) executions the summary names; `--json` lists
/// them all.
const PINNED_SHOWN: usize = 10;

/// How the sweep ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// It went through the whole listing.
    Done,
    /// It stopped on this error; what it did before stands.
    Failed(String),
    /// Ctrl-C stopped it between two steps: the report is exact.
    Interrupted,
    /// A second Ctrl-C dropped it mid-step: the report is the one of the
    /// last finished page, and the page under way may have deleted (or
    /// archived) more.
    Aborted,
}

/// A sweep run from the command line, as reported.
#[derive(Clone, Debug)]
pub(crate) struct RetentionOutput {
    /// The store, as shown (no password).
    pub(crate) store: String,
    /// `--older-than` as typed.
    pub(crate) older_than: String,
    /// The cutoff, ms since the epoch.
    pub(crate) ended_before: i64,
    /// The archive file, if any.
    pub(crate) archive: Option<String>,
    /// What the sweep did.
    pub(crate) report: SweepReport,
    /// From the first listing to the end.
    pub(crate) elapsed: Duration,
    /// How it ended.
    pub(crate) outcome: Outcome,
}

impl RetentionOutput {
    /// Executions examined per second of the sweep.
    pub(crate) fn examined_per_second(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        // Counts stay far below 2^53, so the float is exact.
        #[allow(clippy::cast_precision_loss)]
        let examined = self.report.examined as f64;
        if secs > 0.0 { examined / secs } else { 0.0 }
    }

    /// The outcome's JSON name.
    fn outcome_key(&self) -> &'static str {
        match self.outcome {
            Outcome::Done => "done",
            Outcome::Failed(_) => "failed",
            Outcome::Interrupted => "interrupted",
            Outcome::Aborted => "aborted",
        }
    }

    /// The `--json` object.
    pub(crate) fn to_json(&self) -> Value {
        let r = &self.report;
        let pinned: Vec<Value> = r
            .pinned
            .iter()
            .map(|p| json!({ "child": p.child.as_str(), "parent": p.parent.as_str() }))
            .collect();
        let kept: Vec<Value> = r
            .kept
            .iter()
            .map(|k| {
                let mut entry = json!({ "executionId": k.execution_id.as_str() });
                match &k.refusal {
                    GuardedDelete::LogChanged { head } => {
                        entry["reason"] = json!("logChanged");
                        entry["head"] = json!(head);
                    }
                    GuardedDelete::ParentMoved { parent } => {
                        entry["reason"] = json!("parentMoved");
                        entry["parent"] = json!(parent.as_str());
                    }
                    other => entry["reason"] = json!(format!("{other:?}")),
                }
                entry
            })
            .collect();
        let undecided: Vec<Value> = r
            .undecided
            .iter()
            .map(|u| {
                json!({
                    "executionId": u.execution_id.as_str(),
                    "code": u.reason.code(),
                    "parent": u.reason.parent().map(|p| p.as_str()),
                    "detail": u.reason.to_string(),
                })
            })
            .collect();
        let mut out = json!({
            "outcome": self.outcome_key(),
            "store": self.store,
            "olderThan": self.older_than,
            "endedBefore": self.ended_before,
            "archive": self.archive,
            "dryRun": r.dry_run,
            "examined": r.examined,
            "eligible": r.eligible,
            "skipped": r.skipped(),
            "deleted": r.deleted,
            "archived": r.archived,
            "pinned": { "count": pinned.len(), "list": pinned },
            "kept": { "count": kept.len(), "list": kept },
            "undecided": { "count": undecided.len(), "list": undecided },
            "pages": r.pages,
            "logReads": r.log_reads,
            "parentReads": r.parent_reads,
            "deleteBatches": r.delete_batches,
            "elapsedMs": u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX),
            "examinedPerSecond": self.examined_per_second(),
        });
        if let Outcome::Failed(error) = &self.outcome {
            out["error"] = json!(error);
        }
        out
    }

    /// The summary for a person.
    pub(crate) fn human(&self) -> String {
        let r = &self.report;
        let mut out = String::new();
        match &self.outcome {
            Outcome::Done => {}
            Outcome::Failed(_) => out += "the sweep FAILED; what it did before it stopped:\n",
            Outcome::Interrupted => {
                out += "interrupted by Ctrl-C between two steps; what the sweep did before:\n";
            }
            Outcome::Aborted => {
                out += "aborted by a second Ctrl-C; what the sweep did up to its last finished page (the page under way may have deleted more):\n"
            }
        }
        out += &format!(
            "retention on {}{}: executions that ended before {} (older than {})\n",
            self.store,
            if r.dry_run {
                ", DRY RUN (nothing changed)"
            } else {
                ""
            },
            rfc3339(self.ended_before),
            self.older_than,
        );
        // The core counts a page as examined when it is listed, and each
        // eligible execution as it reaches it: a sweep that stopped mid-page
        // has not judged the rest of that page.
        let skipped = if self.outcome == Outcome::Done {
            "skipped (running, or ended too recently)"
        } else {
            "skipped or not reached (the last page listed was not finished)"
        };
        out += &format!(
            "examined {}: {} eligible, {} {skipped}\n",
            r.examined,
            r.eligible,
            r.skipped()
        );
        let verb = if r.dry_run { "would delete" } else { "deleted" };
        out += &format!("{verb} {}", r.deleted);
        match &self.archive {
            Some(file) if !r.dry_run => out += &format!(", archived {} to {file}", r.archived),
            Some(_) => out += " (a dry run archives nothing)",
            None => {}
        }
        out.push('\n');
        out += &format!("pinned {} (a parent is parked on them)", r.pinned.len());
        if r.pinned.len() > PINNED_SHOWN {
            out += &format!("; the first {PINNED_SHOWN} (--json lists all)");
        }
        out.push('\n');
        for pin in r.pinned.iter().take(PINNED_SHOWN) {
            out += &format!(
                "  {} (parent {})\n",
                pin.child.as_str(),
                pin.parent.as_str()
            );
        }
        if !r.kept.is_empty() {
            out += &format!(
                "kept {} (changed since the pin check; the next sweep looks again)\n",
                r.kept.len()
            );
        }
        if !r.undecided.is_empty() {
            out += &format!(
                "UNDECIDED {} (kept: the sweep cannot judge them; every sweep keeps them until the data is repaired or removed)",
                r.undecided.len()
            );
            if r.undecided.len() > PINNED_SHOWN {
                out += &format!("; the first {PINNED_SHOWN} (--json lists all)");
            }
            out.push('\n');
            for u in r.undecided.iter().take(PINNED_SHOWN) {
                out += &format!(
                    "  {} {}: {}\n",
                    u.execution_id.as_str(),
                    u.reason.code(),
                    u.reason
                );
            }
        }
        out += &format!(
            "read {} logs and {} parent logs in {} pages, deleted in {} batches; {:.3} s, {:.0} executions examined/s\n",
            r.log_reads,
            r.parent_reads,
            r.pages,
            r.delete_batches,
            self.elapsed.as_secs_f64(),
            self.examined_per_second(),
        );
        out
    }
}

/// An instant in ms since the epoch as RFC 3339 (UTC, seconds); an instant
/// before the epoch as its number of ms.
fn rfc3339(ms: i64) -> String {
    match u64::try_from(ms) {
        Ok(ms) => {
            humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
        }
        Err(_) => format!("{ms} ms since the epoch"),
    }
}

#[cfg(test)]
mod tests {
    use loomfence_core::{
        ExecutionId, InputError,
        retention::{Kept, Pinned, Undecided, UndecidedReason},
    };

    use super::*;

    fn id(s: &str) -> ExecutionId {
        ExecutionId::new(s).unwrap()
    }

    fn output(outcome: Outcome) -> RetentionOutput {
        RetentionOutput {
            store: "sqlite:/tmp/x.db".to_owned(),
            older_than: "7d".to_owned(),
            ended_before: 86_400_000,
            archive: Some("/tmp/a.jsonl".to_owned()),
            report: SweepReport {
                dry_run: false,
                examined: 10,
                eligible: 6,
                deleted: 4,
                archived: 4,
                pinned: vec![Pinned {
                    child: id("c"),
                    parent: id("p"),
                }],
                kept: vec![Kept {
                    execution_id: id("k"),
                    refusal: GuardedDelete::ParentMoved { parent: id("p2") },
                }],
                undecided: vec![Undecided {
                    execution_id: id("u"),
                    reason: UndecidedReason::InvalidLineage(InputError::ParentNotAString {
                        sequence: 1,
                        found: "42".to_owned(),
                    }),
                }],
                pages: 1,
                log_reads: 6,
                parent_reads: 2,
                delete_batches: 1,
            },
            elapsed: Duration::from_millis(500),
            outcome,
        }
    }

    #[test]
    fn json_has_the_counts_the_lists_and_the_rate() {
        let json = output(Outcome::Done).to_json();
        assert_eq!(json["outcome"], "done");
        assert_eq!(json["dryRun"], false);
        assert_eq!(json["skipped"], 4);
        assert_eq!(json["pinned"]["count"], 1);
        assert_eq!(
            json["pinned"]["list"][0],
            json!({"child": "c", "parent": "p"})
        );
        assert_eq!(json["kept"]["list"][0]["reason"], "parentMoved");
        assert_eq!(json["kept"]["list"][0]["parent"], "p2");
        assert_eq!(json["undecided"]["count"], 1);
        assert_eq!(
            json["undecided"]["list"][0],
            json!({
                "executionId": "u",
                "code": "INVALID_LINEAGE",
                "parent": null,
                "detail": "its recorded parent is corrupt: payload.parent of event 1 is 42, not an execution id",
            })
        );
        assert_eq!(json["elapsedMs"], 500);
        assert_eq!(json["examinedPerSecond"], 20.0);
        assert!(json.get("error").is_none());
        let failed = output(Outcome::Failed("disk".to_owned())).to_json();
        assert_eq!(failed["outcome"], "failed");
        assert_eq!(failed["error"], "disk");
    }

    #[test]
    fn the_summary_says_what_happened() {
        let text = output(Outcome::Done).human();
        assert!(
            text.starts_with("retention on sqlite:/tmp/x.db: executions that ended before 1970-01-02T00:00:00Z (older than 7d)\n"),
            "{text}"
        );
        assert!(
            text.contains("deleted 4, archived 4 to /tmp/a.jsonl\n"),
            "{text}"
        );
        assert!(text.contains("  c (parent p)\n"), "{text}");
        assert!(text.contains("kept 1"), "{text}");
        assert!(text.contains("UNDECIDED 1 (kept: "), "{text}");
        assert!(
            text.contains("  u INVALID_LINEAGE: its recorded parent is corrupt: "),
            "{text}"
        );
        assert!(text.contains("20 executions examined/s"), "{text}");
        let mut dry = output(Outcome::Interrupted);
        dry.report.dry_run = true;
        let text = dry.human();
        assert!(text.starts_with("interrupted by Ctrl-C"), "{text}");
        assert!(text.contains("4 skipped or not reached"), "{text}");
        assert!(text.contains("DRY RUN"), "{text}");
        assert!(
            text.contains("would delete 4 (a dry run archives nothing)"),
            "{text}"
        );
        assert_eq!(rfc3339(-5), "-5 ms since the epoch");
    }
}
