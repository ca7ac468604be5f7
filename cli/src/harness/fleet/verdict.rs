//! The fleet's verdict, read from the store alone once every worker has
//! stopped: what the workers believe they did is not evidence.
//!
//! For every parent:
//! - **each park answered exactly once**: one `EXECUTION_RESUMED`, not two
//!   (`double_resumes`), and not none (`left_parked`: every child ends
//!   during the run, so every parent must be resumed, by its children or
//!   by its deadline, through re-drive if need be, with no manual step);
//! - **no body fenced out after its resume landed** (`fenced_out`): the
//!   parent's token is still the one its resume was written under (0 for
//!   an unfenced resume). A token taken after the resume landed is the
//!   loser's bookkeeping fencing the winner out: every later append of the
//!   winner's body is refused, whether or not it had any left;
//! - how it ended: completed by its body, or resumed and unfinished (its
//!   worker was killed mid-body: a crash, not a kernel bug).
//!
//! For every parent waiting on a message, from its log and its inbox:
//! **no message consumed twice** (`double_deliveries`: two
//! `MESSAGE_CONSUMED` of one message), and **none lost**
//! (`messages_lost`: stored, never consumed, and the parent still parked).
//! A message that arrived after its children answered the park stays
//! unconsumed, and that is no loss: the park it was for is gone.
//!
//! For every execution of the workload, parents and children: **sequences 1, 2, … n**, no
//! gap and no duplicate (`sequence_faults`).

use std::collections::{BTreeMap, HashSet};

use loomfence_core::{Envelope, ExecutionId, ExecutionView, KernelKind};
use loomfence_store::{EventStore, InboxStore, StoreError};
use serde_json::Value;

use super::plan::Plan;
use crate::harness::listing::list_all;

/// What the logs say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// Parents.
    pub(crate) parents: u64,
    /// Parents with at least one resume.
    pub(crate) resumed: u64,
    /// Parents resumed by their children (the supervisor, or its
    /// re-driver).
    pub(crate) resumed_by_children: u64,
    /// Parents resumed by their deadline (a timer wake).
    pub(crate) resumed_by_timer: u64,
    /// Parents resumed by a message (a delivery).
    pub(crate) resumed_by_message: u64,
    /// Parents waiting on a message.
    pub(crate) message_parents: u64,
    /// Messages the inbox stored for them.
    pub(crate) messages_sent: u64,
    /// `MESSAGE_CONSUMED` events in their logs.
    pub(crate) messages_consumed: u64,
    /// Messages consumed more than once.
    pub(crate) double_deliveries: u64,
    /// Messages stored and never consumed while their parent is still
    /// parked.
    pub(crate) messages_lost: u64,
    /// Parents with more than one resume of their park.
    pub(crate) double_resumes: u64,
    /// Resumed parents whose token moved after their resume landed.
    pub(crate) fenced_out: u64,
    /// Parents never resumed.
    pub(crate) left_parked: u64,
    /// Parents whose body completed.
    pub(crate) completed: u64,
    /// Parents resumed whose body did not finish (killed, or stopped by a
    /// store failure) and was not fenced out.
    pub(crate) unfinished: u64,
    /// Executions whose sequences are not exactly 1..=n.
    pub(crate) sequence_faults: u64,
    /// Children that had not ended (the run was cut short).
    pub(crate) children_open: u64,
}

impl Verdict {
    /// Every violation of the kernel's guarantees.
    pub(crate) fn violations(&self) -> u64 {
        self.double_resumes
            + self.fenced_out
            + self.left_parked
            + self.sequence_faults
            + self.double_deliveries
            + self.messages_lost
    }
}

