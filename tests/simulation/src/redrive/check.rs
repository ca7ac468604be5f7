//! The invariants: state predicates checked after every step, findings the
//! ledger recorded as they happened, and liveness at quiescence.
//!
//! # After every step
//!
//! 1. **At most one resume per park** ([`Breach::DoubleResume`]): a
//!    parent's log holds at most one `EXECUTION_RESUMED`; and the resumes
//!    in the log are exactly those some run saw land
//!    ([`Breach::Unaccounted`]).
//! 2. **No live body fenced out**: while a body runs, its parent's token is
//!    the one its resume landed under (0 for an unfenced resume), or its
//!    next append would be refused ([`Breach::FencedOut`]); and no body
//!    append is ever refused ([`Breach::BodyRefused`]). Every body appends a
//!    step and its completion under that token after its resume.
//! 3. (see liveness below)
//! 4. **Exhaustion is reported once**: no row instance is reported twice
//!    ([`Breach::ReportedTwice`]), and a re-drive chain reports at most
//!    once per branch: `reports <= 1 + forks`, where a fork is a fired row
//!    that got a second next row (a crash between a `Schedule` and its
//!    `Complete`, or a row fired twice after its lease ended: the
//!    documented at-least-once). [`Breach::ChainReportedTwice`].
//!    "Exactly one exhaustion per chain" holds only for a chain that never
//!    forked: a fire that outlives its lease has its next row written
//!    before its complete answers `NotHeld`, the row stands although the
//!    decision is void, and the service that took the row over writes
//!    another; each branch can then exhaust and report (the sweeps count
//!    such chains; a hostile sweep sees about fifty per 10 000 worlds).
//!    No row is written past the budget: every re-drive row's attempt is
//!    below `max_attempts` ([`Breach::RowPastBudget`]); and a chain reports
//!    exhaustion only after its whole budget, the supervisor's run then one
//!    re-driver run per row, `1 + max_attempts` runs (checked at the end, on
//!    every lineage that no key collision merged: [`Breach::ChainLength`]).
//! 5. **Leases exclude**: two services never fire one row at once while
//!    both their leases are live ([`Breach::LeaseOverlap`]). (After a lease
//!    ends, a second fire is allowed and counted as a double fire.)
//!
//! And a machine never rejects a store's answer ([`Breach::Rejected`]).
//!
//! # At quiescence: liveness (3)
//!
//! The run ends when every child has ended, every dead acquirer has acted,
//! every crashed node has restarted, no crash is left, the timer table is
//! empty and nothing else can act. Then every parent must have its one
//! resume, unless a re-drive chain of it reported exhaustion **and** that
//! exhaustion was paid for: along the chain's lineage (the supervisor run
//! that wrote row 0, then the re-driver run of each fire that wrote the
//! next row, to the fire that reported), the parent's token was bumped at
//! least `1 + 2 * conditional_tries * runs` times by others than those
//! runs (dead acquirers, crashed resumes, rival live resumes).
//!
//! Why that is the floor: a run's first try is the unfenced append, which
//! fails only if the token is above 0 (one bump, before everything else).
//! Each conditional try then makes three acquisitions; the first expects
//! the park's own token (0) and is stale for free, but each of the next two
//! fails only if someone else bumped the token after the previous stale
//! answer reported it (the acquire is then stale, or the append under the
//! acquired token is). Those windows are disjoint, within the run, and the
//! runs of a lineage are disjoint in time (each ends before the next row is
//! written). A chain that did not get those bumps had a run that landed.
//! With the chain's full budget (`max_attempts` rows after the
//! supervisor's run) that is `1 + 2 * tries * (max_attempts + 1)`.
//! [`Breach::Stranded`] is a parent left with no resume and no exhaustion;
//! [`Breach::ExhaustedUnderBudget`] one whose exhaustion was not paid for.

use loomfence_core::{ContractError, KernelKind};

use super::actors::{BodyPhase, PARK_SEQ};
use super::error::RedriveSimError;
use super::ledger::{Finding, RowId, RunEnd, RunId, Tag};
use super::world::World;

/// The wire name of a resume.
const RESUMED: &str = KernelKind::ExecutionResumed.as_str();

