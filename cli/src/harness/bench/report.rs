//! What the bench found, and the two ways of printing it: a Markdown table
//! with the comparisons under it, or one JSON object.

use loomfence_sqlite::Durability;
use serde_json::{Value, json};

use crate::harness::bench::stats::{RunStats, median};
use crate::harness::bench::workloads::Workload;
use crate::store::sqlite_file::durability_name;

/// The conditional resume's budget over the `acquire_fence` resume, as
/// extra time per execution (design: the conditional acquire adds a round trip).
pub(crate) const CONDITIONAL_TARGET: f64 = 0.10;

/// On PostgreSQL and SQLite, the fenced append's budget over the unfenced
/// one, as extra time per execution: the token's check is one lookup of a
/// row beside the insert, so fencing an append must stay close to free.
/// (The fenced workload's acquire is a write of its own, timed alone.)
pub(crate) const FENCED_APPEND_TARGET: f64 = 0.05;

/// On SQLite, the conditional resume's budget over the `acquire_fence`
/// resume: its extra transaction (the tail read) is a larger share of a
/// local commit than of a PostgreSQL round-trip.
pub(crate) const SQLITE_CONDITIONAL_TARGET: f64 = 0.15;

/// Every measured run of one workload.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct WorkloadResult {
    /// The workload.
    pub(crate) workload: Workload,
    /// One entry per round, in order.
    pub(crate) runs: Vec<RunStats>,
}

impl WorkloadResult {
    /// Median over runs of executions per second.
    pub(crate) fn throughput(&self) -> f64 {
        self.median_of(|r| Some(r.throughput))
    }

    /// Median over runs of the p50 latency, ms.
    pub(crate) fn p50_ms(&self) -> f64 {
        self.median_of(|r| Some(r.p50_ms))
    }

    /// Median over runs of the p99 latency, ms.
    pub(crate) fn p99_ms(&self) -> f64 {
        self.median_of(|r| Some(r.p99_ms))
    }

    /// Median over runs of the resume's own p50, ms (park workloads only).
    pub(crate) fn resume_p50_ms(&self) -> Option<f64> {
        self.workload
            .resumes()
            .then(|| self.median_of(|r| r.resume_p50_ms))
    }

    /// The median of one number over the runs that have it.
    fn median_of(&self, pick: impl Fn(&RunStats) -> Option<f64>) -> f64 {
        median(&self.runs.iter().filter_map(pick).collect::<Vec<_>>())
    }
}

/// One workload against another.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Comparison {
    /// How the comparison is named in the table's notes.
    pub(crate) label: &'static str,
    /// Its JSON key.
    pub(crate) key: &'static str,
    /// Median throughput of the subject over the baseline's.
    pub(crate) throughput_ratio: f64,
    /// How much more time one execution of the subject takes than one of
    /// the baseline, from the medians: `(1/subject) / (1/baseline) - 1`.
    pub(crate) extra_time: f64,
    /// The same per round: the two workloads ran back to back in each
    /// round, so each pair saw about the same machine.
    pub(crate) extra_time_per_run: Vec<f64>,
    /// The budget for `extra_time` on this store, if there is one.
    pub(crate) target: Option<f64>,
}

/// A finished bench.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct BenchReport {
    /// The store, as named in the JSON (no password).
    pub(crate) store: String,
    /// The store as named in the table's heading: with the durability of
    /// an SQLite file.
    pub(crate) summary: String,
    /// Whether it is PostgreSQL.
    pub(crate) postgres: bool,
    /// Concurrent tasks.
    pub(crate) concurrency: u32,
    /// Executions per run of each workload.
    pub(crate) executions: u32,
    /// Rounds.
    pub(crate) runs: u32,
    /// Executions of each workload in the warm-up round.
    pub(crate) warmup: u32,
    /// Connections per PostgreSQL store.
    pub(crate) pool: Option<usize>,
    /// The SQLite store's durability (`None` on other stores).
    pub(crate) sqlite_durability: Option<Durability>,
    /// One entry per workload, in [`Workload::ALL`] order.
    pub(crate) results: Vec<WorkloadResult>,
}

