//! `--store`: which backend the race runs against.
//!
//! The race is meant to be run against every adapter, so the flag names a
//! backend rather than the CLI hard-wiring the memory store. Only `memory`
//! exists today; `sqlite:PATH` is the spelling reserved for the SQLite
//! adapter, and is refused with a message saying so until it lands, so that
//! nobody mistakes it for a typo.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use loomfence_store::{EventStore, MemoryEventStore};

/// A backend named on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum StoreArg {
    /// The core's in-memory store behind a mutex: every operation is atomic,
    /// nothing persists past the process.
    Memory,
}

impl StoreArg {
    /// Opens a fresh, empty store. A trait object, so that the race code is
    /// the same for every backend.
    pub(crate) fn open(&self) -> Arc<dyn EventStore> {
        match self {
            StoreArg::Memory => Arc::new(MemoryEventStore::new()),
        }
    }
}

impl fmt::Display for StoreArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreArg::Memory => f.write_str("memory"),
        }
    }
}

/// Why a `--store` value names no backend we have.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StoreArgError {
    /// The SQLite spelling, before the SQLite adapter exists.
    #[error("--store {0:?}: the SQLite store is not built yet; use `memory`")]
    NotYet(String),
    /// Anything else.
    #[error("--store {0:?}: unknown store; expected `memory` (later also `sqlite:PATH`)")]
    Unknown(String),
}

impl FromStr for StoreArg {
    type Err = StoreArgError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "memory" => Ok(StoreArg::Memory),
            _ if s.starts_with("sqlite:") => Err(StoreArgError::NotYet(s.to_owned())),
            _ => Err(StoreArgError::Unknown(s.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_memory_and_refuses_the_rest() {
        assert_eq!("memory".parse(), Ok(StoreArg::Memory));
        assert_eq!(StoreArg::Memory.to_string(), "memory");
        assert!(matches!(
            "sqlite:/tmp/x.db".parse::<StoreArg>(),
            Err(StoreArgError::NotYet(_))
        ));
        assert!(matches!(
            "Memory".parse::<StoreArg>(),
            Err(StoreArgError::Unknown(_))
        ));
        assert!(matches!(
            "".parse::<StoreArg>(),
            Err(StoreArgError::Unknown(_))
        ));
    }
}
