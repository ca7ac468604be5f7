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
//!
//! # Handing things to later steps
//!
//! A step can leave three things for the rest of the run, all held in the
//! run's [`RunState`] and reached through its [`Context`]:
//!
//! * environment variables, with [`Context::export_env`]: every command a
//!   later step runs through [`Context::cargo`] or [`Context::run`] gets them
//!   (this is how `cargo test` learns `LOOMFENCE_PG_URL`);
//! * a resource that must outlive the step, with [`Context::keep_until_end`]:
//!   the value is dropped when the pipeline ends, passed or failed, so its
//!   `Drop` is the cleanup (this is how the PostgreSQL server is stopped);
//! * a warning, with [`Context::warn_at_end`], printed after the last step
//!   so it is not lost in the middle of a long log.
//!
//! Nothing is put into xtask's own process environment: what a step exports
//! is visible in each echoed command line, and so can be copy-pasted.

use std::any::Any;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::cmd;
use crate::error::XtaskError;
use crate::{npm, postgres, rust_version, toolchain, wasm_imports};

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
    /// What earlier steps left for this one and later ones.
    pub(crate) state: &'a RunState,
}

impl Context<'_> {
    /// A `cargo` command that runs from the workspace root, with the
    /// environment earlier steps exported.
    pub(crate) fn cargo(&self) -> Command {
        let mut command = cmd::cargo();
        command.current_dir(self.root);
        self.state.apply_env(&mut command);
        command
    }

    /// Runs `command` on behalf of the current step (see [`cmd::run`]),
    /// adding the environment earlier steps exported.
    pub(crate) fn run(&self, command: &mut Command) -> Result<(), XtaskError> {
        self.state.apply_env(command);
        cmd::run(self.step, command)
    }

    /// Sets `key=value` for every command run from now on through
    /// [`Context::cargo`] or [`Context::run`], in this step and all later
    /// ones. Setting a key again replaces its value.
    pub(crate) fn export_env(&self, key: impl Into<OsString>, value: impl Into<OsString>) {
        self.state.env.borrow_mut().insert(key.into(), value.into());
    }

    /// Keeps `guard` alive until the pipeline ends, whether it passes or
    /// fails; dropping it then is its cleanup. Guards are dropped in the
    /// reverse order of being kept.
    pub(crate) fn keep_until_end(&self, guard: impl Any) {
        self.state.guards.borrow_mut().push(Box::new(guard));
    }

    /// Records `message` to be printed as a warning after the last step,
    /// whether the run passes or fails. The step prints its own, more
    /// detailed warning when it happens.
    pub(crate) fn warn_at_end(&self, message: impl Into<String>) {
        self.state.warnings.borrow_mut().push(message.into());
    }
}

/// What steps leave for the rest of one pipeline run (see the module docs).
///
/// Interior mutability keeps [`Context`] a plain `Copy` value and the step
/// signature `fn(&Context<'_>)` unchanged: steps run one at a time, so the
/// `RefCell`s are never borrowed twice.
#[derive(Default)]
pub(crate) struct RunState {
    /// Environment variables for every later command.
    env: RefCell<BTreeMap<OsString, OsString>>,
    /// Resources released when the run ends, most recent first.
    guards: RefCell<Vec<Box<dyn Any>>>,
    /// Warnings to repeat after the last step.
    warnings: RefCell<Vec<String>>,
}

impl RunState {
    /// Adds the exported environment to `command`.
    fn apply_env(&self, command: &mut Command) {
        command.envs(self.env.borrow().iter());
    }
}

impl Drop for RunState {
    /// Releases the guards, newest first, so a resource started later (and
    /// possibly depending on an earlier one) goes first.
    fn drop(&mut self) {
        let guards = self.guards.get_mut();
        if !guards.is_empty() {
            cmd::header("cleanup: releasing what the steps started");
        }
        while let Some(guard) = guards.pop() {
            drop(guard);
        }
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
        name: "postgres",
        summary: "LOOMFENCE_PG_URL names a PostgreSQL server for the tests",
        action: Action::Custom(postgres::step),
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
    Step {
        name: "npm-build",
        summary: "the npm package builds, and its .wasm is under its 150 KB budget",
        action: Action::Custom(npm::build_step),
    },
    Step {
        name: "npm-test",
        summary: "the npm package passes its wasm tests, runs installed from its tarball, and passes the JS suites",
        action: Action::Custom(npm::test_step),
    },
];

/// Runs every step of [`STEPS`] in order, stopping at the first failure, and
/// prints a one-line summary when all pass.
///
/// Whatever the steps started is released before the summary, whether they
/// passed or not; warnings they recorded are repeated after it.
///
/// `test_args` are forwarded to `cargo test` after its own `--`.
pub(crate) fn run(test_args: &[String]) -> Result<(), XtaskError> {
    let started = Instant::now();
    let state = RunState::default();
    let result = run_steps(test_args, &state, started);
    let warnings = state.warnings.take();
    drop(state);
    if result.is_ok() {
        println!(
            "xtask test: all steps passed ({} steps, {:.1}s)",
            STEPS.len(),
            started.elapsed().as_secs_f64()
        );
    }
    for warning in &warnings {
        eprintln!("xtask test: warning: {warning}");
    }
    result
}

/// Runs the steps of [`STEPS`] until one fails, sharing `state` between
/// them.
fn run_steps(test_args: &[String], state: &RunState, started: Instant) -> Result<(), XtaskError> {
    let root = crate::workspace::root();
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
            state,
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

    /// The PostgreSQL server must be up before the tests that use it.
    #[test]
    fn postgres_step_runs_before_tests() {
        let position = |name| STEPS.iter().position(|step| step.name == name);
        assert!(position("postgres") < position("test"));
        assert!(position("postgres").is_some());
    }

    /// The npm tests use what the build step made and installed.
    #[test]
    fn npm_build_runs_before_npm_test() {
        let position = |name| STEPS.iter().position(|step| step.name == name);
        assert!(position("npm-build").is_some());
        assert!(position("npm-build") < position("npm-test"));
    }

    /// A step's exported environment reaches later commands; its guards
    /// live until the run state is dropped, newest first.
    #[test]
    fn state_carries_env_and_guards_to_the_end() {
        /// Records its label in a shared log when dropped.
        struct Guard(&'static str, std::rc::Rc<RefCell<Vec<&'static str>>>);
        impl Drop for Guard {
            /// Logs the drop.
            fn drop(&mut self) {
                self.1.borrow_mut().push(self.0);
            }
        }

        let dropped = std::rc::Rc::new(RefCell::new(Vec::new()));
        let root = Path::new(".");
        let state = RunState::default();
        let context = Context {
            root,
            test_args: &[],
            step: "demo",
            state: &state,
        };
        context.export_env("LOOMFENCE_DEMO", "1");
        context.keep_until_end(Guard("first", dropped.clone()));
        context.keep_until_end(Guard("second", dropped.clone()));

        let later = Context {
            step: "later",
            ..context
        };
        let command = later.cargo();
        let envs: Vec<_> = command.get_envs().collect();
        assert_eq!(
            envs,
            [(
                std::ffi::OsStr::new("LOOMFENCE_DEMO"),
                Some(std::ffi::OsStr::new("1"))
            )]
        );
        assert!(dropped.borrow().is_empty(), "guards must outlive the steps");
        drop(state);
        assert_eq!(*dropped.borrow(), ["second", "first"]);
    }
}
