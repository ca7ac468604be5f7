//! Everything `loomfence inspect` shows about one execution, read from the
//! store (reads only) and judged with the core's own rules.

use loomfence_core::inbox::InboxEntry;
use loomfence_core::park::{Wait, waits_of};
use loomfence_core::retention::{ended_of, pin_parked_children};
use loomfence_core::timer::{ExhaustedRow, TimerQuery};
use loomfence_core::{Envelope, ExecutionId, ExecutionView, Status, feed::FeedCursor, lineage};
use loomfence_store::StoreError;

use crate::error::CliError;
use crate::operate::timer_rows::{self, Rows};
use crate::store::ExistingStore;

/// One execution as the store has it now.
#[derive(Debug)]
pub(crate) struct Inspection {
    /// The store, as output names it.
    pub(crate) store: String,
    /// The execution.
    pub(crate) id: ExecutionId,
    /// When it was read (ms, system clock): what "due", "claimed" and
    /// "answerable" are judged against.
    pub(crate) now: i64,
    /// Its log.
    pub(crate) events: Vec<Envelope>,
    /// The log's fold: status, head, open park.
    pub(crate) view: ExecutionView,
    /// The current token.
    pub(crate) fence: u64,
    /// The open park and its waits.
    pub(crate) park: Option<ParkFacts>,
    /// Its live timer and re-drive rows (and unreadable ones).
    pub(crate) rows: Rows,
    /// Its exhausted records.
    pub(crate) exhausted: Vec<ExhaustedRow>,
    /// Its messages.
    pub(crate) inbox: Vec<InboxEntry>,
    /// The store's feed head; `None` when the store has no change feed.
    pub(crate) feed: Option<FeedCursor>,
    /// The parent its start records (`Ok(None)`: a root, or no start); the
    /// error when the record does not read.
    pub(crate) parent: Result<Option<ExecutionId>, String>,
    /// The children named by any park of its log, in order of first
    /// mention.
    pub(crate) parked_on: Vec<ExecutionId>,
    /// What a retention sweep would do with it.
    pub(crate) retention: Verdict,
}

/// The open park.
#[derive(Debug)]
pub(crate) struct ParkFacts {
    /// Its sequence.
    pub(crate) sequence: u64,
    /// The token it was written under (0 if none).
    pub(crate) fence: u64,
    /// Its waits, each with what answers it now; the reason when the
    /// payload does not read.
    pub(crate) waits: Result<Vec<WaitFacts>, String>,
}

/// One wait of the open park and whether it is answerable now.
#[derive(Debug)]
pub(crate) enum WaitFacts {
    /// One child (`group: false`) or every child of a group.
    Children {
        /// A `group` wait.
        group: bool,
        /// Each child's state.
        children: Vec<ChildFacts>,
    },
    /// A point in time.
    Timer {
        /// When.
        wake_at: i64,
    },
    /// A message on a channel.
    Message {
        /// The channel.
        channel: String,
        /// Its pending (not consumed) messages in the inbox.
        pending: usize,
    },
    /// A wait this CLI does not know (a newer core).
    Unknown(String),
}

impl WaitFacts {
    /// Whether the wait can answer the park now: every child ended, the
    /// timer due, a pending message on the channel.
    pub(crate) fn answerable(&self, now: i64) -> bool {
        match self {
            WaitFacts::Children { children, .. } => children.iter().all(|child| child.ended),
            WaitFacts::Timer { wake_at } => *wake_at <= now,
            WaitFacts::Message { pending, .. } => *pending > 0,
            WaitFacts::Unknown(_) => false,
        }
    }
}

/// A child a wait names, as its own log has it.
#[derive(Debug)]
pub(crate) struct ChildFacts {
    /// The child.
    pub(crate) id: ExecutionId,
    /// Its status; `None` when it has no log (never started, or deleted).
    pub(crate) status: Option<Status>,
    /// Whether its log ended.
    pub(crate) ended: bool,
}

