//! TLS to the server: rustls, with libpq's `sslmode` meanings.
//!
//! One connector serves every mode (tokio-postgres decides from the
//! configuration's `ssl_mode` whether to ask for TLS at all); what differs
//! is how the server's certificate is judged:
//!
//! - `prefer` and `require` encrypt without judging it (anyone on the path
//!   could stand in for the server), except that a `require` given an
//!   `sslrootcert` checks the chain, as libpq does;
//! - `verify-ca` checks the chain against the roots, not the name;
//! - `verify-full` checks both: the only mode that stops a stand-in.
//!
//! The handshake's signatures are checked in every mode, so the session is
//! bound to the certificate the server showed.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::connect_url::{ConnectUrl, RootCert, SslMode};
use crate::error::OpenError;

/// The connector for `url`'s TLS settings. Reads the roots a verifying mode
/// needs now, so a missing or unreadable `sslrootcert` fails the open, not
/// a connection later.
pub(crate) fn connector(url: &ConnectUrl) -> Result<MakeRustlsConnect, OpenError> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match (url.ssl_mode, url.root_cert_given) {
        (SslMode::Disable | SslMode::Prefer, _) | (SslMode::Require, false) => Arc::new(Judge {
            chain: None,
            algorithms: provider.signature_verification_algorithms,
        }),
        (SslMode::Require | SslMode::VerifyCa, _) => Arc::new(Judge {
            chain: Some(webpki(url, &provider)?),
            algorithms: provider.signature_verification_algorithms,
        }),
        (SslMode::VerifyFull, _) => webpki(url, &provider)?,
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| OpenError::Tls {
            reason: e.to_string(),
        })?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// rustls's WebPKI verifier over the URL's roots.
fn webpki(
    url: &ConnectUrl,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<WebPkiServerVerifier>, OpenError> {
    let roots = roots(&url.root_cert)?;
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(provider))
        .build()
        .map_err(|e| OpenError::Tls {
            reason: format!("no usable root certificate: {e}"),
        })
}

/// The trusted roots: the file's certificates, or the system's.
fn roots(root: &RootCert) -> Result<RootCertStore, OpenError> {
    let mut store = RootCertStore::empty();
    match root {
        RootCert::File(path) => {
            let unreadable = |reason: String| OpenError::RootCert {
                path: path.display().to_string(),
                reason,
            };
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| unreadable(e.to_string()))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| unreadable(e.to_string()))?;
            if certs.is_empty() {
                return Err(unreadable("it holds no PEM certificate".to_owned()));
            }
            for cert in certs {
                store.add(cert).map_err(|e| unreadable(e.to_string()))?;
            }
        }
        RootCert::System => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(OpenError::Tls {
                    reason: "the system has no root certificates to verify the server with; give sslrootcert".to_owned(),
                });
            }
        }
    }
    Ok(store)
}

/// The judge of `prefer`, `require` and `verify-ca` (`verify-full` is
/// rustls's WebPKI verifier as it is): with `chain`, the certificate must
/// chain to a trusted root, its name unchecked (`verify-ca`, and `require`
/// with a root file); without, any certificate is taken (`prefer`,
/// `require`). Either way the handshake's signatures are checked against
/// the certificate shown.
#[derive(Debug)]
struct Judge {
    /// The chain's verifier, if the chain is judged.
    chain: Option<Arc<WebPkiServerVerifier>>,
    /// The signature algorithms of the provider.
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Judge {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            // WebPKI checks the name last, once the chain holds.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Why a connection failed, in words an operator acts on: a certificate
/// refused says which check it failed, anything else is the driver's
/// message with its causes. `host` is the host connected to.
pub(crate) fn explain(error: &tokio_postgres::Error, host: &str) -> String {
    if let Some(tls) = chain(error).find_map(rustls_error) {
        return match tls {
            rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            ) => format!("certificate not valid for host {host}"),
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
                "certificate signed by an authority not in sslrootcert (or the system's roots)"
                    .to_owned()
            }
            rustls::Error::InvalidCertificate(
                CertificateError::Expired | CertificateError::ExpiredContext { .. },
            ) => "certificate expired".to_owned(),
            other => format!("TLS handshake failed: {other}"),
        };
    }
    let mut text = String::new();
    for cause in chain(error).map(ToString::to_string) {
        if !text.contains(&cause) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&cause);
        }
    }
    text
}

/// Whether `error` is a TLS refusal that trying again will not change: a
/// certificate refused, or a server that does not offer TLS to a mode that
/// requires it.
pub(crate) fn is_tls_refusal(error: &tokio_postgres::Error) -> bool {
    chain(error).any(|cause| {
        rustls_error(cause).is_some() || cause.to_string().contains("server does not support TLS")
    })
}

/// `error`, then each of its sources in turn.
fn chain<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(error), |current| current.source())
}

/// `error` as rustls's own, directly or inside the `io::Error` tokio-rustls
/// wraps it in.
fn rustls_error<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    error.downcast_ref::<rustls::Error>().or_else(|| {
        error
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    })
}
