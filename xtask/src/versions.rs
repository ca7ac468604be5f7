//! One version for everything published: every crate of the workspace and
//! the npm package carry the same number, and `CHANGELOG.md` has a section
//! for it. A user who reads "loomfence 0.2" gets the same code from either
//! registry, and an implementer finds what that release asks of them.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every workspace package's `(name, version)`, as cargo resolves them.
fn crate_versions() -> Vec<(String, String)> {
    let output = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "cargo metadata failed");
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata is JSON");
    metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|package| {
            let field = |key: &str| package[key].as_str().expect(key).to_owned();
            (field("name"), field("version"))
        })
        .collect()
}

/// The npm package's version, from `wasm/npm/package.json`.
fn npm_version() -> String {
    let text = fs::read_to_string(root().join("wasm/npm/package.json")).expect("package.json");
    let package: serde_json::Value = serde_json::from_str(&text).expect("package.json is JSON");
    package["version"].as_str().expect("version").to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The crates, the npm package and the changelog agree on one version.
    #[test]
    fn crates_npm_package_and_changelog_carry_one_version() {
        let npm = npm_version();
        let crates = crate_versions();
        assert!(crates.len() > 1, "no workspace packages found");
        for (name, version) in &crates {
            assert_eq!(version, &npm, "{name} is {version}, the npm package {npm}");
        }
        let changelog = fs::read_to_string(root().join("CHANGELOG.md")).expect("CHANGELOG.md");
        assert!(
            changelog.contains(&format!("## [{npm}]")),
            "CHANGELOG.md has no section for {npm}"
        );
    }
}
