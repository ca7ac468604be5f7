//! `loomfence inspect`'s text: one section per part of the inspection.

use std::fmt::Write as _;

use super::gather::{Inspection, WaitFacts};
use crate::operate::{timer_rows, when};

/// The text, ending in a newline.
pub(crate) fn render(i: &Inspection) -> String {
    let now = i.now;
    let mut out = String::new();
    let mut line = |text: String| {
        out.push_str(&text);
        out.push('\n');
    };
    line(format!("execution {} in {}", i.id, i.store));
    line(format!(
        "  status {} (head {}), current fence token {}",
        super::status_name(i.view.status),
        i.view.head,
        i.fence
    ));

    line(format!("log ({} events):", i.events.len()));
    for event in &i.events {
        let fence = match event.fence() {
            Ok(Some(token)) => format!("token {token}"),
            Ok(None) => "no token".to_owned(),
            Err(_) => "unreadable token".to_owned(),
        };
        line(format!(
            "  #{} {} [{}] {} at {}",
            event.sequence,
            event.kind,
            super::class_name(event),
            fence,
            when::at(event.at)
        ));
    }

    match &i.park {
        None => line("open park: none".to_owned()),
        Some(park) => {
            line(format!(
                "open park: #{} (written under token {})",
                park.sequence, park.fence
            ));
            match &park.waits {
                Err(reason) => line(format!("  its waits do not read: {reason}")),
                Ok(waits) => {
                    for wait in waits {
                        line(format!("  {}", wait_line(wait, now)));
                    }
                }
            }
        }
    }

    line(format!("timer rows ({}):", i.rows.entries.len()));
    for entry in &i.rows.entries {
        line(format!("  {}", timer_rows::entry_line(entry, now, false)));
    }
    line(format!("exhausted records ({}):", i.exhausted.len()));
    for record in &i.exhausted {
        line(format!(
            "  {}",
            timer_rows::exhausted_line(record, now, false)
        ));
    }
    if !i.rows.unreadable.is_empty() {
        line(format!(
            "UNREADABLE timer rows ({}):",
            i.rows.unreadable.len()
        ));
        for row in &i.rows.unreadable {
            line(format!("  {}", timer_rows::unreadable_line(row)));
        }
    }

    line(format!("inbox ({} messages):", i.inbox.len()));
    for entry in &i.inbox {
        let key = &entry.message.message.key;
        line(format!(
            "  channel {} message {} (arrival {}, sent {}): {}",
            key.channel,
            key.message_id,
            entry.message.arrival,
            when::at(entry.message.message.sent_at),
            if entry.consumed {
                "consumed"
            } else {
                "pending"
            }
        ));
    }

    match i.feed {
        Some(head) => line(format!(
            "feed head {head} (the store's cursor, not this execution's)"
        )),
        None => line("feed: no change feed".to_owned()),
    }

    match &i.parent {
        Ok(Some(parent)) => line(format!("parent: {parent}")),
        Ok(None) => line("parent: none recorded (a root)".to_owned()),
        Err(reason) => line(format!("parent: does not read: {reason}")),
    }
    line(format!(
        "children its parks named: {}",
        list_or_none(i.parked_on.iter().map(ToString::to_string))
    ));
    line(format!(
        "children its open park waits on: {}",
        list_or_none(i.waited_on().into_iter().map(ToString::to_string))
    ));
    line(format!(
        "retention: {}",
        super::verdict_reason(&i.retention)
    ));
    out
}

/// One wait and whether it is answerable now.
fn wait_line(wait: &WaitFacts, now: i64) -> String {
    let answer = if wait.answerable(now) {
        "answerable now"
    } else {
        "not answerable yet"
    };
    let what = match wait {
        WaitFacts::Children { group, children } => {
            let mut text = String::from(if *group { "group:" } else { "child" });
            for child in children {
                let state = match child.status {
                    None => "no log".to_owned(),
                    Some(status) if child.ended => {
                        format!("ended ({})", super::status_name(status))
                    }
                    Some(status) => super::status_name(status).to_owned(),
                };
                let _ = write!(text, " {} ({state})", child.id);
            }
            text
        }
        WaitFacts::Timer { wake_at } => format!("timer at {}", when::at_from_now(*wake_at, now)),
        WaitFacts::Message { channel, pending } => {
            format!("message on channel {channel} ({pending} pending)")
        }
        WaitFacts::Unknown(shown) => format!("a wait this loomfence does not know: {shown}"),
    };
    format!("{what}: {answer}")
}

/// `a, b, c`, or `none`.
fn list_or_none(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}
