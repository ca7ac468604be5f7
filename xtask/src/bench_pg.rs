//! `cargo xtask bench-pg`: loomfence's appends against the server's own
//! speed, on one durable throwaway server, side by side.
//!
//! Each round runs `pgbench` with a one-row `INSERT` into a table shaped
//! like loomfence's `events` (the same columns, defaults and indexes), then
//! `loomfence bench --json --runs 1` of every binary given (alternating
//! their order from round to round), all with the same number of clients.
//! The table gives each number per round and its median, and the ratios
//! the appends are judged by, each taken within a round (the machine's
//! load moves between rounds, much less within one).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};

use crate::cmd;
use crate::postgres::Cluster;

/// The pgbench table: loomfence's `events` (see the PostgreSQL adapter's
/// `sql.rs`, `feed_sql.rs` and `retention_sql.rs`) in a schema of its own,
/// so an insert maintains the same three indexes and takes the same feed
/// defaults as an append.
const TABLE: &str = "
CREATE SCHEMA pgbench;
CREATE SEQUENCE pgbench.feed_seq;
CREATE TABLE pgbench.events (
  execution_id text NOT NULL, sequence bigint NOT NULL, kind text NOT NULL,
  payload jsonb NOT NULL, metadata jsonb NOT NULL, at bigint NOT NULL,
  txid xid8 DEFAULT pg_current_xact_id(),
  feed_seq bigint DEFAULT nextval('pgbench.feed_seq'),
  PRIMARY KEY (execution_id, sequence));
CREATE INDEX events_feed ON pgbench.events (txid, feed_seq) WHERE txid IS NOT NULL;
CREATE INDEX events_ended ON pgbench.events (execution_id, sequence)
  WHERE kind IN ('EXECUTION_COMPLETED', 'EXECUTION_FAILED', 'EXECUTION_CANCELLED');
";

/// One row per transaction: a step event of the client's own execution at
/// a random sequence, its payload built (and so parsed) per row, as a
/// bound JSON parameter is.
const SCRIPT: &str = "\\set seq random(1, 9000000000000000000)
INSERT INTO pgbench.events (execution_id, sequence, kind, payload, metadata, at) \
VALUES ('pgbench-' || :client_id, :seq, 'STEP_COMPLETED', ('{\"step\": ' || :seq || '}')::jsonb, \
'{\"kernel\": true}', 1765000000000);
";

/// The bench's workloads the table reads.
const ONLY: &str = "unfenced,fenced_append,acquire,park_resume_acquire_fence,\
                    park_resume_fence_if_parked_at";

/// What `cargo xtask bench-pg` was asked for.
#[derive(Debug)]
pub(crate) struct Settings {
    /// Rounds, each pgbench then every binary.
    pub(crate) rounds: u32,
    /// Clients: pgbench's and the bench's concurrency (and pool).
    pub(crate) clients: u32,
    /// pgbench's seconds per round.
    pub(crate) seconds: u32,
    /// The bench's executions per workload per round.
    pub(crate) executions: u32,
    /// loomfence binaries to measure; none: this workspace's, built now.
    pub(crate) binaries: Vec<PathBuf>,
}

/// One round's numbers of one binary, from its `--json`.
#[derive(Debug, Default, Clone, Copy)]
struct Measured {
    /// Unfenced appends per second.
    unfenced: Option<f64>,
    /// Fenced appends per second (token taken before the clock).
    fenced_append: Option<f64>,
    /// `acquire_fence` calls per second.
    acquire: Option<f64>,
    /// Executions per second of the park/resume under `acquire_fence`.
    resume_acquire: Option<f64>,
    /// The same under the conditional acquire (the function).
    resume_conditional: Option<f64>,
}

