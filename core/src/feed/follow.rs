//! The follower of a store's feed as a sans-IO machine: every rule of a
//! worker that hands the supervisor its work from the feed, for every host
//! (the runtime's `Follower`, the npm package's, the simulation) to pump.
//!
//! [`FollowMachine::poll`] gives either a [`FollowNotice`] for the
//! supervisor or a [`FollowAction`] for the store; the host does it and
//! feeds the answer back through the matching `handle_*` method. It never
//! ends: a follower follows until its host stops polling. The steps, and
//! why:
//!
//! 1. **Read the feed's head** ([`FollowAction::ReadHead`]) before anything
//!    else, so that whatever commits while the rebuild runs is read from
//!    the feed afterwards.
//! 2. **Page through the open parks** ([`FollowAction::ListOpenParks`]) and
//!    watch each: this is the rebuild, and what a restart costs is the
//!    parks that are open, not the store's history.
//! 3. **Follow the feed from the head** ([`FollowAction::ReadFeed`]), a page
//!    at a time: a park on a child is watched, an end is reported to its
//!    parents ([`notice_for`](super::notice_for)).
//! 4. **Caught up, wait** ([`FollowAction::Wait`]) for the store to say
//!    something was committed, or for the host's own poll interval: the
//!    cursor, not the wake, is the truth, so a lost wake costs latency,
//!    never an event.
//! 5. **A supervision that failed is watched again** after the next wake
//!    ([`FollowMachine::handle_failed`]), not at once, so a store that is
//!    down is not spun against.

use std::collections::VecDeque;

use crate::contract::ContractError;
use crate::input::{ExecutionId, InputError};

use super::{FeedCursor, FeedEntry, check_open_parks, check_page, notice_for};

/// The most entries one feed or open-parks read may ask for: a page is held
/// in memory whole.
pub const MAX_FEED_LIMIT: u32 = 10_000;

/// How a follower reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FollowOptions {
    /// Entries per read of the feed or of the open parks, 1 to
    /// [`MAX_FEED_LIMIT`].
    pub page_limit: u32,
}

impl Default for FollowOptions {
    /// Pages of 256: a few round trips for a burst, little memory at rest.
    fn default() -> Self {
        Self { page_limit: 256 }
    }
}

/// One store step for the host.
///
/// Non-exhaustive: a host that does not know an action must stop rather
/// than guess.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FollowAction {
    /// Read the feed's head; answer with [`FollowMachine::handle_head`].
    ReadHead,
    /// List up to `limit` open parks after `after`, in id order; answer with
    /// [`FollowMachine::handle_open_parks`].
    ListOpenParks {
        /// The last id of the previous page, `None` for the first.
        after: Option<ExecutionId>,
        /// The page's size.
        limit: u32,
    },
    /// Read up to `limit` feed entries after `after`; answer with
    /// [`FollowMachine::handle_feed`].
    ReadFeed {
        /// The follower's cursor.
        after: FeedCursor,
        /// The page's size.
        limit: u32,
    },
    /// Caught up: wait until the store commits past `after` or the host's
    /// poll interval passes, whichever is first; answer with
    /// [`FollowMachine::handle_woken`].
    Wait {
        /// The follower's cursor.
        after: FeedCursor,
    },
}

/// What the supervisor must be told.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum FollowNotice {
    /// Watch this parent: it parked on a child (or is open at a rebuild, or
    /// its last supervision failed).
    Watch(ExecutionId),
    /// This execution ended: resume the parents waiting on it.
    Ended(ExecutionId),
}

/// What [`FollowMachine::poll`] gives.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FollowPoll {
    /// Hand this to the supervisor; poll again at once (notices run
    /// concurrently as far as the host likes).
    Notice(FollowNotice),
    /// Do this against the store and feed back its answer.
    Act(FollowAction),
}

/// Where the follower is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// The head is not read yet.
    Head,
    /// Paging the open parks, after this id.
    Parks(Option<ExecutionId>),
    /// Following the feed; `caught_up` once a page came back short.
    Follow {
        /// Whether the last read ended the feed.
        caught_up: bool,
    },
}

/// A follower of one store's feed. See the module docs for its steps.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FollowMachine {
    /// How it reads.
    options: FollowOptions,
    /// Where it is.
    phase: Phase,
    /// Everything up to here has been read.
    cursor: FeedCursor,
    /// Notices not yet handed out, in feed order.
    notices: VecDeque<FollowNotice>,
    /// Parents whose supervision failed, watched again after the next wake:
    /// sorted, each once. A sorted vector, not a B-tree set: the npm
    /// package's `.wasm` pays for every generic collection it instantiates
    /// (4,754 B for this one); an insert moves the ids after it, which costs
    /// little for the parents that fail between two wakes, those whose
    /// notices were in flight.
    retry: Vec<ExecutionId>,
    /// The action handed out and not yet answered.
    pending: Option<FollowAction>,
    /// Watch notices handed out before the first wait: what the rebuild
    /// watched.
    watched: u64,
    /// Whether a wait was ever asked for: the follower was once caught up.
    caught_up_once: bool,
}

impl FollowMachine {
    /// A follower that has read nothing: its first steps are the rebuild.
    pub fn new(options: FollowOptions) -> Result<Self, InputError> {
        if options.page_limit == 0 || options.page_limit > MAX_FEED_LIMIT {
            return Err(InputError::Limit {
                what: "page_limit",
                value: u64::from(options.page_limit),
                max: u64::from(MAX_FEED_LIMIT),
            });
        }
        Ok(Self {
            options,
            phase: Phase::Head,
            cursor: FeedCursor::START,
            notices: VecDeque::new(),
            retry: Vec::new(),
            pending: None,
            watched: 0,
            caught_up_once: false,
        })
    }

