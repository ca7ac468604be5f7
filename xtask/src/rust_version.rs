//! The `rust-version` step: the workspace's declared minimum Rust must not be
//! lower than what any resolved dependency declares.
//!
//! Only one toolchain can be installed on the build machines, so the floor
//! cannot be proven by building with it. This check is the part that can be
//! proven: a dependency that declares a newer `rust-version` than ours makes
//! our declaration a lie, and this step fails on it.

use crate::error::XtaskError;
use crate::test::Context;

/// Compares every resolved package's `rust_version` with the workspace
/// members' own.
pub(crate) fn step(context: &Context<'_>) -> Result<(), XtaskError> {
    let mut command = context.cargo();
    command.args(["metadata", "--format-version", "1", "--locked"]);
    let json = crate::cmd::capture(context.step, &mut command)?;
    let (floor, offenders) = check(&json)?;
    if offenders.is_empty() {
        crate::cmd::note(&format!(
            "every dependency builds on the declared rust-version {floor}"
        ));
        Ok(())
    } else {
        Err(XtaskError::RustVersionFloor {
            floor,
            offenders: offenders.join(", "),
        })
    }
}

/// Parses `cargo metadata` output; returns the workspace floor and every
/// package (as `name version needs X`) whose own floor is higher.
fn check(json: &str) -> Result<(String, Vec<String>), XtaskError> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|err| XtaskError::Metadata {
            detail: format!("invalid JSON: {err}"),
        })?;
    let packages = value["packages"]
        .as_array()
        .ok_or_else(|| XtaskError::Metadata {
            detail: "no `packages` array".to_owned(),
        })?;
    let members: Vec<&str> = value["workspace_members"]
        .as_array()
        .map(|ids| ids.iter().filter_map(serde_json::Value::as_str).collect())
        .unwrap_or_default();
    let floor = packages
        .iter()
        .filter(|p| members.contains(&p["id"].as_str().unwrap_or_default()))
        .filter_map(|p| p["rust_version"].as_str())
        .max_by_key(|v| parse(v))
        .ok_or_else(|| XtaskError::Metadata {
            detail: "no workspace member declares rust-version".to_owned(),
        })?
        .to_owned();
    let offenders = packages
        .iter()
        .filter_map(|p| {
            let needs = p["rust_version"].as_str()?;
            (parse(needs) > parse(&floor)).then(|| {
                format!(
                    "{} {} needs {needs}",
                    p["name"].as_str().unwrap_or("?"),
                    p["version"].as_str().unwrap_or("?")
                )
            })
        })
        .collect();
    Ok((floor, offenders))
}

/// `"1.85"` or `"1.85.0"` as a comparable triple; unparsable parts count as 0.
fn parse(version: &str) -> (u64, u64, u64) {
    let mut parts = version.split('.').map(|p| p.parse().unwrap_or(0));
    (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dependency above the members' floor is named; one at it is not.
    #[test]
    fn names_dependencies_above_the_floor() {
        let json = r#"{"workspace_members":["a"],"packages":[
            {"id":"a","name":"a","version":"0.1.0","rust_version":"1.85"},
            {"id":"b","name":"b","version":"2.0.0","rust_version":"1.85.0"},
            {"id":"c","name":"c","version":"0.3.0","rust_version":"1.88.0"},
            {"id":"d","name":"d","version":"1.0.0","rust_version":null}]}"#;
        let (floor, offenders) = check(json).expect("valid metadata");
        assert_eq!(floor, "1.85");
        assert_eq!(offenders, ["c 0.3.0 needs 1.88.0"]);
    }
}
