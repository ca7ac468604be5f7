//! Rows a timer store holds but cannot read (written behind its back, or
//! by a buggy writer): a claim leaves them unclaimed, reports them beside
//! its claims, named by their key, and still fills its page with the rows
//! it can read.
//!
//! A trait cannot be handed a corrupt row, so each adapter plants them
//! through its own [`RawTimerRows`]; what its table can hold is the
//! capability ([`Corruption`]). The in-memory store holds only rows the
//! core checked, so for it these cases are not applicable.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use loomfence_core::{
    log::MAX_ID_BYTES,
    timer::{DueFilter, TimerQuery, UnreadableField, UnreadableRow},
};
use loomfence_store::ClaimPage;

use super::Timers;
use super::support::{T0, lease, schedule_all, wake};
use crate::support::id;
use crate::{Report, panic_message};

/// Writes rows as they are, unchecked, straight into an adapter's table.
#[async_trait]
pub trait RawTimerRows: Send + Sync {
    /// Whether the `redrive` column can hold text that is not JSON at all
    /// (SQLite's `TEXT` can; PostgreSQL's `jsonb` refuses it).
    fn holds_invalid_json(&self) -> bool;

    /// Inserts the row `(execution_id, wake_at)` with `redrive` (raw JSON
    /// text, or SQL `NULL`) and claim count `claims`, unclaimed. Panics if
    /// the backend refuses it.
    async fn plant(&self, execution_id: &str, wake_at: i64, redrive: Option<&str>, claims: i64);
}

/// What rows a store can be made to hold that it did not write.
#[derive(Clone)]
pub enum Corruption {
    /// None: every row went through the core's checks (the memory stores).
    Impossible,
    /// Raw rows, planted with the adapter's own writer.
    Raw(Arc<dyn RawTimerRows>),
}

/// One shape of damage the cases plant.
#[derive(Clone, Debug)]
pub struct Damage {
    /// What is wrong, for messages; also the row's id where the id itself
    /// is not the damage.
    pub name: &'static str,
    /// The stored id.
    pub execution_id: String,
    /// The stored time, as an offset from [`T0`] (or absolute, when
    /// `absolute`).
    pub wake_at: i64,
    /// The stored flag's raw JSON text.
    pub redrive: Option<&'static str>,
    /// The stored claim count.
    pub claims: i64,
    /// The column the store names.
    pub field: UnreadableField,
    /// Needs a `redrive` column that holds non-JSON text.
    pub invalid_json: bool,
}

/// A damaged flag on row `name` at `T0 + offset`.
fn flag(name: &'static str, offset: i64, json: &'static str) -> Damage {
    Damage {
        name,
        execution_id: name.to_owned(),
        wake_at: T0 + offset,
        redrive: Some(json),
        claims: 0,
        field: UnreadableField::Redrive,
        invalid_json: false,
    }
}

/// Every damage the cases plant, each due at a distinct time before
/// `T0 + 100`.
#[must_use]
pub fn damages() -> Vec<Damage> {
    vec![
        Damage {
            invalid_json: true,
            ..flag("flag-not-json", 1, "{\"attempt\":")
        },
        flag("flag-json-null", 2, "null"),
        flag("flag-a-string", 3, "\"oops\""),
        flag("flag-an-array", 4, "[0]"),
        flag("flag-a-number", 5, "7"),
        flag("flag-no-attempt", 6, "{}"),
        flag("flag-attempt-text", 7, "{\"attempt\":\"1\"}"),
        flag("flag-attempt-fraction", 8, "{\"attempt\":1.5}"),
        flag("flag-attempt-negative", 9, "{\"attempt\":-1}"),
        flag("flag-attempt-null", 10, "{\"attempt\":null}"),
        flag("flag-attempt-too-large", 11, "{\"attempt\":2147483648}"),
        flag("flag-extra-field", 12, "{\"attempt\":1,\"reason\":\"x\"}"),
        Damage {
            execution_id: String::new(),
            redrive: None,
            field: UnreadableField::ExecutionId,
            ..flag("id-empty", 13, "")
        },
        Damage {
            execution_id: "x".repeat(MAX_ID_BYTES + 1),
            redrive: None,
            field: UnreadableField::ExecutionId,
            ..flag("id-too-long", 14, "")
        },
        Damage {
            wake_at: -5,
            redrive: None,
            field: UnreadableField::WakeAt,
            ..flag("time-negative", 0, "")
        },
        Damage {
            redrive: None,
            claims: -3,
            field: UnreadableField::Claims,
            ..flag("claims-negative", 15, "")
        },
    ]
}

