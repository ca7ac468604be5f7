//! The pack smoke test: the package as a user gets it.
//!
//! `npm pack` makes the tarball that `npm publish` would upload; it is
//! installed into a new, empty npm project in a temporary folder, where
//! `examples/smoke.mjs` (`import`), `examples/smoke.cjs` (`require`) and the
//! README's Node example run against it, and `examples/types.ts` and
//! `types.cts` are type-checked against its `index.d.ts` with `tsc
//! --strict`. This catches what tests of the work tree cannot: a file
//! missing from the package's `files`, an entry point that only works
//! beside the sources, types that do not match the API, a README example
//! that does not run as written.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::{PACKAGE_DIR, readme_example};
use crate::cmd;
use crate::error::XtaskError;
use crate::test::Context;

/// The package's examples folder, inside [`PACKAGE_DIR`].
const EXAMPLES_DIR: &str = "examples";

/// The examples run against the installed package, each with `node`.
const EXAMPLES: &[&str] = &["smoke.mjs", "smoke.cjs"];

/// The TypeScript files type-checked against the installed package.
const TYPED_EXAMPLES: &[&str] = &["types.ts", "types.cts"];

/// How they are checked: strict, resolved as Node resolves the package
/// (its `exports` map, `import` and `require` conditions).
const TSC_ARGS: &[&str] = &[
    "--noEmit",
    "--strict",
    "--module",
    "nodenext",
    "--moduleResolution",
    "nodenext",
    "--target",
    "es2022",
    "--lib",
    "es2022",
];

/// The README whose Node example is run.
const README: &str = "README.md";

/// The name the README's example is saved under in the project: `.mjs`,
/// so it runs as an ES module whatever the project's `type`.
const README_EXAMPLE_FILE: &str = "readme-example.mjs";

/// Prefix of the temporary folders, so leftovers are easy to find.
const SCRATCH_PREFIX: &str = "loomfence-npm-smoke.";

/// Packs the package, installs the tarball in an empty project and runs the
/// examples there.
pub(crate) fn smoke(context: &Context<'_>) -> Result<(), XtaskError> {
    let package = context.root.join(PACKAGE_DIR);
    let scratch = Scratch::create()?;
    let tarballs = scratch.subdir("pack")?;
    // Not named after the package: npm refuses to install a package into a
    // project of the same name.
    let project = scratch.subdir("project")?;

    let packed = pack(context.step, &package, &tarballs)?;
    cmd::note(&format!(
        "packed {} ({} files)",
        packed.filename,
        packed.files.len()
    ));
    let missing = missing_files(&declared_files(&package)?, &packed.files);
    if !missing.is_empty() {
        return Err(XtaskError::NpmPack {
            detail: format!(
                "{PACKAGE_DIR}/package.json lists files the tarball lacks: {}",
                missing.join(", ")
            ),
        });
    }

    let mut init = super::npm_capture();
    init.current_dir(&project).args(["init", "-y"]);
    cmd::run_quiet(context.step, &mut init)?;
    let mut install = super::npm();
    install
        .current_dir(&project)
        .arg("install")
        .arg(tarballs.join(&packed.filename))
        .args(["--no-audit", "--no-fund"]);
    context.run(&mut install)?;

    for example in EXAMPLES {
        let source = package.join(EXAMPLES_DIR).join(example);
        let copy = project.join(example);
        fs::copy(&source, &copy).map_err(XtaskError::io(source))?;
        run_node(context, &project, example)?;
    }
    for example in TYPED_EXAMPLES {
        let source = package.join(EXAMPLES_DIR).join(example);
        fs::copy(&source, project.join(example)).map_err(XtaskError::io(source))?;
    }
    let mut tsc = std::process::Command::new(super::npm_tools::tsc(context.root));
    tsc.current_dir(&project)
        .args(TSC_ARGS)
        .args(TYPED_EXAMPLES);
    context.run(&mut tsc)?;
    run_readme_example(context, &project)
}

