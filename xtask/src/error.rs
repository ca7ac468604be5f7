//! The one error type every xtask command returns.
//!
//! A typed enum (rather than `Box<dyn Error>`) so that each failure names the
//! step or file it came from: in a CI log the last line is usually all anyone
//! reads, so it has to say *what* failed and *where* without scrolling.

use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;

/// Everything that can make an xtask command fail.
#[derive(Debug, thiserror::Error)]
pub(crate) enum XtaskError {
    /// A program could not even be started (not installed, not on `PATH`).
    /// Kept apart from [`XtaskError::CommandFailed`] because the fix is
    /// different: install something instead of fixing the code.
    #[error("step `{step}`: could not start `{command}`: {source}")]
    Spawn {
        /// Pipeline step that tried to run the program.
        step: String,
        /// The command line, as shown in the step's log.
        command: String,
        /// Why the operating system refused to start it.
        source: io::Error,
    },

    /// A program ran and exited unsuccessfully; its own output (already
    /// streamed to the terminal) explains why, so this only points at it.
    #[error("step `{step}` failed: `{command}` exited with {status}")]
    CommandFailed {
        /// Pipeline step that ran the program.
        step: String,
        /// The command line, as shown in the step's log.
        command: String,
        /// How it exited (code or signal).
        status: ExitStatus,
    },

    /// A program's output was needed as text but was not UTF-8.
    #[error("step `{step}`: `{command}` printed output that is not UTF-8")]
    NotUtf8 {
        /// Pipeline step that ran the program.
        step: String,
        /// The command line whose output was unreadable.
        command: String,
    },

    /// A toolchain piece was installed but still does not work, e.g. because
    /// the active toolchain is not managed by rustup. Retrying would loop, so
    /// the pipeline stops with this instead.
    #[error("toolchain: {what} is still unavailable after installing it")]
    ToolchainStillMissing {
        /// The component or target that stayed missing.
        what: String,
    },

    /// `cargo metadata` answered with JSON we could not use.
    #[error("cargo metadata: {detail}")]
    Metadata {
        /// What was wrong with the answer.
        detail: String,
    },

    /// A resolved dependency declares a newer minimum Rust than the
    /// workspace does, so the workspace's `rust-version` is wrong.
    #[error("rust-version {floor} is below what dependencies need: {offenders}")]
    RustVersionFloor {
        /// The workspace's declared `rust-version`.
        floor: String,
        /// Each offending package, as `name version needs X`.
        offenders: String,
    },

    /// Reading a file or directory failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },

    /// The wasm probe was built but the expected `.wasm` file is not there,
    /// which means the probe crate is not a `cdylib` or was renamed.
    #[error(
        "wasm probe not found at {}: is `{package}` a cdylib?",
        path.display()
    )]
    WasmMissing {
        /// Where the file was expected.
        path: PathBuf,
        /// The package that should have produced it.
        package: String,
    },

    /// The bytes are not a WebAssembly module wasmparser can read.
    #[error("wasm probe is not a readable WebAssembly module: {0}")]
    WasmParse(#[from] wasmparser::BinaryReaderError),

    /// The file is a WebAssembly *component*, not a core module; the import
    /// check is only meaningful for the core module rustc emits.
    #[error("wasm probe is a WebAssembly component, expected a core module")]
    WasmNotCoreModule,

    /// The pure core imports from `env`: something platform-specific (a C
    /// dependency, a clock, an allocator shim) slipped into it.
    #[error(
        "wasm probe imports from \"env\", so platform-specific code reached the pure core: {}",
        imports.join(", ")
    )]
    WasmEnvImports {
        /// The offending imports, as `module.name`.
        imports: Vec<String>,
    },

    /// The probe exports no functions, so the linker was free to drop the
    /// whole core and the import check would prove nothing.
    #[error(
        "wasm probe exports no functions ({exports} exports in total): \
         it must export something that calls into the core, or the check proves nothing"
    )]
    WasmNoFunctionExports {
        /// Exports of any kind (memory, globals) that were present.
        exports: u32,
    },

    /// A criterion `estimates.json` is not valid JSON.
    #[error("{}: invalid JSON: {source}", path.display())]
    EstimatesJson {
        /// The file that failed to parse.
        path: PathBuf,
        /// The parser's complaint.
        source: serde_json::Error,
    },

    /// A criterion `estimates.json` lacks a number the report needs, which
    /// means criterion changed its file format.
    #[error("{}: missing number `{field}` (has criterion's format changed?)", path.display())]
    EstimatesField {
        /// The file that lacks the field.
        path: PathBuf,
        /// Dotted path of the missing field, e.g. `mean.point_estimate`.
        field: &'static str,
    },

    /// No PostgreSQL server binaries (`initdb`, `pg_ctl`, `postgres`) were
    /// found, and they could not be installed here.
    #[error(
        "postgres: no PostgreSQL server binaries (initdb, pg_ctl, postgres) in {searched}; {hint}"
    )]
    PgBinariesMissing {
        /// Where they were looked for.
        searched: String,
        /// What to do about it.
        hint: String,
    },

    /// No free TCP port could be reserved on 127.0.0.1 for the server.
    #[error("postgres: could not find a free TCP port on 127.0.0.1: {0}")]
    PgNoFreePort(#[source] io::Error),

    /// `Cargo.lock` does not pin exactly one version of `wasm-bindgen`, so
    /// there is no single CLI version that matches the crate.
    #[error("{}: {detail}", lockfile.display())]
    WasmBindgenLock {
        /// The lockfile read.
        lockfile: PathBuf,
        /// What is wrong: no `wasm-bindgen` entry, or several versions.
        detail: String,
    },

    /// The npm package's `.wasm`, after `wasm-opt`, is larger than the size
    /// budget (see `npm::size::BUDGET`).
    #[error(
        "npm package: the .wasm is {raw} bytes after wasm-opt, over the budget of {budget} bytes by {}",
        raw - budget
    )]
    WasmOverBudget {
        /// Size of the optimised `.wasm`, in bytes.
        raw: u64,
        /// The budget, in bytes.
        budget: u64,
    },

    /// The npm package or its JS suites are not as the pipeline needs them:
    /// `npm pack --json` answered something unusable, the tarball lacks a
    /// file `package.json` lists, or the suites' folder is missing.
    #[error("npm package: {detail}")]
    NpmPack {
        /// What was wrong with the answer.
        detail: String,
    },

    /// The package's browser entry failed its check in headless Chromium,
    /// or the page could not be served.
    #[error("browser check at {url}: {verdict}")]
    Browser {
        /// The page (or the server script that did not start).
        url: String,
        /// What the page reported, or what went wrong.
        verdict: String,
    },

    /// The README has the `<!-- npm-example -->` marker, but no ```` ```js ````
    /// block follows it, so the example the smoke test must run is missing.
    #[error("{}: {detail}", readme.display())]
    ReadmeExample {
        /// The README read.
        readme: PathBuf,
        /// What is wrong after the marker.
        detail: String,
    },

    /// In CI no PostgreSQL server could be had. Locally the pipeline warns
    /// and skips the PostgreSQL tests instead; CI must never skip them
    /// silently, or a broken setup would look like a passing run.
    #[error(
        "postgres: CI is set, so the PostgreSQL tests may not be skipped, \
         but no server could be started: {source}"
    )]
    PgRequiredInCi {
        /// Why no server could be had.
        source: Box<XtaskError>,
    },
}

impl XtaskError {
    /// Wraps an I/O error with the path it concerns, because a bare
    /// "No such file or directory" does not say which file.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { path, source }
    }
}