/// Plants every damage `raw` can hold; answers what was planted.
async fn plant_all(raw: &dyn RawTimerRows) -> Vec<Damage> {
    let mut planted = Vec::new();
    for damage in damages() {
        if damage.invalid_json && !raw.holds_invalid_json() {
            continue;
        }
        raw.plant(
            &damage.execution_id,
            damage.wake_at,
            damage.redrive,
            damage.claims,
        )
        .await;
        planted.push(damage);
    }
    planted
}

/// The key and column each planted damage is reported under, sorted as a
/// page lists them.
fn expected(planted: &[Damage]) -> Vec<(String, Option<i64>, UnreadableField)> {
    let mut keys: Vec<_> = planted
        .iter()
        .map(|d| (d.wake_at, d.execution_id.clone(), d.field))
        .collect();
    keys.sort();
    keys.into_iter()
        .map(|(at, id, field)| (id, Some(at), field))
        .collect()
}

/// What a page reports, as keys and columns.
fn reported(page: &ClaimPage) -> Vec<(String, Option<i64>, UnreadableField)> {
    page.unreadable
        .iter()
        .map(|row| (row.execution_id.clone(), row.wake_at, row.field))
        .collect()
}

/// Every kind of damage, planted among readable rows due before, between
/// and after them: the claim takes the readable rows, and the damaged ones
/// come back beside them, named by key and column, unclaimed (a second
/// claim reports them again and claims nothing new).
pub async fn unreadable_rows_are_reported_beside_the_claims(
    store: Timers,
    raw: Arc<dyn RawTimerRows>,
) {
    let good = [
        wake("good-first", -10),
        wake("good-middle", 7),
        wake("good-last", 50),
    ];
    schedule_all(&store, &good).await;
    let planted = plant_all(&*raw).await;
    let page = store
        .claim_due(&lease("n1", 100), 100, DueFilter::default())
        .await
        .unwrap_or_else(|e| panic!("the claim fails on the unreadable rows: {e}"));
    let claimed: Vec<_> = page.claims.iter().map(|c| c.row.clone()).collect();
    assert_eq!(claimed, good.to_vec(), "the readable rows are claimed");
    assert_eq!(
        reported(&page),
        expected(&planted),
        "{:#?}",
        page.unreadable
    );
    for row in &page.unreadable {
        assert!(!row.detail.is_empty(), "{row:?} says what is wrong");
    }
    let again = store
        .claim_due(&lease("n2", 100), 100, DueFilter::default())
        .await
        .expect("claims again");
    assert_eq!(again.claims, [], "the damaged rows are never claimed");
    assert_eq!(
        reported(&again),
        expected(&planted),
        "and are still reported"
    );
}

/// A page of `limit` fills with readable rows even when more unreadable
/// rows than `limit` are due before them: they take no slot. A full page
/// reports at most `limit` of them, the earliest.
pub async fn unreadable_rows_take_no_page_slots(store: Timers, raw: Arc<dyn RawTimerRows>) {
    let planted = plant_all(&*raw).await;
    let good = [wake("good-a", 60), wake("good-b", 61), wake("good-c", 62)];
    schedule_all(&store, &good).await;
    let page = store
        .claim_due(&lease("n1", 100), 2, DueFilter::default())
        .await
        .unwrap_or_else(|e| panic!("the claim fails on the unreadable rows: {e}"));
    let claimed: Vec<_> = page.claims.iter().map(|c| c.row.clone()).collect();
    assert_eq!(
        claimed,
        good[..2].to_vec(),
        "{} bad rows due first",
        planted.len()
    );
    assert_eq!(reported(&page), expected(&planted)[..2].to_vec());
}