impl BenchReport {
    /// The result of `workload`, if it ran.
    fn result(&self, workload: Workload) -> Option<&WorkloadResult> {
        self.results.iter().find(|r| r.workload == workload)
    }

    /// The budget for the comparison `key` on this store: the fenced
    /// append's on PostgreSQL and SQLite, the conditional resume's on every
    /// store (larger on SQLite).
    fn target(&self, key: &str) -> Option<f64> {
        let sqlite = self.sqlite_durability.is_some();
        match key {
            "fenced_append_vs_unfenced" if sqlite || self.postgres => Some(FENCED_APPEND_TARGET),
            "conditional_vs_acquire_fence" if sqlite => Some(SQLITE_CONDITIONAL_TARGET),
            "conditional_vs_acquire_fence" => Some(CONDITIONAL_TARGET),
            _ => None,
        }
    }

    /// `subject` against `baseline`, if both ran.
    fn compare(
        &self,
        label: &'static str,
        key: &'static str,
        subject: Workload,
        baseline: Workload,
    ) -> Option<Comparison> {
        let (s, b) = (self.result(subject)?, self.result(baseline)?);
        let extra_time_per_run = s
            .runs
            .iter()
            .zip(&b.runs)
            .map(|(s, b)| b.throughput / s.throughput - 1.0)
            .collect();
        Some(Comparison {
            label,
            key,
            throughput_ratio: s.throughput() / b.throughput(),
            extra_time: b.throughput() / s.throughput() - 1.0,
            extra_time_per_run,
            target: self.target(key),
        })
    }

