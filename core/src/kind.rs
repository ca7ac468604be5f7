//! Which events answer a park.
//!
//! A conditional acquire must refuse once a park has been answered, and must
//! not refuse because of audit noise that follows a park without answering it.
//! The split between the two is this module's table. It is an allow-list of
//! answering kinds, not a deny-list of ignorable ones: a kind this node has
//! never heard of is an application event (ignorable) unless its writer
//! stamped it as a kernel kind, in which case it is answering (fail-closed).

use serde_json::Value;

use crate::json::JsonObject;

/// The two classes an event can fall in for fencing purposes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KindClass {
    /// Moves the execution out of the park it follows: a resume, a newer park,
    /// or an end. A second resumer must not act after one of these.
    Answering,
    /// Follows a park without answering it: audit records, step bookkeeping,
    /// application output. Never makes a conditional acquire stale.
    Ignorable,
}

/// Declares the kernel kinds once, so the enum, the list and the names cannot
/// drift apart. Classification is deliberately NOT part of this macro: it is
/// the hand-written exhaustive `match` in [`KernelKind::class`], so adding a
/// kind here without deciding its class does not compile.
macro_rules! kernel_kinds {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)+) => {
        /// A kind the kernel itself writes. Every other kind is an application
        /// event.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum KernelKind {
            $($(#[$doc])* $variant,)+
        }

        impl KernelKind {
            /// Every kernel kind, in declaration order. SQL adapters build
            /// their answering-kind filters from this.
            pub const ALL: &'static [KernelKind] = &[$(KernelKind::$variant,)+];

            /// The wire name, as stored in an envelope's `kind`.
            #[must_use]
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(KernelKind::$variant => $name,)+
                }
            }
        }

        /// The wire names of every kernel kind, the JS-facing
        /// `KERNEL_EVENT_KINDS`.
        pub const KERNEL_EVENT_KINDS: &[&str] = &[$($name,)+];
    };
}

kernel_kinds! {
    /// The execution began running.
    ExecutionStarted => "EXECUTION_STARTED",
    /// A park was answered and the body runs again.
    ExecutionResumed => "EXECUTION_RESUMED",
    /// The execution parked, waiting for children, a timer or a message.
    ExecutionSuspended => "EXECUTION_SUSPENDED",
    /// The execution finished successfully.
    ExecutionCompleted => "EXECUTION_COMPLETED",
    /// The execution finished with a failure.
    ExecutionFailed => "EXECUTION_FAILED",
    /// The execution was cancelled.
    ExecutionCancelled => "EXECUTION_CANCELLED",
    /// The execution ended by continuing as a new execution.
    ExecutionContinued => "EXECUTION_CONTINUED",
    /// An audit record that a request against the execution was denied;
    /// appended without a fence.
    ExecutionDenied => "EXECUTION_DENIED",
    /// The execution moved between nodes or shards.
    ExecutionMigrated => "EXECUTION_MIGRATED",
    /// An outcome was recorded for a finished execution.
    OutcomeRecorded => "OUTCOME_RECORDED",
    /// A step began.
    StepStarted => "STEP_STARTED",
    /// A step finished.
    StepCompleted => "STEP_COMPLETED",
    /// A step failed, possibly while the execution is parked.
    StepFailed => "STEP_FAILED",
    /// The running owner consumed a message from the inbox.
    MessageConsumed => "MESSAGE_CONSUMED",
    /// Someone attached an annotation.
    AnnotationAdded => "ANNOTATION_ADDED",
}

impl KernelKind {
    /// How this kind counts against an open park.
    ///
    /// Exhaustive, with no wildcard arm: a new kernel kind forces a decision
    /// here before anything compiles.
    #[must_use]
    pub const fn class(self) -> KindClass {
        match self {
            KernelKind::ExecutionResumed
            | KernelKind::ExecutionSuspended
            | KernelKind::ExecutionCompleted
            | KernelKind::ExecutionFailed
            | KernelKind::ExecutionCancelled
            | KernelKind::ExecutionContinued => KindClass::Answering,
            KernelKind::ExecutionStarted
            | KernelKind::ExecutionDenied
            | KernelKind::ExecutionMigrated
            | KernelKind::OutcomeRecorded
            | KernelKind::StepStarted
            | KernelKind::StepCompleted
            | KernelKind::StepFailed
            | KernelKind::MessageConsumed
            | KernelKind::AnnotationAdded => KindClass::Ignorable,
        }
    }

