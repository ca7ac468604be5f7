//! The simulated world: one execution in a [`MemoryStore`] and the actors
//! racing over it.
//!
//! It is a plain value (`Clone + Eq + Hash`) because the exhaustive search
//! deduplicates states by it: two schedules that reach equal worlds have the
//! same futures, so only one of them needs exploring.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use loomfence_core::{Capability, Envelope, ExecutionId, KernelKind, MemoryStore, NewEvent};

use crate::actor::{Actor, AuditEvent, DeletePhase, Role};
use crate::error::SimError;

/// The one execution every actor works on.
pub const EXECUTION: &str = "parent";

/// [`EXECUTION`] as an id, for store calls.
pub fn execution_id() -> Result<ExecutionId, SimError> {
    Ok(ExecutionId::new(EXECUTION)?)
}

/// How the store answers a resume's append, and for the regrown-log
/// control its conditional operations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum StoreMode {
    /// As [`MemoryStore`] does: every action as the machine asks for it.
    #[default]
    Faithful,
    /// The negative control of the delete race: an
    /// [`Action::AppendIfParked`](loomfence_core::Action) that carries a
    /// token is performed as a plain fenced append, without the park check,
    /// which is what the machine once asked for (`Action::Append`
    /// under the token). A delete between the acquire and that append then
    /// lets the resume recreate the log.
    PlainFencedAppend,
    /// The negative control of the regrown log: `acquire_fence_if` and
    /// `append_if_parked` whose `park_seq` names an event of the log that
    /// is not a park are answered as the stores answered before they
    /// checked the kind there (inside the log with no answering event after
    /// it was enough). After a delete, a body's step and an audit record
    /// grow a new log back past the park's sequence, and a resumer whose
    /// view predates the delete takes it for the park.
    NoParkKindCheck,
}

/// The log the world was built with: what "the workload wrote". Shared by
/// every world of a search, so it hashes to nothing (equal worlds still have
/// equal hashes) and is compared only when a delete makes it matter.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Workload(Arc<[Envelope]>);

impl Hash for Workload {
    fn hash<H: Hasher>(&self, _state: &mut H) {}
}

/// A store, the park being raced for, and the actors.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct World {
    /// The execution (validated once, so stepping never fails on the id).
    execution: ExecutionId,
    /// All logs and tokens.
    store: MemoryStore,
    /// How the store answers resume appends.
    mode: StoreMode,
    /// The log when the world was built.
    workload: Workload,
    /// The sequence of the park the resumers answer.
    park_seq: u64,
    /// The log's head when the world was built: resumes at or before it were
    /// written by the scenario, not by an actor, and are not anyone's win.
    start_head: u64,
    /// The participants, in the order schedules index them.
    actors: Vec<Actor>,
}

impl World {
    /// The design's starting point: `EXECUTION_STARTED` then an unfenced
    /// `EXECUTION_SUSPENDED` (the park, at sequence 2, token 0), no actors.
    pub fn parked() -> Result<Self, SimError> {
        let mut store = MemoryStore::new();
        let written = store.append_many(
            &execution_id()?,
            vec![
                NewEvent::kernel(KernelKind::ExecutionStarted, 1),
                NewEvent::kernel(KernelKind::ExecutionSuspended, 2),
            ],
        )?;
        let park_seq = written.last().map_or(0, |park| park.sequence);
        Self::from_store(store, park_seq)
    }

    /// A world over a store a scenario prepared by hand (an answered park,
    /// tokens already taken), whose resumers answer `park_seq`.
    pub fn from_store(store: MemoryStore, park_seq: u64) -> Result<Self, SimError> {
        let execution = execution_id()?;
        let workload = Workload(store.read_range(&execution, 1, None)?.into());
        let start_head = store.head(&execution);
        Ok(Self {
            execution,
            store,
            mode: StoreMode::Faithful,
            workload,
            park_seq,
            start_head,
            actors: Vec::new(),
        })
    }

    /// Adds a resumer answering the world's park. Labels should be unique:
    /// schedules and reports name actors by them.
    #[must_use]
    pub fn with_resumer(self, label: char, capability: Capability) -> Self {
        let park_seq = self.park_seq;
        self.with_resumer_at(label, capability, park_seq)
    }

    /// Adds a resumer answering `park_seq`, which need not be the park (the
    /// design's "a sequence that is not a park").
    #[must_use]
    pub fn with_resumer_at(mut self, label: char, capability: Capability, park_seq: u64) -> Self {
        let actor = Actor::resumer(label, self.execution.clone(), park_seq, capability);
        self.actors.push(actor);
        self
    }

    /// Adds a supervisor that acquires once, as `via` allows, and dies.
    #[must_use]
    pub fn with_dead_acquirer(mut self, label: char, via: Capability) -> Self {
        self.actors.push(Actor::dead_acquirer(label, via));
        self
    }

    /// Adds an unfenced appender of `event`.
    #[must_use]
    pub fn with_auditor(mut self, label: char, event: AuditEvent) -> Self {
        self.actors.push(Actor::auditor(label, event));
        self
    }

