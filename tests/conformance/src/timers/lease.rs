//! Lease claims: who may fire a row, until when, and who may retire it.

use std::collections::BTreeSet;
use std::sync::Arc;

use loomfence_core::timer::{Claim, Completed, DueFilter};
use tokio::sync::Barrier;

use super::Timers;
use super::support::{
    LEASE_MS, T0, all_rows, claim, claim_only, lease, node, readable, redrive, schedule_all, wake,
};

/// A claim takes the due rows nobody holds, earliest first, up to its
/// limit, numbered from 1, and leases them until `now + duration`.
pub async fn a_claim_takes_due_free_rows_earliest_first(store: Timers) {
    schedule_all(
        &store,
        &[wake("c", 2), wake("a", 0), wake("b", 1), wake("later", 9)],
    )
    .await;
    let claims = readable(
        store
            .claim_due(&lease("n1", 5), 2, DueFilter::default())
            .await
            .expect("claiming"),
    );
    assert_eq!(
        claims,
        vec![
            Claim {
                row: wake("a", 0),
                holder: node("n1"),
                number: 1,
                expires_at: T0 + 5 + LEASE_MS as i64,
            },
            Claim {
                row: wake("b", 1),
                holder: node("n1"),
                number: 1,
                expires_at: T0 + 5 + LEASE_MS as i64,
            },
        ]
    );
    let rest = claim(&store, &lease("n2", 5)).await;
    assert_eq!(
        rest.iter().map(|c| &c.row).collect::<Vec<_>>(),
        vec![&wake("c", 2)]
    );
}

/// A claim filtered to plain wakes skips re-drive rows before its limit,
/// and leaves them free for a node that can judge them.
pub async fn a_claim_honours_the_redrive_filter_before_the_limit(store: Timers) {
    let mut rows: Vec<_> = (0..5).map(|n| redrive(&format!("r{n}"), n, 0)).collect();
    rows.push(wake("plain", 10));
    schedule_all(&store, &rows).await;
    let plain = readable(
        store
            .claim_due(&lease("no-redrivers", 10), 1, DueFilter { redrive: false })
            .await
            .expect("claiming"),
    );
    assert_eq!(
        plain.iter().map(|c| &c.row).collect::<Vec<_>>(),
        vec![&wake("plain", 10)]
    );
    let redrives = claim(&store, &lease("redriver", 10)).await;
    assert_eq!(
        redrives.len(),
        5,
        "the re-drive rows stayed free: {redrives:?}"
    );
}

/// While its lease runs, a held row is not claimed by anyone, its holder
/// included.
pub async fn a_held_row_is_not_claimed_again(store: Timers) {
    schedule_all(&store, &[wake("p", 0)]).await;
    claim_only(&store, &lease("n1", 0), &wake("p", 0)).await;
    assert!(
        claim(&store, &lease("n2", LEASE_MS as i64 - 1))
            .await
            .is_empty()
    );
    assert!(claim(&store, &lease("n1", 1)).await.is_empty());
}

/// Eight nodes claim one due row at the same moment, twenty times over:
/// each time exactly one of them gets it.
pub async fn eight_concurrent_claimers_one_winner(store: Timers) {
    for round in 0..20_i64 {
        let row = wake(&format!("round-{round}"), round);
        schedule_all(&store, std::slice::from_ref(&row)).await;
        let start = Arc::new(Barrier::new(8));
        let claimers: Vec<_> = (0..8)
            .map(|n| {
                let store = Arc::clone(&store);
                let start = Arc::clone(&start);
                tokio::spawn(async move {
                    start.wait().await;
                    claim(&store, &lease(&format!("node-{n}"), round)).await
                })
            })
            .collect();
        let mut won = Vec::new();
        for claimer in claimers {
            won.extend(claimer.await.expect("a claimer panicked"));
        }
        assert_eq!(
            won.iter().map(|c| &c.row).collect::<Vec<_>>(),
            vec![&row],
            "round {round}: exactly one claimer gets the row"
        );
    }
}

/// Eight nodes draining 64 due rows in pages of 5 at once: every row is
/// claimed exactly once.
pub async fn concurrent_claimers_split_many_rows_without_overlap(store: Timers) {
    let rows: Vec<_> = (0..64)
        .map(|n| wake(&format!("row-{n:02}"), n % 7))
        .collect();
    schedule_all(&store, &rows).await;
    let start = Arc::new(Barrier::new(8));
    let claimers: Vec<_> = (0..8)
        .map(|n| {
            let store = Arc::clone(&store);
            let start = Arc::clone(&start);
            tokio::spawn(async move {
                start.wait().await;
                let mut mine = Vec::new();
                loop {
                    let page = store
                        .claim_due(&lease(&format!("node-{n}"), 10), 5, DueFilter::default())
                        .await
                        .expect("claiming")
                        .claims;
                    if page.is_empty() {
                        break mine;
                    }
                    mine.extend(page.into_iter().map(|c| c.row));
                }
            })
        })
        .collect();
    let mut claimed = Vec::new();
    for claimer in claimers {
        claimed.extend(claimer.await.expect("a claimer panicked"));
    }
    let distinct: BTreeSet<_> = claimed.iter().cloned().collect();
    assert_eq!(claimed.len(), 64, "every row claimed once: {claimed:?}");
    assert_eq!(distinct, rows.into_iter().collect());
}

