//! A route table bound to its state ([`App`]), type-erased as the [`AppHandle`] an adapter mounts:
//! its endpoints (one per path pattern, with the methods it answers), a matcher for runtimes without
//! a router, the call that takes a matched route and its raw request, applies the path and body
//! rules every runtime shares and runs the handler inside the request's [`Call`] (its trace context,
//! its metrics and its log line), and the one place a request no route takes gets its 404 or 405
//! ([`AppHandle::unmatched`]).
//!
//! Every app also answers two routes of its own after the table's: `GET /metrics` (its
//! [`Metrics`], once the service is built with metrics on) and `GET /openapi.json` (the document
//! generated from the table, see [`crate::openapi`]).

use crate::observe::Stopwatch;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use tracing::Instrument;

use super::pattern::{pattern_params, ParamError, ParamSlots};
use super::{
    content_type, ApiError, BodyKind, BoxFuture, Method, RawRequest, Reply, Request, Route,
    RouteSpec, RouteTable,
};
use crate::observe::trace::TraceContext;
use crate::observe::Metrics;
use crate::openapi::{self, Body, RouteDoc, METRICS_CONTENT_TYPE};

/// The path of the metrics every app serves.
pub const METRICS_PATH: &str = "/metrics";
/// The path of the OpenAPI document every app serves.
pub const OPENAPI_PATH: &str = "/openapi.json";

/// One path pattern and the routes (one per method) that share it: what an adapter mounts.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The path pattern, `{name}` for a parameter.
    pub path: &'static str,
    /// The pattern's parameter names, in order.
    pub params: Vec<&'static str>,
    /// The methods it answers and the index of each one's route.
    pub methods: Vec<(Method, usize)>,
    /// The largest body any of its routes accepts.
    pub limit: usize,
}

impl Endpoint {
    /// The route index for `method`, if the endpoint answers it.
    pub fn route_for(&self, method: Method) -> Option<usize> {
        self.methods
            .iter()
            .find(|(m, _)| *m == method)
            .map(|(_, i)| *i)
    }

    /// Whether `path` (raw, without the query) has this endpoint's segments, as
    /// [`ParamSlots::fits`] says of a route's.
    pub fn fits(&self, path: &str) -> bool {
        let slashes = |p: &str| {
            let p = p.strip_prefix('/').unwrap_or(p);
            p.bytes().filter(|&b| b == b'/').count()
        };
        slashes(path) == slashes(self.path)
    }

    /// The 405 error naming the methods this endpoint does answer.
    pub fn method_not_allowed(&self, method: &str) -> ApiError {
        let allowed: Vec<&str> = self.methods.iter().map(|(m, _)| m.as_str()).collect();
        ApiError::method_not_allowed(format!(
            "{method} is not allowed on {}; allowed: {}",
            self.path,
            allowed.join(", ")
        ))
    }
}

/// A service with its state, type-erased so an adapter is not generic over the application.
pub trait AppHandle: Send + Sync + 'static {
    /// The service's name, for logs.
    fn name(&self) -> &str;
    /// The path patterns to mount, each with its methods.
    fn endpoints(&self) -> &[Endpoint];
    /// Runs route `route`, the one the runtime's router matched, on `request`: the kit takes its
    /// path parameters from `request.path` by position in the route's pattern, percent-decoded
    /// once ([`ParamSlots::take`]; a path of another shape, which a router matched only after
    /// normalising it, is [`AppHandle::unmatched`]'s 404, a parameter that is not UTF-8 a 400).
    /// Never fails: errors (and panics) become error replies.
    fn call(&self, route: usize, request: RawRequest) -> BoxFuture<Reply>;
    /// A matcher over the endpoints for runtimes that bring no router of their own (hyper): it is
    /// their router, asked once per request.
    fn matcher(&self) -> &matchit::Router<usize>;
    /// Every route without its handler, in the table's order (route `i` is `routes()[i]`).
    fn routes(&self) -> &[RouteSpec];
    /// The answer to a request no route takes, the one place 404 and 405 come from: 405 naming
    /// the methods of `endpoint` when the runtime's router matched the path to that endpoint but
    /// no route of it takes `method` (and the path as it came has the endpoint's segments,
    /// [`Endpoint::fits`]), else 404; counted under the one unmatched label. Matches nothing
    /// itself.
    fn unmatched(&self, method: &str, path: &str, endpoint: Option<usize>) -> Reply {
        unmatched_reply(self.endpoints(), method, path, endpoint)
    }
    /// The answer to a request for route `route` the adapter refused before calling it (a body
    /// over the limit, a body or path that could not be read), counted under its route.
    fn refused(&self, route: usize, error: ApiError) -> Reply {
        let _ = route;
        error.to_reply()
    }
    /// Starts recording into `metrics` (once; a second call is ignored).
    fn observe(&self, metrics: Arc<Metrics>) {
        let _ = metrics;
    }
    /// The OpenAPI 3.1 document of the service, as served on `/openapi.json`.
    fn openapi(&self) -> Bytes {
        Bytes::new()
    }
}

