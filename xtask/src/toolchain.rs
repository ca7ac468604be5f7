//! The Rust side of the toolchain: rustup's pieces, wasm-bindgen-cli at the
//! version `Cargo.lock` pins, and the `rust-version` floor.

use std::process::Command;

use anyhow::{Context as _, Result, bail};

use crate::cmd;

/// The target the wasm crates compile to.
pub(crate) const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// Installs rustfmt, clippy and [`WASM_TARGET`]; rustup skips what is
/// already there in well under a second. It inherits `RUSTUP_TOOLCHAIN`
/// from the cargo that started xtask, so it changes the toolchain in use.
pub(crate) fn ensure_rustup_pieces() -> Result<()> {
    cmd::run(Command::new("rustup").args(["component", "add", "rustfmt", "clippy"]))?;
    cmd::run(Command::new("rustup").args(["target", "add", WASM_TARGET]))
}

/// Makes `wasm-bindgen` and `wasm-bindgen-test-runner` on `PATH` exactly
/// the version of the `wasm-bindgen` crate in `Cargo.lock` (the CLI refuses
/// a module built by another: "schema version … must exactly match"),
/// installing wasm-bindgen-cli when one is missing or another version.
///
/// Installs WITHOUT `--locked`: the CLI's own lockfile pins a crate version
/// the registry no longer serves. About two minutes on a fresh machine.
pub(crate) fn ensure_wasm_bindgen() -> Result<()> {
    let lockfile = cmd::root().join("Cargo.lock");
    let lock =
        std::fs::read_to_string(&lockfile).with_context(|| lockfile.display().to_string())?;
    let version = locked_version(&lock, "wasm-bindgen")?;
    let stale = || {
        ["wasm-bindgen", "wasm-bindgen-test-runner"]
            .into_iter()
            .filter(|program| {
                let answer = cmd::probe(Command::new(program).arg("--version"));
                answer.as_deref() != Some(&format!("{program} {version}"))
            })
            .collect::<Vec<_>>()
    };
    if stale().is_empty() {
        cmd::note(&format!("wasm-bindgen-cli {version}: already present"));
        return Ok(());
    }
    cmd::run(cmd::cargo().args(["install", "wasm-bindgen-cli", "--version", &version]))?;
    let still = stale();
    if !still.is_empty() {
        bail!(
            "{} {version} still missing after installing it: is cargo's bin on PATH?",
            still.join(", ")
        );
    }
    Ok(())
}

/// The one version of package `name` in a `Cargo.lock`'s text, where cargo
/// always writes `name = "…"` with `version = "…"` on the next line.
fn locked_version(lock: &str, name: &str) -> Result<String> {
    let key = format!("name = \"{name}\"\nversion = \"");
    let versions: Vec<&str> = lock
        .match_indices(&key)
        .filter_map(|(at, _)| lock[at + key.len()..].split('"').next())
        .collect();
    match versions[..] {
        [version] => Ok(version.to_owned()),
        [] => bail!("Cargo.lock: no `{name}` package is locked"),
        _ => bail!(
            "Cargo.lock: `{name}` is locked at several versions ({})",
            versions.join(", ")
        ),
    }
}

/// The `rust-version` step. Only one toolchain is installed on the build
/// machines, so the declared floor cannot be proven by building with it;
/// what can be proven is that no resolved dependency declares a newer one.
pub(crate) fn check_rust_version() -> Result<()> {
    let json = cmd::capture(cmd::cargo().args(["metadata", "--format-version", "1", "--locked"]))?;
    let (floor, offenders) = rust_version_offenders(&json)?;
    if !offenders.is_empty() {
        bail!(
            "rust-version {floor} is below what dependencies need: {}",
            offenders.join(", ")
        );
    }
    cmd::note(&format!(
        "every dependency builds on the declared rust-version {floor}"
    ));
    Ok(())
}

/// From `cargo metadata` output: the workspace members' floor and every
/// package (as `name version needs X`) that declares a higher one.
fn rust_version_offenders(json: &str) -> Result<(String, Vec<String>)> {
    /// `"1.85"` or `"1.85.0"` as a comparable triple.
    fn parse(version: &str) -> [u64; 3] {
        let mut parts = version.split('.').map(|part| part.parse().unwrap_or(0));
        [(); 3].map(|()| parts.next().unwrap_or(0))
    }
    let value: serde_json::Value = serde_json::from_str(json).context("cargo metadata")?;
    let packages = value["packages"]
        .as_array()
        .context("cargo metadata: no packages")?;
    let members = value["workspace_members"]
        .as_array()
        .context("cargo metadata: no members")?;
    let floor = packages
        .iter()
        .filter(|package| members.contains(&package["id"]))
        .filter_map(|package| package["rust_version"].as_str())
        .max_by_key(|version| parse(version))
        .context("no workspace member declares rust-version")?;
    let offenders = packages
        .iter()
        .filter_map(|package| {
            let needs = package["rust_version"].as_str()?;
            let (name, version) = (&package["name"], &package["version"]);
            (parse(needs) > parse(floor)).then(|| format!("{name} {version} needs {needs}"))
        })
        .collect();
    Ok((floor.to_owned(), offenders))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact name's version, not a longer name's; none or two is an
    /// error; the workspace's own lockfile pins exactly one wasm-bindgen.
    #[test]
    fn finds_the_locked_version() {
        let lock = "[[package]]\nname = \"serde-wasm-bindgen\"\nversion = \"0.6.5\"\n\n\
            [[package]]\nname = \"wasm-bindgen\"\nversion = \"0.2.130\"\n";
        assert_eq!(
            locked_version(lock, "wasm-bindgen").expect("locked"),
            "0.2.130"
        );
        assert!(locked_version(lock, "js-sys").is_err());
        let twice = format!("{lock}\n[[package]]\nname = \"wasm-bindgen\"\nversion = \"0.2.99\"\n");
        let err = locked_version(&twice, "wasm-bindgen").expect_err("two versions");
        assert!(err.to_string().contains("0.2.130, 0.2.99"), "{err}");
        let lock = std::fs::read_to_string(cmd::root().join("Cargo.lock")).expect("Cargo.lock");
        assert!(locked_version(&lock, "wasm-bindgen").is_ok());
    }

    /// A dependency above the members' floor is named; one at it is not.
    #[test]
    fn names_dependencies_above_the_floor() {
        let json = r#"{"workspace_members":["a"],"packages":[
            {"id":"a","name":"a","version":"0.1.0","rust_version":"1.85"},
            {"id":"b","name":"b","version":"2.0.0","rust_version":"1.85.0"},
            {"id":"c","name":"c","version":"0.3.0","rust_version":"1.88.0"},
            {"id":"d","name":"d","version":"1.0.0","rust_version":null}]}"#;
        let (floor, offenders) = rust_version_offenders(json).expect("valid metadata");
        assert_eq!(floor, "1.85");
        assert_eq!(offenders, [r#""c" "0.3.0" needs 1.88.0"#]);
    }
}
