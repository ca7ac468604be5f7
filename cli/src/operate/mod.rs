//! The operator's commands: they work on a store somebody else made and
//! keeps, and never create, drop or remove it behind the operator's back.

pub(crate) mod init;
pub(crate) mod recover;
pub(crate) mod retention;
