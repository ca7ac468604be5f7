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
