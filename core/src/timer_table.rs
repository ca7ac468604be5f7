//! The timer store's rules, pure: what a schedule, a due listing, a lease
//! claim, a complete and a release do to a table of timer rows.
//!
//! Every timer store (memory, SQLite, PostgreSQL, a host's own in
//! JavaScript) keeps rows keyed `(execution_id, wake_at)` and answers the
//! same six operations; [`TimerTable`] is the reference, used as is by the
//! in-memory stores and the simulation, and the SQL adapters state the same
//! rules in their statements. The conformance kit holds them all to it.
//!
//! # The rules
//!
//! - **Schedule is an upsert that never downgrades.** A second schedule of
//!   the same key keeps a re-drive flag that is there (a plain schedule
//!   never clears it) and adds one that comes (a re-drive row landing on a
//!   plain row flags it): `redrive = coalesce(new.redrive, old.redrive)`.
//!   It also ends any claim on the row, so the claimer's
//!   [`complete`](TimerTable::complete) answers
//!   [`Completed::NotHeld`]: the claimer decided on what it read before the
//!   schedule, and a park that re-parked on the same time must not lose its
//!   wake to that decision. The row is due again at once.
//! - **Due filters before the limit.** [`DueFilter::redrive`] `false`
//!   leaves re-drive rows out of the listing itself, so a page of rows a
//!   node cannot judge never hides the plain wakes behind it.
//! - **A claim is a lease.** [`claim_due`](TimerTable::claim_due) takes the
//!   earliest due rows that nobody holds (or whose holder's lease has
//!   expired) and gives each a numbered [`Claim`] until `now +
//!   duration_ms`. Two claimers never hold one row at once; a crashed
//!   claimer's rows come back when its lease ends.
//! - **Only the claimer retires.** [`complete`](TimerTable::complete) and
//!   [`release`](TimerTable::release) act only for the current claim (same
//!   holder, same claim number); anyone else is answered
//!   [`Completed::NotHeld`] and nothing changes. A claimer whose lease
//!   expired but whose row nobody re-claimed still holds it.
//! - **A re-drive chain moves on in one step.**
//!   [`reschedule`](TimerTable::reschedule) retires the claimed row and
//!   schedules the next one (with the upsert rules above) only while the
//!   claim is current, else it answers [`Completed::NotHeld`] and writes
//!   nothing. A schedule then a complete would let a fire that outlived its
//!   lease write a next row beside the one the row's new claimer writes:
//!   two branches of one chain, each of which may report exhaustion.
//!
//! Ordering is by `(wake_at, execution_id)`, earliest first.

use serde::{Deserialize, Serialize};

use crate::fire::{Redrive, TimerRow};
use crate::input::{ExecutionId, checked_name};
use crate::input::{InputError, MAX_DUE_LIMIT, MAX_LEASE_MS, MAX_REDRIVE_ATTEMPT};
use crate::redrive_policy::MAX_TIMER_MS;
use crate::timer_records::{
    ExhaustedQuery, ExhaustedRow, Exhaustion, Held, TimerEntry, TimerQuery, check_clear,
    check_exhaust,
};

checked_name! {
    /// Which node holds a claim: a validated name with the execution id's
    /// rules (1 to 255 bytes of UTF-8, no NUL).
    ///
    /// It is the identity a claim is checked against, so two processes must
    /// not share one; a host makes it from its hostname and process id, or a
    /// random value.
    NodeId
}

/// Which due rows a listing or a claim includes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct DueFilter {
    /// Include re-drive rows. A node with no re-driver registered sets this
    /// to `false`: it cannot judge them and must not let them fill its page.
    pub redrive: bool,
}

impl Default for DueFilter {
    /// Every due row.
    fn default() -> Self {
        Self { redrive: true }
    }
}

/// A claim request: who claims, at what time, for how long.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Lease {
    /// The claiming node.
    pub holder: NodeId,
    /// The claimer's current time, in ms since the epoch: rows due at or
    /// before it are claimed, and leases that ended at or before it are
    /// taken over.
    pub now: i64,
    /// How long the claim lasts, `1..=MAX_LEASE_MS`; it should exceed one
    /// fire's longest run, or a slow fire's row is claimed again meanwhile.
    pub duration_ms: u64,
}

