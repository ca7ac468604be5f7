//! Appends each record whole or not at all.
//!
//! A record is one log, built whole in memory, then written and synced. If
//! the write or the sync fails, the file is cut back to its length before
//! the write, so no torn bytes stay ahead of the next record (a reader
//! would otherwise find half a line glued to the next log). If the cut
//! fails too, the file may end in a torn line, and the appender refuses
//! every later append rather than glue a record to it.

use std::io;
use std::path::Path;

use super::file::{ArchiveFile, Disk};

/// Why an append failed: what the archive turns into the runtime's
/// error, with its path.
#[derive(Debug)]
pub(super) enum AppendFailure {
    /// The record could not be written or synced; it was cut back off, and
    /// the file is as it was before.
    Io(io::Error),
    /// An append failed and its bytes could not be cut off: the file may
    /// hold a torn line past `whole_len`, and nothing more is appended.
    Broken {
        /// Where the file's last whole record ends.
        whole_len: u64,
    },
}

impl From<io::Error> for AppendFailure {
    fn from(error: io::Error) -> Self {
        AppendFailure::Io(error)
    }
}

/// The open archive file.
#[derive(Debug)]
pub(super) struct Appender<F> {
    /// The file.
    file: F,
    /// Set once a failed append could not be cut back: where the whole
    /// records end.
    broken_at: Option<u64>,
}

impl<F: ArchiveFile> Appender<F> {
    /// Opens `path` on `disk`, creating it if needed, and syncs its
    /// directory, so a file created here survives a crash with the logs
    /// archived in it. It is synced on every opening, not only on the one
    /// that created the file: an opening whose directory sync failed leaves
    /// a file that the next opening would otherwise take as safe.
    ///
    /// A file that ends in a torn line (a crash mid-write before this
    /// appender existed, or another writer) gets a newline first, so the
    /// next record starts on a line of its own.
    pub(super) fn open<D: Disk<File = F>>(disk: &D, path: &Path) -> io::Result<Self> {
        let mut file = disk.open(path)?;
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        disk.sync_dir(dir)?;
        if file.last_byte()?.is_some_and(|last| last != b'\n') {
            file.write_all(b"\n")?;
            file.sync()?;
        }
        Ok(Self {
            file,
            broken_at: None,
        })
    }

    /// Appends `record` and syncs it, or leaves the file as it was.
    pub(super) fn append(&mut self, record: &[u8]) -> Result<(), AppendFailure> {
        if let Some(whole_len) = self.broken_at {
            return Err(AppendFailure::Broken { whole_len });
        }
        let before = self.file.len()?;
        let Err(failed) = self.file.write_all(record).and_then(|()| self.file.sync()) else {
            return Ok(());
        };
        // The cut is not synced: until the next append's sync makes it
        // durable, a crash can at worst bring back a torn tail, which the
        // next opening ends with a newline.
        match self.file.set_len(before) {
            Ok(()) => Err(AppendFailure::Io(failed)),
            Err(cut) => {
                tracing::error!(
                    error = %failed,
                    cut_error = %cut,
                    whole_len = before,
                    "an archive append failed and could not be cut back; the archive refuses further appends"
                );
                self.broken_at = Some(before);
                Err(AppendFailure::Broken { whole_len: before })
            }
        }
    }
}
