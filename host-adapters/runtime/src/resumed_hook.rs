//! What a host does with a resume that lands where no caller receives it.

use std::sync::Arc;

use loomfence_core::Resumed;

/// Receives each resume that lands inside a service rather than in a
/// caller's hands: a timer service's wake, a re-drive fired by a timer
/// service. The host starts the execution's body from it (typically
/// `tokio::spawn` of a task that writes through [`Body`](crate::Body));
/// without one, the park is answered and the execution's body never runs
/// on this node. It is called inline, before the service goes on, so it
/// must not block.
pub type OnResumed = Arc<dyn Fn(Resumed) + Send + Sync>;

/// The default [`OnResumed`]: a debug trace, no body.
pub(crate) fn no_body() -> OnResumed {
    Arc::new(|resumed: Resumed| {
        tracing::debug!(
            execution_id = %resumed.execution_id,
            fence = ?resumed.fence,
            "resumed by a service; no on_resumed hook runs its body"
        );
    })
}