/// A row held under a lease: what [`TimerTable::complete`] and
/// [`TimerTable::release`] are checked against.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Claim {
    /// The row as claimed.
    pub row: TimerRow,
    /// Who holds it.
    pub holder: NodeId,
    /// The row's claim count at this claim, from 1: a later claim of the
    /// same row (after the lease ended) has a higher one, so an old claim
    /// can never retire a row someone claimed since.
    pub number: u64,
    /// When the lease ends, in ms since the epoch.
    pub expires_at: i64,
}

/// What a complete or a release did.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Completed {
    /// The claim was current: the row was retired (complete) or handed
    /// back (release).
    Done,
    /// The claim is not current (the row is gone, was scheduled again, or
    /// was claimed by someone else after the lease ended): nothing changed.
    /// For a fire, the decision it made is void; the row is someone else's.
    NotHeld,
}

/// Checks a row before it is written.
pub fn check_row(row: &TimerRow) -> Result<(), InputError> {
    row.check()?;
    if let Some(Redrive { attempt }) = row.redrive
        && attempt > MAX_REDRIVE_ATTEMPT
    {
        return Err(InputError::Attempt { attempt });
    }
    Ok(())
}

/// Checks a listing's time and limit.
pub fn check_due(now: i64, limit: usize) -> Result<(), InputError> {
    check_now(now)?;
    if limit == 0 || limit > MAX_DUE_LIMIT {
        return Err(InputError::DueLimit { limit });
    }
    Ok(())
}

/// Checks a claim request and returns when its leases end.
pub fn check_lease(lease: &Lease, limit: usize) -> Result<i64, InputError> {
    check_due(lease.now, limit)?;
    let refused = InputError::LeaseDuration {
        duration_ms: lease.duration_ms,
        now: lease.now,
    };
    if lease.duration_ms == 0 || lease.duration_ms > MAX_LEASE_MS {
        return Err(refused);
    }
    let expires_at = lease.now.saturating_add_unsigned(lease.duration_ms);
    if expires_at > MAX_TIMER_MS {
        return Err(refused);
    }
    Ok(expires_at)
}

/// Checks a claim handed back by a caller (from JavaScript, say): its row's
/// time and attempt. The holder is a [`NodeId`], checked when it was made.
pub fn check_claim(claim: &Claim) -> Result<(), InputError> {
    check_row(&claim.row)
}

/// Checks a reschedule: the claim, the next row, and that the two keys
/// differ.
pub fn check_reschedule(claim: &Claim, next: &TimerRow) -> Result<(), InputError> {
    check_claim(claim)?;
    check_row(next)?;
    if claim.row.due_key() == next.due_key() {
        return Err(InputError::SameKey {
            execution_id: next.execution_id.clone(),
            wake_at: next.wake_at,
        });
    }
    Ok(())
}

/// Checks a `now` argument.
fn check_now(now: i64) -> Result<(), InputError> {
    if (0..=MAX_TIMER_MS).contains(&now) {
        Ok(())
    } else {
        Err(InputError::Time {
            what: "now",
            value: now,
        })
    }
}

/// One row's state beyond its key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Slot {
    /// The re-drive flag.
    redrive: Option<Redrive>,
    /// The current claim: holder and when its lease ends.
    held: Option<(NodeId, i64)>,
    /// How many times the row was claimed: the current claim's number.
    claims: u64,
}

/// A table of timer rows under the rules above, with no IO: the in-memory
/// timer stores and the simulation use it as is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TimerTable {
    /// Exhausted records sorted by `(execution_id, wake_at)`, beside the
    /// rows (see [`crate::timer_records`]); a sorted vector for the same
    /// reason as the rows.
    exhausted: Vec<ExhaustedRow>,
    /// Rows sorted by `(wake_at, execution_id)`, so a due scan stops at
    /// the first row that is not due. A sorted vector rather than a sorted
    /// map: a new row shifts the later ones (microseconds at the tens of
    /// thousands of rows an in-process store holds), and the npm package,
    /// which ships this table, stays about 10 KB smaller.
    rows: Vec<((i64, ExecutionId), Slot)>,
}

