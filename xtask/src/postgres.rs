//! A throwaway PostgreSQL server: the `postgres` pipeline step and
//! `cargo xtask pg`.
//!
//! Tests and benchmarks of the PostgreSQL adapter find their server through
//! one environment variable, [`URL_VAR`] (`LOOMFENCE_PG_URL`). This module
//! provides one:
//!
//! * if the variable is already set, that server is used and nothing starts;
//! * otherwise the server binaries are found (and installed with apt-get
//!   when missing and xtask runs as root, as on a fresh CI machine), a
//!   cluster is created in a fresh `/tmp/loomfence-pg.*` directory, started
//!   on a free port of 127.0.0.1, and stopped and deleted when the run ends.
//!
//! The server refuses to run as root, so as root every server command runs
//! as the `postgres` user (`runuser -u postgres --`), which then owns the
//! directory.
//!
//! When no server can be had, the pipeline step fails in CI (`CI` set to any
//! non-empty value) and elsewhere warns loudly and lets the tests skip their
//! PostgreSQL part; see [`when_unavailable`].
//!
//! # Cleanup
//!
//! [`Cluster`]'s `Drop` stops the server and deletes the directory, so a run
//! that passes, fails or panics leaves nothing behind. A *killed* run (Ctrl-C,
//! a CI timeout) runs no `Drop`, and `pg_ctl` detaches the server from the
//! terminal's process group, so Ctrl-C does not reach the server either. For
//! that case each cluster has a watchdog: a second xtask process
//! (`cargo xtask pg-reaper`, hidden) in its own process group, whose standard
//! input is a pipe from this process. However this process ends, the pipe
//! closes, the watchdog reads end-of-file and cleans up whatever is left.
//! Only when the watchdog is killed as well (`kill -9` of both, a killed
//! container, a reboot) does a `/tmp/loomfence-pg.*` directory, and possibly
//! its server, stay behind; `pg_ctl -D /tmp/loomfence-pg.*/data stop` (as
//! `postgres` when root) and `rm -rf` remove them.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, ErrorKind};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::time::Instant;

use crate::error::XtaskError;
use crate::test::Context;
use crate::{apt, cmd};

/// The environment variable that tells tests and benchmarks where their
/// PostgreSQL server is, as a `postgres://` URL.
pub(crate) const URL_VAR: &str = "LOOMFENCE_PG_URL";

/// Overrides where the server binaries are looked for: a directory holding
/// `initdb`, `pg_ctl` and `postgres`. When set, nothing else is searched and
/// nothing is installed.
const BIN_DIR_VAR: &str = "LOOMFENCE_PG_BIN_DIR";

/// Set (non-empty) by CI systems; decides whether a missing server fails the
/// pipeline.
const CI_VAR: &str = "CI";

/// Where Debian and Ubuntu install each major version's server binaries, as
/// `<root>/<version>/bin`.
const DEBIAN_ROOT: &str = "/usr/lib/postgresql";

/// The programs a cluster needs, all from one installation.
const PROGRAMS: [&str; 3] = ["initdb", "pg_ctl", "postgres"];

/// The operating-system user that runs the server when xtask is root, and
/// the database superuser `initdb` creates.
const SERVER_USER: &str = "postgres";

/// Prefix of the temporary directories, so leftovers are easy to find.
const DIR_PREFIX: &str = "loomfence-pg.";

/// How often to try starting the server, each time on a new port: between
/// reserving a free port and the server binding it, another program may
/// take it.
const START_ATTEMPTS: u32 = 3;

/// The hidden subcommand that runs the cleanup watchdog.
pub(crate) const REAPER_COMMAND: &str = "pg-reaper";

/// Whether the server may trade crash safety for speed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Durability {
    /// `fsync`, `synchronous_commit` and `full_page_writes` off: a crash of
    /// the machine may lose or corrupt data, which a throwaway test server
    /// does not mind, and commits get much cheaper.
    Fast,
    /// PostgreSQL's defaults, all on: what benchmarks must measure.
    Durable,
}