    /// Adds a deleter: retention deleting the execution's log in one step.
    #[must_use]
    pub fn with_deleter(mut self, label: char) -> Self {
        self.actors.push(Actor::deleter(label));
        self
    }

    /// The same world over a store answering as `mode` says.
    #[must_use]
    pub fn in_mode(mut self, mode: StoreMode) -> Self {
        self.mode = mode;
        self
    }

    /// How the store answers resume appends.
    #[must_use]
    pub fn mode(&self) -> StoreMode {
        self.mode
    }

    /// The log the world was built with.
    #[must_use]
    pub fn workload(&self) -> &[Envelope] {
        &self.workload.0
    }

    /// Whether a deleter has deleted the log (whatever was written since).
    #[must_use]
    pub fn deleted(&self) -> bool {
        self.actors.iter().any(|actor| {
            matches!(
                actor.role,
                Role::Deleter(DeletePhase::Deleted { existed: true })
            )
        })
    }

    /// Whether stepping actor `index` now deletes the log while some resumer
    /// holds a token it acquired and has not appended under yet: the race
    /// of a resume against a delete, which the searches count to show they
    /// reach it.
    #[must_use]
    pub fn deletes_under_token(&self, index: usize) -> bool {
        self.actors
            .get(index)
            .is_some_and(Actor::is_pending_deleter)
            && self
                .actors
                .iter()
                .any(|actor| actor.holds_fence().is_some())
    }

    /// The store as it stands.
    #[must_use]
    pub fn store(&self) -> &MemoryStore {
        &self.store
    }

    /// The park being raced for.
    #[must_use]
    pub fn park_seq(&self) -> u64 {
        self.park_seq
    }

    /// The head when the world was built.
    #[must_use]
    pub fn start_head(&self) -> u64 {
        self.start_head
    }

    /// The actors, in schedule-index order.
    #[must_use]
    pub fn actors(&self) -> &[Actor] {
        &self.actors
    }

    /// The actor a schedule letter names.
    #[must_use]
    pub fn actor(&self, label: char) -> Option<&Actor> {
        self.actors.iter().find(|actor| actor.label == label)
    }

    /// The schedule index of the actor labelled `label`.
    #[must_use]
    pub fn index_of(&self, label: char) -> Option<usize> {
        self.actors.iter().position(|actor| actor.label == label)
    }

    /// The actors a scheduler may step now.
    pub fn enabled(&self) -> impl Iterator<Item = usize> + '_ {
        self.actors
            .iter()
            .enumerate()
            .filter(|(_, actor)| actor.is_enabled())
            .map(|(index, _)| index)
    }

    /// Whether any actor can still act: a schedule is over when none can.
    #[must_use]
    pub fn is_quiescent(&self) -> bool {
        self.enabled().next().is_none()
    }

    /// Whether every resumer has given up (refused or contended) without a
    /// crash and none landed: a finished race that left the park open. Safe,
    /// but it needs a later retry, so the searches count it. A deleted log
    /// has no park left to retry, so it never counts.
    #[must_use]
    pub fn every_resumer_gave_up(&self) -> bool {
        if self.deleted() {
            return false;
        }
        let mut resumers = self
            .actors
            .iter()
            .filter(|actor| matches!(actor.role, Role::Resumer(_)))
            .peekable();
        resumers.peek().is_some()
            && resumers.all(|actor| !actor.crashed && matches!(actor.resume_result(), Some(Err(_))))
    }

    /// The whole log.
    pub fn log(&self) -> Result<Vec<Envelope>, SimError> {
        Ok(self.store.read_range(&self.execution, 1, None)?)
    }

    /// The execution's current token.
    #[must_use]
    pub fn current_fence(&self) -> u64 {
        self.store.current_fence(&self.execution)
    }

    /// The execution being raced for.
    #[must_use]
    pub fn execution(&self) -> &ExecutionId {
        &self.execution
    }

    /// Steps actor `index` once; a finished or crashed actor is a no-op
    /// (`Ok(false)`), so a fixed letter schedule stays meaningful after the
    /// actor it names is done.
    pub fn step(&mut self, index: usize) -> Result<bool, SimError> {
        let actors = self.actors.len();
        let actor = self.actors.get_mut(index).ok_or(SimError::NoSuchActor {
            actor: index,
            actors,
        })?;
        actor.step(&mut self.store, &self.execution, self.park_seq, self.mode)
    }

    /// Steps the actor labelled `label` once.
    pub fn step_label(&mut self, label: char) -> Result<bool, SimError> {
        let index = self.index_of(label).ok_or(SimError::NoSuchLabel(label))?;
        self.step(index)
    }

    /// Kills actor `index`: it is never stepped again. Returns whether it
    /// was enabled (crashing a finished actor changes nothing).
    pub fn crash(&mut self, index: usize) -> Result<bool, SimError> {
        let actors = self.actors.len();
        let actor = self.actors.get_mut(index).ok_or(SimError::NoSuchActor {
            actor: index,
            actors,
        })?;
        let was_enabled = actor.is_enabled();
        if was_enabled {
            actor.crashed = true;
        }
        Ok(was_enabled)
    }
}
