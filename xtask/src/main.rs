//! Project automation for loomfence, run as `cargo xtask <command>`.
//!
//! Written in Rust rather than shell so that the test pipeline behaves the
//! same on every machine and CI can call one command (`cargo xtask test`)
//! whose steps are reviewed like any other code. See `cargo xtask --help`.

// Printing results is this tool's purpose; the workspace-wide lint exists to
// keep library crates quiet and does not apply here.
#![allow(clippy::print_stdout, reason = "xtask is a CLI; stdout is its output")]
// The workspace denies missing docs only on public items; everything in a
// binary is private, so ask for the same discipline explicitly.
#![warn(clippy::missing_docs_in_private_items)]

mod bench;
mod bench_report;
mod cmd;
mod error;
mod rust_version;
mod test;
mod toolchain;
mod wasm_imports;
mod workspace;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::error::XtaskError;

/// Command-line interface of `cargo xtask`.
#[derive(Debug, Parser)]
#[command(
    name = "xtask",
    bin_name = "cargo xtask",
    about = "Project automation for loomfence",
    long_about = None
)]
struct Cli {
    /// The command to run; absent means "show help".
    #[command(subcommand)]
    command: Option<Commands>,
}

/// The available commands.
#[derive(Debug, Subcommand)]
enum Commands {
    /// Run the whole test pipeline (what CI runs): toolchain setup, fmt,
    /// clippy, tests, wasm import check, docs. Stops at the first failure.
    Test {
        /// Extra arguments for `cargo test`'s test binaries, given after
        /// `--` (e.g. `cargo xtask test -- --nocapture`).
        #[arg(last = true, value_name = "TEST_ARGS")]
        test_args: Vec<String>,
    },
    /// Run criterion benchmarks and print Markdown tables comparing each
    /// group's results to its baseline.
    Bench {
        /// Run only this bench target (`cargo bench --bench NAME`).
        #[arg(long, value_name = "NAME")]
        bench: Option<String>,
        /// Package whose benches to run.
        #[arg(
            long,
            short = 'p',
            value_name = "PKG",
            default_value = "loomfence-core"
        )]
        package: String,
        /// Extra arguments for the bench harness, given after `--`
        /// (e.g. a criterion filter: `cargo xtask bench -- insert`).
        #[arg(last = true, value_name = "BENCH_ARGS")]
        bench_args: Vec<String>,
    },
}

/// Parses the command line, runs the command and turns its error, if any,
/// into a one-line message and a failing exit code.
fn main() -> ExitCode {
    let cli = Cli::parse();
    let Some(command) = cli.command else {
        // Asking for nothing is not an error: show what is available.
        return match Cli::command().print_help() {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::FAILURE,
        };
    };
    match run(command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Dispatches one parsed command.
fn run(command: Commands) -> Result<(), XtaskError> {
    match command {
        Commands::Test { test_args } => test::run(&test_args),
        Commands::Bench {
            bench,
            package,
            bench_args,
        } => bench::run(&bench::BenchOptions {
            package: &package,
            bench: bench.as_deref(),
            harness_args: &bench_args,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// clap's own consistency checks (conflicting flags, bad defaults).
    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// Arguments after `--` reach `cargo test`, untouched.
    #[test]
    fn test_forwards_args_after_double_dash() {
        let cli = Cli::try_parse_from(["xtask", "test", "--", "--nocapture", "some_test"])
            .expect("valid command line");
        match cli.command {
            Some(Commands::Test { test_args }) => {
                assert_eq!(test_args, ["--nocapture", "some_test"]);
            }
            other => panic!("unexpected parse: {other:?}"),
        }
    }

    /// `bench` defaults to the core package and all its bench targets.
    #[test]
    fn bench_defaults() {
        let cli = Cli::try_parse_from(["xtask", "bench"]).expect("valid command line");
        match cli.command {
            Some(Commands::Bench {
                bench,
                package,
                bench_args,
            }) => {
                assert_eq!(package, "loomfence-core");
                assert_eq!(bench, None);
                assert!(bench_args.is_empty());
            }
            other => panic!("unexpected parse: {other:?}"),
        }
    }

    /// No subcommand parses (and then prints help) instead of erroring.
    #[test]
    fn no_subcommand_is_accepted() {
        let cli = Cli::try_parse_from(["xtask"]).expect("valid command line");
        assert!(cli.command.is_none());
    }
}
