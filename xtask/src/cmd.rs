//! Running external programs, visibly.
//!
//! Every command xtask runs is echoed before it starts, so a CI log shows
//! exactly what to copy-paste to reproduce a failure locally. Programs are
//! started directly with [`std::process::Command`] (never through a shell) so
//! arguments need no quoting and behave the same on every platform.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::error::XtaskError;

/// A `cargo` command for the same toolchain that runs xtask.
///
/// Cargo exports its own path as `CARGO` to the programs it runs; using it
/// keeps `cargo +nightly xtask test` on nightly all the way down instead of
/// silently falling back to whatever `cargo` is first on `PATH`.
pub(crate) fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo")))
}

/// Prints a `==> title` header line, the visual separator between steps.
///
/// Headers go to stderr, next to cargo's own progress lines, so that stdout
/// carries only results (reports, tables) and can be redirected to a file.
pub(crate) fn header(title: &str) {
    eprintln!("==> {title}");
}

/// Prints an indented informational line belonging to the current step.
pub(crate) fn note(message: &str) {
    eprintln!("    {message}");
}

/// Runs `command` to completion with inherited stdio, failing unless it exits
/// successfully.
///
/// Inheriting stdio (rather than capturing) means long-running tools stream
/// their progress live and their own summaries (e.g. libtest's
/// `test result:` lines) appear unaltered. `step` names the pipeline step in
/// the error so the final error line says which step broke.
pub(crate) fn run(step: &str, command: &mut Command) -> Result<(), XtaskError> {
    let shown = describe(command);
    note(&format!("$ {shown}"));
    let status = command.status().map_err(|source| XtaskError::Spawn {
        step: step.to_owned(),
        command: shown.clone(),
        source,
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(XtaskError::CommandFailed {
            step: step.to_owned(),
            command: shown,
            status,
        })
    }
}

/// Runs `command` like [`run`], but holds its output back unless it fails.
///
/// For chatty tools whose success is uninteresting (`initdb` prints twenty
/// lines of progress): the log shows the command line, and the tool's own
/// output only when it is needed to understand a failure. Standard input is
/// closed so a tool that unexpectedly asks a question fails instead of
/// hanging.
pub(crate) fn run_quiet(step: &str, command: &mut Command) -> Result<(), XtaskError> {
    let (output, shown) = output(step, command)?;
    if output.status.success() {
        return Ok(());
    }
    let mut stderr = io::stderr().lock();
    // Best effort: if stderr itself is broken there is nowhere to say so.
    let _ = stderr.write_all(&output.stdout);
    let _ = stderr.write_all(&output.stderr);
    Err(XtaskError::CommandFailed {
        step: step.to_owned(),
        command: shown,
        status: output.status,
    })
}

/// Echoes `command`, runs it with standard input closed and its output
/// captured, and returns that output (whatever the exit status) with the
/// command line as echoed, for the caller's error.
pub(crate) fn output(step: &str, command: &mut Command) -> Result<(Output, String), XtaskError> {
    let shown = describe(command);
    note(&format!("$ {shown}"));
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|source| XtaskError::Spawn {
            step: step.to_owned(),
            command: shown.clone(),
            source,
        })?;
    Ok((output, shown))
}

/// Runs `command` and returns its stdout as text, failing like [`run`] does.
///
/// Used when a step must decide something from a tool's answer (e.g. which
/// targets are installed). stderr stays inherited so the tool's complaints
/// are still visible if it fails.
pub(crate) fn capture(step: &str, command: &mut Command) -> Result<String, XtaskError> {
    let shown = describe(command);
    let output = command
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|source| XtaskError::Spawn {
            step: step.to_owned(),
            command: shown.clone(),
            source,
        })?;
    if !output.status.success() {
        return Err(XtaskError::CommandFailed {
            step: step.to_owned(),
            command: shown,
            status: output.status,
        });
    }
    String::from_utf8(output.stdout).map_err(|_| XtaskError::NotUtf8 {
        step: step.to_owned(),
        command: shown,
    })
}

