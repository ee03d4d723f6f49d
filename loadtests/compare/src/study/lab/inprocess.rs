//! The in-process provider: an application's own route table called in this process, without a
//! socket: the path matched by the application's matcher, the method looked up on the endpoint,
//! the body limit applied, and the route called through [`AppHandle::call`] (which applies the
//! content-type rule and runs the handler) — what every runtime adapter does between its parser
//! and its writer, and nothing else. The answer is the handler's own [`Reply`], so a study can
//! check that it equals the loopback answer byte for byte.
//!
//! The application comes from the binary that runs the study: it registers a kit
//! [`Service`] ([`crate::study::InprocApp`]), and the study builds it here on the memory store, as
//! the server would ([`brigade_kit::service::build`]).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use brigade_kit::peer::PeerTimeouts;
use brigade_kit::service::{self, ServiceConfig};
use brigade_kit::store::{StoreConfig, StoreKind};
use brigade_kit::{ApiError, AppHandle, Method, Reply, Request, Service};
use brigade_load::result::LoadResult;
use bytes::Bytes;

use super::calls::{self, CallsMade, ClientTally, Span};
use crate::pin;

/// One call of an operation in process; answers the body bytes it sent and received.
pub type InprocOp = Arc<
    dyn Fn(InProcess) -> Pin<Box<dyn Future<Output = Result<(u64, u64)>> + Send>> + Send + Sync,
>;

/// The runtime name the in-process application reports in `/health`.
pub const INPROC: &str = "inproc";

/// An application called in this process through its route table.
#[derive(Clone)]
pub struct InProcess {
    app: Arc<dyn AppHandle>,
}

impl std::fmt::Debug for InProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InProcess({})", self.app.name())
    }
}

impl InProcess {
    /// Wraps an application already built.
    pub fn new(app: Arc<dyn AppHandle>) -> InProcess {
        InProcess { app }
    }

    /// Builds `service` on a memory store with no peers, as a server would build it.
    pub async fn build(service: &dyn Service) -> Result<InProcess> {
        let config = ServiceConfig {
            runtime: INPROC.to_owned(),
            store: StoreKind::Memory,
            store_config: StoreConfig::default(),
            database_prefix: String::new(),
            peers: HashMap::new(),
            peer_timeouts: PeerTimeouts::default(),
            // As `serve` builds it by default, so both sides pay for the same recording.
            metrics: true,
        };
        let built = service::build(service, &config)
            .await
            .with_context(|| format!("Failed to build {} in process", service.name()))?;
        Ok(InProcess::new(built.app))
    }

    /// The application's name.
    pub fn name(&self) -> &str {
        self.app.name()
    }

    /// Calls the route for `method` and `target` (a path with an optional `?query`) with `body`.
    pub async fn call(
        &self,
        method: &str,
        target: &str,
        content_type: Option<&str>,
        body: Bytes,
    ) -> Reply {
        let (path, query) = match target.split_once('?') {
            Some((path, query)) => (path, Some(query.to_owned())),
            None => (target, None),
        };
        let Ok(found) = self.app.matcher().at(path) else {
            return ApiError::no_route(method, path).to_reply();
        };
        let endpoint = &self.app.endpoints()[*found.value];
        let Some(route) = Method::parse(method).and_then(|m| endpoint.route_for(m)) else {
            return endpoint.method_not_allowed(method).to_reply();
        };
        if body.len() > endpoint.limit {
            return ApiError::too_large(endpoint.limit).to_reply();
        }
        let params = found
            .params
            .iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let request = Request {
            params,
            query,
            content_type: content_type.map(str::to_owned),
            body,
            traceparent: None,
        };
        self.app.call(route, request).await
    }
}

/// Calls `op` from `made.clients` concurrent clients (tasks on a runtime of `workers` threads,
/// pinned to `cpus`: where a server would run the handler), each `iterations` measured calls
/// after `made.warmup` of unmeasured ones; the latencies as one result.
pub fn run_clients(
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

#[cfg(test)]
mod tests {
    use super::*;
    use brigade_kit::{App, Route, RouteTable};

    fn app() -> InProcess {
        let table = RouteTable::new()
            .get("/items/{id}", |_, r: Request| async move {
                Ok(Reply::text(format!(
                    "{} {}",
                    r.param("id"),
                    r.query.as_deref().unwrap_or_default()
                )))
            })
            .route(
                Route::new(Method::Post, "/echo", |_, r: Request| async move {
                    let value: serde_json::Value = r.json()?;
                    Ok(Reply::ok(&value))
                })
                .limit(16),
            );
        InProcess::new(Arc::new(App::new("items", table, Arc::new(()))))
    }

    #[tokio::test]
    async fn a_call_goes_through_the_route_table_and_its_rules() {
        let app = app();
        assert_eq!(app.name(), "items");
        let reply = app.call("GET", "/items/7?x=1", None, Bytes::new()).await;
        assert_eq!((reply.status, &reply.body[..]), (200, &b"7 x=1"[..]));
        let json = Some("application/json");
        let reply = app.call("POST", "/echo", json, Bytes::from("[1,2]")).await;
        assert_eq!((reply.status, &reply.body[..]), (200, &b"[1,2]"[..]));
        // The kit's errors, as a runtime adapter would answer them.
        let status = |reply: Reply| reply.status;
        assert_eq!(
            status(app.call("GET", "/nope", None, Bytes::new()).await),
            404
        );
        assert_eq!(
            status(app.call("DELETE", "/echo", None, Bytes::new()).await),
            405
        );
        let big = Bytes::from(vec![b'1'; 17]);
        assert_eq!(status(app.call("POST", "/echo", json, big).await), 413);
        let text = Some("text/plain");
        assert_eq!(
            status(app.call("POST", "/echo", text, Bytes::from("1")).await),
            415
        );
        let reply = app.call("GET", "/nope", None, Bytes::new()).await;
        let body: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(body["error"]["code"], "not_found");
    }
}
