//! The browser check: the package's browser entry (`browser.js`) loaded in
//! headless Chromium over HTTP, as a page of a web application loads it.
//!
//! `wasm/npm` is served by `examples/serve.mjs` on a free loopback port,
//! Chromium loads `examples/browser.html` and prints the DOM once the page
//! has settled, and the page's `#result` must read `PASS`.
//!
//! Chromium is installed with apt-get when it is missing and xtask is root
//! (Debian's `chromium` package, about 50 s). When it cannot be had, the
//! check fails in CI (`CI` set) and is skipped with a warning elsewhere, as
//! the PostgreSQL tests are.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use super::PACKAGE_DIR;
use crate::error::XtaskError;
use crate::test::Context;
use crate::{apt, cmd};

/// The browser binary (Debian's package name and path).
const CHROMIUM: &str = "chromium";

/// The page, relative to the served package folder.
const PAGE: &str = "examples/browser.html";

/// The server script, relative to the package folder.
const SERVER: &str = "examples/serve.mjs";

/// How long Chromium lets the page's virtual clock run before it dumps the
/// DOM: far more than the checks need, and virtual, so it costs nothing
/// when the page finishes early.
const BUDGET_MS: &str = "20000";

/// What the page writes when every check passed.
const PASS: &str = "<pre id=\"result\">PASS</pre>";

/// How many lines of Chromium's stderr a failure shows.
const STDERR_LINES: usize = 15;

/// Set (non-empty) by CI systems: there, a missing browser is an error.
const CI_VAR: &str = "CI";

/// Runs the check; see the module docs.
pub(crate) fn check(context: &Context<'_>) -> Result<(), XtaskError> {
    if let Err(error) = ensure_chromium(context.step) {
        if std::env::var_os(CI_VAR).is_some_and(|ci| !ci.is_empty()) {
            return Err(error);
        }
        let message = format!("no Chromium, so the browser check was SKIPPED ({error})");
        cmd::note(&message);
        context.warn_at_end(message);
        return Ok(());
    }
    let package = context.root.join(PACKAGE_DIR);
    let server = Server::start(&package)?;
    let profile = std::env::temp_dir().join(format!("loomfence-chromium.{}", std::process::id()));
    let url = format!("http://127.0.0.1:{}/{PAGE}", server.port);
    let mut chromium = Command::new(CHROMIUM);
    chromium
        .args([
            "--headless",
            // Root in a container has no user namespace for the sandbox.
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            // The machine's network is closed: no background connections.
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-quic",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--virtual-time-budget={BUDGET_MS}"))
        .arg("--dump-dom")
        .arg(&url);
    // Chromium's stderr is dbus and GPU chatter on a headless machine: kept
    // out of the log, and shown only if the check fails.
    let output = cmd::output(context.step, &mut chromium);
    let _ = std::fs::remove_dir_all(&profile);
    drop(server);
    let (output, _) = output?;
    let dom = String::from_utf8_lossy(&output.stdout);
    if dom.contains(PASS) {
        cmd::note(&format!("{url}: PASS"));
        return Ok(());
    }
    let verdict = dom
        .split("<pre id=\"result\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or("no #result in the page (did it load?)");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(STDERR_LINES).collect();
    Err(XtaskError::Browser {
        url,
        verdict: format!(
            "{verdict} (chromium exited {}; last lines of its stderr:\n{})",
            output.status,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ),
    })
}

/// Finds Chromium, installing Debian's package when it is missing and
/// xtask is root.
fn ensure_chromium(step: &str) -> Result<(), XtaskError> {
    if let Some(version) = cmd::probe(Command::new(CHROMIUM).arg("--version")) {
        cmd::note(&format!("{CHROMIUM}: already present ({version})"));
        return Ok(());
    }
    if !(apt::is_root() && apt::available()) {
        return Err(XtaskError::ToolchainStillMissing {
            what: format!(
                "{CHROMIUM} (Debian/Ubuntu: `apt-get install chromium`; \
                 `cargo xtask test` does that itself when run as root)"
            ),
        });
    }
    cmd::note(&format!(
        "{CHROMIUM} not found: installing Debian's package"
    ));
    apt::install(step, CHROMIUM)?;
    cmd::probe(Command::new(CHROMIUM).arg("--version"))
        .map(drop)
        .ok_or_else(|| XtaskError::ToolchainStillMissing {
            what: format!("{CHROMIUM} (apt-get installed it, but it does not run)"),
        })
}

/// The static server, killed on drop.
struct Server {
    /// The `node` process.
    child: Child,
    /// The port it listens on.
    port: u16,
}

impl Server {
    /// Starts `examples/serve.mjs` on `package` and waits for its port.
    fn start(package: &Path) -> Result<Self, XtaskError> {
        let script = package.join(SERVER);
        let mut child = super::node()
            .arg(&script)
            .arg(package)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(XtaskError::io(&script))?;
        let port = child
            .stdout
            .take()
            .and_then(|out| BufReader::new(out).lines().next())
            .and_then(Result::ok)
            .and_then(|line| line.strip_prefix("PORT ")?.trim().parse().ok());
        let Some(port) = port else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(XtaskError::Browser {
                url: script.display().to_string(),
                verdict: "the static server did not say its port".to_owned(),
            });
        };
        cmd::note(&format!(
            "serving {} on 127.0.0.1:{port}",
            package.display()
        ));
        Ok(Self { child, port })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