/// Runs `command` silently and returns the first line of its stdout if it
/// succeeded, or `None` if it failed or could not start.
///
/// This is a yes/no question ("is rustfmt installed?"), so a failure is an
/// answer rather than an error and its noise is not shown.
pub(crate) fn probe(command: &mut Command) -> Option<String> {
    let output = command
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    Some(stdout.lines().next().unwrap_or_default().trim().to_owned())
}

/// Renders a command the way a person would type it: explicitly set
/// environment variables first, then the program's file name, then the
/// arguments, quoting any that contain spaces.
///
/// The program is shown by file name only because `CARGO` is usually a long
/// toolchain path that would drown the interesting part of the line.
pub(crate) fn describe(command: &Command) -> String {
    let mut words = Vec::new();
    for (key, value) in command.get_envs() {
        if let Some(value) = value {
            words.push(format!("{}={}", key.to_string_lossy(), quote(value)));
        }
    }
    let program = Path::new(command.get_program())
        .file_name()
        .unwrap_or_else(|| command.get_program());
    words.push(quote(program));
    words.extend(command.get_args().map(quote));
    words.join(" ")
}

/// Quotes one word for display if it would otherwise be ambiguous.
fn quote(word: &OsStr) -> String {
    let text = word.to_string_lossy();
    if text.is_empty() || text.contains(char::is_whitespace) || text.contains('"') {
        format!("{:?}", text.as_ref())
    } else {
        text.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The echoed line must be copy-pasteable: env first, quoted when needed.
    #[test]
    fn describe_shows_env_program_and_quoted_args() {
        let mut command = Command::new("/opt/toolchain/bin/cargo");
        command
            .args(["doc", "--workspace"])
            .env("RUSTDOCFLAGS", "-D warnings");
        assert_eq!(
            describe(&command),
            r#"RUSTDOCFLAGS="-D warnings" cargo doc --workspace"#
        );
    }

    /// A failing program must produce an error that names the step. Uses a
    /// cargo subcommand that cannot exist so the test runs on any platform.
    #[test]
    fn run_reports_step_and_status_on_failure() {
        let mut command = cargo();
        // Silenced: cargo's "no such command" would look like a real error
        // in the project's test log.
        command
            .arg("xtask-no-such-subcommand")
            .stderr(Stdio::null());
        let err = run("demo", &mut command).expect_err("unknown subcommand must fail");
        let message = err.to_string();
        assert!(message.contains("step `demo` failed"), "{message}");
        assert!(message.contains("xtask-no-such-subcommand"), "{message}");
    }

    /// A quiet run succeeds silently and fails like [`run`] does. Uses
    /// `true`/`false` because a failing cargo would print to the real stderr,
    /// which libtest does not capture.
    #[cfg(unix)]
    #[test]
    fn run_quiet_reports_failure_like_run() {
        run_quiet("demo", &mut Command::new("true")).expect("`true` must succeed");
        let err = run_quiet("demo", &mut Command::new("false")).expect_err("`false` must fail");
        assert!(matches!(err, XtaskError::CommandFailed { .. }), "{err}");
        assert!(err.to_string().contains("step `demo` failed"), "{err}");
    }

    /// A missing program is a spawn error, not a failed run.
    #[test]
    fn run_reports_missing_program() {
        let err = run("demo", &mut Command::new("xtask-no-such-program-anywhere"))
            .expect_err("a missing program must fail");
        assert!(matches!(err, XtaskError::Spawn { .. }), "{err}");
    }

    /// `probe` answers a question; failure is `None`, success the first line.
    #[test]
    fn probe_returns_first_line_or_none() {
        let mut failing = cargo();
        failing.arg("xtask-no-such-subcommand");
        assert_eq!(probe(&mut failing), None);
        let mut version = cargo();
        version.arg("--version");
        let line = probe(&mut version).expect("`cargo --version` must succeed");
        assert!(line.starts_with("cargo "), "{line}");
    }
}
