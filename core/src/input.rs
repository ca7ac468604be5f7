//! What enters the kernel from outside, checked once where it enters: the
//! ids every store, fence and log is addressed by, the limits every input
//! is held to, and the one fault of bad input, [`InputError`]: an id, an
//! event, a time, a draw, a row or a log's data refused before anything is
//! read, written or decided. Every check reports it, so a host has one type
//! to branch on whichever check refused.

use serde_json::Value;

/// The longest execution id, in UTF-8 bytes.
///
/// 255 bytes fits every backend's key column and index without truncation, so
/// an id that is accepted here is accepted, unchanged, everywhere.
pub const MAX_ID_BYTES: usize = 255;

/// The longest event kind, in UTF-8 bytes, so every backend can index it.
pub const MAX_KIND_BYTES: usize = 255;

/// The most rows one [`TimerTable::due`](crate::timer::TimerTable::due) or [`TimerTable::claim_due`](crate::timer::TimerTable::claim_due) call
/// returns: a bound on one call's memory and on one SQL statement's work.
pub const MAX_DUE_LIMIT: usize = 10_000;

/// The longest lease, in ms (one day): a lease longer than that is a bug,
/// not a plan, and would hide a crashed claimer's rows for as long.
pub const MAX_LEASE_MS: u64 = 86_400_000;

/// The largest re-drive attempt a row may carry: `i32::MAX`, so the number
/// fits every SQL integer type and a JavaScript number, and `attempt + 1`
/// never overflows.
pub const MAX_REDRIVE_ATTEMPT: u32 = i32::MAX as u32;

/// A string checked against the id rules (1 to [`MAX_ID_BYTES`] bytes of
/// UTF-8, no NUL) once, where it enters the program: the struct and the
/// conversions every such name needs, for [`ExecutionId`] and
/// [`NodeId`](crate::timer::NodeId) alike.
macro_rules! checked_name {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Validates `id`, taking ownership so a valid id is never
            /// copied.
            pub fn new(id: impl Into<String>) -> Result<Self, $crate::InputError> {
                let id = id.into();
                $crate::input::validate(&id)?;
                Ok(Self(id))
            }

            /// The id as text, for keys, SQL parameters and messages.
            #[must_use]
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = $crate::InputError;
            fn try_from(id: String) -> Result<Self, $crate::InputError> {
                Self::new(id)
            }
        }

        impl TryFrom<&str> for $name {
            type Error = $crate::InputError;
            fn try_from(id: &str) -> Result<Self, $crate::InputError> {
                $crate::input::validate(id)?;
                Ok(Self(id.to_owned()))
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::InputError;
            fn from_str(id: &str) -> Result<Self, $crate::InputError> {
                Self::try_from(id)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&self.0, f)
            }
        }
    };
}
pub(crate) use checked_name;

checked_name! {
    /// A validated execution id: 1 to [`MAX_ID_BYTES`] bytes of UTF-8, no NUL.
    ///
    /// Holding one proves the id was checked once, at the edge, so the kernel and
    /// every adapter can key on it without re-validating or escaping anything.
    ExecutionId
}

/// Checks `id` against the id rules without allocating.
///
/// Stores call this on every `&str` they are handed, so bad ids are refused
/// with the same error whichever backend sees them.
pub(crate) fn validate(id: &str) -> Result<(), InputError> {
    if id.is_empty() {
        return Err(InputError::IdEmpty);
    }
    if id.len() > MAX_ID_BYTES {
        return Err(InputError::IdTooLong { len: id.len() });
    }
    if let Some(at) = id.bytes().position(|b| b == 0) {
        return Err(InputError::IdNul { at });
    }
    Ok(())
}

