//! The fleet's workload: P parents, each parked on a group of C children
//! and on a deadline, and when each child ends.
//!
//! Every parent is written as a real parent is: started, fenced once (its
//! own first run held a token), then parked under that token on two
//! alternative waits, `[Group(children), Timer{deadline}]`: whichever comes
//! first answers the park. The children are started with the parent edge.
//!
//! Most deadlines fall just after the parent's last child ends (within two
//! of the workers' feed polls), so a timer wake and the supervisors race for the
//! same park; the rest fall anywhere in the run, some before the children
//! end (a timeout). Every time is drawn from `--seed`.
//!
//! With `--message-every N`, one parent in N waits on a message instead of
//! a deadline: in turn `[Group(children), Message{"poke"}]` (the message
//! and the children race for the park) and `[Message{"poke"}]` alone (only
//! the message can answer it; its children end unwatched). Each gets its
//! message at a time drawn within the children's spread.

use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt, stream};
use loomfence_core::{
    ExecutionId, KernelKind, NewEvent,
    lineage::started_child,
    park::{Wait, park_payload},
    timer::TimerRow,
};
use loomfence_store::{EventStore, TimerStore};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::error::CliError;

/// One in this many parents gets a deadline anywhere in the run rather
/// than just after its last child.
const LOOSE_DEADLINE_EVERY: usize = 5;

/// What a store failure while writing the workload is reported as.
const SETTING_UP: &str = "setting up: store";

/// What a generated id the core refuses (a bug in the CLI) is reported as.
const SETTING_UP_ID: &str = "setting up: execution id";

/// Parents written at once while setting up.
const SETUP_CONCURRENCY: usize = 8;

/// One parent and its children.
#[derive(Clone, Debug)]
pub(crate) struct Family {
    /// The parent.
    pub(crate) parent: ExecutionId,
    /// Its children, each with the time it ends (ms since the epoch).
    pub(crate) children: Vec<(ExecutionId, i64)>,
    /// The parent's timer wait (not scheduled for a parent waiting on a
    /// message).
    pub(crate) deadline: i64,
    /// The message the parent waits on, if it waits on one.
    pub(crate) message: Option<MessageWait>,
}

/// A parent's wait on a message, and when the fleet sends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MessageWait {
    /// Whether the message is the park's only wait (otherwise it races the
    /// children's group).
    pub(crate) alone: bool,
    /// When the fleet sends it, ms since the epoch.
    pub(crate) send_at: i64,
}

/// The channel the fleet's messages go on.
pub(crate) const MESSAGE_CHANNEL: &str = "poke";

/// The whole workload.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// Every family, in id order.
    pub(crate) families: Vec<Family>,
}

/// What the plan is drawn from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// Parents.
    pub(crate) parents: u32,
    /// Children per parent.
    pub(crate) children: u32,
    /// When the first child may end, ms since the epoch.
    pub(crate) start: i64,
    /// Over how long the children end.
    pub(crate) spread: Duration,
    /// The workers' feed poll: tight deadlines fall within two of them
    /// after the last child.
    pub(crate) beat: Duration,
    /// The seed.
    pub(crate) seed: u64,
    /// One parent in this many waits on a message; 0 for none.
    pub(crate) message_every: u32,
}

impl Plan {
    /// Draws the workload from `shape`.
    pub(crate) fn draw(shape: Shape) -> Result<Self, CliError> {
        let id = |name: String| ExecutionId::new(name).map_err(CliError::input(SETTING_UP_ID));
        let mut rng = StdRng::seed_from_u64(shape.seed);
        let spread = millis(shape.spread).max(1);
        let beat = millis(shape.beat).max(1);
        let mut families = Vec::with_capacity(shape.parents as usize);
        for p in 0..shape.parents as usize {
            let parent = id(format!("parent-{p:06}"))?;
            let mut children = Vec::with_capacity(shape.children as usize);
            for c in 0..shape.children {
                let child = id(format!("child-{p:06}-{c:02}"))?;
                children.push((child, shape.start + rng.random_range(0..spread)));
            }
            let last = children
                .iter()
                .map(|(_, at)| *at)
                .max()
                .unwrap_or(shape.start);
            let deadline = if p % LOOSE_DEADLINE_EVERY == LOOSE_DEADLINE_EVERY - 1 {
                shape.start + rng.random_range(0..spread)
            } else {
                last + rng.random_range(0..2 * beat)
            };
            let every = shape.message_every as usize;
            let message = (every > 0 && p % every == every / 2).then(|| MessageWait {
                alone: (p / every) % 2 == 1,
                send_at: shape.start + rng.random_range(0..spread),
            });
            families.push(Family {
                parent,
                children,
                deadline,
                message,
            });
        }
        Ok(Self { families })
    }

    /// Every message the fleet sends, with when, earliest first.
    pub(crate) fn sends(&self) -> Vec<(i64, ExecutionId)> {
        let mut sends: Vec<(i64, ExecutionId)> = self
            .families
            .iter()
            .filter_map(|f| f.message.map(|m| (m.send_at, f.parent.clone())))
            .collect();
        sends.sort();
        sends
    }