/// Runs the comparison and prints its table.
pub(crate) fn run(settings: &Settings) -> Result<()> {
    let binaries = if settings.binaries.is_empty() {
        cmd::run(cmd::cargo().args(["build", "--release", "--locked", "-p", "loomfence-cli"]))?;
        vec![cmd::target_dir()?.join("release/loomfence")]
    } else {
        settings.binaries.clone()
    };
    cmd::header("bench-pg: starting a durable PostgreSQL cluster");
    let cluster = Cluster::start(true)?;
    cmd::run(Command::new("psql").args([
        &cluster.url,
        "-q",
        "-v",
        "ON_ERROR_STOP=1",
        "-c",
        TABLE,
    ]))?;
    let script = std::env::temp_dir().join(format!("loomfence-pgbench.{}.sql", std::process::id()));
    std::fs::write(&script, SCRIPT)?;
    let mut pgbench = Vec::new();
    let mut measured = vec![Vec::new(); binaries.len()];
    let outcome = (0..settings.rounds).try_for_each(|round| {
        cmd::header(&format!(
            "bench-pg: round {}/{}",
            round + 1,
            settings.rounds
        ));
        pgbench.push(run_pgbench(&cluster.url, &script, settings)?);
        let mut order: Vec<usize> = (0..binaries.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            measured[i].push(run_bench(&binaries[i], &cluster.url, settings)?);
        }
        Ok::<_, anyhow::Error>(())
    });
    let _ = std::fs::remove_file(&script);
    drop(cluster);
    outcome?;
    print!("{}", table(settings, &binaries, &pgbench, &measured));
    Ok(())
}

/// One pgbench run: its transactions per second.
fn run_pgbench(url: &str, script: &Path, settings: &Settings) -> Result<f64> {
    let clients = settings.clients.to_string();
    let seconds = settings.seconds.to_string();
    let file = script.to_string_lossy();
    let out = cmd::capture(Command::new("pgbench").args([
        "-n", "-M", "prepared", "-c", &clients, "-j", "2", "-T", &seconds, "-f", &file, url,
    ]))?;
    tps(&out).with_context(|| format!("no tps in pgbench's output:\n{out}"))
}