/// Input the kernel refuses before it changes anything: the caller's
/// arguments, or data read from a log that cannot be what it claims to be.
///
/// Nothing was read, written or decided when a check returns it. Variants
/// that wrap another (`Event`, `Holder`, `BadChild`, `BadParent`,
/// `UnreadablePark`) say where the inner refusal was found.
///
/// Draw values are kept in fields but not printed: the message would
/// otherwise link float formatting into every WebAssembly build.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The execution id is the empty string, which would address no
    /// execution at all.
    #[error("execution id is empty")]
    IdEmpty,
    /// The id is longer than [`MAX_ID_BYTES`] UTF-8 bytes.
    #[error("execution id is {len} bytes long; the limit is {MAX_ID_BYTES}")]
    IdTooLong {
        /// The id's length in bytes.
        len: usize,
    },
    /// The id contains a NUL byte, which C-string and SQL text backends
    /// cannot hold and would silently truncate at.
    #[error("execution id contains a NUL byte at byte {at}")]
    IdNul {
        /// Byte offset of the first NUL.
        at: usize,
    },
    /// An event's kind is the empty string, which names nothing and could
    /// never be classified.
    #[error("event kind is empty")]
    KindEmpty,
    /// An event's kind is longer than [`MAX_KIND_BYTES`].
    #[error("event kind is {len} bytes long; the limit is {MAX_KIND_BYTES}")]
    KindTooLong {
        /// The kind's length in bytes.
        len: usize,
    },
    /// `metadata.fence` is present but is not an integer in
    /// `0..=MAX_SAFE_INTEGER`. A negative, fractional, string or null token
    /// would make the append guard's answer depend on how a backend coerces
    /// it, so it is refused instead.
    #[error("metadata.fence must be an integer from 0 to 2^53-1, found {found}")]
    BadFence {
        /// The offending value, as written.
        found: Value,
    },
    /// An event's `at` lies outside `-(2^53-1)..=2^53-1` milliseconds.
    #[error("at = {at} ms is outside the range a JavaScript number holds exactly")]
    AtOutOfRange {
        /// The offending timestamp.
        at: i64,
    },
    /// A NUL character appears in an event's kind, or in a key or string of
    /// its payload or metadata. PostgreSQL text and `jsonb` cannot hold it;
    /// it is refused on every backend so a workflow that runs in memory
    /// does not break on the database.
    #[error("{field} contains a NUL character")]
    Nul {
        /// `"kind"`, `"payload"` or `"metadata"`.
        field: &'static str,
    },
    /// One event of a batch is malformed: the batch is refused whole.
    #[error("event {index} of the batch is invalid: {source}")]
    Event {
        /// The event's position in the batch, from 0.
        index: usize,
        /// What is wrong with it (an event variant above).
        #[source]
        source: Box<InputError>,
    },
    /// Events of one batch carry different tokens (or some carry one and some
    /// do not). A batch is one writer's, under one token; a mix is a bug the
    /// guard could only answer arbitrarily.
    #[error(
        "event {index} carries fence {found:?} but event 0 carries {first:?}: a batch is written under one token or none"
    )]
    MixedFences {
        /// The first event whose token differs.
        index: usize,
        /// Event 0's token.
        first: Option<u64>,
        /// That event's token.
        found: Option<u64>,
    },
    /// `parkSeq` does not name an event of the log (0, or past its head).
    #[error("parkSeq {park_seq} is not in the log, whose head is {head}")]
    ParkSeqOutOfRange {
        /// The sequence given.
        park_seq: u64,
        /// The log's last sequence, 0 when empty.
        head: u64,
    },
    /// The event at `parkSeq` is not a park (`EXECUTION_SUSPENDED`). The
    /// park the caller read is gone: the log was deleted and has grown
    /// again past that sequence, or the sequence never was a park. Judged
    /// by the store in the same atomic step as the decision, because only
    /// the store sees the log as it is at that moment.
    #[error("parkSeq {park_seq} is not a park: the event there is {kind:?}")]
    NotAPark {
        /// The sequence given.
        park_seq: u64,
        /// The kind of the event at that sequence.
        kind: String,
    },
    /// A token or sequence argument exceeds what a JavaScript number holds
    /// exactly ([`MAX_SAFE_INTEGER`](crate::log::MAX_SAFE_INTEGER)); every
    /// backend refuses it alike.
    #[error("{what} = {value} exceeds 2^53-1")]
    OutOfRange {
        /// Which argument (`"fence"`, `"parkSeq"`, `"fromSeq"`, `"toSeq"`),
        /// or `"sequence"` when a log would grow past it.
        what: &'static str,
        /// Its value.
        value: u64,
    },
    /// A count argument is outside what the operation accepts (a listing's
    /// page limit, a guarded delete's number of parents): bounded so one
    /// call's memory and time stay bounded on every backend.
    #[error("{what} = {value} is out of bounds: at most {max}, and a limit is at least 1")]
    Limit {
        /// Which argument (`"limit"`, `"parents"`).
        what: &'static str,
        /// Its value.
        value: u64,
        /// The largest accepted.
        max: u64,
    },
    /// A timer time (`wakeAt`, `now`) outside `0..=MAX_TIMER_MS`: negative,
    /// or more than a JavaScript number holds exactly.
    #[error("{what} = {value} ms is outside 0..=2^53-1")]
    Time {
        /// Which time (`"wakeAt"`, `"now"`).
        what: &'static str,
        /// Its value.
        value: i64,
    },
    /// A timer row that is not due yet: firing it would answer a timer
    /// early.
    #[error("the row is due at {wake_at} ms, after now ({now} ms)")]
    NotDue {
        /// The row's time.
        wake_at: i64,
        /// The time given.
        now: i64,
    },
    /// A re-drive row's attempt is above [`MAX_REDRIVE_ATTEMPT`].
    #[error("redrive attempt {attempt} exceeds {MAX_REDRIVE_ATTEMPT}")]
    Attempt {
        /// The attempt given.
        attempt: u32,
    },
    /// A timer listing or claim asked for 0 rows, or more than
    /// [`MAX_DUE_LIMIT`].
    #[error("limit {limit} is outside 1..={MAX_DUE_LIMIT}")]
    DueLimit {
        /// The limit given.
        limit: usize,
    },
    /// A lease of 0 ms, or longer than [`MAX_LEASE_MS`], or one that would
    /// end after 2^53-1.
    #[error(
        "a lease of {duration_ms} ms from {now} is outside 1..={MAX_LEASE_MS} ms or ends after 2^53-1"
    )]
    LeaseDuration {
        /// The duration given.
        duration_ms: u64,
        /// The claim's `now`.
        now: i64,
    },
    /// A claim's holder is not a valid node id.
    #[error("node id: {0}")]
    Holder(#[source] Box<InputError>),
    /// A reschedule's next row has the claimed row's key: retiring the one
    /// would retire the other, and the chain would end without a word.
    #[error("the next row has the claimed row's key ({execution_id:?}, {wake_at})")]
    SameKey {
        /// The key's execution.
        execution_id: ExecutionId,
        /// The key's time.
        wake_at: i64,
    },
    /// A recovery of one execution given another's exhausted record: it
    /// would fire the wrong execution's row and clear its record.
    #[error("the exhausted record is of execution {got:?}, not {expected:?}")]
    RecordOfAnotherExecution {
        /// The execution being recovered.
        expected: ExecutionId,
        /// The record's.
        got: ExecutionId,
    },
    /// A batch that names one execution twice: its entries could not be
    /// judged one by one and all at once alike.
    #[error("the batch names execution {execution_id:?} twice")]
    RepeatedId {
        /// The execution named twice.
        execution_id: ExecutionId,
    },
    /// A random draw that is NaN.
    #[error("a random draw must be a number in [0, 1), got NaN")]
    DrawNaN,
    /// A random draw below 0 (negative infinity included).
    #[error("a random draw must be in [0, 1), got a negative number")]
    DrawNegative {
        /// The draw given.
        value: f64,
    },
    /// A random draw of 1 or more (infinity included).
    #[error("a random draw must be in [0, 1), got a number not below 1")]
    DrawNotBelowOne {
        /// The draw given.
        value: f64,
    },
    /// Waits were asked of an envelope that is not an
    /// `EXECUTION_SUSPENDED`.
    #[error("event {sequence} is a {kind}, not a park")]
    NotParkEvent {
        /// The event's sequence.
        sequence: u64,
        /// Its kind.
        kind: String,
    },
    /// A park's `payload.waits` is missing or is not an array.
    #[error("the park's payload has no `waits` array")]
    NoWaits,
    /// One wait of a park does not have any of the four shapes.
    #[error("wait {index} is malformed: {reason}")]
    MalformedWait {
        /// The wait's position in `waits`.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A child id in a park's wait is not a valid execution id.
    #[error("wait {index} names an invalid child id: {source}")]
    BadChild {
        /// The wait's position in `waits`.
        index: usize,
        /// Why the id is invalid.
        #[source]
        source: Box<InputError>,
    },
    /// A recorded parent (`payload.parent` of `EXECUTION_STARTED`) that is
    /// neither a string nor `null`. Corrupt data: retention refuses to guess
    /// (it might be the one parent that pins the child).
    #[error("payload.parent of event {sequence} is {found}, not an execution id")]
    ParentNotAString {
        /// The `EXECUTION_STARTED` event's sequence.
        sequence: u64,
        /// What the field holds, as JSON text.
        found: String,
    },
    /// A recorded parent that is a string but not a valid execution id.
    #[error("payload.parent of event {sequence} is not a valid execution id: {source}")]
    BadParent {
        /// The `EXECUTION_STARTED` event's sequence.
        sequence: u64,
        /// Why the id is invalid.
        #[source]
        source: Box<InputError>,
    },
    /// An event after a parent's open park has a kind this node does not
    /// know, stamped `kernel: true` by a newer node: it may or may not
    /// answer the park. The fence takes it as answering (a stale resume is
    /// the worst that costs); retention must not (a deleted child is for
    /// good).
    #[error(
        "event {sequence} after the open park is {kind:?}, a kernel kind this node does not know"
    )]
    UnknownKind {
        /// The event's sequence.
        sequence: u64,
        /// Its kind.
        kind: String,
    },
    /// A supervised parent's open park has a payload that cannot be read
    /// as waits: nothing can be decided from it.
    #[error("the park of {parent:?} is unreadable: {source}")]
    UnreadablePark {
        /// The parent.
        parent: ExecutionId,
        /// Why its park is unreadable.
        #[source]
        source: Box<InputError>,
    },
    /// No storable time (`0..=MAX_TIMER_MS`) follows `now` for a re-drive
    /// row: the clock is out of range.
    #[error("no storable re-drive time follows {now} ms")]
    NoWakeTime {
        /// The time given.
        now: i64,
    },
    /// A sweep's options ask for an archive, but the host has none:
    /// deleting logs that were meant to be archived cannot be undone.
    #[error("the sweep's options ask for an archive, but no archive sink was given")]
    ArchiveWithoutSink,
    /// A message's channel or id is empty, longer than
    /// [`MAX_NAME_BYTES`](crate::inbox::MAX_NAME_BYTES), or holds a NUL byte:
    /// a key every inbox could not store alike.
    #[error("message {field} {problem}")]
    MessageField {
        /// `"channel"` or `"messageId"`.
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
}

