//! The archive's appends through the IO seam, each fault injected where a
//! real disk would fail, and once end to end on the real file system.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use loomfence_core::{ExecutionId, KernelKind, NewEvent};
use loomfence_store::{EventStore, MemoryEventStore};

use super::appender::{AppendFailure, Appender};
use super::file::{ArchiveFile, Disk};
use super::{ArchiveSink, JsonLinesArchive};

/// The fake file's bytes and the faults armed on it.
#[derive(Debug, Default)]
struct State {
    /// The file's content.
    bytes: Vec<u8>,
    /// The next write stores this many bytes, then fails.
    write_budget: Option<usize>,
    /// How many syncs fail from now on.
    failing_syncs: usize,
    /// Whether cutting the file fails.
    cut_fails: bool,
    /// The directories synced, in order.
    dirs_synced: Vec<PathBuf>,
}

/// A disk holding one fake file, shared with the test.
#[derive(Debug, Clone, Default)]
struct FakeDisk(Arc<Mutex<State>>);

impl FakeDisk {
    /// A disk whose file already holds `bytes`.
    fn with(bytes: &[u8]) -> Self {
        let disk = Self::default();
        disk.state().bytes = bytes.to_vec();
        disk
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn bytes(&self) -> Vec<u8> {
        self.state().bytes.clone()
    }

    /// The file as text, for readable failures.
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes()).into_owned()
    }
}

/// The fake file: a handle on the disk's state.
#[derive(Debug)]
struct FakeFile(FakeDisk);

fn fault(what: &str) -> io::Error {
    io::Error::other(format!("injected: {what}"))
}

impl ArchiveFile for FakeFile {
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.state().bytes.len() as u64)
    }

    fn last_byte(&mut self) -> io::Result<Option<u8>> {
        Ok(self.0.state().bytes.last().copied())
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut state = self.0.state();
        match state.write_budget.take() {
            Some(budget) => {
                let stored = budget.min(bytes.len());
                state.bytes.extend_from_slice(&bytes[..stored]);
                Err(fault("no space left mid-record"))
            }
            None => {
                state.bytes.extend_from_slice(bytes);
                Ok(())
            }
        }
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        let mut state = self.0.state();
        if state.cut_fails {
            return Err(fault("the cut failed"));
        }
        state
            .bytes
            .truncate(usize::try_from(len).map_err(io::Error::other)?);
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        let mut state = self.0.state();
        if state.failing_syncs > 0 {
            state.failing_syncs -= 1;
            return Err(fault("fsync failed"));
        }
        Ok(())
    }
}

impl Disk for FakeDisk {
    type File = FakeFile;

    fn open(&self, _path: &Path) -> io::Result<FakeFile> {
        Ok(FakeFile(self.clone()))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.state().dirs_synced.push(dir.to_path_buf());
        Ok(())
    }
}

/// One archived log's record: a JSON line per event.
fn record(n: u32) -> Vec<u8> {
    format!("{{\"executionId\":\"job-{n}\",\"sequence\":1}}\n{{\"executionId\":\"job-{n}\",\"sequence\":2}}\n")
        .into_bytes()
}

/// Opens the fake file at a path in a directory.
fn open(disk: &FakeDisk) -> Appender<FakeFile> {
    Appender::open(disk, Path::new("archives/archive.jsonl")).unwrap()
}

/// The lines of `bytes`, each checked to be a JSON object.
fn json_lines(bytes: &[u8]) -> Vec<serde_json::Value> {
    assert!(
        bytes.is_empty() || bytes.ends_with(b"\n"),
        "the file ends mid-line"
    );
    bytes
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| {
            serde_json::from_slice(line)
                .unwrap_or_else(|e| panic!("{:?} is not JSON: {e}", String::from_utf8_lossy(line)))
        })
        .collect()
}

#[test]
fn a_write_that_fails_mid_record_leaves_the_file_as_it_was_and_the_next_append_works() {
    let disk = FakeDisk::with(&record(1));
    let mut appender = open(&disk);
    let before = disk.bytes();
    disk.state().write_budget = Some(10);
    assert!(matches!(
        appender.append(&record(2)),
        Err(AppendFailure::Io(_))
    ));
    assert_eq!(
        disk.bytes().len(),
        before.len(),
        "the failed record's bytes were cut off"
    );
    assert_eq!(disk.bytes(), before);
    appender.append(&record(3)).unwrap();
    assert_eq!(disk.bytes(), [record(1), record(3)].concat());
    assert_eq!(json_lines(&disk.bytes()).len(), 4);
}