/// Runs the README's example in `project`. A README without it fails: the
/// example is part of what the package promises.
fn run_readme_example(context: &Context<'_>, project: &Path) -> Result<(), XtaskError> {
    let readme = context.root.join(README);
    let text = fs::read_to_string(&readme).map_err(XtaskError::io(&readme))?;
    match readme_example::extract(&text) {
        Ok(Some(code)) => {
            let file = project.join(README_EXAMPLE_FILE);
            fs::write(&file, code).map_err(XtaskError::io(file))?;
            run_node(context, project, README_EXAMPLE_FILE)
        }
        Ok(None) => Err(XtaskError::ReadmeExample {
            readme,
            detail: format!(
                "no `{}` line: the Node example the package promises is missing",
                readme_example::MARKER
            ),
        }),
        Err(detail) => Err(XtaskError::ReadmeExample { readme, detail }),
    }
}

/// Runs `node <file>` in `project`.
fn run_node(context: &Context<'_>, project: &Path, file: &str) -> Result<(), XtaskError> {
    let mut node = super::node();
    node.current_dir(project).arg(file);
    context.run(&mut node)
}

/// What `npm pack` made.
#[derive(Debug, PartialEq, Eq)]
struct Packed {
    /// The tarball's file name, in the pack destination.
    filename: String,
    /// Every file in it, relative to the package folder.
    files: Vec<String>,
}

/// Runs `npm pack --json` in `package`, writing the tarball into `into`.
fn pack(step: &str, package: &Path, into: &Path) -> Result<Packed, XtaskError> {
    let mut pack = super::npm_capture();
    pack.current_dir(package)
        .args(["pack", "--json", "--pack-destination"])
        .arg(into);
    cmd::note(&format!("$ {}", cmd::describe(&pack)));
    parse_pack(&cmd::capture(step, &mut pack)?)
}

/// Reads `npm pack --json`'s answer: an array with one object per package.
fn parse_pack(json: &str) -> Result<Packed, XtaskError> {
    let invalid = |detail: String| XtaskError::NpmPack { detail };
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|err| invalid(format!("invalid JSON: {err}")))?;
    let entry = value
        .as_array()
        .and_then(|entries| entries.first())
        .ok_or_else(|| invalid("expected an array with one package".to_owned()))?;
    let filename = entry["filename"]
        .as_str()
        .ok_or_else(|| invalid("no `filename`".to_owned()))?;
    let files = entry["files"]
        .as_array()
        .ok_or_else(|| invalid("no `files` array".to_owned()))?
        .iter()
        .filter_map(|file| file["path"].as_str().map(str::to_owned))
        .collect();
    Ok(Packed {
        // Some npm versions answer with a path; only the name is needed.
        filename: Path::new(filename).file_name().map_or_else(
            || filename.to_owned(),
            |name| name.to_string_lossy().into_owned(),
        ),
        files,
    })
}

