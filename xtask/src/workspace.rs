//! Where the workspace and its build output live.
//!
//! Steps that read build products (the wasm probe, criterion results) must
//! find the *real* target directory, which `CARGO_TARGET_DIR` or
//! `build.target-dir` may have moved; asking `cargo metadata` honours all of
//! those instead of guessing `./target`.

use std::path::{Path, PathBuf};

use crate::cmd;
use crate::error::XtaskError;

/// The workspace root: the parent of this crate's directory.
///
/// Fixed at compile time so `cargo xtask …` behaves the same from any
/// subdirectory; every command is run from here.
pub(crate) fn root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// The target directory cargo will build into, as reported by
/// `cargo metadata`.
pub(crate) fn target_dir(step: &str, root: &Path) -> Result<PathBuf, XtaskError> {
    let mut command = cmd::cargo();
    command
        .current_dir(root)
        .args(["metadata", "--format-version", "1", "--no-deps"]);
    let json = cmd::capture(step, &mut command)?;
    parse_target_dir(&json)
}

/// Extracts `target_directory` from `cargo metadata` output; separate from
/// [`target_dir`] so it can be tested without running cargo.
fn parse_target_dir(json: &str) -> Result<PathBuf, XtaskError> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|err| XtaskError::Metadata {
            detail: format!("invalid JSON: {err}"),
        })?;
    value
        .get("target_directory")
        .and_then(serde_json::Value::as_str)
        .map(PathBuf::from)
        .ok_or_else(|| XtaskError::Metadata {
            detail: "no `target_directory` string in the answer".to_owned(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The field is read as-is; other fields are ignored.
    #[test]
    fn parses_target_directory() {
        let json = r#"{"packages":[],"target_directory":"/x/target","version":1}"#;
        assert_eq!(
            parse_target_dir(json).expect("valid metadata"),
            PathBuf::from("/x/target")
        );
    }

    /// A missing field is an error, not a silent default.
    #[test]
    fn rejects_metadata_without_target_directory() {
        assert!(parse_target_dir(r#"{"version":1}"#).is_err());
        assert!(parse_target_dir("not json").is_err());
    }

    /// The root is this crate's parent, i.e. the directory holding `xtask/`.
    #[test]
    fn root_contains_this_crate() {
        assert!(root().join("xtask").join("Cargo.toml").is_file());
    }
}
