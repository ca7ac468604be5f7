//! `FollowMachine` for JavaScript: the core's follower of a store's change
//! feed, sans-IO, which the package's `Follower` (`npm/follower.js`) pumps.
//!
//! The host polls it for a notice (`{ notice: 'watch' | 'ended', id }`, for
//! the child supervisor) or a store step (`{ act, … }`), performs the step
//! against its store and feeds the answer back through the matching
//! `handle*` method. Every rule (the rebuild from the head and the open
//! parks, what an event means to the supervisor, when a failed supervision
//! is tried again) is the core's `FollowMachine`; this module only
//! converts. A store's answer that is not what it was asked for (not a
//! cursor, not ids, not feed entries, or entries that break the feed's
//! contract) is an `InputError` `STORE_CONTRACT`; an answer out of turn is
//! a `TimerInputError` `UNEXPECTED_ANSWER`. Either leaves the machine as it
//! was, so the host may ask the store again.

use js_sys::Array;
use loomfence_core::ContractError;
use loomfence_core::feed::{
    FeedEntry, FollowAction, FollowMachine, FollowNotice, FollowOptions, FollowPoll, MAX_FEED_LIMIT,
};
use wasm_bindgen::prelude::*;

use crate::events;
use crate::feed::{self, cursor_js};
use crate::fire::UNEXPECTED_ANSWER;
use crate::host_store::{STORE_CONTRACT, contract};
use crate::js_errors;
use crate::out::Out;
use crate::timer_values::refuse;
use crate::values::{self, NotList, answered_id, list, property_as};

/// A follower of one store's feed.
#[wasm_bindgen(js_name = FollowMachine)]
pub struct FollowMachineJs {
    /// The core's machine.
    machine: FollowMachine,
}

/// The core's refusal of an answer.
fn refused(error: &ContractError) -> JsValue {
    match error {
        ContractError::FeedOutOfContract { .. } => contract(&error.to_string()),
        _ => refuse(&error.to_string(), UNEXPECTED_ANSWER),
    }
}

/// The elements of a store's list answer `what`, at most `MAX_FEED_LIMIT`
/// read (the machine refuses more than it asked for).
fn answer_list(what: &str, value: &JsValue) -> Result<Array, JsValue> {
    list(value, MAX_FEED_LIMIT as usize).map_err(|not| match not {
        NotList::Unreadable(thrown) => js_errors::unreadable_as(what, STORE_CONTRACT, thrown),
        NotList::NotArray | NotList::TooLong(_) => contract(&format!(
            "{what} must be an array of at most the limit asked for"
        )),
    })
}

/// A cursor a store answered: anything else is its contract broken.
fn answered_cursor(
    what: &str,
    value: &JsValue,
) -> Result<loomfence_core::feed::FeedCursor, JsValue> {
    feed::cursor(value).map_err(|_| {
        contract(&format!(
            "{what} must be a cursor {{ epoch, position }} of safe integers"
        ))
    })
}

#[wasm_bindgen(js_class = FollowMachine)]
impl FollowMachineJs {
    /// A follower that has read nothing, reading pages of `pageLimit` (1
    /// to 10 000, else `InputError` `INVALID_LIMIT`).
    #[wasm_bindgen(constructor)]
    pub fn new(page_limit: JsValue) -> Result<FollowMachineJs, JsValue> {
        let page_limit = feed::limit("pageLimit", &page_limit)?;
        FollowMachine::new(FollowOptions { page_limit })
            .map(|machine| Self { machine })
            .map_err(|e| js_errors::input(&e))
    }