/// One thing wrong.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Breach {
    /// Invariant 1: the park was answered more than once.
    DoubleResume {
        /// The parent.
        parent: usize,
        /// The resumes' sequences.
        sequences: Vec<u64>,
    },
    /// Invariant 1: the resumes in the log and the landings disagree.
    Unaccounted {
        /// The parent.
        parent: usize,
        /// Resumes in the log.
        in_log: Vec<u64>,
        /// Resumes runs saw land.
        landed: Vec<u64>,
    },
    /// Invariant 2: a running body's token is below the parent's.
    FencedOut {
        /// The parent.
        parent: usize,
        /// The body's token.
        held: Option<u64>,
        /// The parent's token.
        current: u64,
    },
    /// Invariant 2: a body's append was refused.
    BodyRefused {
        /// The parent.
        parent: usize,
        /// The body's token.
        held: Option<u64>,
        /// The token that beat it.
        current: u64,
    },
    /// A machine rejected a store's answer.
    Rejected {
        /// The run.
        run: RunId,
        /// What it said.
        error: ContractError,
    },
    /// Invariant 4: one row instance reported exhaustion twice.
    ReportedTwice {
        /// The row instance.
        row: RowId,
    },
    /// Invariant 4: a chain reported more exhaustions than it has branches.
    ChainReportedTwice {
        /// The chain's first row.
        chain: RowId,
        /// Its reports.
        reports: u32,
        /// Its forks.
        forks: u32,
    },
    /// Invariant 4: the exhaustions reported and the records the timer
    /// table keeps differ: a report without its record (the exhaustion
    /// would be lost to an operator) or a record nobody reported.
    ExhaustionRecords {
        /// Keys `(parent, wake_at)` reported and not recorded.
        unrecorded: Vec<(usize, i64)>,
        /// Keys recorded and not reported.
        unreported: Vec<(usize, i64)>,
    },
    /// Invariant 4: a fired row got a second next row, so its chain runs
    /// two branches (each may report exhaustion).
    Fork {
        /// The fired row instance.
        row: RowId,
    },
    /// Invariant 4: a re-drive row past the budget.
    RowPastBudget {
        /// The row instance.
        row: RowId,
        /// Its attempt.
        attempt: u32,
    },
    /// Invariant 5: two live leases fired one row at once.
    LeaseOverlap {
        /// The row instance.
        row: RowId,
        /// The service firing it first.
        first: usize,
        /// The one that started too.
        second: usize,
    },
    /// Invariant 4: a chain reported exhaustion after another number of
    /// runs than its budget: the supervisor's, then one per row
    /// (`max_attempts` rows).
    ChainLength {
        /// The parent.
        parent: usize,
        /// Runs in the lineage.
        runs: u64,
        /// `1 + max_attempts`.
        budget: u64,
    },
    /// Liveness: a parent whose children ended has no resume and no
    /// exhaustion was reported for it.
    Stranded {
        /// The parent.
        parent: usize,
    },
    /// Liveness: a chain exhausted with fewer foreign bumps than the floor.
    ExhaustedUnderBudget {
        /// The parent.
        parent: usize,
        /// Runs in the chain's lineage.
        runs: u64,
        /// Bumps by others.
        foreign: u64,
        /// The floor.
        floor: u64,
    },
}

impl Breach {
    /// Whether it is a fence-out (invariant 2).
    #[must_use]
    pub fn is_fence_out(&self) -> bool {
        matches!(self, Breach::FencedOut { .. } | Breach::BodyRefused { .. })
    }

    /// Whether it is a liveness failure (invariant 3).
    #[must_use]
    pub fn is_liveness(&self) -> bool {
        matches!(
            self,
            Breach::Stranded { .. } | Breach::ExhaustedUnderBudget { .. }
        )
    }

    /// Whether it is one of invariants 1 to 4 (everything but the lease
    /// rule).
    #[must_use]
    pub fn is_core(&self) -> bool {
        !matches!(self, Breach::LeaseOverlap { .. })
    }