    /// Looks a wire name up in the table; `None` means an application kind
    /// (or a kernel kind from a newer node).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|kind| kind.as_str() == name)
    }

    /// The kernel kinds that answer a park, for SQL filters that must match
    /// [`is_answering`] exactly.
    pub fn answering() -> impl Iterator<Item = KernelKind> {
        Self::ALL
            .iter()
            .copied()
            .filter(|kind| kind.class() == KindClass::Answering)
    }
}

/// Whether `metadata.kernel` is the boolean `true`, the stamp a newer node puts
/// on kernel kinds an older node cannot know. The string `"true"` is not the
/// stamp: accepting look-alikes would let application data forge kernel
/// authority.
#[must_use]
pub(crate) fn has_kernel_stamp(metadata: &JsonObject) -> bool {
    matches!(metadata.get("kernel"), Some(Value::Bool(true)))
}

/// Classifies an event by its kind and, for unknown kinds, its kernel stamp.
#[must_use]
pub fn classify(kind: &str, metadata: &JsonObject) -> KindClass {
    classify_stamped(kind, || has_kernel_stamp(metadata))
}

/// [`classify`], asking `stamped` whether the event carries the kernel
/// stamp only for a kind that is not a kernel kind.
pub(crate) fn classify_stamped(kind: &str, stamped: impl FnOnce() -> bool) -> KindClass {
    match KernelKind::from_name(kind) {
        Some(kernel) => kernel.class(),
        None if stamped() => KindClass::Answering,
        None => KindClass::Ignorable,
    }
}

/// Whether an event with this kind and metadata answers a park it follows.
///
/// Application kinds are ignorable: a sibling that keeps emitting after a park
/// must not make every conditional acquire stale forever. An unknown kind
/// stamped `kernel: true` is answering: at worst that costs a contended resume,
/// never a fenced-out body.
#[must_use]
pub fn is_answering(kind: &str, metadata: &JsonObject) -> bool {
    classify(kind, metadata) == KindClass::Answering
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            other => panic!("test metadata must be an object, got {other}"),
        }
    }

    #[test]
    fn names_round_trip_and_are_unique() {
        for kind in KernelKind::ALL {
            assert_eq!(KernelKind::from_name(kind.as_str()), Some(*kind));
        }
        let mut names = KERNEL_EVENT_KINDS.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KernelKind::ALL.len());
    }

    #[test]
    fn the_answering_set_is_exactly_the_design_list() {
        let answering: Vec<&str> = KernelKind::answering().map(KernelKind::as_str).collect();
        assert_eq!(
            answering,
            [
                "EXECUTION_RESUMED",
                "EXECUTION_SUSPENDED",
                "EXECUTION_COMPLETED",
                "EXECUTION_FAILED",
                "EXECUTION_CANCELLED",
                "EXECUTION_CONTINUED",
            ]
        );
    }

    #[test]
    fn a_kernel_kind_ignores_the_stamp() {
        let stamped = meta(json!({ "kernel": true }));
        assert!(!is_answering("EXECUTION_DENIED", &stamped));
        assert!(is_answering("EXECUTION_RESUMED", &JsonObject::new()));
    }

    #[test]
    fn only_the_boolean_stamp_makes_an_unknown_kind_answering() {
        assert!(is_answering(
            "FUTURE_KIND",
            &meta(json!({ "kernel": true }))
        ));
        for not_a_stamp in [
            json!({}),
            json!({ "kernel": "true" }),
            json!({ "kernel": 1 }),
            json!({ "kernel": false }),
            json!({ "kernel": null }),
            json!({ "kernel": [true] }),
        ] {
            assert!(
                !is_answering("FUTURE_KIND", &meta(not_a_stamp.clone())),
                "{not_a_stamp}"
            );
        }
    }

    #[test]
    fn kind_names_are_case_sensitive() {
        assert!(!is_answering("execution_resumed", &JsonObject::new()));
    }
}
