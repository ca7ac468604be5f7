//! Breadth-first search over distinct worlds.
//!
//! Two schedules that reach equal worlds have the same futures, so a visited
//! set turns the exponential number of schedules into the (much smaller)
//! number of reachable states, and makes "every interleaving" finishable for
//! more actors than the letter sweep can reach. Crashes need no transitions
//! of their own: every reachable world is checked, and a world where an
//! actor is never stepped again IS that actor having crashed there.
//!
//! Every transition is checked, including those into an already visited
//! world, so a breach is found on every path that produces it.
//!
//! Two searches share that contract:
//!
//! - [`explore`]: breadth-first, keeping every world, optionally up to a
//!   depth. Bounded at `d`, it covers every schedule of at most `d` steps,
//!   and a violation's schedule is a shortest one. Its memory grows with
//!   the number of worlds, so it is for bounded runs.
//! - [`explore_full`]: depth-first, keeping only a 128-bit fingerprint per
//!   visited world, always to the end of every path. Memory is the
//!   fingerprints plus one path, so three resumers with a dead acquirer and
//!   an auditor fit; it also measures the longest schedule exactly.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::rc::Rc;

use crate::check::{Breach, Move, Violation, breaches};
use crate::error::SimError;
use crate::world::World;

/// What a search saw.
#[derive(Clone, Debug)]
pub struct Exploration {
    /// Distinct worlds reached, the initial one included.
    pub states: usize,
    /// Steps taken from expanded worlds (edges of the state graph).
    pub transitions: usize,
    /// Distinct worlds where no actor can act: every schedule's end.
    pub terminal_states: usize,
    /// Terminal worlds in which every resumer gave up and the park is still
    /// open: rivals kept each other contended. Not a safety breach (the
    /// design makes contention retryable), but worth knowing how often the race
    /// can end with nobody resumed.
    pub terminal_unresumed: usize,
    /// The most steps of any explored schedule: the deepest breadth-first
    /// level for [`explore`], the longest path of the state graph for
    /// [`explore_full`].
    pub max_depth: usize,
    /// Transitions in which a deleter deleted the log while a resumer held a
    /// token it had not appended under yet (see
    /// [`World::deletes_under_token`]).
    pub deletes_under_token: usize,
    /// Whether every reachable world was expanded (no depth bound cut in).
    pub complete: bool,
    /// Every violating transition, breadth-first order.
    pub violations: Vec<Violation>,
}

/// How a world was first reached.
struct Node {
    /// The parent node and the actor stepped from it; `None` for the root.
    parent: Option<(usize, usize)>,
    /// Steps from the root.
    depth: usize,
    /// The world's breaches, to tell new ones on a transition from it.
    breaches: Vec<Breach>,
}

/// Explores every world reachable from `initial`, expanding worlds up to
/// `depth_limit` steps from it (`None`: until no actor can act anywhere).
pub fn explore(initial: &World, depth_limit: Option<usize>) -> Result<Exploration, SimError> {
    let root = Rc::new(initial.clone());
    let root_breaches = breaches(&root)?;
    let mut violations: Vec<Violation> = root_breaches
        .iter()
        .map(|breach| Violation::new(initial, Vec::new(), breach.clone()))
        .collect();
    let mut index: HashMap<Rc<World>, usize> = HashMap::new();
    let mut nodes = vec![Node {
        parent: None,
        depth: 0,
        breaches: root_breaches,
    }];
    index.insert(Rc::clone(&root), 0);
    let mut queue = VecDeque::from([(root, 0usize)]);
    let mut transitions = 0;
    let mut terminal_states = 0;
    let mut terminal_unresumed = 0;
    let mut max_depth = 0;
    let mut complete = true;
    let mut deletes_under_token = 0;

    while let Some((world, at)) = queue.pop_front() {
        let depth = nodes[at].depth;
        let enabled: Vec<usize> = world.enabled().collect();
        if enabled.is_empty() {
            terminal_states += 1;
            terminal_unresumed += usize::from(world.every_resumer_gave_up());
            continue;
        }
        if depth_limit.is_some_and(|limit| depth >= limit) {
            complete = false;
            continue;
        }
        for actor in enabled {
            deletes_under_token += usize::from(world.deletes_under_token(actor));
            let mut next = World::clone(&world);
            next.step(actor)?;
            transitions += 1;
            let found = breaches(&next)?;
            for breach in &found {
                if !nodes[at].breaches.contains(breach) {
                    let mut moves = path(&nodes, at);
                    moves.push(Move::Step(actor));
                    violations.push(Violation::new(initial, moves, breach.clone()));
                }
            }
            if index.contains_key(&next) {
                continue;
            }
            let next = Rc::new(next);
            let id = nodes.len();
            nodes.push(Node {
                parent: Some((at, actor)),
                depth: depth + 1,
                breaches: found,
            });
            max_depth = max_depth.max(depth + 1);
            index.insert(Rc::clone(&next), id);
            queue.push_back((next, id));
        }
    }
    Ok(Exploration {
        states: nodes.len(),
        transitions,
        terminal_states,
        terminal_unresumed,
        max_depth,
        deletes_under_token,
        complete,
        violations,
    })
}