/// Reads every stored log once and judges it: the sequences of every
/// execution, the parents' resumes, whether the children ended.
pub(crate) async fn judge(
    store: &dyn EventStore,
    inbox: &dyn InboxStore,
    plan: &Plan,
) -> Result<Verdict, StoreError> {
    let parents: HashSet<&ExecutionId> = plan.families.iter().map(|f| &f.parent).collect();
    let messaged: HashSet<&ExecutionId> = plan
        .families
        .iter()
        .filter(|f| f.message.is_some())
        .map(|f| &f.parent)
        .collect();
    let children: HashSet<&ExecutionId> = plan
        .families
        .iter()
        .flat_map(|f| f.children.iter().map(|(child, _)| child))
        .collect();
    let mut verdict = Verdict::default();
    let mut children_stored = 0;
    for summary in list_all(store).await? {
        let id = &summary.execution_id;
        // Executions outside the workload (the history) are not read: the
        // fleet judges them from the listing.
        if !parents.contains(id) && !children.contains(id) {
            continue;
        }
        let log = store.read_range(id, 1, None).await?;
        let in_order = log
            .iter()
            .enumerate()
            .all(|(index, event)| event.sequence == index as u64 + 1);
        let faulty = !in_order || log.last().map(|e| e.sequence) != Some(summary.head);
        verdict.sequence_faults += u64::from(faulty);
        if parents.contains(id) {
            let token = store.current_fence(id).await?;
            judge_parent(&log, token, &mut verdict);
            if messaged.contains(id) {
                let stored = inbox.messages(id).await?;
                let ids = stored
                    .iter()
                    .map(|e| e.message.message.key.message_id.as_str());
                judge_messages(&log, ids, &mut verdict);
            }
        } else if children.contains(id) {
            children_stored += 1;
            verdict.children_open += u64::from(!log.iter().any(Envelope::is_terminal));
        }
    }
    // A parent or child with no log at all (never written, or lost) is
    // judged as an empty log: left parked, not ended.
    while verdict.parents < parents.len() as u64 {
        judge_parent(&[], 0, &mut verdict);
    }
    verdict.children_open += (children.len() - children_stored) as u64;
    Ok(verdict)
}

/// Judges the messages of one parent waiting on one: `stored`, the ids of
/// its inbox's messages, against its log.
fn judge_messages<'a>(
    log: &[Envelope],
    stored: impl Iterator<Item = &'a str>,
    verdict: &mut Verdict,
) {
    verdict.message_parents += 1;
    let mut consumed: BTreeMap<&str, u64> = BTreeMap::new();
    for event in log {
        if event.kernel_kind() == Some(KernelKind::MessageConsumed) {
            let id = match event.payload.get("messageId") {
                Some(Value::String(id)) => id.as_str(),
                _ => "",
            };
            *consumed.entry(id).or_default() += 1;
        }
    }
    verdict.messages_consumed += consumed.values().sum::<u64>();
    verdict.double_deliveries += consumed.values().filter(|&&n| n > 1).count() as u64;
    let parked = ExecutionView::fold(log).open_park.is_some();
    for id in stored {
        verdict.messages_sent += 1;
        verdict.messages_lost += u64::from(parked && !consumed.contains_key(id));
    }
}

/// Judges one parent's log, `token` being its current fence.
fn judge_parent(log: &[Envelope], token: u64, verdict: &mut Verdict) {
    verdict.parents += 1;
    let resumes: Vec<&Envelope> = log
        .iter()
        .filter(|e| e.kernel_kind() == Some(KernelKind::ExecutionResumed))
        .collect();
    let Some(first) = resumes.first() else {
        verdict.left_parked += 1;
        return;
    };
    verdict.resumed += 1;
    verdict.double_resumes += u64::from(resumes.len() > 1);
    let answer = first.payload.get("answer");
    if answer.is_some_and(|a| a.get("timer").is_some()) {
        verdict.resumed_by_timer += 1;
    } else if answer.is_some_and(|a| a.get("children").is_some()) {
        verdict.resumed_by_children += 1;
    } else if answer.is_some_and(|a| a.get("message").is_some()) {
        verdict.resumed_by_message += 1;
    }
    // A fence that cannot be read counts as moved: the check must not pass
    // on what it cannot see.
    let under = first.fence().ok().map(|fence| fence.unwrap_or(0));
    let fenced_out = under != Some(token);
    verdict.fenced_out += u64::from(fenced_out);
    let completed = log
        .iter()
        .any(|e| e.kernel_kind() == Some(KernelKind::ExecutionCompleted));
    verdict.completed += u64::from(completed);
    verdict.unfinished += u64::from(!completed && !fenced_out);
}

#[cfg(test)]
mod tests {
    use loomfence_core::{
        MemoryStore, NewEvent,
        park::{Wait, park_payload},
    };
    use serde_json::json;

    use super::*;

