//! Writes whose answer is lost: a TCP proxy between the store and the
//! server cuts one connection at a chosen request, either after forwarding
//! it and letting the server answer (the write committed, the client never
//! hears it) or before forwarding it (nothing reached the server). Either
//! way the client only sees its connection close, so the store must say
//! [`StoreError::OutcomeUnknown`] for a write and a plain retryable
//! [`StoreError::Backend`] for a read, and the resume driver must settle
//! the unknown outcome by reading: exactly one `EXECUTION_RESUMED` in the
//! log whichever way the cut fell.
//!
//! The timer store's writes are held to the same rule; its claim, which
//! commits only after its rows read back, is not an unknown outcome when
//! the connection is lost before that commit, and neither is an inbox send
//! cut before its `COMMIT`.
//!
//! The proxy is the test's own (tokio): it relays bytes both ways and
//! watches the client's requests for a pattern the test arms.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use common::{AT, kernel};
use loomfence_core::{
    ConditionalAppend, ExecutionId, KernelKind, ParkExpectation, ResumeRequest,
    inbox::{Message, MessageKey, Sent},
    timer::{Completed, DueFilter, TimerRow},
};
use loomfence_postgres::{PostgresEventStore, PostgresOptions};
use loomfence_runtime::{RuntimeError, resume};
use loomfence_store::{EventStore, InboxStore, StoreError, TimerStore};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Where the proxy cuts the connection that carries the armed request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cut {
    /// Forward the request, let the server answer it in full (its
    /// `ReadyForQuery`, sent after the implicit commit), swallow that
    /// answer and close the client's side.
    AfterForward,
    /// Close both sides without forwarding the request.
    BeforeForward,
}

/// Which client bytes trigger the armed cut.
type Matcher = Box<dyn Fn(&[u8]) -> bool + Send + Sync>;

/// What the relays share with the test.
#[derive(Default)]
struct Shared {
    /// The armed cut; taken (so it fires once) by the first match.
    armed: Mutex<Option<(Cut, Matcher)>>,
    /// Cuts made so far.
    fired: AtomicUsize,
    /// Connections accepted so far.
    accepted: AtomicUsize,
}

/// A proxy in front of the test server.
struct Proxy {
    /// Where clients connect.
    addr: SocketAddr,
    /// State shared with the relays.
    shared: Arc<Shared>,
}

impl Proxy {
    /// Listens on a free local port and relays every connection to
    /// `upstream`.
    async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let addr = listener.local_addr().expect("an address");
        let shared = Arc::new(Shared::default());
        let relays = shared.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                relays.accepted.fetch_add(1, Ordering::SeqCst);
                let Ok(server) = TcpStream::connect(upstream).await else {
                    continue;
                };
                tokio::spawn(relay(client, server, relays.clone()));
            }
        });
        Self { addr, shared }
    }

    /// Arms one cut, at the first client request for which `matches` holds.
    fn arm(&self, cut: Cut, matches: impl Fn(&[u8]) -> bool + Send + Sync + 'static) {
        *lock(&self.shared.armed) = Some((cut, Box::new(matches)));
    }

    /// Cuts made so far.
    fn fired(&self) -> usize {
        self.shared.fired.load(Ordering::SeqCst)
    }

    /// Connections accepted so far.
    fn accepted(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }
}

/// Locks a mutex whose holder cannot leave it inconsistent.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether `haystack` holds `needle`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// A `ReadyForQuery` message header: the server's last word on a request,
/// sent after the implicit transaction committed.
const READY_FOR_QUERY: &[u8] = b"Z\0\0\0\x05";

