//! What one execution of each workload does against the store.
//!
//! Every workload but one writes the same shape of log (a start, some
//! steps, a completion), so they differ only in how the writer holds the
//! execution: with no token, with a token taken up front (inside the timed
//! execution, or before the clock starts, to time the fenced appends
//! alone), or by resuming a park on one of the three resume paths. The one
//! other times the token's acquire alone. Nothing races here (each
//! execution has exactly one writer), so every resume must land; anything
//! else is a failure of the bench, not a result.

use std::time::{Duration, Instant};

use loomfence_core::{
    Capability, Envelope, ExecutionId, JsonObject, KernelKind, NewEvent, ResumeMachine,
    ResumeRequest, Resumed,
    park::{Wait, park_payload},
};
use loomfence_runtime::{Body, resume_from, step::run};
use loomfence_store::EventStore;
use serde_json::{Value, json};

use crate::clock::now_ms;
use crate::error::CliError;

/// Step events in the two straight-line workloads.
const STRAIGHT_STEPS: u32 = 3;

/// One workload of the bench.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Workload {
    /// `EXECUTION_STARTED`, three `STEP_COMPLETED`, `EXECUTION_COMPLETED`:
    /// five single appends, no token.
    Unfenced,
    /// The same five appends, each carrying a token that was acquired
    /// before the clock started (see [`Workload::prepare`]): what fencing
    /// adds to an append itself.
    FencedAppend,
    /// `acquire_fence`, then the same five appends carrying the token.
    Fenced,
    /// One `acquire_fence` of a new execution, alone.
    Acquire,
    /// Start and park (one append each), a resume that takes no token (the
    /// park-conditional append), one step and the completion.
    ParkUnfenced,
    /// The same, the resume under the plain `acquire_fence`.
    ParkAcquireFence,
    /// The same, the resume under the conditional `acquire_fence_if`.
    ParkConditional,
    /// [`Workload::ParkConditional`] on a PostgreSQL store whose conditional
    /// acquire is the pipelined transaction instead of the function.
    ParkConditionalPipelined,
}

/// How long one execution took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sample {
    /// From the first store call to the last one's answer.
    pub(crate) total: Duration,
    /// The resume alone (park workloads only).
    pub(crate) resume: Option<Duration>,
}

impl Workload {
    /// Every workload, in the order they run and are reported.
    pub(crate) const ALL: [Workload; 8] = [
        Workload::Unfenced,
        Workload::FencedAppend,
        Workload::Fenced,
        Workload::Acquire,
        Workload::ParkUnfenced,
        Workload::ParkAcquireFence,
        Workload::ParkConditional,
        Workload::ParkConditionalPipelined,
    ];

    /// The workloads that run against a store: the pipelined acquire is a
    /// PostgreSQL choice, so it runs only there.
    pub(crate) fn for_store(postgres: bool) -> Vec<Workload> {
        Self::ALL
            .into_iter()
            .filter(|w| postgres || *w != Workload::ParkConditionalPipelined)
            .collect()
    }

