//! Project automation for loomfence, run as `cargo xtask <command>`.
//!
//! Glue: each command calls the tools that do the work (cargo, rustup,
//! apt-get, Debian's `pg_virtualenv`, the npm scripts of `wasm/npm-tools`,
//! Node, Chromium), in order, echoing every command line. What no tool
//! checks stays here in Rust: the wasm import check, the size budget of the
//! npm package's `.wasm`, the wasm-bindgen-cli pinned to `Cargo.lock`, the
//! `rust-version` floor and the benchmark ratio tables.

// Printing results is this tool's purpose; the workspace-wide lint exists to
// keep library crates quiet and does not apply here.
#![allow(clippy::print_stdout, reason = "xtask is a CLI; stdout is its output")]
// The workspace denies missing docs only on public items; everything in a
// binary is private, so ask for the same discipline explicitly.
#![warn(clippy::missing_docs_in_private_items)]

mod bench;
mod bench_pg;
mod cmd;
mod demo;
mod npm;
mod pg_tls;
mod postgres;
mod test;
mod toolchain;
#[cfg(test)]
mod versions;
mod wasm_imports;
mod wasm_sizes;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// Command-line interface of `cargo xtask`.
#[derive(Debug, Parser)]
#[command(
    name = "xtask",
    bin_name = "cargo xtask",
    about = "Project automation for loomfence"
)]
struct Cli {
    /// The command to run; absent means "show help".
    #[command(subcommand)]
    command: Option<Commands>,
}

/// The available commands.
#[derive(Debug, Subcommand)]
enum Commands {
    /// Run the whole test pipeline (what CI runs): install what is missing,
    /// fmt, clippy, the tests on a throwaway PostgreSQL server, the wasm
    /// import check, docs, then the npm package (build, size budget, wasm
    /// and JS tests, its tarball installed and run, its browser entry in
    /// Chromium), then the browser demo in Chromium. Stops at the first
    /// failure.
    Test {
        /// Extra arguments for `cargo test`'s test binaries, given after
        /// `--` (e.g. `cargo xtask test -- --nocapture`).
        #[arg(last = true, value_name = "TEST_ARGS")]
        test_args: Vec<String>,
    },
    /// Run criterion benchmarks and print a Markdown table per group, each
    /// entry's mean as a ratio to the group's first.
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
    /// Measure loomfence's PostgreSQL appends against the server's own
    /// speed: on one durable throwaway server, each round runs pgbench with
    /// a one-row INSERT into a table shaped like `events`, then `loomfence
    /// bench` (unfenced and fenced appends, acquire_fence alone, the two
    /// resumes) at the same client count; prints every number per round,
    /// the ratios and their medians.
    BenchPg {
        /// Rounds (pgbench, then each binary).
        #[arg(long, default_value_t = 3)]
        rounds: u32,
        /// Clients of pgbench and of the bench (its concurrency and pool).
        #[arg(long, default_value_t = 64)]
        clients: u32,
        /// pgbench's seconds per round.
        #[arg(long, default_value_t = 10)]
        seconds: u32,
        /// The bench's executions per workload per round.
        #[arg(long, default_value_t = 3000)]
        executions: u32,
        /// A loomfence binary to measure (repeatable, to compare builds in
        /// the same run); by default this workspace's, built in release.
        #[arg(long, value_name = "PATH")]
        binary: Vec<std::path::PathBuf>,
    },
    /// Build the npm package `loomfence` into wasm/npm/dist (its two
    /// modules: cargo, wasm-bindgen, wasm-opt -Oz) and print each .wasm's
    /// size against its budget. Installs wasm-bindgen-cli and the npm tools
    /// when missing.
    Npm,
    /// Show where the bytes of each npm module are: each built with its
    /// function names kept and read with twiggy (installed when missing),
    /// grouped by crate and by the machine the code serves.
    WasmSizes,
    /// Serve the browser demo (`www/`, with the npm package at `/pkg/`) on
    /// 127.0.0.1 and print its URL; builds the package first when
    /// wasm/npm/dist is missing or older than its sources. Runs until Ctrl-C.
    Demo {
        /// The port to listen on; 0 picks a free one.
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
    /// Start a throwaway PostgreSQL server (Debian's pg_virtualenv), run a
    /// program with LOOMFENCE_PG_URL naming it, then drop the server. Exits
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
        /// The program to run and its arguments, after `--`.
        #[arg(last = true, required = true, value_name = "PROGRAM")]
        program: Vec<String>,
    },
}

/// Parses the command line, runs the command and turns its error, if any,
/// into a message and a failing exit code.
fn main() -> ExitCode {
    let result = match Cli::parse().command {
        None => Cli::command()
            .print_help()
            .map(|()| ExitCode::SUCCESS)
            .map_err(Into::into),
        Some(Commands::Test { test_args }) => test::run(&test_args).map(|()| ExitCode::SUCCESS),
        Some(Commands::Bench {
            bench,
            package,
            bench_args,
        }) => bench::run(&package, bench.as_deref(), &bench_args).map(|()| ExitCode::SUCCESS),
        Some(Commands::BenchPg {
            rounds,
            clients,
            seconds,
            executions,
            binary,
        }) => bench_pg::run(&bench_pg::Settings {
            rounds,
            clients,
            seconds,
            executions,
            binaries: binary,
        })
        .map(|()| ExitCode::SUCCESS),
        Some(Commands::Npm) => npm::run().map(|()| ExitCode::SUCCESS),
        Some(Commands::WasmSizes) => wasm_sizes::run().map(|()| ExitCode::SUCCESS),
        Some(Commands::Demo { port }) => demo::serve(port).map(|()| ExitCode::SUCCESS),
        Some(Commands::Pg { durable, program }) => postgres::run_program(durable, &program),
    };
    result.unwrap_or_else(|err| {
        // `{:#}` prints the whole chain: "step `test`: `cargo test …` exited with …".
        eprintln!("error: {err:#}");
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// clap's own consistency checks (conflicting flags, bad defaults).
    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// Arguments after `--` reach their program untouched; `pg` needs one.
    #[test]
    fn arguments_after_double_dash() {
        let parse = |args: &[&str]| Cli::try_parse_from([&["xtask"], args].concat());
        match parse(&["test", "--", "--nocapture", "x"]).map(|cli| cli.command) {
            Ok(Some(Commands::Test { test_args })) => assert_eq!(test_args, ["--nocapture", "x"]),
            other => panic!("unexpected parse: {other:?}"),
        }
        match parse(&["pg", "--durable", "--", "cargo", "run"]).map(|cli| cli.command) {
            Ok(Some(Commands::Pg {
                durable: true,
                program,
            })) => assert_eq!(program, ["cargo", "run"]),
            other => panic!("unexpected parse: {other:?}"),
        }
        assert!(parse(&["pg"]).is_err());
        assert!(parse(&["pg", "--durable"]).is_err());
        assert!(parse(&["npm", "--release"]).is_err());
        assert!(parse(&["demo", "--port", "x"]).is_err());
    }

    /// `bench` defaults to the core package and all its bench targets.
    #[test]
    fn bench_defaults() {
        match Cli::try_parse_from(["xtask", "bench"]).map(|cli| cli.command) {
            Ok(Some(Commands::Bench {
                bench: None,
                package,
                bench_args,
            })) => {
                assert_eq!(package, "loomfence-core");
                assert!(bench_args.is_empty());
            }
            other => panic!("unexpected parse: {other:?}"),
        }
    }
}
