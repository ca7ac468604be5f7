//! Behaviour a fleet switches on once every node runs a version that
//! understands it.

/// Opt-in behaviour, off by default.
///
/// Off until every node of the fleet runs a version that has it: a node
/// that writes re-drive rows next to nodes that cannot judge them would
/// leave those rows to the nodes that can, or, with an older timer
/// service, have them retired as obsolete wakes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Features {
    /// On a contended resume, write a re-drive row (attempt 0) to the timer
    /// store instead of reporting the contention to `on_error` and leaving
    /// the park for `recover()`.
    pub redrive: bool,
}

impl Features {
    /// Every feature off.
    #[must_use]
    pub const fn none() -> Self {
        Self { redrive: false }
    }

    /// This set with re-drive switched `on` or off.
    #[must_use]
    pub const fn with_redrive(mut self, on: bool) -> Self {
        self.redrive = on;
        self
    }
}