/// Relays one connection until either side closes or the armed cut fires.
/// Returning drops both sockets, which closes both connections.
async fn relay(client: TcpStream, server: TcpStream, shared: Arc<Shared>) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let mut from_client = vec![0_u8; 64 * 1024];
    let mut from_server = vec![0_u8; 64 * 1024];
    // The client's recent bytes, so a request split across reads matches.
    let mut recent: Vec<u8> = Vec::new();
    // Once the armed request was forwarded: the server's answer so far,
    // which the client never gets.
    let mut swallowed: Option<Vec<u8>> = None;
    loop {
        tokio::select! {
            read = client_read.read(&mut from_client) => {
                let Ok(n @ 1..) = read else { return };
                let chunk = &from_client[..n];
                recent.extend_from_slice(chunk);
                let excess = recent.len().saturating_sub(16 * 1024);
                recent.drain(..excess);
                let cut = {
                    let mut armed = lock(&shared.armed);
                    match armed.as_ref() {
                        Some((_, matches)) if matches(&recent) => armed.take().map(|(cut, _)| cut),
                        _ => None,
                    }
                };
                if cut == Some(Cut::BeforeForward) {
                    shared.fired.fetch_add(1, Ordering::SeqCst);
                    return;
                }
                if server_write.write_all(chunk).await.is_err() {
                    return;
                }
                if cut == Some(Cut::AfterForward) {
                    swallowed = Some(Vec::new());
                }
            }
            read = server_read.read(&mut from_server) => {
                let Ok(n @ 1..) = read else { return };
                let chunk = &from_server[..n];
                match swallowed.as_mut() {
                    Some(answer) => {
                        answer.extend_from_slice(chunk);
                        if contains(answer, READY_FOR_QUERY) {
                            shared.fired.fetch_add(1, Ordering::SeqCst);
                            return;
                        }
                    }
                    None => {
                        if client_write.write_all(chunk).await.is_err() {
                            return;
                        }
                    }
                }
            }
        }
    }
}

/// The server's address in `url` (a TCP host: what `cargo xtask pg` sets).
fn upstream(url: &str) -> SocketAddr {
    let config: tokio_postgres::Config = url.parse().expect("a PostgreSQL URL");
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        other => panic!("the proxy test needs a TCP host, got {other:?}"),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let host = if host == "localhost" {
        "127.0.0.1".to_owned()
    } else {
        host
    };
    format!("{host}:{port}").parse().expect("a socket address")
}

/// `url` pointed at the proxy, as a key-value connection string, in
/// plain TCP (`sslmode=disable`): the proxy cuts at protocol messages it
/// must be able to read.
fn through(url: &str, proxy: &Proxy) -> String {
    let config: tokio_postgres::Config = url.parse().expect("a PostgreSQL URL");
    let quote = |value: &str| format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"));
    let mut out = format!(
        "host=127.0.0.1 port={} connect_timeout=10 sslmode=disable",
        proxy.addr.port()
    );
    if let Some(user) = config.get_user() {
        out.push_str(&format!(" user={}", quote(user)));
    }
    if let Some(dbname) = config.get_dbname() {
        out.push_str(&format!(" dbname={}", quote(dbname)));
    }
    if let Some(password) = config.get_password() {
        out.push_str(&format!(
            " password={}",
            quote(&String::from_utf8_lossy(password))
        ));
    }
    out
}

/// A proxy, a store through it with ONE pooled connection (so a dead
/// connection handed out again would fail the next call), and a store
/// straight to the server on the same schema, to see what really landed.
async fn setup() -> Option<(Proxy, PostgresEventStore, PostgresEventStore)> {
    let url = common::url()?;
    let direct = common::store(&url).await;
    let proxy = Proxy::start(upstream(&url)).await;
    let proxied = PostgresEventStore::connect(
        &through(&url, &proxy),
        PostgresOptions {
            schema: direct.schema().clone(),
            pool_size: 1,
            ..PostgresOptions::default()
        },
    )
    .await
    .expect("connects through the proxy");
    Some((proxy, proxied, direct))
}

/// Client bytes carrying `marker` (the resume's answer, say).
fn carrying(marker: &str) -> impl Fn(&[u8]) -> bool + Send + Sync + 'static {
    let marker = marker.as_bytes().to_vec();
    move |bytes| contains(bytes, &marker)
}

/// The kinds of `id`'s log, as the server holds it.
async fn kinds(direct: &PostgresEventStore, id: &ExecutionId) -> Vec<String> {
    direct
        .read_range(id, 1, None)
        .await
        .expect("reads straight from the server")
        .into_iter()
        .map(|event| event.kind)
        .collect()
}

/// How many `EXECUTION_RESUMED` `id`'s log holds.
async fn resumes(direct: &PostgresEventStore, id: &ExecutionId) -> usize {
    kinds(direct, id)
        .await
        .iter()
        .filter(|kind| *kind == KernelKind::ExecutionResumed.as_str())
        .count()
}