/// What a request carries through the route table besides itself: its trace context, where its
/// metrics go and when it started. Made by [`App::call`]; [`Call::run`] wraps the handler's future.
pub(super) struct Call {
    trace: TraceContext,
    /// The caller's budget, if it sent one.
    budget: Option<std::time::Duration>,
    method: Method,
    path: &'static str,
    metrics: Option<(Arc<Metrics>, usize)>,
    started: Option<Stopwatch>,
}

/// The 404 or 405 of [`AppHandle::unmatched`].
fn unmatched_reply(
    endpoints: &[Endpoint],
    method: &str,
    path: &str,
    endpoint: Option<usize>,
) -> Reply {
    match endpoint
        .and_then(|e| endpoints.get(e))
        .filter(|e| e.fits(path))
    {
        Some(e) => e.method_not_allowed(method).to_reply(),
        None => ApiError::no_route(method, path).to_reply(),
    }
}

impl Call {
    /// Runs `fut` as the request: inside its trace context, its caller's budget and its span,
    /// counted in flight, then its answer and latency recorded and, at debug level, its log line
    /// written.
    pub(super) async fn run(self, fut: impl Future<Output = Reply>) -> Reply {
        let _in_flight = self.metrics.as_ref().map(|(m, _)| m.enter());
        let fut = crate::deadline::scope(self.budget, fut);
        // The span only carries the debug log's fields: with debug off it is disabled anyway, and
        // not wrapping the future in it saves every request its enter/exit and drop.
        let reply = if tracing::enabled!(tracing::Level::DEBUG) {
            let span = tracing::debug_span!(
                "request",
                trace_id = %self.trace,
                method = %self.method,
                route = self.path,
            );
            self.trace.scope(fut).instrument(span).await
        } else {
            self.trace.scope(fut).await
        };
        self.finish(&reply);
        reply
    }

    /// Records the answer in the metrics and the log.
    fn finish(&self, reply: &Reply) {
        let Some(started) = self.started else { return };
        let nanos = started.nanos();
        if let Some((m, route)) = &self.metrics {
            if let Some(slot) = m.route(*route) {
                slot.record(reply.status, nanos);
            }
        }
        tracing::debug!(
            trace_id = %self.trace,
            method = %self.method,
            route = self.path,
            status = reply.status,
            micros = nanos / 1_000,
            "request"
        );
    }
}

/// A route table bound to its state: the [`AppHandle`] of an application.
pub struct App<S> {
    name: String,
    table: RouteTable<S>,
    state: Arc<S>,
    endpoints: Vec<Endpoint>,
    specs: Vec<RouteSpec>,
    /// Each route's path parameters' places (route `i` is `slots[i]`).
    slots: Vec<ParamSlots>,
    matcher: matchit::Router<usize>,
    metrics: OnceLock<Arc<Metrics>>,
    openapi: Bytes,
}

