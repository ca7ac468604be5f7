//! The harness's own record of a run: who moved each parent's token, which
//! resumes landed, which timer rows were written (and by whose run), which
//! fires ran, and what they reported.
//!
//! The stores hold the system's state; the ledger holds what the checks
//! need to judge it that the stores do not keep: the author of every fence
//! bump, the lineage of every re-drive row, the services firing a row at
//! one time. It never feeds back into a decision of an actor.

use std::collections::BTreeMap;

use loomfence_core::{ContractError, timer::TimerRow};

/// One supervise run (a supervisor's, or a re-driver's inside a fire) or a
/// timer wake's resume, by index into [`Ledger::runs`].
pub type RunId = usize;
/// One fire of a timer row, by index into [`Ledger::fires`].
pub type FireId = usize;
/// One instance of a timer row (a key from its first schedule to its
/// retirement), by index into [`Ledger::rows`].
pub type RowId = usize;

/// Who moved a parent's token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tag {
    /// Dead acquirer number `n` (world order).
    Dead(usize),
    /// A resume machine of this run.
    Run(RunId),
}

/// What kind of run it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunKind {
    /// A supervisor node's supervision of a parent.
    Supervisor {
        /// The node.
        node: usize,
    },
    /// The supervisor's re-driver, called by a fire of a re-drive row.
    Redriver {
        /// The fire.
        fire: FireId,
    },
    /// The resume of a plain timer wake, by a fire.
    Wake {
        /// The fire.
        fire: FireId,
    },
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunEnd {
    /// Its resume landed.
    Resumed,
    /// The park was answered by someone else, or is not a child park any
    /// more, or (a wake) its resume was refused.
    Nothing,
    /// Some child of every wait is still running.
    Waiting,
    /// Every conditional try was contended.
    Contended,
    /// A machine rejected a store answer (a finding).
    Rejected,
    /// Its node crashed under it.
    Crashed,
}

/// One run.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RunInfo {
    /// The parent it is about.
    pub parent: usize,
    /// What runs it.
    pub kind: RunKind,
    /// How it ended, once it has.
    pub end: Option<RunEnd>,
}

/// Who wrote a timer row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RowSource {
    /// The world's setup (a parent's plain timer wake).
    Setup,
    /// A supervisor run, on a contended resume (the chain's first row).
    Supervisor(RunId),
    /// A fire of a re-drive row (the chain's next row).
    Fire(FireId),
}

/// One instance of a timer row.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RowInfo {
    /// The parent it is about.
    pub parent: usize,
    /// Its key's time.
    pub wake_at: i64,
    /// Its re-drive attempt, `None` for a plain wake.
    pub attempt: Option<u32>,
    /// Every schedule that wrote it, in order; the first created it.
    pub sources: Vec<RowSource>,
    /// The first row of its re-drive chain (itself for a supervisor's row),
    /// `None` for a plain wake.
    pub chain: Option<RowId>,
    /// How many next rows fires of this one wrote (more than one: the chain
    /// forked, by a crash between a schedule and its complete, or by two
    /// fires of it).
    pub successors: u32,
    /// Whether a complete retired it.
    pub retired: bool,
    /// How many exhaustions were reported for it.
    pub reports: u32,
    /// The fires running on it now: `(fire, service, claim expiry)`; the
    /// expiry is `i64::MIN` once a schedule of the row ended the claim.
    pub firing: Vec<(FireId, usize, i64)>,
}

/// How a fire ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FireEnd {
    /// Its complete retired the row.
    Retired,
    /// Its complete answered `NotHeld`: the decision is void.
    Void,
    /// It left the row (not yet, backed off, no re-driver) and released it.
    Released,
    /// Its service crashed under it.
    Crashed,
}

/// One fire of a claimed row.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FireInfo {
    /// The service firing it.
    pub service: usize,
    /// The row instance.
    pub row: RowId,
    /// The re-driver or wake run it started, if it reached one.
    pub run: Option<RunId>,
    /// When its lease ends by the shared clock (the claim's expiry, except
    /// for control (b)'s blind service, whose claims are taken as of a day
    /// ahead).
    pub expires_at: i64,
    /// How it ended, once it has.
    pub end: Option<FireEnd>,
}

