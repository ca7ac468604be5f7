//! Turning criterion's result files into Markdown ratio tables.
//!
//! Criterion (0.8) writes one directory per benchmark under
//! `target/criterion/`: `<group>/<function>/<param>/new/estimates.json`, or
//! shorter paths when the id has no function or no parameter. Each
//! `estimates.json` holds the mean in nanoseconds with its confidence
//! interval. Reading these files (rather than scraping criterion's terminal
//! output) gives exact numbers; the table adds what criterion does not
//! print: every entry's cost relative to a baseline in the same group,
//! which is the number that matters when checking how something scales.
//!
//! Everything here is pure apart from reading the directory, so it is tested
//! on fabricated result trees.

use std::cmp::Ordering;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::time::SystemTime;

use crate::error::XtaskError;

/// How many directory levels below a group an id can span
/// (`<function>/<param>`).
const MAX_ID_DEPTH: usize = 2;

/// One benchmark's result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Measurement {
    /// The benchmark id within its group (`function/param`, `function` or
    /// `param`); the group name itself for a benchmark that has no sub-id.
    pub(crate) id: String,
    /// The id's last component read as a number, when it is one; numeric
    /// parameters are ordered and baselined by value, not as text.
    pub(crate) param: Option<f64>,
    /// Mean time per iteration, in nanoseconds.
    pub(crate) mean_ns: f64,
    /// Lower bound of the mean's confidence interval, in nanoseconds.
    pub(crate) lower_ns: f64,
    /// Upper bound of the mean's confidence interval, in nanoseconds.
    pub(crate) upper_ns: f64,
    /// The interval's confidence level, e.g. `0.95`.
    pub(crate) confidence_level: f64,
}

/// The fresh results of one benchmark group, in display order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Group {
    /// The group's name (its directory under `target/criterion/`).
    pub(crate) name: String,
    /// The measurements, sorted for display.
    pub(crate) entries: Vec<Measurement>,
    /// Index into `entries` of the entry every ratio is relative to.
    pub(crate) baseline: usize,
}

impl Group {
    /// Orders `entries` and picks the baseline.
    ///
    /// When every entry has a numeric parameter, entries are ordered by
    /// function then parameter value, and the baseline is the smallest
    /// parameter (ties broken by id), so a scaling series reads as "n times
    /// the smallest case". Otherwise entries are ordered by id and the first
    /// one is the baseline: arbitrary, but stable from run to run.
    /// Returns `None` for an empty list: a group without results has no row.
    fn new(name: String, mut entries: Vec<Measurement>) -> Option<Self> {
        let numeric = entries.iter().all(|entry| entry.param.is_some());
        let baseline = if numeric {
            entries.sort_by(|a, b| {
                id_prefix(&a.id)
                    .cmp(id_prefix(&b.id))
                    .then_with(|| compare_params(a, b))
                    .then_with(|| a.id.cmp(&b.id))
            });
            entries
                .iter()
                .enumerate()
                .min_by(|(_, a), (_, b)| compare_params(a, b).then_with(|| a.id.cmp(&b.id)))
                .map(|(index, _)| index)?
        } else {
            entries.sort_by(|a, b| a.id.cmp(&b.id));
            if entries.is_empty() {
                return None;
            }
            0
        };
        Some(Self {
            name,
            entries,
            baseline,
        })
    }
}

/// The id without its last component (the function part of
/// `function/param`), so numeric series of different functions stay apart.
fn id_prefix(id: &str) -> &str {
    id.rsplit_once('/').map_or("", |(prefix, _)| prefix)
}

