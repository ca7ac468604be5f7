//! (supervisor: being written)
