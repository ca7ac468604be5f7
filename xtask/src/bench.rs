//! `cargo xtask bench`: criterion benchmarks, then a Markdown table per
//! group of what this run measured.
//!
//! Criterion writes each benchmark's statistics to
//! `target/criterion/<group>/<id…>/new/estimates.json` (and its own HTML
//! and terminal reports). The table adds what criterion does not show: each
//! entry's mean as a ratio to the group's first entry, the number that
//! matters when checking how something scales (`log_len/1000000` against
//! `log_len/10`). Cargo's and criterion's output go to stderr, so
//! `cargo xtask bench > results.md` captures only the tables.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context as _, Result};

use crate::cmd;

/// One benchmark's result, in nanoseconds.
#[derive(Debug)]
struct Entry {
    /// The id within its group (`function/param`); the group's name for a
    /// benchmark without one.
    id: String,
    /// Criterion's `mean` point estimate.
    mean: f64,
    /// The mean's confidence interval.
    interval: [f64; 2],
    /// That interval's confidence level, e.g. `0.95`.
    level: f64,
}

/// Runs `cargo bench --locked -p <package> [--bench <bench>] [-- <harness
/// args>]` and prints the tables of every group it measured.
pub(crate) fn run(package: &str, bench: Option<&str>, harness_args: &[String]) -> Result<()> {
    // Criterion's own rule: $CRITERION_HOME, else `criterion/` in the
    // target directory. Resolved first, so a broken workspace fails fast.
    let dir = match std::env::var_os("CRITERION_HOME") {
        Some(home) => PathBuf::from(home),
        None => cmd::target_dir()?.join("criterion"),
    };
    let mut command = cmd::cargo();
    command.args(["bench", "--locked", "-p", package]);
    if let Some(bench) = bench {
        command.args(["--bench", bench]);
    }
    if !harness_args.is_empty() {
        command.arg("--").args(harness_args);
    }
    cmd::header(&format!("bench: {package}"));
    let started = SystemTime::now();
    cmd::run(command.stdout(std::io::stderr()))?;
    let groups = collect(&dir, started)?;
    if groups.is_empty() {
        cmd::note(&format!(
            "this run wrote no criterion results under {}",
            dir.display()
        ));
    } else {
        print!("{}", render(&groups));
    }
    Ok(())
}

/// Every `new/estimates.json` under `dir` written at or after `since` (so
/// not left by earlier runs), by group, each group ordered by id with
/// numeric parts compared as numbers (`10` before `1000000`).
fn collect(dir: &Path, since: SystemTime) -> Result<BTreeMap<String, Vec<Entry>>> {
    let mut groups = BTreeMap::<String, Vec<Entry>>::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        // A directory criterion never made is an empty report.
        let Ok(listing) = fs::read_dir(&current) else {
            continue;
        };
        for path in listing.map(|entry| entry.map(|entry| entry.path())) {
            let path = path?;
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let fresh = fs::metadata(&path)?.modified()? >= since;
            if !path.ends_with("new/estimates.json") || !fresh {
                continue;
            }
            let relative = path.strip_prefix(dir)?.parent().and_then(Path::parent);
            let mut parts = relative
                .into_iter()
                .flatten()
                .map(|part| part.to_string_lossy());
            let group = parts
                .next()
                .context("estimates.json outside a group")?
                .into_owned();
            let id = parts.collect::<Vec<_>>().join("/");
            let json: serde_json::Value = serde_json::from_str(&fs::read_to_string(&path)?)
                .with_context(|| path.display().to_string())?;
            let number = |pointer: &str| {
                json.pointer(&format!("/mean/{pointer}"))
                    .and_then(serde_json::Value::as_f64)
                    .with_context(|| format!("{}: no number at mean/{pointer}", path.display()))
            };
            let entry = Entry {
                id: if id.is_empty() { group.clone() } else { id },
                mean: number("point_estimate")?,
                interval: [
                    number("confidence_interval/lower_bound")?,
                    number("confidence_interval/upper_bound")?,
                ],
                level: number("confidence_interval/confidence_level")?,
            };
            groups.entry(group).or_default().push(entry);
        }
    }
    for entries in groups.values_mut() {
        entries.sort_by_cached_key(|entry| {
            let part = |part: &str| (part.parse::<u64>().unwrap_or(u64::MAX), part.to_owned());
            entry.id.split('/').map(part).collect::<Vec<_>>()
        });
    }
    Ok(groups)
}

