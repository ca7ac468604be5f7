//! The JavaScript test suites in `tests/conformance-js`: `*.test.js` files
//! run by `node --test` against the package, which that folder's
//! `package.json` depends on as `"loomfence": "file:../../wasm/npm"` (so
//! they test the `dist/` just built).

use std::path::Path;

use crate::error::XtaskError;
use crate::test::Context;

/// The suites' folder, relative to the workspace root.
const SUITES_DIR: &str = "tests/conformance-js";

/// Installs the folder's dependencies, then runs `node --test` there; fails
/// when a test fails.
///
/// With a `package-lock.json` the install is `npm ci` (exactly what is
/// locked); without one it is `npm install --no-package-lock`, which leaves
/// no lockfile behind in the work tree. A folder without `package.json` is
/// an error: the suites are part of the pipeline, never skipped.
pub(crate) fn run(context: &Context<'_>) -> Result<(), XtaskError> {
    let dir = context.root.join(SUITES_DIR);
    if !dir.join("package.json").is_file() {
        return Err(XtaskError::NpmPack {
            detail: format!("{SUITES_DIR} has no package.json: the JS suites cannot run"),
        });
    }
    let mut install = super::npm();
    install
        .current_dir(&dir)
        .args(install_args(&dir))
        .args(["--no-audit", "--no-fund"]);
    context.run(&mut install)?;
    let mut test = super::node();
    test.current_dir(&dir).arg("--test");
    context.run(&mut test)
}

/// `npm ci` when the folder has a lockfile, else an install that writes
/// none.
fn install_args(dir: &Path) -> &'static [&'static str] {
    if dir.join("package-lock.json").is_file() {
        &["ci"]
    } else {
        &["install", "--no-package-lock"]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lockfile switches the install to `npm ci`.
    #[test]
    fn lockfile_decides_ci_or_install() {
        let dir = std::env::temp_dir().join(format!("xtask-js-suites-test.{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        let without = install_args(&dir);
        std::fs::write(dir.join("package-lock.json"), "{}").expect("write lockfile");
        let with = install_args(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(without, ["install", "--no-package-lock"]);
        assert_eq!(with, ["ci"]);
    }
}