/// The `files` entries of the package's `package.json`.
fn declared_files(package: &Path) -> Result<Vec<String>, XtaskError> {
    let path = package.join("package.json");
    let text = fs::read_to_string(&path).map_err(XtaskError::io(&path))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|err| XtaskError::NpmPack {
            detail: format!("{}: invalid JSON: {err}", path.display()),
        })?;
    Ok(value["files"]
        .as_array()
        .map(|files| {
            files
                .iter()
                .filter_map(|file| file.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default())
}

/// The `declared` entries that match nothing in `packed`: a file by its
/// exact path, a folder (ending in `/`) by any file under it. Glob patterns
/// are not checked.
fn missing_files(declared: &[String], packed: &[String]) -> Vec<String> {
    declared
        .iter()
        .filter(|entry| !entry.contains(['*', '?', '[']))
        .filter(|entry| {
            let entry = entry.trim_start_matches("./");
            if entry.ends_with('/') {
                !packed.iter().any(|file| file.starts_with(entry))
            } else {
                !packed.iter().any(|file| file == entry)
            }
        })
        .cloned()
        .collect()
}

/// A new temporary folder, deleted with everything in it when dropped.
struct Scratch {
    /// The folder.
    path: PathBuf,
}

impl Scratch {
    /// Creates a new, empty `loomfence-npm-smoke.*` folder in the system
    /// temporary directory.
    fn create() -> Result<Self, XtaskError> {
        let parent = std::env::temp_dir();
        let pid = std::process::id();
        let mut attempt: u32 = 0;
        loop {
            let path = parent.join(format!("{SCRATCH_PREFIX}{pid}.{attempt}"));
            match fs::create_dir(&path) {
                Ok(()) => return Ok(Self { path }),
                // A leftover of an earlier process with the same id.
                Err(err) if err.kind() == ErrorKind::AlreadyExists && attempt < 1000 => {
                    attempt += 1;
                }
                Err(err) => return Err(XtaskError::io(path)(err)),
            }
        }
    }

    /// Creates the folder `name` inside the scratch folder.
    fn subdir(&self, name: &str) -> Result<PathBuf, XtaskError> {
        let path = self.path.join(name);
        fs::create_dir(&path).map_err(XtaskError::io(&path))?;
        Ok(path)
    }
}

impl Drop for Scratch {
    /// Deletes the folder; best effort, as a leftover in the temporary
    /// directory harms nothing.
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape npm 11 answers with.
    const PACK_JSON: &str = r#"[
      {
        "id": "loomfence@0.1.0",
        "name": "loomfence",
        "filename": "loomfence-0.1.0.tgz",
        "files": [
          { "path": "browser.js", "size": 834, "mode": 420 },
          { "path": "dist/loomfence_wasm_bg.wasm", "size": 171011, "mode": 420 },
          { "path": "dist/snippets/loomfence-wasm-d808aa10660c1e5f/js/errors.js", "size": 3002, "mode": 420 },
          { "path": "package.json", "size": 1014, "mode": 420 }
        ]
      }
    ]"#;

    /// The tarball's name and every file are read.
    #[test]
    fn parses_npm_pack_json() {
        let packed = parse_pack(PACK_JSON).expect("valid answer");
        assert_eq!(packed.filename, "loomfence-0.1.0.tgz");
        assert_eq!(packed.files.len(), 4);
        assert_eq!(packed.files[1], "dist/loomfence_wasm_bg.wasm");
    }

    /// Anything else is an error, not a guess.
    #[test]
    fn rejects_unexpected_pack_answers() {
        for json in [
            "",
            "{}",
            "[]",
            r#"[{"files": []}]"#,
            r#"[{"filename": "x.tgz"}]"#,
        ] {
            assert!(
                matches!(parse_pack(json), Err(XtaskError::NpmPack { .. })),
                "{json:?}"
            );
        }
    }

    /// Files match exactly, folders by prefix; globs are not judged.
    #[test]
    fn missing_files_are_found() {
        let packed = parse_pack(PACK_JSON).expect("valid answer").files;
        let declared: Vec<String> = [
            "browser.js",
            "./dist/loomfence_wasm_bg.wasm",
            "dist/snippets/",
            "index.d.ts",
            "docs/",
            "*.md",
        ]
        .map(str::to_owned)
        .to_vec();
        assert_eq!(missing_files(&declared, &packed), ["index.d.ts", "docs/"]);
    }

    /// Every example the smoke test runs is in the package's examples
    /// folder.
    #[test]
    fn examples_exist() {
        let dir = crate::workspace::root()
            .join(PACKAGE_DIR)
            .join(EXAMPLES_DIR);
        for example in EXAMPLES.iter().chain(TYPED_EXAMPLES) {
            assert!(dir.join(example).is_file(), "missing {example}");
        }
    }

    /// The scratch folder is created empty and removed on drop.
    #[test]
    fn scratch_is_removed_on_drop() {
        let scratch = Scratch::create().expect("temporary folder");
        let path = scratch.path.clone();
        let inner = scratch.subdir("inner").expect("subfolder");
        fs::write(inner.join("file"), "x").expect("write");
        drop(scratch);
        assert!(!path.exists());
    }
}
