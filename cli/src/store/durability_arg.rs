//! `--sqlite-durability`'s values, shared by every command that makes an
//! SQLite store.

use clap::ValueEnum;
use loomfence_sqlite::Durability;

/// `--sqlite-durability`'s values.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum DurabilityArg {
    /// synchronous=FULL: every commit is fsynced before it returns.
    Full,
    /// synchronous=NORMAL: the WAL is fsynced only at checkpoints; a crash
    /// of the process loses nothing, a power loss may lose the last commits.
    Normal,
}

impl From<DurabilityArg> for Durability {
    fn from(arg: DurabilityArg) -> Self {
        match arg {
            DurabilityArg::Full => Durability::Full,
            DurabilityArg::Normal => Durability::Normal,
        }
    }
}
