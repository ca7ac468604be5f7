//! The inbox world: one execution `e` (its log and token in a
//! [`MemoryStore`]), the [`InboxTable`] and [`TimerTable`], a clock only the
//! re-driver moves, and the actors. A plain value (`Clone + Eq + Hash`), so
//! a search can deduplicate worlds and a seed replays to the same one.

use loomfence_core::{
    ExecutionId, ExecutionView, KernelKind, MemoryStore, NewEvent,
    inbox::{DeliverMachine, DeliverOptions, InboxTable, Message, MessageKey},
    park::{Wait, park_payload},
    redrive::RedrivePolicy,
    supervise::OnContention,
    timer::TimerTable,
};

use super::actors::{Body, Dead, Redriver, Sender, Wake};
use super::error::InboxSimError;
use super::pump::{CrashPoint, Deliverer, Env, Mode};

/// The execution every world is about.
pub const EXECUTION: &str = "e";
/// The channel its parks wait on.
pub const CHANNEL: &str = "c";
/// When the senders send (each its own ms after it) and the clock starts.
pub const START: i64 = 1_000;
/// When the TIMER wait of a park on a message or a timer is due.
pub const WAKE_AT: i64 = 1_500;

/// The execution, as an id.
pub fn execution_id() -> Result<ExecutionId, InboxSimError> {
    Ok(ExecutionId::new(EXECUTION)?)
}

/// Where the execution is when the world starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Start {
    /// Parked on `[MESSAGE c]`.
    Parked,
    /// Parked on `[MESSAGE c, TIMER]`, the timer's wake a rival.
    ParkedWithTimer,
    /// Running: its body parks on `[MESSAGE c]` as a step of the schedule
    /// and then runs the park-time check, so a message can arrive first.
    ParksLater,
}

/// Which rivals a world holds besides the sender `S` of `m1`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Cast {
    /// Where the execution starts.
    pub start: Start,
    /// `R`: a second sender of `m1` (a retry).
    pub retry: bool,
    /// `O`: a sender of `m2` on the same channel.
    pub other: bool,
    /// Dead acquirers `P, Q, U, V, W, Y` (at most six: letters that no
    /// other actor uses).
    pub dead: usize,
    /// Which senders the search may crash, by label.
    pub crashable: Vec<char>,
    /// What a contended sender does (its intent row covers it either
    /// way).
    pub on_contention: OnContention,
    /// What a contended park-time check does (the park's intent row covers
    /// it either way; [`OnContention::WriteRow`] only retries sooner).
    pub park_check: OnContention,
    /// Whether the body parks through [`DeliverMachine::park`] (the
    /// design: an intent row, then the park, then the check), or, as a
    /// control, appends the park itself and runs a bare check, which
    /// leaves no row behind a contended check.
    pub park_intent: bool,
    /// How hosts perform resumes.
    pub mode: Mode,
    /// Whether the re-driver races the others ([`Drain::Racing`]) or
    /// fires only when nobody else can act ([`Drain::AtTheEnd`]).
    pub drain: Drain,
}

/// When the re-driver fires its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Drain {
    /// Whenever a row is in the table: a slow sender's intent row fires
    /// while it still delivers.
    Racing,
    /// Only when no other actor can act: the rows left behind by crashed or
    /// contended deliveries, fired to quiescence after the race. Keeps an
    /// exhaustive search to the interleavings of the race itself.
    AtTheEnd,
}

/// One participant.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Actor {
    /// A sender.
    Sender(Box<Sender>),
    /// The TIMER wait's wake.
    Wake(Box<Wake>),
    /// A dead acquirer.
    Dead(Dead),
    /// The execution's body.
    Body(Box<Body>),
    /// The inbox re-driver.
    Redriver(Box<Redriver>),
}

/// A move of a schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Move {
    /// Actor `n` takes one step.
    Step(usize),
    /// Sender `n` crashes where it is.
    Crash(usize),
}

/// Everything in one world.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct World {
    /// The execution's log and token.
    pub store: MemoryStore,
    /// The messages.
    pub inbox: InboxTable,
    /// The intent and re-drive rows.
    pub timers: TimerTable,
    /// The clock, ms.
    pub now: i64,
    /// How hosts perform resumes.
    pub mode: Mode,
    /// When the re-driver fires.
    pub drain: Drain,
    /// The participants, in label order.
    pub actors: Vec<Actor>,
    /// Their labels.
    pub labels: Vec<char>,
}

/// The message `m1` (or `m2`) a sender sends.
pub fn message(message_id: &str, sent_at: i64) -> Result<Message, InboxSimError> {
    Ok(Message {
        key: MessageKey::new(execution_id()?, CHANNEL, message_id)?,
        payload: serde_json::json!({ "id": message_id }),
        sent_at,
    })
}

