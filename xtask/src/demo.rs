//! The browser demo in `www/`: `cargo xtask demo` serves it, and the
//! pipeline's `demo` step tests it in headless Chromium.
//!
//! Both run `www/serve.mjs` (Node), which serves `www/` at `/` and the npm
//! package `wasm/npm` at `/pkg/` on 127.0.0.1; the page imports
//! `/pkg/browser.js`. The test is `www/test/demo.test.mjs` (`node --test`,
//! playwright-core pinned by `www/package-lock.json`, the system Chromium).

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::SystemTime;

use anyhow::{Context as _, Result};

use crate::{cmd, npm};

/// The demo's folder, relative to the workspace root.
const WWW_DIR: &str = "www";

/// What the package's `dist/` is built from: newer than either `.wasm` means
/// rebuild before serving.
const SOURCES: [&str; 5] = [
    "core",
    "wasm/src",
    "wasm/Cargo.toml",
    "wasm/npm-tools/package-lock.json",
    "Cargo.lock",
];

/// `cargo xtask demo`: builds the package when `dist/` is missing or older
/// than its sources, then serves the demo on `port` (0: a free one) until
/// Ctrl-C, which ends the server and this command together.
pub(crate) fn serve(port: u16) -> Result<()> {
    let root = cmd::root();
    // The older of the two modules; none when either is missing.
    let built = npm::MODULES
        .iter()
        .map(|module| {
            let wasm = root.join(format!("wasm/npm/dist/{}_bg.wasm", module.stem));
            fs::metadata(wasm).and_then(|m| m.modified()).ok()
        })
        .collect::<Option<Vec<_>>>()
        .and_then(|times| times.into_iter().min());
    let newest = SOURCES
        .iter()
        .map(|source| newest_in(&root.join(source)))
        .max()
        .flatten();
    match (built, newest) {
        (Some(built), Some(newest)) if built >= newest => {
            cmd::note("wasm/npm/dist is up to date with its sources");
        }
        (None, _) => {
            cmd::note("wasm/npm/dist is missing: building the package");
            npm::run()?;
        }
        _ => {
            cmd::note("wasm/npm/dist is older than its sources: rebuilding the package");
            npm::run()?;
        }
    }
    let mut server = Command::new("node");
    server
        .arg(root.join(WWW_DIR).join("serve.mjs"))
        .args(["--port", &port.to_string()]);
    cmd::note("serving the demo until Ctrl-C");
    cmd::run(&mut server)
}

/// The newest modification time of a file, or of any file under a folder.
fn newest_in(path: &Path) -> Option<SystemTime> {
    let meta = fs::metadata(path).ok()?;
    if !meta.is_dir() {
        return meta.modified().ok();
    }
    fs::read_dir(path)
        .ok()?
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name() != "target")
        .filter_map(|entry| newest_in(&entry.path()))
        .max()
}

/// The pipeline's `demo` step, after `npm-build`: `npm ci` in `www/`, then
/// its Chromium test, which saves `target/demo/demo.png`. A missing Chromium
/// fails in CI and is skipped with a warning elsewhere, as the package's
/// browser check is.
pub(crate) fn test(warnings: &mut Vec<String>) -> Result<()> {
    if let Err(err) = npm::ensure_chromium() {
        if cmd::is_ci() {
            return Err(err.context("CI is set, so the demo's browser test may not be skipped"));
        }
        let warning = format!("no Chromium, the demo's browser test was SKIPPED: {err:#}");
        cmd::note(&format!("WARNING: {warning}"));
        warnings.push(warning);
        return Ok(());
    }
    let dir = cmd::root().join(WWW_DIR);
    let mut install = Command::new("npm");
    install
        .current_dir(&dir)
        .args(["ci", "--prefer-offline", "--no-audit", "--no-fund"])
        .stdout(std::io::stderr());
    cmd::run(&mut install)?;
    let screenshot = cmd::target_dir()?.join("demo/demo.png");
    let mut test = Command::new("node");
    test.current_dir(&dir)
        .args(["--test", "test/"])
        .env("DEMO_SCREENSHOT", &screenshot);
    cmd::run(&mut test).context("the demo's Chromium test (www/test/demo.test.mjs)")?;
    cmd::note(&format!("screenshot: {}", screenshot.display()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The demo's files are where xtask looks for them, and a folder's
    /// newest time is at least any of its files'.
    #[test]
    fn demo_files_and_source_times() {
        let root = cmd::root();
        for file in [
            "index.html",
            "serve.mjs",
            "test/demo.test.mjs",
            "package-lock.json",
        ] {
            assert!(root.join(WWW_DIR).join(file).is_file(), "{file}");
        }
        let lib = newest_in(&root.join("core/src/lib.rs")).expect("core/src/lib.rs");
        assert!(newest_in(&root.join("core")).expect("core") >= lib);
        assert_eq!(newest_in(&root.join("no-such-folder")), None);
    }
}
