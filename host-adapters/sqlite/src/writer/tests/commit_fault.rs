//! A group whose `COMMIT` fails, through the [`CommitFault`] seam: not
//! written while SQLite keeps the transaction open, outcome unknown once it
//! has closed it; and the resume driver settling such a resume by reading.

use loomfence_core::{
    Action, ExecutionId, KernelKind, Poll, ResumeMachine, ResumeRequest, resume::Stepped,
};
use loomfence_store::EventStore;

use super::*;
use crate::{SqliteEventStore, SqliteOptions};

/// A writer over a new WAL file holding a table of numbers.
fn file_writer(file: &TempFile) -> Writer {
    let conn = Connection::open(&file.0).unwrap();
    conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (n INTEGER PRIMARY KEY)")
        .unwrap();
    Writer::spawn(conn).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_that_fails_after_it_happened_is_outcome_unknown_and_landed() {
    let file = TempFile::new("commit-after");
    let writer = file_writer(&file);
    writer.fail_next_commit(CommitFault::After);
    match writer.run(|| Ok(()), insert(7, Ok(()))).await {
        Err(StoreError::OutcomeUnknown(lost)) => {
            assert!(lost.to_string().contains("disk I/O error"), "{lost}");
        }
        other => panic!("expected OutcomeUnknown, got {other:?}"),
    }
    drop(writer);
    assert_eq!(rows_in(&file.0), [7], "the commit happened");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_that_fails_before_it_happened_is_rolled_back_and_not_written() {
    let file = TempFile::new("commit-before");
    let writer = file_writer(&file);
    writer.fail_next_commit(CommitFault::Before);
    match writer.run(|| Ok(()), insert(7, Ok(()))).await {
        Err(StoreError::Backend(refused)) => {
            assert!(refused.retryable, "{refused}");
            assert!(
                refused.to_string().contains("was not committed"),
                "{refused}"
            );
        }
        other => panic!("expected a retryable backend error, got {other:?}"),
    }
    // Rolled back: the writer's next group begins a transaction of its own.
    assert_eq!(writer.run(|| Ok(()), insert(8, Ok(()))).await.unwrap(), 8);
    drop(writer);
    assert_eq!(rows_in(&file.0), [8], "the failed group left nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_group_of_unknown_outcome_a_refused_job_and_a_read_keep_known_answers() {
    let writer = writer();
    let hook = writer.hook.clone();
    let Hold {
        release,
        started,
        job,
    } = hold(&writer);
    let group = async {
        started.await.unwrap();
        // Armed from inside the next group, so the held group commits
        // cleanly and this one does not.
        let armed = writer.run(
            || Ok(()),
            move |_: &Connection, ()| {
                hook.arm(CommitFault::After);
                Ok(())
            },
        );
        let kept = writer.run(|| Ok(()), insert(2, Ok(())));
        let refused = writer.run(|| Ok(()), insert(3, Err("refused")));
        let read = writer.read(|conn| {
            conn.query_row("SELECT count(*) FROM t", [], |row| row.get::<_, i64>(0))
                .map_err(error::store)
        });
        tokio::join!(armed, kept, refused, read, async {
            release.send(()).unwrap();
        })
    };
    let (held, (armed, kept, refused, read, ())) = tokio::join!(job, group);
    held.unwrap();
    for (name, answer) in [("armed", armed.map(drop)), ("kept", kept.map(drop))] {
        assert!(
            matches!(answer, Err(StoreError::OutcomeUnknown(_))),
            "{name}: expected OutcomeUnknown, got {answer:?}"
        );
    }
    match refused {
        Err(StoreError::Backend(own)) => assert!(own.to_string().contains("refused"), "{own}"),
        other => panic!("a job refused on its own wrote nothing and says so, got {other:?}"),
    }
    assert!(
        matches!(read, Err(StoreError::Backend(_))),
        "a read is never of unknown outcome, got {read:?}"
    );
    assert_eq!(rows(&writer).await, [2], "the group committed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timer_write_whose_commit_failed_after_it_happened_is_outcome_unknown() {
    use loomfence_core::timer::{DueFilter, TimerRow};
    use loomfence_store::{StoreError, TimerStore};

    let file = TempFile::new("commit-after-timer");
    let store = SqliteEventStore::open(&file.0, SqliteOptions::default())
        .await
        .unwrap();
    let timers = store.timers();
    let row = TimerRow::redrive(ExecutionId::new("job-1").unwrap(), 5, 1);
    store.db().writer().fail_next_commit(CommitFault::After);
    let scheduled = timers.schedule(&row).await;
    assert!(
        matches!(scheduled, Err(StoreError::OutcomeUnknown(_))),
        "expected OutcomeUnknown, got {scheduled:?}"
    );
    assert_eq!(
        timers.due(5, 10, DueFilter::default()).await.unwrap(),
        [row],
        "the schedule landed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resume_driver_settles_a_resume_whose_commit_failed_after_it_happened() {
    let file = TempFile::new("commit-after-resume");
    let at = AT;
    let (store, id, parked) = store_with_job(&file, KernelKind::ExecutionSuspended).await;
    let request = ResumeRequest::new(parked[1].sequence, serde_json::json!("paid"), at);
    let mut machine = ResumeMachine::new(id.clone(), request, store.capability());
    let mut faulted = false;
    let ended = loop {
        // The fault hits the resume's own append, after its fence is taken.
        if !faulted && matches!(machine.poll(), Poll::Act(Action::AppendIfParked { .. })) {
            store.db().writer().fail_next_commit(CommitFault::After);
            faulted = true;
        }
        match loomfence_runtime::step::perform(&store, &mut machine).await {
            Ok(Stepped::Progressed) => {}
            Ok(Stepped::Done(ended)) => break ended,
            Ok(other) => panic!("a step this test does not know: {other:?}"),
            Err(failure) => panic!("the driver gave up on a resume that landed: {failure:?}"),
        }
    };
    assert!(faulted, "the resume appended");
    let resumed = ended.expect("the resume was settled as landed");
    assert_eq!(resumed.fence, Some(1));
    let log = store.read_range(&id, 1, None).await.unwrap();
    let kinds: Vec<&str> = log.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "EXECUTION_STARTED",
            "EXECUTION_SUSPENDED",
            "EXECUTION_RESUMED"
        ],
        "the resume is written once"
    );
    assert_eq!(
        log[2], resumed.resumed,
        "the driver reports the event that landed"
    );
}