/// What a retention sweep would do with the execution, by the sweep's own
/// rules (the core's `ended_of`, `parent_of`, `pin_parked_children`).
#[derive(Debug)]
pub(crate) enum Verdict {
    /// It has not ended: a sweep skips it.
    Kept {
        /// Where it stands.
        status: Status,
    },
    /// It ended, and its parent is parked on it: a sweep keeps it.
    Pinned {
        /// When it ended.
        ended_at: i64,
        /// The parent waiting.
        parent: ExecutionId,
    },
    /// It ended and nobody waits on it: a sweep whose cutoff is after
    /// `ended_at` deletes it.
    Eligible {
        /// When it ended.
        ended_at: i64,
    },
    /// It ended but its parent record, or its parent's park, does not
    /// read: a sweep keeps it and names it.
    Undecided {
        /// When it ended.
        ended_at: i64,
        /// Why.
        reason: String,
    },
}

/// Reads everything about `id` from `store`. A valid id with no log is
/// [`CliError::UnknownExecution`] (exit 1).
pub(crate) async fn gather(
    store: &ExistingStore,
    shown: String,
    id: ExecutionId,
    now: i64,
) -> Result<Inspection, CliError> {
    let read = |during| CliError::store(during);
    let events = store
        .events
        .read_range(&id, 1, None)
        .await
        .map_err(read("reading the log"))?;
    if events.is_empty() {
        let left = leftovers(store, &id).await?;
        return Err(CliError::UnknownExecution {
            id: id.to_string(),
            store: shown,
            left,
        });
    }
    let view = ExecutionView::fold(&events);
    let fence = store
        .events
        .current_fence(&id)
        .await
        .map_err(read("reading the current token"))?;
    let inbox = store
        .inbox
        .messages(&id)
        .await
        .map_err(read("reading the inbox"))?;
    let park = match view.open_park {
        None => None,
        Some(open) => Some(ParkFacts {
            sequence: open.sequence,
            fence: open.fence,
            waits: park_waits(store, &events, open.sequence, &inbox).await?,
        }),
    };
    let rows = timer_rows::list_rows(
        &*store.timers,
        TimerQuery {
            execution: Some(id.clone()),
            ..TimerQuery::default()
        },
        None,
    )
    .await
    .map_err(read("listing the timer rows"))?;
    let (exhausted, _) =
        timer_rows::list_exhausted(&*store.timers, Some(id.clone()), |_| true, None)
            .await
            .map_err(read("listing the exhausted records"))?;
    let feed = match store.events.feed_head().await {
        Ok(head) => Some(head),
        Err(StoreError::Unsupported { .. }) => None,
        Err(failure) => return Err(read("reading the feed head")(failure)),
    };
    let parent = lineage::parent_of(&events).map_err(|e| e.to_string());
    let retention = verdict(store, &id, &events, &view, &parent).await?;
    Ok(Inspection {
        store: shown,
        parked_on: parked_on(&events),
        id,
        now,
        events,
        view,
        fence,
        park,
        rows,
        exhausted,
        inbox,
        feed,
        parent,
        retention,
    })
}

/// What the timer store and the inbox still hold for an execution with no
/// log (deleted, with an exhausted record left for recovery, say), as a
/// note for the error; empty when they hold nothing.
async fn leftovers(store: &ExistingStore, id: &ExecutionId) -> Result<String, CliError> {
    let rows = timer_rows::list_rows(
        &*store.timers,
        TimerQuery {
            execution: Some(id.clone()),
            ..TimerQuery::default()
        },
        None,
    )
    .await
    .map_err(CliError::store("listing the timer rows"))?;
    let (exhausted, _) =
        timer_rows::list_exhausted(&*store.timers, Some(id.clone()), |_| true, None)
            .await
            .map_err(CliError::store("listing the exhausted records"))?;
    let messages = store
        .inbox
        .messages(id)
        .await
        .map_err(CliError::store("reading the inbox"))?;
    let counts = [
        (rows.entries.len() + rows.unreadable.len(), "timer row"),
        (exhausted.len(), "exhausted record"),
        (messages.len(), "message"),
    ];
    if counts.iter().all(|(count, _)| *count == 0) {
        return Ok(String::new());
    }
    let held: Vec<String> = counts
        .iter()
        .map(|(count, what)| format!("{count} {what}{}", if *count == 1 { "" } else { "s" }))
        .collect();
    Ok(format!(
        "; the store still holds {} for it (`loomfence timers --execution {id}` lists the rows and records)",
        held.join(", ")
    ))
}

