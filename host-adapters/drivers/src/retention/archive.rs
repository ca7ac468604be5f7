//! Where a sweep puts a log before it deletes it.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use loomfence_core::{Envelope, ExecutionId};

/// Why an archive did not take a log. The sweep stops on it with the log
/// still in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArchiveError {
    /// The archive's file could not be opened, written or synced.
    #[error("archive {path}: {source}")]
    Io {
        /// The archive file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// An event could not be encoded (it cannot happen for a log a store
    /// returned; reported rather than unwrapped).
    #[error("an event of {execution_id:?} could not be encoded: {source}")]
    Encode {
        /// The execution.
        execution_id: ExecutionId,
        /// The encoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// A sink of the host's own failed.
    #[error("archive failed: {0}")]
    Other(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Takes each log a sweep is about to delete, and answers only once the log
/// is durable: the sweep deletes right after.
///
/// A sweep may archive a log and then keep it (a parent moved in the
/// window), and archive it again next time: sinks are at-least-once, and a
/// reader dedupes by `(executionId, sequence)`.
#[async_trait]
pub trait ArchiveSink: Send + Sync {
    /// Durably records `events`, the whole log of `execution_id`.
    async fn archive(
        &self,
        execution_id: &ExecutionId,
        events: &[Envelope],
    ) -> Result<(), ArchiveError>;
}

/// An archive file of JSON lines, one envelope per line
/// (`{"executionId", "sequence", "kind", "payload", "metadata", "at"}`, the
/// shape every read returns), appended to and synced to disk after each
/// execution's log.
///
/// Syncing per execution is what makes "archived, then deleted" safe
/// against a crash between the two; it is also what bounds an archiving
/// sweep's speed (see the README's retention section for the figures).
#[derive(Debug, Clone)]
pub struct JsonLinesArchive {
    /// The file's path, for errors.
    path: PathBuf,
    /// The open file, shared with the blocking tasks that write it.
    file: Arc<Mutex<BufWriter<File>>>,
}

impl JsonLinesArchive {
    /// Opens `path` for appending, creating it if needed: a second sweep
    /// into the same file adds to it.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ArchiveError> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|source| ArchiveError::Io {
                path: path.clone(),
                source,
            })?;
        Ok(Self {
            path,
            file: Arc::new(Mutex::new(BufWriter::new(file))),
        })
    }
}

#[async_trait]
impl ArchiveSink for JsonLinesArchive {
    async fn archive(
        &self,
        execution_id: &ExecutionId,
        events: &[Envelope],
    ) -> Result<(), ArchiveError> {
        let mut lines = Vec::new();
        for event in events {
            serde_json::to_writer(&mut lines, event).map_err(|source| ArchiveError::Encode {
                execution_id: execution_id.clone(),
                source,
            })?;
            lines.push(b'\n');
        }
        let file = Arc::clone(&self.file);
        let written = tokio::task::spawn_blocking(move || {
            let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
            file.write_all(&lines)?;
            file.flush()?;
            file.get_ref().sync_data()
        })
        .await
        .map_err(io::Error::other)
        .and_then(|result| result);
        written.map_err(|source| ArchiveError::Io {
            path: self.path.clone(),
            source,
        })
    }
}
