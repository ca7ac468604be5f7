//! Installing Debian packages the pipeline needs (PostgreSQL's server,
//! Chromium) on a fresh machine, when xtask runs as root with apt-get.

use std::process::{Command, Stdio};

use crate::cmd;
use crate::error::XtaskError;

/// Whether xtask runs as root (`id -u` is 0). Asking the OS for the user id
/// directly would need `unsafe` code, which the workspace forbids.
pub(crate) fn is_root() -> bool {
    cmd::probe(Command::new("id").arg("-u")).as_deref() == Some("0")
}

/// Whether apt-get is there to install with.
pub(crate) fn available() -> bool {
    cmd::probe(Command::new("apt-get").arg("--version")).is_some()
}

/// `apt-get update`, then installs `package` without recommends,
/// non-interactively.
pub(crate) fn install(step: &str, package: &str) -> Result<(), XtaskError> {
    cmd::run(step, apt_get().arg("update"))?;
    cmd::run(
        step,
        apt_get().args(["install", "-y", "--no-install-recommends", package]),
    )
}

/// An `apt-get` command that never asks questions.
fn apt_get() -> Command {
    let mut command = Command::new("apt-get");
    command
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(Stdio::null());
    command
}