impl<S> fmt::Debug for App<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("App")
            .field("name", &self.name)
            .field("table", &self.table)
            .finish()
    }
}

/// The app's own routes, after the table's: metrics, then the OpenAPI document.
fn builtin_routes() -> [(RouteSpec, RouteDoc); 2] {
    let get = |path| RouteSpec {
        method: Method::Get,
        path,
        body: BodyKind::Empty,
        limit: super::JSON_BODY_LIMIT,
    };
    [
        (
            get(METRICS_PATH),
            RouteDoc {
                summary: Some("Prometheus metrics (404 when the server runs with --no-metrics)"),
                answers: vec![(200, Body::Metrics)],
                errors: vec![404],
                ..Default::default()
            },
        ),
        (
            get(OPENAPI_PATH),
            RouteDoc {
                summary: Some("This document"),
                answers: vec![(200, Body::Json(openapi::schema_of::<serde_json::Value>))],
                ..Default::default()
            },
        ),
    ]
}

impl<S: Send + Sync + 'static> App<S> {
    /// Binds `table` to `state`. Panics if two patterns conflict or the table has a route of its
    /// own on `/metrics` or `/openapi.json` (programming errors).
    pub fn new(name: impl Into<String>, table: RouteTable<S>, state: Arc<S>) -> App<S> {
        let name = name.into();
        let builtins = builtin_routes();
        let mut specs = table.specs();
        for s in &specs {
            assert!(
                s.path != METRICS_PATH && s.path != OPENAPI_PATH,
                "{} {} is served by the kit itself",
                s.method,
                s.path
            );
        }
        specs.extend(builtins.iter().map(|(s, _)| *s));
        let mut endpoints: Vec<Endpoint> = Vec::new();
        let mut by_path: HashMap<&'static str, usize> = HashMap::new();
        for (i, r) in specs.iter().enumerate() {
            let e = *by_path.entry(r.path).or_insert_with(|| {
                endpoints.push(Endpoint {
                    path: r.path,
                    params: pattern_params(r.path),
                    methods: Vec::new(),
                    limit: 0,
                });
                endpoints.len() - 1
            });
            endpoints[e].methods.push((r.method, i));
            endpoints[e].limit = endpoints[e].limit.max(r.limit);
        }
        let mut matcher = matchit::Router::new();
        for (i, e) in endpoints.iter().enumerate() {
            if let Err(err) = matcher.insert(e.path, i) {
                panic!("route pattern {} conflicts: {err}", e.path);
            }
        }
        let docs: Vec<(RouteSpec, &RouteDoc)> = table
            .routes()
            .iter()
            .map(|r| (r.spec(), &r.doc))
            .chain(builtins.iter().map(|(s, d)| (*s, d)))
            .collect();
        let openapi = Bytes::from(
            serde_json::to_vec(&openapi::document(&name, &docs))
                .expect("an OpenAPI document is JSON"),
        );
        App {
            name,
            slots: specs.iter().map(|s| ParamSlots::of(s.path)).collect(),
            specs,
            table,
            state,
            endpoints,
            matcher,
            metrics: OnceLock::new(),
            openapi,
        }
    }

    /// The state the handlers share.
    pub fn state(&self) -> &Arc<S> {
        &self.state
    }

    /// The metrics slot of route `route`, once observed.
    fn record(&self, route: usize, status: u16, started: Option<Stopwatch>) {
        if let (Some(m), Some(started)) = (self.metrics.get(), started) {
            if let Some(slot) = m.route(route) {
                slot.record(status, started.nanos());
            }
        }
    }

    /// Answers one of the app's own routes (`i` counts from the first after the table's).
    fn builtin(&self, i: usize) -> Reply {
        match i {
            0 => match self.metrics.get() {
                Some(m) => Reply {
                    status: 200,
                    content_type: METRICS_CONTENT_TYPE,
                    body: Bytes::from(m.encode()),
                },
                None => ApiError::not_found("metrics are off (--no-metrics)").to_reply(),
            },
            1 => Reply {
                status: 200,
                content_type: content_type::JSON,
                body: self.openapi.clone(),
            },
            _ => ApiError::internal("route index out of range").to_reply(),
        }
    }
}

