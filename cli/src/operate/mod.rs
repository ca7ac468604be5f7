//! The operator's commands: they work on a store somebody else made and
//! keeps, and never create, drop or remove it behind the operator's back.
//! `retention` deletes what a sweep may; `inspect` and `timers` only read.

pub(crate) mod init;
pub(crate) mod inspect;
pub(crate) mod recover;
pub(crate) mod retention;
mod target;
mod timer_rows;
pub(crate) mod timers;
mod when;
