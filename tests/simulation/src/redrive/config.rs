//! What a simulated world is made of: the shape of the worlds a sweep draws,
//! the parameters one world drew, and which negative control (if any) it
//! runs.

use std::ops::RangeInclusive;

use loomfence_core::{Capability, redrive::RedrivePolicy};

/// The design under test, or one of its negative controls (each leaves one
/// piece out, and a sweep must find what that piece prevents).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Everything as designed: the supervisor writes a re-drive row on a
    /// contended resume, timer services honour leases, every resume takes
    /// the fence with `acquire_fence_if`.
    Faithful,
    /// Control (a): a contended supervisor writes no re-drive row (the flag
    /// off, or the feature missing): its machine runs with
    /// `OnContention::Answer`, as a re-driver's does. Liveness must fail.
    NoRedriveRow,
    /// Control (b): the timer services take rows over while another
    /// service's lease on them is still live (as a node whose clock runs a
    /// lease ahead would). Two services fire one row at once; the fence
    /// keeps that safe.
    LeaseBlind,
    /// Control (c): every fenced resume (supervisor, re-driver, timer wake)
    /// takes its token with the unconditional `acquire_fence`, as a store
    /// without `acquire_fence_if` makes it. A live body is fenced out.
    UnconditionalResume,
    /// Control (d): a fire moves a re-drive chain on in two timer-table
    /// steps, a schedule of the next row then a complete of the fired one,
    /// instead of the one-step reschedule under the claim. A fire that
    /// outlives its lease (or crashes between the two) writes a next row
    /// beside the one the row's new claimer writes: the chain forks.
    TwoStepReschedule,
}

impl Variant {
    /// Every variant, the design first.
    pub const ALL: [Variant; 5] = [
        Variant::Faithful,
        Variant::NoRedriveRow,
        Variant::LeaseBlind,
        Variant::UnconditionalResume,
        Variant::TwoStepReschedule,
    ];

    /// The acquire path every fenced resume takes.
    #[must_use]
    pub fn capability(self) -> Capability {
        match self {
            Variant::UnconditionalResume => Capability::FencingOnly,
            _ => Capability::Conditional,
        }
    }
}

/// The ranges a sweep draws each world's parameters from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Parents, each parked on its own children.
    pub parents: RangeInclusive<usize>,
    /// Children per parent.
    pub children: RangeInclusive<usize>,
    /// Dead acquirers per parent.
    pub dead_acquirers: RangeInclusive<usize>,
    /// Supervisor nodes.
    pub supervisors: RangeInclusive<usize>,
    /// Timer service nodes.
    pub services: RangeInclusive<usize>,
    /// The supervisors' `conditional_tries`.
    pub conditional_tries: RangeInclusive<u32>,
    /// The policy's `max_attempts` (re-drive rows per chain).
    pub max_attempts: RangeInclusive<u32>,
    /// Crashes per run (of supervisors and timer services).
    pub crashes: RangeInclusive<u32>,
    /// The chance, in thousandths per step, that a crash happens (while the
    /// budget lasts).
    pub crash_per_mille: u32,
    /// The chance, in percent, that a parent also waits on a timer (a plain
    /// wake row is scheduled for it).
    pub timer_wait_percent: u32,
    /// The scheduling weight of an armed dead acquirer, relative to 1 for a
    /// child or a body: drawn per world, higher is a more aggressive rival.
    pub dead_weight: RangeInclusive<u32>,
    /// The chance, in percent, that a dead acquirer lurks for a live
    /// resume's window (else it acts from a drawn time).
    pub lurking_percent: u32,
    /// The timer services' lease, ms (short ones expire under a slow fire).
    pub lease_ms: RangeInclusive<u64>,
    /// When a lurking dead acquirer stops waiting for a window and acts,
    /// ms (late ones survive into the re-drive rows' fires).
    pub lurk_deadline_ms: RangeInclusive<i64>,
}