    /// The next notice, `{ notice: 'watch' | 'ended', id }`, or store step:
    /// `{ act: 'readHead' }`, `{ act: 'listOpenParks', after, limit }`
    /// (`after` an id or `null`), `{ act: 'readFeed', after, limit }` or
    /// `{ act: 'wait', after }` (`after` a cursor). Asking again before a
    /// step is answered gives the same step.
    pub fn poll(&mut self) -> Result<JsValue, JsValue> {
        let act = |name: &str| Out::new().set("act", &JsValue::from_str(name));
        let notice = |name: &str, id: &str| {
            Out::new()
                .set("notice", &JsValue::from_str(name))
                .set("id", &JsValue::from_str(id))
        };
        let limit = |limit: u32| JsValue::from_f64(f64::from(limit));
        Ok(match self.machine.poll() {
            FollowPoll::Notice(FollowNotice::Watch(id)) => notice("watch", id.as_str()),
            FollowPoll::Notice(FollowNotice::Ended(id)) => notice("ended", id.as_str()),
            FollowPoll::Act(FollowAction::ReadHead) => act("readHead"),
            FollowPoll::Act(FollowAction::ListOpenParks { after, limit: n }) => {
                act("listOpenParks")
                    .set(
                        "after",
                        &after.map_or(JsValue::NULL, |id| JsValue::from_str(id.as_str())),
                    )
                    .set("limit", &limit(n))
            }
            FollowPoll::Act(FollowAction::ReadFeed { after, limit: n }) => act("readFeed")
                .set("after", &cursor_js(after))
                .set("limit", &limit(n)),
            FollowPoll::Act(FollowAction::Wait { after }) => {
                act("wait").set("after", &cursor_js(after))
            }
            _ => return Err(js_errors::internal("a step this binding does not know")),
        }
        .done())
    }

    /// Answers `readHead` with what the store's `feedHead()` resolved to.
    #[wasm_bindgen(js_name = handleHead)]
    pub fn handle_head(&mut self, head: JsValue) -> Result<(), JsValue> {
        let head = answered_cursor("feedHead() result", &head)?;
        self.machine.handle_head(head).map_err(|e| refused(&e))
    }

    /// Answers `listOpenParks` with what the store's `openParks(after,
    /// limit)` resolved to: execution ids.
    #[wasm_bindgen(js_name = handleOpenParks)]
    pub fn handle_open_parks(&mut self, ids: JsValue) -> Result<(), JsValue> {
        let what = "openParks() result";
        let ids = answer_list(what, &ids)?
            .iter()
            .map(|id| {
                answered_id(&id).ok_or_else(|| contract(&format!("{what} must hold execution ids")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.machine.handle_open_parks(ids).map_err(|e| refused(&e))
    }

    /// Answers `readFeed` with what the store's `feed(after, limit)`
    /// resolved to: `[{ cursor, event }]`.
    #[wasm_bindgen(js_name = handleFeed)]
    pub fn handle_feed(&mut self, entries: JsValue) -> Result<(), JsValue> {
        let what = "feed() result";
        let entries = answer_list(what, &entries)?
            .iter()
            .map(|entry| {
                let field = |name| property_as(&entry, name, what, STORE_CONTRACT);
                Ok(FeedEntry {
                    cursor: answered_cursor(what, &field("cursor")?)?,
                    event: events::envelope(what, STORE_CONTRACT, &field("event")?)?,
                })
            })
            .collect::<Result<Vec<_>, JsValue>>()?;
        self.machine.handle_feed(entries).map_err(|e| refused(&e))
    }

    /// Answers `wait`: the store's `waitForFeed` resolved, or the host's
    /// poll interval passed.
    #[wasm_bindgen(js_name = handleWoken)]
    pub fn handle_woken(&mut self) -> Result<(), JsValue> {
        self.machine.handle_woken().map_err(|e| refused(&e))
    }

    /// A notice's supervision of `parent` failed (the store threw): it is
    /// watched again after the next wake.
    #[wasm_bindgen(js_name = handleFailed)]
    pub fn handle_failed(&mut self, parent: JsValue) -> Result<(), JsValue> {
        self.machine.handle_failed(values::execution_id(&parent)?);
        Ok(())
    }

    /// Everything up to this cursor has been read.
    #[wasm_bindgen(getter)]
    #[must_use]
    pub fn cursor(&self) -> JsValue {
        cursor_js(self.machine.cursor())
    }

    /// Whether the rebuild (the head and every open park) is done.
    #[wasm_bindgen(getter)]
    #[must_use]
    pub fn rebuilt(&self) -> bool {
        self.machine.is_rebuilt()
    }

    /// The parents the rebuild watched, once first caught up; `null`
    /// before (the core counts, so both followers report the same).
    #[wasm_bindgen(getter, js_name = rebuildWatched)]
    #[must_use]
    pub fn rebuild_watched(&self) -> Option<f64> {
        // Counts stay far below 2^53, so the float is exact.
        #[allow(clippy::cast_precision_loss)]
        self.machine.rebuild_watched().map(|count| count as f64)
    }
}