/// An exhaustion reported to the service's error handler.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Report {
    /// The fire that reported it (after its complete returned `Done`).
    pub fire: FireId,
    /// The row it retired.
    pub row: RowId,
    /// The parent.
    pub parent: usize,
    /// The retries the error names.
    pub attempts: u32,
    /// Whether the row was a re-drive row (else a plain wake).
    pub redrive: bool,
}

/// A resume that landed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Landing {
    /// The run whose machine landed it.
    pub run: RunId,
    /// Its `EXECUTION_RESUMED`'s sequence.
    pub sequence: u64,
    /// The token the body holds, `None` for an unfenced resume.
    pub fence: Option<u64>,
}

/// Something that happened at one step and breaks a rule by itself (the
/// state checks cannot see it afterwards).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Finding {
    /// A machine rejected a store's answer.
    Rejected {
        /// The run.
        run: RunId,
        /// What it said.
        error: ContractError,
    },
    /// Two services fired one row at once, both under live leases.
    LeaseOverlap {
        /// The row instance.
        row: RowId,
        /// The service already firing it.
        first: usize,
        /// The service that started too.
        second: usize,
    },
    /// An exhaustion was reported twice for one row instance.
    ReportedTwice {
        /// The row instance.
        row: RowId,
    },
    /// A fired row got a second next row: its chain forked.
    Fork {
        /// The fired row instance.
        row: RowId,
    },
    /// A re-drive row was written past the budget (`attempt >=
    /// max_attempts`).
    RowPastBudget {
        /// The row instance.
        row: RowId,
        /// Its attempt.
        attempt: u32,
    },
}

/// Counts for the summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Counts {
    /// Supervisor runs started.
    pub supervisor_runs: u64,
    /// Supervisor runs that ended contended.
    pub contended_supervisors: u64,
    /// Re-drive rows written by supervisors (chains started).
    pub chains: u64,
    /// Fires of re-drive rows that asked the re-driver.
    pub redrives_fired: u64,
    /// Re-driver runs that landed the resume.
    pub redriven: u64,
    /// Re-drive rows written by fires (chains continued).
    pub rescheduled: u64,
    /// Fires of plain wakes that resumed their park.
    pub wakes_fired: u64,
    /// Plain wakes backed off in process.
    pub backed_off: u64,
    /// Fires whose complete answered `NotHeld`.
    pub voided: u64,
    /// Two fires of one row at once (after a lease ended, or not).
    pub double_fires: u64,
    /// Chains that forked.
    pub forks: u64,
    /// Crashes.
    pub crashes: u64,
    /// Dead acquirers' bumps.
    pub dead_bumps: u64,
}

/// The record of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ledger {
    /// Per parent, every bump of its token, in order.
    pub bumps: Vec<Vec<Tag>>,
    /// Per parent, every resume that landed.
    pub landings: Vec<Vec<Landing>>,
    /// Every run.
    pub runs: Vec<RunInfo>,
    /// Every row instance.
    pub rows: Vec<RowInfo>,
    /// The live row instance of each key `(wake_at, parent)`.
    pub active: BTreeMap<(i64, usize), RowId>,
    /// Every fire.
    pub fires: Vec<FireInfo>,
    /// Every exhaustion reported.
    pub reports: Vec<Report>,
    /// Forks per chain (by its first row).
    pub forks: BTreeMap<RowId, u32>,
    /// Rule breaks seen as they happened.
    pub findings: Vec<Finding>,
    /// Counts for the summary.
    pub counts: Counts,
}

impl Ledger {
    /// A ledger for `parents` parents.
    #[must_use]
    pub fn new(parents: usize) -> Self {
        Self {
            bumps: vec![Vec::new(); parents],
            landings: vec![Vec::new(); parents],
            ..Self::default()
        }
    }

