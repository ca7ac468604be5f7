//! A store that lies in its append acknowledgement: the real resume driver
//! (`loomfence-runtime`) over the store under test, whose
//! `append_if_parked` answers with the event sent changed in one field and
//! writes nothing. The core machine compares the acknowledgement with what
//! it sent, field by field, so the resume fails as a broken store contract
//! and reports nothing as landed, on every store.

use async_trait::async_trait;
use loomfence_core::{
    ConditionalAppend, ContractError, Envelope, ExecutionId, NewEvent, ResumeRequest,
};
use loomfence_runtime::{RuntimeError, resume};
use loomfence_store::{EventStore, StoreError};
use serde_json::json;

use crate::Store;
use crate::support::{AT, Around, Witness, id, park};
use loomfence_store::forwarding::Hooks;

/// Hooks whose `append_if_parked` writes nothing and answers the event
/// sent, at the next sequence, with `forge` applied.
struct Forging {
    /// Changes one field of the faithful acknowledgement.
    forge: Forge,
}

#[async_trait]
impl Hooks for Forging {
    async fn append_if_parked(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        _park_seq: u64,
        events: Vec<NewEvent>,
    ) -> Result<ConditionalAppend, StoreError> {
        let head = inner.read_range(id, 1, None).await?.len() as u64;
        let acked = events
            .into_iter()
            .zip(head + 1..)
            .map(|(event, sequence)| {
                let mut envelope = event.into_envelope(id.clone(), sequence);
                (self.forge)(&mut envelope);
                envelope
            })
            .collect();
        Ok(ConditionalAppend::Appended(acked))
    }
}

/// Changes one field of an acknowledgement.
type Forge = fn(&mut Envelope);

/// Each forgery, by the field it changes.
const FORGERIES: [(&str, Forge); 4] = [
    ("payload", |e| {
        e.payload.insert("answer".to_owned(), json!("forged"));
    }),
    ("at", |e| e.at += 1),
    ("metadata", |e| {
        e.metadata.insert("host".to_owned(), json!("forged"));
    }),
    ("metadata", |e| {
        if e.metadata.remove("fence").is_none() {
            e.metadata.insert("fence".to_owned(), json!(7));
        }
    }),
];

/// An acknowledgement with another payload, `at` or metadata (the token
/// dropped, or one the resume never sent) than the event sent fails the
/// resume with [`ContractError::ForgedAppend`] naming the field, not
/// retryable; the log is as before and nothing landed. (A token the
/// resume acquired before the append stays taken, as for any failed
/// resume: the log is what is compared.)
pub async fn a_forged_append_acknowledgement_fails_the_resume_and_nothing_lands(store: Store) {
    for (n, (field, forge)) in FORGERIES.into_iter().enumerate() {
        let id = &id(&format!("resume-forged-ack-{n}"));
        let park_seq = park(&*store, id).await;
        let before = Witness::capture(&*store, id).await;
        let lying = Around {
            inner: store.clone(),
            hooks: Forging { forge },
        };
        let request = ResumeRequest::new(park_seq, json!({ "paid": true }), AT + 1);
        let failure = resume(&lying, id, request)
            .await
            .expect_err(&format!("an ack with a forged {field} was taken as landed"));
        assert!(!failure.is_retryable(), "{failure:?}");
        assert!(
            matches!(&failure, RuntimeError::Contract(ContractError::ForgedAppend { field: got }) if *got == field),
            "forged {field}: {failure:?}"
        );
        let after = Witness::capture(&*store, id).await;
        assert_eq!(
            after.events, before.events,
            "forged {field}: the log is as before"
        );
    }
}
