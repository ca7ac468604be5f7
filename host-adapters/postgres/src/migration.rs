//! Creating and upgrading the schema, and what a migration reports.
//!
//! [`PostgresEventStore::connect`](crate::PostgresEventStore::connect)
//! runs [`migrate`] unless told not to; a host that migrates at its own time
//! (a deploy step, a large installation that runs the park-fence backfill
//! offline with [`backfill_park_fences`]) calls these itself, on the store's
//! [`pool`](crate::PostgresEventStore::pool).

pub use crate::backfill::{BackfillReport, backfill_park_fences};
pub use crate::concurrent_index::IndexBuild;
pub use crate::config::MigrateOptions;
pub use crate::migrate::{MigrationReport, migrate};
pub use crate::version::SCHEMA_VERSION;
