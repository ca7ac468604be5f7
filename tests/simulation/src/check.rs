//! The invariants, as predicates over one world.
//!
//! They are state predicates on purpose: checking them after every step of
//! every schedule means a schedule that stops anywhere (a crash, a pause, the
//! end of the bound) is judged as it stands, which is what "a node may die
//! between any two store calls" demands.
//!
//! A deleter (retention) adds one: after a delete, no resume writes into a
//! log the workload did not write ([`Breach::PhantomLog`]). The others hold
//! across a delete as before: the park is answered at most once
//! ([`Breach::TwoWinners`], [`Breach::DoubleResume`]) and a winner's body is
//! never fenced out (the delete keeps the token, so it does not move it).

use std::fmt;

use loomfence_core::{ContractError, KernelKind};

/// The wire name compared against: a string comparison is all the check
/// needs, and it runs after every step of every schedule.
const RESUMED: &str = KernelKind::ExecutionResumed.as_str();

use crate::actor::{AuditPhase, ResumerPhase, Role};
use crate::error::SimError;
use crate::world::World;

/// One thing wrong with a world.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Breach {
    /// More than one `EXECUTION_RESUMED` after the park: the park was
    /// answered twice.
    DoubleResume {
        /// The sequences of the resumes.
        sequences: Vec<u64>,
    },
    /// After a delete, the log holds an `EXECUTION_RESUMED` but does not
    /// start with what the workload wrote: a resume recreated the deleted
    /// log (a one-event `[EXECUTION_RESUMED]` log is the classic phantom) or
    /// answered a "park" in a log written since the delete.
    PhantomLog {
        /// The kinds of the log, in order.
        kinds: Vec<String>,
    },
    /// A resumer's machine rejected the store's answer (a store breaking its
    /// contract, or a machine bug).
    Rejected {
        /// The resumer.
        actor: char,
        /// What the machine said.
        error: ContractError,
    },
    /// A landed resume's token is below the current one: the winner's body
    /// is fenced out, whether or not it has tried to append yet (its next
    /// append would be refused).
    FencedOut {
        /// The winner.
        victim: char,
        /// The token it holds.
        held: u64,
        /// The execution's token.
        current: u64,
    },
    /// A winner's body append was refused as stale: the fence-out happened.
    BodyRefused {
        /// The winner.
        victim: char,
        /// The token it presented.
        held: u64,
        /// The token that beat it.
        current: u64,
    },
    /// More than one resumer ended with a landed resume.
    TwoWinners {
        /// Their labels.
        winners: Vec<char>,
    },
    /// The resumes in the log and the resumers that landed one disagree: a
    /// resume nobody owns, or a win with no resume stored (unless the log was
    /// deleted since: a delete takes the winner's resume with it).
    Unaccounted {
        /// Resume sequences written since the world was built.
        in_log: Vec<u64>,
        /// Resume sequences the winners report.
        landed: Vec<u64>,
    },
    /// An unfenced ignorable append was refused, which the guard must never
    /// do (audit appends after a park are how resumes get stranded).
    AuditRefused {
        /// The auditor.
        auditor: char,
    },
}

impl Breach {
    /// Whether this is a fence-out (observed in the state, or at the append).
    #[must_use]
    pub fn is_fence_out(&self) -> bool {
        matches!(self, Breach::FencedOut { .. } | Breach::BodyRefused { .. })
    }
}

/// One schedule entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Move {
    /// Step the actor at this index.
    Step(usize),
    /// Crash the actor at this index.
    Crash(usize),
}

/// A breach and the schedule that first produced it (its last move is the
/// step that made it true).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The moves from the initial world, replayable with
    /// [`crate::trace::Trace::replay`].
    pub moves: Vec<Move>,
    /// The same moves in actor labels (`AAB!A`: A, A, B, then A crashes).
    pub schedule: String,
    /// What went wrong.
    pub breach: Breach,
}

impl Violation {
    /// Records `breach` as produced by `moves` in `world`'s labels.
    #[must_use]
    pub fn new(world: &World, moves: Vec<Move>, breach: Breach) -> Self {
        let schedule = render(world, &moves);
        Self {
            moves,
            schedule,
            breach,
        }
    }

