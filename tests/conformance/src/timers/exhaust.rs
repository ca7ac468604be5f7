//! Exhaustion: a fire that gives up retires its row and records the
//! exhaustion in one step under its claim; the records are listed in key
//! order and cleared by an operator's recovery.

use loomfence_core::timer::{Claim, Completed, ExhaustedQuery, ExhaustedRow, Exhaustion, TimerRow};

use super::Timers;
use super::support::{
    LEASE_MS, T0, all_rows, claim, claim_only, lease, node, redrive, schedule_all, wake,
};
use crate::support::id;

/// An exhaustion of `attempts` tries given up at `T0 + offset`.
#[must_use]
pub fn given_up(attempts: u32, offset: i64) -> Exhaustion {
    Exhaustion {
        attempts,
        at: T0 + offset,
    }
}

/// Every exhausted record of the store, in key order.
pub async fn all_records(store: &Timers) -> Vec<ExhaustedRow> {
    store
        .exhausted(&ExhaustedQuery::default())
        .await
        .expect("lists the exhausted records")
}

/// Exhausts `claim` with `exhaustion` and expects it done.
async fn exhaust_done(store: &Timers, claim: &Claim, exhaustion: Exhaustion) {
    assert_eq!(
        store
            .exhaust(claim, &exhaustion)
            .await
            .unwrap_or_else(|e| panic!("exhausting {claim:?}: {e}")),
        Completed::Done,
        "{claim:?} is current"
    );
}

/// Under its current claim, an exhaustion retires the row and keeps a
/// record of it: its key and re-drive flag as stored, the tries and the
/// time given. A plain row's record has no flag. The claim is then void.
pub async fn an_exhaustion_under_the_claim_retires_the_row_and_keeps_the_record(store: Timers) {
    schedule_all(&store, &[redrive("p", 0, 2), wake("q", 5), wake("r", 9)]).await;
    let chain = claim_only(&store, &lease("n1", 0), &redrive("p", 0, 2)).await;
    exhaust_done(&store, &chain, given_up(3, 10)).await;
    assert_eq!(all_rows(&store).await, vec![wake("q", 5), wake("r", 9)]);
    assert_eq!(
        all_records(&store).await,
        vec![ExhaustedRow::new(redrive("p", 0, 2), given_up(3, 10))]
    );
    assert_eq!(
        store.complete(&chain).await.expect("answers"),
        Completed::NotHeld,
        "the exhausted row is gone"
    );
    assert_eq!(
        store
            .exhaust(&chain, &given_up(9, 11))
            .await
            .expect("answers"),
        Completed::NotHeld,
        "and cannot be exhausted twice"
    );
    let plain = claim_only(&store, &lease("n2", 5), &wake("q", 5)).await;
    exhaust_done(&store, &plain, given_up(5, 20)).await;
    assert_eq!(all_rows(&store).await, vec![wake("r", 9)]);
    assert_eq!(
        all_records(&store).await,
        vec![
            ExhaustedRow::new(redrive("p", 0, 2), given_up(3, 10)),
            ExhaustedRow::new(wake("q", 5), given_up(5, 20)),
        ]
    );
}