/// The pipeline step: makes [`URL_VAR`] name a server for every later step.
///
/// Uses the server the environment already names, if any; otherwise starts
/// a throwaway [`Cluster`] that lives until the pipeline ends. If none can
/// be started, fails in CI and warns elsewhere (see [`when_unavailable`]).
pub(crate) fn step(context: &Context<'_>) -> Result<(), XtaskError> {
    if let Some(url) = std::env::var_os(URL_VAR).filter(|url| !url.is_empty()) {
        cmd::note(&format!(
            "{URL_VAR} is already set: the tests use that server, none is started ({})",
            redact(&url.to_string_lossy())
        ));
        return Ok(());
    }
    let ci = std::env::var_os(CI_VAR);
    match settle(
        Cluster::start(context.step, Durability::Fast),
        ci.as_deref(),
    )? {
        Outcome::Server(cluster) => {
            context.export_env(URL_VAR, cluster.url());
            context.keep_until_end(cluster);
        }
        Outcome::Skipped(err) => {
            warn_skipping(&err);
            context.warn_at_end(format!(
                "no PostgreSQL server, so the PostgreSQL tests were SKIPPED ({err})"
            ));
        }
    }
    Ok(())
}

/// What the pipeline step ends up with when it is not failing.
#[derive(Debug)]
enum Outcome<T> {
    /// A server to run the tests against.
    Server(T),
    /// No server, for this reason; the PostgreSQL tests will skip.
    Skipped(XtaskError),
}

/// Applies [`when_unavailable`] to an attempt at getting a server: a server
/// is kept; a failure becomes [`XtaskError::PgRequiredInCi`] in CI and
/// [`Outcome::Skipped`] elsewhere.
fn settle<T>(attempt: Result<T, XtaskError>, ci: Option<&OsStr>) -> Result<Outcome<T>, XtaskError> {
    match (attempt, when_unavailable(ci)) {
        (Ok(server), _) => Ok(Outcome::Server(server)),
        (Err(err), Unavailable::Fail) => Err(XtaskError::PgRequiredInCi {
            source: Box::new(err),
        }),
        (Err(err), Unavailable::Skip) => Ok(Outcome::Skipped(err)),
    }
}

/// What the pipeline does when no server can be had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unavailable {
    /// Fail the step: a CI run must not pass with a part of the tests
    /// silently skipped.
    Fail,
    /// Warn loudly and continue; the tests skip what needs a server. A
    /// developer without PostgreSQL can still run everything else.
    Skip,
}

/// Decides from the value of `CI` (absent, or as set) what a missing server
/// means: any non-empty value makes it a failure.
fn when_unavailable(ci: Option<&OsStr>) -> Unavailable {
    if ci.is_some_and(|value| !value.is_empty()) {
        Unavailable::Fail
    } else {
        Unavailable::Skip
    }
}

/// Prints a warning about skipped PostgreSQL tests that is hard to miss.
fn warn_skipping(err: &XtaskError) {
    let rule = "!".repeat(72);
    for line in [
        rule.as_str(),
        "!! WARNING: no PostgreSQL server: the PostgreSQL tests will be SKIPPED.",
        &format!("!! Why: {err}"),
        &format!(
            "!! Fix: install PostgreSQL (Debian/Ubuntu: `apt-get install postgresql`), \
             or set {URL_VAR}."
        ),
        &format!("!! In CI ({CI_VAR} set) this is an error instead."),
        rule.as_str(),
    ] {
        cmd::note(line);
    }
}

