//! Every interleaving of a small world, crashes included: a depth-first
//! search over distinct worlds (two schedules that reach equal worlds have
//! the same futures), keeping a 128-bit fingerprint per visited world and
//! one path. Every quiescent world is checked, so every schedule is: each
//! one ends in one of them. The number of schedules is counted exactly
//! over the graph of worlds (the sum, over each world's moves, of the
//! schedules from where it leads).

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};

use super::check::{Breach, breaches};
use super::error::InboxSimError;
use super::pump::CrashPoint;
use super::world::{Move, World};

/// How many violating schedules a search keeps (it counts them all).
const KEPT: usize = 8;

/// A quiescent world that broke an invariant, and one schedule to it.
#[derive(Clone, Debug)]
pub struct Violation {
    /// The schedule, in letters ([`World::render`]).
    pub schedule: String,
    /// What broke.
    pub breaches: Vec<Breach>,
}

/// What a search saw.
#[derive(Clone, Debug, Default)]
pub struct Exploration {
    /// Distinct worlds reached, the initial one included.
    pub states: usize,
    /// Moves taken from expanded worlds.
    pub transitions: usize,
    /// Distinct quiescent worlds (each checked).
    pub terminal_states: usize,
    /// Complete schedules (paths from the initial world to a quiescent
    /// one), saturating.
    pub schedules: u128,
    /// The longest schedule, in moves.
    pub longest: usize,
    /// Crash moves taken, per crash point.
    pub crashes: BTreeMap<CrashPoint, usize>,
    /// Quiescent worlds that broke an invariant.
    pub violating_states: usize,
    /// Violations per breach name, over quiescent worlds.
    pub breaches: BTreeMap<&'static str, usize>,
    /// The first violations found, with a schedule each.
    pub violations: Vec<Violation>,
}

/// A world on the path.
struct Frame {
    /// The world.
    world: World,
    /// Its fingerprint.
    fingerprint: u128,
    /// The move that reached it from the frame below.
    via: Option<Move>,
    /// Its moves.
    moves: Vec<Move>,
    /// How many have been tried.
    tried: usize,
    /// Schedules from it so far.
    schedules: u128,
    /// The longest schedule from it so far.
    longest: usize,
}

impl Frame {
    fn new(world: World, via: Option<Move>) -> Result<Self, InboxSimError> {
        Ok(Self {
            fingerprint: fingerprint(&world),
            moves: world.moves()?,
            world,
            via,
            tried: 0,
            schedules: 0,
            longest: 0,
        })
    }
}

/// Explores every world reachable from `initial`.
pub fn explore(initial: &World) -> Result<Exploration, InboxSimError> {
    let mut out = Exploration::default();
    // Schedules and the longest schedule from each finished world.
    let mut done: HashMap<u128, (u128, usize)> = HashMap::new();
    let mut on_path: HashSet<u128> = HashSet::new();
    let root = Frame::new(initial.clone(), None)?;
    on_path.insert(root.fingerprint);
    let mut stack = vec![root];
    while let Some(top) = stack.last_mut() {
        let Some(&step) = top.moves.get(top.tried) else {
            let mut finished = stack.pop().ok_or(InboxSimError::Cycle { depth: 0 })?;
            if finished.moves.is_empty() {
                finished.schedules = 1;
                out.terminal_states += 1;
                let found = breaches(&finished.world)?;
                if !found.is_empty() {
                    out.violating_states += 1;
                    for breach in &found {
                        *out.breaches.entry(breach.name()).or_default() += 1;
                    }
                    if out.violations.len() < KEPT {
                        let mut moves: Vec<Move> = stack.iter().filter_map(|f| f.via).collect();
                        moves.extend(finished.via);
                        out.violations.push(Violation {
                            schedule: initial.render(&moves),
                            breaches: found,
                        });
                    }
                }
            }
            on_path.remove(&finished.fingerprint);
            done.insert(finished.fingerprint, (finished.schedules, finished.longest));
            if let Some(parent) = stack.last_mut() {
                parent.schedules = parent.schedules.saturating_add(finished.schedules);
                parent.longest = parent.longest.max(finished.longest + 1);
            }
            continue;
        };
        top.tried += 1;
        out.transitions += 1;
        if let Move::Crash(index) = step
            && let Some(point) = top.world.crash_point(index)
        {
            *out.crashes.entry(point).or_default() += 1;
        }
        let mut next = top.world.clone();
        next.apply(step)?;
        let print = fingerprint(&next);
        if let Some(&(schedules, longest)) = done.get(&print) {
            top.schedules = top.schedules.saturating_add(schedules);
            top.longest = top.longest.max(longest + 1);
            continue;
        }
        if !on_path.insert(print) {
            return Err(InboxSimError::Cycle { depth: stack.len() });
        }
        stack.push(Frame::new(next, Some(step))?);
    }
    out.states = done.len();
    if let Some(&(schedules, longest)) = done.get(&fingerprint(initial)) {
        out.schedules = schedules;
        out.longest = longest;
    }
    Ok(out)
}

/// A 128-bit fingerprint of a world: two independently salted SipHashes.
fn fingerprint(world: &World) -> u128 {
    let mut low = DefaultHasher::new();
    world.hash(&mut low);
    let mut high = DefaultHasher::new();
    0x1b0c_u32.hash(&mut high);
    world.hash(&mut high);
    (u128::from(high.finish()) << 64) | u128::from(low.finish())
}
