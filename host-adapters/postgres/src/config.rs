//! How the store connects, where its tables live, and how it migrates.

use std::fmt;
use std::time::Duration;

use crate::error::OpenError;

/// PostgreSQL 15's reserved key words, sorted: those its documentation
/// (Appendix C, "SQL Key Words") marks "reserved" and "reserved (can be
/// function or type)", which are `pg_get_keywords()`'s categories `R` and
/// `T`. Neither can be an unquoted schema name (the grammar's `ColId`), so
/// the server would refuse every statement naming one; a test checks this
/// list against the server's own.
#[rustfmt::skip]
const RESERVED_KEY_WORDS: &[&str] = &[
    "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "authorization",
    "binary", "both", "case", "cast", "check", "collate", "collation", "column", "concurrently",
    "constraint", "create", "cross", "current_catalog", "current_date", "current_role",
    "current_schema", "current_time", "current_timestamp", "current_user", "default", "deferrable",
    "desc", "distinct", "do", "else", "end", "except", "false", "fetch", "for", "foreign",
    "freeze", "from", "full", "grant", "group", "having", "ilike", "in", "initially", "inner",
    "intersect", "into", "is", "isnull", "join", "lateral", "leading", "left", "like", "limit",
    "localtime", "localtimestamp", "natural", "not", "notnull", "null", "offset", "on", "only",
    "or", "order", "outer", "overlaps", "placing", "primary", "references", "returning", "right",
    "select", "session_user", "similar", "some", "symmetric", "table", "tablesample", "then", "to",
    "trailing", "true", "union", "unique", "user", "using", "variadic", "verbose", "when", "where",
    "window", "with",
];

/// The schema that holds loomfence's tables, so two applications can share
/// one database without sharing logs.
///
/// Only plain lowercase identifiers are accepted: the name is the one piece
/// of SQL text that is not a bound parameter, so it is validated instead,
/// once, here. Reserved key words (`select`, `user`, `order`…) and names
/// starting with `pg_` (reserved for system schemas) are refused too: the
/// server would refuse them, later and less clearly.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Schema(String);

impl Schema {
    /// Validates `name` as a schema name.
    pub fn new(name: impl Into<String>) -> Result<Self, OpenError> {
        let name = name.into();
        let mut bytes = name.bytes();
        let first_ok = bytes
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b == b'_');
        let rest_ok = bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !(first_ok && rest_ok && name.len() <= 63) {
            Err(OpenError::Schema { name })
        } else if RESERVED_KEY_WORDS.binary_search(&name.as_str()).is_ok() {
            Err(OpenError::ReservedSchema { name })
        } else if name.starts_with("pg_") {
            Err(OpenError::SystemSchema { name })
        } else {
            Ok(Self(name))
        }
    }

    /// The name, as written in SQL (always a valid unquoted identifier).
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Schema {
    fn default() -> Self {
        Self("loomfence".to_owned())
    }
}

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How `acquire_fence_if` reaches the server. Both are one round trip and
/// both run under READ COMMITTED whatever the server's default is; the bench
/// (`pg-bench`) measures them side by side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AcquireStrategy {
    /// One call of a PL/pgSQL function that `migrate` installs: lock the
    /// fence row, scan in a fresh snapshot, update. Each statement of a
    /// volatile function takes its own snapshot under READ COMMITTED, and
    /// the store's connections are pinned to READ COMMITTED.
    #[default]
    Function,
    /// An explicit `BEGIN ISOLATION LEVEL READ COMMITTED … COMMIT`
    /// transaction whose statements are pipelined in one round trip.
    Pipelined,
}

/// Everything the store needs besides the URL.
#[derive(Clone, Debug)]
pub struct PostgresOptions {
    /// Where the tables live.
    pub schema: Schema,
    /// Connections in the pool.
    pub pool_size: usize,
    /// How `acquire_fence_if` is sent.
    pub acquire: AcquireStrategy,
    /// Whether `connect` runs `migrate`.
    pub migrate_on_connect: bool,
    /// What `migrate` does.
    pub migrate: MigrateOptions,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            schema: Schema::default(),
            pool_size: 16,
            acquire: AcquireStrategy::default(),
            migrate_on_connect: true,
            migrate: MigrateOptions::default(),
        }
    }
}

/// What `migrate` does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MigrateOptions {
    /// How long a booting node waits for another node's migration before it
    /// gives up with a retryable error.
    pub lock_timeout: Duration,
    /// Whether the one-time park-fence backfill runs inside `migrate`. A very
    /// large installation turns it off, boots, and runs
    /// [`backfill_park_fences`](crate::migration::backfill_park_fences) offline.
    pub backfill_park_fences: bool,
}

impl Default for MigrateOptions {
    fn default() -> Self {
        Self {
            lock_timeout: Duration::from_secs(30),
            backfill_park_fences: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_are_plain_identifiers() {
        for good in ["loomfence", "_x", "app_2", &"a".repeat(63)] {
            assert!(Schema::new(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "2x",
            "Upper",
            "a-b",
            "a\"b",
            "a;drop",
            "é",
            &"a".repeat(64),
        ] {
            assert!(
                matches!(Schema::new(bad), Err(OpenError::Schema { name }) if name == bad),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_reserved_list_is_sorted_for_binary_search() {
        assert!(RESERVED_KEY_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(RESERVED_KEY_WORDS.len(), 100);
    }

    #[test]
    fn reserved_key_words_are_refused_as_schema_names() {
        for word in [
            "select",
            "table",
            "user",
            "order",
            "group",
            "from",
            "where",
            "all",
            "check",
            "default",
            "limit",
            "offset",
            "returning",
            "window",
            "with",
            "true",
            "null",
            "current_user",
            // "reserved (can be function or type)": not an unquoted name either.
            "authorization",
            "join",
            "left",
            "like",
            "verbose",
            "concurrently",
        ] {
            assert!(
                matches!(Schema::new(word), Err(OpenError::ReservedSchema { name }) if name == word),
                "{word}"
            );
        }
        // Key words PostgreSQL does not reserve, and names that only
        // contain or extend a reserved one, are plain names.
        for fine in [
            "events",
            "schema",
            "name",
            "value",
            "values",
            "between",
            "int",
            "public",
            "users",
            "selected",
            "table_1",
            "_select",
            "orders",
            "loomfence",
        ] {
            assert!(Schema::new(fine).is_ok(), "{fine}");
        }
    }

    #[test]
    fn pg_prefixed_names_are_refused_as_system_schemas() {
        for system in ["pg_", "pg_catalog", "pg_toast", "pg_temp_1", "pg_loomfence"] {
            assert!(
                matches!(Schema::new(system), Err(OpenError::SystemSchema { name }) if name == system),
                "{system}"
            );
        }
        for fine in ["pg", "pgx", "pg2_x", "my_pg_", "_pg_x"] {
            assert!(Schema::new(fine).is_ok(), "{fine}");
        }
    }
}
