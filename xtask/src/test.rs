//! `cargo xtask test`: the project's single test pipeline.
//!
//! The pipeline is the [`STEPS`] table, run in order and stopped at the first
//! failure (later steps would mostly repeat the same error, and a short log
//! is easier to read). To add a step, add one entry to [`STEPS`]:
//!
//! * a plain cargo invocation is pure data:
//!   `Step { name: "…", summary: "…", action: Action::Cargo { args: &[…], env: &[] } }`;
//! * anything else (installing a tool, starting a database, inspecting a
//!   build product) is a function `fn(&Context<'_>) -> Result<(), XtaskError>`
//!   wrapped in [`Action::Custom`], ideally in its own module.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::cmd;
use crate::error::XtaskError;
use crate::{rust_version, toolchain, wasm_imports};

/// One named stage of the pipeline.
pub(crate) struct Step {
    /// Short identifier shown in headers and error messages.
    pub(crate) name: &'static str,
    /// One line saying what the step guarantees when it passes.
    pub(crate) summary: &'static str,
    /// What the step does.
    pub(crate) action: Action,
}

/// How a [`Step`] does its work.
pub(crate) enum Action {
    /// Run `cargo <args>` from the workspace root with extra environment
    /// variables; the step passes when cargo exits successfully.
    Cargo {
        /// Arguments after `cargo`.
        args: &'static [&'static str],
        /// Environment variables to set, as `(name, value)`.
        env: &'static [(&'static str, &'static str)],
    },
    /// Run arbitrary Rust code, for steps that need decisions or checks.
    Custom(fn(&Context<'_>) -> Result<(), XtaskError>),
}

/// What a running step knows about the invocation.
#[derive(Clone, Copy)]
pub(crate) struct Context<'a> {
    /// The workspace root; every command runs from here.
    pub(crate) root: &'a Path,
    /// Arguments the user gave after `--`, forwarded to the test harness.
    pub(crate) test_args: &'a [String],
    /// Name of the step currently running, for error messages.
    pub(crate) step: &'static str,
}

impl Context<'_> {
    /// A `cargo` command that runs from the workspace root.
    pub(crate) fn cargo(&self) -> Command {
        let mut command = cmd::cargo();
        command.current_dir(self.root);
        command
    }

    /// Runs `command` on behalf of the current step (see [`cmd::run`]).
    pub(crate) fn run(&self, command: &mut Command) -> Result<(), XtaskError> {
        cmd::run(self.step, command)
    }
}

/// The pipeline, in execution order. Cheap, common failures (formatting,
/// lints) come before the slow steps so they are reported quickly.
pub(crate) const STEPS: &[Step] = &[
    Step {
        name: "toolchain",
        summary: "rustfmt, clippy and the wasm32 target are installed",
        action: Action::Custom(toolchain::ensure),
    },
    Step {
        name: "rust-version",
        summary: "no dependency needs a newer Rust than the workspace declares",
        action: Action::Custom(rust_version::step),
    },
    Step {
        name: "fmt",
        summary: "all code is rustfmt-formatted",
        action: Action::Cargo {
            args: &["fmt", "--all", "--", "--check"],
            env: &[],
        },
    },
    Step {
        name: "clippy",
        summary: "no clippy warnings in any target",
        action: Action::Cargo {
            args: &[
                "clippy",
                "--workspace",
                "--all-targets",
                "--locked",
                "--",
                "-D",
                "warnings",
            ],
            env: &[],
        },
    },
    Step {
        name: "test",
        summary: "all workspace tests pass",
        action: Action::Custom(cargo_test),
    },
    Step {
        name: "wasm-imports",
        summary: "the pure core compiles to wasm without platform imports",
        action: Action::Custom(wasm_imports::step),
    },
    Step {
        name: "doc",
        summary: "documentation builds without warnings",
        action: Action::Cargo {
            args: &["doc", "--workspace", "--no-deps", "--locked"],
            env: &[("RUSTDOCFLAGS", "-D warnings")],
        },
    },
];

/// Runs every step of [`STEPS`] in order, stopping at the first failure, and
/// prints a one-line summary when all pass.
///
/// `test_args` are forwarded to `cargo test` after its own `--`.
pub(crate) fn run(test_args: &[String]) -> Result<(), XtaskError> {
    let root = crate::workspace::root();
    let started = Instant::now();
    let total = STEPS.len();
    for (index, step) in STEPS.iter().enumerate() {
        cmd::header(&format!(
            "[{}/{total}] {}: {}",
            index + 1,
            step.name,
            step.summary
        ));
        let context = Context {
            root: &root,
            test_args,
            step: step.name,
        };
        let step_started = Instant::now();
        if let Err(err) = run_step(step, &context) {
            eprintln!(
                "xtask test: step `{}` failed ({}/{total}, after {:.1}s)",
                step.name,
                index + 1,
                started.elapsed().as_secs_f64()
            );
            return Err(err);
        }
        cmd::note(&format!(
            "ok: {} ({:.1}s)",
            step.name,
            step_started.elapsed().as_secs_f64()
        ));
    }
    println!(
        "xtask test: all steps passed ({total} steps, {:.1}s)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Carries out one step's [`Action`].
fn run_step(step: &Step, context: &Context<'_>) -> Result<(), XtaskError> {
    match step.action {
        Action::Cargo { args, env } => {
            let mut command = context.cargo();
            command.args(args).envs(env.iter().copied());
            context.run(&mut command)
        }
        Action::Custom(function) => function(context),
    }
}

/// The `test` step: `cargo test --workspace --locked`, with the user's extra
/// arguments after `--`. Output is streamed unchanged so libtest's own
/// `test result:` lines stay visible.
fn cargo_test(context: &Context<'_>) -> Result<(), XtaskError> {
    let mut command = context.cargo();
    command.args(["test", "--workspace", "--locked"]);
    if !context.test_args.is_empty() {
        command.arg("--").args(context.test_args);
    }
    context.run(&mut command)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Step names identify steps in logs, so they must be unique.
    #[test]
    fn step_names_are_unique() {
        let mut names: Vec<_> = STEPS.iter().map(|step| step.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), STEPS.len());
    }

    /// The toolchain step must come first: later steps rely on what it
    /// installs.
    #[test]
    fn toolchain_step_runs_first() {
        assert_eq!(STEPS.first().map(|step| step.name), Some("toolchain"));
    }
}