#[test]
fn a_sync_that_fails_cuts_the_written_record_back_off() {
    let disk = FakeDisk::with(&record(1));
    let mut appender = open(&disk);
    disk.state().failing_syncs = 1;
    assert!(matches!(
        appender.append(&record(2)),
        Err(AppendFailure::Io(_))
    ));
    assert_eq!(
        disk.text(),
        String::from_utf8_lossy(&record(1)),
        "a record not synced is not kept"
    );
    appender.append(&record(3)).unwrap();
    assert_eq!(disk.bytes(), [record(1), record(3)].concat());
}

#[test]
fn a_cut_that_fails_breaks_the_archive_and_later_appends_refuse() {
    let disk = FakeDisk::with(&record(1));
    let mut appender = open(&disk);
    let whole_len = record(1).len() as u64;
    {
        let mut state = disk.state();
        state.write_budget = Some(10);
        state.cut_fails = true;
    }
    let failed = appender.append(&record(2));
    assert!(
        matches!(failed, Err(AppendFailure::Broken { whole_len: at }) if at == whole_len),
        "expected Broken at {whole_len}, got {failed:?}"
    );
    let torn = disk.bytes();
    disk.state().cut_fails = false;
    let refused = appender.append(&record(3));
    assert!(
        matches!(refused, Err(AppendFailure::Broken { whole_len: at }) if at == whole_len),
        "expected Broken at {whole_len}, got {refused:?}"
    );
    assert_eq!(disk.bytes(), torn, "nothing is written after the torn line");
}

#[test]
fn opening_syncs_the_files_directory() {
    let disk = FakeDisk::default();
    open(&disk);
    Appender::open(&disk, Path::new("archive.jsonl")).unwrap();
    assert_eq!(
        disk.state().dirs_synced,
        [PathBuf::from("archives"), PathBuf::from(".")]
    );
}

#[test]
fn a_torn_tail_gets_a_newline_before_the_next_record() {
    let torn = b"{\"executionId\":\"job-0\",\"seq";
    let disk = FakeDisk::with(&[&record(1)[..], torn].concat());
    let mut appender = open(&disk);
    appender.append(&record(2)).unwrap();
    let bytes = disk.bytes();
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    assert_eq!(
        String::from_utf8_lossy(lines[2]),
        String::from_utf8_lossy(torn),
        "the torn line is kept, on a line of its own"
    );
    let after = [lines[3..].join(&b'\n'), b"\n".to_vec()].concat();
    assert_eq!(
        after.trim_ascii_end(),
        record(2).trim_ascii_end(),
        "the next record starts on its own line"
    );
    assert_eq!(json_lines(&after).len(), 2);
}

#[test]
fn an_empty_or_whole_file_is_not_touched_on_opening() {
    for bytes in [Vec::new(), record(1)] {
        let disk = FakeDisk::with(&bytes);
        open(&disk);
        assert_eq!(disk.bytes(), bytes);
    }
}

#[tokio::test]
async fn the_real_archive_appends_whole_logs_and_adds_to_a_reopened_file() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir =
        std::env::temp_dir().join(format!("loomfence-archive-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("archive.jsonl");
    let store = MemoryEventStore::new();
    let id = ExecutionId::new("job-1").unwrap();
    let events = store
        .append_many(
            &id,
            vec![
                NewEvent::kernel(KernelKind::ExecutionStarted, 1),
                NewEvent::kernel(KernelKind::ExecutionCompleted, 2),
            ],
        )
        .await
        .unwrap();
    JsonLinesArchive::open(&path)
        .unwrap()
        .archive(&id, &events)
        .await
        .unwrap();
    JsonLinesArchive::open(&path)
        .unwrap()
        .archive(&id, &events[..1])
        .await
        .unwrap();
    let lines = json_lines(&std::fs::read(&path).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    let sequences: Vec<_> = lines.iter().map(|line| line["sequence"].clone()).collect();
    assert_eq!(sequences, [1, 2, 1]);
}
