//! The harness: the commands that exercise the kernel rather than operate
//! a store. `race` and `bench` make a store of their own and remove it;
//! `worker` runs synthetic bodies as one node of a fleet, and `fleet`
//! starts several workers, kills them and judges the logs.

pub(crate) mod bench;
pub(crate) mod body;
pub(crate) mod fleet;
pub(crate) mod listing;
pub(crate) mod race;
pub(crate) mod redrive;
pub(crate) mod start_line;
pub(crate) mod worker;