    /// A parent's log: started, parked under token 1, then `after`,
    /// written once the resume's token 2 was taken.
    fn log(after: Vec<NewEvent>) -> Vec<Envelope> {
        let mut store = MemoryStore::default();
        let id = ExecutionId::new("p").unwrap();
        let mut log = store
            .append_many(&id, vec![NewEvent::kernel(KernelKind::ExecutionStarted, 1)])
            .unwrap();
        let token = store.acquire_fence(&id);
        let park = NewEvent::kernel(KernelKind::ExecutionSuspended, 2)
            .with_payload(park_payload(&[Wait::Timer { wake_at: 3 }]))
            .with_fence(token);
        log.extend(store.append_many(&id, vec![park]).unwrap());
        assert_eq!(store.acquire_fence(&id), 2);
        if !after.is_empty() {
            log.extend(store.append_many(&id, after).unwrap());
        }
        log
    }

    fn resumed(fence: u64, answer: serde_json::Value) -> NewEvent {
        let mut payload = loomfence_core::JsonObject::new();
        payload.insert("answer".to_owned(), answer);
        NewEvent::kernel(KernelKind::ExecutionResumed, 3)
            .with_payload(payload)
            .with_fence(fence)
    }

    fn completed(fence: u64) -> NewEvent {
        NewEvent::kernel(KernelKind::ExecutionCompleted, 4).with_fence(fence)
    }

    fn judged(log: &[Envelope], token: u64) -> Verdict {
        let mut verdict = Verdict::default();
        judge_parent(log, token, &mut verdict);
        verdict
    }

    #[test]
    fn a_clean_resume_and_completion_is_no_violation() {
        let v = judged(
            &log(vec![resumed(2, json!({"timer": {}})), completed(2)]),
            2,
        );
        assert_eq!((v.resumed, v.resumed_by_timer, v.completed), (1, 1, 1));
        assert_eq!(v.violations(), 0, "{v:?}");
    }

    #[test]
    fn a_token_taken_after_the_resume_is_a_fenced_out_body() {
        let v = judged(
            &log(vec![resumed(2, json!({"children": {}})), completed(2)]),
            3,
        );
        assert_eq!((v.fenced_out, v.resumed_by_children), (1, 1), "{v:?}");
        assert_eq!(v.violations(), 1);
    }

    fn consumed(id: &str, fence: u64) -> NewEvent {
        loomfence_core::inbox::consumed_event("poke", id, 3).with_fence(fence)
    }

    #[test]
    fn a_message_consumed_twice_or_lost_is_a_violation_one_left_after_the_park_is_not() {
        let mut once = Verdict::default();
        let delivered = log(vec![consumed("m", 2), resumed(2, json!({"message": {}}))]);
        judge_parent(&delivered, 2, &mut once);
        judge_messages(&delivered, ["m"].into_iter(), &mut once);
        assert_eq!((once.resumed_by_message, once.messages_consumed), (1, 1));
        assert_eq!(once.violations(), 0, "{once:?}");

        let mut twice = Verdict::default();
        let doubled = log(vec![
            consumed("m", 2),
            resumed(2, json!({"message": {}})),
            consumed("m", 2),
        ]);
        judge_messages(&doubled, ["m"].into_iter(), &mut twice);
        assert_eq!((twice.double_deliveries, twice.violations()), (1, 1));

        let mut lost = Verdict::default();
        judge_messages(&log(vec![]), ["m"].into_iter(), &mut lost);
        assert_eq!((lost.messages_lost, lost.violations()), (1, 1));

        // The children answered first: the message waits for nobody.
        let mut late = Verdict::default();
        let by_children = log(vec![resumed(2, json!({"children": {}}))]);
        judge_messages(&by_children, ["m"].into_iter(), &mut late);
        assert_eq!((late.messages_sent, late.violations()), (1, 0));
    }

    #[test]
    fn two_resumes_and_none_are_violations_an_unfinished_body_is_not() {
        let twice = log(vec![resumed(2, json!(1)), resumed(2, json!(2))]);
        assert_eq!(judged(&twice, 2).double_resumes, 1);
        let never = judged(&log(vec![]), 1);
        assert_eq!((never.left_parked, never.violations()), (1, 1));
        let cut = judged(&log(vec![resumed(2, json!(1))]), 2);
        assert_eq!((cut.unfinished, cut.violations()), (1, 0), "{cut:?}");
    }
}
