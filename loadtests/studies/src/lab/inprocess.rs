//! The in-process provider in the studies: an application built here on the memory store, as the
//! server would build it ([`brigade_kit::service::build`]), called through
//! [`brigade_runtimes::inprocess::InProcess`] (the runtimes' own in-process provider: the same
//! dispatch, 404/405 and metrics as the hyper adapter), from concurrent clients.
//!
//! The application comes from the binary that runs the study: it registers a kit
//! [`Service`] ([`crate::InprocApp`]).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use brigade_kit::peer::PeerTimeouts;
use brigade_kit::service::{self, ServiceConfig};
use brigade_kit::store::{StoreConfig, StoreKind};
use brigade_kit::Service;
use brigade_records::result::LoadResult;

use super::calls::{self, CallsMade, ClientTally, Span};
use brigade_meter::pin;

/// One call of an operation in process; answers the body bytes it sent and received.
pub(crate) type InprocOp = Arc<
    dyn Fn(InProcess) -> Pin<Box<dyn Future<Output = Result<(u64, u64)>> + Send>> + Send + Sync,
>;

/// The runtime name the in-process application reports in `/health`.
pub(crate) const INPROC: &str = "inproc";

use brigade_runtimes::inprocess::InProcess;

/// Builds `service` on a memory store with no peers, as a server would build it.
pub(crate) async fn build(service: &dyn Service) -> Result<InProcess> {
    let config = ServiceConfig {
        runtime: INPROC.to_owned(),
        store: StoreKind::Memory,
        store_config: StoreConfig::default(),
        database_prefix: String::new(),
        peers: HashMap::new(),
        peer_timeouts: PeerTimeouts::default(),
        // As `serve` builds it by default, so both sides pay for the same recording.
        metrics: true,
        peer_transport: Default::default(),
    };
    let built = service::build(service, &config)
        .await
        .with_context(|| format!("Failed to build {} in process", service.name()))?;
    Ok(InProcess::new(built.app))
}

/// Calls `op` from `made.clients` concurrent clients (tasks on a runtime of `workers` threads,
/// pinned to `cpus`: where a server would run the handler), each `iterations` measured calls
/// after `made.warmup` of unmeasured ones; the latencies as one result.
pub(crate) fn run_clients(
    app: &InProcess,
    op: &InprocOp,
    made: &CallsMade,
    iterations: u64,
    workers: u32,
    cpus: Option<&[usize]>,
) -> Result<LoadResult> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                if let Some(cpus) = cpus {
                    pin::pin_current_thread(cpus)?;
                }
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(workers.max(1) as usize)
                    .enable_all()
                    .build()
                    .context("Failed to build the in-process runtime")?;
                let outcomes = runtime.block_on(async {
                    let tasks: Vec<_> = (0..made.clients)
                        .map(|_| {
                            let (app, op, warmup) = (app.clone(), Arc::clone(op), made.warmup);
                            tokio::spawn(async move {
                                let until = Instant::now() + warmup;
                                while Instant::now() < until {
                                    op(app.clone()).await?;
                                }
                                let mut tally = ClientTally::default();
                                let first = Instant::now();
                                for _ in 0..iterations {
                                    let started = Instant::now();
                                    let (sent, received) = op(app.clone()).await?;
                                    tally.record(started.elapsed(), sent, received);
                                }
                                let span = Span {
                                    first,
                                    last: Instant::now(),
                                };
                                anyhow::Ok((tally, span))
                            })
                        })
                        .collect();
                    let mut outcomes = Vec::new();
                    for task in tasks {
                        outcomes.push(task.await.context("an in-process client panicked")??);
                    }
                    anyhow::Ok(outcomes)
                })?;
                let span =
                    Span::cover(outcomes.iter().map(|(_, span)| *span)).context("no client ran")?;
                let tallies: Vec<ClientTally> = outcomes.into_iter().map(|(t, _)| t).collect();
                Ok(calls::result(made, &tallies, span.elapsed()))
            })
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the in-process clients panicked")))
    })
}
