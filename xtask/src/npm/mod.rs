//! The npm package `loomfence`: building it from the wasm crate, and proving
//! it works the way a user installs it.
//!
//! The package's entry points (`wasm/npm/index.js`, `index.cjs`,
//! `browser.js`, `index.d.ts`) are hand-written; what is built is
//! `wasm/npm/dist/`: wasm-bindgen's `--target web` glue and the `.wasm`,
//! shrunk by binaryen's `wasm-opt -Oz`. Two pipeline steps and one command
//! use this module:
//!
//! * `npm-build` and `cargo xtask npm`: install the tools when missing
//!   ([`wasm_bindgen_cli`], [`npm_tools`]), [`build`] the package and print
//!   the `.wasm` [`size`] against its budget;
//! * `npm-test`: the crate's `#[wasm_bindgen_test]`s under Node, the
//!   [`pack`] smoke test, which installs the `npm pack` tarball in an empty
//!   folder and runs the examples (and the README's) against it, the
//!   [`browser`] check of `browser.js` in headless Chromium, and the JS
//!   suites in `tests/conformance-js` ([`js_suites`]).

mod browser;
mod build;
mod js_suites;
mod npm_tools;
mod pack;
mod readme_example;
mod size;
mod wasm_bindgen_cli;

use std::process::{Command, Stdio};

use crate::error::XtaskError;
use crate::test::{Context, RunState};
use crate::toolchain::WASM_TARGET;

/// The crate compiled to the package's WebAssembly.
const WASM_PACKAGE: &str = "loomfence-wasm";

/// The npm package's folder, relative to the workspace root.
const PACKAGE_DIR: &str = "wasm/npm";

/// Pipeline step `npm-build`: builds the package and reports its size;
/// over [`size::BUDGET`] fails.
pub(crate) fn build_step(context: &Context<'_>) -> Result<(), XtaskError> {
    build_and_measure(context)
}

/// Pipeline step `npm-test`: the wasm tests under Node, the package as
/// installed from its tarball, then the JS suites (the detailed checks
/// after the quick proof that the package installs and runs at all). Needs
/// `npm-build` first: it tests the `dist/` that step built, with the runner
/// it installed.
pub(crate) fn test_step(context: &Context<'_>) -> Result<(), XtaskError> {
    wasm_tests(context)?;
    pack::smoke(context)?;
    browser::check(context)?;
    js_suites::run(context)
}

/// `cargo xtask npm`: installs what is missing (the wasm target too, as the
/// pipeline's toolchain step would), builds the package and prints its
/// size. Over budget fails, as in the pipeline.
pub(crate) fn run() -> Result<(), XtaskError> {
    let root = crate::workspace::root();
    let state = RunState::default();
    let context = Context {
        root: &root,
        test_args: &[],
        step: "npm",
        state: &state,
    };
    crate::toolchain::ensure(&context)?;
    build_and_measure(&context)
}

/// Installs the build tools when missing, builds `dist/`, prints the size
/// table on stdout and fails when it is over [`size::BUDGET`].
fn build_and_measure(context: &Context<'_>) -> Result<(), XtaskError> {
    wasm_bindgen_cli::ensure(context)?;
    let wasm_opt = npm_tools::ensure(context)?;
    let report = build::package(context, &wasm_opt)?;
    print!("{}", size::render(&report, &size::BUDGET));
    size::judge(&size::BUDGET, report.optimised.raw)
}

/// `cargo clippy` and `cargo test` of the wasm crate for [`WASM_TARGET`]:
/// `.cargo/config.toml` makes `wasm-bindgen-test-runner` run each test
/// binary under Node.
///
/// `--tests` leaves out doctests, which the host `test` step already runs:
/// compiled for wasm they are plain `main` programs, not something the
/// runner can drive. No `-q` and no user test arguments: cargo forwards them
/// to the runner, which rejects what it does not know. No tests at all is a
/// pass (the runner says "no tests to run!").
fn wasm_tests(context: &Context<'_>) -> Result<(), XtaskError> {
    // The workspace clippy step builds this crate for the host, where the
    // wasm-only test files compile to nothing: lint them for their target.
    let mut clippy = context.cargo();
    clippy.args([
        "clippy",
        "--locked",
        "-p",
        WASM_PACKAGE,
        "--target",
        WASM_TARGET,
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]);
    context.run(&mut clippy)?;
    let mut test = context.cargo();
    test.args([
        "test",
        "--locked",
        "-p",
        WASM_PACKAGE,
        "--target",
        WASM_TARGET,
        "--tests",
    ]);
    context.run(&mut test)
}

/// An `npm` command whose progress output goes to stderr, so that stdout
/// carries only results (the size table) as everywhere in xtask; use
/// [`npm_capture`] for a command whose stdout is read. On Windows npm is
/// `npm.cmd`, which [`Command`] does not find by its bare name.
fn npm() -> Command {
    let mut command = npm_capture();
    command.stdout(Stdio::from(std::io::stderr()));
    command
}

/// An `npm` command with stdout left alone, for [`cmd::capture`] and
/// [`cmd::run_quiet`].
///
/// [`cmd::capture`]: crate::cmd::capture
/// [`cmd::run_quiet`]: crate::cmd::run_quiet
fn npm_capture() -> Command {
    Command::new(if cfg!(windows) { "npm.cmd" } else { "npm" })
}

/// A `node` command.
fn node() -> Command {
    Command::new("node")
}
