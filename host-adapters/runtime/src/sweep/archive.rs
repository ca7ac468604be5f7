//! Where a sweep puts a log before it deletes it.

mod appender;
mod file;
#[cfg(test)]
mod tests;

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use loomfence_core::{Envelope, ExecutionId, retention::ExecutionLog};

use self::appender::{AppendFailure, Appender};
use self::file::RealDisk;
use crate::error::RuntimeError;

/// Takes each log a sweep is about to delete, and answers only once the log
/// is durable: the sweep deletes right after.
///
/// A sweep may archive a log and then keep it (a parent moved in the
/// window), and archive it again next time: sinks are at-least-once, and a
/// reader dedupes by `(executionId, sequence)`.
#[async_trait]
pub trait ArchiveSink: Send + Sync {
    /// Durably records `events`, the whole log of `execution_id`. A sink
    /// of the host's own fails with [`RuntimeError::Host`]; the sweep stops
    /// on any error with the log still in the store.
    async fn archive(
        &self,
        execution_id: &ExecutionId,
        events: &[Envelope],
    ) -> Result<(), RuntimeError>;

    /// Durably records every log of a sweep's page, answering once all of
    /// them are durable: the sweep deletes the page's logs right after. The
    /// default hands each to [`ArchiveSink::archive`] in turn; a sink that
    /// syncs should override it to sync once for the page.
    async fn archive_page(&self, logs: &[ExecutionLog]) -> Result<(), RuntimeError> {
        for log in logs {
            self.archive(&log.execution_id, &log.events).await?;
        }
        Ok(())
    }
}

/// An archive file of JSON lines, one envelope per line
/// (`{"executionId", "sequence", "kind", "payload", "metadata", "at"}`, the
/// shape every read returns), appended to and synced to disk once per
/// sweep page (per log when handed one log at a time).
///
/// Syncing before the page's deletes is what makes "archived, then
/// deleted" safe against a crash between the two; syncing once per page
/// rather than per log keeps it a small part of a sweep's time (see the
/// README's retention section for the figures). Each append is whole or
/// not at all: a write or sync that fails is cut back off the file, so a
/// failed page never leaves a torn line ahead of the next one.
#[derive(Debug, Clone)]
pub struct JsonLinesArchive {
    /// The file's path, for errors.
    path: PathBuf,
    /// The open file, shared with the blocking tasks that write it.
    file: Arc<Mutex<Appender<File>>>,
}

impl JsonLinesArchive {
    /// Opens `path` for appending, creating it if needed: a second sweep
    /// into the same file adds to it. Its directory is synced, so a new
    /// file cannot vanish in a crash after logs archived in it were
    /// deleted; a file that ends in a torn line (from a crash, or another
    /// writer) gets a newline first, so the next log starts on its own
    /// line.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, RuntimeError> {
        let path = path.as_ref().to_path_buf();
        let appender =
            Appender::open(&RealDisk, &path).map_err(|source| RuntimeError::ArchiveIo {
                path: path.clone(),
                source,
            })?;
        Ok(Self {
            path,
            file: Arc::new(Mutex::new(appender)),
        })
    }
}

impl JsonLinesArchive {
    /// Encodes `logs` as JSON lines, one envelope per line.
    fn encode<'l>(
        logs: impl IntoIterator<Item = (&'l ExecutionId, &'l [Envelope])>,
    ) -> Result<Vec<u8>, RuntimeError> {
        let mut record = Vec::new();
        for (execution_id, events) in logs {
            for event in events {
                serde_json::to_writer(&mut record, event).map_err(|source| {
                    RuntimeError::ArchiveEncode {
                        execution_id: execution_id.clone(),
                        source,
                    }
                })?;
                record.push(b'\n');
            }
        }
        Ok(record)
    }

    /// Appends `record` whole and syncs it, on a blocking thread.
    async fn append(&self, record: Vec<u8>) -> Result<(), RuntimeError> {
        let file = Arc::clone(&self.file);
        let appended = tokio::task::spawn_blocking(move || {
            file.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .append(&record)
        })
        .await
        .unwrap_or_else(|join| Err(AppendFailure::Io(io::Error::other(join))));
        let path = self.path.clone();
        appended.map_err(|failure| match failure {
            AppendFailure::Io(source) => RuntimeError::ArchiveIo { path, source },
            AppendFailure::Broken { whole_len } => RuntimeError::ArchiveBroken { path, whole_len },
        })
    }
}

#[async_trait]
impl ArchiveSink for JsonLinesArchive {
    async fn archive(
        &self,
        execution_id: &ExecutionId,
        events: &[Envelope],
    ) -> Result<(), RuntimeError> {
        self.append(Self::encode([(execution_id, events)])?).await
    }

    async fn archive_page(&self, logs: &[ExecutionLog]) -> Result<(), RuntimeError> {
        let record = Self::encode(
            logs.iter()
                .map(|log| (&log.execution_id, log.events.as_slice())),
        )?;
        self.append(record).await
    }
}