impl<S: Send + Sync + 'static> AppHandle for App<S> {
    fn name(&self) -> &str {
        &self.name
    }

    fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
    }

    fn matcher(&self) -> &matchit::Router<usize> {
        &self.matcher
    }

    fn routes(&self) -> &[RouteSpec] {
        &self.specs
    }

    fn call(&self, route: usize, raw: RawRequest) -> BoxFuture<Reply> {
        let metrics = self.metrics.get();
        let started =
            (metrics.is_some() || tracing::enabled!(tracing::Level::DEBUG)).then(Stopwatch::start);
        let Some(spec) = self.specs.get(route) else {
            let reply = ApiError::internal("route index out of range").to_reply();
            return Box::pin(async move { reply });
        };
        let params = match self.slots[route].take(&raw.path) {
            Ok(params) => params,
            Err(ParamError::Shape) => {
                let reply = self.unmatched(spec.method.as_str(), &raw.path, None);
                return Box::pin(async move { reply });
            }
            Err(ParamError::NotUtf8(name)) => {
                let reply = ApiError::bad_request(format!(
                    "path parameter {name} is not UTF-8 once percent-decoded"
                ))
                .to_reply();
                self.record(route, reply.status, started);
                return Box::pin(async move { reply });
            }
        };
        let Some(r) = self.table.routes().get(route) else {
            let reply = self.builtin(route - self.table.routes().len());
            self.record(route, reply.status, started);
            return Box::pin(async move { reply });
        };
        let request = Request::from_raw(raw, params);
        if let Err(e) = check_body(r, &request) {
            let reply = e.to_reply();
            self.record(route, reply.status, started);
            return Box::pin(async move { reply });
        }
        // The calibration knob (off unless `--handicap-us`): its cost lands before the handler.
        crate::handicap::burn();
        let call = Call {
            trace: TraceContext::from_header(request.traceparent.as_deref()),
            budget: request
                .budget
                .as_deref()
                .and_then(crate::deadline::parse_budget),
            method: r.method,
            path: r.path,
            metrics: metrics.map(|m| (m.clone(), route)),
            started,
        };
        (r.handler)(self.state.clone(), request, call)
    }

    fn unmatched(&self, method: &str, path: &str, endpoint: Option<usize>) -> Reply {
        let started = self.metrics.get().map(|_| Stopwatch::start());
        let reply = unmatched_reply(&self.endpoints, method, path, endpoint);
        if let (Some(m), Some(started)) = (self.metrics.get(), started) {
            m.unmatched(method).record(reply.status, started.nanos());
        }
        reply
    }

    fn refused(&self, route: usize, error: ApiError) -> Reply {
        let reply = error.to_reply();
        self.record(
            route,
            reply.status,
            self.metrics.get().map(|_| Stopwatch::start()),
        );
        reply
    }

    fn observe(&self, metrics: Arc<Metrics>) {
        metrics.set_routes(&self.specs);
        let _ = self.metrics.set(metrics);
    }

    fn openapi(&self) -> Bytes {
        self.openapi.clone()
    }
}

/// The body rules every runtime applies alike: size and content type.
fn check_body<S>(route: &Route<S>, request: &Request) -> Result<(), ApiError> {
    if request.body.len() > route.limit {
        return Err(ApiError::too_large(route.limit));
    }
    if route.body == BodyKind::Json {
        let ct = request.content_type.as_deref().unwrap_or("");
        let essence = ct.split(';').next().unwrap_or("").trim();
        let is_json = essence.eq_ignore_ascii_case("application/json")
            || (essence.len() > 5 && essence.to_ascii_lowercase().ends_with("+json"));
        if !is_json {
            return Err(ApiError::unsupported_media_type(format!(
                "expected Content-Type application/json, got {}",
                if ct.is_empty() { "none" } else { ct }
            )));
        }
    }
    Ok(())
}
