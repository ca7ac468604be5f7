//! Building the package's `dist/`: the wasm crate compiled for the web,
//! wasm-bindgen's glue, then `wasm-opt -Oz`.
//!
//! The equivalent by hand, from the workspace root:
//!
//! ```text
//! cargo build --locked -p loomfence-wasm --target wasm32-unknown-unknown --profile wasm-release
//! wasm-bindgen target/wasm32-unknown-unknown/wasm-release/loomfence_wasm.wasm \
//!     --target web --no-typescript --out-dir wasm/npm/dist --out-name loomfence_wasm
//! wasm/npm-tools/node_modules/.bin/wasm-opt -Oz <features> \
//!     wasm/npm/dist/loomfence_wasm_bg.wasm -o wasm/npm/dist/loomfence_wasm_bg.wasm
//! ```

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::size::{self, SizeReport};
use super::{PACKAGE_DIR, WASM_PACKAGE, npm_tools};
use crate::error::XtaskError;
use crate::test::Context;
use crate::toolchain::WASM_TARGET;

/// The cargo profile (in the workspace `Cargo.toml`) for the package's
/// `.wasm`: optimised for size, no unwinding.
const PROFILE: &str = "wasm-release";

/// The file cargo writes for [`WASM_PACKAGE`] (`-` becomes `_`).
const CARGO_OUTPUT: &str = "loomfence_wasm.wasm";

/// wasm-bindgen's `--out-name`: the entry points import
/// `./dist/loomfence_wasm.js` and read `./dist/loomfence_wasm_bg.wasm`.
const OUT_NAME: &str = "loomfence_wasm";

/// The generated folder inside [`PACKAGE_DIR`]; ignored by git, listed in
/// the package's `files`.
const DIST: &str = "dist";

/// Builds `wasm/npm/dist` from scratch and returns the `.wasm`'s sizes
/// before and after `wasm-opt`.
///
/// wasm-bindgen runs without TypeScript output: the package's `index.d.ts`
/// is hand-written. `dist` is emptied first so that no file of an earlier
/// build (a renamed snippet, say) can slip into the package.
pub(crate) fn package(context: &Context<'_>, wasm_opt: &Path) -> Result<SizeReport, XtaskError> {
    let mut build = context.cargo();
    build.args([
        "build",
        "--locked",
        "-p",
        WASM_PACKAGE,
        "--target",
        WASM_TARGET,
        "--profile",
        PROFILE,
    ]);
    context.run(&mut build)?;

    let root = context.root;
    let input = crate::workspace::target_dir(context.step, root)?
        .join(WASM_TARGET)
        .join(PROFILE)
        .join(CARGO_OUTPUT);
    let dist = Path::new(PACKAGE_DIR).join(DIST);
    clear(&root.join(&dist))?;

    let mut bindgen = Command::new("wasm-bindgen");
    bindgen
        .current_dir(root)
        .arg(relative(root, &input))
        .args(["--target", "web", "--no-typescript", "--out-dir"])
        .arg(&dist)
        .args(["--out-name", OUT_NAME]);
    context.run(&mut bindgen)?;

    let wasm = dist.join(format!("{OUT_NAME}_bg.wasm"));
    let generated = size::measure(&root.join(&wasm))?;
    npm_tools::optimise(context.step, root, wasm_opt, &wasm)?;
    let optimised = size::measure(&root.join(&wasm))?;
    Ok(SizeReport {
        generated,
        optimised,
    })
}

/// Deletes `dir` and everything in it, if it exists.
fn clear(dir: &Path) -> Result<(), XtaskError> {
    match std::fs::remove_dir_all(dir) {
        Err(err) if err.kind() != ErrorKind::NotFound => Err(XtaskError::io(dir)(err)),
        _ => Ok(()),
    }
}

/// `path` relative to `root` when it is inside it, so echoed command lines
/// stay short and can be pasted from the workspace root.
fn relative(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root).unwrap_or(path).to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Paths inside the root are shown relative; others unchanged.
    #[test]
    fn relative_strips_the_root_only() {
        let root = Path::new("/work/main");
        assert_eq!(
            relative(root, Path::new("/work/main/target/x.wasm")),
            Path::new("target/x.wasm")
        );
        assert_eq!(
            relative(root, Path::new("/elsewhere/x.wasm")),
            Path::new("/elsewhere/x.wasm")
        );
    }

    /// The glue file the entry points import is the one wasm-bindgen
    /// writes under [`OUT_NAME`].
    #[test]
    fn entry_points_import_the_generated_names() {
        let package = crate::workspace::root().join(PACKAGE_DIR);
        for entry in ["index.js", "browser.js"] {
            let source = std::fs::read_to_string(package.join(entry)).expect("entry point");
            assert!(
                source.contains(&format!("./{DIST}/{OUT_NAME}.js")),
                "{entry} must import ./{DIST}/{OUT_NAME}.js"
            );
            assert!(
                source.contains(&format!("./{DIST}/{OUT_NAME}_bg.wasm")),
                "{entry} must load ./{DIST}/{OUT_NAME}_bg.wasm"
            );
        }
    }
}
