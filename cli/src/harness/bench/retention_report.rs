//! What the retention bench found: a Markdown table, or one JSON object.

use std::time::Duration;

use loomfence_core::retention::SweepReport;
use loomfence_sqlite::Durability;
use serde_json::{Value, json};

use crate::store::sqlite_file::durability_name;

/// `Duration` in ms, for the report.
fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// One kind of sweep the bench times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Variant {
    /// Delete only.
    Delete,
    /// Archive each page's logs to a JSON-lines file (synced once per
    /// page), then delete them.
    Archive,
}

impl Variant {
    /// The stable key used in JSON.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Variant::Delete => "delete",
            Variant::Archive => "archive_then_delete",
        }
    }

    /// The row label of the table.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Variant::Delete => "delete",
            Variant::Archive => "archive (JSON lines, fsync per page), then delete",
        }
    }
}

/// One timed sweep.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SweepResult {
    /// Which sweep.
    pub(crate) variant: Variant,
    /// What it reported.
    pub(crate) report: SweepReport,
    /// From its first listing to its report.
    pub(crate) elapsed: Duration,
    /// How long filling the store took before it (not part of the sweep).
    pub(crate) populate: Duration,
    /// Bytes written to the archive file, for the archiving sweep.
    pub(crate) archive_bytes: Option<u64>,
}

impl SweepResult {
    /// `count` per second of the sweep.
    fn per_second(&self, count: u64) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        // Counts stay far below 2^53, so the float is exact.
        #[allow(clippy::cast_precision_loss)]
        let count = count as f64;
        if secs > 0.0 { count / secs } else { 0.0 }
    }

    /// Executions examined per second.
    pub(crate) fn examined_per_second(&self) -> f64 {
        self.per_second(self.report.examined)
    }

    /// Executions deleted per second.
    pub(crate) fn deleted_per_second(&self) -> f64 {
        self.per_second(self.report.deleted)
    }
}

/// A finished retention bench.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RetentionBenchReport {
    /// The store, as named in the JSON (no password).
    pub(crate) store: String,
    /// The store as named in the heading: with an SQLite file's durability.
    pub(crate) summary: String,
    /// Executions filled in before each sweep (plus the running parent).
    pub(crate) executions: u32,
    /// Tasks that filled the store.
    pub(crate) concurrency: u32,
    /// Executions per listing page.
    pub(crate) page_limit: u32,
    /// The SQLite store's durability (`None` on other stores).
    pub(crate) sqlite_durability: Option<Durability>,
    /// PostgreSQL connections (`None` on other stores).
    pub(crate) pool: Option<usize>,
    /// One per sweep, delete first.
    pub(crate) sweeps: Vec<SweepResult>,
}

impl RetentionBenchReport {
    /// The Markdown table and, with two sweeps, what archiving cost.
    pub(crate) fn markdown(&self) -> String {
        let fills: Vec<String> = self
            .sweeps
            .iter()
            .map(|s| format!("{:.2} s", s.populate.as_secs_f64()))
            .collect();
        let mut out = format!(
            "loomfence bench --workload retention: {}, {} executions of mixed shapes (+1 running parent), pages of {}, one sweep each (filling, not timed: {})\n\n",
            self.summary,
            self.executions,
            self.page_limit,
            fills.join(" / "),
        );
        out += "| sweep | examined | eligible | deleted | pinned | archived | log reads | parent reads | seconds | examined/s | deleted/s |\n";
        out += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
        for s in &self.sweeps {
            let r = &s.report;
            out += &format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {:.3} | {:.0} | {:.0} |\n",
                s.variant.label(),
                r.examined,
                r.eligible,
                r.deleted,
                r.pinned.len(),
                r.archived,
                r.log_reads,
                r.parent_reads,
                s.elapsed.as_secs_f64(),
                s.examined_per_second(),
                s.deleted_per_second(),
            );
        }
        if let [plain, archived] = self.sweeps.as_slice() {
            let ratio = archived.elapsed.as_secs_f64() / plain.elapsed.as_secs_f64();
            out += &format!(
                "\n- archiving: ×{ratio:.2} the delete-only sweep's time ({} bytes of JSON lines, one fsync per listing page: {:+.3} ms per archived execution)\n",
                archived.archive_bytes.unwrap_or(0),
                (archived.elapsed.as_secs_f64() - plain.elapsed.as_secs_f64()) * 1000.0
                    / archived.report.archived.max(1) as f64,
            );
        }
        out
    }

    /// The `--json` object.
    pub(crate) fn to_json(&self) -> Value {
        let sweeps: Vec<Value> = self
            .sweeps
            .iter()
            .map(|s| {
                let r = &s.report;
                json!({
                    "variant": s.variant.key(),
                    "label": s.variant.label(),
                    "examined": r.examined,
                    "eligible": r.eligible,
                    "skipped": r.skipped(),
                    "deleted": r.deleted,
                    "pinned": r.pinned.len(),
                    "archived": r.archived,
                    "kept": r.kept.len(),
                    "pages": r.pages,
                    "log_reads": r.log_reads,
                    "parent_reads": r.parent_reads,
                    "delete_batches": r.delete_batches,
                    "elapsed_ms": millis(s.elapsed),
                    "examined_per_sec": s.examined_per_second(),
                    "deleted_per_sec": s.deleted_per_second(),
                    "populate_ms": millis(s.populate),
                    "archive_bytes": s.archive_bytes,
                })
            })
            .collect();
        json!({
            "workload": "retention",
            "store": self.store,
            "executions": self.executions,
            "concurrency": self.concurrency,
            "page_limit": self.page_limit,
            "pool_size": self.pool,
            "sqlite_durability": self.sqlite_durability.map(durability_name),
            "sweeps": sweeps,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(variant: Variant, ms: u64) -> SweepResult {
        SweepResult {
            variant,
            report: SweepReport {
                examined: 1_001,
                eligible: 600,
                deleted: 500,
                archived: if variant == Variant::Archive { 500 } else { 0 },
                ..SweepReport::default()
            },
            elapsed: Duration::from_millis(ms),
            populate: Duration::from_millis(100),
            archive_bytes: (variant == Variant::Archive).then_some(4096),
        }
    }

    #[test]
    fn the_table_and_the_json_give_rates_and_the_archive_cost() {
        let report = RetentionBenchReport {
            store: "memory".to_owned(),
            summary: "memory".to_owned(),
            executions: 1_000,
            concurrency: 8,
            page_limit: 1_000,
            sqlite_durability: None,
            pool: None,
            sweeps: vec![
                result(Variant::Delete, 500),
                result(Variant::Archive, 1_000),
            ],
        };
        let text = report.markdown();
        assert!(
            text.contains("| delete | 1001 | 600 | 500 | 0 | 0 | 0 | 0 | 0.500 | 2002 | 1000 |"),
            "{text}"
        );
        assert!(
            text.contains("archiving: ×2.00 the delete-only sweep's time (4096 bytes"),
            "{text}"
        );
        assert!(
            text.contains("one fsync per listing page: +1.000 ms per archived execution"),
            "{text}"
        );
        let json = report.to_json();
        assert_eq!(json["workload"], "retention");
        assert_eq!(json["sweeps"][0]["examined_per_sec"], 2002.0);
        assert_eq!(json["sweeps"][1]["variant"], "archive_then_delete");
        assert_eq!(json["sweeps"][1]["archive_bytes"], 4096);
        assert_eq!(json["sweeps"][0]["skipped"], 401);
    }
}
