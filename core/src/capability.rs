//! What a store offers, so the resume machine picks its path up front
//! instead of trying and failing.

/// How much fencing a store offers; the resume path picks its strategy from
/// this rather than by trying and failing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Capability {
    /// Tokens, the append guard, and the conditional acquire
    /// (`acquire_fence_if`): both race windows are closed.
    Conditional,
    /// Tokens and the append guard, but only the unconditional acquire: a
    /// resumer falls back to `acquire_fence` and accepts the
    /// documented residual window.
    FencingOnly,
    /// No tokens at all: a single-writer deployment where the process is the
    /// failure domain. Appends are never refused for staleness.
    NonFencing,
}

impl Capability {
    /// Whether the store keeps tokens and guards appends with them.
    #[must_use]
    pub fn fences(self) -> bool {
        self != Capability::NonFencing
    }

    /// Whether the store offers the conditional acquire.
    #[must_use]
    pub fn is_conditional(self) -> bool {
        self == Capability::Conditional
    }
}