impl Shape {
    /// The sweep's worlds: 1 to 3 parents of 1 to 3 children (30 % also on
    /// a timer), 0 to 10 dead acquirers each (60 % lurking), 2 or 3
    /// supervisors, 1 to 3 timer services with leases of 0.1 to 3 s, 1 to 3
    /// conditional tries, 1 to 3 re-drive rows per chain, up to 3 crashes
    /// at 2 % per step.
    #[must_use]
    pub fn standard() -> Self {
        Self {
            parents: 1..=3,
            children: 1..=3,
            dead_acquirers: 0..=10,
            supervisors: 2..=3,
            services: 1..=3,
            conditional_tries: 1..=3,
            max_attempts: 1..=3,
            crashes: 0..=3,
            crash_per_mille: 20,
            timer_wait_percent: 30,
            dead_weight: 1..=16,
            lurking_percent: 60,
            lease_ms: 100..=3_000,
            lurk_deadline_ms: 0..=8_000,
        }
    }
}

impl Shape {
    /// Worlds built to exhaust chains and break leases: 4 to 12 dead
    /// acquirers per parent (90 % lurking, until up to 30 s, weighted 8 to
    /// 24), one
    /// conditional try and 1 or 2 re-drive rows (so 5 or 7 foreign bumps
    /// can exhaust a chain), 2 or 3 timer services with leases of 0.1 to
    /// 0.6 s (fires outlive them), 2 to 5 crashes at 4 % per step.
    #[must_use]
    pub fn hostile() -> Self {
        Self {
            dead_acquirers: 4..=12,
            lurking_percent: 90,
            dead_weight: 8..=24,
            conditional_tries: 1..=1,
            max_attempts: 1..=2,
            services: 2..=3,
            lease_ms: 100..=600,
            crashes: 2..=5,
            crash_per_mille: 40,
            lurk_deadline_ms: 0..=30_000,
            ..Self::standard()
        }
    }
}

/// The parameters one world drew: the same for every node of it (a fleet
/// runs one configuration).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// The design, or a control.
    pub variant: Variant,
    /// The supervisors' conditional tries after the unfenced one.
    pub conditional_tries: u32,
    /// The re-drive schedule (the default's base and cap; `max_attempts`
    /// drawn).
    pub policy: RedrivePolicy,
    /// The timer services' lease, ms.
    pub lease_ms: u64,
    /// The timer services' poll interval, ms.
    pub poll_ms: i64,
    /// Rows per claim.
    pub batch: usize,
    /// The timer services' `WakeBackoff` bound.
    pub backoff_bound: usize,
    /// The scheduling weight of an armed dead acquirer.
    pub dead_weight: u32,
    /// The chance of a crash per step, in thousandths.
    pub crash_per_mille: u32,
    /// The largest clock advance of one tick move, ms.
    pub tick_max_ms: i64,
    /// The longest a crashed node stays down, ms.
    pub downtime_max_ms: i64,
}

impl Config {
    /// The acquire path of every fenced resume.
    #[must_use]
    pub fn capability(&self) -> Capability {
        self.variant.capability()
    }

    /// The fewest fence bumps, by anyone but the runs of one chain, that can
    /// exhaust that chain of `runs` runs (the supervisor's resume that wrote
    /// its first row, then one re-driver run per row): one bump before the
    /// first run's unfenced try (or it would land), then two per
    /// conditional try of every run (see [`super::check`]).
    #[must_use]
    pub fn exhaustion_floor(&self, runs: u64) -> u64 {
        1 + 2 * u64::from(self.conditional_tries) * runs
    }

    /// The runs of a chain that exhausts: the supervisor's, then one per
    /// re-drive row (attempts `0..max_attempts`, at least row 0).
    #[must_use]
    pub fn chain_runs(&self) -> u64 {
        1 + u64::from(self.policy.max_attempts.max(1))
    }
}