/// A claim that is not the row's current one (another holder's, an older
/// number after the lease was taken over, one voided by a schedule, one
/// whose row was rescheduled or released) records nothing and leaves the
/// row as it was; the current claim then exhausts it.
pub async fn a_stale_claim_records_no_exhaustion(store: Timers) {
    schedule_all(&store, &[redrive("p", 0, 1)]).await;
    let stale = claim_only(&store, &lease("n1", 0), &redrive("p", 0, 1)).await;
    let current = claim_only(&store, &lease("n2", LEASE_MS as i64), &redrive("p", 0, 1)).await;
    assert!(current.number > stale.number);
    let forged_holder = Claim {
        holder: node("n3"),
        ..current.clone()
    };
    let older_number = Claim {
        number: stale.number,
        ..current.clone()
    };
    for claim in [&stale, &forged_holder, &older_number] {
        assert_eq!(
            store
                .exhaust(claim, &given_up(4, 1))
                .await
                .expect("answers"),
            Completed::NotHeld,
            "{claim:?} is not current"
        );
    }
    assert_eq!(all_rows(&store).await, vec![redrive("p", 0, 1)]);
    assert_eq!(all_records(&store).await, []);
    // A schedule on the held row voids the claim.
    store.schedule(&wake("p", 0)).await.expect("schedules");
    assert_eq!(
        store
            .exhaust(&current, &given_up(4, 1))
            .await
            .expect("answers"),
        Completed::NotHeld
    );
    // So does a reschedule by the claimer, and a release.
    let moved = claim_only(
        &store,
        &lease("n4", 2 * LEASE_MS as i64),
        &redrive("p", 0, 1),
    )
    .await;
    assert_eq!(
        store
            .reschedule(&moved, &redrive("p", 100, 2))
            .await
            .expect("reschedules"),
        Completed::Done
    );
    assert_eq!(
        store
            .exhaust(&moved, &given_up(4, 1))
            .await
            .expect("answers"),
        Completed::NotHeld
    );
    let handed_back = claim_only(&store, &lease("n5", 100), &redrive("p", 100, 2)).await;
    assert_eq!(
        store.release(&handed_back).await.expect("releases"),
        Completed::Done
    );
    assert_eq!(
        store
            .exhaust(&handed_back, &given_up(4, 1))
            .await
            .expect("answers"),
        Completed::NotHeld
    );
    assert_eq!(all_rows(&store).await, vec![redrive("p", 100, 2)]);
    assert_eq!(all_records(&store).await, [], "nothing was recorded");
    let last = claim_only(&store, &lease("n6", 100), &redrive("p", 100, 2)).await;
    exhaust_done(&store, &last, given_up(3, 101)).await;
    assert_eq!(
        all_records(&store).await,
        vec![ExhaustedRow::new(redrive("p", 100, 2), given_up(3, 101))]
    );
    assert_eq!(all_rows(&store).await, []);
}

/// A second exhaustion of the same key replaces the record: one record,
/// the later flag, tries and time.
pub async fn a_second_exhaustion_of_a_key_replaces_the_record(store: Timers) {
    schedule_all(&store, &[redrive("p", 0, 0)]).await;
    let first = claim_only(&store, &lease("n1", 0), &redrive("p", 0, 0)).await;
    exhaust_done(&store, &first, given_up(1, 1)).await;
    schedule_all(&store, &[wake("p", 0)]).await;
    let plain = claim_only(&store, &lease("n1", 2), &wake("p", 0)).await;
    exhaust_done(&store, &plain, given_up(2, 3)).await;
    assert_eq!(
        all_records(&store).await,
        vec![ExhaustedRow::new(wake("p", 0), given_up(2, 3))],
        "a plain record replaces a re-drive one"
    );
    schedule_all(&store, &[redrive("p", 0, 4)]).await;
    let again = claim_only(&store, &lease("n2", 4), &redrive("p", 0, 4)).await;
    exhaust_done(&store, &again, given_up(5, 5)).await;
    assert_eq!(
        all_records(&store).await,
        vec![ExhaustedRow::new(redrive("p", 0, 4), given_up(5, 5))]
    );
}

/// Schedules `rows`, claims them all, and exhausts each with its index as
/// the tries; answers the records in key order.
async fn exhaust_all(store: &Timers, rows: &[TimerRow]) -> Vec<ExhaustedRow> {
    schedule_all(store, rows).await;
    let claims = claim(store, &lease("n1", 1_000)).await;
    assert_eq!(claims.len(), rows.len());
    let mut records = Vec::new();
    for held in claims {
        let index = rows
            .iter()
            .position(|row| *row == held.row)
            .expect("a scheduled row");
        let exhaustion = given_up(u32::try_from(index).unwrap_or(0), 2_000);
        exhaust_done(store, &held, exhaustion).await;
        records.push(ExhaustedRow::new(held.row, exhaustion));
    }
    records.sort_by(|a, b| {
        (a.row.execution_id.as_str().as_bytes(), a.row.wake_at)
            .cmp(&(b.row.execution_id.as_str().as_bytes(), b.row.wake_at))
    });
    records
}

