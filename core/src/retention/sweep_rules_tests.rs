//! The rules the hosts' sweep drivers used to hold themselves, now the
//! machine's: options refused before listing, a broken store's answers,
//! what a failed action means, and when a page is done.

use super::*;
use crate::contract::ContractError;
use crate::event::{Envelope, NewEvent};
use crate::input::{ExecutionId, InputError};
use crate::kind::KernelKind;
use crate::lineage::started_child;

fn id(s: &str) -> ExecutionId {
    ExecutionId::new(s).expect("valid")
}

fn options(page_limit: u32) -> SweepOptions {
    SweepOptions {
        page_limit,
        ..SweepOptions::new(5_000)
    }
}

/// A summary of `s`: a log of `head` events that ended at `ended`.
fn summary(s: &str, head: u64, ended: Option<u64>) -> ExecutionSummary {
    ExecutionSummary {
        execution_id: id(s),
        head,
        ended: ended.map(|sequence| Ended {
            sequence,
            at: 1_000,
        }),
    }
}

/// The log of an old root `s`, at sequences `seqs`.
fn log(s: &str, seqs: &[u64]) -> Vec<Envelope> {
    seqs.iter()
        .map(|&seq| {
            NewEvent::kernel(KernelKind::ExecutionCompleted, 1_000).into_envelope(id(s), seq)
        })
        .collect()
}

/// A machine waiting for the log of old root `a`.
fn reading_a() -> SweepMachine {
    let mut machine = SweepMachine::new(options(2));
    machine
        .handle_page(vec![summary("a", 1, Some(1))])
        .expect("a page");
    machine
}

/// A machine waiting for the delete of `c`, whose parent `p` was read at
/// head 1.
fn deleting_c() -> SweepMachine {
    let mut machine = SweepMachine::new(options(2));
    machine
        .handle_page(vec![summary("c", 2, Some(2))])
        .expect("a page");
    let events = vec![
        started_child(&id("p"), 0).into_envelope(id("c"), 1),
        NewEvent::kernel(KernelKind::ExecutionCompleted, 1_000).into_envelope(id("c"), 2),
    ];
    machine
        .handle_logs(vec![events], Vec::new())
        .expect("the log");
    let parent = vec![NewEvent::kernel(KernelKind::ExecutionStarted, 0).into_envelope(id("p"), 1)];
    machine.handle_parents(vec![parent]).expect("the parent");
    assert!(matches!(
        machine.poll(),
        SweepPoll::Act(SweepAction::Delete { .. })
    ));
    machine
}

#[test]
fn options_default_and_are_refused_before_anything_is_listed() {
    let options = SweepOptions::new(7);
    assert_eq!(
        (
            options.ended_before,
            options.page_limit,
            options.archive,
            options.dry_run
        ),
        (7, SweepOptions::DEFAULT_PAGE_LIMIT, false, false)
    );
    assert_eq!(options.check(false), Ok(()));
    for limit in [0, crate::retention::MAX_PAGE_LIMIT + 1] {
        assert_eq!(
            self::options(limit).check(true),
            Err(InputError::Limit {
                what: "limit",
                value: limit.into(),
                max: crate::retention::MAX_PAGE_LIMIT.into(),
            })
        );
    }
    assert_eq!(
        self::options(crate::retention::MAX_PAGE_LIMIT).check(false),
        Ok(())
    );
    for dry_run in [false, true] {
        let archiving = SweepOptions {
            archive: true,
            dry_run,
            ..options
        };
        assert_eq!(archiving.check(false), Err(InputError::ArchiveWithoutSink));
        assert_eq!(archiving.check(true), Ok(()));
    }
}

#[test]
fn a_listing_past_its_limit_or_with_a_summary_outside_its_log_is_refused() {
    let mut machine = SweepMachine::new(options(2));
    let before = machine.clone();
    let three = vec![
        summary("a", 1, None),
        summary("b", 1, None),
        summary("c", 1, None),
    ];
    assert_eq!(
        machine.handle_page(three),
        Err(ContractError::PageOverLimit {
            limit: 2,
            listed: 3
        })
    );
    for (head, ended) in [(0, None), (2, Some(0)), (2, Some(3))] {
        assert_eq!(
            machine.handle_page(vec![summary("a", head, ended)]),
            Err(ContractError::InvalidSummary {
                execution_id: id("a"),
                head,
                ended
            })
        );
    }
    assert_eq!(machine, before, "nothing was taken from a refused page");
    machine
        .handle_page(vec![summary("a", 2, Some(2)), summary("b", 1, None)])
        .expect("a page within its bounds");
}

