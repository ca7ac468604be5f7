//! Messages: the durable inbox's rules and the delivery that consumes them.
//!
//! A park can wait on a channel (`{"kind":"MESSAGE","channel":…}`); a
//! sender delivers to it with a notify. You need this module when you host
//! an inbox or write an inbox store; `loomfence-runtime` and the npm package
//! pump [`DeliverMachine`] for you.
//!
//! - [`Message`], [`MessageKey`] and their checks: a message is keyed
//!   `(execution_id, channel, message_id)`, so a sender that retries
//!   stores it once.
//! - [`InboxTable`]: the inbox's rules over one in-memory table (store a key
//!   once, list a channel in arrival order, mark consumed, purge with the
//!   execution), which the SQL stores state in SQL.
//! - [`DeliverMachine`]: notify, the park-time check and the inbox's
//!   re-drive as one machine. A delivery appends `[MESSAGE_CONSUMED,
//!   EXECUTION_RESUMED]` as one park-conditional batch under the acquired
//!   token, so a message is consumed at most once, and the send's intent
//!   row makes sure it is consumed at least once.

mod deliver;
mod message;
mod table;

pub use deliver::{
    DeliverAction, DeliverMachine, DeliverOptions, DeliverOutcome, DeliverPoll, NotDeliverable,
    PENDING_PAGE,
};
pub use message::{
    DEFAULT_INTENT_DELAY_MS, MAX_MESSAGE_BYTES, MAX_NAME_BYTES, Message, MessageKey, Sent,
    StoredMessage, check_channel, consumed_event, consumed_in, message_answer,
};
pub use table::{InboxEntry, InboxTable, MAX_PENDING_LIMIT, check_pending};

#[cfg(test)]
mod tests;
