//! `loomfence init`: make a lasting store, or bring an existing loomfence
//! store up to date, for `worker`, `retention` and the other commands on a
//! kept store (race, bench and fleet make and delete their own).
//!
//! What it creates, migrates and refuses is [`StoreArg::init`]'s rule (see
//! [`crate::store`]); this module reads the options and prints the
//! outcome. Exit codes: 0 done; 1 the store failed (could not connect,
//! could not write); 2 a bad option or something there that is not a
//! loomfence store (left untouched), a store in memory included.

use std::process::ExitCode;

use clap::Args;
use loomfence_postgres::Schema;
use serde_json::json;

use crate::error::CliError;
use crate::store::{Initialized, StoreArg};

/// `loomfence init`'s options.
#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// The store to make: `sqlite:PATH`, a file that does not exist yet
    /// (its directory must) or an existing loomfence SQLite file;
    /// `postgres:URL`, a server where --schema does not exist yet, holds
    /// nothing, or holds a loomfence store. An empty (0-byte) file is
    /// refused: remove it first. `memory` and `sqlite::memory:` are refused:
    /// nothing would last.
    #[arg(long, value_name = "STORE")]
    store: String,
    /// The PostgreSQL schema to hold the store; only with --store
    /// postgres:…. Default: the adapter's default schema, `loomfence`.
    #[arg(long, value_name = "NAME")]
    schema: Option<String>,
    /// Print exactly one JSON object on stdout instead of the summary:
    /// store, schema (null on SQLite), created, migrated, version.
    #[arg(long)]
    json: bool,
}

/// The options, checked.
#[derive(Debug)]
struct InitSettings {
    /// The store.
    store: StoreArg,
    /// `--schema` (PostgreSQL only); `None` is the adapter's default.
    schema: Option<Schema>,
    /// One JSON object instead of the summary.
    json: bool,
}

impl InitArgs {
    /// Checks every option that can be checked before connecting.
    fn validate(self) -> Result<InitSettings, CliError> {
        let store = StoreArg::lasting(&self.store)?;
        let schema = store.schema_option(self.schema)?;
        Ok(InitSettings {
            store,
            schema,
            json: self.json,
        })
    }
}

/// Runs `loomfence init` and returns the exit code.
pub(crate) async fn command(args: InitArgs) -> ExitCode {
    let settings = match args.validate() {
        Ok(settings) => settings,
        Err(usage) => return usage.exit("init failed"),
    };
    let done = match settings.store.init(settings.schema.as_ref()).await {
        Ok(done) => done,
        Err(failure) => return failure.exit("init failed"),
    };
    let schema = settings
        .store
        .is_postgres()
        .then(|| settings.schema.clone().unwrap_or_default());
    if settings.json {
        println!("{}", to_json(&settings.store, schema.as_ref(), &done));
    } else {
        println!("{}", human(&settings.store, schema.as_ref(), &done));
    }
    ExitCode::SUCCESS
}

/// The one JSON object of `--json`.
fn to_json(store: &StoreArg, schema: Option<&Schema>, done: &Initialized) -> serde_json::Value {
    json!({
        "store": store.to_string(),
        "schema": schema.map(Schema::as_str),
        "created": done.created,
        "migrated": done.migrated,
        "version": done.version,
    })
}

/// The summary for a person.
fn human(store: &StoreArg, schema: Option<&Schema>, done: &Initialized) -> String {
    let at = match schema {
        Some(schema) => format!("{store} (schema {schema})"),
        None => store.to_string(),
    };
    let version = done.version;
    match (done.created, done.migrated) {
        (true, _) => format!("{at}: created a loomfence store, schema version {version}"),
        (false, true) => format!("{at}: already a loomfence store; migrated to version {version}"),
        (false, false) => {
            format!("{at}: already a loomfence store, version {version}: up to date")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_and_the_json_say_what_happened() {
        let store: StoreArg = "sqlite:/tmp/s.db".parse().unwrap();
        let created = Initialized {
            created: true,
            migrated: true,
            version: 2,
        };
        assert_eq!(
            human(&store, None, &created),
            "sqlite:/tmp/s.db: created a loomfence store, schema version 2"
        );
        let migrated = Initialized {
            created: false,
            ..created.clone()
        };
        assert_eq!(
            human(&store, None, &migrated),
            "sqlite:/tmp/s.db: already a loomfence store; migrated to version 2"
        );
        let current = Initialized {
            migrated: false,
            ..migrated
        };
        assert!(human(&store, None, &current).ends_with("version 2: up to date"));
        let pg: StoreArg = "postgres:postgres://u@h/db".parse().unwrap();
        let app = Schema::new("app").unwrap();
        assert_eq!(
            to_json(&pg, Some(&app), &created),
            json!({
                "store": "postgres:u@h:5432/db",
                "schema": "app",
                "created": true,
                "migrated": true,
                "version": 2,
            })
        );
        assert_eq!(to_json(&store, None, &current)["schema"], json!(null));
    }

    #[test]
    fn schema_is_for_postgres_only() {
        let args = InitArgs {
            store: "sqlite:x.db".to_owned(),
            schema: Some("app".to_owned()),
            json: false,
        };
        assert!(matches!(
            args.validate(),
            Err(CliError::OnlyForStore {
                option: "schema",
                ..
            })
        ));
    }
}