#[test]
fn a_repeated_cursor_names_the_id_listed_again() {
    let mut machine = SweepMachine::new(options(2));
    machine
        .handle_page(vec![summary("p", 1, None)])
        .expect("a page");
    let error = machine
        .handle_page(vec![summary("p", 1, None)])
        .expect_err("the cursor again");
    assert!(error.to_string().contains(r#"listed "p" again"#), "{error}");
}

#[test]
fn a_log_not_from_sequence_one_contiguous_is_refused() {
    for seqs in [&[2][..], &[1, 3], &[1, 1]] {
        let mut machine = reading_a();
        let before = machine.clone();
        let error = machine
            .handle_logs(vec![log("a", seqs)], Vec::new())
            .expect_err("not whole");
        assert!(
            matches!(error, ContractError::LogNotWhole { .. }),
            "{seqs:?}: {error}"
        );
        assert_eq!(machine, before);
    }
    let mut machine = SweepMachine::new(options(2));
    machine
        .handle_page(vec![summary("c", 2, Some(2))])
        .expect("a page");
    let events = vec![
        started_child(&id("p"), 0).into_envelope(id("c"), 1),
        NewEvent::kernel(KernelKind::ExecutionCompleted, 1_000).into_envelope(id("c"), 2),
    ];
    machine
        .handle_logs(vec![events], Vec::new())
        .expect("the log");
    assert!(matches!(
        machine.handle_parents(vec![log("p", &[2])]),
        Err(ContractError::LogNotWhole { .. })
    ));
}

#[test]
fn a_refusal_that_does_not_answer_the_guard_is_refused() {
    for outcome in [
        GuardedDelete::LogChanged { head: 2 },
        GuardedDelete::ParentMoved {
            parent: id("stranger"),
        },
    ] {
        let mut machine = deleting_c();
        let before = machine.clone();
        assert_eq!(
            machine.handle_deleted(vec![outcome.clone()]),
            Err(ContractError::OutcomeOutsideGuard {
                execution_id: id("c"),
                outcome
            })
        );
        assert_eq!(machine, before);
    }
    for outcome in [
        GuardedDelete::LogChanged { head: 3 },
        GuardedDelete::LogChanged { head: 0 },
        GuardedDelete::ParentMoved { parent: id("p") },
    ] {
        let mut machine = deleting_c();
        machine
            .handle_deleted(vec![outcome.clone()])
            .expect("a refusal");
        assert_eq!(machine.report().kept.len(), 1, "{outcome:?}");
    }
}

#[test]
fn a_read_that_fails_for_good_is_undecided_and_anything_else_stops() {
    let mut machine = reading_a();
    let before = machine.clone();
    assert_eq!(
        machine.handle_failed(SweepFailure::MayPass),
        Ok(SweepFailureVerdict::Stop)
    );
    assert_eq!(machine, before, "a stop leaves the machine as it was");
    let for_good = || SweepFailure::ForGood {
        detail: "a row cannot be decoded".into(),
    };
    assert_eq!(
        machine.handle_failed(for_good()),
        Ok(SweepFailureVerdict::GoOn)
    );
    assert_eq!(machine.report().undecided.len(), 1);
    assert_eq!(machine.report().log_reads, 1);

    // A listing, an archive or a delete that fails stops, for good or not.
    let mut listing = SweepMachine::new(options(2));
    assert_eq!(
        listing.handle_failed(for_good()),
        Ok(SweepFailureVerdict::Stop)
    );
    let mut deleting = deleting_c();
    let before = deleting.clone();
    assert_eq!(
        deleting.handle_failed(for_good()),
        Ok(SweepFailureVerdict::Stop)
    );
    assert_eq!(deleting, before);

    listing.handle_page(Vec::new()).expect("the end");
    assert!(matches!(
        listing.handle_failed(SweepFailure::MayPass),
        Err(ContractError::UnexpectedInput { .. })
    ));
}

#[test]
fn a_page_is_done_once_everything_on_it_is_decided() {
    let mut machine = SweepMachine::new(options(2));
    assert!(!machine.poll_page_done(), "nothing listed yet");
    machine
        .handle_page(vec![summary("a", 1, Some(1)), summary("run", 1, None)])
        .expect("a page");
    assert!(!machine.poll_page_done(), "a is still to decide");
    machine
        .handle_logs(vec![log("a", &[1])], Vec::new())
        .expect("a's log");
    assert!(!machine.poll_page_done(), "a is still to delete");
    machine
        .handle_deleted(vec![GuardedDelete::Deleted])
        .expect("deleted");
    assert!(machine.poll_page_done(), "the page is done");
    assert!(!machine.poll_page_done(), "and said once");
    machine.handle_page(Vec::new()).expect("the end");
    assert!(
        machine.poll_page_done(),
        "the empty last page is a page too"
    );
    assert!(matches!(machine.poll(), SweepPoll::Done(_)));
}
