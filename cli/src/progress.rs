//! The progress bar: on stderr, and only for a person watching.
//!
//! stdout carries the result (the JSON object must be alone there), and a
//! bar drawn into a pipe or a CI log is noise, so the bar exists only when
//! stderr is a terminal and `--json` is off; otherwise it is hidden and every
//! call on it is a no-op, which keeps the resumers' code free of checks.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar counting resume attempts out of `total`, or a hidden one.
pub(crate) fn attempts_bar(total: u64, json: bool) -> ProgressBar {
    if json || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} attempts, eta {eta}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    ProgressBar::new(total).with_style(style)
}

/// A bar counting the fleet's history trees written, out of `total`;
/// hidden unless stderr is a terminal. Like the bench's bar it shows with
/// `--json` too (it is on stderr, and a large history takes minutes).
pub(crate) fn history_bar(total: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} history trees, eta {eta}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    let bar = ProgressBar::new(total).with_style(style);
    bar.enable_steady_tick(std::time::Duration::from_millis(250));
    bar
}

/// A bar counting the bench's phases, `what` they are (`workload runs`;
/// its length is set once the phases are known), naming the one under way;
/// hidden unless stderr is a terminal. Unlike the race's bar it shows with
/// `--json` too: it is on stderr, and a bench takes long enough to want
/// one.
pub(crate) fn phases_bar(what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template(&format!(
        "{{spinner}} [{{elapsed_precise}}] {{wide_bar}} {{pos}}/{{len}} {what}: {{msg}}"
    ))
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    let bar = ProgressBar::new(0).with_style(style);
    bar.enable_steady_tick(std::time::Duration::from_millis(250));
    bar
}

/// A spinner for a retention sweep, whose length is unknown until the
/// listing ends: it shows the counts so far (see [`sweep_counts`]), set
/// after every listing page; hidden unless stderr is a terminal. Like the
/// bench's bar it shows with `--json` too (it is on stderr).
pub(crate) fn sweep_spinner() -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
    let bar = ProgressBar::new_spinner().with_style(style);
    bar.enable_steady_tick(std::time::Duration::from_millis(100));
    bar.set_message("listing the first page…");
    bar
}

/// The spinner's message for a sweep's report so far.
pub(crate) fn sweep_counts(report: &loomfence_core::retention::SweepReport) -> String {
    format!(
        "examined {} · eligible {} · {} {} · pinned {}",
        report.examined,
        report.eligible,
        if report.dry_run {
            "would delete"
        } else {
            "deleted"
        },
        report.deleted,
        report.pinned.len()
    )
}