/// `cargo xtask pg`: starts a throwaway cluster, runs `program` (a program
/// and its arguments) with [`URL_VAR`] naming it, stops the cluster and
/// returns the program's exit status as xtask's own.
pub(crate) fn run_program(
    durability: Durability,
    program: &[String],
) -> Result<ExitCode, XtaskError> {
    /// Step name for headers and errors.
    const STEP: &str = "pg";
    let Some((name, args)) = program.split_first() else {
        // clap requires the program; this is only a safety net.
        return Ok(ExitCode::SUCCESS);
    };
    if std::env::var_os(URL_VAR).is_some_and(|url| !url.is_empty()) {
        cmd::note(&format!(
            "{URL_VAR} is set in the environment; the program gets the new cluster's URL instead"
        ));
    }
    cmd::header("pg: starting a throwaway PostgreSQL cluster");
    let cluster = Cluster::start(STEP, durability)?;
    let mut command = Command::new(name);
    command.args(args).env(URL_VAR, cluster.url());
    let shown = cmd::describe(&command);
    cmd::header(&format!("pg: {shown}"));
    let status = command.status().map_err(|source| XtaskError::Spawn {
        step: STEP.to_owned(),
        command: shown,
        source,
    });
    cmd::header("pg: stopping the cluster");
    drop(cluster);
    let status = status?;
    if !status.success() {
        cmd::note(&format!("the program exited with {status}"));
    }
    Ok(ExitCode::from(exit_value(status)))
}

/// The exit code a shell would report for `status`: the program's own code,
/// or 128 + the signal number if a signal ended it.
fn exit_value(status: ExitStatus) -> u8 {
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    #[cfg(not(unix))]
    let signal = None;
    exit_value_of(status.code(), signal)
}

/// [`exit_value`] on its parts, so it can be tested without a process.
/// Anything unrepresentable becomes 1, a generic failure.
fn exit_value_of(code: Option<i32>, signal: Option<i32>) -> u8 {
    match (code, signal) {
        (Some(code), _) => u8::try_from(code).unwrap_or(1),
        (None, Some(signal)) => signal
            .checked_add(128)
            .and_then(|value| u8::try_from(value).ok())
            .unwrap_or(1),
        (None, None) => 1,
    }
}

/// A running throwaway cluster; dropping it stops the server and deletes its
/// directory.
pub(crate) struct Cluster {
    /// Where it lives and as whom its commands run.
    site: Site,
    /// The TCP port it listens on, on 127.0.0.1 (0 until started).
    port: u16,
    /// The watchdog that cleans up if this process dies without dropping
    /// the cluster; `None` if it could not be started.
    reaper: Option<Child>,
}

impl Cluster {
    /// Finds (or installs) the binaries, then creates and starts a cluster
    /// in a new temporary directory. Prints the server version, the URL and
    /// how long starting took. `step` names the caller in errors.
    ///
    /// On failure everything created so far is removed again.
    pub(crate) fn start(step: &'static str, durability: Durability) -> Result<Self, XtaskError> {
        let started = Instant::now();
        let bin = ensure_binaries(step)?;
        let version = cmd::probe(Command::new(bin.join("postgres")).arg("--version"))
            .unwrap_or_else(|| "unknown version".to_owned());
        cmd::note(&format!("server: {version} ({})", bin.display()));
        let as_postgres = apt::is_root();
        let dir = make_temp_dir()?;
        // From here on, dropping `cluster` (on success later, or on any
        // error below) removes whatever was created.
        let mut cluster = Self {
            site: Site {
                bin,
                dir,
                as_postgres,
                step,
            },
            port: 0,
            reaper: None,
        };
        cluster.reaper = spawn_reaper(&cluster.site);
        if as_postgres {
            cmd::run_quiet(
                step,
                Command::new("chown")
                    .arg(format!("{SERVER_USER}:"))
                    .arg(&cluster.site.dir),
            )?;
        }
        cmd::run_quiet(
            step,
            cluster
                .site
                .command("initdb")
                .arg("-D")
                .arg(cluster.site.data())
                .args(["-A", "trust", "-E", "UTF8", "--locale=C.UTF-8", "-U"])
                .arg(SERVER_USER)
                .arg("-N"),
        )?;
        cluster.port = cluster.site.start_server(durability)?;
        cmd::note(&format!(
            "{URL_VAR}={} ({}, started in {:.1}s)",
            cluster.url(),
            match durability {
                Durability::Fast => "fsync off: fast, not crash-safe",
                Durability::Durable => "durable: fsync on",
            },
            started.elapsed().as_secs_f64()
        ));
        Ok(cluster)
    }

    /// The URL clients connect with.
    pub(crate) fn url(&self) -> String {
        url(self.port)
    }
}

