//! `cargo xtask bench`: run criterion benchmarks, then print ratio tables.
//!
//! The benchmark output itself is criterion's; this command adds a Markdown
//! summary of just the results this run produced (see [`crate::bench_report`]),
//! ready to paste into notes. Cargo's and criterion's own output is sent to
//! stderr so that `cargo xtask bench > results.md` captures only the table.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::SystemTime;

use crate::bench_report;
use crate::cmd;
use crate::error::XtaskError;
use crate::workspace;

/// Step name used in headers and error messages.
const STEP: &str = "bench";

/// What to benchmark; mirrors the `bench` subcommand's arguments.
pub(crate) struct BenchOptions<'a> {
    /// Package whose benches run (`cargo bench -p`).
    pub(crate) package: &'a str,
    /// A single bench target to run (`cargo bench --bench`), or all of them.
    pub(crate) bench: Option<&'a str>,
    /// Arguments for the bench harness itself, e.g. a criterion filter.
    pub(crate) harness_args: &'a [String],
}

/// Runs `cargo bench --locked` for the chosen package/target and prints the
/// ratio tables of every criterion group it refreshed.
pub(crate) fn run(options: &BenchOptions<'_>) -> Result<(), XtaskError> {
    let root = workspace::root();
    // Resolved before benchmarking so a broken workspace fails in seconds,
    // not after minutes of measurement.
    let criterion_dir = criterion_dir(&root)?;

    let mut command = cmd::cargo();
    command
        .current_dir(&root)
        .args(["bench", "--locked", "-p", options.package]);
    if let Some(bench) = options.bench {
        command.args(["--bench", bench]);
    }
    if !options.harness_args.is_empty() {
        command.arg("--").args(options.harness_args);
    }
    command.stdout(Stdio::from(io::stderr()));

    cmd::header(&format!("bench: {}", options.package));
    // Taken just before the run: any result file modified since was
    // written by this run.
    let started = SystemTime::now();
    cmd::run(STEP, &mut command)?;

    let groups = bench_report::collect(&criterion_dir, started)?;
    if groups.is_empty() {
        cmd::note(&format!(
            "no criterion results were written under {} by this run \
             (not a criterion bench, or the filter matched nothing)",
            criterion_dir.display()
        ));
        return Ok(());
    }
    print!("{}", bench_report::render_markdown(&groups));
    Ok(())
}

/// Where criterion writes its results, following criterion's own rules:
/// `$CRITERION_HOME` if set (give it as an absolute path: criterion resolves
/// a relative one against the bench's package directory), otherwise
/// `criterion/` inside cargo's target directory.
fn criterion_dir(root: &Path) -> Result<PathBuf, XtaskError> {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return Ok(PathBuf::from(home));
    }
    Ok(workspace::target_dir(STEP, root)?.join("criterion"))
}
