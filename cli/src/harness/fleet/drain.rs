//! The end of a fleet run: waiting for every parent to be resumed and the
//! logs to settle.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use loomfence_core::ExecutionId;
use loomfence_store::EventStore;

use super::plan::Plan;
use super::workers::Workers;
use crate::error::CliError;
use crate::harness::listing::list_all;

/// Waits until every parent has been resumed and no parent's log changed
/// for half a second (the bodies in flight finished), or `timeout`;
/// answers whether it settled in time. Workers that exit on their own
/// meanwhile are started again.
pub(super) async fn drain(
    events: &dyn EventStore,
    plan: &Plan,
    timeout: Duration,
    workers: &mut Workers,
) -> Result<bool, CliError> {
    let parents: HashSet<&ExecutionId> = plan.families.iter().map(|f| &f.parent).collect();
    let deadline = Instant::now() + timeout;
    let mut last = None;
    let mut still_since = Instant::now();
    loop {
        workers.restart_the_dead()?;
        let heads: Vec<(ExecutionId, u64)> = list_all(events)
            .await?
            .into_iter()
            .filter(|s| parents.contains(&s.execution_id))
            .map(|s| (s.execution_id, s.head))
            .collect();
        // A parked parent's head is its park (2); anything after it
        // answered the park.
        let all_resumed = heads.len() == parents.len() && heads.iter().all(|(_, head)| *head > 2);
        if last.as_ref() != Some(&heads) {
            still_since = Instant::now();
            last = Some(heads);
        }
        if all_resumed && still_since.elapsed() >= Duration::from_millis(500) {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