/// Orders two measurements by numeric parameter (missing ones last).
fn compare_params(a: &Measurement, b: &Measurement) -> Ordering {
    match (a.param, b.param) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// Reads every benchmark under `criterion_dir` whose `new/estimates.json`
/// was modified at or after `since`, grouped by top-level directory and
/// sorted by group name.
///
/// Filtering on modification time is what keeps results of earlier runs
/// (other benches, renamed ids) out of the report. A missing directory
/// means criterion wrote nothing, which is an empty report, not an error.
pub(crate) fn collect(criterion_dir: &Path, since: SystemTime) -> Result<Vec<Group>, XtaskError> {
    if !criterion_dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut groups = Vec::new();
    for group_dir in subdirectories(criterion_dir)? {
        let Some(name) = group_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
        else {
            continue;
        };
        let mut entries = Vec::new();
        find_measurements(&group_dir, &name, &mut Vec::new(), since, &mut entries)?;
        groups.extend(Group::new(name, entries));
    }
    Ok(groups)
}

/// Collects fresh measurements at `dir` and below it, down to
/// [`MAX_ID_DEPTH`] levels under the group; `id_parts` are the directory
/// names between the group and `dir`.
fn find_measurements(
    dir: &Path,
    group: &str,
    id_parts: &mut Vec<String>,
    since: SystemTime,
    out: &mut Vec<Measurement>,
) -> Result<(), XtaskError> {
    let estimates = dir.join("new").join("estimates.json");
    if estimates.is_file() {
        let modified = fs::metadata(&estimates)
            .and_then(|metadata| metadata.modified())
            .map_err(XtaskError::io(&estimates))?;
        if modified >= since {
            let json = fs::read_to_string(&estimates).map_err(XtaskError::io(&estimates))?;
            let id = if id_parts.is_empty() {
                group.to_owned()
            } else {
                id_parts.join("/")
            };
            out.push(parse_estimates(&json, &estimates, id)?);
        }
    }
    if id_parts.len() < MAX_ID_DEPTH {
        for child in subdirectories(dir)? {
            let Some(part) = child.file_name().map(|n| n.to_string_lossy().into_owned()) else {
                continue;
            };
            id_parts.push(part);
            find_measurements(&child, group, id_parts, since, out)?;
            id_parts.pop();
        }
    }
    Ok(())
}

/// The subdirectories of `dir`, sorted by name so results do not depend on
/// the file system's listing order.
fn subdirectories(dir: &Path) -> Result<Vec<std::path::PathBuf>, XtaskError> {
    let mut dirs = Vec::new();
    for entry in fs::read_dir(dir).map_err(XtaskError::io(dir))? {
        let entry = entry.map_err(XtaskError::io(dir))?;
        let path = entry.path();
        if path.is_dir() {
            dirs.push(path);
        }
    }
    dirs.sort();
    Ok(dirs)
}

/// Extracts the mean and its confidence interval from the text of an
/// `estimates.json`; `path` is only used in error messages.
fn parse_estimates(json: &str, path: &Path, id: String) -> Result<Measurement, XtaskError> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|source| XtaskError::EstimatesJson {
            path: path.to_path_buf(),
            source,
        })?;
    let number = |pointer: &str, field: &'static str| {
        value
            .pointer(pointer)
            .and_then(serde_json::Value::as_f64)
            .ok_or_else(|| XtaskError::EstimatesField {
                path: path.to_path_buf(),
                field,
            })
    };
    let param = id
        .rsplit('/')
        .next()
        .and_then(|last| last.parse::<f64>().ok())
        .filter(|number| number.is_finite());
    Ok(Measurement {
        mean_ns: number("/mean/point_estimate", "mean.point_estimate")?,
        lower_ns: number(
            "/mean/confidence_interval/lower_bound",
            "mean.confidence_interval.lower_bound",
        )?,
        upper_ns: number(
            "/mean/confidence_interval/upper_bound",
            "mean.confidence_interval.upper_bound",
        )?,
        confidence_level: number(
            "/mean/confidence_interval/confidence_level",
            "mean.confidence_interval.confidence_level",
        )?,
        param,
        id,
    })
}

/// Renders groups as Markdown: a heading per group and a table with id,
/// mean, confidence interval and ratio to the group's baseline.
pub(crate) fn render_markdown(groups: &[Group]) -> String {
    // Criterion's console line shows its "typical" estimate (the slope when
    // it has one), so say which statistic this is to avoid confusion.
    let mut out = String::from(
        "## Benchmark results\n\nMean time per iteration (criterion `mean`); \
         ratio = mean / mean of the group's baseline.\n",
    );
    for group in groups {
        let Some(baseline) = group.entries.get(group.baseline) else {
            continue;
        };
        // Writing to a String cannot fail; the results are ignored.
        let _ = write!(
            out,
            "\n### `{}`\n\n| id | mean | {:.0}% CI | ratio |\n|:---|---:|:---|---:|\n",
            escape_cell(&group.name),
            baseline.confidence_level * 100.0,
        );
        for (index, entry) in group.entries.iter().enumerate() {
            let ratio = if index == group.baseline {
                "1.00× (baseline)".to_owned()
            } else {
                format_ratio(entry.mean_ns, baseline.mean_ns)
            };
            let _ = writeln!(
                out,
                "| `{}` | {} | {} – {} | {} |",
                escape_cell(&entry.id),
                format_ns(entry.mean_ns),
                format_ns(entry.lower_ns),
                format_ns(entry.upper_ns),
                ratio,
            );
        }
    }
    out
}

