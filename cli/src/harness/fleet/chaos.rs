//! The fleet's faults: workers SIGKILLed (and started again) and, on
//! PostgreSQL, worker connections ended with `pg_terminate_backend`, each
//! at a jittered rate drawn from the run's seed. The seed also picks which
//! worker is killed; the server picks which connection ends (`random()`),
//! since the fleet cannot know which connections a worker holds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use loomfence_postgres::PostgresEventStore;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::workers::{APPLICATION_NAME, Workers};
use crate::error::CliError;

/// Mixed into the seed, so the faults do not draw the workload's numbers.
const CHAOS_SEED_SALT: u64 = 0x6368_616f_735f_7365;

/// The fault schedule and what it did.
pub(crate) struct Chaos {
    /// The server, when the store is PostgreSQL.
    postgres: Option<Arc<PostgresEventStore>>,
    /// Draws the delays and the victims.
    rng: StdRng,
    /// When the next kill falls, and the mean period.
    next_kill: Option<(Instant, Duration)>,
    /// When the next connection is ended, and the mean period.
    next_terminate: Option<(Instant, Duration)>,
    /// Workers SIGKILLed.
    pub(crate) kills: u32,
    /// Worker connections ended.
    pub(crate) terminated: u32,
}

impl Chaos {
    /// No faults yet; `postgres` is the server, if any.
    pub(crate) fn new(postgres: Option<Arc<PostgresEventStore>>, seed: u64) -> Self {
        Self {
            postgres,
            rng: StdRng::seed_from_u64(seed ^ CHAOS_SEED_SALT),
            next_kill: None,
            next_terminate: None,
            kills: 0,
            terminated: 0,
        }
    }

    /// Starts the schedule: a kill every `kill_every` and a termination
    /// every `terminate_every` (each ±50%), from now.
    pub(crate) fn schedule(
        &mut self,
        kill_every: Option<Duration>,
        terminate_every: Option<Duration>,
    ) {
        self.next_kill = kill_every.map(|every| (self.after(every), every));
        self.next_terminate = terminate_every.map(|every| (self.after(every), every));
    }

    /// Makes the faults that are due.
    pub(crate) async fn act(&mut self, workers: &mut Workers) -> Result<(), CliError> {
        if let Some((at, every)) = self.next_kill
            && Instant::now() >= at
        {
            let victim = self.rng.random_range(0..workers.len());
            workers.kill_and_restart(victim).await?;
            self.kills += 1;
            self.next_kill = Some((self.after(every), every));
        }
        if let Some((at, every)) = self.next_terminate
            && Instant::now() >= at
        {
            self.terminate_one().await;
            self.next_terminate = Some((self.after(every), every));
        }
        Ok(())
    }

    /// Ends one random worker connection. A failure (no worker connected
    /// at that instant, the query refused) is said and skipped: a fault
    /// not made is not a kernel bug.
    async fn terminate_one(&mut self) {
        let Some(postgres) = &self.postgres else {
            return;
        };
        let ended = async {
            let client = postgres.pool().get().await.map_err(|e| e.to_string())?;
            let rows = client
                .query(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE application_name = $1 AND pid <> pg_backend_pid() \
                     ORDER BY random() LIMIT 1",
                    &[&APPLICATION_NAME],
                )
                .await
                .map_err(|e| e.to_string())?;
            Ok::<bool, String>(rows.first().is_some_and(|row| row.get::<_, bool>(0)))
        };
        match ended.await {
            Ok(true) => self.terminated += 1,
            Ok(false) => {}
            Err(error) => eprintln!("fleet: could not end a worker connection: {error}"),
        }
    }

    /// A time `every` ± 50% from now.
    fn after(&mut self, every: Duration) -> Instant {
        let factor = 0.5 + self.rng.random::<f64>();
        Instant::now() + every.mul_f64(factor)
    }
}