/// The records come in `(execution_id, wake_at)` order, ids compared as
/// bytes; the execution filter and `after` apply before the limit, and
/// pages chained by `after` cover every record once.
pub async fn exhausted_records_come_in_key_order_filtered_and_paged(store: Timers) {
    let rows = [
        wake("b", 0),
        redrive("a", 30, 1),
        wake("é", 10),
        wake("B", 20),
        wake("a", 10),
        redrive("a", 20, 0),
        wake("a b", 5),
    ];
    let expected = exhaust_all(&store, &rows).await;
    let ids: Vec<_> = expected
        .iter()
        .map(|r| (r.row.execution_id.as_str().to_owned(), r.row.wake_at - T0))
        .collect();
    assert_eq!(
        ids,
        [
            ("B".to_owned(), 20),
            ("a".to_owned(), 10),
            ("a".to_owned(), 20),
            ("a".to_owned(), 30),
            ("a b".to_owned(), 5),
            ("b".to_owned(), 0),
            ("é".to_owned(), 10),
        ],
        "the expectation itself is in byte order"
    );
    assert_eq!(all_records(&store).await, expected);
    let of_a = ExhaustedQuery {
        execution: Some(id("a")),
        limit: 2,
        ..ExhaustedQuery::default()
    };
    assert_eq!(
        store.exhausted(&of_a).await.expect("lists"),
        expected[1..3].to_vec(),
        "one execution's records, before the limit"
    );
    let of_a_after = ExhaustedQuery {
        after: Some((id("a"), T0 + 10)),
        ..of_a.clone()
    };
    assert_eq!(
        store.exhausted(&of_a_after).await.expect("lists"),
        expected[2..4].to_vec()
    );
    let after_all_of_a = ExhaustedQuery {
        after: Some((id("a"), T0 + 30)),
        ..of_a
    };
    assert_eq!(store.exhausted(&after_all_of_a).await.expect("lists"), []);
    // An `after` key that is not a record's pages just the same.
    let between = ExhaustedQuery {
        after: Some((id("a"), T0 + 25)),
        limit: 3,
        ..ExhaustedQuery::default()
    };
    assert_eq!(
        store.exhausted(&between).await.expect("lists"),
        expected[3..6].to_vec()
    );
    let mut paged = Vec::new();
    let mut query = ExhaustedQuery {
        limit: 2,
        ..ExhaustedQuery::default()
    };
    // Bounded: an `after` that admits its own key would page forever.
    for _ in 0..=expected.len() {
        let page = store.exhausted(&query).await.expect("lists a page");
        assert!(page.len() <= 2);
        let Some(last) = page.last() else { break };
        query.after = Some((last.row.execution_id.clone(), last.row.wake_at));
        paged.extend(page);
    }
    assert_eq!(paged, expected, "the pages cover every record once");
}

/// A clear answers whether there was a record, removes only that one, and
/// leaves the live rows alone.
pub async fn clear_exhausted_answers_whether_there_was_a_record(store: Timers) {
    let records = exhaust_all(&store, &[wake("p", 0), wake("p", 5), wake("q", 0)]).await;
    schedule_all(&store, &[wake("p", 0)]).await;
    assert!(
        store.clear_exhausted(&id("p"), T0).await.expect("clears"),
        "there was a record"
    );
    assert!(
        !store.clear_exhausted(&id("p"), T0).await.expect("clears"),
        "there is none now"
    );
    assert!(
        !store
            .clear_exhausted(&id("never"), T0)
            .await
            .expect("clears"),
    );
    assert_eq!(all_records(&store).await, records[1..].to_vec());
    assert_eq!(
        all_rows(&store).await,
        vec![wake("p", 0)],
        "a clear touches no live row"
    );
}
