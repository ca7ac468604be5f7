//! The IO seam under the archive: the few calls the appender makes on its
//! file and its directory, so tests can make any one of them fail (a full
//! disk mid-record, a failed fsync, a cut that fails) without a real fault.

use std::fs::{File, OpenOptions};
use std::io::{self, Read as _, Seek as _, SeekFrom, Write as _};
use std::path::Path;

/// The archive file, as the appender uses it.
pub(super) trait ArchiveFile: Send {
    /// The file's length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// The file's last byte; `None` when it is empty.
    fn last_byte(&mut self) -> io::Result<Option<u8>>;
    /// Appends `bytes` at the end; on error, any prefix may have been
    /// written.
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Cuts the file back to `len` bytes.
    fn set_len(&mut self, len: u64) -> io::Result<()>;
    /// Makes the file's content and length durable.
    fn sync(&mut self) -> io::Result<()>;
}

/// Where archive files are opened, and their directories synced.
pub(super) trait Disk {
    /// The files it opens.
    type File: ArchiveFile;
    /// Opens `path` for reading and appending, creating it if needed.
    fn open(&self, path: &Path) -> io::Result<Self::File>;
    /// Makes `dir`'s entries durable (a file created in it survives a
    /// crash).
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// The real file system.
#[derive(Debug, Clone, Copy)]
pub(super) struct RealDisk;

impl Disk for RealDisk {
    type File = File;

    fn open(&self, path: &Path) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        // Only Unix can open a directory to sync it; elsewhere (Windows)
        // the file system orders its own metadata.
        if cfg!(unix) {
            File::open(dir)?.sync_all()
        } else {
            Ok(())
        }
    }
}

impl ArchiveFile for File {
    fn len(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }

    fn last_byte(&mut self) -> io::Result<Option<u8>> {
        if ArchiveFile::len(self)? == 0 {
            return Ok(None);
        }
        // Moves the read position only: appends still go to the end.
        self.seek(SeekFrom::End(-1))?;
        let mut byte = [0];
        self.read_exact(&mut byte)?;
        Ok(Some(byte[0]))
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        io::Write::write_all(self, bytes)?;
        self.flush()
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        File::set_len(self, len)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.sync_data()
    }
}