    /// A short name, for counts.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Breach::DoubleResume { .. } => "double resume",
            Breach::Unaccounted { .. } => "unaccounted resume",
            Breach::FencedOut { .. } => "fenced out",
            Breach::BodyRefused { .. } => "body refused",
            Breach::Rejected { .. } => "rejected answer",
            Breach::ReportedTwice { .. } => "row reported twice",
            Breach::ChainReportedTwice { .. } => "chain reported twice",
            Breach::Fork { .. } => "fork",
            Breach::ExhaustionRecords { .. } => "exhaustion records",
            Breach::RowPastBudget { .. } => "row past budget",
            Breach::ChainLength { .. } => "chain length",
            Breach::LeaseOverlap { .. } => "lease overlap",
            Breach::Stranded { .. } => "stranded",
            Breach::ExhaustedUnderBudget { .. } => "exhausted under budget",
        }
    }
}

/// The per-step checks, with what they cache between steps.
#[derive(Clone, Debug, Default)]
pub struct Checker {
    /// Per parent, the head at the last check.
    heads: Vec<u64>,
    /// Per parent, the resumes in its log at that head.
    resumes: Vec<Vec<u64>>,
    /// Ledger findings already turned into breaches.
    findings: usize,
}

impl Checker {
    /// A checker for `world`.
    #[must_use]
    pub fn new(world: &World) -> Self {
        Self {
            heads: vec![0; world.parents.len()],
            resumes: vec![Vec::new(); world.parents.len()],
            findings: 0,
        }
    }

    /// The resumes in `parent`'s log, re-read only when it grew.
    fn resumes(&mut self, world: &World, parent: usize) -> Result<&[u64], RedriveSimError> {
        let id = &world.parents[parent].id;
        let head = world.store.head(id);
        if head != self.heads[parent] {
            self.heads[parent] = head;
            self.resumes[parent] = world
                .store
                .read_range(id, PARK_SEQ + 1, None)?
                .iter()
                .filter(|event| event.kind == RESUMED)
                .map(|event| event.sequence)
                .collect();
        }
        Ok(&self.resumes[parent])
    }

    /// Findings recorded since the last call, as breaches (each once).
    pub fn new_findings(&mut self, world: &World) -> Vec<Breach> {
        let fresh = world.ledger.findings[self.findings..]
            .iter()
            .map(|finding| match finding.clone() {
                Finding::Rejected { run, error } => Breach::Rejected { run, error },
                Finding::LeaseOverlap { row, first, second } => {
                    Breach::LeaseOverlap { row, first, second }
                }
                Finding::ReportedTwice { row } => Breach::ReportedTwice { row },
                Finding::Fork { row } => Breach::Fork { row },
                Finding::RowPastBudget { row, attempt } => Breach::RowPastBudget { row, attempt },
            })
            .collect();
        self.findings = world.ledger.findings.len();
        fresh
    }

    /// Everything wrong with `world` as it stands.
    pub fn state(&mut self, world: &World) -> Result<Vec<Breach>, RedriveSimError> {
        let mut found = Vec::new();
        for parent in 0..world.parents.len() {
            let in_log = self.resumes(world, parent)?.to_vec();
            if in_log.len() > 1 {
                found.push(Breach::DoubleResume {
                    parent,
                    sequences: in_log.clone(),
                });
            }
            let mut landed: Vec<u64> = world.ledger.landings[parent]
                .iter()
                .map(|landing| landing.sequence)
                .collect();
            landed.sort_unstable();
            if landed != in_log {
                found.push(Breach::Unaccounted {
                    parent,
                    in_log,
                    landed,
                });
            }
        }
        for body in &world.bodies {
            let current = world.store.current_fence(&world.parents[body.parent].id);
            match body.phase {
                BodyPhase::Step | BodyPhase::Complete if current > body.fence.unwrap_or(0) => {
                    found.push(Breach::FencedOut {
                        parent: body.parent,
                        held: body.fence,
                        current,
                    });
                }
                BodyPhase::FencedOut { current } => found.push(Breach::BodyRefused {
                    parent: body.parent,
                    held: body.fence,
                    current,
                }),
                _ => {}
            }
        }
        if let Some(breach) = exhaustion_records(world) {
            found.push(breach);
        }
        for (chain, reports) in world.ledger.chain_reports() {
            let forks = world.ledger.forks.get(&chain).copied().unwrap_or(0);
            if reports > 1 + forks {
                found.push(Breach::ChainReportedTwice {
                    chain,
                    reports,
                    forks,
                });
            }
        }
        Ok(found)
    }
}

