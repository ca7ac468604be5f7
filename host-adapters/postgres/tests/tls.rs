//! TLS to the server, with libpq's `sslmode` meanings, against the
//! throwaway server `cargo xtask test` starts with `ssl=on` and a
//! certificate for `localhost` signed by a CA made for the run
//! (`LOOMFENCE_PG_TLS_CA`). Each refusal is checked for what it says: the
//! server, the port and the cause, and never the password.

mod common;

use std::path::Path;

use loomfence_conformance::support::{AT, id};
use loomfence_core::NewEvent;
use loomfence_postgres::{AcquireStrategy, OpenError, PostgresEventStore};
use loomfence_store::EventStore as _;

/// The URL and the CA, or `None` when the tests may skip.
fn server() -> Option<(String, String)> {
    let url = common::url()?;
    let ca = common::tls_ca()?;
    Some((url, ca.display().to_string()))
}

/// The store at `url`, or the open's refusal.
async fn open(url: &str) -> Result<PostgresEventStore, OpenError> {
    PostgresEventStore::connect(url, common::options()).await
}

/// The store at `url`, which must open and whose connections the server
/// sees as TLS; `what` says why it must.
async fn open_over_tls(url: &str, what: &str) -> PostgresEventStore {
    let store = open(url).await.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(common::over_tls(&store).await, "{what}: not over TLS");
    store
}

/// The refusal of `url`, which must be a connection refusal that names
/// `target` and says `cause`, never `hunter2`, and is not worth retrying.
async fn refused(url: &str, target: &str, cause: &str) {
    let error = open(url).await.expect_err("the connection must be refused");
    let text = error.to_string();
    assert!(
        matches!(
            &error,
            OpenError::Connect {
                retryable: false,
                ..
            }
        ),
        "{url}: {error:?}"
    );
    assert!(text.contains(target), "{url}: {text}");
    assert!(text.contains(cause), "{url}: {text}");
    assert!(!text.contains("hunter2"), "{url}: {text}");
}