impl TimerTable {
    /// An empty table.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// How many rows there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are no rows.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Writes `row`, or merges it into the row with its key (the flag is
    /// kept or added, never cleared; a claim on it ends).
    pub fn schedule(&mut self, row: &TimerRow) -> Result<(), InputError> {
        check_row(row)?;
        let at = match self.find(row.wake_at, &row.execution_id) {
            Ok(at) => at,
            Err(at) => {
                let fresh = Slot {
                    redrive: None,
                    held: None,
                    claims: 0,
                };
                self.rows
                    .insert(at, ((row.wake_at, row.execution_id.clone()), fresh));
                at
            }
        };
        let slot = &mut self.rows[at].1;
        slot.redrive = row.redrive.or(slot.redrive);
        slot.held = None;
        Ok(())
    }

    /// Up to `limit` rows due at `now` (`wake_at <= now`), earliest first,
    /// whether claimed or not, re-drive rows only if `filter` says so.
    pub fn due(
        &self,
        now: i64,
        limit: usize,
        filter: DueFilter,
    ) -> Result<Vec<TimerRow>, InputError> {
        check_due(now, limit)?;
        Ok(self
            .due_slots(now, filter)
            .map(|((wake_at, id), slot)| row_of(*wake_at, id, slot))
            .take(limit)
            .collect())
    }

    /// Claims up to `limit` due rows that nobody holds (or whose lease ended
    /// at or before `lease.now`), earliest first, for `lease.holder` until
    /// `lease.now + lease.duration_ms`.
    pub fn claim_due(
        &mut self,
        lease: &Lease,
        limit: usize,
        filter: DueFilter,
    ) -> Result<Vec<Claim>, InputError> {
        let expires_at = check_lease(lease, limit)?;
        let now = lease.now;
        let mut claims = Vec::new();
        for ((wake_at, id), slot) in &mut self.rows {
            if *wake_at > now || claims.len() == limit {
                break;
            }
            let free = slot.held.as_ref().is_none_or(|(_, until)| *until <= now);
            if !free || (slot.redrive.is_some() && !filter.redrive) {
                continue;
            }
            slot.claims += 1;
            slot.held = Some((lease.holder.clone(), expires_at));
            claims.push(Claim {
                row: row_of(*wake_at, id, slot),
                holder: lease.holder.clone(),
                number: slot.claims,
                expires_at,
            });
        }
        Ok(claims)
    }

    /// Retires the claimed row, if `claim` is still its current claim.
    pub fn complete(&mut self, claim: &Claim) -> Result<Completed, InputError> {
        check_claim(claim)?;
        if let Some(at) = self.held_by(claim) {
            self.rows.remove(at);
            Ok(Completed::Done)
        } else {
            Ok(Completed::NotHeld)
        }
    }

    /// Retires the claimed row and schedules `next` (as
    /// [`schedule`](TimerTable::schedule) does) in one step, if `claim` is
    /// still the row's current claim; otherwise answers
    /// [`Completed::NotHeld`] and writes nothing, so a fire that lost its
    /// row cannot fork its chain.
    pub fn reschedule(&mut self, claim: &Claim, next: &TimerRow) -> Result<Completed, InputError> {
        check_reschedule(claim, next)?;
        let Some(at) = self.held_by(claim) else {
            return Ok(Completed::NotHeld);
        };
        self.rows.remove(at);
        self.schedule(next)?;
        Ok(Completed::Done)
    }

    /// Retires the claimed row and records its exhaustion in one step, if
    /// `claim` is still the row's current claim; otherwise answers
    /// [`Completed::NotHeld`] and records nothing, so a fire that lost its
    /// row cannot record an exhaustion the row's new claimer may not reach.
    /// A record already kept for the key is replaced.
    pub fn exhaust(
        &mut self,
        claim: &Claim,
        exhaustion: &Exhaustion,
    ) -> Result<Completed, InputError> {
        check_exhaust(claim, exhaustion)?;
        let Some(at) = self.held_by(claim) else {
            return Ok(Completed::NotHeld);
        };
        let ((wake_at, id), slot) = self.rows.remove(at);
        let record = ExhaustedRow::new(row_of(wake_at, &id, &slot), *exhaustion);
        match self.find_exhausted(&id, wake_at) {
            Ok(at) => self.exhausted[at] = record,
            Err(at) => self.exhausted.insert(at, record),
        }
        Ok(Completed::Done)
    }

