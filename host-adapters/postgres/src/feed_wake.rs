//! The feed's wake: what ends a follower's `wait_for_feed` when something
//! is committed, in this process or in another one.
//!
//! In this process an append wakes the waiters itself, at once. Across
//! processes it goes through `LISTEN`/`NOTIFY`, and not from inside the
//! append: a transaction that notifies takes a cluster-wide lock at commit,
//! which would queue every append of the fleet behind every other. Instead
//! each store has one background task that sends one `NOTIFY` of its own,
//! in its own transaction, after this process appended, then rests
//! [`NOTIFY_REST`]: however fast the appends, a process sends at most one
//! notification per rest, and appends never wait for one. Any append counts,
//! not only parks and ends: the feed's readers are not only the supervisor,
//! and the rest already bounds the cost.
//!
//! A wake is a hint: it may come when the event is not yet readable (an
//! older transaction still holds the horizon), and one may be lost (the
//! listening connection drops). A follower also reads on its own interval,
//! so either only costs latency.
//!
//! Both tasks are started on first use: a store that never appends pays
//! nothing, and one that never waits opens no listening connection.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use deadpool_postgres::Pool;
use loomfence_store::BackendError;
use tokio::sync::{Mutex, Notify, mpsc};
use tokio_postgres::AsyncMessage;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::config::Schema;
use crate::error;

/// The channel every store of a database notifies on; the payload names
/// the schema, so stores of other schemas ignore it.
const CHANNEL: &str = "loomfence_feed";

/// How long the notifier rests after each `NOTIFY`.
pub(crate) const NOTIFY_REST: Duration = Duration::from_millis(5);

/// The wake of one store.
pub(crate) struct FeedWake {
    /// Where the tables live: the notifications' payload.
    schema: Schema,
    /// For the notifier's `NOTIFY`.
    pool: Pool,
    /// For the listening connection, which is not a pooled one: it must be
    /// polled for notifications between statements.
    config: tokio_postgres::Config,
    /// Its TLS, as the pool's connections have it.
    tls: MakeRustlsConnect,
    /// Woken by this process's appends and by every notification.
    written: Arc<Notify>,
    /// The notifier's queue of one: a send while one is pending is dropped,
    /// which is the coalescing. Started on the first append.
    notifier: std::sync::OnceLock<mpsc::Sender<()>>,
    /// The listening connection, started on the first wait.
    listener: Mutex<Option<Listener>>,
}

/// A listening connection and the task that reads its notifications.
struct Listener {
    /// Kept so the connection stays open; dropping it closes it.
    client: tokio_postgres::Client,
    /// False once the connection ended; the next wait starts another.
    alive: Arc<AtomicBool>,
    /// The task, stopped with the store.
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FeedWake {
    /// A wake for `schema`; nothing runs until it is used.
    pub(crate) fn new(
        schema: Schema,
        pool: Pool,
        config: tokio_postgres::Config,
        tls: MakeRustlsConnect,
    ) -> Self {
        Self {
            schema,
            tls,
            pool,
            config,
            written: Arc::new(Notify::new()),
            notifier: std::sync::OnceLock::new(),
            listener: Mutex::new(None),
        }
    }

    /// After a committed append: wakes this process's waiters, and asks
    /// the notifier to tell the others.
    pub(crate) fn appended(&self) {
        self.written.notify_waiters();
        let notifier = self.notifier.get_or_init(|| self.start_notifier());
        // Full: a notification is already due, which will cover this one.
        let _pending = notifier.try_send(());
    }

    /// Where a waiter registers, before it reads the head.
    pub(crate) fn written(&self) -> &Notify {
        &self.written
    }

    /// Makes sure this store listens, so that a notification sent from now
    /// on wakes its waiters.
    pub(crate) async fn listen(&self) -> Result<(), BackendError> {
        let mut listener = self.listener.lock().await;
        // A task ended with its runtime, not only with its connection.
        if listener
            .as_ref()
            .is_some_and(|l| l.alive.load(Ordering::SeqCst) && !l.task.is_finished())
        {
            return Ok(());
        }
        *listener = Some(self.start_listener().await?);
        Ok(())
    }

    /// The notifier task: one `NOTIFY`, then a rest, for as long as the
    /// store (which holds the sender) lives.
    fn start_notifier(&self) -> mpsc::Sender<()> {
        let (sender, mut due) = mpsc::channel::<()>(1);
        let (pool, schema) = (self.pool.clone(), self.schema.as_str().to_owned());
        tokio::spawn(async move {
            while due.recv().await.is_some() {
                let sent = match pool.get().await {
                    Ok(client) => client
                        .execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &schema])
                        .await
                        .map(|_| ())
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                };
                if let Err(reason) = sent {
                    // Only latency is lost: followers poll too.
                    tracing::debug!(%reason, "loomfence: the feed's NOTIFY failed");
                }
                tokio::time::sleep(NOTIFY_REST).await;
            }
        });
        sender
    }

    /// Opens the listening connection, starts reading it, and `LISTEN`s.
    async fn start_listener(&self) -> Result<Listener, BackendError> {
        let (client, mut connection) = self
            .config
            .connect(self.tls.clone())
            .await
            .map_err(error::backend)?;
        let alive = Arc::new(AtomicBool::new(true));
        let task = {
            let (alive, written) = (Arc::clone(&alive), Arc::clone(&self.written));
            let schema = self.schema.as_str().to_owned();
            tokio::spawn(async move {
                loop {
                    match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                        Some(Ok(AsyncMessage::Notification(note))) => {
                            if note.payload() == schema {
                                written.notify_waiters();
                            }
                        }
                        Some(Ok(_)) => {}
                        Some(Err(_)) | None => break,
                    }
                }
                alive.store(false, Ordering::SeqCst);
                // Whoever waits re-reads and listens again.
                written.notify_waiters();
            })
        };
        let listener = Listener {
            client,
            alive,
            task,
        };
        listener
            .client
            .batch_execute(&format!("LISTEN {CHANNEL}"))
            .await
            .map_err(error::backend)?;
        Ok(listener)
    }
}