/// The `tps = …` of pgbench's summary.
fn tps(output: &str) -> Option<f64> {
    output
        .lines()
        .find_map(|line| line.strip_prefix("tps = "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|number| number.parse().ok())
}

/// One `loomfence bench` run of `binary`: its numbers.
fn run_bench(binary: &Path, url: &str, settings: &Settings) -> Result<Measured> {
    let clients = settings.clients.to_string();
    let executions = settings.executions.to_string();
    let store = format!("postgres:{url}");
    let mut command = Command::new(binary);
    command.args([
        "bench",
        "--store",
        &store,
        "--concurrency",
        &clients,
        "--executions",
        &executions,
        "--runs",
        "1",
        "--json",
    ]);
    // Only what the table reads, when the binary can be told (an older
    // build runs every workload).
    if cmd::capture(Command::new(binary).args(["bench", "--help"]))?.contains("--only") {
        command.args(["--only", ONLY]);
    }
    let out = cmd::capture(&mut command)?;
    measured(&serde_json::from_str(&out).context("loomfence bench --json")?)
}

/// The numbers of one bench's JSON; a workload the binary does not have
/// (an older build) is `None`.
fn measured(json: &serde_json::Value) -> Result<Measured> {
    let Some(workloads) = json["workloads"].as_array() else {
        bail!("no workloads in the bench's JSON");
    };
    let rate = |key: &str, per: f64| {
        workloads
            .iter()
            .find(|w| w["workload"] == key)
            .and_then(|w| w["executions_per_sec"].as_f64())
            .map(|rate| rate * per)
    };
    Ok(Measured {
        unfenced: rate("unfenced", 5.0),
        fenced_append: rate("fenced_append", 5.0),
        acquire: rate("acquire", 1.0),
        resume_acquire: rate("park_resume_acquire_fence", 1.0),
        resume_conditional: rate("park_resume_fence_if_parked_at", 1.0),
    })
}

/// The Markdown table: every number per round and its median.
fn table(
    settings: &Settings,
    binaries: &[PathBuf],
    pgbench: &[f64],
    measured: &[Vec<Measured>],
) -> String {
    let mut rows: Vec<(String, Vec<Option<f64>>, bool)> = vec![(
        "pgbench one-row INSERT, tps".to_owned(),
        pgbench.iter().copied().map(Some).collect(),
        false,
    )];
    for (binary, runs) in binaries.iter().zip(measured) {
        let name = binary.to_string_lossy();
        let column = |pick: &dyn Fn(&Measured) -> Option<f64>| runs.iter().map(pick).collect();
        let ratio = |a: &dyn Fn(&Measured) -> Option<f64>, b: &dyn Fn(&Measured) -> Option<f64>| {
            runs.iter().map(|m| Some(a(m)? / b(m)?)).collect()
        };
        rows.push((
            format!("{name}: unfenced appends/s"),
            column(&|m| m.unfenced),
            false,
        ));
        rows.push((
            format!("{name}: unfenced appends / pgbench INSERT"),
            runs.iter()
                .zip(pgbench)
                .map(|(m, tps)| Some(m.unfenced? / tps))
                .collect(),
            true,
        ));
        rows.push((
            format!("{name}: fenced appends/s"),
            column(&|m| m.fenced_append),
            false,
        ));
        rows.push((
            format!("{name}: fenced / unfenced append"),
            ratio(&|m| m.fenced_append, &|m| m.unfenced),
            true,
        ));
        rows.push((
            format!("{name}: acquire_fence alone, /s"),
            column(&|m| m.acquire),
            false,
        ));
        rows.push((
            format!("{name}: resume under acquire_fence, executions/s"),
            column(&|m| m.resume_acquire),
            false,
        ));
        rows.push((
            format!("{name}: conditional resume, executions/s"),
            column(&|m| m.resume_conditional),
            false,
        ));
        rows.push((
            format!("{name}: conditional / acquire_fence resume"),
            ratio(&|m| m.resume_conditional, &|m| m.resume_acquire),
            true,
        ));
    }
    let mut out = format!(
        "bench-pg: one durable server (fsync on), {} clients, pgbench {} s and {} executions per \
         workload per round, {} rounds; ratios within each round, then their median\n\n\
         | | per round | median |\n|---|---|---:|\n",
        settings.clients, settings.seconds, settings.executions, settings.rounds
    );
    for (label, values, is_ratio) in rows {
        let show = |value: Option<f64>| match value {
            None => "–".to_owned(),
            Some(v) if is_ratio => format!("{v:.3}"),
            Some(v) => format!("{v:.0}"),
        };
        let present: Vec<f64> = values.iter().flatten().copied().collect();
        let per_round: Vec<String> = values.iter().copied().map(show).collect();
        let median = (!present.is_empty()).then(|| median(&present));
        out += &format!(
            "| {label} | {} | {} |\n",
            per_round.join(" / "),
            show(median)
        );
    }
    out
}

/// The median (the mean of the middle two for an even count); `values`
/// must not be empty.
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pgbench_tps() {
        let out = "latency average = 6.045 ms\ninitial connection time = 569.769 ms\n\
                   tps = 10588.012648 (without initial connection time)\n";
        assert_eq!(tps(out), Some(10588.012648));
        assert_eq!(tps("nothing"), None);
    }

    #[test]
    fn reads_the_bench_json_and_tables_ratios_per_round() {
        let json = serde_json::json!({"workloads": [
            {"workload": "unfenced", "executions_per_sec": 1000.0},
            {"workload": "fenced_append", "executions_per_sec": 960.0},
            {"workload": "acquire", "executions_per_sec": 9000.0},
            {"workload": "park_resume_acquire_fence", "executions_per_sec": 800.0},
            {"workload": "park_resume_fence_if_parked_at", "executions_per_sec": 780.0},
        ]});
        let m = measured(&json).expect("numbers");
        assert_eq!(m.unfenced, Some(5000.0));
        assert_eq!(m.fenced_append, Some(4800.0));
        let old = measured(&serde_json::json!({"workloads": [
            {"workload": "unfenced", "executions_per_sec": 500.0},
        ]}))
        .expect("numbers");
        assert_eq!(old.fenced_append, None);
        let settings = Settings {
            rounds: 2,
            clients: 64,
            seconds: 10,
            executions: 3000,
            binaries: vec![PathBuf::from("new"), PathBuf::from("old")],
        };
        let text = table(
            &settings,
            &settings.binaries,
            &[10_000.0, 6_250.0],
            &[vec![m, m], vec![old, old]],
        );
        assert!(
            text.contains("| pgbench one-row INSERT, tps | 10000 / 6250 | 8125 |"),
            "{text}"
        );
        assert!(
            text.contains("| new: unfenced appends / pgbench INSERT | 0.500 / 0.800 | 0.650 |"),
            "{text}"
        );
        assert!(
            text.contains("| new: fenced / unfenced append | 0.960 / 0.960 | 0.960 |"),
            "{text}"
        );
        assert!(
            text.contains("| old: fenced / unfenced append | – / – | – |"),
            "{text}"
        );
    }
}
