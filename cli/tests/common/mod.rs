//! What the CLI tests share: a scratch directory for SQLite files, and the
//! PostgreSQL server the tests may use.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// An empty directory of the test's own under the system's temp dir,
/// removed (with whatever is left in it) when dropped.
pub(crate) struct Scratch(PathBuf);

impl Scratch {
    /// A fresh directory named after the test and this process.
    pub(crate) fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("loomfence-cli-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        Self(dir)
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// `sqlite:<dir>/<file>`, as `--store` takes it.
    pub(crate) fn store(&self, file: &str) -> String {
        format!("sqlite:{}", self.0.join(file).display())
    }

    /// The names of the files in the directory, sorted.
    pub(crate) fn files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.0)
            .expect("the scratch directory is readable")
            .map(|entry| {
                entry
                    .expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        names
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The PostgreSQL server the tests may use (`cargo xtask test` starts one
/// and sets `LOOMFENCE_PG_URL`). Unset outside CI, the PostgreSQL test
/// passes without running and says so; in CI (`CI` set) it fails instead:
/// a test that needs a server never skips there. `what` names the test.
pub(crate) fn postgres_url(what: &str) -> Option<String> {
    server_var("LOOMFENCE_PG_URL", what)
}

/// The certificate authority of that server's TLS (`LOOMFENCE_PG_TLS_CA`,
/// set beside the URL), under the same rule.
pub(crate) fn postgres_tls_ca(what: &str) -> Option<String> {
    server_var("LOOMFENCE_PG_TLS_CA", what)
}

/// The variable `name` that `cargo xtask test` sets for the test server:
/// its value, or, unset, `None` (said) outside CI and a failure in CI.
fn server_var(name: &str, what: &str) -> Option<String> {
    match std::env::var(name) {
        Ok(value) if !value.is_empty() => Some(value),
        _ if std::env::var("CI").is_ok_and(|ci| !ci.is_empty()) => {
            panic!("CI is set but {name} is not: {what} must not skip in CI")
        }
        _ => {
            eprintln!("{name} is not set: skipping {what}");
            None
        }
    }
}

/// Runs `loomfence SUBCOMMAND ARGS…` against `file` (`--store sqlite:FILE`
/// first, then `args`) after writing `contents` to it, and checks the
/// refusal of a file that is not a usable store: exit 2, `expect` on
/// stderr, and the file exactly as written. Removes the file after;
/// answers stderr, for what else a caller checks.
pub(crate) fn assert_refused_unchanged(
    subcommand: &str,
    file: &Path,
    contents: &[u8],
    args: &[&str],
    expect: &str,
) -> String {
    std::fs::write(file, contents).expect("writes the file");
    let store = format!("sqlite:{}", file.display());
    let all: Vec<&str> = ["--store", store.as_str()]
        .into_iter()
        .chain(args.iter().copied())
        .collect();
    let out = loomfence(subcommand, &all);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{subcommand} {all:?}: {stderr}");
    assert!(stderr.contains(expect), "{subcommand} {all:?}: {stderr}");
    assert_eq!(
        std::fs::read(file).expect("reads the file"),
        contents,
        "{subcommand}: unchanged"
    );
    std::fs::remove_file(file).expect("removes the file");
    stderr.into_owned()
}

/// Runs `loomfence SUBCOMMAND ARGS…` to completion as a user that file
/// modes bind: this one, or, when the tests run as root (whom a mode of
/// 0444 or a directory of 0555 does not stop), `nobody` (uid and gid
/// 65534) through `setpriv`. For a test of a store the command may not
/// write; what it reads must be readable by everyone.
pub(crate) fn loomfence_unprivileged(subcommand: &str, args: &[&str]) -> Output {
    use std::os::unix::fs::MetadataExt;

    let root = std::fs::metadata("/proc/self").is_ok_and(|meta| meta.uid() == 0);
    let mut command = if root {
        let mut setpriv = Command::new("setpriv");
        setpriv
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_loomfence"));
        setpriv
    } else {
        Command::new(env!("CARGO_BIN_EXE_loomfence"))
    };
    command
        .arg(subcommand)
        .args(args)
        .output()
        .expect("the loomfence binary runs (as root, through setpriv)")
}

/// Sets `path`'s permission bits to `mode`.
pub(crate) fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;

    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {mode:o} {}: {e}", path.display()));
}

/// Connects to the test's `schema` on the server at `url`, migrating it
/// (which creates it) when `migrate`, else as it is.
pub(crate) async fn connect_schema(
    url: &str,
    schema: &str,
    migrate: bool,
) -> loomfence_postgres::PostgresEventStore {
    loomfence_postgres::PostgresEventStore::connect(
        url,
        loomfence_postgres::PostgresOptions {
            schema: loomfence_postgres::Schema::new(schema).expect("a schema name"),
            pool_size: 2,
            migrate_on_connect: migrate,
            ..loomfence_postgres::PostgresOptions::default()
        },
    )
    .await
    .unwrap_or_else(|e| panic!("connects to schema {schema}: {e}"))
}

/// Drops the test's `schema`, with everything in it.
pub(crate) async fn drop_schema(store: &loomfence_postgres::PostgresEventStore, schema: &str) {
    let client = store.pool().get().await.expect("a connection");
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .await
        .expect("drops the test's schema");
}

/// Runs `loomfence SUBCOMMAND ARGS…` to completion.
pub(crate) fn loomfence(subcommand: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loomfence"))
        .arg(subcommand)
        .args(args)
        .output()
        .expect("the loomfence binary runs")
}

/// Runs `loomfence SUBCOMMAND --json ARGS…`, expects exit code 0, nothing
/// on stderr (off a terminal) and exactly one JSON object alone on stdout,
/// and returns it.
pub(crate) fn loomfence_json(subcommand: &str, args: &[&str]) -> Value {
    let out = loomfence(subcommand, &[&["--json"], args].concat());
    let stdout = String::from_utf8(out.stdout).expect("stdout is UTF-8");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(
        stderr.is_empty(),
        "--json writes nothing to stderr: {stderr}"
    );
    assert_eq!(stdout.lines().count(), 1, "one line: {stdout}");
    let json: Value = serde_json::from_str(&stdout).expect("stdout is one JSON value");
    assert!(json.is_object(), "{json}");
    json
}
