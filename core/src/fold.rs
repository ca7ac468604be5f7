//! Folding a log into what a resumer needs: the status, the head, and the open
//! park if there is one.

use crate::event::Envelope;
use crate::kind::{KernelKind, KindClass, classify_stamped, has_kernel_stamp};
use crate::status::Status;

/// A park nothing has answered yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpenPark {
    /// The park's sequence: what a resumer passes as `parkSeq`.
    pub sequence: u64,
    /// The token the park was written under (`metadata.fence`), 0 if none:
    /// the token a conditional acquire for this park expects first.
    pub fence: u64,
}

/// A fold of a log: status, head and the open park, advanced one event at a
/// time so a resumer can extend the view it already has with a tail read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ExecutionView {
    /// The status after the events folded so far.
    pub status: Status,
    /// The sequence of the last event folded, 0 for none.
    pub head: u64,
    /// The newest park, while no answering event follows it.
    pub open_park: Option<OpenPark>,
}

impl ExecutionView {
    /// Folds `events` from an empty view.
    pub fn fold<'a>(events: impl IntoIterator<Item = &'a Envelope>) -> Self {
        let mut view = Self::default();
        view.extend(events);
        view
    }

    /// Advances the view by `events`, which must follow what it has seen.
    pub fn extend<'a>(&mut self, events: impl IntoIterator<Item = &'a Envelope>) {
        for event in events {
            self.apply(event);
        }
    }

    /// Advances the view by one event.
    ///
    /// A park whose `metadata.fence` is unreadable is recorded as expecting
    /// token 0: a wrong expectation only costs one stale answer and a retry on
    /// the store's current token, never a wrong acquire.
    pub fn apply(&mut self, event: &Envelope) {
        let kind = event.kernel_kind();
        self.status = self.status.after(kind);
        self.head = self.head.max(event.sequence);
        if self.status.is_terminal() {
            // Terminal is absorbing: a park written after the end is not a
            // park anyone may answer.
            self.open_park = None;
        } else if kind == Some(KernelKind::ExecutionSuspended) {
            self.open_park = Some(OpenPark {
                sequence: event.sequence,
                fence: event.fence().ok().flatten().unwrap_or(0),
            });
        } else if event.is_answering() {
            self.open_park = None;
        }
    }
}

/// The newest park in `events` when no answering event follows it and the
/// execution has not ended.
///
/// `events` must be the log from its first event: whether the execution
/// ended is a property of the whole log, and a park written after an end
/// (by a buggy or unfenced writer) must not look resumable here while
/// [`ExecutionView::fold`] of the same log calls it terminal.
#[must_use]
pub fn locate_park(events: &[Envelope]) -> Option<&Envelope> {
    open_park_by(
        events,
        |event| &event.kind,
        |event| has_kernel_stamp(&event.metadata),
    )
    .map(|index| &events[index])
}

/// What a fold reads of one event: its kind, and whether it carries the
/// kernel stamp (`metadata.kernel` is the boolean `true`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KindFacts<'a> {
    /// The event's kind.
    pub kind: &'a str,
    /// Whether `metadata.kernel` is the boolean `true`.
    pub stamped: bool,
}