    /// The next notice or store step. Asking again before the step is
    /// answered gives the same step.
    pub fn poll(&mut self) -> FollowPoll {
        if let Some(action) = &self.pending {
            return FollowPoll::Act(action.clone());
        }
        if let Some(notice) = self.notices.pop_front() {
            if !self.caught_up_once && matches!(notice, FollowNotice::Watch(_)) {
                self.watched += 1;
            }
            return FollowPoll::Notice(notice);
        }
        let limit = self.options.page_limit;
        let action = match &self.phase {
            Phase::Head => FollowAction::ReadHead,
            Phase::Parks(after) => FollowAction::ListOpenParks {
                after: after.clone(),
                limit,
            },
            Phase::Follow { caught_up: false } => FollowAction::ReadFeed {
                after: self.cursor,
                limit,
            },
            Phase::Follow { caught_up: true } => {
                self.caught_up_once = true;
                FollowAction::Wait { after: self.cursor }
            }
        };
        self.pending = Some(action.clone());
        FollowPoll::Act(action)
    }

    /// The answer to [`FollowAction::ReadHead`].
    pub fn handle_head(&mut self, head: FeedCursor) -> Result<(), ContractError> {
        self.take("handle_head", |action| {
            matches!(action, FollowAction::ReadHead)
        })?;
        self.cursor = head;
        self.phase = Phase::Parks(None);
        Ok(())
    }

    /// The answer to [`FollowAction::ListOpenParks`]: each id is watched; a
    /// short page ends the rebuild.
    pub fn handle_open_parks(&mut self, ids: Vec<ExecutionId>) -> Result<(), ContractError> {
        let Some(FollowAction::ListOpenParks { after, limit }) = &self.pending else {
            return Err(self.out_of_turn("handle_open_parks"));
        };
        check_open_parks(after.as_ref(), *limit, &ids)?;
        let full = ids.len() == *limit as usize;
        self.pending = None;
        self.phase = match ids.last() {
            Some(last) if full => Phase::Parks(Some(last.clone())),
            _ => Phase::Follow { caught_up: false },
        };
        self.notices
            .extend(ids.into_iter().map(FollowNotice::Watch));
        Ok(())
    }

    /// The answer to [`FollowAction::ReadFeed`]: its notices are queued, the
    /// cursor moves to its last entry, and a short page means caught up.
    pub fn handle_feed(&mut self, entries: Vec<FeedEntry>) -> Result<(), ContractError> {
        let Some(FollowAction::ReadFeed { after, limit }) = &self.pending else {
            return Err(self.out_of_turn("handle_feed"));
        };
        check_page(*after, *limit, &entries)?;
        let caught_up = entries.len() < *limit as usize;
        self.pending = None;
        if let Some(last) = entries.last() {
            self.cursor = last.cursor;
        }
        self.phase = Phase::Follow { caught_up };
        self.notices
            .extend(entries.iter().filter_map(|entry| notice_for(&entry.event)));
        Ok(())
    }

    /// The answer to [`FollowAction::Wait`], whether the store woke the host
    /// or its poll interval passed: the feed is read again, and the failed
    /// supervisions are watched again.
    pub fn handle_woken(&mut self) -> Result<(), ContractError> {
        self.take("handle_woken", |action| {
            matches!(action, FollowAction::Wait { .. })
        })?;
        self.phase = Phase::Follow { caught_up: false };
        let retry = std::mem::take(&mut self.retry);
        self.notices
            .extend(retry.into_iter().map(FollowNotice::Watch));
        Ok(())
    }

    /// A notice's supervision of `parent` failed (a store error): it is
    /// watched again after the next wake. Any time, any number of times.
    pub fn handle_failed(&mut self, parent: ExecutionId) {
        if let Err(at) = self.retry.binary_search(&parent) {
            self.retry.insert(at, parent);
        }
    }

    /// Everything up to here has been read.
    #[must_use]
    pub fn cursor(&self) -> FeedCursor {
        self.cursor
    }

    /// Whether the rebuild (the head and every open park) is done.
    #[must_use]
    pub fn is_rebuilt(&self) -> bool {
        matches!(self.phase, Phase::Follow { .. })
    }

    /// Whether the last read reached the end of the feed.
    #[must_use]
    pub fn is_caught_up(&self) -> bool {
        matches!(self.phase, Phase::Follow { caught_up: true })
    }

    /// The parents the rebuild watched (every watch notice handed out
    /// before the first wait: the open parks, and the parks the feed brought
    /// meanwhile), once the follower has first been caught up; `None`
    /// before. Counted here so every host reports the same number.
    #[must_use]
    pub fn rebuild_watched(&self) -> Option<u64> {
        self.caught_up_once.then_some(self.watched)
    }

    /// The parents waiting to be watched again.
    #[must_use]
    pub fn retrying(&self) -> usize {
        self.retry.len()
    }

    /// Clears the pending action if `fits` it, else refuses `got`.
    fn take(
        &mut self,
        got: &'static str,
        fits: impl Fn(&FollowAction) -> bool,
    ) -> Result<(), ContractError> {
        match &self.pending {
            Some(action) if fits(action) => {
                self.pending = None;
                Ok(())
            }
            _ => Err(self.out_of_turn(got)),
        }
    }

    /// The refusal of `got` while the pending action is something else.
    fn out_of_turn(&self, got: &'static str) -> ContractError {
        ContractError::UnexpectedInput {
            expected: match &self.pending {
                Some(FollowAction::ReadHead) => "handle_head",
                Some(FollowAction::ListOpenParks { .. }) => "handle_open_parks",
                Some(FollowAction::ReadFeed { .. }) => "handle_feed",
                Some(FollowAction::Wait { .. }) => "handle_woken",
                None => "a poll",
            },
            got,
        }
    }
}