/// A node that asks for plain wakes only never reads a re-drive flag: a
/// damaged flag is neither claimed nor reported to it, while a damaged id
/// still is.
pub async fn a_plain_claim_reports_no_damaged_flag(store: Timers, raw: Arc<dyn RawTimerRows>) {
    let planted = plant_all(&*raw).await;
    schedule_all(&store, &[wake("good", 60)]).await;
    let page = store
        .claim_due(&lease("n1", 100), 10, DueFilter { redrive: false })
        .await
        .unwrap_or_else(|e| panic!("the plain claim fails: {e}"));
    assert_eq!(page.claims.len(), 1);
    let unflagged: Vec<_> = planted
        .into_iter()
        .filter(|d| d.redrive.is_none())
        .collect();
    assert_eq!(reported(&page), expected(&unflagged));
}

/// An operator's listing meets the same rows: it lists the readable ones
/// (with their claims), reports every damaged one in its range beside
/// them, named by key and column, and does not fail. Damaged rows take no
/// slot of a page, and a filter leaves them out as it leaves rows out.
pub async fn a_listing_reports_unreadable_rows_and_lists_the_rest(
    store: Timers,
    raw: Arc<dyn RawTimerRows>,
) {
    let good = [
        wake("good-first", -10),
        wake("good-middle", 7),
        wake("good-last", 50),
    ];
    schedule_all(&store, &good).await;
    let planted = plant_all(&*raw).await;
    let held = store
        .claim_due(&lease("n1", -10), 10, DueFilter::default())
        .await
        .expect("claims the first row")
        .claims;
    assert_eq!(held.len(), 1);
    let listing = store
        .list(&TimerQuery::default())
        .await
        .unwrap_or_else(|e| panic!("the listing fails on the unreadable rows: {e}"));
    let listed: Vec<_> = listing.entries.iter().map(|e| e.row.clone()).collect();
    assert_eq!(listed, good.to_vec(), "the readable rows are listed");
    assert_eq!(
        listing.entries[0].held.as_ref().map(|h| h.number),
        Some(held[0].number),
        "with their claims"
    );
    let keys = |rows: &[UnreadableRow]| -> Vec<_> {
        rows.iter()
            .map(|row| (row.execution_id.clone(), row.wake_at, row.field))
            .collect()
    };
    assert_eq!(
        keys(&listing.unreadable),
        expected(&planted),
        "{:#?}",
        listing.unreadable
    );
    for row in &listing.unreadable {
        assert!(!row.detail.is_empty(), "{row:?} says what is wrong");
    }
    // A page of two readable rows: the damaged rows before its second
    // take no slot, and at most two are reported.
    let page = store
        .list(&TimerQuery {
            limit: 2,
            ..TimerQuery::default()
        })
        .await
        .expect("lists a page");
    let listed: Vec<_> = page.entries.iter().map(|e| e.row.clone()).collect();
    assert_eq!(listed, good[..2].to_vec());
    assert_eq!(keys(&page.unreadable), expected(&planted)[..2].to_vec());
    // A page of one ends at the first readable row: only the damaged rows
    // before it are in its range (the rest belong to later pages).
    let first = store
        .list(&TimerQuery {
            limit: 1,
            ..TimerQuery::default()
        })
        .await
        .expect("lists a page of one");
    let listed: Vec<_> = first.entries.iter().map(|e| e.row.clone()).collect();
    assert_eq!(listed, good[..1].to_vec());
    let before_first: Vec<_> = expected(&planted)
        .into_iter()
        .filter(|(_, at, _)| at.is_some_and(|at| at < good[0].wake_at))
        .collect();
    assert!(!before_first.is_empty(), "a damaged row is due before it");
    assert_eq!(keys(&first.unreadable), before_first);
    // From time 0 on, the first readable row comes before every damaged
    // row of the range: a page of one reports none of them.
    let from_zero = store
        .list(&TimerQuery {
            after: Some((0, id("a"))),
            limit: 1,
            ..TimerQuery::default()
        })
        .await
        .expect("lists from time 0");
    let listed: Vec<_> = from_zero.entries.iter().map(|e| e.row.clone()).collect();
    assert_eq!(listed, good[..1].to_vec());
    assert_eq!(
        from_zero.unreadable,
        [],
        "the damaged rows come after the page"
    );
    // Another execution's damaged rows are outside the range.
    let one = store
        .list(&TimerQuery {
            execution: Some(id("good-middle")),
            ..TimerQuery::default()
        })
        .await
        .expect("lists one execution");
    assert_eq!(one.entries.len(), 1);
    assert_eq!(one.unreadable, []);
}