/// Compares the exhaustions reported with the records the timer table
/// keeps beside its rows: each is written in the same step as the retire
/// under the claim, so the two sets of keys are equal.
fn exhaustion_records(world: &World) -> Option<Breach> {
    let reported: std::collections::BTreeSet<(usize, i64)> = world
        .ledger
        .reports
        .iter()
        .map(|report| (report.parent, world.ledger.rows[report.row].wake_at))
        .collect();
    let recorded: std::collections::BTreeSet<(usize, i64)> = world
        .timers
        .exhausted_rows()
        .iter()
        .filter_map(|record| {
            let parent = world
                .parents
                .iter()
                .position(|parent| parent.id == record.row.execution_id)?;
            Some((parent, record.row.wake_at))
        })
        .collect();
    if reported == recorded {
        return None;
    }
    Some(Breach::ExhaustionRecords {
        unrecorded: reported.difference(&recorded).copied().collect(),
        unreported: recorded.difference(&reported).copied().collect(),
    })
}

/// What liveness found at quiescence, for the summary as well as the
/// verdict.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Liveness {
    /// The breaches.
    pub breaches: Vec<Breach>,
    /// Parents left unresumed after a paid-for exhaustion (to `recover()`).
    pub left_to_recover: u64,
    /// Parents resumed.
    pub resumed: u64,
    /// The smallest `foreign - floor` over paid-for exhaustions (0: an
    /// exhaustion had exactly the floor's bumps, so the floor is reached).
    pub tightest: Option<u64>,
    /// Parents left to `recover()` although the adversary alone (dead
    /// acquirers, and resumes a crash killed) bumped their token fewer
    /// times than a full chain's floor: rival live resumes made up the
    /// rest. Not a breach (the floor counts every foreign bump), a figure.
    pub left_below_adversary_floor: u64,
}

/// Liveness at quiescence (see the module docs).
pub fn liveness(world: &World) -> Result<Liveness, RedriveSimError> {
    let mut out = Liveness::default();
    let floor_per_run = u64::from(world.config.conditional_tries) * 2;
    let budget = world.config.chain_runs();
    for report in world.ledger.reports.iter().filter(|report| report.redrive) {
        let runs = world.ledger.lineage(report).len() as u64;
        if world.ledger.plain_lineage(report) && runs != budget {
            out.breaches.push(Breach::ChainLength {
                parent: report.parent,
                runs,
                budget,
            });
        }
    }
    for parent in 0..world.parents.len() {
        if !world.children_done(parent) {
            continue;
        }
        let resumes = world
            .store
            .read_range(&world.parents[parent].id, PARK_SEQ + 1, None)?
            .iter()
            .filter(|event| event.kind == RESUMED)
            .count();
        if resumes > 0 {
            out.resumed += 1;
            continue;
        }
        let reports: Vec<_> = world
            .ledger
            .reports
            .iter()
            .filter(|report| report.parent == parent && report.redrive)
            .collect();
        if reports.is_empty() {
            out.breaches.push(Breach::Stranded { parent });
            continue;
        }
        let mut paid = true;
        for report in reports {
            let lineage = world.ledger.lineage(report);
            let runs = lineage.len() as u64;
            let foreign = world.ledger.bumps[parent]
                .iter()
                .filter(|tag| match tag {
                    Tag::Run(run) => !lineage.contains(run),
                    Tag::Dead(_) => true,
                })
                .count() as u64;
            let floor = 1 + floor_per_run * runs;
            if foreign >= floor {
                let slack = foreign - floor;
                out.tightest = Some(out.tightest.map_or(slack, |least| least.min(slack)));
            } else {
                paid = false;
                out.breaches.push(Breach::ExhaustedUnderBudget {
                    parent,
                    runs,
                    foreign,
                    floor,
                });
            }
        }
        if paid {
            out.left_to_recover += 1;
            let adversary = world.ledger.bumps[parent]
                .iter()
                .filter(|tag| match tag {
                    Tag::Dead(_) => true,
                    Tag::Run(run) => world.ledger.runs[*run].end == Some(RunEnd::Crashed),
                })
                .count() as u64;
            if adversary < world.config.exhaustion_floor(world.config.chain_runs()) {
                out.left_below_adversary_floor += 1;
            }
        }
    }
    Ok(out)
}
