//! The operator's commands: they work on a store somebody keeps, and never
//! drop or remove it. `init` makes one (and only migrates one that is
//! already a loomfence store), `retention` deletes what a sweep may,
//! `recover` moves stuck executions on, and `inspect` and `timers` only
//! read, through a read-only open.

pub(crate) mod init;
pub(crate) mod inspect;
pub(crate) mod recover;
pub(crate) mod retention;
mod target;
mod timer_rows;
pub(crate) mod timers;
mod when;