/// The store-level case: a park-conditional append whose answer the proxy
/// swallowed after the server committed it is `OutcomeUnknown` (not a
/// retryable `Backend`, which says it did not happen), and it did land.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_append_whose_answer_is_lost_after_the_commit_is_outcome_unknown_and_landed() {
    let Some((proxy, proxied, direct)) = setup().await else {
        return;
    };
    let id = common::id("lost-answer");
    let park_seq = common::park(&direct, &id).await;
    let marker = "marker-lost-answer";
    proxy.arm(Cut::AfterForward, carrying(marker));
    let resumed = kernel(KernelKind::ExecutionResumed)
        .with_payload(common::object(json!({ "answer": marker })));
    let outcome = proxied
        .append_if_parked(&id, park_seq, vec![resumed.clone()])
        .await;
    assert_eq!(proxy.fired(), 1, "the cut fired on the append");
    match &outcome {
        Err(StoreError::OutcomeUnknown(lost)) => println!("as expected: {lost}"),
        other => panic!("expected OutcomeUnknown, got {other:?}"),
    }
    assert!(!outcome.as_ref().is_err_and(StoreError::is_retryable));
    assert_eq!(
        kinds(&direct, &id).await,
        [
            "EXECUTION_STARTED",
            "EXECUTION_SUSPENDED",
            "EXECUTION_RESUMED"
        ],
        "the append committed before its answer was lost"
    );
    // The store goes on, on a fresh connection: the dead one was not
    // handed out again.
    let before = proxy.accepted();
    assert!(matches!(
        proxied.append_if_parked(&id, park_seq, vec![resumed]).await,
        Ok(ConditionalAppend::ParkAnswered)
    ));
    assert_eq!(proxy.accepted(), before + 1, "one fresh connection");
}

/// The end-to-end case: the resume's append commits and its
/// answer is lost. The driver settles it by reading: the resume returns Ok
/// under its token, and the log holds exactly one `EXECUTION_RESUMED`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_resume_whose_append_answer_is_lost_after_the_commit_settles_as_resumed_once() {
    let Some((proxy, proxied, direct)) = setup().await else {
        return;
    };
    let id = common::id("resume-lost-answer");
    let park_seq = common::park(&direct, &id).await;
    let marker = "marker-resume-lost-answer";
    proxy.arm(Cut::AfterForward, carrying(marker));
    let resumed = resume(
        &proxied,
        &id,
        ResumeRequest::new(park_seq, json!(marker), AT),
    )
    .await
    .unwrap_or_else(|e| panic!("expected the resume to settle as resumed, got {e:?}"));
    assert_eq!(proxy.fired(), 1, "the cut fired on the resume's append");
    assert_eq!(resumed.fence, Some(1));
    assert_eq!(resumed.resumed.sequence, park_seq + 1);
    assert_eq!(resumed.resumed.payload["answer"], json!(marker));
    assert_eq!(resumes(&direct, &id).await, 1, "exactly one resume landed");
    assert_eq!(direct.current_fence(&id).await.expect("reads"), 1);
}

/// The cut falls before the request reaches the server: nothing landed,
/// the store cannot tell (it says `OutcomeUnknown`), and the resume
/// settles by reading, finds the park still open, appends again on a fresh
/// connection, and lands exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_resume_whose_append_never_reached_the_server_retries_and_lands_once() {
    let Some((proxy, proxied, direct)) = setup().await else {
        return;
    };
    let id = common::id("resume-never-sent");
    let park_seq = common::park(&direct, &id).await;
    let marker = "marker-resume-never-sent";
    proxy.arm(Cut::BeforeForward, carrying(marker));
    let accepted = proxy.accepted();
    let resumed = resume(
        &proxied,
        &id,
        ResumeRequest::new(park_seq, json!(marker), AT),
    )
    .await
    .unwrap_or_else(|e| panic!("expected the resume to retry and land, got {e:?}"));
    assert_eq!(proxy.fired(), 1, "the cut fired on the resume's append");
    assert_eq!(resumed.fence, Some(1));
    assert_eq!(resumed.resumed.sequence, park_seq + 1);
    assert_eq!(resumes(&direct, &id).await, 1, "landed exactly once");
    // The pool of one recycled the dead connection: the settling read and
    // the second append ran on one fresh connection.
    assert_eq!(proxy.accepted(), accepted + 1, "one fresh connection");
    let status = proxied.pool().status();
    assert!(status.size <= 1, "{status:?}");
}

