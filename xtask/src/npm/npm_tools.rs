//! The build tools pinned in `wasm/npm-tools`: binaryen's `wasm-opt`, and
//! TypeScript's `tsc` for the type check of the package's `index.d.ts`.
//!
//! Not Debian's `binaryen` (version 108): its output crashes at load time.
//! Both are pinned exactly in `wasm/npm-tools/package-lock.json` and
//! installed with `npm ci` whenever `node_modules` is missing or was
//! installed from another lockfile.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cmd;
use crate::error::XtaskError;
use crate::test::Context;

/// The private npm package that holds the build tools, relative to the
/// workspace root.
const TOOLS_DIR: &str = "wasm/npm-tools";

/// Its lockfile, which pins `binaryen` exactly.
const LOCKFILE: &str = "package-lock.json";

/// A copy of the lockfile `npm ci` last installed from, written after it
/// succeeds. Kept inside `node_modules` so that `npm ci`, which deletes
/// that folder first, deletes it too: it exists only next to a complete
/// install. Compared by content, because a checkout's file times say
/// nothing.
const INSTALLED_LOCKFILE: &str = "node_modules/.xtask-installed-package-lock.json";

/// The `wasm-opt` launcher npm links for the package.
const WASM_OPT: &str = "node_modules/.bin/wasm-opt";

/// The `tsc` launcher npm links for the package.
const TSC: &str = "node_modules/.bin/tsc";

/// Where `tsc` is once [`ensure`] has run (the `npm-build` step).
pub(crate) fn tsc(root: &Path) -> PathBuf {
    root.join(TOOLS_DIR).join(TSC)
}

/// The WebAssembly features rustc enables by default for
/// `wasm32-unknown-unknown` (`rustc --print cfg --target
/// wasm32-unknown-unknown`). wasm-opt must accept all of them to validate
/// the module, and may then use them in its output; every engine the
/// package supports (Node 20, current browsers) has them.
const FEATURES: &[&str] = &[
    "--enable-bulk-memory",
    "--enable-multivalue",
    "--enable-mutable-globals",
    "--enable-nontrapping-float-to-int",
    "--enable-reference-types",
    "--enable-sign-ext",
];

/// How many lines of wasm-opt's output a failure shows. On a validation
/// error it prints the whole module, thousands of lines; the first few say
/// what is wrong.
const SHOWN_LINES: usize = 20;

/// Installs the tools when `node_modules` is missing or stale; returns the
/// path of `wasm-opt` after checking that it runs.
pub(crate) fn ensure(context: &Context<'_>) -> Result<PathBuf, XtaskError> {
    let dir = context.root.join(TOOLS_DIR);
    let lockfile = dir.join(LOCKFILE);
    let lock = fs::read(&lockfile).map_err(XtaskError::io(&lockfile))?;
    let wasm_opt = dir.join(WASM_OPT);
    let installed = fs::read(dir.join(INSTALLED_LOCKFILE)).ok();
    if installed.as_deref() == Some(lock.as_slice())
        && wasm_opt.is_file()
        && tsc(context.root).is_file()
    {
        cmd::note(&format!("{TOOLS_DIR}: already installed"));
    } else {
        cmd::note(&format!(
            "{TOOLS_DIR}: installing (node_modules is missing or from another {LOCKFILE})"
        ));
        let mut ci = super::npm();
        ci.current_dir(&dir).args(["ci", "--no-audit", "--no-fund"]);
        context.run(&mut ci)?;
        let stamp = dir.join(INSTALLED_LOCKFILE);
        fs::write(&stamp, &lock).map_err(XtaskError::io(stamp))?;
    }
    let version = cmd::probe(Command::new(&wasm_opt).arg("--version")).ok_or_else(|| {
        XtaskError::ToolchainStillMissing {
            what: format!("{} (from `npm ci` in {TOOLS_DIR})", wasm_opt.display()),
        }
    })?;
    cmd::note(&format!("wasm-opt: {TOOLS_DIR}/{WASM_OPT} ({version})"));
    Ok(wasm_opt)
}

/// Runs `wasm-opt -Oz` on `file` (relative to `root`, where it runs),
/// replacing it only when wasm-opt succeeds.
pub(crate) fn optimise(
    step: &str,
    root: &Path,
    wasm_opt: &Path,
    file: &Path,
) -> Result<(), XtaskError> {
    let output = file.with_extension("opt.wasm");
    let mut command = Command::new(wasm_opt);
    command
        .current_dir(root)
        .arg("-Oz")
        .args(FEATURES)
        .arg(file)
        .arg("-o")
        .arg(&output);
    run_truncated(step, &mut command)?;
    let (from, to) = (root.join(&output), root.join(file));
    fs::rename(&from, &to).map_err(XtaskError::io(to))
}

/// Runs `command` like [`cmd::run`], but captures its output and shows at
/// most [`SHOWN_LINES`] lines of it, so a tool that dumps a whole module on
/// an error cannot flood the log.
fn run_truncated(step: &str, command: &mut Command) -> Result<(), XtaskError> {
    let (output, shown) = cmd::output(step, command)?;
    let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stdout));
    // Best effort: if stderr itself is broken there is nowhere to say so.
    let _ = io::stderr()
        .lock()
        .write_all(truncate(&text, SHOWN_LINES).as_bytes());
    if output.status.success() {
        Ok(())
    } else {
        Err(XtaskError::CommandFailed {
            step: step.to_owned(),
            command: shown,
            status: output.status,
        })
    }
}

/// The first `limit` lines of `text`, and a line saying how many were left
/// out, if any.
fn truncate(text: &str, limit: usize) -> String {
    let total = text.lines().count();
    let mut kept: String = text
        .lines()
        .take(limit)
        .map(|line| format!("{line}\n"))
        .collect();
    if total > limit {
        kept.push_str(&format!("[… {} more lines not shown]\n", total - limit));
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Short output passes unchanged; long output is cut and says so.
    #[test]
    fn truncate_keeps_the_first_lines() {
        assert_eq!(truncate("", 2), "");
        assert_eq!(truncate("a\nb\n", 2), "a\nb\n");
        assert_eq!(
            truncate("a\nb\nc\nd\n", 2),
            "a\nb\n[… 2 more lines not shown]\n"
        );
    }

    /// The tools folder pins binaryen exactly, so `npm ci` cannot drift.
    #[test]
    fn tools_pin_binaryen_exactly() {
        let dir = crate::workspace::root().join(TOOLS_DIR);
        let manifest = fs::read_to_string(dir.join("package.json")).expect("package.json");
        let manifest: serde_json::Value = serde_json::from_str(&manifest).expect("valid JSON");
        let wanted = manifest["devDependencies"]["binaryen"]
            .as_str()
            .expect("binaryen is a dev dependency");
        assert!(
            wanted.chars().all(|c| c.is_ascii_digit() || c == '.'),
            "binaryen must be pinned to an exact version, found {wanted}"
        );
        let lock = fs::read_to_string(dir.join(LOCKFILE)).expect("package-lock.json");
        let lock: serde_json::Value = serde_json::from_str(&lock).expect("valid JSON");
        assert_eq!(
            lock["packages"]["node_modules/binaryen"]["version"].as_str(),
            Some(wanted)
        );
    }
}