/// A CA the server's certificate is not signed by, as a PEM file.
fn other_authority(dir: &Path) -> String {
    let key = rcgen::KeyPair::generate().expect("a key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).expect("a CA");
    let path = dir.join(format!("other-ca-{}.crt", std::process::id()));
    std::fs::write(&path, cert.pem()).expect("writes the CA");
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn verify_full_connects_with_the_right_authority_and_writes_over_tls() {
    let Some((url, ca)) = server() else { return };
    let tls = common::tls_url(
        &url,
        "localhost",
        "postgres",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    let store = open_over_tls(&tls, "verify-full with the server's CA").await;
    let written = store
        .append(&id("tls"), NewEvent::new("STEP", AT))
        .await
        .expect("appends over TLS");
    assert_eq!(written.sequence, 1);
    assert_eq!(
        store
            .read_range(&id("tls"), 1, None)
            .await
            .expect("reads")
            .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn verify_full_refuses_a_wrong_authority_and_a_wrong_host_name() {
    let Some((url, ca)) = server() else { return };
    let port = common::port(&url);
    let dir = std::env::temp_dir();
    let other = other_authority(&dir);
    refused(
        &format!("postgres://postgres:hunter2@localhost:{port}/postgres?sslmode=verify-full&sslrootcert={other}"),
        &format!("postgres@localhost:{port}/postgres"),
        "certificate signed by an authority not in sslrootcert",
    )
    .await;
    // The right CA, but the certificate names localhost, not this address.
    refused(
        &format!("postgres://postgres:hunter2@127.0.0.1:{port}/postgres?sslmode=verify-full&sslrootcert={ca}"),
        &format!("postgres@127.0.0.1:{port}/postgres"),
        "certificate not valid for host 127.0.0.1",
    )
    .await;
    // The same, written as key=value.
    refused(
        &format!("host=127.0.0.1 port={port} user=postgres password=hunter2 dbname=postgres sslmode=verify-full sslrootcert='{ca}'"),
        &format!("127.0.0.1:{port}"),
        "certificate not valid for host 127.0.0.1",
    )
    .await;
    let _ = std::fs::remove_file(other);
}

#[tokio::test(flavor = "multi_thread")]
async fn verify_ca_checks_the_chain_and_not_the_name() {
    let Some((url, ca)) = server() else { return };
    let by_address = common::tls_url(
        &url,
        "127.0.0.1",
        "postgres",
        &format!("sslmode=verify-ca&sslrootcert={ca}"),
    );
    open_over_tls(&by_address, "verify-ca ignores the host name").await;
    let other = other_authority(&std::env::temp_dir());
    refused(
        &common::tls_url(
            &url,
            "127.0.0.1",
            "postgres",
            &format!("sslmode=verify-ca&sslrootcert={other}"),
        ),
        "127.0.0.1",
        "authority not in sslrootcert",
    )
    .await;
    // libpq: `require` with a root file verifies as verify-ca does.
    refused(
        &common::tls_url(
            &url,
            "127.0.0.1",
            "postgres",
            &format!("sslmode=require&sslrootcert={other}"),
        ),
        "127.0.0.1",
        "authority not in sslrootcert",
    )
    .await;
    let _ = std::fs::remove_file(other);
}

#[tokio::test(flavor = "multi_thread")]
async fn require_and_prefer_encrypt_and_disable_does_not() {
    let Some((url, _)) = server() else { return };
    for (mode, encrypted) in [("require", true), ("prefer", true), ("disable", false)] {
        let store = open(&common::tls_url(
            &url,
            "127.0.0.1",
            "postgres",
            &format!("sslmode={mode}"),
        ))
        .await
        .unwrap_or_else(|e| panic!("sslmode={mode}: {e}"));
        assert_eq!(common::over_tls(&store).await, encrypted, "sslmode={mode}");
    }
    // No sslmode is libpq's default, prefer.
    open_over_tls(
        &common::tls_url(
            &url,
            "127.0.0.1",
            "postgres",
            "application_name=tls_default",
        ),
        "no sslmode",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn disable_is_refused_by_a_server_that_requires_tls() {
    let Some((url, _)) = server() else { return };
    let port = common::port(&url);
    // The role `tls_only` is admitted over TLS only (hostssl).
    refused(
        &format!("postgres://tls_only:hunter2@127.0.0.1:{port}/postgres?sslmode=disable"),
        &format!("tls_only@127.0.0.1:{port}/postgres"),
        "no encryption",
    )
    .await;
    open_over_tls(
        &format!("postgres://tls_only@127.0.0.1:{port}/postgres?sslmode=require"),
        "the same role over TLS is admitted",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn require_is_refused_by_a_server_without_tls() {
    // A server that answers the TLS request with 'N', as one with ssl=off.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let port = listener.local_addr().expect("an address").port();
    let server = tokio::spawn(async move {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut request = [0_u8; 8];
            if socket.read_exact(&mut request).await.is_ok() {
                let _ = socket.write_all(b"N").await;
            }
        }
    });
    refused(
        &format!("postgres://app:hunter2@127.0.0.1:{port}/orders?sslmode=verify-full"),
        &format!("app@127.0.0.1:{port}/orders"),
        "server does not support TLS",
    )
    .await;
    server.abort();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreadable_root_file_fails_the_open_before_any_connection() {
    for (contents, why) in [
        (None, "No such file"),
        (Some("not a certificate\n"), "no PEM certificate"),
    ] {
        let path = std::env::temp_dir().join(format!(
            "loomfence-root-{}-{}.pem",
            std::process::id(),
            why.len()
        ));
        if let Some(text) = contents {
            std::fs::write(&path, text).expect("writes");
        }
        let url = format!(
            "postgres://u:hunter2@127.0.0.1:1/db?sslmode=verify-full&sslrootcert={}",
            path.display()
        );
        let error = open(&url).await.expect_err("refused");
        assert!(matches!(error, OpenError::RootCert { .. }), "{error:?}");
        assert!(error.to_string().contains(why), "{error}");
        assert!(!error.is_retryable());
        let _ = std::fs::remove_file(path);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_whole_kit_passes_over_verified_tls() {
    let Some((url, ca)) = server() else { return };
    let tls = common::tls_url(
        &url,
        "localhost",
        "postgres",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    open_over_tls(&tls, "verify-full").await;
    common::run_kit("postgres-tls", &tls, AcquireStrategy::Function).await;
}
