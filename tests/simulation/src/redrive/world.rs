//! The simulated world: an event store and a timer table (both the core's
//! pure values), a virtual clock, and every participant.
//!
//! A world is a plain value (`Clone + Eq + Hash`): the same seed builds and
//! runs the same world, which the replay test checks by comparing the
//! final worlds of two runs.

use loomfence_core::{
    Capability, ExecutionId, KernelKind, MemoryStore, NewEvent,
    park::{Wait, park_payload},
    redrive::RedrivePolicy,
    timer::{DueFilter, TimerRow, TimerTable},
};
use rand::RngExt;

use super::Rng64;
use super::actors::{Body, Child, DeadAcquirer, DeadMode, Env, Parent};
use super::config::{Config, Shape, Variant};
use super::error::RedriveSimError;
use super::ledger::{Ledger, RowSource, Tag};
use super::service::Service;
use super::supervisor::Supervisor;

/// A participant a step can move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Actor {
    /// Child number `n`.
    Child(usize),
    /// Dead acquirer number `n`.
    Dead(usize),
    /// Body number `n`.
    Body(usize),
    /// Supervisor node `n`.
    Supervisor(usize),
    /// Timer service node `n`.
    Service(usize),
}

/// A node that can crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    /// Supervisor node `n`.
    Supervisor(usize),
    /// Timer service node `n`.
    Service(usize),
}

/// Everything in one simulated fleet.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct World {
    /// The parameters it drew.
    pub config: Config,
    /// Every log and token.
    pub store: MemoryStore,
    /// Every timer row.
    pub timers: TimerTable,
    /// The virtual clock, ms.
    pub now: i64,
    /// The parents.
    pub parents: Vec<Parent>,
    /// Every parent's children.
    pub children: Vec<Child>,
    /// The dead acquirers.
    pub dead: Vec<DeadAcquirer>,
    /// Bodies started by landed resumes.
    pub bodies: Vec<Body>,
    /// Supervisor nodes.
    pub supervisors: Vec<Supervisor>,
    /// Timer service nodes.
    pub services: Vec<Service>,
    /// The harness's record.
    pub ledger: Ledger,
    /// Crashes still to come.
    pub crashes_left: u32,
}

/// Draws from a range (kept here so the generator reads as a list).
fn draw<T: rand::distr::uniform::SampleUniform + PartialOrd + Copy>(
    rng: &mut Rng64,
    range: &std::ops::RangeInclusive<T>,
) -> T {
    rng.random_range(*range.start()..=*range.end())
}

impl World {
    /// Draws a world of `shape` running `variant` from `rng`.
    pub fn generate(
        shape: &Shape,
        variant: Variant,
        rng: &mut Rng64,
    ) -> Result<Self, RedriveSimError> {
        let policy = RedrivePolicy {
            max_attempts: draw(rng, &shape.max_attempts),
            ..RedrivePolicy::default()
        };
        let config = Config {
            variant,
            conditional_tries: draw(rng, &shape.conditional_tries),
            policy,
            lease_ms: draw(rng, &shape.lease_ms),
            poll_ms: rng.random_range(50..=250),
            batch: rng.random_range(1..=4),
            backoff_bound: rng.random_range(1..=4),
            dead_weight: draw(rng, &shape.dead_weight),
            crash_per_mille: shape.crash_per_mille,
            tick_max_ms: 100,
            downtime_max_ms: 3_000,
        };
        let mut store = MemoryStore::new();
        let mut timers = TimerTable::new();
        let parent_count = draw(rng, &shape.parents);
        let mut ledger = Ledger::new(parent_count);
        let mut parents = Vec::with_capacity(parent_count);
        let mut children = Vec::new();
        let mut dead = Vec::new();
        for p in 0..parent_count {
            let id = ExecutionId::new(format!("p{p}"))?;
            let count = draw(rng, &shape.children);
            let kids = (0..count)
                .map(|c| ExecutionId::new(format!("p{p}.c{c}")))
                .collect::<Result<Vec<_>, _>>()?;
            let mut waits = if count > 1 && rng.random_bool(0.5) {
                vec![Wait::Group(kids.clone())]
            } else {
                kids.iter().cloned().map(Wait::Child).collect()
            };
            let timer = rng
                .random_ratio(shape.timer_wait_percent, 100)
                .then(|| rng.random_range(500..=6_000_i64));
            if let Some(wake_at) = timer {
                waits.push(Wait::Timer { wake_at });
            }
            store.append_many(
                &id,
                vec![
                    NewEvent::kernel(KernelKind::ExecutionStarted, 0),
                    NewEvent::kernel(KernelKind::ExecutionSuspended, 0)
                        .with_payload(park_payload(&waits)),
                ],
            )?;
            if let Some(wake_at) = timer {
                let row = TimerRow::wake(id.clone(), wake_at);
                timers.schedule(&row)?;
                ledger.scheduled(&row, p, RowSource::Setup, policy.max_attempts);
            }
            for kid in &kids {
                store.append(kid, NewEvent::kernel(KernelKind::ExecutionStarted, 0))?;
                children.push(Child {
                    parent: p,
                    id: kid.clone(),
                    finish_at: rng.random_range(0..=3_000),
                    done: false,
                });
            }
            for _ in 0..draw(rng, &shape.dead_acquirers) {
                let mode = if rng.random_ratio(shape.lurking_percent, 100) {
                    DeadMode::Lurking {
                        deadline: draw(rng, &shape.lurk_deadline_ms),
                    }
                } else {
                    DeadMode::Eager {
                        at: rng.random_range(0..=6_000),
                    }
                };
                dead.push(DeadAcquirer {
                    parent: p,
                    via: Capability::Conditional,
                    mode,
                    took: None,
                });
            }
            parents.push(Parent {
                id,
                children: kids,
                waits,
            });
        }
        let supervisors = (0..draw(rng, &shape.supervisors))
            .map(Supervisor::new)
            .collect();
        let services = (0..draw(rng, &shape.services))
            .map(|index| Service::new(index, &config, 0))
            .collect::<Result<Vec<_>, _>>()?;
        let crashes_left = draw(rng, &shape.crashes);
        Ok(Self {
            config,
            store,
            timers,
            now: 0,
            parents,
            children,
            dead,
            bodies: Vec::new(),
            supervisors,
            services,
            ledger,
            crashes_left,
        })
    }