/// The store alone, when the cut falls before the request reaches the
/// server: the client cannot tell this from a lost answer, so the write is
/// `OutcomeUnknown`, and here it did not land.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_append_cut_before_it_was_forwarded_is_outcome_unknown_and_did_not_land() {
    let Some((proxy, proxied, direct)) = setup().await else {
        return;
    };
    let id = common::id("never-sent");
    let park_seq = common::park(&direct, &id).await;
    let marker = "marker-never-sent";
    proxy.arm(Cut::BeforeForward, carrying(marker));
    let outcome = proxied
        .append_if_parked(
            &id,
            park_seq,
            vec![
                kernel(KernelKind::ExecutionResumed)
                    .with_payload(common::object(json!({ "answer": marker }))),
            ],
        )
        .await;
    assert_eq!(proxy.fired(), 1);
    assert!(
        matches!(outcome, Err(StoreError::OutcomeUnknown(_))),
        "expected OutcomeUnknown, got {outcome:?}"
    );
    assert_eq!(resumes(&direct, &id).await, 0, "nothing reached the server");
}

/// Client bytes of a conditional acquire of `text`: its request names the
/// execution and binds the answering kinds; a log read names only the
/// execution, and a resume's append also carries its answer.
fn acquire_of(text: &'static str) -> impl Fn(&[u8]) -> bool + Send + Sync + 'static {
    move |bytes: &[u8]| {
        contains(bytes, text.as_bytes())
            && contains(bytes, b"EXECUTION_RESUMED")
            && !contains(bytes, b"\"answer\"")
    }
}

/// A conditional acquire whose answer is lost after the commit is
/// `OutcomeUnknown` too, and it landed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_acquire_whose_answer_is_lost_is_outcome_unknown_and_landed() {
    let Some((proxy, proxied, direct)) = setup().await else {
        return;
    };

    let text = "acquire-lost-answer";
    let id = common::id(text);
    let park_seq = common::park(&direct, &id).await;
    proxy.arm(Cut::AfterForward, acquire_of(text));
    let outcome = proxied
        .acquire_fence_if(&id, ParkExpectation { fence: 0, park_seq })
        .await;
    assert_eq!(proxy.fired(), 1);
    assert!(
        matches!(outcome, Err(StoreError::OutcomeUnknown(_))),
        "expected OutcomeUnknown, got {outcome:?}"
    );
    assert_eq!(
        direct.current_fence(&id).await.expect("reads"),
        1,
        "it landed"
    );
}

/// In a resume, an acquire whose answer is lost after the commit counts as
/// a dead acquirer: its retry on the same expectation is stale, the next
/// acquire wins, and the resume lands once under that token.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_resume_whose_acquire_answer_is_lost_takes_the_next_token_and_lands_once() {
    let Some((proxy, proxied, direct)) = setup().await else {
        return;
    };
    let text = "resume-acquire-lost-answer";
    let id = common::id(text);
    let park_seq = common::park(&direct, &id).await;
    proxy.arm(Cut::AfterForward, acquire_of(text));
    let resumed = resume(&proxied, &id, ResumeRequest::new(park_seq, json!("go"), AT))
        .await
        .unwrap_or_else(|e| panic!("expected the resume to land, got {e:?}"));
    assert_eq!(proxy.fired(), 1, "the cut fired on the resume's acquire");
    // Token 1: the resume's own acquire, whose answer was lost; token 2:
    // the acquire after the stale retry.
    assert_eq!(resumed.fence, Some(2));
    assert_eq!(direct.current_fence(&id).await.expect("reads"), 2);
    assert_eq!(resumes(&direct, &id).await, 1, "landed exactly once");
}

/// Reads never report an unknown outcome: a read cut before it reaches the
/// server is a plain retryable backend error.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_read_that_loses_its_connection_is_a_retryable_backend_error() {
    let Some((proxy, proxied, direct)) = setup().await else {
        return;
    };
    let text = "read-cut";
    let id = common::id(text);
    common::park(&direct, &id).await;
    for cut in [Cut::BeforeForward, Cut::AfterForward] {
        proxy.arm(cut, carrying(text));
        let read = proxied.read_range(&id, 1, None).await;
        match &read {
            Err(StoreError::Backend(backend)) if backend.retryable => {}
            other => panic!("{cut:?}: expected a retryable backend error, got {other:?}"),
        }
        proxy.arm(cut, carrying(text));
        let fence = proxied.current_fence(&id).await;
        match &fence {
            Err(StoreError::Backend(backend)) if backend.retryable => {}
            other => panic!("{cut:?}: expected a retryable backend error, got {other:?}"),
        }
    }
    assert_eq!(proxy.fired(), 4);
    assert_eq!(
        proxied.read_range(&id, 1, None).await.expect("reads").len(),
        2
    );
}

