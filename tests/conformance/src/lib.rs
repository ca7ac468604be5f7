//! The conformance kit: one suite of cases that every [`EventStore`] adapter
//! passes unchanged.
//!
//! It follows the shape of `object_store`'s shared integration module: the
//! cases are plain `pub async fn`s over a store, and [`run_all`] runs every
//! case that the store's [`Capability`] admits against fresh stores from a
//! factory. An adapter's test file is one call:
//!
//! ```
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() {
//! use std::sync::Arc;
//! use loomfence_store::{EventStore, MemoryEventStore};
//!
//! let report = loomfence_conformance::run_all("memory", || async {
//!     Arc::new(MemoryEventStore::new()) as Arc<dyn EventStore>
//! })
//! .await;
//! assert!(report.passed >= 25);
//! # }
//! ```
//!
//! Adapter differences are capability flags, never forked cases: a case
//! declares what it [`Needs`], and a store that lacks it is reported as "not
//! applicable" rather than silently passing. The case `capability_is_honest`
//! checks that a store refuses exactly what its capability leaves out.
//!
//! Cases panic on failure, like `#[test]` bodies. [`run_all`] runs each one
//! in its own task, so one failure does not hide the others, and panics at
//! the end with the list of every case that failed.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use loomfence_core::Capability;
use loomfence_store::forwarding::Forward;
use loomfence_store::{EventStore, Forwarding};

pub mod cases;
pub mod inbox;
pub mod mixed;
pub mod support;
pub mod timers;

/// A store shared by a case and the tasks it spawns.
pub type Store = Arc<dyn EventStore>;

/// `store` behind a [`Forwarding`] decorator with hooks that change
/// nothing. Every adapter runs the kit through it too: a decorator that
/// forwards everything must pass every case, or the tests and tools built
/// on it would be testing something other than the store.
#[must_use]
pub fn forwarded(store: Store) -> Store {
    Arc::new(Forwarding::new(store, Forward))
}

/// A case's future, boxed so every case fits one table.
pub type CaseFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What a case requires of a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Any store, fencing or not.
    Any,
    /// Tokens and the append guard ([`Capability::fences`]).
    Fencing,
    /// The conditional acquire ([`Capability::is_conditional`]).
    Conditional,
}

impl Needs {
    /// Whether a store with `capability` can run a case that needs this.
    #[must_use]
    pub fn admits(self, capability: Capability) -> bool {
        match self {
            Needs::Any => true,
            Needs::Fencing => capability.fences(),
            Needs::Conditional => capability.is_conditional(),
        }
    }
}

/// One case of the kit.
#[derive(Clone, Copy)]
pub struct Case {
    /// The case's function name, used in reports and to filter.
    pub name: &'static str,
    /// What the store must offer for the case to apply.
    pub needs: Needs,
    /// Runs the case against a store; panics on failure.
    pub run: fn(Store) -> CaseFuture,
}

/// How a run of the kit went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Cases that ran and passed.
    pub passed: usize,
    /// Cases skipped because the store's capability excludes them.
    pub not_applicable: Vec<&'static str>,
    /// Cases that failed, with their panic message.
    pub failed: Vec<(&'static str, String)>,
}

/// Runs every case of the kit against stores from `make_store`, one fresh
/// store per case, and panics if any case failed.
///
/// `label` names the adapter in the printed lines. Set `LOOMFENCE_CASE` to a
/// substring to run only the matching cases while debugging.
pub async fn run_all<F, Fut>(label: &str, mut make_store: F) -> Report
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Store>,
{
    let filter = std::env::var("LOOMFENCE_CASE").ok();
    let mut report = Report::default();
    for case in cases::ALL {
        if filter.as_deref().is_some_and(|f| !case.name.contains(f)) {
            continue;
        }
        let store = make_store().await;
        if !case.needs.admits(store.capability()) {
            println!(
                "conformance[{label}] n/a  {} (needs {:?})",
                case.name, case.needs
            );
            report.not_applicable.push(case.name);
            continue;
        }
        match tokio::spawn((case.run)(store)).await {
            Ok(()) => {
                println!("conformance[{label}] ok   {}", case.name);
                report.passed += 1;
            }
            Err(join) => {
                let message = panic_message(join);
                println!("conformance[{label}] FAIL {}: {message}", case.name);
                report.failed.push((case.name, message));
            }
        }
    }
    println!(
        "conformance[{label}]: {} passed, {} failed, {} not applicable",
        report.passed,
        report.failed.len(),
        report.not_applicable.len()
    );
    assert!(
        report.failed.is_empty(),
        "conformance[{label}]: {} case(s) failed: {:#?}",
        report.failed.len(),
        report.failed
    );
    report
}

/// One case of a kit whose stores all take every case (the timer and inbox
/// kits): its name and its body over a store of type `S`.
pub struct KitCase<S> {
    /// The case's function name, used in reports and to filter.
    pub name: &'static str,
    /// Runs the case against a store; panics on failure.
    pub run: fn(S) -> Pin<Box<dyn Future<Output = ()> + Send>>,
}

// Derived `Clone`/`Copy` would ask the same of `S`; a case is a name and
// a function pointer whatever its store.
impl<S> Clone for KitCase<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for KitCase<S> {}

/// Runs each of `cases` against a fresh store from `make_store`, in its
/// own task, prints a line per case headed `kit[label]`, and panics at the
/// end with every case that failed. `LOOMFENCE_CASE` filters cases by
/// substring, as for the event kit.
pub(crate) async fn run_kit<S, F, Fut>(
    kit: &str,
    label: &str,
    cases: &[KitCase<S>],
    mut make_store: F,
) -> Report
where
    S: Send + 'static,
    F: FnMut() -> Fut,
    Fut: Future<Output = S>,
{
    let filter = std::env::var("LOOMFENCE_CASE").ok();
    let mut report = Report::default();
    for case in cases {
        if filter.as_deref().is_some_and(|f| !case.name.contains(f)) {
            continue;
        }
        let store = make_store().await;
        match tokio::spawn((case.run)(store)).await {
            Ok(()) => {
                println!("{kit}[{label}] ok   {}", case.name);
                report.passed += 1;
            }
            Err(join) => {
                let message = panic_message(join);
                println!("{kit}[{label}] FAIL {}: {message}", case.name);
                report.failed.push((case.name, message));
            }
        }
    }
    println!(
        "{kit}[{label}]: {} passed, {} failed",
        report.passed,
        report.failed.len()
    );
    assert!(
        report.failed.is_empty(),
        "{kit}[{label}]: {} case(s) failed: {:#?}",
        report.failed.len(),
        report.failed
    );
    report
}

/// The text of a case task's panic.
pub(crate) fn panic_message(join: tokio::task::JoinError) -> String {
    match join.try_into_panic() {
        Ok(payload) => payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "non-text panic".to_owned()),
        Err(join) => join.to_string(),
    }
}
