//! `loomfence retention`'s options after validation.
//!
//! As for the other commands, everything that can be refused before the
//! sweep starts is refused here, with one `error: …` line and exit code 2.

use std::path::PathBuf;
use std::time::Duration;

use loomfence_core::retention::{SweepOptions, check_page_limit};
use loomfence_postgres::Schema;

use crate::error::CliError;
use crate::store::{KeptStore, StoreArg};

/// The page size when `--page-limit` is not given: the core's default, as
/// the npm package's `sweep` has it.
pub(crate) const DEFAULT_PAGE_LIMIT: u32 = SweepOptions::DEFAULT_PAGE_LIMIT;

/// The options as typed, before the checks clap cannot do.
#[derive(Clone, Debug)]
pub(crate) struct RawRetention {
    /// `--store`, unparsed.
    pub(crate) store: String,
    /// `--schema`, if given.
    pub(crate) schema: Option<String>,
    /// `--older-than`, unparsed.
    pub(crate) older_than: String,
    /// `--archive`, if given.
    pub(crate) archive: Option<PathBuf>,
    /// `--dry-run`.
    pub(crate) dry_run: bool,
    /// `--page-limit`.
    pub(crate) page_limit: u32,
    /// `--json`.
    pub(crate) json: bool,
}

/// Everything a sweep from the command line needs to know, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RetentionSettings {
    /// The existing store.
    pub(crate) store: StoreArg,
    /// `--schema` (PostgreSQL only); `None` is the adapter's default.
    pub(crate) schema: Option<Schema>,
    /// How long ago an execution must have ended to be swept.
    pub(crate) older_than: Duration,
    /// `--older-than` as typed, for the summary.
    pub(crate) older_than_text: String,
    /// Where logs go before their delete.
    pub(crate) archive: Option<PathBuf>,
    /// Change nothing, report what would be done.
    pub(crate) dry_run: bool,
    /// Executions per listing page.
    pub(crate) page_limit: u32,
    /// One JSON object on stdout instead of the summary.
    pub(crate) json: bool,
}

impl RawRetention {
    /// Checks every option; the store must exist (see
    /// [`StoreArg::existing`]).
    pub(crate) fn validate(self) -> Result<RetentionSettings, CliError> {
        let older_than = parse_older_than(&self.older_than)?;
        check_page_limit(self.page_limit).map_err(|e| CliError::bad_value("page-limit", &e))?;
        let KeptStore { store, schema } = KeptStore::parse(&self.store, self.schema)?;
        Ok(RetentionSettings {
            store,
            schema,
            older_than,
            older_than_text: self.older_than,
            archive: self.archive,
            dry_run: self.dry_run,
            page_limit: self.page_limit,
            json: self.json,
        })
    }
}

/// Reads a human duration (`7d`, `12h`, `30m`, `90s`, `1d 12h`) with
/// `humantime`, which also knows `w`, `M` (30.44 days) and `y`.
fn parse_older_than(given: &str) -> Result<Duration, CliError> {
    humantime::parse_duration(given).map_err(|e| CliError::OlderThan {
        given: given.to_owned(),
        reason: e.to_string(),
    })
}

/// The cutoff, in ms since the epoch: executions that ended strictly
/// before it are swept. A duration reaching back past the epoch gives a
/// cutoff before every execution (nothing is swept), never an overflow.
pub(crate) fn cutoff(now_ms: i64, older_than: Duration) -> i64 {
    let older_than = i64::try_from(older_than.as_millis()).unwrap_or(i64::MAX);
    now_ms.saturating_sub(older_than)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw() -> RawRetention {
        RawRetention {
            store: "memory".to_owned(),
            schema: None,
            older_than: "7d".to_owned(),
            archive: None,
            dry_run: false,
            page_limit: DEFAULT_PAGE_LIMIT,
            json: false,
        }
    }

    #[test]
    fn human_durations_become_a_cutoff() {
        for (given, secs) in [
            ("7d", 7 * 86_400),
            ("12h", 12 * 3_600),
            ("30m", 30 * 60),
            ("90s", 90),
            ("1d 12h", 36 * 3_600),
        ] {
            let settings = RawRetention {
                older_than: given.to_owned(),
                ..raw()
            }
            .validate()
            .unwrap();
            assert_eq!(settings.older_than, Duration::from_secs(secs), "{given}");
        }
        assert_eq!(cutoff(10_000, Duration::from_secs(3)), 7_000);
        assert_eq!(cutoff(10_000, Duration::from_secs(30)), -20_000);
        assert_eq!(cutoff(0, Duration::MAX), -i64::MAX);
    }

    #[test]
    fn bad_durations_are_refused_with_an_example() {
        for bad in ["", "7", "seven days", "7 parsecs", "-7d"] {
            let err = RawRetention {
                older_than: bad.to_owned(),
                ..raw()
            }
            .validate()
            .unwrap_err();
            assert!(matches!(err, CliError::OlderThan { .. }), "{bad}: {err}");
            assert!(err.to_string().contains("such as 7d"), "{err}");
        }
    }

    #[test]
    fn page_limit_schema_and_store_are_checked() {
        for bad in [0, 10_001] {
            let err = RawRetention {
                page_limit: bad,
                ..raw()
            }
            .validate()
            .unwrap_err();
            assert!(
                matches!(
                    err,
                    CliError::BadValue {
                        option: "page-limit",
                        ..
                    }
                ),
                "{err}"
            );
        }
        let err = RawRetention {
            schema: Some("app".to_owned()),
            ..raw()
        }
        .validate()
        .unwrap_err();
        assert_eq!(err.to_string(), "--schema: only for --store postgres:URL");
        let err = RawRetention {
            store: "postgres:postgres://u@127.0.0.1:1/db".to_owned(),
            schema: Some("Bad-Name".to_owned()),
            ..raw()
        }
        .validate()
        .unwrap_err();
        assert!(
            matches!(
                err,
                CliError::BadValue {
                    option: "schema",
                    ..
                }
            ),
            "{err}"
        );
        let ok = RawRetention {
            store: "postgres:postgres://u@127.0.0.1:1/db".to_owned(),
            schema: Some("app".to_owned()),
            ..raw()
        }
        .validate()
        .unwrap();
        assert_eq!(ok.schema, Some(Schema::new("app").unwrap()));
        let err = RawRetention {
            store: "sqlite:/loomfence/no/such/store.db".to_owned(),
            ..raw()
        }
        .validate()
        .unwrap_err();
        assert!(err.to_string().contains("no such file"), "{err}");
    }
}
