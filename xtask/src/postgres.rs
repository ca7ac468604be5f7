//! A throwaway PostgreSQL server for the `postgres` pipeline step and
//! `cargo xtask pg`, made by Debian's `pg_virtualenv` (package
//! postgresql-common), which creates a cluster, runs a command, and drops
//! the cluster when the command ends or pg_virtualenv is interrupted.
//!
//! Tests and benchmarks find the server through [`URL_VAR`]. xtask runs
//!
//! ```text
//! PGPORT=<free port> pg_virtualenv -t -i --auth=trust -o max_connections=300 \
//!     -o fsync=off -o synchronous_commit=off -o full_page_writes=off \
//!     sh -c '<write the URL to a file>; exec cat' <file>
//! ```
//!
//! with `cat` reading a pipe from xtask. The cluster also runs with `ssl=on`
//! and a certificate from [`pg_tls`] (`-o ssl_cert_file=…`),
//! and, before the URL is written, gets the role `tls_only`, admitted over
//! TLS only; tests find the CA through [`pg_tls::CA_VAR`]. The cluster lives exactly as long
//! as xtask holds the pipe: when xtask drops its [`Cluster`] or dies in any
//! way (Ctrl-C, `kill -9`, a CI timeout), the pipe closes, `cat` ends and
//! pg_virtualenv drops the cluster and its directory. It runs in its own
//! process group, so a Ctrl-C in the terminal reaches it only that way,
//! not in the middle of creating the cluster.
//!
//! What would collide when two runs (two worktrees, two CI jobs) overlap,
//! and how it is avoided:
//! * the cluster name: as root, pg_virtualenv makes `/etc/postgresql/<v>/regress`
//!   and rewrites `/etc/postgresql-common/pg_service.conf`, the same for
//!   every run, so a second run refuses ("Cluster 15/regress exists"); `-t`
//!   keeps every file in a temporary directory of its own, as for non-root;
//! * the port: pg_virtualenv takes the first port from 5432 that is free
//!   when it creates the cluster, so two starting together both take 5432
//!   and the second server fails to bind. xtask sets `PGPORT` to a port the
//!   operating system has just found free, and tries again on a new one
//!   (up to [`START_ATTEMPTS`]) if the start fails anyway;
//! * pg_virtualenv's standard output goes to /dev/null, never a pipe: its
//!   cleanup traps SIGPIPE and itself writes to stdout, so a pipe whose
//!   reader died makes it loop and leave the cluster behind. Its errors
//!   (stderr, with the server log when a start fails) stay visible.

use std::fs;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};

use crate::cmd;
use crate::pg_tls::{self, TlsFiles};

/// Where tests and benchmarks find their server, as a `postgres://` URL.
pub(crate) const URL_VAR: &str = "LOOMFENCE_PG_URL";

/// How many ports to try when a start fails.
const START_ATTEMPTS: u32 = 3;

/// pg_virtualenv's command: once the cluster is up, write its URL and
/// version to the file `$0` (atomically, by renaming), then wait on stdin.
///
/// Before that, it makes the role `tls_only`, which the server admits over
/// TLS only (a `hostnossl … reject` line first in `pg_hba.conf`), so a test
/// can show that `sslmode=disable` is refused by a server that requires TLS.
const HOLDER: &str = r#"psql -qXc 'CREATE ROLE tls_only LOGIN SUPERUSER' && hba=$(psql -qXAtc 'SHOW hba_file') && sed -i '1i hostnossl all tls_only all reject' "$hba" && psql -qXc 'SELECT pg_reload_conf()' && printf 'postgres://%s@127.0.0.1:%s/postgres\n%s\n' "$PGUSER" "$PGPORT" "$PGVERSION" > "$0.tmp" && mv "$0.tmp" "$0" && exec cat"#;

/// A running throwaway cluster; dropping it drops the cluster.
pub(crate) struct Cluster {
    /// pg_virtualenv; its stdin is the pipe that keeps the cluster alive.
    child: Child,
    /// The URL clients connect with (user `postgres` as root, trusted).
    pub(crate) url: String,
    /// The server's TLS files (`ssl=on`; plain connections are still
    /// admitted, but for the role `tls_only`).
    pub(crate) tls: TlsFiles,
}