    /// The stable key used in JSON and in execution ids.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Workload::Unfenced => "unfenced",
            Workload::FencedAppend => "fenced_append",
            Workload::Fenced => "fenced",
            Workload::Acquire => "acquire",
            Workload::ParkUnfenced => "park_resume_unfenced",
            Workload::ParkAcquireFence => "park_resume_acquire_fence",
            Workload::ParkConditional => "park_resume_fence_if_parked_at",
            Workload::ParkConditionalPipelined => "park_resume_fence_if_parked_at_pipelined",
        }
    }

    /// The row label of the table.
    pub(crate) fn label(self, postgres: bool) -> &'static str {
        match self {
            Workload::Unfenced => "unfenced",
            Workload::FencedAppend => "fenced append (token taken before the clock)",
            Workload::Fenced => "fenced",
            Workload::Acquire => "acquire_fence alone",
            Workload::ParkUnfenced => "park/resume, unfenced",
            Workload::ParkAcquireFence => "park/resume, acquire_fence",
            Workload::ParkConditional if postgres => "park/resume, fence_if_parked_at (function)",
            Workload::ParkConditional => "park/resume, fence_if_parked_at",
            Workload::ParkConditionalPipelined => "park/resume, fence_if_parked_at (pipelined)",
        }
    }

    /// Whether the workload resumes a park (and so has a resume latency).
    pub(crate) fn resumes(self) -> bool {
        !matches!(
            self,
            Workload::Unfenced | Workload::FencedAppend | Workload::Fenced | Workload::Acquire
        )
    }

    /// How many single appends one execution makes, for the workloads that
    /// make nothing else (so appends/s is this times executions/s).
    pub(crate) fn appends_only(self) -> Option<u32> {
        matches!(self, Workload::Unfenced | Workload::FencedAppend).then_some(STRAIGHT_STEPS + 2)
    }

    /// Whether the workload has untimed work to do first (see
    /// [`Workload::prepare`]).
    pub(crate) fn prepares(self) -> bool {
        self == Workload::FencedAppend
    }

    /// The untimed work before execution `id` runs: the fenced append's
    /// token. `None` for the other workloads, which do everything timed.
    pub(crate) async fn prepare(
        self,
        store: &dyn EventStore,
        id: &ExecutionId,
    ) -> Result<Option<u64>, CliError> {
        Ok(match self {
            Workload::FencedAppend => Some(store.acquire_fence(id).await?),
            _ => None,
        })
    }

    /// Runs one execution `id` of this workload against `store`, with the
    /// token [`Workload::prepare`] took for it, if any (a fenced append
    /// that was not prepared takes its token inside the clock).
    pub(crate) async fn execute(
        self,
        store: &dyn EventStore,
        id: &ExecutionId,
        prepared: Option<u64>,
    ) -> Result<Sample, CliError> {
        let began = Instant::now();
        let resume = match self {
            Workload::Unfenced => {
                straight(store, id, None).await?;
                None
            }
            Workload::FencedAppend => {
                // Not prepared: the acquire is timed too, as in `Fenced`.
                let token = match prepared {
                    Some(token) => token,
                    None => store.acquire_fence(id).await?,
                };
                straight(store, id, Some(token)).await?;
                None
            }
            Workload::Acquire => {
                store.acquire_fence(id).await?;
                None
            }
            Workload::Fenced => {
                let token = store.acquire_fence(id).await?;
                straight(store, id, Some(token)).await?;
                None
            }
            Workload::ParkUnfenced => Some(park_resume(store, id, None).await?),
            Workload::ParkAcquireFence => {
                Some(park_resume(store, id, Some(Capability::FencingOnly)).await?)
            }
            Workload::ParkConditional | Workload::ParkConditionalPipelined => {
                Some(park_resume(store, id, Some(Capability::Conditional)).await?)
            }
        };
        Ok(Sample {
            total: began.elapsed(),
            resume,
        })
    }
}

/// Start, [`STRAIGHT_STEPS`] steps, completion: single appends, each
/// carrying `token` when there is one.
async fn straight(
    store: &dyn EventStore,
    id: &ExecutionId,
    token: Option<u64>,
) -> Result<(), CliError> {
    let stamp = |event: NewEvent| match token {
        Some(token) => event.with_fence(token),
        None => event,
    };
    store
        .append(
            id,
            stamp(NewEvent::kernel(KernelKind::ExecutionStarted, now_ms())),
        )
        .await?;
    for step in 0..STRAIGHT_STEPS {
        store.append(id, stamp(step_event(step))).await?;
    }
    store.append(id, stamp(completion())).await?;
    Ok(())
}

/// Start and park, resume on the path `fencing` names (`None`: no token,
/// the park-conditional append; otherwise a machine built with that
/// capability), then one step and the completion through [`Body`]. Returns
/// how long the resume took.
async fn park_resume(
    store: &dyn EventStore,
    id: &ExecutionId,
    fencing: Option<Capability>,
) -> Result<Duration, CliError> {
    let started = store
        .append(id, NewEvent::kernel(KernelKind::ExecutionStarted, now_ms()))
        .await?;
    let park =
        NewEvent::kernel(KernelKind::ExecutionSuspended, now_ms()).with_payload(park_payload(&[
            Wait::Message {
                channel: "bench".to_owned(),
            },
        ]));
    let parked = store.append(id, park).await?;
    let park_seq = parked.sequence;
    // The writer holds the log it wrote, so no resume reads the park back.
    let held: [Envelope; 2] = [started, parked];
    let request = ResumeRequest::new(park_seq, json!({ "bench": true }), now_ms());

    let resuming = Instant::now();
    let resumed: Resumed = match fencing {
        None => resume_from(store, id, request.unfenced(), &held)
            .await
            .map_err(CliError::runtime("resume"))?,
        Some(capability) => {
            let mut machine = ResumeMachine::with_events(id.clone(), request, capability, &held)?;
            run(store, &mut machine)
                .await
                .map_err(CliError::runtime("resume"))?
        }
    };
    let resume = resuming.elapsed();

    let mut body = Body::new(store, resumed);
    body.append(step_event(0)).await?;
    body.complete(json!({ "done": true }), now_ms()).await?;
    Ok(resume)
}

