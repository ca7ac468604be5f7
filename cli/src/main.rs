//! The loomfence command line (being written).
fn main() {}
