//! `loomfence inspect --json`: the inspection as one JSON object (its
//! fields are listed in `--json`'s help).

use loomfence_core::Envelope;
use loomfence_core::log::is_answering;
use serde_json::{Value, json};

use super::gather::{Inspection, ParkFacts, Verdict, WaitFacts};
use crate::operate::timer_rows;

/// The object.
pub(crate) fn render(inspection: &Inspection) -> Value {
    let i = inspection;
    json!({
        "store": i.store,
        "executionId": i.id.as_str(),
        "now": i.now,
        "status": super::status_name(i.view.status),
        "head": i.view.head,
        "fence": i.fence,
        "events": i.events.iter().map(event).collect::<Vec<_>>(),
        "openPark": i.park.as_ref().map(|park| open_park(park, i.now)),
        "timers": {
            "rows": i.rows.entries.iter().map(|e| timer_rows::entry_json(e, i.now)).collect::<Vec<_>>(),
            "exhausted": i.exhausted.iter().map(timer_rows::exhausted_json).collect::<Vec<_>>(),
            "unreadable": i.rows.unreadable.iter().map(timer_rows::unreadable_json).collect::<Vec<_>>(),
        },
        "inbox": i.inbox.iter().map(|entry| json!({
            "channel": entry.message.message.key.channel,
            "messageId": entry.message.message.key.message_id,
            "arrival": entry.message.arrival,
            "sentAt": entry.message.message.sent_at,
            "consumed": entry.consumed,
        })).collect::<Vec<_>>(),
        "feed": match i.feed {
            Some(head) => json!({
                "supported": true,
                "head": head.to_string(),
                "epoch": head.epoch(),
                "position": head.position(),
            }),
            None => json!({ "supported": false }),
        },
        "parent": i.parent.as_ref().ok().and_then(|p| p.as_ref().map(|p| p.as_str())),
        "parentError": i.parent.as_ref().err(),
        "children": {
            "parked": i.parked_on.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
            "waitedOn": i.waited_on().iter().map(|c| c.as_str()).collect::<Vec<_>>(),
        },
        "retention": retention(&i.retention),
    })
}

/// One event: where it stands in the log and what it is.
fn event(event: &Envelope) -> Value {
    json!({
        "sequence": event.sequence,
        "kind": event.kind,
        "class": super::class_name(event),
        "answering": is_answering(&event.kind, &event.metadata),
        "fence": match event.fence() {
            Ok(token) => json!(token),
            Err(_) => json!("unreadable"),
        },
        "at": event.at,
    })
}

/// The open park and its waits.
fn open_park(park: &ParkFacts, now: i64) -> Value {
    let mut object = json!({ "sequence": park.sequence, "fence": park.fence });
    match &park.waits {
        Ok(waits) => {
            object["waits"] = waits.iter().map(|w| wait(w, now)).collect();
        }
        Err(reason) => {
            object["waits"] = json!([]);
            object["error"] = json!(reason);
        }
    }
    object
}

/// One wait with what answers it.
fn wait(wait: &WaitFacts, now: i64) -> Value {
    let answerable = wait.answerable(now);
    match wait {
        WaitFacts::Children { group, children } => {
            let children: Vec<Value> = children
                .iter()
                .map(|child| {
                    json!({
                        "id": child.id.as_str(),
                        "ended": child.ended,
                        "status": child.status.map(super::status_name),
                    })
                })
                .collect();
            if *group {
                json!({ "kind": "group", "children": children, "answerable": answerable })
            } else {
                json!({
                    "kind": "child",
                    "child": children.first().map(|c| c["id"].clone()),
                    "children": children,
                    "answerable": answerable,
                })
            }
        }
        WaitFacts::Timer { wake_at } => {
            json!({ "kind": "timer", "wakeAt": wake_at, "answerable": answerable })
        }
        WaitFacts::Message { channel, pending } => json!({
            "kind": "message",
            "channel": channel,
            "pending": pending,
            "answerable": answerable,
        }),
        WaitFacts::Unknown(shown) => {
            json!({ "kind": "unknown", "shown": shown, "answerable": false })
        }
    }
}

/// The retention verdict.
fn retention(verdict: &Verdict) -> Value {
    let (name, pinned_by, ended_at) = match verdict {
        Verdict::Kept { .. } => ("kept", None, None),
        Verdict::Pinned { ended_at, parent } => ("pinned", Some(parent.as_str()), Some(*ended_at)),
        Verdict::Eligible { ended_at } => ("eligible", None, Some(*ended_at)),
        Verdict::Undecided { ended_at, .. } => ("undecided", None, Some(*ended_at)),
    };
    json!({
        "verdict": name,
        "reason": super::verdict_reason(verdict),
        "pinnedBy": pinned_by,
        "endedAt": ended_at,
    })
}