    /// Starts a run.
    pub fn new_run(&mut self, parent: usize, kind: RunKind) -> RunId {
        self.runs.push(RunInfo {
            parent,
            kind,
            end: None,
        });
        if matches!(kind, RunKind::Supervisor { .. }) {
            self.counts.supervisor_runs += 1;
        }
        self.runs.len() - 1
    }

    /// Ends a run (the first end stands).
    pub fn end_run(&mut self, run: RunId, end: RunEnd) {
        if let Some(info) = self.runs.get_mut(run)
            && info.end.is_none()
        {
            info.end = Some(end);
        }
    }

    /// Records a bump of `parent`'s token by `tag`.
    pub fn bump(&mut self, parent: usize, tag: Tag) {
        if matches!(tag, Tag::Dead(_)) {
            self.counts.dead_bumps += 1;
        }
        self.bumps[parent].push(tag);
    }

    /// Records a landed resume.
    pub fn landed(&mut self, parent: usize, landing: Landing) {
        self.landings[parent].push(landing);
    }

    /// Records a schedule of `row` (already written to the table), for
    /// `parent`, by `source`; checks the budget.
    pub fn scheduled(
        &mut self,
        row: &TimerRow,
        parent: usize,
        source: RowSource,
        max_attempts: u32,
    ) -> RowId {
        let attempt = row.redrive.map(|redrive| redrive.attempt);
        let chain_of_source = match source {
            RowSource::Setup => None,
            RowSource::Supervisor(_) => None,
            RowSource::Fire(fire) => self.rows[self.fires[fire].row].chain,
        };
        let id = match self.active.get(&(row.wake_at, parent)) {
            Some(&id) => {
                let info = &mut self.rows[id];
                info.sources.push(source);
                // The table ends any claim on a row it schedules again: the
                // fires running on it hold no lease any more (their
                // complete will be `NotHeld`).
                for firing in &mut info.firing {
                    firing.2 = i64::MIN;
                }
                info.attempt = attempt.or(info.attempt);
                if info.chain.is_none() && attempt.is_some() {
                    info.chain = chain_of_source.or(Some(id));
                }
                id
            }
            None => {
                let id = self.rows.len();
                let chain = attempt.map(|_| chain_of_source.unwrap_or(id));
                self.rows.push(RowInfo {
                    parent,
                    wake_at: row.wake_at,
                    attempt,
                    sources: vec![source],
                    chain,
                    successors: 0,
                    retired: false,
                    reports: 0,
                    firing: Vec::new(),
                });
                self.active.insert((row.wake_at, parent), id);
                id
            }
        };
        match source {
            RowSource::Setup => {}
            RowSource::Supervisor(_) => self.counts.chains += 1,
            RowSource::Fire(fire) => {
                self.counts.rescheduled += 1;
                let fired = self.fires[fire].row;
                self.rows[fired].successors += 1;
                if self.rows[fired].successors > 1
                    && let Some(chain) = self.rows[fired].chain
                {
                    *self.forks.entry(chain).or_default() += 1;
                    self.counts.forks += 1;
                    self.findings.push(Finding::Fork { row: fired });
                }
            }
        }
        if let Some(attempt) = attempt
            && attempt >= max_attempts.max(1)
        {
            self.findings
                .push(Finding::RowPastBudget { row: id, attempt });
        }
        id
    }

    /// The live instance of `row`'s key, for `parent`.
    #[must_use]
    pub fn instance(&self, row: &TimerRow, parent: usize) -> Option<RowId> {
        self.active.get(&(row.wake_at, parent)).copied()
    }

    /// How many schedules wrote row instance `row` so far: a claim taken
    /// at one count ended when the count grew (the table ends any claim on
    /// a row it schedules again).
    #[must_use]
    pub fn schedules(&self, row: RowId) -> usize {
        self.rows[row].sources.len()
    }