/// `value / baseline` as e.g. `12.34×`, or `n/a` when the baseline cannot
/// divide (zero or not a number).
fn format_ratio(value: f64, baseline: f64) -> String {
    if baseline > 0.0 && baseline.is_finite() && value.is_finite() {
        format!("{:.2}×", value / baseline)
    } else {
        "n/a".to_owned()
    }
}

/// Formats nanoseconds in the largest unit that keeps the number at least 1,
/// with four significant digits (e.g. `123.4 ns`, `1.234 µs`, `12.34 ms`).
pub(crate) fn format_ns(ns: f64) -> String {
    let (value, unit) = if ns.abs() < 1e3 {
        (ns, "ns")
    } else if ns.abs() < 1e6 {
        (ns / 1e3, "µs")
    } else if ns.abs() < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let decimals = if value.abs() < 10.0 {
        3
    } else if value.abs() < 100.0 {
        2
    } else {
        1
    };
    format!("{value:.decimals$} {unit}")
}

/// Escapes `|`, which would otherwise end a Markdown table cell.
fn escape_cell(text: &str) -> String {
    text.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::time::Duration;

    /// A directory under the system temp dir, removed when dropped, so tests
    /// need no extra dependency and leave nothing behind.
    struct TempDir(PathBuf);

    impl TempDir {
        /// Creates a fresh, uniquely named directory for one test.
        fn new(tag: &str) -> Self {
            let nanos = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_nanos());
            let path = std::env::temp_dir().join(format!(
                "xtask-bench-report-{tag}-{}-{nanos}",
                std::process::id()
            ));
            fs::create_dir_all(&path).expect("create temp dir");
            Self(path)
        }
    }

    impl Drop for TempDir {
        /// Best-effort cleanup; a leftover temp dir must not fail a test.
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    /// The reference "run start" for fabricated results.
    fn run_start() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)
    }

    /// Writes a criterion-shaped `estimates.json` under `root/<id>/new/`
    /// and stamps it as written after the run start (`fresh`) or an hour
    /// before it.
    fn write_result(root: &Path, id: &str, mean: f64, fresh: bool) {
        let dir = root.join(id).join("new");
        fs::create_dir_all(&dir).expect("create result dir");
        let json = format!(
            r#"{{"mean":{{"confidence_interval":{{"confidence_level":0.95,"lower_bound":{},"upper_bound":{}}},"point_estimate":{mean},"standard_error":1.0}},
               "median":{{"confidence_interval":{{"confidence_level":0.95,"lower_bound":1.0,"upper_bound":2.0}},"point_estimate":1.5,"standard_error":0.1}},
               "median_abs_dev":null,"slope":null,"std_dev":null}}"#,
            mean * 0.9,
            mean * 1.1,
        );
        let file = dir.join("estimates.json");
        fs::write(&file, json).expect("write estimates");
        let stamp = if fresh {
            run_start() + Duration::from_secs(10)
        } else {
            run_start() - Duration::from_secs(3600)
        };
        fs::File::options()
            .write(true)
            .open(&file)
            .and_then(|handle| handle.set_modified(stamp))
            .expect("set mtime");
    }

    /// The ids of a group's entries, in display order.
    fn ids(group: &Group) -> Vec<&str> {
        group
            .entries
            .iter()
            .map(|entry| entry.id.as_str())
            .collect()
    }

    /// Numeric parameters sort and baseline by value (2 before 10), and
    /// stale entries of a fresh group are dropped.
    #[test]
    fn numeric_params_use_smallest_as_baseline() {
        let dir = TempDir::new("numeric");
        write_result(&dir.0, "insert/vec/10", 500.0, true);
        write_result(&dir.0, "insert/vec/2", 100.0, true);
        write_result(&dir.0, "insert/vec/1000", 50_000.0, true);
        write_result(&dir.0, "insert/vec/1", 1.0, false);

        let groups = collect(&dir.0, run_start()).expect("collect");
        assert_eq!(groups.len(), 1);
        let group = &groups[0];
        assert_eq!(group.name, "insert");
        assert_eq!(ids(group), ["vec/2", "vec/10", "vec/1000"]);
        assert_eq!(group.baseline, 0);
        assert_eq!(group.entries[1].param, Some(10.0));
        assert!((group.entries[2].mean_ns - 50_000.0).abs() < 1e-9);
        assert!((group.entries[2].lower_ns - 45_000.0).abs() < 1e-6);
        assert!((group.entries[2].upper_ns - 55_000.0).abs() < 1e-6);
    }

    /// Several functions over the same numeric parameters stay grouped by
    /// function; the baseline is the smallest parameter, ties by id.
    #[test]
    fn numeric_series_of_several_functions() {
        let dir = TempDir::new("series");
        for (function, factor) in [("map", 2.0), ("vec", 1.0)] {
            for param in [100, 10] {
                write_result(
                    &dir.0,
                    &format!("lookup/{function}/{param}"),
                    f64::from(param) * factor,
                    true,
                );
            }
        }
        let groups = collect(&dir.0, run_start()).expect("collect");
        let group = &groups[0];
        assert_eq!(ids(group), ["map/10", "map/100", "vec/10", "vec/100"]);
        assert_eq!(group.entries[group.baseline].id, "map/10");
    }

    /// Non-numeric ids (including ids without a parameter) fall back to
    /// alphabetical order with the first as baseline; a benchmark with no
    /// sub-id is named after its group; groups are sorted by name; groups
    /// with only stale results and non-result directories are skipped.
    #[test]
    fn named_ids_groups_and_staleness() {
        let dir = TempDir::new("named");
        write_result(&dir.0, "codec/encode", 300.0, true);
        write_result(&dir.0, "codec/decode", 200.0, true);
        write_result(&dir.0, "codec/roundtrip/64", 900.0, true);
        write_result(&dir.0, "alone", 42.0, true);
        write_result(&dir.0, "old/fn/1", 1.0, false);
        fs::create_dir_all(dir.0.join("report")).expect("report dir");
        fs::write(dir.0.join("report").join("index.html"), "<html>").expect("html");

        let groups = collect(&dir.0, run_start()).expect("collect");
        let names: Vec<_> = groups.iter().map(|group| group.name.as_str()).collect();
        assert_eq!(names, ["alone", "codec"]);
        assert_eq!(ids(&groups[0]), ["alone"]);
        assert_eq!(groups[0].entries[0].param, None);
        assert_eq!(ids(&groups[1]), ["decode", "encode", "roundtrip/64"]);
        assert_eq!(groups[1].baseline, 0);
    }

    /// No criterion directory at all is an empty report.
    #[test]
    fn missing_directory_is_empty() {
        let dir = TempDir::new("missing");
        let groups = collect(&dir.0.join("nope"), run_start()).expect("collect");
        assert!(groups.is_empty());
    }

    /// Broken files are errors that name the file and the problem.
    #[test]
    fn malformed_estimates_are_reported() {
        let path = Path::new("g/f/new/estimates.json");
        let err = parse_estimates("{", path, "f".to_owned()).expect_err("bad JSON");
        assert!(err.to_string().contains("g/f/new/estimates.json"), "{err}");

        let err = parse_estimates(r#"{"mean":{"point_estimate":1.0}}"#, path, "f".to_owned())
            .expect_err("missing interval");
        assert!(
            err.to_string()
                .contains("mean.confidence_interval.lower_bound"),
            "{err}"
        );
    }

    /// The Markdown table has a heading per group, the CI level in the
    /// header, human units and ratios against the marked baseline.
    #[test]
    fn renders_markdown_table() {
        let dir = TempDir::new("render");
        write_result(&dir.0, "scan/1", 1_000.0, true);
        write_result(&dir.0, "scan/8", 12_340.0, true);
        let groups = collect(&dir.0, run_start()).expect("collect");
        let text = render_markdown(&groups);
        let expected = "## Benchmark results\n\
            \n\
            Mean time per iteration (criterion `mean`); \
            ratio = mean / mean of the group's baseline.\n\
            \n\
            ### `scan`\n\
            \n\
            | id | mean | 95% CI | ratio |\n\
            |:---|---:|:---|---:|\n\
            | `1` | 1.000 µs | 900.0 ns – 1.100 µs | 1.00× (baseline) |\n\
            | `8` | 12.34 µs | 11.11 µs – 13.57 µs | 12.34× |\n";
        assert_eq!(text, expected);
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

    /// Ratios need a usable baseline.
    #[test]
    fn ratio_handles_zero_baseline() {
        assert_eq!(format_ratio(3.0, 1.5), "2.00×");
        assert_eq!(format_ratio(3.0, 0.0), "n/a");
    }

    /// A `|` in an id must not split the table cell.
    #[test]
    fn escapes_pipes() {
        assert_eq!(escape_cell("a|b"), "a\\|b");
    }
}
