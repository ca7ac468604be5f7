//! How long the workers took to catch up, read from their logs: every
//! start and restart of a worker logs one `rebuilt` line (JSON, from
//! `--log-json`) with `since_start_ms`, the time from the process's start
//! to the end of its first full listing and the supervisions it began.
//! Every incarnation appends to its worker's log, so the logs hold every
//! start.

use std::path::Path;

use serde_json::Value;

use crate::error::CliError;

/// The message of a worker's rebuild line.
const REBUILT: &str = "rebuilt";

/// The rebuilds the logs in `dir` record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Rebuilds {
    /// Rebuilds logged (one per worker start that got that far).
    pub(crate) count: u64,
    /// The slowest, ms from the worker's start.
    pub(crate) slowest_ms: u64,
}

/// Reads every `worker-*.log` in `dir`.
pub(crate) fn read(dir: &Path) -> Result<Rebuilds, CliError> {
    let failed = CliError::io(format!("reading the worker logs in {}", dir.display()));
    let mut rebuilds = Rebuilds::default();
    for entry in std::fs::read_dir(dir).map_err(failed)? {
        let path = entry
            .map_err(CliError::io(format!("listing {}", dir.display())))?
            .path();
        let is_log = path
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| name.starts_with("worker-") && name.ends_with(".log"));
        if !is_log {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .map_err(CliError::io(format!("reading {}", path.display())))?;
        for ms in text.lines().filter_map(rebuild_ms) {
            rebuilds.count += 1;
            rebuilds.slowest_ms = rebuilds.slowest_ms.max(ms);
        }
    }
    Ok(rebuilds)
}

/// The `since_start_ms` of a worker's rebuild line; `None` for any other
/// line (a worker killed mid-line leaves half a line, which is skipped).
fn rebuild_ms(line: &str) -> Option<u64> {
    let line: Value = serde_json::from_str(line).ok()?;
    let fields = line.get("fields")?;
    if fields.get("message")?.as_str()? != REBUILT {
        return None;
    }
    fields.get("since_start_ms")?.as_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_rebuild_lines_count_and_the_slowest_is_kept() {
        let dir = std::env::temp_dir().join(format!("loomfence-rebuilds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let line = |ms: u64| {
            format!(
                r#"{{"level":"INFO","fields":{{"message":"rebuilt","elapsed_ms":1,"since_start_ms":{ms}}}}}"#
            )
        };
        let other =
            r#"{"level":"INFO","fields":{"message":"worker started","since_start_ms":9999}}"#;
        std::fs::write(
            dir.join("worker-0.log"),
            format!("{}\n{other}\n{}\n{{\"trunc", line(12), line(40)),
        )
        .unwrap();
        std::fs::write(dir.join("worker-1.log"), format!("{}\n", line(25))).unwrap();
        std::fs::write(dir.join("notes.txt"), line(5000)).unwrap();
        let found = read(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            found.unwrap(),
            Rebuilds {
                count: 3,
                slowest_ms: 40
            }
        );
    }
}