impl Drop for Cluster {
    /// Stops the server, deletes the directory, then lets the watchdog see
    /// that nothing is left and exit.
    fn drop(&mut self) {
        let started = Instant::now();
        self.site.shutdown();
        if let Some(mut reaper) = self.reaper.take() {
            // Closing its input is the watchdog's signal to look; it finds
            // the directory gone and exits.
            drop(reaper.stdin.take());
            if let Err(err) = reaper.wait() {
                cmd::note(&format!("warning: waiting for the cleanup watchdog: {err}"));
            }
        }
        cmd::note(&format!(
            "PostgreSQL stopped and {} removed ({:.1}s)",
            self.site.dir.display(),
            started.elapsed().as_secs_f64()
        ));
    }
}

/// Where a cluster lives and how its commands are run: all that the
/// watchdog needs to clean it up.
struct Site {
    /// The directory holding `initdb`, `pg_ctl` and `postgres`.
    bin: PathBuf,
    /// The temporary directory: `data/` (the cluster), `server.log`, and the
    /// server's Unix socket.
    dir: PathBuf,
    /// Whether server commands run as [`SERVER_USER`] (xtask is root).
    as_postgres: bool,
    /// Step name for echoed commands and errors.
    step: &'static str,
}

impl Site {
    /// The cluster's data directory.
    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The server's log file.
    fn log(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    /// A command running `program` from the server binaries, as
    /// [`SERVER_USER`] when xtask is root, from the temporary directory (the
    /// server user may not be allowed into the current one).
    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        let mut command = if self.as_postgres {
            let mut runuser = Command::new("runuser");
            runuser.args(["-u", SERVER_USER, "--"]).arg(path);
            runuser
        } else {
            Command::new(path)
        };
        command.current_dir(&self.dir);
        command
    }

    /// Starts the server on a free port and returns the port, retrying on a
    /// new port if the chosen one was taken in the meantime. On failure
    /// prints the end of the server log, which says why.
    fn start_server(&self, durability: Durability) -> Result<u16, XtaskError> {
        let mut attempt = 1;
        loop {
            let port = free_port()?;
            // A fresh log per attempt, so the retry test below reads only
            // this attempt's messages.
            let _ = fs::remove_file(self.log());
            let mut command = self.command("pg_ctl");
            command
                .arg("-D")
                .arg(self.data())
                .arg("-l")
                .arg(self.log())
                .args(["-w", "-t", "30", "start", "-o"])
                .arg(server_options(port, &self.dir, durability));
            let Err(err) = cmd::run_quiet(self.step, &mut command) else {
                return Ok(port);
            };
            let log = fs::read_to_string(self.log()).unwrap_or_default();
            if attempt < START_ATTEMPTS && port_was_taken(&log) {
                cmd::note(&format!("port {port} was taken meanwhile; trying another"));
                attempt += 1;
                continue;
            }
            cmd::note(&format!("end of {}:", self.log().display()));
            let lines: Vec<&str> = log.lines().collect();
            for line in &lines[lines.len().saturating_sub(20)..] {
                cmd::note(&format!("  {line}"));
            }
            return Err(err);
        }
    }

    /// Stops the server if it runs and deletes the directory. Failures are
    /// printed, not returned: this runs during cleanup, where the original
    /// outcome (pass or fail) is what must be reported.
    fn shutdown(&self) {
        if self.data().join("postmaster.pid").exists() {
            let mut command = self.command("pg_ctl");
            command
                .arg("-D")
                .arg(self.data())
                .args(["-m", "fast", "-w", "stop"]);
            if let Err(err) = cmd::run_quiet(self.step, &mut command) {
                cmd::note(&format!("warning: could not stop PostgreSQL: {err}"));
            }
        }
        match fs::remove_dir_all(&self.dir) {
            Err(err) if err.kind() != ErrorKind::NotFound => cmd::note(&format!(
                "warning: could not remove {}: {err}",
                self.dir.display()
            )),
            _ => {}
        }
    }
}