/// A crashed claimer's row comes back when its lease ends (not a
/// millisecond before), under a higher claim number, and the old claim can
/// no longer retire it.
pub async fn an_expired_lease_comes_back_with_a_higher_number(store: Timers) {
    schedule_all(&store, &[wake("p", 0)]).await;
    let crashed = claim_only(&store, &lease("crashed", 0), &wake("p", 0)).await;
    let ends = LEASE_MS as i64;
    assert!(claim(&store, &lease("n2", ends - 1)).await.is_empty());
    let taken = claim_only(&store, &lease("n2", ends), &wake("p", 0)).await;
    assert_eq!(taken.number, crashed.number + 1);
    assert_eq!(
        store.complete(&crashed).await.expect("complete"),
        Completed::NotHeld
    );
    assert_eq!(all_rows(&store).await, vec![wake("p", 0)]);
    assert_eq!(
        store.complete(&taken).await.expect("complete"),
        Completed::Done
    );
    assert!(all_rows(&store).await.is_empty());
}

/// Another node's complete, or one naming the right node under a wrong
/// number, is refused and leaves the row held by its claimer.
pub async fn complete_retires_only_for_the_claimer(store: Timers) {
    schedule_all(&store, &[wake("p", 0)]).await;
    let held = claim_only(&store, &lease("owner", 0), &wake("p", 0)).await;
    let impostor = Claim {
        holder: node("impostor"),
        ..held.clone()
    };
    let wrong_number = Claim {
        number: held.number + 1,
        ..held.clone()
    };
    for refused in [&impostor, &wrong_number] {
        assert_eq!(
            store.complete(refused).await.expect("complete"),
            Completed::NotHeld
        );
    }
    assert_eq!(all_rows(&store).await, vec![wake("p", 0)]);
    assert!(
        claim(&store, &lease("third", 1)).await.is_empty(),
        "the owner still holds the row"
    );
    assert_eq!(
        store.complete(&held).await.expect("complete"),
        Completed::Done
    );
    assert!(all_rows(&store).await.is_empty());
}

/// A second complete of the same claim (a retry after an unknown outcome)
/// answers not held and retires nothing else.
pub async fn complete_twice_retires_once(store: Timers) {
    schedule_all(&store, &[wake("p", 0), wake("p", 1)]).await;
    let claims = claim(&store, &lease("n1", 0)).await;
    assert_eq!(claims.len(), 1);
    assert_eq!(
        store.complete(&claims[0]).await.expect("complete"),
        Completed::Done
    );
    assert_eq!(
        store.complete(&claims[0]).await.expect("complete"),
        Completed::NotHeld
    );
    assert_eq!(all_rows(&store).await, vec![wake("p", 1)]);
}

/// The lease's end only lets others take the row: a slow claimer whose
/// lease ended before anyone claimed the row again still retires it.
pub async fn a_claimer_whose_lease_ended_unclaimed_still_completes(store: Timers) {
    schedule_all(&store, &[wake("p", 0)]).await;
    let slow = claim_only(&store, &lease("slow", 0), &wake("p", 0)).await;
    assert_eq!(
        store.complete(&slow).await.expect("complete"),
        Completed::Done
    );
    assert!(all_rows(&store).await.is_empty());
}

/// A released row is due for anyone at once, and the released claim can
/// no longer retire it.
pub async fn release_hands_the_row_back_at_once(store: Timers) {
    schedule_all(&store, &[wake("p", 0)]).await;
    let first = claim_only(&store, &lease("stopping", 0), &wake("p", 0)).await;
    assert_eq!(
        store.release(&first).await.expect("release"),
        Completed::Done
    );
    let second = claim_only(&store, &lease("n2", 1), &wake("p", 0)).await;
    assert_eq!(second.number, first.number + 1);
    assert_eq!(
        store.complete(&first).await.expect("complete"),
        Completed::NotHeld
    );
    assert_eq!(
        store.release(&first).await.expect("release"),
        Completed::NotHeld
    );
    assert_eq!(
        store.complete(&second).await.expect("complete"),
        Completed::Done
    );
}

/// Only the claimer can release: anyone else's release changes nothing.
pub async fn release_by_a_non_claimer_changes_nothing(store: Timers) {
    schedule_all(&store, &[wake("p", 0)]).await;
    let held = claim_only(&store, &lease("owner", 0), &wake("p", 0)).await;
    let impostor = Claim {
        holder: node("impostor"),
        ..held.clone()
    };
    assert_eq!(
        store.release(&impostor).await.expect("release"),
        Completed::NotHeld
    );
    assert!(claim(&store, &lease("third", 1)).await.is_empty());
    assert_eq!(
        store.complete(&held).await.expect("complete"),
        Completed::Done
    );
}

/// A schedule of a claimed row's key (the execution re-parked on the same
/// time while a node was firing the old wait) ends the claim: the claimer's
/// complete is refused, so its decision cannot retire the new wait, and the
/// row is due for the next claimer at once, flag kept.
pub async fn a_schedule_on_a_claimed_row_voids_the_claim(store: Timers) {
    schedule_all(&store, &[redrive("p", 0, 1)]).await;
    let firing = claim_only(&store, &lease("firing", 0), &redrive("p", 0, 1)).await;
    schedule_all(&store, &[wake("p", 0)]).await;
    assert_eq!(
        store.complete(&firing).await.expect("complete"),
        Completed::NotHeld
    );
    assert_eq!(all_rows(&store).await, vec![redrive("p", 0, 1)]);
    let next = claim_only(&store, &lease("next", 1), &redrive("p", 0, 1)).await;
    assert!(next.number > firing.number);
    assert_eq!(
        store.release(&firing).await.expect("release"),
        Completed::NotHeld
    );
}
