//! Times single appends on a file store, one after another, so each is a
//! transaction of its own: what one append costs the writer.
//!
//! `cargo run --release -p loomfence-sqlite --example append_cost -- [N]
//! [full|normal|memory] [callers]` (N defaults to 20,000; `normal`, the
//! default, is a file whose commits are not fsynced, so the fsync does not
//! hide the statements; `memory` is `:memory:`, the statements alone).
//! With `callers` (a divisor of 100, default 1) that many tasks append at
//! once, each to its own executions, so their appends share commits. The appends cycle over 100
//! executions, eight application steps then a park and its resume, so the
//! park bookkeeping is paid at a realistic rate. It prints one line: the
//! count, the durability, the total and the cost per append.

use std::time::Instant;

use loomfence_core::{ExecutionId, KernelKind, NewEvent};
use loomfence_sqlite::{Durability, SqliteEventStore, SqliteOptions};
use loomfence_store::EventStore;

/// Executions the appends cycle over.
const EXECUTIONS: usize = 100;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let count: usize = args.next().map_or(Ok(20_000), |n| n.parse())?;
    let mode = args.next().unwrap_or_else(|| "normal".to_owned());
    let durability = match mode.as_str() {
        "full" => Durability::Full,
        _ => Durability::Normal,
    };
    let dir = std::env::temp_dir().join(format!("loomfence-append-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = if mode == "memory" {
        std::path::PathBuf::from(":memory:")
    } else {
        dir.join("cost.db")
    };
    let store = SqliteEventStore::open(
        path,
        SqliteOptions {
            durability,
            ..SqliteOptions::default()
        },
    )
    .await?;
    let callers: usize = args.next().map_or(Ok(1), |n| n.parse())?;
    if callers == 0 || !EXECUTIONS.is_multiple_of(callers) {
        return Err(format!("callers must divide {EXECUTIONS}").into());
    }
    let ids: Vec<ExecutionId> = (0..EXECUTIONS)
        .map(|n| ExecutionId::try_from(format!("cost-{n}").as_str()))
        .collect::<Result<_, _>>()?;
    let started = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|caller| {
            let (store, ids) = (store.clone(), ids.clone());
            // Each caller owns the executions `caller` mod `callers`, so
            // every log still gets its appends in the cycle's order.
            tokio::spawn(async move {
                for n in (caller..count).step_by(callers) {
                    store.append(&ids[n % EXECUTIONS], event(n)).await?;
                }
                Ok::<_, loomfence_store::StoreError>(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    let elapsed = started.elapsed();
    drop(store);
    std::fs::remove_dir_all(&dir)?;
    println!(
        "{count} appends ({mode}, {callers} callers): {:.3} s, {:.1} us each",
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e6 / count as f64
    );
    Ok(())
}

/// The `n`th append's event: per execution, eight steps, a park, a resume.
fn event(n: usize) -> NewEvent {
    match (n / EXECUTIONS) % 10 {
        8 => NewEvent::kernel(KernelKind::ExecutionSuspended, 0),
        9 => NewEvent::kernel(KernelKind::ExecutionResumed, 0),
        _ => NewEvent::new("app.step", 0),
    }
}
