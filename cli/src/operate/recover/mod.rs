//! `loomfence recover`: moves on executions whose re-drive chain (or timer
//! wake) ran out of tries, or executions an operator names.
//!
//! Each is recovered by the runtime's [`recover`]: one fresh row fired
//! through the timer services' own decision, with the same re-drivers in
//! the same order as every worker ([`Redrivers`]), so the resume is the
//! conditional one the services make and the fence settles any race with
//! workers running meanwhile. It reports per recovery: resumed, not parked
//! (nothing waits any more), or contended again (the next try is handed
//! to the timer services). A resumed execution's body is its engine's to
//! run; this command runs none (see `docs/decisions.md`).
//!
//! Every named id is checked before anything is recovered: a malformed one
//! is a bad option (2), an id the store has no trace of (no log, no record)
//! exits 1 with nothing done.

mod args;
mod report;

use std::process::ExitCode;
use std::sync::Arc;

use loomfence_core::ExecutionId;
use loomfence_core::redrive::Draw;
use loomfence_core::timer::{ExhaustedQuery, ExhaustedRow, FireContext};
use loomfence_runtime::OnResumed;
use loomfence_runtime::clock::{Random, system_random};
use loomfence_runtime::recover::{Recovery, recover};

pub(crate) use self::args::RecoverArgs;
use self::report::Recovered;
use crate::clock::now_ms;
use crate::error::CliError;
use crate::operate::timer_rows::list_exhausted;
use crate::redrivers::{POLICY, Redrivers};
use crate::store::{ExistingStore, KeptStore};

/// PostgreSQL connections: one recovery at a time, plus a re-driver's
/// reads.
const POOL_SIZE: usize = 2;

/// Exhausted records per listing page.
const PAGE: usize = 100;

/// Runs the recoveries, prints them, and returns the exit code.
pub(crate) async fn command(args: RecoverArgs) -> ExitCode {
    let json = args.json;
    match run(args).await {
        Ok((store, all)) => {
            if json {
                println!("{}", report::to_json(&store, &all));
            } else {
                for recovered in &all {
                    println!("{}", report::line(recovered));
                }
                println!("{}", report::summary(&all));
            }
            ExitCode::SUCCESS
        }
        Err(error) => error.exit("the recovery failed"),
    }
}

/// Checks the options, opens the store, and recovers.
async fn run(args: RecoverArgs) -> Result<(String, Vec<Recovered>), CliError> {
    let kept = KeptStore::parse(&args.store, args.schema)?;
    let ids = args
        .ids
        .into_iter()
        .map(|id| ExecutionId::new(id).map_err(|e| CliError::bad_value("ID", &e)))
        .collect::<Result<Vec<_>, _>>()?;
    let store = kept.open(POOL_SIZE).await?;
    let shown = kept.shown();
    let recoverer = Recoverer::new(&store);
    let mut all = Vec::new();
    if args.exhausted {
        let mut after = None;
        loop {
            let page = recoverer.page(after.clone()).await?;
            let Some(last) = page.last() else { break };
            after = Some((last.row.execution_id.clone(), last.row.wake_at));
            for record in page {
                let id = record.row.execution_id.clone();
                all.push(recoverer.recover(id, Some(record)).await?);
            }
        }
    } else {
        // Every id is looked up before any is recovered.
        let mut plan = Vec::new();
        for id in ids {
            let (records, _) = list_exhausted(&*store.timers, Some(id.clone()), |_| true, None)
                .await
                .map_err(CliError::store("timer store"))?;
            if records.is_empty() && !recoverer.has_log(&id).await? {
                return Err(CliError::NoExecution {
                    id: id.as_str().to_owned(),
                    store: shown,
                });
            }
            plan.push((id, records));
        }
        for (id, records) in plan {
            if records.is_empty() {
                all.push(recoverer.recover(id, None).await?);
                continue;
            }
            for record in records {
                all.push(recoverer.recover(id.clone(), Some(record)).await?);
            }
        }
    }
    Ok((shown, all))
}

/// The store, its re-drivers and a random source: what every recovery
/// takes.
struct Recoverer<'s> {
    /// The store.
    store: &'s ExistingStore,
    /// The re-drivers every worker registers.
    redrivers: Redrivers,
    /// The draws of the delays.
    random: Random,
}

impl<'s> Recoverer<'s> {
    /// Over `store`, with re-drivers that start no body.
    fn new(store: &'s ExistingStore) -> Self {
        let redrivers = Redrivers::new(
            &store.events,
            &store.timers,
            Arc::clone(&store.inbox),
            no_body(),
            no_body(),
        );
        Self {
            store,
            redrivers,
            random: system_random(),
        }
    }

    /// A page of every execution's exhausted records, after a key: read as
    /// the recoveries go, so a store with many holds one page at a time.
    async fn page(&self, after: Option<(ExecutionId, i64)>) -> Result<Vec<ExhaustedRow>, CliError> {
        let query = ExhaustedQuery {
            execution: None,
            after,
            limit: PAGE,
        };
        self.store
            .timers
            .exhausted(&query)
            .await
            .map_err(CliError::store("timer store"))
    }

    /// Whether the execution has a log.
    async fn has_log(&self, id: &ExecutionId) -> Result<bool, CliError> {
        let first = self
            .store
            .events
            .read_range(id, 1, Some(1))
            .await
            .map_err(CliError::store("store"))?;
        Ok(!first.is_empty())
    }

    /// Recovers one execution (from `record`, if any) now.
    async fn recover(
        &self,
        execution_id: ExecutionId,
        record: Option<ExhaustedRow>,
    ) -> Result<Recovered, CliError> {
        let draw = Draw::new((self.random)()).map_err(|e| CliError::bad_value("random", &e))?;
        let recovery = Recovery {
            context: FireContext::new(now_ms(), draw).with_policy(POLICY),
            redrivers: self.redrivers.list(),
            on_resumed: no_body(),
        };
        let outcome = recover(
            &*self.store.events,
            &*self.store.timers,
            &execution_id,
            record.clone(),
            &recovery,
        )
        .await
        .map_err(CliError::runtime("recovery"))?;
        Ok(Recovered {
            execution_id,
            record,
            outcome,
        })
    }
}

/// What a landed resume starts here: nothing. The body is its engine's.
fn no_body() -> OnResumed {
    Arc::new(|resumed| {
        tracing::debug!(execution_id = %resumed.execution_id, fence = ?resumed.fence, "resumed by recover");
    })
}