/// The Markdown report: per group, each entry's mean, its confidence
/// interval and its ratio to the group's first entry.
fn render(groups: &BTreeMap<String, Vec<Entry>>) -> String {
    let mut out = String::from(
        "## Benchmark results\n\nMean time per iteration (criterion's `mean`); \
         ratio = mean / mean of the group's first entry.\n",
    );
    for (name, entries) in groups {
        let Some(first) = entries.first() else {
            continue;
        };
        // Writing to a String cannot fail.
        let _ = write!(
            out,
            "\n### `{name}`\n\n| id | mean | {:.0}% CI | ratio |\n|:---|---:|:---|---:|\n",
            first.level * 100.0
        );
        for entry in entries {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} – {} | {:.2}× |",
                entry.id.replace('|', "\\|"),
                format_ns(entry.mean),
                format_ns(entry.interval[0]),
                format_ns(entry.interval[1]),
                entry.mean / first.mean
            );
        }
    }
    out
}

/// Nanoseconds in the largest unit that keeps the number at least 1, to
/// four significant digits (`123.4 ns`, `1.234 µs`, `12.34 ms`).
fn format_ns(ns: f64) -> String {
    let (value, unit) = [(1e9, "s"), (1e6, "ms"), (1e3, "µs")]
        .into_iter()
        .find(|&(scale, _)| ns.abs() >= scale)
        .map_or((ns, "ns"), |(scale, unit)| (ns / scale, unit));
    let decimals = match value.abs() {
        v if v < 10.0 => 3,
        v if v < 100.0 => 2,
        _ => 1,
    };
    format!("{value:.decimals$} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Fresh results are tabled in numeric order with ratios to the first;
    /// stale results and criterion's other files are left out.
    #[test]
    fn tables_fresh_results_in_numeric_order() {
        let dir = std::env::temp_dir().join(format!("xtask-bench-test.{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let since = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        for (id, mean, fresh) in [
            ("scan/n/8", 12_340.0, true),
            ("scan/n/1", 1_000.0, true),
            ("old/x", 1.0, false),
        ] {
            let file = dir.join(id).join("new").join("estimates.json");
            fs::create_dir_all(file.parent().expect("a parent")).expect("create dir");
            let interval = format!(
                r#"{{"confidence_level":0.95,"lower_bound":{},"upper_bound":{}}}"#,
                mean * 0.9,
                mean * 1.1
            );
            let json = format!(
                r#"{{"mean":{{"point_estimate":{mean},"confidence_interval":{interval}}}}}"#
            );
            fs::write(&file, json).expect("write estimates");
            let stamp =
                since + Duration::from_secs(if fresh { 10 } else { 0 }) - Duration::from_secs(5);
            let handle = fs::File::options().write(true).open(&file).expect("open");
            handle.set_modified(stamp).expect("set mtime");
        }
        fs::create_dir_all(dir.join("report")).expect("report dir");
        fs::write(dir.join("report").join("index.html"), "<html>").expect("html");
        let groups = collect(&dir, since);
        let _ = fs::remove_dir_all(&dir);
        let text = render(&groups.expect("collect"));
        assert!(
            text.ends_with(
                "### `scan`\n\n| id | mean | 95% CI | ratio |\n|:---|---:|:---|---:|\n\
                 | `n/1` | 1.000 µs | 900.0 ns – 1.100 µs | 1.00× |\n\
                 | `n/8` | 12.34 µs | 11.11 µs – 13.57 µs | 12.34× |\n"
            ),
            "{text}"
        );
        assert!(!text.contains("old"), "{text}");
    }

    /// Units switch at each power of a thousand.
    #[test]
    fn formats_durations_in_human_units() {
        assert_eq!(format_ns(12.0), "12.00 ns");
        assert_eq!(format_ns(999.4), "999.4 ns");
        assert_eq!(format_ns(1_234.0), "1.234 µs");
        assert_eq!(format_ns(56_780_000.0), "56.78 ms");
        assert_eq!(format_ns(2_500_000_000.0), "2.500 s");
    }
}
