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

mod apt;
mod bench;
mod bench_report;
mod cmd;
mod error;
mod npm;
mod postgres;
mod rust_version;
mod test;
mod toolchain;
mod wasm_imports;
mod workspace;

use std::path::PathBuf;
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
    /// clippy, a throwaway PostgreSQL server, tests, wasm import check,
    /// docs, then the npm package (build, size, wasm and JS tests, a smoke
    /// test of its tarball). Stops at the first failure.
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
    /// Build the npm package `loomfence` into wasm/npm/dist (cargo,
    /// wasm-bindgen, wasm-opt -Oz) and print the size of its .wasm against
    /// the budget. Installs wasm-bindgen-cli and wasm-opt when missing.
    Npm,
    /// Start a throwaway PostgreSQL server, run a program with
    /// LOOMFENCE_PG_URL naming it, then stop and delete the server. Exits
    /// with the program's status.
    ///
    /// The variable is set for the program, not for the shell that starts
    /// xtask, so to use it in arguments go through a shell:
    /// `cargo xtask pg -- sh -c 'psql "$LOOMFENCE_PG_URL" -c "select 1"'`.
    Pg {
        /// Keep PostgreSQL's crash-safety settings (fsync,
        /// synchronous_commit, full_page_writes) on, as benchmarks must. By
        /// default they are off: faster, and fine for tests.
        #[arg(long)]
        durable: bool,
        /// The program to run and its arguments, after `--`
        /// (e.g. `cargo xtask pg --durable -- cargo run --release -p
        /// loomfence-postgres --bin pg-bench`).
        #[arg(last = true, required = true, value_name = "PROGRAM")]
        program: Vec<String>,
    },
    /// Internal: the cleanup watchdog of a throwaway PostgreSQL cluster.
    /// Waits for its standard input to close, then stops the cluster and
    /// deletes its directory if they are still there.
    #[command(name = "pg-reaper", hide = true)]
    PgReaper {
        /// Directory of the server binaries.
        #[arg(long)]
        bin: PathBuf,
        /// The cluster's temporary directory.
        #[arg(long)]
        dir: PathBuf,
        /// Run server commands as the `postgres` user.
        #[arg(long)]
        as_postgres: bool,
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
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Dispatches one parsed command and returns the exit code it asks for.
fn run(command: Commands) -> Result<ExitCode, XtaskError> {
    match command {
        Commands::Test { test_args } => test::run(&test_args).map(|()| ExitCode::SUCCESS),
        Commands::Bench {
            bench,
            package,
            bench_args,
        } => bench::run(&bench::BenchOptions {
            package: &package,
            bench: bench.as_deref(),
            harness_args: &bench_args,
        })
        .map(|()| ExitCode::SUCCESS),
        Commands::Npm => npm::run().map(|()| ExitCode::SUCCESS),
        Commands::Pg { durable, program } => {
            let durability = if durable {
                postgres::Durability::Durable
            } else {
                postgres::Durability::Fast
            };
            postgres::run_program(durability, &program)
        }
        Commands::PgReaper {
            bin,
            dir,
            as_postgres,
        } => Ok(postgres::reap(bin, dir, as_postgres)),
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

    /// `pg` takes `--durable` and a program after `--`, untouched.
    #[test]
    fn pg_parses_durable_and_program() {
        let cli = Cli::try_parse_from([
            "xtask",
            "pg",
            "--durable",
            "--",
            "cargo",
            "run",
            "--release",
        ])
        .expect("valid command line");
        match cli.command {
            Some(Commands::Pg { durable, program }) => {
                assert!(durable);
                assert_eq!(program, ["cargo", "run", "--release"]);
            }
            other => panic!("unexpected parse: {other:?}"),
        }
        let cli = Cli::try_parse_from(["xtask", "pg", "--", "psql"]).expect("valid command line");
        assert!(matches!(
            cli.command,
            Some(Commands::Pg { durable: false, .. })
        ));
    }

    /// `pg` without a program is a usage error, not a cluster started for
    /// nothing.
    #[test]
    fn pg_requires_a_program() {
        assert!(Cli::try_parse_from(["xtask", "pg"]).is_err());
        assert!(Cli::try_parse_from(["xtask", "pg", "--durable"]).is_err());
    }

    /// The watchdog's command line, as [`postgres`] builds it, parses.
    #[test]
    fn pg_reaper_parses() {
        let cli = Cli::try_parse_from([
            "xtask",
            postgres::REAPER_COMMAND,
            "--bin",
            "/b",
            "--dir",
            "/d",
            "--as-postgres",
        ])
        .expect("valid command line");
        assert!(matches!(
            cli.command,
            Some(Commands::PgReaper {
                as_postgres: true,
                ..
            })
        ));
    }

    /// `npm` takes no arguments.
    #[test]
    fn npm_parses_without_arguments() {
        let cli = Cli::try_parse_from(["xtask", "npm"]).expect("valid command line");
        assert!(matches!(cli.command, Some(Commands::Npm)));
        assert!(Cli::try_parse_from(["xtask", "npm", "--release"]).is_err());
    }

    /// No subcommand parses (and then prints help) instead of erroring.
    #[test]
    fn no_subcommand_is_accepted() {
        let cli = Cli::try_parse_from(["xtask"]).expect("valid command line");
        assert!(cli.command.is_none());
    }
}