/// Starts the cleanup watchdog for `site` (see the module docs), or prints
/// why it could not and returns `None`: the cluster works without it, only
/// an interrupted run would then leave it behind.
fn spawn_reaper(site: &Site) -> Option<Child> {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(err) => {
            cmd::note(&format!(
                "warning: no cleanup watchdog (own path unknown: {err})"
            ));
            return None;
        }
    };
    let mut command = Command::new(exe);
    command
        .arg(REAPER_COMMAND)
        .arg("--bin")
        .arg(&site.bin)
        .arg("--dir")
        .arg(&site.dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null());
    if site.as_postgres {
        command.arg("--as-postgres");
    }
    // Its own process group: Ctrl-C, sent to the terminal's foreground
    // group, must end xtask but not the watchdog.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    match command.spawn() {
        Ok(child) => Some(child),
        Err(err) => {
            cmd::note(&format!("warning: no cleanup watchdog: {err}"));
            None
        }
    }
}

/// The hidden `pg-reaper` command: waits until its standard input closes
/// (the xtask that started it has ended, one way or another), then stops
/// the cluster in `dir` and deletes `dir` if they are still there.
pub(crate) fn reap(bin: PathBuf, dir: PathBuf, as_postgres: bool) -> ExitCode {
    // Any outcome (end of file or a read error) means the parent is gone.
    let _ = io::copy(&mut io::stdin().lock(), &mut io::sink());
    if dir.exists() {
        cmd::note(&format!(
            "xtask ended without stopping its PostgreSQL cluster (interrupted?): cleaning up {}",
            dir.display()
        ));
        Site {
            bin,
            dir,
            as_postgres,
            step: REAPER_COMMAND,
        }
        .shutdown();
    }
    ExitCode::SUCCESS
}

/// The server's `-o` options: listen on 127.0.0.1 only, at `port`, with its
/// Unix socket in `socket_dir` (not the system-wide one, which a non-root
/// user cannot write), and, when [`Durability::Fast`], without the
/// settings that make commits wait for the disk.
///
/// `pg_ctl` passes these through a shell; `socket_dir` is a directory this
/// module names itself, without spaces or quotes.
fn server_options(port: u16, socket_dir: &Path, durability: Durability) -> String {
    let mut options = format!(
        "-c listen_addresses=127.0.0.1 -p {port} -k {} -c max_connections=300",
        socket_dir.display()
    );
    if durability == Durability::Fast {
        options.push_str(" -c fsync=off -c synchronous_commit=off -c full_page_writes=off");
    }
    options
}

/// The URL of a throwaway cluster on `port`: user and database `postgres`,
/// no password (the cluster trusts local connections).
fn url(port: u16) -> String {
    format!("postgres://{SERVER_USER}@127.0.0.1:{port}/postgres")
}