/// A resume through the proxy with nothing armed is an ordinary resume:
/// the proxy itself changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_proxy_alone_changes_nothing() {
    let Some((proxy, proxied, direct)) = setup().await else {
        return;
    };
    let id = common::id("proxy-control");
    let park_seq = common::park(&proxied, &id).await;
    let resumed = resume(&proxied, &id, ResumeRequest::new(park_seq, json!(1), AT))
        .await
        .map_err(|e: RuntimeError| e.to_string())
        .expect("resumes");
    assert_eq!(resumed.fence, Some(1));
    assert_eq!(resumes(&direct, &id).await, 1);
    assert_eq!(proxy.fired(), 0);
}

/// A lease for `holder` at `now`, for a minute.
fn timer_lease(holder: &str, now: i64) -> loomfence_core::timer::Lease {
    loomfence_core::timer::Lease {
        holder: loomfence_core::timer::NodeId::new(holder).expect("a valid node id"),
        now,
        duration_ms: 60_000,
    }
}

/// A timer schedule whose answer is lost after the commit is the timer
/// store's `OutcomeUnknown` (retryable: a schedule is an upsert), and it
/// landed; repeating it is harmless.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_timer_schedule_whose_answer_is_lost_is_outcome_unknown_and_landed() {
    let Some((proxy, proxied, direct)) = setup().await else {
        return;
    };
    let text = "timer-schedule-lost-answer";
    let row = TimerRow::redrive(common::id(text), 10, 1);
    proxy.arm(Cut::AfterForward, carrying(text));
    let outcome = proxied.timers().schedule(&row).await;
    assert_eq!(proxy.fired(), 1);
    match &outcome {
        Err(error @ StoreError::OutcomeUnknown(_)) => assert!(error.is_outcome_unknown()),
        other => panic!("expected OutcomeUnknown, got {other:?}"),
    }
    let listed = direct
        .timers()
        .due(10, 10, DueFilter::default())
        .await
        .expect("lists");
    assert_eq!(listed, std::slice::from_ref(&row), "it landed");
    proxied
        .timers()
        .schedule(&row)
        .await
        .expect("schedules again");
}

/// A complete whose answer is lost after the commit is `OutcomeUnknown`,
/// the row is gone, and repeating the complete answers `NotHeld`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_timer_complete_whose_answer_is_lost_is_outcome_unknown_and_repeats_as_not_held() {
    let Some((proxy, proxied, direct)) = setup().await else {
        return;
    };
    let text = "timer-complete-lost-answer";
    let timers = direct.timers();
    timers
        .schedule(&TimerRow::wake(common::id(text), 10))
        .await
        .expect("schedules");
    let claim = timers
        .claim_due(&timer_lease("claimer", 10), 10, DueFilter::default())
        .await
        .expect("claims")
        .claims
        .pop()
        .expect("one claim");
    proxy.arm(Cut::AfterForward, carrying(text));
    let outcome = proxied.timers().complete(&claim).await;
    assert_eq!(proxy.fired(), 1);
    assert!(
        matches!(outcome, Err(StoreError::OutcomeUnknown(_))),
        "expected OutcomeUnknown, got {outcome:?}"
    );
    assert!(
        timers
            .due(10, 10, DueFilter::default())
            .await
            .expect("lists")
            .is_empty(),
        "the complete landed"
    );
    assert_eq!(
        proxied.timers().complete(&claim).await.expect("completes"),
        Completed::NotHeld
    );
}