    /// Every child with the time it ends, earliest first.
    pub(crate) fn endings(&self) -> Vec<(i64, ExecutionId)> {
        let mut endings: Vec<(i64, ExecutionId)> = self
            .families
            .iter()
            .flat_map(|f| f.children.iter().map(|(id, at)| (*at, id.clone())))
            .collect();
        endings.sort();
        endings
    }

    /// Writes every family (children started, parent started, fenced and
    /// parked) and schedules every deadline, `at` being the setup's time.
    pub(crate) async fn write(
        &self,
        events: &dyn EventStore,
        timers: &dyn TimerStore,
        at: i64,
    ) -> Result<(), CliError> {
        stream::iter(&self.families)
            .map(Ok)
            .try_for_each_concurrent(SETUP_CONCURRENCY, |family| {
                write_family(events, timers, family, at)
            })
            .await
    }
}

/// Writes one family.
async fn write_family(
    events: &dyn EventStore,
    timers: &dyn TimerStore,
    family: &Family,
    at: i64,
) -> Result<(), CliError> {
    for (child, _) in &family.children {
        events
            .append(child, started_child(&family.parent, at))
            .await
            .map_err(CliError::store(SETTING_UP))?;
    }
    let parent = &family.parent;
    events
        .append(parent, NewEvent::kernel(KernelKind::ExecutionStarted, at))
        .await
        .map_err(CliError::store(SETTING_UP))?;
    let token = events
        .acquire_fence(parent)
        .await
        .map_err(CliError::store(SETTING_UP))?;
    let group = Wait::Group(family.children.iter().map(|(id, _)| id.clone()).collect());
    let poke = Wait::Message {
        channel: MESSAGE_CHANNEL.to_owned(),
    };
    let waits = match family.message {
        None => vec![
            group,
            Wait::Timer {
                wake_at: family.deadline,
            },
        ],
        Some(MessageWait { alone: false, .. }) => vec![group, poke],
        Some(MessageWait { alone: true, .. }) => vec![poke],
    };
    events
        .append(
            parent,
            NewEvent::kernel(KernelKind::ExecutionSuspended, at)
                .with_payload(park_payload(&waits))
                .with_fence(token),
        )
        .await
        .map_err(CliError::store(SETTING_UP))?;
    if family.message.is_none() {
        timers
            .schedule(&TimerRow::wake(parent.clone(), family.deadline))
            .await
            .map_err(CliError::store("setting up: timer store"))?;
    }
    Ok(())
}

/// Whole milliseconds of `duration`, saturating.
fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(seed: u64) -> Shape {
        Shape {
            parents: 50,
            children: 3,
            start: 1_000_000,
            spread: Duration::from_secs(10),
            beat: Duration::from_millis(200),
            seed,
            message_every: 0,
        }
    }

    #[test]
    fn one_parent_in_n_waits_on_a_message_alone_or_beside_its_children() {
        let plan = Plan::draw(Shape {
            message_every: 4,
            ..shape(3)
        })
        .unwrap();
        let waiting: Vec<MessageWait> = plan.families.iter().filter_map(|f| f.message).collect();
        // Parents 2, 6, …, 46.
        assert_eq!(waiting.len(), 12);
        assert!(waiting.iter().any(|m| m.alone) && waiting.iter().any(|m| !m.alone));
        assert!(
            waiting
                .iter()
                .all(|m| (1_000_000..1_010_000).contains(&m.send_at))
        );
        assert_eq!(plan.sends().len(), waiting.len());
        assert!(Plan::draw(shape(3)).unwrap().sends().is_empty());
    }

    #[test]
    fn the_same_seed_draws_the_same_plan() {
        let (a, b) = (Plan::draw(shape(7)).unwrap(), Plan::draw(shape(7)).unwrap());
        assert_eq!(a.endings(), b.endings());
        let deadlines = |p: &Plan| p.families.iter().map(|f| f.deadline).collect::<Vec<_>>();
        assert_eq!(deadlines(&a), deadlines(&b));
        assert_ne!(a.endings(), Plan::draw(shape(8)).unwrap().endings());
    }

    #[test]
    fn children_end_within_the_spread_and_most_deadlines_just_after_the_last() {
        let plan = Plan::draw(shape(11)).unwrap();
        assert_eq!(plan.endings().len(), 150);
        let (start, end) = (1_000_000, 1_010_000);
        assert!(
            plan.endings()
                .iter()
                .all(|(at, _)| (start..end).contains(at))
        );
        let tight = plan
            .families
            .iter()
            .filter(|f| {
                let last = f.children.iter().map(|(_, at)| *at).max().unwrap();
                (last..last + 400).contains(&f.deadline)
            })
            .count();
        assert!(
            tight >= 40,
            "{tight} of 50 deadlines just after the last child"
        );
    }
}