impl World {
    /// Builds the world of `cast`.
    pub fn new(cast: &Cast) -> Result<Self, InboxSimError> {
        let id = execution_id()?;
        let mut store = MemoryStore::new();
        store.append(&id, NewEvent::kernel(KernelKind::ExecutionStarted, 0))?;
        let channel = Wait::Message {
            channel: CHANNEL.to_owned(),
        };
        let first = match cast.start {
            Start::ParkedWithTimer => vec![channel.clone(), Wait::Timer { wake_at: WAKE_AT }],
            _ => vec![channel.clone()],
        };
        if cast.start != Start::ParksLater {
            store.append(
                &id,
                NewEvent::kernel(KernelKind::ExecutionSuspended, 0)
                    .with_payload(park_payload(&first)),
            )?;
        }
        let options = DeliverOptions {
            on_contention: cast.on_contention,
            ..DeliverOptions::default()
        };
        let park_check = DeliverOptions {
            on_contention: cast.park_check,
            ..DeliverOptions::default()
        };
        let messages = 1 + u32::from(cast.other);
        let mut actors = Vec::new();
        let mut labels = Vec::new();
        let mut senders = vec![('S', "m1", START)];
        if cast.retry {
            senders.push(('R', "m1", START));
        }
        if cast.other {
            senders.push(('O', "m2", START + 1));
        }
        for (label, message_id, sent_at) in senders {
            let machine = DeliverMachine::notify(message(message_id, sent_at)?, options)?;
            actors.push(Actor::Sender(Box::new(Sender {
                label,
                delivery: Deliverer::new(machine),
                may_crash: cast.crashable.contains(&label),
                crashed: None,
            })));
            labels.push(label);
        }
        if cast.start == Start::ParkedWithTimer {
            actors.push(Actor::Wake(Box::new(Wake::new(id.clone(), WAKE_AT)?)));
            labels.push('T');
        }
        for label in ['P', 'Q', 'U', 'V', 'W', 'Y'].into_iter().take(cast.dead) {
            actors.push(Actor::Dead(Dead { took: None }));
            labels.push(label);
        }
        // Enough parks for every message, and one more for the timer.
        let parks = messages + u32::from(cast.start == Start::ParkedWithTimer);
        actors.push(Actor::Body(Box::new(Body {
            parks_written: u32::from(cast.start != Start::ParksLater),
            parks,
            waits: vec![channel],
            check: None,
            options: park_check,
            intent: cast.park_intent,
            fenced_out: false,
        })));
        labels.push('B');
        actors.push(Actor::Redriver(Box::new(Redriver::new(
            RedrivePolicy::default(),
        ))));
        labels.push('X');
        Ok(Self {
            store,
            inbox: InboxTable::new(),
            timers: TimerTable::new(),
            now: START,
            mode: cast.mode,
            drain: cast.drain,
            actors,
            labels,
        })
    }

    /// The execution's view.
    pub fn view(&self) -> Result<ExecutionView, InboxSimError> {
        let log = self.store.read_range(&execution_id()?, 1, None)?;
        Ok(ExecutionView::fold(&log))
    }

    /// Every move possible now: a step of each enabled actor, then a crash
    /// of each sender at a crash point.
    pub fn moves(&self) -> Result<Vec<Move>, InboxSimError> {
        let view = self.view()?;
        let rows = !self.timers.is_empty();
        let mut moves = Vec::new();
        let mut redrivers = Vec::new();
        for (index, actor) in self.actors.iter().enumerate() {
            let enabled = match actor {
                Actor::Sender(sender) => sender.is_enabled(),
                Actor::Wake(wake) => wake.is_enabled(),
                Actor::Dead(dead) => dead.took.is_none(),
                Actor::Body(body) => body.is_enabled(&view),
                Actor::Redriver(redriver) => {
                    if redriver.is_enabled(rows) {
                        redrivers.push(Move::Step(index));
                    }
                    false
                }
            };
            if enabled {
                moves.push(Move::Step(index));
            }
        }
        if self.drain == Drain::Racing || moves.is_empty() {
            moves.extend(redrivers);
        }
        for (index, actor) in self.actors.iter().enumerate() {
            if let Actor::Sender(sender) = actor
                && sender.crash_point().is_some()
            {
                moves.push(Move::Crash(index));
            }
        }
        Ok(moves)
    }

    /// Where a crash of actor `index` would catch it.
    #[must_use]
    pub fn crash_point(&self, index: usize) -> Option<CrashPoint> {
        match self.actors.get(index) {
            Some(Actor::Sender(sender)) => sender.crash_point(),
            _ => None,
        }
    }

    /// Makes one move.
    pub fn apply(&mut self, step: Move) -> Result<(), InboxSimError> {
        let id = execution_id()?;
        let World {
            store,
            inbox,
            timers,
            now,
            mode,
            actors,
            ..
        } = self;
        let mut env = Env {
            store,
            inbox,
            timers,
            now: *now,
            mode: *mode,
        };
        match step {
            Move::Crash(index) => {
                if let Some(Actor::Sender(sender)) = actors.get_mut(index) {
                    sender.crashed = sender.delivery.crash_point();
                }
            }
            Move::Step(index) => match actors.get_mut(index) {
                Some(Actor::Sender(sender)) => sender.delivery.step(&mut env)?,
                Some(Actor::Wake(wake)) => wake.step(&mut env)?,
                Some(Actor::Dead(dead)) => dead.step(&mut env, &id)?,
                Some(Actor::Body(body)) => body.step(&mut env, &id)?,
                Some(Actor::Redriver(redriver)) => redriver.step(&mut env, now)?,
                None => return Err(InboxSimError::UnknownAction("a move of no actor")),
            },
        }
        Ok(())
    }

    /// A schedule in letters: `S` a step of `S`, `s!` its crash.
    #[must_use]
    pub fn render(&self, moves: &[Move]) -> String {
        moves
            .iter()
            .map(|step| match *step {
                Move::Step(index) => self.labels[index].to_string(),
                Move::Crash(index) => format!("{}!", self.labels[index].to_ascii_lowercase()),
            })
            .collect()
    }
}
