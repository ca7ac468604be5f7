//! One schedule, run move by move and checked after every move.
//!
//! A violation is recorded once, at the move that made it true, with the
//! moves so far: that prefix is the shortest replay of the finding along
//! this schedule.

use crate::check::{Breach, Move, Violation, breaches};
use crate::error::SimError;
use crate::world::World;

/// A world being driven by a schedule.
#[derive(Clone, Debug)]
pub struct Trace {
    /// The world as it stands.
    world: World,
    /// The moves made.
    moves: Vec<Move>,
    /// The breaches after the last move, to tell new ones from old.
    seen: Vec<Breach>,
    /// Every breach that appeared, with the moves that produced it.
    violations: Vec<Violation>,
}

impl Trace {
    /// Starts at `world`, checking it before any move.
    pub fn new(world: World) -> Result<Self, SimError> {
        let seen = breaches(&world)?;
        let violations = seen
            .iter()
            .map(|breach| Violation::new(&world, Vec::new(), breach.clone()))
            .collect();
        Ok(Self {
            world,
            moves: Vec::new(),
            seen,
            violations,
        })
    }

    /// Runs `moves` from `world`: how a reported violation is replayed.
    pub fn replay(world: World, moves: &[Move]) -> Result<Self, SimError> {
        let mut trace = Self::new(world)?;
        for step in moves {
            trace.apply(*step)?;
        }
        Ok(trace)
    }

    /// Makes one move and checks the result. Returns whether anything
    /// changed (stepping a finished actor, or crashing one, does not).
    pub fn apply(&mut self, step: Move) -> Result<bool, SimError> {
        let changed = match step {
            Move::Step(index) => self.world.step(index)?,
            Move::Crash(index) => self.world.crash(index)?,
        };
        self.moves.push(step);
        let now = breaches(&self.world)?;
        for breach in &now {
            if !self.seen.contains(breach) {
                let violation = Violation::new(&self.world, self.moves.clone(), breach.clone());
                self.violations.push(violation);
            }
        }
        self.seen = now;
        Ok(changed)
    }

    /// Steps the actor at `index`.
    pub fn step(&mut self, index: usize) -> Result<bool, SimError> {
        self.apply(Move::Step(index))
    }

    /// Steps the actor labelled `label` (scenarios read better in letters).
    pub fn step_label(&mut self, label: char) -> Result<bool, SimError> {
        let index = self
            .world
            .index_of(label)
            .ok_or(SimError::NoSuchLabel(label))?;
        self.step(index)
    }

    /// Steps actors by label, one letter per step.
    pub fn run_letters(&mut self, letters: &str) -> Result<(), SimError> {
        for label in letters.chars() {
            self.step_label(label)?;
        }
        Ok(())
    }

    /// The world as it stands.
    #[must_use]
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The moves made so far.
    #[must_use]
    pub fn moves(&self) -> &[Move] {
        &self.moves
    }

    /// Every violation found so far, in the order they appeared.
    #[must_use]
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// Ends the trace, keeping the world and the violations.
    #[must_use]
    pub fn finish(self) -> (World, Vec<Violation>) {
        (self.world, self.violations)
    }
}