/// `STEP_COMPLETED { step }`.
fn step_event(step: u32) -> NewEvent {
    let mut payload = JsonObject::new();
    payload.insert("step".to_owned(), Value::from(step));
    NewEvent::kernel(KernelKind::StepCompleted, now_ms()).with_payload(payload)
}

/// `EXECUTION_COMPLETED { output }`, as [`Body::complete`] writes it.
fn completion() -> NewEvent {
    let mut payload = JsonObject::new();
    payload.insert("output".to_owned(), json!({ "done": true }));
    NewEvent::kernel(KernelKind::ExecutionCompleted, now_ms()).with_payload(payload)
}

#[cfg(test)]
mod tests {
    use loomfence_store::MemoryEventStore;

    use super::*;

    #[tokio::test]
    async fn every_workload_writes_a_completed_log() {
        let store = MemoryEventStore::new();
        for workload in Workload::ALL {
            let id = ExecutionId::new(format!("{}-1", workload.key())).unwrap();
            let prepared = workload.prepare(&store, &id).await.unwrap();
            assert_eq!(prepared.is_some(), workload.prepares(), "{workload:?}");
            let sample = workload.execute(&store, &id, prepared).await.unwrap();
            assert_eq!(sample.resume.is_some(), workload.resumes(), "{workload:?}");
            let log = store.read_range(&id, 1, None).await.unwrap();
            if workload == Workload::Acquire {
                assert!(log.is_empty());
                assert_eq!(store.current_fence(&id).await.unwrap(), 1);
                continue;
            }
            let kinds: Vec<&str> = log.iter().map(|e| e.kind.as_str()).collect();
            let expected: &[&str] = if workload.resumes() {
                &[
                    "EXECUTION_STARTED",
                    "EXECUTION_SUSPENDED",
                    "EXECUTION_RESUMED",
                    "STEP_COMPLETED",
                    "EXECUTION_COMPLETED",
                ]
            } else {
                &[
                    "EXECUTION_STARTED",
                    "STEP_COMPLETED",
                    "STEP_COMPLETED",
                    "STEP_COMPLETED",
                    "EXECUTION_COMPLETED",
                ]
            };
            assert_eq!(kinds, expected, "{workload:?}");
            let fence = store.current_fence(&id).await.unwrap();
            let fenced = !matches!(workload, Workload::Unfenced | Workload::ParkUnfenced);
            assert_eq!(fence, u64::from(fenced), "{workload:?}");
            // A park workload's start and park are written before the
            // resume takes its token; everything after carries it.
            let first_fenced = if workload.resumes() { 2 } else { 0 };
            if fenced {
                assert!(
                    log[first_fenced..]
                        .iter()
                        .all(|e| matches!(e.fence(), Ok(Some(1)))),
                    "{log:?}"
                );
            }
        }
    }

    #[tokio::test]
    async fn a_fenced_append_not_prepared_takes_its_token_itself() {
        let store = MemoryEventStore::new();
        let id = ExecutionId::new("fenced-append-unprepared").unwrap();
        Workload::FencedAppend
            .execute(&store, &id, None)
            .await
            .unwrap();
        assert_eq!(store.current_fence(&id).await.unwrap(), 1);
        let log = store.read_range(&id, 1, None).await.unwrap();
        assert_eq!(log.len(), 5);
        assert!(log.iter().all(|e| matches!(e.fence(), Ok(Some(1)))));
    }

    #[test]
    fn only_the_straight_workloads_count_appends() {
        assert_eq!(Workload::Unfenced.appends_only(), Some(5));
        assert_eq!(Workload::FencedAppend.appends_only(), Some(5));
        assert_eq!(Workload::Fenced.appends_only(), None);
        assert_eq!(Workload::Acquire.appends_only(), None);
    }

    #[test]
    fn the_pipelined_acquire_runs_only_on_postgres() {
        assert_eq!(Workload::for_store(true).len(), 8);
        let memory = Workload::for_store(false);
        assert_eq!(memory.len(), 7);
        assert!(!memory.contains(&Workload::ParkConditionalPipelined));
    }
}
