//! A route table bound to its state ([`App`]), type-erased as the [`AppHandle`] an adapter mounts:
//! its endpoints (one per path pattern, with the methods it answers), a matcher for runtimes without
//! a router, and the call that applies the body rules every runtime shares, then runs the handler.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use super::pattern::pattern_params;
use super::{ApiError, BodyKind, BoxFuture, Method, Reply, Request, Route, RouteSpec, RouteTable};

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

    /// The 405 error naming the methods this endpoint does answer.
    pub fn method_not_allowed(&self, method: &str) -> ApiError {
        let allowed: Vec<&str> = self.methods.iter().map(|(m, _)| m.as_str()).collect();
        ApiError::method_not_allowed(format!(
            "{method} is not allowed on {}; allowed: {}",
            self.path,
            allowed.join(", ")
        ))
    }

    /// Pairs the parameter names with values matched in order.
    pub fn name_params(&self, values: impl IntoIterator<Item = String>) -> Vec<(String, String)> {
        self.params
            .iter()
            .map(|n| n.to_string())
            .zip(values)
            .collect()
    }
}

/// A service with its state, type-erased so an adapter is not generic over the application.
pub trait AppHandle: Send + Sync + 'static {
    /// The service's name, for logs.
    fn name(&self) -> &str;
    /// The path patterns to mount, each with its methods.
    fn endpoints(&self) -> &[Endpoint];
    /// Runs route `route` on `request`. Never fails: errors (and panics) become error replies.
    fn call(&self, route: usize, request: Request) -> BoxFuture<Reply>;
    /// A matcher over the endpoints for runtimes that bring no router of their own (hyper).
    fn matcher(&self) -> &matchit::Router<usize>;
    /// Every route without its handler, in the table's order (route `i` is `routes()[i]`).
    fn routes(&self) -> &[RouteSpec];
}

/// A route table bound to its state: the [`AppHandle`] of an application.
pub struct App<S> {
    name: String,
    table: RouteTable<S>,
    state: Arc<S>,
    endpoints: Vec<Endpoint>,
    specs: Vec<RouteSpec>,
    matcher: matchit::Router<usize>,
}

impl<S> fmt::Debug for App<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("App")
            .field("name", &self.name)
            .field("table", &self.table)
            .finish()
    }
}

impl<S: Send + Sync + 'static> App<S> {
    /// Binds `table` to `state`. Panics if two patterns conflict (a programming error).
    pub fn new(name: impl Into<String>, table: RouteTable<S>, state: Arc<S>) -> App<S> {
        let mut endpoints: Vec<Endpoint> = Vec::new();
        let mut by_path: HashMap<&'static str, usize> = HashMap::new();
        for (i, r) in table.routes().iter().enumerate() {
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
        App {
            name: name.into(),
            specs: table.specs(),
            table,
            state,
            endpoints,
            matcher,
        }
    }

    /// The state the handlers share.
    pub fn state(&self) -> &Arc<S> {
        &self.state
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

    fn call(&self, route: usize, request: Request) -> BoxFuture<Reply> {
        let Some(r) = self.table.routes().get(route) else {
            return Box::pin(
                async move { ApiError::internal("route index out of range").to_reply() },
            );
        };
        if let Err(e) = check_body(r, &request) {
            return Box::pin(async move { e.to_reply() });
        }
        let fut = (r.handler)(self.state.clone(), request);
        if !tracing::enabled!(tracing::Level::DEBUG) {
            return fut;
        }
        let (method, path, started) = (r.method, r.path, Instant::now());
        Box::pin(async move {
            let reply = fut.await;
            let micros = started.elapsed().as_micros() as u64;
            tracing::debug!(%method, path, status = reply.status, micros, "request");
            reply
        })
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