impl Cluster {
    /// Installs PostgreSQL when missing, then starts a cluster: `durable`
    /// keeps fsync, synchronous_commit and full_page_writes on (benchmarks
    /// must measure them); otherwise they are off (fast, fine for tests).
    pub(crate) fn start(durable: bool) -> Result<Self> {
        if !installed() {
            cmd::note("PostgreSQL's server or pg_virtualenv is missing: installing `postgresql`");
            cmd::apt_install("postgresql")?;
            if !installed() {
                bail!(
                    "the `postgresql` package is installed, but pg_virtualenv or a server is not"
                );
            }
        }
        let started = Instant::now();
        let mut attempt = 1;
        loop {
            match Self::try_start(durable) {
                Ok(cluster) => {
                    cmd::note(&format!(
                        "{URL_VAR}={} ({}, up in {:.1}s)",
                        cluster.url,
                        if durable {
                            "durable: fsync on"
                        } else {
                            "fsync off: fast, not crash-safe"
                        },
                        started.elapsed().as_secs_f64()
                    ));
                    return Ok(cluster);
                }
                Err(err) if attempt < START_ATTEMPTS => {
                    cmd::note(&format!("{err:#}; trying another port"));
                    attempt += 1;
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// One attempt at [`Cluster::start`], on a port free right now.
    fn try_start(durable: bool) -> Result<Self> {
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
            .local_addr()?
            .port();
        let ready =
            std::env::temp_dir().join(format!("loomfence-pg.{}.{port}", std::process::id()));
        let tls = TlsFiles::generate(
            &std::env::temp_dir().join(format!("loomfence-pg-tls.{}.{port}", std::process::id())),
        )?;
        let mut command = Command::new("pg_virtualenv");
        command
            .env("PGPORT", port.to_string())
            .args(["-t", "-i", "--auth=trust"]);
        for setting in settings(durable) {
            command.args(["-o", setting]);
        }
        command.args(["-o", "ssl=on"]);
        command
            .arg("-o")
            .arg(format!("ssl_cert_file={}", tls.cert.display()));
        command
            .arg("-o")
            .arg(format!("ssl_key_file={}", tls.key.display()));
        command.args(["sh", "-c", HOLDER]).arg(&ready);
        cmd::note(&format!("$ {}", cmd::describe(&command)));
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .process_group(0)
            .spawn()
            .context("could not start pg_virtualenv")?;
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Ok(text) = fs::read_to_string(&ready) {
                let _ = fs::remove_file(&ready);
                let (url, version) = text.trim().split_once('\n').unwrap_or((text.trim(), "?"));
                cmd::note(&format!("PostgreSQL {version} on port {port}"));
                return Ok(Self {
                    child,
                    url: url.to_owned(),
                    tls,
                });
            }
            if let Some(status) = child.try_wait()? {
                bail!("pg_virtualenv exited with {status} before its cluster was up");
            }
            if Instant::now() > deadline {
                // SIGTERM to its process group: pg_virtualenv traps it and
                // drops what it has made.
                let group = format!("-{}", child.id());
                let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
                let _ = child.wait();
                bail!("pg_virtualenv's cluster was not up after 120 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Cluster {
    /// Closes the pipe (pg_virtualenv's signal to drop the cluster) and
    /// waits until it has.
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        match self.child.wait() {
            Ok(status) if status.success() => cmd::note("PostgreSQL cluster dropped"),
            Ok(status) => cmd::note(&format!("warning: pg_virtualenv exited with {status}")),
            Err(err) => cmd::note(&format!("warning: waiting for pg_virtualenv: {err}")),
        }
    }
}

/// The `postgresql.conf` settings of a cluster: enough connections for the
/// tests' pools, and crash safety only when `durable`. fsync is set either
/// way, as pg_virtualenv's own default is off.
fn settings(durable: bool) -> [&'static str; 4] {
    if durable {
        [
            "max_connections=300",
            "fsync=on",
            "synchronous_commit=on",
            "full_page_writes=on",
        ]
    } else {
        [
            "max_connections=300",
            "fsync=off",
            "synchronous_commit=off",
            "full_page_writes=off",
        ]
    }
}

/// Whether pg_virtualenv and a server version for it are installed.
fn installed() -> bool {
    let server = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten();
    cmd::probe(Command::new("pg_virtualenv").arg("-h")).is_some()
        && server
            .into_iter()
            .any(|entry| entry.path().join("bin/pg_ctl").is_file())
}

/// The `postgres` step: a server for the tests, `None` when the environment
/// already names one ([`URL_VAR`] is passed on as it is) or, outside CI,
/// when none can be had (the PostgreSQL tests then skip, and `warnings`
/// says so at the end). In CI (`CI` set) that fails the step instead.
pub(crate) fn for_tests(warnings: &mut Vec<String>) -> Result<Option<Cluster>> {
    if std::env::var_os(URL_VAR).is_some_and(|url| !url.is_empty()) {
        cmd::note(&format!(
            "{URL_VAR} is already set: the tests use that server"
        ));
        return Ok(None);
    }
    match Cluster::start(false) {
        Ok(cluster) => Ok(Some(cluster)),
        Err(err) if cmd::is_ci() => {
            Err(err.context("CI is set, so the PostgreSQL tests may not be skipped"))
        }
        Err(err) => {
            let warning =
                format!("no PostgreSQL server, the PostgreSQL tests were SKIPPED: {err:#}");
            cmd::note(&format!("WARNING: {warning}"));
            warnings.push(warning);
            Ok(None)
        }
    }
}

/// `cargo xtask pg`: runs `program` (a program and its arguments) with
/// [`URL_VAR`] naming a throwaway cluster, drops the cluster and exits with
/// the program's status (128 + the signal number if a signal ended it).
pub(crate) fn run_program(durable: bool, program: &[String]) -> Result<ExitCode> {
    let (name, args) = program.split_first().context("no program given")?;
    cmd::header("pg: starting a throwaway PostgreSQL cluster");
    let cluster = Cluster::start(durable)?;
    let mut command = Command::new(name);
    command
        .args(args)
        .env(URL_VAR, &cluster.url)
        .env(pg_tls::CA_VAR, &cluster.tls.ca);
    cmd::header(&format!("pg: {}", cmd::describe(&command)));
    let status = command
        .status()
        .with_context(|| format!("could not start `{name}`"));
    cmd::header("pg: dropping the cluster");
    drop(cluster);
    let status = status?;
    let signal = std::os::unix::process::ExitStatusExt::signal(&status).map(|signal| 128 + signal);
    Ok(ExitCode::from(
        status
            .code()
            .or(signal)
            .and_then(|code| u8::try_from(code).ok())
            .unwrap_or(1),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tests run fast; benchmarks keep every crash-safety setting on.
    #[test]
    fn settings_follow_durability() {
        assert!(settings(false).contains(&"fsync=off"));
        assert!(
            settings(true)
                .iter()
                .all(|setting| !setting.ends_with("=off"))
        );
        assert!(settings(true).contains(&"fsync=on"));
    }
}