    /// The exhausted records `query` names, in `(execution_id, wake_at)`
    /// order.
    pub fn exhausted(&self, query: &ExhaustedQuery) -> Result<Vec<ExhaustedRow>, InputError> {
        let limit = query.checked_limit()?;
        Ok(self
            .exhausted
            .iter()
            .filter(|record| query.admits(record))
            .take(limit)
            .cloned()
            .collect())
    }

    /// Removes the exhausted record of `(execution_id, wake_at)`: what an
    /// operator's recovery does once it has acted on it. Whether there was
    /// one.
    pub fn clear_exhausted(
        &mut self,
        execution_id: &ExecutionId,
        wake_at: i64,
    ) -> Result<bool, InputError> {
        check_clear(wake_at)?;
        let found = self.find_exhausted(execution_id, wake_at);
        if let Ok(at) = found {
            self.exhausted.remove(at);
        }
        Ok(found.is_ok())
    }

    /// The live rows `query` names, each with its claim, in due order.
    pub fn list(&self, query: &TimerQuery) -> Result<Vec<TimerEntry>, InputError> {
        let limit = query.checked_limit()?;
        Ok(self
            .rows
            .iter()
            .map(|((wake_at, id), slot)| TimerEntry {
                row: row_of(*wake_at, id, slot),
                held: slot.held.as_ref().map(|(holder, expires_at)| Held {
                    holder: holder.clone(),
                    number: slot.claims,
                    expires_at: *expires_at,
                }),
            })
            .filter(|entry| query.admits(&entry.row))
            .take(limit)
            .collect())
    }

    /// Hands the claimed row back, due again at once, if `claim` is still
    /// its current claim: what a node that stops mid-poll does with the
    /// rows it did not fire.
    pub fn release(&mut self, claim: &Claim) -> Result<Completed, InputError> {
        check_claim(claim)?;
        if let Some(at) = self.held_by(claim) {
            self.rows[at].1.held = None;
            Ok(Completed::Done)
        } else {
            Ok(Completed::NotHeld)
        }
    }

    /// Every exhausted record, in key order: for snapshots and tests.
    #[must_use]
    pub fn exhausted_rows(&self) -> Vec<ExhaustedRow> {
        self.exhausted.clone()
    }

    /// Every row, earliest first: for snapshots and tests.
    #[must_use]
    pub fn rows(&self) -> Vec<TimerRow> {
        self.rows
            .iter()
            .map(|((wake_at, id), slot)| row_of(*wake_at, id, slot))
            .collect()
    }

    /// Where the row with this key is, or where it would go.
    fn find(&self, wake_at: i64, execution_id: &ExecutionId) -> Result<usize, usize> {
        self.rows
            .binary_search_by(|((at, id), _)| (*at, id).cmp(&(wake_at, execution_id)))
    }

    /// Where the exhausted record with this key is, or where it would go.
    fn find_exhausted(&self, execution_id: &ExecutionId, wake_at: i64) -> Result<usize, usize> {
        self.exhausted.binary_search_by(|record| {
            (&record.row.execution_id, record.row.wake_at).cmp(&(execution_id, wake_at))
        })
    }

    /// Where `claim`'s row is, if `claim` is its current claim.
    fn held_by(&self, claim: &Claim) -> Option<usize> {
        let at = self.find(claim.row.wake_at, &claim.row.execution_id).ok()?;
        let slot = &self.rows[at].1;
        let current = slot.claims == claim.number
            && slot
                .held
                .as_ref()
                .is_some_and(|(holder, _)| *holder == claim.holder);
        current.then_some(at)
    }

    /// The rows due at `now` that `filter` admits, earliest first.
    fn due_slots(
        &self,
        now: i64,
        filter: DueFilter,
    ) -> impl Iterator<Item = &((i64, ExecutionId), Slot)> {
        self.rows
            .iter()
            .take_while(move |((wake_at, _), _)| *wake_at <= now)
            .filter(move |(_, slot)| filter.redrive || slot.redrive.is_none())
    }
}

/// A row from its key and slot.
fn row_of(wake_at: i64, id: &ExecutionId, slot: &Slot) -> TimerRow {
    TimerRow {
        execution_id: id.clone(),
        wake_at,
        redrive: slot.redrive,
    }
}
