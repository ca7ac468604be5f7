//! Running external programs visibly, and where the workspace is.
//!
//! Every command xtask runs is echoed before it starts, so a CI log shows
//! exactly what to copy-paste to reproduce a failure. Programs are started
//! directly (never through a shell), so arguments need no quoting.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context as _, Result, bail};

/// The workspace root, the parent of this crate's directory: fixed at
/// compile time so `cargo xtask` behaves the same from any subdirectory.
pub(crate) fn root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// A `cargo` command for the toolchain that runs xtask (cargo exports its
/// own path as `CARGO`, so `cargo +nightly xtask` stays on nightly), run
/// from the workspace root.
pub(crate) fn cargo() -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.current_dir(root());
    command
}

/// Prints a `==> title` header. Headers and notes go to stderr, next to
/// cargo's own progress lines, so stdout carries only results (tables).
pub(crate) fn header(title: &str) {
    eprintln!("==> {title}");
}

/// Prints an indented line belonging to the current step.
pub(crate) fn note(message: &str) {
    eprintln!("    {message}");
}

/// Whether `CI` is set (non-empty). There, what the pipeline cannot set up
/// (a PostgreSQL server, Chromium) fails the run instead of being skipped.
pub(crate) fn is_ci() -> bool {
    std::env::var_os("CI").is_some_and(|ci| !ci.is_empty())
}

/// Echoes `command`, runs it with inherited stdio (so tools stream their
/// progress and summaries unaltered) and fails unless it exits
/// successfully.
pub(crate) fn run(command: &mut Command) -> Result<()> {
    let shown = describe(command);
    note(&format!("$ {shown}"));
    let status = command
        .status()
        .with_context(|| format!("could not start `{shown}`"))?;
    if !status.success() {
        bail!("`{shown}` exited with {status}");
    }
    Ok(())
}

/// Runs `command` with stdin closed and returns its stdout as text, failing
/// like [`run`]; its stderr stays visible.
pub(crate) fn capture(command: &mut Command) -> Result<String> {
    let shown = describe(command);
    let output = command
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("could not start `{shown}`"))?;
    if !output.status.success() {
        bail!("`{shown}` exited with {}", output.status);
    }
    String::from_utf8(output.stdout).with_context(|| format!("`{shown}` printed non-UTF-8"))
}

/// The first line of `command`'s stdout, or `None` if it fails or cannot
/// start. For yes/no questions ("is it installed?"): failing is an answer,
/// so its noise is not shown.
pub(crate) fn probe(command: &mut Command) -> Option<String> {
    let output = command
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    output
        .status
        .success()
        .then(|| stdout.lines().next().unwrap_or_default().trim().to_owned())
}

/// A command as a person would type it: the variables it sets, the
/// program's file name (`CARGO` is a long toolchain path), the arguments,
/// quoted when they hold spaces.
pub(crate) fn describe(command: &Command) -> String {
    let quote = |word: &OsStr| {
        let text = word.to_string_lossy();
        if text.is_empty() || text.contains(char::is_whitespace) || text.contains('"') {
            format!("{text:?}")
        } else {
            text.into_owned()
        }
    };
    let envs = command
        .get_envs()
        .filter_map(|(key, value)| Some((key, value?)));
    let program = Path::new(command.get_program())
        .file_name()
        .unwrap_or(command.get_program());
    envs.map(|(key, value)| format!("{}={}", key.to_string_lossy(), quote(value)))
        .chain(std::iter::once(quote(program)))
        .chain(command.get_args().map(quote))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The directory cargo builds into, as `cargo metadata` reports it (it
/// honours `CARGO_TARGET_DIR` and `build.target-dir`).
pub(crate) fn target_dir() -> Result<PathBuf> {
    let json = capture(cargo().args(["metadata", "--format-version", "1", "--no-deps"]))?;
    let value: serde_json::Value = serde_json::from_str(&json).context("cargo metadata")?;
    let dir = value["target_directory"]
        .as_str()
        .context("cargo metadata: no target_directory")?;
    Ok(PathBuf::from(dir))
}

/// Installs the Debian package `package` (`apt-get update` first, as a
/// fresh machine's package lists may be empty) when xtask runs as root with
/// apt-get; otherwise fails saying what to install.
pub(crate) fn apt_install(package: &str) -> Result<()> {
    let root = probe(Command::new("id").arg("-u")).as_deref() == Some("0");
    if !root || probe(Command::new("apt-get").arg("--version")).is_none() {
        bail!("install the Debian package `{package}` (xtask does it itself as root with apt-get)");
    }
    for args in [
        &["update"][..],
        &["install", "-y", "--no-install-recommends", package],
    ] {
        let mut apt_get = Command::new("apt-get");
        apt_get
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null());
        run(&mut apt_get)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The echoed line is copy-pasteable: env first, quoted when needed.
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

    /// A failure names the command and how it ended; a missing program is
    /// a failure to start.
    #[cfg(unix)]
    #[test]
    fn failures_name_the_command() {
        run(&mut Command::new("true")).expect("`true` succeeds");
        let err = run(Command::new("false").arg("x")).expect_err("`false` fails");
        assert!(err.to_string().contains("`false x` exited with"), "{err}");
        let err = run(&mut Command::new("xtask-no-such-program")).expect_err("missing");
        assert!(err.to_string().contains("could not start"), "{err}");
        assert_eq!(probe(&mut Command::new("false")), None);
        assert_eq!(
            probe(Command::new("echo").arg("a\nb")).as_deref(),
            Some("a")
        );
    }

    /// The root is the directory holding `xtask/`.
    #[test]
    fn root_contains_this_crate() {
        assert!(root().join("xtask").join("Cargo.toml").is_file());
    }
}