/// [`locate_park`] over only what it reads of each event: the index of the
/// open park. For a host that holds the log outside Rust and hands over
/// just this (the npm package's `locatePark`, which then answers the
/// host's own envelope at that index).
#[must_use]
pub fn open_park_index(events: &[KindFacts<'_>]) -> Option<usize> {
    open_park_by(events, |facts| facts.kind, |facts| facts.stamped)
}

/// The fold of [`locate_park`] and [`open_park_index`], over any events:
/// `kind` reads an event's kind, `stamped` its kernel stamp, asked only of
/// a kind that is not a kernel kind. The index of the open park.
fn open_park_by<T>(
    events: &[T],
    kind: impl Fn(&T) -> &str,
    stamped: impl Fn(&T) -> bool,
) -> Option<usize> {
    let kernel = |event: &T| KernelKind::from_name(kind(event));
    if events
        .iter()
        .any(|event| Status::Pending.after(kernel(event)).is_terminal())
    {
        return None;
    }
    events
        .iter()
        .rposition(|event| classify_stamped(kind(event), || stamped(event)) == KindClass::Answering)
        .filter(|&index| kernel(&events[index]) == Some(KernelKind::ExecutionSuspended))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::NewEvent;
    use crate::input::ExecutionId;
    use crate::status::Terminal;

    fn log(events: &[NewEvent]) -> Vec<Envelope> {
        let id = ExecutionId::new("e").expect("valid");
        events
            .iter()
            .zip(1..)
            .map(|(event, seq)| event.clone().into_envelope(id.clone(), seq))
            .collect()
    }

    fn kernel(kind: KernelKind) -> NewEvent {
        NewEvent::kernel(kind, 0)
    }

    #[test]
    fn the_status_follows_the_kernel_kinds() {
        let events = log(&[
            kernel(KernelKind::ExecutionStarted),
            kernel(KernelKind::ExecutionSuspended),
        ]);
        assert_eq!(ExecutionView::fold(&events[..0]).status, Status::Pending);
        assert_eq!(ExecutionView::fold(&events[..1]).status, Status::Running);
        let view = ExecutionView::fold(&events);
        assert_eq!(view.status, Status::Parked);
        assert_eq!(
            view.open_park,
            Some(OpenPark {
                sequence: 2,
                fence: 0
            })
        );
        assert_eq!(view.head, 2);
    }

    #[test]
    fn ignorable_and_application_events_keep_the_park_open() {
        let events = log(&[
            kernel(KernelKind::ExecutionStarted),
            kernel(KernelKind::ExecutionSuspended).with_fence(4),
            kernel(KernelKind::ExecutionDenied),
            NewEvent::new("app.progress", 0),
            NewEvent::new("FUTURE", 0).with_meta("kernel", "true".into()),
        ]);
        let view = ExecutionView::fold(&events);
        assert_eq!(view.status, Status::Parked);
        assert_eq!(
            view.open_park,
            Some(OpenPark {
                sequence: 2,
                fence: 4
            })
        );
        assert_eq!(locate_park(&events).map(|e| e.sequence), Some(2));
    }

    #[test]
    fn any_answering_event_closes_the_park() {
        for closer in [
            kernel(KernelKind::ExecutionResumed),
            kernel(KernelKind::ExecutionCompleted),
            kernel(KernelKind::ExecutionContinued),
            NewEvent::new("FUTURE", 0).with_kernel_stamp(),
        ] {
            let events = log(&[kernel(KernelKind::ExecutionSuspended), closer.clone()]);
            assert_eq!(ExecutionView::fold(&events).open_park, None, "{closer:?}");
            assert_eq!(locate_park(&events), None, "{closer:?}");
        }
    }

    #[test]
    fn a_newer_park_supersedes_the_older_one() {
        let events = log(&[
            kernel(KernelKind::ExecutionSuspended),
            kernel(KernelKind::ExecutionSuspended).with_fence(1),
        ]);
        assert_eq!(locate_park(&events).map(|e| e.sequence), Some(2));
        assert_eq!(
            ExecutionView::fold(&events).open_park,
            Some(OpenPark {
                sequence: 2,
                fence: 1
            })
        );
    }

    #[test]
    fn terminal_is_absorbing() {
        let events = log(&[
            kernel(KernelKind::ExecutionFailed),
            kernel(KernelKind::ExecutionResumed),
        ]);
        assert_eq!(
            ExecutionView::fold(&events).status,
            Status::Terminal(Terminal::Failed)
        );
    }

    #[test]
    fn a_park_after_the_end_is_not_open() {
        let events = log(&[
            kernel(KernelKind::ExecutionStarted),
            kernel(KernelKind::ExecutionCompleted),
            kernel(KernelKind::ExecutionSuspended),
        ]);
        let view = ExecutionView::fold(&events);
        assert_eq!(view.status, Status::Terminal(Terminal::Completed));
        assert_eq!(view.open_park, None);
        assert_eq!(locate_park(&events), None);
    }

    #[test]
    fn folding_in_pieces_equals_folding_at_once() {
        let events = log(&[
            kernel(KernelKind::ExecutionStarted),
            kernel(KernelKind::ExecutionSuspended),
            kernel(KernelKind::ExecutionDenied),
            kernel(KernelKind::ExecutionResumed),
        ]);
        let mut view = ExecutionView::fold(&events[..2]);
        view.extend(&events[2..]);
        assert_eq!(view, ExecutionView::fold(&events));
    }
}