// Draw values are never NaN (NaN is its own variant, without a value), so
// equality is reflexive.
impl Eq for InputError {}

// Equal errors are of one variant, so hashing the variant alone is
// consistent with `Eq`; a draw's `f64` has no `Hash` to derive.
impl std::hash::Hash for InputError {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
    }
}

impl InputError {
    /// Whether this says the park a conditional operation named is not in
    /// the log (outside it, or not a park any more): for a resumer, the park
    /// is gone, which is a refusal, not a bug.
    #[must_use]
    pub fn is_park_gone(&self) -> bool {
        matches!(
            self,
            InputError::ParkSeqOutOfRange { .. } | InputError::NotAPark { .. }
        )
    }

    /// Whether this says a string is not a valid id (empty, too long, or
    /// with a NUL), as [`ExecutionId::new`] and
    /// [`NodeId::new`](crate::timer::NodeId::new) refuse it.
    #[must_use]
    pub fn is_id(&self) -> bool {
        matches!(
            self,
            InputError::IdEmpty | InputError::IdTooLong { .. } | InputError::IdNul { .. }
        )
    }

    /// Whether this says a park's waits cannot be read: no `waits` array, a
    /// malformed wait, an invalid child id, or an envelope that is no park.
    #[must_use]
    pub fn is_park(&self) -> bool {
        matches!(
            self,
            InputError::NotParkEvent { .. }
                | InputError::NoWaits
                | InputError::MalformedWait { .. }
                | InputError::BadChild { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_boundaries() {
        assert_eq!(ExecutionId::new("a").map(String::from), Ok("a".to_owned()));
        let longest = "é".repeat(MAX_ID_BYTES / 2) + "x";
        assert_eq!(longest.len(), MAX_ID_BYTES);
        assert!(ExecutionId::new(longest).is_ok());
        assert!(ExecutionId::new("quote ' and \\ backslash").is_ok());
    }

    #[test]
    fn refuses_each_bad_shape_with_its_own_variant() {
        assert_eq!(ExecutionId::new(""), Err(InputError::IdEmpty));
        assert_eq!(
            ExecutionId::new("x".repeat(MAX_ID_BYTES + 1)),
            Err(InputError::IdTooLong { len: 256 })
        );
        assert_eq!(ExecutionId::new("ab\0c"), Err(InputError::IdNul { at: 2 }));
    }

    #[test]
    fn serde_refuses_invalid_ids() {
        let parsed: Result<ExecutionId, _> = serde_json::from_str("\"\"");
        assert!(parsed.is_err());
        let ok: ExecutionId = serde_json::from_str("\"run-1\"").expect("valid id");
        assert_eq!(ok.as_str(), "run-1");
        assert_eq!(serde_json::to_string(&ok).expect("serialises"), "\"run-1\"");
    }
}
