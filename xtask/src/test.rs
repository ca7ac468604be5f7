//! `cargo xtask test`: the project's single test pipeline, the steps of
//! [`steps`] in order, stopped at the first failure. Cheap, common failures
//! (formatting, lints) come before the slow steps.
//!
//! What a step starts for later ones is a local value of [`steps`]: the
//! PostgreSQL cluster lives until the pipeline ends and is dropped then,
//! passed or failed. Warnings (a part skipped outside CI) are repeated at
//! the end.

use std::cell::Cell;
use std::time::Instant;

use anyhow::{Context as _, Result};

use crate::{cmd, demo, npm, pg_tls, postgres, toolchain, wasm_imports};

/// How many steps [`steps`] has, for the `[i/n]` headers.
const STEPS: usize = 11;

/// Runs the pipeline; `test_args` go to `cargo test` after its `--`.
pub(crate) fn run(test_args: &[String]) -> Result<()> {
    let pipeline = Pipeline {
        started: Instant::now(),
        done: Cell::new(0),
    };
    let mut warnings = Vec::new();
    let result = steps(&pipeline, &mut warnings, test_args);
    if result.is_ok() {
        let seconds = pipeline.started.elapsed().as_secs_f64();
        println!("xtask test: all {STEPS} steps passed ({seconds:.1}s)");
    }
    for warning in &warnings {
        eprintln!("xtask test: warning: {warning}");
    }
    result
}

/// The steps, in order. Each says in one line what it guarantees.
fn steps(pipeline: &Pipeline, warnings: &mut Vec<String>, test_args: &[String]) -> Result<()> {
    pipeline.step(
        "toolchain",
        "rustfmt, clippy and the wasm32 target are installed",
        toolchain::ensure_rustup_pieces,
    )?;
    pipeline.step(
        "rust-version",
        "no dependency needs a newer Rust than the workspace declares",
        toolchain::check_rust_version,
    )?;
    pipeline.step("fmt", "all code is rustfmt-formatted", || {
        cmd::run(cmd::cargo().args(["fmt", "--all", "--", "--check"]))
    })?;
    pipeline.step("clippy", "no clippy warnings in any target", || {
        let mut clippy = cmd::cargo();
        clippy.args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ]);
        cmd::run(&mut clippy)
    })?;
    // Dropped when this function returns, whichever way: that stops it.
    let cluster = pipeline.step(
        "postgres",
        "LOOMFENCE_PG_URL names a PostgreSQL server for the tests",
        || postgres::for_tests(warnings),
    )?;
    pipeline.step("test", "all workspace tests pass", || {
        let mut test = cmd::cargo();
        test.args(["test", "--workspace", "--locked"]);
        if let Some(cluster) = &cluster {
            test.env(postgres::URL_VAR, &cluster.url)
                .env(pg_tls::CA_VAR, &cluster.tls.ca);
        }
        if !test_args.is_empty() {
            test.arg("--").args(test_args);
        }
        cmd::run(&mut test)
    })?;
    pipeline.step(
        "wasm-imports",
        "the pure core compiles to wasm without platform imports",
        wasm_imports::step,
    )?;
    pipeline.step("doc", "documentation builds without warnings", || {
        let mut doc = cmd::cargo();
        doc.args(["doc", "--workspace", "--no-deps", "--locked"])
            .env("RUSTDOCFLAGS", "-D warnings");
        cmd::run(&mut doc)
    })?;
    pipeline.step(
        "npm-build",
        "the npm package builds, and its .wasm is within its size budget",
        npm::build,
    )?;
    pipeline.step(
        "npm-test",
        "the npm package passes its wasm tests, runs installed from its tarball and in \
         Chromium, and passes the JS suites; its benchmarks run",
        || npm::test(warnings),
    )?;
    pipeline.step(
        "demo",
        "the browser demo runs a race in each mode in Chromium and the counters tell them apart",
        || demo::test(warnings),
    )?;
    Ok(())
}

/// The progress of one run.
struct Pipeline {
    /// When the run started.
    started: Instant,
    /// How many steps have passed.
    done: Cell<usize>,
}

impl Pipeline {
    /// Runs one step under a `[i/n] name: summary` header; its error says
    /// which step failed and when.
    fn step<T>(&self, name: &str, summary: &str, body: impl FnOnce() -> Result<T>) -> Result<T> {
        let index = self.done.get() + 1;
        cmd::header(&format!("[{index}/{STEPS}] {name}: {summary}"));
        let started = Instant::now();
        let value = body().with_context(|| {
            let seconds = self.started.elapsed().as_secs_f64();
            format!("step `{name}` failed ({index}/{STEPS}, after {seconds:.1}s)")
        })?;
        cmd::note(&format!(
            "ok: {name} ({:.1}s)",
            started.elapsed().as_secs_f64()
        ));
        self.done.set(index);
        Ok(value)
    }
}