/// A running case.
pub type CaseFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// One case of the unreadable-row kit.
#[derive(Clone, Copy)]
pub struct UnreadableCase {
    /// The case's function name.
    pub name: &'static str,
    /// Runs the case; panics on failure.
    pub run: fn(Timers, Arc<dyn RawTimerRows>) -> CaseFuture,
}

/// The unreadable-row cases, in the order they run.
pub const ALL: &[UnreadableCase] = &[
    UnreadableCase {
        name: "unreadable_rows_are_reported_beside_the_claims",
        run: |store, raw| Box::pin(unreadable_rows_are_reported_beside_the_claims(store, raw)),
    },
    UnreadableCase {
        name: "unreadable_rows_take_no_page_slots",
        run: |store, raw| Box::pin(unreadable_rows_take_no_page_slots(store, raw)),
    },
    UnreadableCase {
        name: "a_plain_claim_reports_no_damaged_flag",
        run: |store, raw| Box::pin(a_plain_claim_reports_no_damaged_flag(store, raw)),
    },
    UnreadableCase {
        name: "a_listing_reports_unreadable_rows_and_lists_the_rest",
        run: |store, raw| {
            Box::pin(a_listing_reports_unreadable_rows_and_lists_the_rest(
                store, raw,
            ))
        },
    },
];

/// Runs every unreadable-row case against a fresh store from `make_store`
/// (with its [`Corruption`] capability), and panics if any failed. A store
/// that cannot hold a corrupt row reports every case not applicable.
pub async fn run_all<F, Fut>(label: &str, mut make_store: F) -> Report
where
    F: FnMut() -> Fut,
    Fut: Future<Output = (Timers, Corruption)>,
{
    let filter = std::env::var("LOOMFENCE_CASE").ok();
    let mut report = Report::default();
    for case in ALL {
        if filter.as_deref().is_some_and(|f| !case.name.contains(f)) {
            continue;
        }
        let (store, corruption) = make_store().await;
        let Corruption::Raw(raw) = corruption else {
            println!("unreadable-timers[{label}] n/a  {}", case.name);
            report.not_applicable.push(case.name);
            continue;
        };
        match tokio::spawn((case.run)(store, raw)).await {
            Ok(()) => {
                println!("unreadable-timers[{label}] ok   {}", case.name);
                report.passed += 1;
            }
            Err(join) => {
                let message = panic_message(join);
                println!("unreadable-timers[{label}] FAIL {}: {message}", case.name);
                report.failed.push((case.name, message));
            }
        }
    }
    assert!(
        report.failed.is_empty(),
        "unreadable-timers[{label}]: {} case(s) failed: {:#?}",
        report.failed.len(),
        report.failed
    );
    report
}