    /// The comparisons the bench exists for; the last only on PostgreSQL.
    pub(crate) fn comparisons(&self) -> Vec<Comparison> {
        [
            self.compare(
                "fenced append / unfenced append",
                "fenced_append_vs_unfenced",
                Workload::FencedAppend,
                Workload::Unfenced,
            ),
            self.compare(
                "fenced (acquire_fence and the appends) / unfenced",
                "fenced_vs_unfenced",
                Workload::Fenced,
                Workload::Unfenced,
            ),
            self.compare(
                "conditional resume (fence_if_parked_at) / acquire_fence resume",
                "conditional_vs_acquire_fence",
                Workload::ParkConditional,
                Workload::ParkAcquireFence,
            ),
            self.compare(
                "function / pipelined conditional acquire",
                "function_vs_pipelined",
                Workload::ParkConditional,
                Workload::ParkConditionalPipelined,
            ),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The Markdown table, one row per workload, and the comparisons below.
    pub(crate) fn markdown(&self) -> String {
        let pool = self.pool.map_or_else(String::new, |pool| {
            format!(", {pool} connections per store")
        });

        let mut out = format!(
            "loomfence bench: {}, {} concurrent tasks{pool}, {} executions per run, median of {} run{} (warm-up: {} per workload)\n\n",
            self.summary,
            self.concurrency,
            self.executions,
            self.runs,
            if self.runs == 1 { "" } else { "s" },
            self.warmup,
        );
        out += "| workload | executions/s | p50 ms | p99 ms | resume p50 ms | executions/s per run |\n";
        out += "|---|---:|---:|---:|---:|---|\n";
        for result in &self.results {
            let per_run: Vec<String> = result
                .runs
                .iter()
                .map(|r| format!("{:.0}", r.throughput))
                .collect();
            out += &format!(
                "| {} | {:.0} | {} | {} | {} | {} |\n",
                result.workload.label(self.postgres),
                result.throughput(),
                sig3(result.p50_ms()),
                sig3(result.p99_ms()),
                result.resume_p50_ms().map_or_else(|| "–".to_owned(), sig3),
                per_run.join(" / "),
            );
        }
        out.push('\n');
        for c in self.comparisons() {
            let per_run: Vec<String> = c.extra_time_per_run.iter().map(|x| percent(*x)).collect();
            let target = c.target.map_or_else(String::new, |target| {
                let verdict = if c.extra_time <= target {
                    "within"
                } else {
                    "over"
                };
                format!(
                    " ({verdict} the {} target)",
                    percent(target).trim_start_matches('+')
                )
            });
            out += &format!(
                "- {}: {} time per execution{target}, throughput ×{:.3}; per run: {}\n",
                c.label,
                percent(c.extra_time),
                c.throughput_ratio,
                per_run.join(", "),
            );
        }
        if self.comparisons().iter().any(|c| c.target.is_some()) {
            out += "  (a target is the most extra time per execution the project allows that comparison on this store; see docs/decisions.md)\n";
        }
        out
    }

    /// The `--json` object.
    pub(crate) fn to_json(&self) -> Value {
        let workloads: Vec<Value> = self
            .results
            .iter()
            .map(|r| {
                json!({
                    "workload": r.workload.key(),
                    "label": r.workload.label(self.postgres),
                    "executions_per_sec": r.throughput(),
                    "appends_per_execution": r.workload.appends_only(),
                    "appends_per_sec": r.workload.appends_only().map(|n| f64::from(n) * r.throughput()),
                    "p50_ms": r.p50_ms(),
                    "p99_ms": r.p99_ms(),
                    "resume_p50_ms": r.resume_p50_ms(),
                    "per_run": r.runs.iter().map(|s| json!({
                        "executions_per_sec": s.throughput,
                        "p50_ms": s.p50_ms,
                        "p99_ms": s.p99_ms,
                        "resume_p50_ms": s.resume_p50_ms,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let mut comparisons = serde_json::Map::new();
        for c in self.comparisons() {
            comparisons.insert(
                c.key.to_owned(),
                json!({
                    "throughput_ratio": c.throughput_ratio,
                    "extra_time": c.extra_time,
                    "extra_time_per_run": c.extra_time_per_run,
                    "target": c.target,
                }),
            );
        }
        json!({
            "store": self.store,
            "concurrency": self.concurrency,
            "executions": self.executions,
            "runs": self.runs,
            "warmup_executions": self.warmup,
            "pool_size": self.pool,
            "sqlite_durability": self.sqlite_durability.map(durability_name),
            "workloads": workloads,
            "comparisons": comparisons,
            "conditional_target": self.target("conditional_vs_acquire_fence"),
        })
    }
}

/// A signed percentage with one decimal: `+8.3%`, `-2.0%`.
fn percent(fraction: f64) -> String {
    format!("{:+.1}%", fraction * 100.0)
}

/// A latency with three significant digits (`12.3`, `0.0412`).
fn sig3(value: f64) -> String {
    if !value.is_finite() || value == 0.0 {
        return format!("{value}");
    }
    // log10 of a finite non-zero f64 is within ±400.
    #[allow(clippy::cast_possible_truncation)]
    let magnitude = value.abs().log10().floor() as i32;
    let decimals = usize::try_from(2 - magnitude).unwrap_or(0);
    format!("{value:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(throughput: f64) -> RunStats {
        RunStats {
            throughput,
            p50_ms: 10.0,
            p99_ms: 20.0,
            resume_p50_ms: Some(3.0),
        }
    }

    fn report(postgres: bool) -> BenchReport {
        let runs = |values: &[f64]| values.iter().copied().map(stats).collect::<Vec<_>>();
        let mut results = vec![
            WorkloadResult {
                workload: Workload::Unfenced,
                runs: runs(&[1000.0, 1100.0, 900.0]),
            },
            WorkloadResult {
                workload: Workload::FencedAppend,
                runs: runs(&[950.0, 1000.0, 900.0]),
            },
            WorkloadResult {
                workload: Workload::Fenced,
                runs: runs(&[800.0, 850.0, 750.0]),
            },
            WorkloadResult {
                workload: Workload::ParkAcquireFence,
                runs: runs(&[500.0, 500.0, 500.0]),
            },
            WorkloadResult {
                workload: Workload::ParkConditional,
                runs: runs(&[400.0, 400.0, 400.0]),
            },
        ];
        if postgres {
            results.push(WorkloadResult {
                workload: Workload::ParkConditionalPipelined,
                runs: runs(&[500.0, 400.0, 320.0]),
            });
        }
        BenchReport {
            store: "memory".to_owned(),
            summary: "memory".to_owned(),
            postgres,
            concurrency: 4,
            executions: 10,
            runs: 3,
            warmup: 4,
            pool: None,
            sqlite_durability: None,
            results,
        }
    }

    #[test]
    fn comparisons_from_the_medians_and_per_run() {
        let comparisons = report(false).comparisons();
        assert_eq!(comparisons.len(), 3);
        assert_eq!(comparisons[0].key, "fenced_append_vs_unfenced");
        assert_eq!(comparisons[0].target, None, "no target on memory");
        let cond = &comparisons[2];
        assert_eq!(cond.key, "conditional_vs_acquire_fence");
        assert!((cond.extra_time - 0.25).abs() < 1e-12);
        assert!((cond.throughput_ratio - 0.8).abs() < 1e-12);
        assert_eq!(cond.extra_time_per_run, vec![0.25, 0.25, 0.25]);
        let pg = report(true).comparisons();
        assert_eq!(pg.len(), 4);
        assert_eq!(pg[0].target, Some(FENCED_APPEND_TARGET));
        assert!((pg[3].extra_time - 0.0).abs() < 1e-12, "{pg:?}");
    }

    #[test]
    fn markdown_has_a_row_per_workload_and_the_verdict() {
        let text = report(true).markdown();
        assert_eq!(text.lines().filter(|l| l.starts_with("| park")).count(), 3);
        assert!(text.contains("| unfenced | 1000 |"), "{text}");
        assert!(
            text.contains("+25.0% time per execution (over the 10.0% target)")
                && text
                    .contains("(a target is the most extra time per execution the project allows"),
            "{text}"
        );
        assert!(text.contains("function / pipelined"), "{text}");
        assert!(!report(false).markdown().contains("pipelined"));
    }

    #[test]
    fn sqlite_has_both_targets_and_names_its_durability() {
        let plain = report(false);
        assert_eq!(plain.comparisons()[0].target, None);
        assert_eq!(plain.comparisons()[1].target, None);
        let sqlite = BenchReport {
            store: "sqlite:/tmp/b.db".to_owned(),
            summary: "sqlite:/tmp/b.db (durability normal)".to_owned(),
            sqlite_durability: Some(Durability::Normal),
            ..plain
        };
        let comparisons = sqlite.comparisons();
        assert_eq!(comparisons[0].target, Some(FENCED_APPEND_TARGET));
        assert_eq!(comparisons[1].target, None, "the acquire is timed alone");
        assert_eq!(comparisons[2].target, Some(SQLITE_CONDITIONAL_TARGET));
        let text = sqlite.markdown();
        assert!(text.starts_with("loomfence bench: sqlite:/tmp/b.db (durability normal), "));
        // 1000 vs 950 executions/s: +5.3% time per execution.
        assert!(
            text.contains("+5.3% time per execution (over the 5.0% target)"),
            "{text}"
        );
        assert!(
            text.contains("+25.0% time per execution (over the 15.0% target)"),
            "{text}"
        );
        let json = sqlite.to_json();
        assert_eq!(json["sqlite_durability"], "normal");
        assert_eq!(json["conditional_target"], SQLITE_CONDITIONAL_TARGET);
        assert_eq!(
            json["comparisons"]["fenced_append_vs_unfenced"]["target"],
            FENCED_APPEND_TARGET
        );
        assert_eq!(json["workloads"][1]["appends_per_sec"], 4_750.0);
        assert!(json["workloads"][2]["appends_per_sec"].is_null());
    }

    #[test]
    fn numbers_are_readable() {
        assert_eq!(percent(0.083), "+8.3%");
        assert_eq!(percent(-0.02), "-2.0%");
        assert_eq!(sig3(12.345), "12.3");
        assert_eq!(sig3(0.041_23), "0.0412");
        assert_eq!(sig3(1234.4), "1234");
    }
}