/// A claim runs in a transaction and `COMMIT` is sent only after its rows
/// read back: a connection lost before that (the claim never forwarded,
/// or forwarded and answered but the answer lost) committed nothing, so it
/// is a plain retryable backend error, not an unknown outcome. The proof:
/// the next claim of the row is claim number 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_timer_claim_cut_before_its_commit_is_a_retryable_error_and_claimed_nothing() {
    let Some((proxy, proxied, direct)) = setup().await else {
        return;
    };
    for (round, cut) in [Cut::BeforeForward, Cut::AfterForward]
        .into_iter()
        .enumerate()
    {
        let wake_at = 10 + i64::try_from(round).expect("small");
        let row = TimerRow::wake(common::id("timer-claim-cut"), wake_at);
        let timers = direct.timers();
        timers.schedule(&row).await.expect("schedules");
        let holder = format!("claimer-cut-{round}");
        proxy.arm(cut, carrying(&holder));
        let outcome = proxied
            .timers()
            .claim_due(&timer_lease(&holder, wake_at), 10, DueFilter::default())
            .await;
        assert_eq!(proxy.fired(), round + 1);
        match &outcome {
            Err(StoreError::Backend(backend)) if backend.retryable => {}
            other => panic!("{cut:?}: expected a retryable backend error, got {other:?}"),
        }
        // The server may not have noticed the closed connection yet, and
        // holds the row until it rolls back: claim until the row is free.
        let deadline = Instant::now() + Duration::from_secs(10);
        let claim = loop {
            let claims = timers
                .claim_due(&timer_lease("next", wake_at), 10, DueFilter::default())
                .await
                .expect("claims");
            if let Some(claim) = claims.claims.into_iter().find(|claim| claim.row == row) {
                break claim;
            }
            assert!(Instant::now() < deadline, "{cut:?}: the row stayed locked");
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        assert_eq!(claim.number, 1, "{cut:?}: the cut claim was rolled back");
    }
}

/// A send whose first round trip (`BEGIN`, the channel lock, the insert)
/// is cut, forwarded or not, committed nothing: `COMMIT` was never sent, so
/// it is a plain retryable backend error, and sending again stores the
/// message once with its intent row.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_send_cut_before_its_commit_is_a_retryable_error_and_stored_nothing() {
    let Some((proxy, proxied, direct)) = setup().await else {
        return;
    };
    for (round, cut) in [Cut::BeforeForward, Cut::AfterForward]
        .into_iter()
        .enumerate()
    {
        let marker = format!("send-cut-before-commit-{round}");
        let message = Message {
            key: MessageKey::new(common::id(&marker), "c", "m").expect("a valid key"),
            payload: json!(marker),
            sent_at: 1,
        };
        let intent = message.intent(10).expect("an intent row");
        proxy.arm(cut, carrying(&marker));
        let outcome = proxied.timers().send(&message, &intent).await;
        assert_eq!(proxy.fired(), round + 1);
        match &outcome {
            Err(StoreError::Backend(backend)) if backend.retryable => {}
            other => panic!("{cut:?}: expected a retryable backend error, got {other:?}"),
        }
        // The server may still hold the cut transaction until it notices
        // the closed connection; the resend waits for its channel lock.
        let sent = direct
            .timers()
            .send(&message, &intent)
            .await
            .expect("sends again");
        assert!(
            matches!(sent, Sent::Stored { .. }),
            "{cut:?}: the cut send stored nothing, got {sent:?}"
        );
        assert_eq!(
            direct
                .timers()
                .messages(&message.key.execution_id)
                .await
                .expect("lists")
                .len(),
            1
        );
    }
}

/// A send whose second round trip (the intent row's upsert and `COMMIT`)
/// is cut may have committed: `OutcomeUnknown`. Sending again settles it:
/// the message and its intent row are there exactly once, whichever way
/// the cut fell.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_send_whose_commit_answer_is_lost_is_outcome_unknown_and_settles_on_a_resend() {
    let Some((proxy, proxied, direct)) = setup().await else {
        return;
    };
    let marker = "send-commit-lost";
    let id = common::id(marker);
    let message = Message {
        key: MessageKey::new(id.clone(), "c", "m").expect("a valid key"),
        payload: json!(1),
        sent_at: 1,
    };
    let intent = message.intent(10).expect("an intent row");
    // The upsert's bind carries the id and the re-drive flag; the first
    // round trip carries the id and the payload, never the flag.
    let id_bytes = marker.as_bytes().to_vec();
    proxy.arm(Cut::AfterForward, move |bytes| {
        contains(bytes, &id_bytes) && contains(bytes, b"\"attempt\"")
    });
    let outcome = proxied.timers().send(&message, &intent).await;
    assert_eq!(proxy.fired(), 1);
    assert!(
        matches!(outcome, Err(StoreError::OutcomeUnknown(_))),
        "expected OutcomeUnknown, got {outcome:?}"
    );
    let again = direct
        .timers()
        .send(&message, &intent)
        .await
        .expect("sends again");
    println!("the resend answered {again:?}");
    assert_eq!(direct.timers().messages(&id).await.expect("lists").len(), 1);
    let due = direct
        .timers()
        .due(1_000, 10, DueFilter::default())
        .await
        .expect("lists");
    assert_eq!(due, [intent], "its intent row, once");
}