    /// Per parent, whether a live resume holds the current token and has not
    /// appended under it yet: the window a lurking dead acquirer waits for.
    #[must_use]
    pub fn windows(&self) -> Vec<bool> {
        let mut open = vec![false; self.parents.len()];
        let holders = self
            .supervisors
            .iter()
            .filter(|node| node.up)
            .filter_map(Supervisor::holding)
            .chain(
                self.services
                    .iter()
                    .filter(|node| node.up)
                    .filter_map(Service::holding),
            );
        for (parent, token) in holders {
            // Only while the holder's token is still the current one: one
            // bump spoils its attempt, and a second would be wasted.
            if token == self.store.current_fence(&self.parents[parent].id) {
                open[parent] = true;
            }
        }
        open
    }

    /// Whether some row is due now (claimed or not).
    pub fn has_due_rows(&self) -> Result<bool, RedriveSimError> {
        Ok(!self
            .timers
            .due(self.now, 1, DueFilter::default())?
            .is_empty())
    }

    /// The actors that can act now, with their scheduling weights.
    pub fn enabled(&self) -> Result<Vec<(u32, Actor)>, RedriveSimError> {
        let mut moves = Vec::new();
        for (index, child) in self.children.iter().enumerate() {
            if child.is_enabled(self.now) {
                moves.push((1, Actor::Child(index)));
            }
        }
        if self.dead.iter().any(|dead| dead.took.is_none()) {
            let windows = self.windows();
            for (index, dead) in self.dead.iter().enumerate() {
                if dead.is_enabled(self.now, windows[dead.parent]) {
                    moves.push((self.config.dead_weight, Actor::Dead(index)));
                }
            }
        }
        for (index, body) in self.bodies.iter().enumerate() {
            if body.is_running() {
                moves.push((1, Actor::Body(index)));
            }
        }
        for (index, node) in self.supervisors.iter().enumerate() {
            if node.is_enabled() {
                moves.push((2, Actor::Supervisor(index)));
            }
        }
        let due = self.has_due_rows()?;
        for (index, node) in self.services.iter().enumerate() {
            if node.up && (node.is_busy() || (due && self.now >= node.next_poll_at)) {
                moves.push((2, Actor::Service(index)));
            }
        }
        Ok(moves)
    }

    /// The nodes that are up (crash candidates).
    #[must_use]
    pub fn up_nodes(&self) -> Vec<Node> {
        let supervisors = self
            .supervisors
            .iter()
            .filter(|node| node.up)
            .map(|node| Node::Supervisor(node.index));
        let services = self
            .services
            .iter()
            .filter(|node| node.up)
            .map(|node| Node::Service(node.index));
        supervisors.chain(services).collect()
    }

