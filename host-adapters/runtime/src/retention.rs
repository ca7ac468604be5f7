//! Where a retention [`Sweep`](crate::Sweep) puts each log before it
//! deletes it.
//!
//! You need it for sweeps that archive (`SweepOptions::archive`): a
//! [`JsonLinesArchive`] file, or an [`ArchiveSink`] of your own handed to
//! [`Sweep::archive`](crate::Sweep::archive).

pub use crate::sweep::archive::{ArchiveSink, JsonLinesArchive};