/// The open park's waits, each judged: a child's log is read to see
/// whether it ended, a channel's pending messages are counted.
async fn park_waits(
    store: &ExistingStore,
    events: &[Envelope],
    sequence: u64,
    inbox: &[InboxEntry],
) -> Result<Result<Vec<WaitFacts>, String>, CliError> {
    let Some(park) = events.iter().find(|event| event.sequence == sequence) else {
        return Ok(Err(format!("no event at sequence {sequence}")));
    };
    let waits = match waits_of(park) {
        Ok(waits) => waits,
        Err(unreadable) => return Ok(Err(unreadable.to_string())),
    };
    let mut facts = Vec::with_capacity(waits.len());
    for wait in waits {
        facts.push(match wait {
            Wait::Child(child) => WaitFacts::Children {
                group: false,
                children: vec![child_facts(store, child).await?],
            },
            Wait::Group(members) => {
                let mut children = Vec::with_capacity(members.len());
                for child in members {
                    children.push(child_facts(store, child).await?);
                }
                WaitFacts::Children {
                    group: true,
                    children,
                }
            }
            Wait::Timer { wake_at } => WaitFacts::Timer { wake_at },
            Wait::Message { channel } => WaitFacts::Message {
                pending: inbox
                    .iter()
                    .filter(|entry| !entry.consumed && entry.message.message.key.channel == channel)
                    .count(),
                channel,
            },
            other => WaitFacts::Unknown(format!("{other:?}")),
        });
    }
    Ok(Ok(facts))
}

/// A child as its log has it.
async fn child_facts(store: &ExistingStore, id: ExecutionId) -> Result<ChildFacts, CliError> {
    let log = store
        .events
        .read_range(&id, 1, None)
        .await
        .map_err(CliError::store("reading a child's log"))?;
    Ok(ChildFacts {
        status: (!log.is_empty()).then(|| ExecutionView::fold(&log).status),
        ended: ended_of(&log).is_some(),
        id,
    })
}

impl Inspection {
    /// The children the open park waits on, each once, in wait order.
    pub(crate) fn waited_on(&self) -> Vec<&ExecutionId> {
        let mut children: Vec<&ExecutionId> = Vec::new();
        if let Some(ParkFacts {
            waits: Ok(waits), ..
        }) = &self.park
        {
            for wait in waits {
                if let WaitFacts::Children {
                    children: named, ..
                } = wait
                {
                    for child in named {
                        if !children.contains(&&child.id) {
                            children.push(&child.id);
                        }
                    }
                }
            }
        }
        children
    }
}

/// The children named by the waits of every park in `events`, each once,
/// in order of first mention (parks whose waits do not read are passed
/// over: the open one's error is shown with it).
fn parked_on(events: &[Envelope]) -> Vec<ExecutionId> {
    let mut children: Vec<ExecutionId> = Vec::new();
    for park in events.iter().filter(|event| event.is_park()) {
        for wait in waits_of(park).unwrap_or_default() {
            for child in wait.children() {
                if !children.contains(child) {
                    children.push(child.clone());
                }
            }
        }
    }
    children
}

/// The sweep's question, asked of this execution now: not ended (kept),
/// ended with a parent parked on it (pinned, by the core's
/// `pin_parked_children` on the parent's log), or ended and free.
async fn verdict(
    store: &ExistingStore,
    id: &ExecutionId,
    events: &[Envelope],
    view: &ExecutionView,
    parent: &Result<Option<ExecutionId>, String>,
) -> Result<Verdict, CliError> {
    let Some(ended) = ended_of(events) else {
        return Ok(Verdict::Kept {
            status: view.status,
        });
    };
    let ended_at = ended.at;
    let parent = match parent {
        Ok(None) => return Ok(Verdict::Eligible { ended_at }),
        Ok(Some(parent)) => parent,
        Err(reason) => {
            return Ok(Verdict::Undecided {
                ended_at,
                reason: format!("its parent record does not read: {reason}"),
            });
        }
    };
    let parent_log = store
        .events
        .read_range(parent, 1, None)
        .await
        .map_err(CliError::store("reading the parent's log"))?;
    Ok(match pin_parked_children(id, &parent_log) {
        Ok(true) => Verdict::Pinned {
            ended_at,
            parent: parent.clone(),
        },
        Ok(false) => Verdict::Eligible { ended_at },
        Err(reason) => Verdict::Undecided {
            ended_at,
            reason: format!("its parent {parent}'s park does not read: {reason}"),
        },
    })
}