    /// The next time something can happen when nothing can now: a child's
    /// end, a dead acquirer's time, a restart, a service's poll with a row
    /// in the table. `None`: the world is quiescent.
    #[must_use]
    pub fn next_time(&self) -> Option<i64> {
        let children = self
            .children
            .iter()
            .filter(|child| !child.done)
            .map(|child| child.finish_at);
        let dead = self
            .dead
            .iter()
            .filter(|dead| dead.took.is_none())
            .map(|dead| match dead.mode {
                DeadMode::Eager { at } => at,
                DeadMode::Lurking { deadline } => deadline,
            });
        let restarts = self
            .supervisors
            .iter()
            .filter_map(|node| node.restart_at)
            .chain(self.services.iter().filter_map(|node| node.restart_at));
        let earliest_row = self.timers.rows().first().map(|row| row.wake_at);
        let polls = self
            .services
            .iter()
            .filter(|node| node.up)
            .filter_map(|node| earliest_row.map(|wake_at| node.next_poll_at.max(wake_at)));
        children
            .chain(dead)
            .chain(restarts)
            .chain(polls)
            .min()
            .map(|next| next.max(self.now + 1))
    }

    /// Restarts every node whose time has come.
    pub fn restarts(&mut self) -> Result<(), RedriveSimError> {
        let parents = self.parents.len();
        for node in &mut self.supervisors {
            if node.restart_at.is_some_and(|at| at <= self.now) {
                node.restart(parents);
            }
        }
        for node in &mut self.services {
            if node.restart_at.is_some_and(|at| at <= self.now) {
                node.restart(&self.config, self.now)?;
            }
        }
        Ok(())
    }

    /// Splits the world into what a step is given.
    fn env<'a>(
        &'a mut self,
        rng: &'a mut Rng64,
        trace: Option<&'a mut Vec<String>>,
    ) -> (Env<'a>, Parts<'a>) {
        let World {
            config,
            store,
            timers,
            now,
            parents,
            children,
            dead,
            bodies,
            supervisors,
            services,
            ledger,
            ..
        } = self;
        let env = Env {
            store,
            timers,
            ledger,
            bodies,
            parents,
            config,
            now: *now,
            rng,
            trace,
        };
        let parts = Parts {
            children,
            dead,
            supervisors,
            services,
        };
        (env, parts)
    }

    /// Moves `actor` one step.
    pub fn step(
        &mut self,
        actor: Actor,
        rng: &mut Rng64,
        trace: Option<&mut Vec<String>>,
    ) -> Result<(), RedriveSimError> {
        let (mut env, parts) = self.env(rng, trace);
        match actor {
            Actor::Child(index) => {
                let child = &mut parts.children[index];
                child.step(env.store, env.now)?;
                let target = env.rng.random_range(0..parts.supervisors.len());
                let parent = child.parent;
                let up = parts.supervisors[target].up;
                parts.supervisors[target].notify(parent);
                let id = child.id.clone();
                env.note(|| format!("  {id} completes; supervisor {target} notified (up: {up})"));
            }
            Actor::Dead(index) => {
                let dead = &mut parts.dead[index];
                let parent = dead.parent;
                let took = dead.step(env.store, &env.parents[parent].id)?;
                if took.is_some() {
                    env.ledger.bump(parent, Tag::Dead(index));
                }
                env.note(|| format!("  dead acquirer {index} on p{parent}: took {took:?}"));
            }
            Actor::Body(index) => {
                let body = &mut env.bodies[index];
                let parent = body.parent;
                body.step(env.store, &env.parents[parent].id, env.now)?;
                let phase = body.phase;
                env.note(|| format!("  body {index} of p{parent}: {phase:?}"));
            }
            Actor::Supervisor(index) => parts.supervisors[index].step(&mut env)?,
            Actor::Service(index) => parts.services[index].step(&mut env)?,
        }
        Ok(())
    }

    /// Crashes `node`; it restarts `downtime` ms from now.
    pub fn crash(&mut self, node: Node, downtime: i64, rng: &mut Rng64) {
        let restart_at = self.now + downtime;
        self.crashes_left = self.crashes_left.saturating_sub(1);
        let (mut env, parts) = self.env(rng, None);
        env.ledger.counts.crashes += 1;
        match node {
            Node::Supervisor(index) => parts.supervisors[index].crash(&mut env, restart_at),
            Node::Service(index) => parts.services[index].crash(&mut env, restart_at),
        }
    }

    /// Whether every child of `parent` has ended.
    #[must_use]
    pub fn children_done(&self, parent: usize) -> bool {
        self.children
            .iter()
            .filter(|child| child.parent == parent)
            .all(|child| child.done)
    }
}

/// The participants, split from the rest of the world for a step.
struct Parts<'a> {
    /// Children.
    children: &'a mut Vec<Child>,
    /// Dead acquirers.
    dead: &'a mut Vec<DeadAcquirer>,
    /// Supervisor nodes.
    supervisors: &'a mut Vec<Supervisor>,
    /// Timer service nodes.
    services: &'a mut Vec<Service>,
}