/// `url` with any password replaced by `***`, for printing a URL that came
/// from the environment (and so may hold a secret) into a CI log. Handles
/// both the URL form (`postgres://user:secret@host`) and the key-value form
/// (`host=… password=secret`).
fn redact(url: &str) -> String {
    if let Some(scheme_end) = url.find("://") {
        let rest = &url[scheme_end + 3..];
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        if let Some(at) = rest[..authority_end].rfind('@')
            && let Some(colon) = rest[..at].find(':')
        {
            let start = scheme_end + 3 + colon + 1;
            let end = scheme_end + 3 + at;
            return format!("{}***{}", &url[..start], &url[end..]);
        }
        return url.to_owned();
    }
    url.split(' ')
        .map(|word| match word.split_once('=') {
            Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
            _ => word.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether a failed start's server log says the port was already in use.
/// The cluster is created with the C.UTF-8 locale, so messages are English.
fn port_was_taken(log: &str) -> bool {
    log.contains("could not bind") || log.contains("Address already in use")
}

/// A TCP port on 127.0.0.1 that is free right now: the operating system
/// picks one for a listener that is closed again at once.
fn free_port() -> Result<u16, XtaskError> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(XtaskError::PgNoFreePort)?;
    let address = listener.local_addr().map_err(XtaskError::PgNoFreePort)?;
    Ok(address.port())
}

/// Creates a new, empty `loomfence-pg.*` directory in `/tmp` (on Unix; the
/// system temporary directory elsewhere).
///
/// Not `$TMPDIR`: when xtask is root the server runs as another user, who
/// must be able to reach the directory, and `/tmp` is reachable by all.
fn make_temp_dir() -> Result<PathBuf, XtaskError> {
    let parent = if cfg!(unix) {
        PathBuf::from("/tmp")
    } else {
        std::env::temp_dir()
    };
    let pid = std::process::id();
    let mut attempt: u32 = 0;
    loop {
        let dir = parent.join(format!("{DIR_PREFIX}{pid}.{attempt}"));
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            // A leftover of an earlier process with the same id.
            Err(err) if err.kind() == ErrorKind::AlreadyExists && attempt < 1000 => {
                attempt += 1;
            }
            Err(err) => return Err(XtaskError::io(dir)(err)),
        }
    }
}

/// The directory of the server binaries: [`BIN_DIR_VAR`] if set, else the
/// highest installed version, installing the `postgresql` package with
/// apt-get first when none is found and xtask is root.
fn ensure_binaries(step: &str) -> Result<PathBuf, XtaskError> {
    if let Some(dir) = std::env::var_os(BIN_DIR_VAR).filter(|dir| !dir.is_empty()) {
        let dir = PathBuf::from(dir);
        return if is_installation(&dir) {
            Ok(dir)
        } else {
            Err(missing(
                &dir.display().to_string(),
                &format!("{BIN_DIR_VAR} must name a directory holding them"),
            ))
        };
    }
    let path = std::env::var_os("PATH");
    let find = || find_binaries(Path::new(DEBIAN_ROOT), path.as_deref());
    if let Ok(dir) = find() {
        return Ok(dir);
    }
    install(step)?;
    find()
}

/// [`locate`], failing with [`XtaskError::PgBinariesMissing`] when nothing is
/// found. Installs nothing.
fn find_binaries(debian_root: &Path, path: Option<&OsStr>) -> Result<PathBuf, XtaskError> {
    locate(debian_root, path).ok_or_else(|| {
        missing(
            &format!("{}/*/bin or on PATH", debian_root.display()),
            "install PostgreSQL (Debian/Ubuntu: `apt-get install postgresql`; \
             `cargo xtask test` does that itself when run as root), \
             or set LOOMFENCE_PG_URL to a server",
        )
    })
}

/// Installs the `postgresql` package with apt-get, non-interactively; fails
/// with [`XtaskError::PgBinariesMissing`] (saying what to do instead) when
/// xtask is not root or apt-get is not available.
fn install(step: &str) -> Result<(), XtaskError> {
    if !apt::is_root() {
        return Err(missing(
            &searched(),
            "install PostgreSQL (Debian/Ubuntu: `sudo apt-get install postgresql`), \
             or run this as root to have it installed, or set LOOMFENCE_PG_URL to a server",
        ));
    }
    if !apt::available() {
        return Err(missing(
            &searched(),
            "apt-get is not available to install them: install PostgreSQL's server and \
             put its bin directory on PATH, or set LOOMFENCE_PG_URL to a server",
        ));
    }
    cmd::note("PostgreSQL server binaries not found: installing the `postgresql` package");
    apt::install(step, "postgresql")
}

/// Where [`locate`] looks, for error messages.
fn searched() -> String {
    format!("{DEBIAN_ROOT}/*/bin or on PATH")
}

/// The error for binaries not found in `searched`, with advice.
fn missing(searched: &str, hint: &str) -> XtaskError {
    XtaskError::PgBinariesMissing {
        searched: searched.to_owned(),
        hint: hint.to_owned(),
    }
}

/// Finds a directory holding all of [`PROGRAMS`]: the highest version under
/// `debian_root` (`<root>/<version>/bin`), else the first directory of
/// `path` (a `PATH`-style list) that has them.
fn locate(debian_root: &Path, path: Option<&OsStr>) -> Option<PathBuf> {
    let initdbs: Vec<PathBuf> = fs::read_dir(debian_root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin").join("initdb"))
        .filter(|initdb| initdb.parent().is_some_and(is_installation))
        .collect();
    if let Some(bin) = highest_version(&initdbs) {
        return Some(bin);
    }
    let path: OsString = path.map(OsStr::to_owned).unwrap_or_default();
    std::env::split_paths(&path).find(|dir| is_installation(dir))
}

/// Whether `dir` holds all of [`PROGRAMS`].
fn is_installation(dir: &Path) -> bool {
    PROGRAMS.iter().all(|program| dir.join(program).is_file())
}

/// Of paths shaped `…/<version>/bin/initdb`, the `bin` directory with the
/// highest version, compared numerically part by part (`15` > `9.6`).
/// Paths whose version is not numeric are ignored.
fn highest_version(initdbs: &[PathBuf]) -> Option<PathBuf> {
    initdbs
        .iter()
        .filter_map(|initdb| {
            let bin = initdb.parent()?;
            let version = parse_version(bin.parent()?.file_name()?.to_str()?)?;
            Some((version, bin))
        })
        .max_by(|(a, _), (b, _)| a.cmp(b))
        .map(|(_, bin)| bin.to_path_buf())
}

/// `"15"` or `"9.6"` as comparable numbers; `None` if any part is not one.
fn parse_version(text: &str) -> Option<Vec<u64>> {
    text.split('.').map(|part| part.parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh empty directory under the system temp directory, removed by
    /// the caller.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("xtask-postgres-test.{}.{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("create scratch dir");
        dir
    }

    /// The URL names the postgres user and database on loopback.
    #[test]
    fn url_names_user_host_port_and_database() {
        assert_eq!(url(54321), "postgres://postgres@127.0.0.1:54321/postgres");
    }

    /// Passwords are hidden in both URL and key-value forms; the rest stays.
    #[test]
    fn redact_hides_passwords_only() {
        assert_eq!(
            redact("postgres://bob:s3cr:et@db.example:5432/app?sslmode=require"),
            "postgres://bob:***@db.example:5432/app?sslmode=require"
        );
        assert_eq!(
            redact("postgres://postgres@127.0.0.1:5432/postgres"),
            "postgres://postgres@127.0.0.1:5432/postgres"
        );
        assert_eq!(
            redact("postgresql://host/db?user=me"),
            "postgresql://host/db?user=me"
        );
        assert_eq!(
            redact("host=db user=me password=hunter2 dbname=app"),
            "host=db user=me password=*** dbname=app"
        );
    }

    /// Versions compare as numbers, not text: 15 beats 9.6 and 10.
    #[test]
    fn highest_version_is_numeric() {
        let paths: Vec<PathBuf> = ["9.6", "15", "10", "not-a-version"]
            .iter()
            .map(|v| PathBuf::from(format!("/usr/lib/postgresql/{v}/bin/initdb")))
            .collect();
        assert_eq!(
            highest_version(&paths),
            Some(PathBuf::from("/usr/lib/postgresql/15/bin"))
        );
        assert_eq!(
            highest_version(&paths[..1]),
            Some(PathBuf::from("/usr/lib/postgresql/9.6/bin"))
        );
        assert_eq!(highest_version(&[]), None);
        assert_eq!(highest_version(&paths[3..]), None);
    }

    /// `locate` picks the highest complete installation and ignores
    /// incomplete ones (only `initdb`); with nothing installed, it finds
    /// nothing, which is what a fresh CI machine sees.
    #[test]
    fn locate_finds_highest_complete_installation() {
        let root = scratch("locate");
        assert_eq!(locate(&root, None), None, "an empty root has nothing");
        assert_eq!(locate(&root.join("missing"), Some(OsStr::new(""))), None);
        for (version, programs) in [
            ("13", &PROGRAMS[..]),
            ("14", &PROGRAMS[..]),
            ("16", &PROGRAMS[..1]),
        ] {
            let bin = root.join(version).join("bin");
            fs::create_dir_all(&bin).expect("create bin dir");
            for program in programs {
                fs::write(bin.join(program), "").expect("create program");
            }
        }
        assert_eq!(locate(&root, None), Some(root.join("14").join("bin")));
        // Falls back to PATH when the Debian layout has nothing.
        let on_path = root.join("14").join("bin");
        let path =
            std::env::join_paths([root.join("nothing-here"), on_path.clone()]).expect("valid PATH");
        assert_eq!(locate(&root.join("missing"), Some(&path)), Some(on_path));
        fs::remove_dir_all(&root).expect("remove scratch dir");
    }

    /// Any non-empty `CI` makes a missing server an error; absent or empty
    /// means a warning.
    #[test]
    fn ci_decides_fail_or_skip() {
        assert_eq!(when_unavailable(None), Unavailable::Skip);
        assert_eq!(when_unavailable(Some(OsStr::new(""))), Unavailable::Skip);
        assert_eq!(
            when_unavailable(Some(OsStr::new("true"))),
            Unavailable::Fail
        );
        assert_eq!(when_unavailable(Some(OsStr::new("1"))), Unavailable::Fail);
    }

    /// Fast mode turns the three durability settings off; durable mode
    /// leaves PostgreSQL's defaults (all on). Both listen on loopback only.
    #[test]
    fn server_options_follow_durability() {
        let dir = Path::new("/tmp/loomfence-pg.1.0");
        let fast = server_options(5433, dir, Durability::Fast);
        assert_eq!(
            fast,
            "-c listen_addresses=127.0.0.1 -p 5433 -k /tmp/loomfence-pg.1.0 \
             -c max_connections=300 -c fsync=off -c synchronous_commit=off \
             -c full_page_writes=off"
        );
        let durable = server_options(5433, dir, Durability::Durable);
        assert!(durable.starts_with("-c listen_addresses=127.0.0.1 -p 5433 "));
        assert!(!durable.contains("fsync"), "{durable}");
        assert!(!durable.contains("synchronous_commit"), "{durable}");
        assert!(!durable.contains("full_page_writes"), "{durable}");
    }

    /// Exit codes pass through; a signal becomes 128 + its number.
    #[test]
    fn exit_value_mirrors_the_shell() {
        assert_eq!(exit_value_of(Some(0), None), 0);
        assert_eq!(exit_value_of(Some(3), None), 3);
        assert_eq!(exit_value_of(None, Some(2)), 130);
        assert_eq!(exit_value_of(Some(300), None), 1);
        assert_eq!(exit_value_of(None, None), 1);
    }

    /// A CI machine without PostgreSQL binaries (simulated by searching an
    /// empty directory and an empty PATH) fails the step with a typed error
    /// that keeps the reason; without CI the same search is a skip.
    #[test]
    fn ci_without_binaries_fails_and_local_skips() {
        let empty = scratch("empty");
        let nowhere = Some(OsStr::new(""));

        let err = settle(find_binaries(&empty, nowhere), Some(OsStr::new("true")))
            .expect_err("CI must fail without a server");
        match &err {
            XtaskError::PgRequiredInCi { source } => {
                assert!(
                    matches!(**source, XtaskError::PgBinariesMissing { .. }),
                    "{source}"
                );
            }
            other => panic!("unexpected error: {other}"),
        }
        let message = err.to_string();
        assert!(message.contains("CI is set"), "{message}");
        assert!(message.contains("initdb"), "{message}");
        assert!(message.contains(&empty.display().to_string()), "{message}");

        match settle(find_binaries(&empty, nowhere), None) {
            Ok(Outcome::Skipped(XtaskError::PgBinariesMissing { .. })) => {}
            other => panic!("expected a skip, got {other:?}"),
        }
        match settle(Ok::<_, XtaskError>("server"), Some(OsStr::new("true"))) {
            Ok(Outcome::Server("server")) => {}
            other => panic!("expected the server, got {other:?}"),
        }
        fs::remove_dir_all(&empty).expect("remove scratch dir");
    }

    /// Only bind failures count as a taken port.
    #[test]
    fn port_collision_is_recognised() {
        assert!(port_was_taken(
            "LOG:  could not bind IPv4 address \"127.0.0.1\": Address already in use"
        ));
        assert!(!port_was_taken(
            "FATAL:  data directory has wrong ownership"
        ));
    }

    /// A free port is a real, non-zero port.
    #[test]
    fn free_port_is_nonzero() {
        assert_ne!(free_port().expect("a free port"), 0);
    }
}
