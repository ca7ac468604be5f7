//! The file under the store: temporary directories, its bytes and side
//! files, and raw `rusqlite` looks at it that the store does not offer.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use rusqlite::{Connection, OpenFlags};

/// A fresh directory under the system's temp dir, removed on drop.
#[derive(Debug)]
pub struct TempDir {
    /// The directory.
    path: PathBuf,
}

impl TempDir {
    /// A directory no other test in any process uses.
    pub fn new(label: &str) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "loomfence-sqlite-{label}-{}-{n}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path).expect("creates a temp dir");
        Self { path }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A path inside the directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Best effort: a leftover temp dir is not a test failure.
        let _ignored = std::fs::remove_dir_all(&self.path);
    }
}

/// The whole file.
pub fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// `path` with `suffix` appended to its file name (`-wal`, `-shm`).
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Which of SQLite's side files (`-wal`, `-shm`, `-journal`) exist next to
/// `path`, with their sizes.
pub fn side_files(path: &Path) -> Vec<(String, u64)> {
    ["-wal", "-shm", "-journal"]
        .into_iter()
        .filter_map(|suffix| {
            std::fs::metadata(with_suffix(path, suffix))
                .ok()
                .map(|meta| (suffix.to_owned(), meta.len()))
        })
        .collect()
}

/// A raw read-write connection beside the store.
pub fn raw(path: &Path) -> Connection {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
        .unwrap_or_else(|e| panic!("a raw connection to {}: {e}", path.display()));
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .expect("sets the busy timeout");
    conn
}

/// `PRAGMA integrity_check`, its rows joined: `"ok"` for a sound file.
pub fn integrity(path: &Path) -> String {
    let conn = raw(path);
    let mut statement = conn
        .prepare("PRAGMA integrity_check")
        .expect("prepares the check");
    let rows: Vec<String> = statement
        .query_map([], |row| row.get(0))
        .expect("runs the check")
        .collect::<Result<_, _>>()
        .expect("reads the check");
    rows.join("; ")
}

/// A pragma's value as text (`user_version`, `journal_mode`).
pub fn pragma(path: &Path, name: &str) -> String {
    raw(path)
        .query_row(&format!("PRAGMA {name}"), [], |row| {
            row.get::<_, rusqlite::types::Value>(0)
        })
        .map(|value| match value {
            rusqlite::types::Value::Integer(i) => i.to_string(),
            rusqlite::types::Value::Text(t) => t,
            other => format!("{other:?}"),
        })
        .unwrap_or_else(|e| panic!("PRAGMA {name} on {}: {e}", path.display()))
}

/// How many rows the two tables hold: `(events, fences)`.
pub fn row_counts(path: &Path) -> (i64, i64) {
    raw(path)
        .query_row(
            "SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM fences)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .expect("counts rows")
}

/// A small deterministic generator (xorshift64*), for garbage bytes and
/// varied pauses without a dependency.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a non-zero seed.
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `low..high`.
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next_u64() % (high - low).max(1)
    }

    /// Fills `out` with garbage.
    pub fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let word = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
}
