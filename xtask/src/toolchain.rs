//! Making sure the Rust toolchain has every piece the pipeline uses.
//!
//! CI starts from a fresh machine, so the pipeline installs what it needs
//! instead of documenting it: rustfmt and clippy for the lint steps, and the
//! `wasm32-unknown-unknown` target for the wasm import check. Each check is
//! cheap and each install is skipped when already done, so running this on
//! every `cargo xtask test` costs well under a second.

use std::process::Command;

use crate::cmd;
use crate::error::XtaskError;
use crate::test::Context;

/// The target the wasm import check compiles the pure core for.
pub(crate) const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// Components the pipeline calls, each with the cargo subcommand that proves
/// it is installed.
const COMPONENTS: &[(&str, &str)] = &[("rustfmt", "fmt"), ("clippy", "clippy")];

/// Pipeline step: installs missing rustfmt/clippy components and the wasm
/// target, reporting for each whether it was installed or already present.
pub(crate) fn ensure(context: &Context<'_>) -> Result<(), XtaskError> {
    ensure_components(context.step)?;
    ensure_wasm_target(context.step)
}

/// Installs whichever of [`COMPONENTS`] does not answer `--version`.
fn ensure_components(step: &str) -> Result<(), XtaskError> {
    let mut missing = Vec::new();
    for &(component, subcommand) in COMPONENTS {
        match component_version(subcommand) {
            Some(version) => cmd::note(&format!("{component}: already present ({version})")),
            None => missing.push(component),
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    cmd::run(step, rustup().args(["component", "add"]).args(&missing))?;
    for &(component, subcommand) in COMPONENTS {
        if !missing.contains(&component) {
            continue;
        }
        // Re-check: with a toolchain rustup does not manage, `component add`
        // can succeed for a different toolchain and leave this one without.
        let version =
            component_version(subcommand).ok_or_else(|| XtaskError::ToolchainStillMissing {
                what: format!("component `{component}`"),
            })?;
        cmd::note(&format!("{component}: installed ({version})"));
    }
    Ok(())
}

/// Adds [`WASM_TARGET`] unless `rustup` already lists it as installed.
fn ensure_wasm_target(step: &str) -> Result<(), XtaskError> {
    if is_target_installed(&installed_targets(step)?, WASM_TARGET) {
        cmd::note(&format!("target {WASM_TARGET}: already present"));
        return Ok(());
    }
    cmd::run(step, rustup().args(["target", "add", WASM_TARGET]))?;
    if !is_target_installed(&installed_targets(step)?, WASM_TARGET) {
        return Err(XtaskError::ToolchainStillMissing {
            what: format!("target `{WASM_TARGET}`"),
        });
    }
    cmd::note(&format!("target {WASM_TARGET}: installed"));
    Ok(())
}

/// The version line of `cargo <subcommand> --version`, or `None` when the
/// component behind it is not installed.
fn component_version(subcommand: &str) -> Option<String> {
    cmd::probe(cmd::cargo().args([subcommand, "--version"]))
}

/// The output of `rustup target list --installed`.
fn installed_targets(step: &str) -> Result<String, XtaskError> {
    cmd::capture(step, rustup().args(["target", "list", "--installed"]))
}

/// Whether `target` is one of the lines of `rustup target list --installed`.
///
/// Compares whole lines so that e.g. `wasm32-unknown-unknown` is not
/// mistaken for installed when only a longer name containing it is.
fn is_target_installed(listing: &str, target: &str) -> bool {
    listing.lines().any(|line| line.trim() == target)
}

/// A `rustup` command. It inherits `RUSTUP_TOOLCHAIN` from the cargo proxy
/// that started xtask, so it changes the toolchain actually in use.
fn rustup() -> Command {
    Command::new("rustup")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only an exact line counts as installed.
    #[test]
    fn target_detection_matches_whole_lines() {
        let listing = "x86_64-unknown-linux-gnu\nwasm32-unknown-unknown\n";
        assert!(is_target_installed(listing, WASM_TARGET));
        assert!(!is_target_installed(
            "x86_64-unknown-linux-gnu\n",
            WASM_TARGET
        ));
        assert!(!is_target_installed(
            "wasm32-unknown-unknown-extra\n",
            WASM_TARGET
        ));
    }
}