    /// The label of the actor whose move made the breach true, `None` when
    /// the initial world already broke it.
    #[must_use]
    pub fn culprit(&self, world: &World) -> Option<char> {
        let index = match self.moves.last()? {
            Move::Step(index) | Move::Crash(index) => *index,
        };
        world.actors().get(index).map(|actor| actor.label)
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} after schedule \"{}\"", self.breach, self.schedule)
    }
}

/// Renders moves in the world's labels; a crash is `!` before the label.
#[must_use]
pub fn render(world: &World, moves: &[Move]) -> String {
    let label = |index: usize| world.actors().get(index).map_or('?', |actor| actor.label);
    let mut out = String::with_capacity(moves.len());
    for step in moves {
        match *step {
            Move::Step(index) => out.push(label(index)),
            Move::Crash(index) => {
                out.push('!');
                out.push(label(index));
            }
        }
    }
    out
}

/// Everything wrong with `world`, in a fixed order (empty when it is sound).
pub fn breaches(world: &World) -> Result<Vec<Breach>, SimError> {
    let mut found = Vec::new();
    let current = world.current_fence();
    let after_park =
        world
            .store()
            .read_range(world.execution(), world.park_seq().saturating_add(1), None)?;
    let resumes: Vec<u64> = after_park
        .iter()
        .filter(|event| event.kind == RESUMED)
        .map(|event| event.sequence)
        .collect();
    if resumes.len() > 1 {
        found.push(Breach::DoubleResume {
            sequences: resumes.clone(),
        });
    }
    let deleted = world.deleted();
    if deleted && let Some(kinds) = phantom(world)? {
        found.push(Breach::PhantomLog { kinds });
    }

    let mut winners = Vec::new();
    let mut landed_at = Vec::new();
    for actor in world.actors() {
        if let Some(landed) = actor.landed() {
            winners.push(actor.label);
            landed_at.push(landed.sequence);
            if let Some(held) = landed.fence.filter(|held| *held < current) {
                found.push(Breach::FencedOut {
                    victim: actor.label,
                    held,
                    current,
                });
            }
        }
        match &actor.role {
            Role::Resumer(resumer) => match &resumer.phase {
                ResumerPhase::FencedOut { landed, stale } => {
                    found.push(Breach::BodyRefused {
                        victim: actor.label,
                        held: landed.fence.unwrap_or(0),
                        current: stale.current,
                    });
                }
                ResumerPhase::Rejected(error) => found.push(Breach::Rejected {
                    actor: actor.label,
                    error: error.clone(),
                }),
                _ => {}
            },
            Role::Auditor(auditor) => {
                if let AuditPhase::Refused(_) = auditor.phase {
                    found.push(Breach::AuditRefused {
                        auditor: actor.label,
                    });
                }
            }
            Role::DeadAcquirer(_) | Role::Deleter(_) => {}
        }
    }
    if winners.len() > 1 {
        found.push(Breach::TwoWinners { winners });
    }
    let mut in_log: Vec<u64> = resumes
        .into_iter()
        .filter(|sequence| *sequence > world.start_head())
        .collect();
    in_log.sort_unstable();
    landed_at.sort_unstable();
    let accounted = if deleted {
        in_log.iter().all(|sequence| landed_at.contains(sequence))
    } else {
        in_log == landed_at
    };
    if !accounted {
        found.push(Breach::Unaccounted {
            in_log,
            landed: landed_at,
        });
    }
    Ok(found)
}

/// The kinds of the log if it is a phantom: it holds a resume but does not
/// start with the workload's events.
///
/// Writes that are not a resume's may recreate a deleted log without being
/// the kernel's doing: an unfenced audit append, or a winner's body still
/// running under its token (the delete keeps the token, by design). Those
/// logs are not phantoms by themselves; a resume landing in one is.
fn phantom(world: &World) -> Result<Option<Vec<String>>, SimError> {
    let log = world.log()?;
    let recreated = log
        .iter()
        .zip(world.workload())
        .any(|(stored, written)| stored != written);
    if recreated && log.iter().any(|event| event.kind == RESUMED) {
        Ok(Some(log.into_iter().map(|event| event.kind).collect()))
    } else {
        Ok(None)
    }
}