    /// Starts a fire of row instance `row` by `service`, under a claim taken
    /// when the row had had `schedules` schedules, whose lease runs until
    /// `lease_until` by the shared clock; records a double fire, and an
    /// overlap if both leases are live at `now`.
    pub fn fire_started(
        &mut self,
        row: RowId,
        service: usize,
        lease_until: i64,
        schedules: usize,
        now: i64,
    ) -> FireId {
        // A claim a schedule ended holds no lease, whatever its time says.
        let lease_until = if self.schedules(row) > schedules {
            i64::MIN
        } else {
            lease_until
        };
        let fire = self.fires.len();
        let mut overlaps = Vec::new();
        for &(_, other, other_until) in &self.rows[row].firing {
            self.counts.double_fires += 1;
            if other_until > now && lease_until > now {
                overlaps.push(other);
            }
        }
        for first in overlaps {
            self.findings.push(Finding::LeaseOverlap {
                row,
                first,
                second: service,
            });
        }
        self.rows[row].firing.push((fire, service, lease_until));
        self.fires.push(FireInfo {
            service,
            row,
            run: None,
            expires_at: lease_until,
            end: None,
        });
        fire
    }

    /// Ends a fire; a retiring one retires its row instance.
    pub fn fire_ended(&mut self, fire: FireId, end: FireEnd) {
        let row = self.fires[fire].row;
        self.fires[fire].end = Some(end);
        self.rows[row].firing.retain(|(other, _, _)| *other != fire);
        match end {
            FireEnd::Retired => {
                let info = &mut self.rows[row];
                info.retired = true;
                let key = (info.wake_at, info.parent);
                if self.active.get(&key) == Some(&row) {
                    self.active.remove(&key);
                }
            }
            FireEnd::Void => self.counts.voided += 1,
            FireEnd::Released | FireEnd::Crashed => {}
        }
    }

    /// Records an exhaustion reported by `fire` (after its complete).
    pub fn report(&mut self, fire: FireId, attempts: u32) {
        let row = self.fires[fire].row;
        let info = &mut self.rows[row];
        info.reports += 1;
        if info.reports > 1 {
            self.findings.push(Finding::ReportedTwice { row });
        }
        let (parent, redrive) = (info.parent, info.attempt.is_some());
        self.reports.push(Report {
            fire,
            row,
            parent,
            attempts,
            redrive,
        });
    }

    /// The runs of the lineage behind `report`: the reporting fire's
    /// re-driver run, then, row by row back along each row's creator, every
    /// fire's run, ending at the supervisor run that wrote the first row.
    /// Each ended before the next one's row was written, so the runs are
    /// disjoint in time.
    #[must_use]
    pub fn lineage(&self, report: &Report) -> Vec<RunId> {
        let mut runs = Vec::new();
        let mut fire = Some(report.fire);
        while let Some(current) = fire.take() {
            let info = &self.fires[current];
            runs.extend(info.run);
            match self.rows[info.row].sources.first() {
                Some(RowSource::Fire(previous)) => fire = Some(*previous),
                Some(RowSource::Supervisor(run)) => runs.push(*run),
                Some(RowSource::Setup) | None => {}
            }
        }
        runs
    }

    /// Whether `report`'s lineage is a plain chain: rooted at a supervisor
    /// run, and no row on it written twice (a key collision merges two
    /// lineages, and the creator then tells only one of them).
    #[must_use]
    pub fn plain_lineage(&self, report: &Report) -> bool {
        let mut fire = report.fire;
        loop {
            let row = &self.rows[self.fires[fire].row];
            if row.sources.len() != 1 {
                return false;
            }
            match row.sources[0] {
                RowSource::Fire(previous) => fire = previous,
                RowSource::Supervisor(_) => return true,
                RowSource::Setup => return false,
            }
        }
    }

    /// Exhaustions reported per chain, by its first row.
    #[must_use]
    pub fn chain_reports(&self) -> BTreeMap<RowId, u32> {
        let mut per_chain = BTreeMap::new();
        for report in &self.reports {
            if let Some(chain) = self.rows[report.row].chain {
                *per_chain.entry(chain).or_default() += 1;
            }
        }
        per_chain
    }
}
