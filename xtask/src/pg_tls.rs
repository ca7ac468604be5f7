//! TLS for the throwaway PostgreSQL server: a certificate authority made
//! for the run and a server certificate it signs, so the TLS tests have a
//! server to verify (and to fail to verify) without any file of the
//! machine's.
//!
//! The server certificate names `localhost` only: a client that connects
//! to `127.0.0.1` with `verify-full` must be refused, which is how the tests
//! check the host name is verified.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

use crate::cmd;

/// Where the tests find the authority's certificate (PEM).
pub(crate) const CA_VAR: &str = "LOOMFENCE_PG_TLS_CA";

/// The files of one run, in a folder removed when dropped.
pub(crate) struct TlsFiles {
    /// The folder.
    dir: PathBuf,
    /// The authority's certificate, for the clients' `sslrootcert`.
    pub(crate) ca: PathBuf,
    /// The server's certificate, for `ssl_cert_file`.
    pub(crate) cert: PathBuf,
    /// The server's private key, for `ssl_key_file`.
    pub(crate) key: PathBuf,
}

impl TlsFiles {
    /// A new authority and server certificate in `dir` (created). The key
    /// is readable by the server's user only, as PostgreSQL demands: as
    /// root, pg_virtualenv runs the server as `postgres`, which then owns it.
    pub(crate) fn generate(dir: &Path) -> Result<Self> {
        fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
        let ca_key = KeyPair::generate()?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "loomfence test authority");
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let server_key = KeyPair::generate()?;
        let mut server_params = CertificateParams::new(vec!["localhost".to_owned()])?;
        server_params
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        let server_cert = server_params.signed_by(&server_key, &ca_cert, &ca_key)?;
        let files = Self {
            ca: dir.join("ca.crt"),
            cert: dir.join("server.crt"),
            key: dir.join("server.key"),
            dir: dir.to_owned(),
        };
        fs::write(&files.ca, ca_cert.pem())?;
        fs::write(&files.cert, server_cert.pem())?;
        fs::write(&files.key, server_key.serialize_pem())?;
        restrict(&files.key)?;
        Ok(files)
    }
}

impl Drop for TlsFiles {
    /// Best effort: a leftover in the temporary directory harms nothing.
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Mode 0600, and owned by `postgres` when this runs as root (the user
/// pg_virtualenv then runs the server as).
fn restrict(key: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    fs::set_permissions(key, fs::Permissions::from_mode(0o600))?;
    let root = cmd::probe(Command::new("id").arg("-u")).is_some_and(|uid| uid.trim() == "0");
    if root {
        let id = |flag: &str| -> Result<u32> {
            let text = cmd::probe(Command::new("id").args([flag, "postgres"]))
                .context("as root, the server runs as `postgres`, and there is no such user")?;
            Ok(text.trim().parse()?)
        };
        std::os::unix::fs::chown(key, Some(id("-u")?), Some(id("-g")?))
            .with_context(|| key.display().to_string())?;
    }
    Ok(())
}