/// The moves from the root to node `at`.
fn path(nodes: &[Node], mut at: usize) -> Vec<Move> {
    let mut moves = Vec::with_capacity(nodes[at].depth);
    while let Some((parent, actor)) = nodes[at].parent {
        moves.push(Move::Step(actor));
        at = parent;
    }
    moves.reverse();
    moves
}

/// A world on the depth-first path.
struct Frame {
    /// The world.
    world: World,
    /// Its fingerprint.
    fingerprint: u128,
    /// The actor stepped to reach it from the frame below (unused at the
    /// root).
    via: usize,
    /// Actors enabled in it.
    enabled: Vec<usize>,
    /// How many of them have been tried.
    tried: usize,
    /// The longest path found from it so far.
    longest: usize,
    /// Its breaches.
    breaches: Vec<Breach>,
}

impl Frame {
    /// A frame for `world`, reached by stepping `via`.
    fn new(world: World, via: usize, breaches: Vec<Breach>) -> Self {
        let enabled = world.enabled().collect();
        Self {
            fingerprint: fingerprint(&world),
            world,
            via,
            enabled,
            tried: 0,
            longest: 0,
            breaches,
        }
    }
}

/// Explores every world reachable from `initial` to the end of every path,
/// depth-first, deduplicating by fingerprint.
///
/// The state graph is acyclic (every step moves an actor forward or grows
/// the log or the token), which is what lets a world's longest path be
/// computed once, when its last successor is done. A world met again while
/// still on the path would be a cycle; it is reported as
/// [`SimError::Runaway`] rather than looped on.
pub fn explore_full(initial: &World) -> Result<Exploration, SimError> {
    let root_breaches = breaches(initial)?;
    let mut violations: Vec<Violation> = root_breaches
        .iter()
        .map(|breach| Violation::new(initial, Vec::new(), breach.clone()))
        .collect();
    // Longest path from each finished world.
    let mut done: HashMap<u128, usize> = HashMap::new();
    let mut on_path: HashMap<u128, ()> = HashMap::new();
    let mut stack = vec![Frame::new(initial.clone(), 0, root_breaches)];
    if let Some(root) = stack.last() {
        on_path.insert(root.fingerprint, ());
    }
    let mut transitions = 0;
    let mut terminal_states = 0;
    let mut terminal_unresumed = 0;
    let mut deletes_under_token = 0;

    while let Some(top) = stack.last_mut() {
        let Some(&actor) = top.enabled.get(top.tried) else {
            // Every successor is done: so is this world.
            let finished = stack.pop().ok_or(SimError::Runaway { steps: 0 })?;
            if finished.enabled.is_empty() {
                terminal_states += 1;
                terminal_unresumed += usize::from(finished.world.every_resumer_gave_up());
            }
            on_path.remove(&finished.fingerprint);
            done.insert(finished.fingerprint, finished.longest);
            if let Some(parent) = stack.last_mut() {
                parent.longest = parent.longest.max(finished.longest + 1);
            }
            continue;
        };
        top.tried += 1;
        deletes_under_token += usize::from(top.world.deletes_under_token(actor));
        let mut next = top.world.clone();
        next.step(actor)?;
        transitions += 1;
        let found = breaches(&next)?;
        let new: Vec<Breach> = found
            .iter()
            .filter(|breach| !top.breaches.contains(breach))
            .cloned()
            .collect();
        if !new.is_empty() {
            let mut moves: Vec<Move> = stack.iter().skip(1).map(|f| Move::Step(f.via)).collect();
            moves.push(Move::Step(actor));
            for breach in new {
                violations.push(Violation::new(initial, moves.clone(), breach));
            }
        }
        let child = fingerprint(&next);
        if let Some(&longest) = done.get(&child) {
            if let Some(top) = stack.last_mut() {
                top.longest = top.longest.max(longest + 1);
            }
            continue;
        }
        if on_path.insert(child, ()).is_some() {
            return Err(SimError::Runaway { steps: stack.len() });
        }
        stack.push(Frame::new(next, actor, found));
    }
    Ok(Exploration {
        states: done.len(),
        transitions,
        terminal_states,
        terminal_unresumed,
        max_depth: done.get(&fingerprint(initial)).copied().unwrap_or(0),
        deletes_under_token,
        complete: true,
        violations,
    })
}

/// A 128-bit fingerprint of a world: two independently salted SipHashes.
/// Two distinct worlds share one with probability about `n^2 / 2^129` for
/// `n` worlds, under 10^-25 for the millions explored here.
fn fingerprint(world: &World) -> u128 {
    let mut low = DefaultHasher::new();
    world.hash(&mut low);
    let mut high = DefaultHasher::new();
    0x5eed_u32.hash(&mut high);
    world.hash(&mut high);
    (u128::from(high.finish()) << 64) | u128::from(low.finish())
}
