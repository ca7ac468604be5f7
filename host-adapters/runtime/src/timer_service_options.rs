//! The timer service's options and their real defaults: the system clock, a
//! seeded random source and a node id from the host name, the process id
//! and a random suffix.

use std::fmt;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use loomfence_core::{
    redrive::RedrivePolicy,
    timer::{DEFAULT_BACKOFF_BOUND, NodeId},
};

use crate::clock::{Clock, Random, system_now, system_random};
use crate::error::RuntimeError;
use crate::resumed_hook::{OnResumed, no_body};

/// A callback that receives every failure of the timer service, and every
/// exhausted retry chain, for logging or alerting; the service itself goes
/// on.
pub type OnTimerError = Arc<dyn Fn(&RuntimeError) + Send + Sync>;

/// How a [`TimerService`](crate::TimerService) behaves.
///
/// Every field has a real default ([`TimerServiceOptions::default`]); tests
/// and simulations replace `now` and `random` with virtual ones, which makes
/// [`TimerService::poll_once`](crate::TimerService::poll_once) deterministic.
#[derive(Clone)]
pub struct TimerServiceOptions {
    /// Who this node is: what its claims are held under. Two processes must
    /// not share one. Default: `<host name>-<process id>-<random hex>`.
    pub node: NodeId,
    /// How long the spawned loop waits between two polls (from the start
    /// of one to the start of the next, or longer if a poll runs late).
    /// Default: 250 ms. A zero interval is read as 1 ms.
    pub poll_interval: Duration,
    /// How long a claim lasts: another node can claim a row this node holds
    /// only after it. It should exceed the longest poll (a row is not fired
    /// once its lease has ended; see the module docs). Whole milliseconds,
    /// `1 ms ..= 1 day` (the timer store refuses other leases, and each
    /// poll reports the refusal). Default: 30 s.
    pub lease: Duration,
    /// How many rows one claim takes, `1..=10_000` (the timer store refuses
    /// other limits). Default: 100.
    pub batch: usize,
    /// The retry schedule of contended wakes and re-drives. Default: the
    /// design's (200 ms doubling to 30 s, 8 retries; design: the re-drive).
    pub policy: RedrivePolicy,
    /// How many executions the in-process backoff of contended plain wakes
    /// remembers. Default: 1,024.
    pub backoff_bound: NonZeroUsize,
    /// The current time in ms since the epoch: the claims' `now` and every
    /// fire's. Default: the system clock.
    pub now: Clock,
    /// The random source of the retries' jitter. Default: a `StdRng`
    /// seeded once per options value from the process's hash keys (which
    /// std takes from the OS), the time and the process id.
    pub random: Random,
    /// Receives every failure and every exhaustion. Default: a `tracing`
    /// warning.
    pub on_error: OnTimerError,
    /// Receives each resume the service lands: a plain wake's, called
    /// after the resume and before the row is retired. The host starts the
    /// body from it. Default: a debug trace, no body (see [`OnResumed`]).
    /// A re-drive's resume is its re-driver's to hand on.
    pub on_resumed: OnResumed,
}

impl Default for TimerServiceOptions {
    fn default() -> Self {
        let random = system_random();
        let node = default_node(&*random);
        Self {
            node,
            poll_interval: Duration::from_millis(250),
            lease: Duration::from_secs(30),
            batch: 100,
            policy: RedrivePolicy::default(),
            backoff_bound: NonZeroUsize::new(DEFAULT_BACKOFF_BOUND).unwrap_or(NonZeroUsize::MIN),
            now: Arc::new(system_now),
            random,
            on_error: Arc::new(|error| tracing::warn!(%error, "timer service")),
            on_resumed: no_body(),
        }
    }
}

impl fmt::Debug for TimerServiceOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerServiceOptions")
            .field("node", &self.node)
            .field("poll_interval", &self.poll_interval)
            .field("lease", &self.lease)
            .field("batch", &self.batch)
            .field("policy", &self.policy)
            .field("backoff_bound", &self.backoff_bound)
            .finish_non_exhaustive()
    }
}

/// The longest host name part of a default node id, in bytes: the id's
/// limit is 255.
const MAX_HOST_BYTES: usize = 200;

/// `<host>-<pid>-<8 hex digits>`, the host from `HOSTNAME`,
/// `COMPUTERNAME` or `/etc/hostname`, else `node`.
fn default_node(random: &(dyn Fn() -> f64 + Send + Sync)) -> NodeId {
    let host = ["HOSTNAME", "COMPUTERNAME"]
        .iter()
        .find_map(|name| std::env::var(name).ok())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|host| host.trim().replace('\0', ""))
        .filter(|host| !host.is_empty())
        .unwrap_or_else(|| "node".to_owned());
    let mut end = host.len().min(MAX_HOST_BYTES);
    while !host.is_char_boundary(end) {
        end -= 1;
    }
    // A draw in [0, 1) scaled to 32 bits: the suffix tells apart two
    // services in one process.
    let suffix = (random() * f64::from(u32::MAX)) as u32;
    let id = format!("{}-{}-{suffix:08x}", &host[..end], std::process::id());
    NodeId::new(id).unwrap_or_else(|_| {
        // Unreachable: the id is non-empty, NUL-free and under 255 bytes.
        NodeId::new(format!("node-{}-{suffix:08x}", std::process::id()))
            .unwrap_or_else(|_| unreachable_node())
    })
}

/// A fixed node id, for the impossible case that the composed ones are
/// refused.
fn unreachable_node() -> NodeId {
    match NodeId::new("node") {
        Ok(node) => node,
        Err(error) => panic!("\"node\" is a valid node id: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_documented_ones() {
        let options = TimerServiceOptions::default();
        assert_eq!(options.poll_interval, Duration::from_millis(250));
        assert_eq!(options.lease, Duration::from_secs(30));
        assert_eq!(options.batch, 100);
        assert_eq!(options.policy, RedrivePolicy::default());
        assert_eq!(options.backoff_bound.get(), 1_024);
        assert!((options.now)() > 1_600_000_000_000, "the system clock");
        let draw = (options.random)();
        assert!((0.0..1.0).contains(&draw), "{draw}");
        let pid = format!("-{}-", std::process::id());
        assert!(options.node.as_str().contains(&pid), "{}", options.node);
    }

    #[test]
    fn two_default_options_get_two_node_ids() {
        let a = TimerServiceOptions::default().node;
        let b = TimerServiceOptions::default().node;
        assert_ne!(a, b);
    }
}
