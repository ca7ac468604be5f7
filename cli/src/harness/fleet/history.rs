//! `--history N`: N finished family trees written before the workers
//! start, so a worker's rebuild carries the weight of a store that has
//! been in use, and the fleet can measure what that weight costs (with the
//! change feed, nothing: a rebuild reads the open parks only).
//!
//! Each tree is left as a real engine leaves one: every child started with
//! the parent edge and completed; the parent started, parked under its
//! first token on its children's group, resumed under a second token with
//! the answer the supervisor would have written, and completed. Nothing in
//! it is open, so a correct worker never reads or touches it; the
//! fleet checks afterwards that none was touched ([`untouched`]).
//!
//! The ids (`history-…`) cannot collide with the live families'
//! (`parent-…`, `child-…`). Trees are written a few at a time, each log in
//! as few batches as its tokens allow.

use std::collections::BTreeMap;

use futures_util::{StreamExt, TryStreamExt, stream};
use indicatif::ProgressBar;
use loomfence_core::{
    ExecutionId, JsonObject, KernelKind, NewEvent,
    lineage::started_child,
    log::Terminal,
    park::{Wait, park_payload},
    retention::ExecutionSummary,
    supervise::{ChildOutcome, answer_for},
};
use loomfence_store::EventStore;
use serde_json::json;

use crate::error::CliError;

/// Trees written at once: enough to keep a pool of 8 connections busy.
const CONCURRENCY: usize = 16;

/// What a store failure while writing the history is reported as.
const WRITING: &str = "writing the history: store";

/// The prefix of every history execution's id.
const PREFIX: &str = "history-";

/// A parent's log once finished: started, parked, resumed, completed.
const PARENT_HEAD: u64 = 4;

/// A child's log once finished: started, completed.
const CHILD_HEAD: u64 = 2;

/// The history's shape.
#[derive(Clone, Copy, Debug)]
pub(crate) struct History {
    /// Trees.
    pub(crate) trees: u32,
    /// Children per tree.
    pub(crate) children: u32,
}

impl History {
    /// Every execution the history writes.
    pub(crate) fn executions(&self) -> u64 {
        u64::from(self.trees) * (1 + u64::from(self.children))
    }

    /// Writes every tree, `at` being their time, advancing `bar` by one
    /// per tree.
    pub(crate) async fn write(
        &self,
        events: &dyn EventStore,
        at: i64,
        bar: &ProgressBar,
    ) -> Result<(), CliError> {
        stream::iter(0..self.trees)
            .map(Ok)
            .try_for_each_concurrent(CONCURRENCY, |tree| async move {
                write_tree(events, tree, self.children, at).await?;
                bar.inc(1);
                Ok(())
            })
            .await
    }
}

/// What the listing says of the history after the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Untouched {
    /// History executions listed.
    pub(crate) listed: u64,
    /// History executions whose log is not what was written: not ended,
    /// or a head other than a finished log's.
    pub(crate) touched: u64,
}

/// Judges the history from a listing alone: every history execution must
/// still be ended with the head it was written with.
pub(crate) fn untouched<'a>(listing: impl IntoIterator<Item = &'a ExecutionSummary>) -> Untouched {
    let mut found = Untouched::default();
    for summary in listing {
        let id = summary.execution_id.as_str();
        let Some(rest) = id.strip_prefix(PREFIX) else {
            continue;
        };
        found.listed += 1;
        // A child's id carries its index after the tree's.
        let expected = if rest.contains('-') {
            CHILD_HEAD
        } else {
            PARENT_HEAD
        };
        found.touched += u64::from(summary.ended.is_none() || summary.head != expected);
    }
    found
}

/// The ids of tree `tree`: its parent and its children.
fn ids(tree: u32, children: u32) -> Result<(ExecutionId, Vec<ExecutionId>), CliError> {
    let id = |name: String| {
        ExecutionId::new(name).map_err(CliError::input("writing the history: execution id"))
    };
    let parent = id(format!("{PREFIX}{tree:07}"))?;
    let children = (0..children)
        .map(|c| id(format!("{PREFIX}{tree:07}-{c:02}")))
        .collect::<Result<_, _>>()?;
    Ok((parent, children))
}

/// Writes one finished tree.
async fn write_tree(
    events: &dyn EventStore,
    tree: u32,
    children: u32,
    at: i64,
) -> Result<(), CliError> {
    let (parent, kids) = ids(tree, children)?;
    let mut ended = BTreeMap::new();
    for child in &kids {
        let mut output = JsonObject::new();
        output.insert("output".to_owned(), json!({ "child": child.as_str() }));
        let completed =
            NewEvent::kernel(KernelKind::ExecutionCompleted, at).with_payload(output.clone());
        events
            .append_many(child, vec![started_child(&parent, at), completed])
            .await
            .map_err(CliError::store(WRITING))?;
        ended.insert(
            child.clone(),
            ChildOutcome {
                status: Terminal::Completed,
                output,
            },
        );
    }
    let waits = [Wait::Group(kids)];
    let store = |error: loomfence_store::StoreError| CliError::store(WRITING)(error);
    events
        .append_many(
            &parent,
            vec![NewEvent::kernel(KernelKind::ExecutionStarted, at)],
        )
        .await
        .map_err(store)?;
    let first = events.acquire_fence(&parent).await.map_err(store)?;
    let park = NewEvent::kernel(KernelKind::ExecutionSuspended, at)
        .with_payload(park_payload(&waits))
        .with_fence(first);
    events
        .append_many(&parent, vec![park])
        .await
        .map_err(store)?;
    let second = events.acquire_fence(&parent).await.map_err(store)?;
    let mut resumed = JsonObject::new();
    resumed.insert(
        "answer".to_owned(),
        answer_for(&waits, &ended).unwrap_or_default(),
    );
    let finish = vec![
        NewEvent::kernel(KernelKind::ExecutionResumed, at)
            .with_payload(resumed)
            .with_fence(second),
        NewEvent::kernel(KernelKind::ExecutionCompleted, at).with_fence(second),
    ];
    events.append_many(&parent, finish).await.map_err(store)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use loomfence_store::MemoryEventStore;

    use super::*;
    use crate::harness::listing::list_all;

    #[tokio::test]
    async fn trees_are_written_finished_and_judged_untouched_until_one_moves() {
        let store = MemoryEventStore::default();
        let history = History {
            trees: 5,
            children: 2,
        };
        history
            .write(&store, 1_000, &ProgressBar::hidden())
            .await
            .unwrap();
        let listing = list_all(&store).await.unwrap();
        assert_eq!(listing.len() as u64, history.executions());
        assert_eq!(
            untouched(&listing),
            Untouched {
                listed: 15,
                touched: 0
            }
        );
        let parent = ExecutionId::new("history-0000003").unwrap();
        let log = store.read_range(&parent, 1, None).await.unwrap();
        let answer = &log[2].payload["answer"];
        assert_eq!(answer["wait"], json!(0), "{answer}");
        assert!(answer["children"]["history-0000003-01"].is_object());

        // A second resume under the parent's token (2): the kind of touch
        // a worker that misread an ended tree would leave.
        store
            .append(
                &parent,
                NewEvent::kernel(KernelKind::ExecutionResumed, 2).with_fence(2),
            )
            .await
            .unwrap();
        let after = list_all(&store).await.unwrap();
        assert_eq!(untouched(&after).touched, 1);
    }
}
