//! Routes and the route table: method, path pattern, body rules and handler, listed once per
//! service. A handler's errors and panics become error replies here, so every runtime answers them
//! alike.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;

use super::app::Call;
use super::{ApiError, BoxFuture, Reply, Request, JSON_BODY_LIMIT};
use crate::openapi::{schema_of, Body, RouteDoc};

/// The HTTP methods a route can answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// GET
    Get,
    /// POST
    Post,
    /// PUT
    Put,
    /// PATCH
    Patch,
    /// DELETE
    Delete,
}

impl Method {
    /// The method's name as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        }
    }

    /// Parses a wire method name; `None` for methods no route can have (HEAD, OPTIONS, ...).
    pub fn parse(s: &str) -> Option<Method> {
        Some(match s {
            "GET" => Method::Get,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "PATCH" => Method::Patch,
            "DELETE" => Method::Delete,
            _ => return None,
        })
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a route's body must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// No body is read.
    Empty,
    /// A JSON body: a non-JSON content type is 415.
    Json,
    /// Any bytes.
    Raw,
}

/// A type-erased handler: its future already maps errors and panics to replies and runs inside the
/// request's [`Call`] (trace context, metrics, log line), so a request costs one allocation for the
/// whole handler future.
pub(super) type Handler<S> = Arc<dyn Fn(Arc<S>, Request, Call) -> BoxFuture<Reply> + Send + Sync>;

/// What a route is, without its handler: what a test or a tool needs to know to call it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteSpec {
    /// The method it answers.
    pub method: Method,
    /// The path pattern, `{name}` for a parameter.
    pub path: &'static str,
    /// What the body must be.
    pub body: BodyKind,
    /// The largest body accepted, in bytes.
    pub limit: usize,
}

/// One route: method, path pattern, body rules and handler.
pub struct Route<S> {
    /// The method it answers.
    pub method: Method,
    /// The path pattern, `{name}` for a parameter (`/waiters/{id}`).
    pub path: &'static str,
    /// What the body must be.
    pub body: BodyKind,
    /// The largest body accepted, in bytes.
    pub limit: usize,
    /// What the OpenAPI document says about it beyond the above.
    pub doc: RouteDoc,
    pub(super) handler: Handler<S>,
}

impl<S> fmt::Debug for Route<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.method, self.path)
    }
}

impl<S: Send + Sync + 'static> Route<S> {
    /// A route; the body kind is JSON for POST, PUT and PATCH and empty otherwise.
    pub fn new<F, Fut>(method: Method, path: &'static str, handler: F) -> Route<S>
    where
        F: Fn(Arc<S>, Request) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Reply, ApiError>> + Send + 'static,
    {
        let body = match method {
            Method::Post | Method::Put | Method::Patch => BodyKind::Json,
            Method::Get | Method::Delete => BodyKind::Empty,
        };
        Route {
            method,
            path,
            body,
            limit: JSON_BODY_LIMIT,
            doc: RouteDoc::default(),
            handler: Arc::new(move |s, r, call: Call| {
                let fut = AssertUnwindSafe(handler(s, r)).catch_unwind();
                Box::pin(call.run(async move {
                    match fut.await {
                        Ok(Ok(reply)) => reply,
                        Ok(Err(e)) => e.to_reply(),
                        Err(panic) => ApiError::internal(panic_message(&panic)).to_reply(),
                    }
                }))
            }),
        }
    }

    /// The route without its handler.
    pub fn spec(&self) -> RouteSpec {
        RouteSpec {
            method: self.method,
            path: self.path,
            body: self.body,
            limit: self.limit,
        }
    }

    /// Sets what the body must be.
    pub fn body(mut self, body: BodyKind) -> Self {
        self.body = body;
        self
    }

    /// Sets the largest body accepted.
    pub fn limit(mut self, bytes: usize) -> Self {
        self.limit = bytes;
        self
    }
}

/// Every route of one service, in the order they were added.
pub struct RouteTable<S> {
    routes: Vec<Route<S>>,
}

impl<S> fmt::Debug for RouteTable<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.routes).finish()
    }
}

impl<S> Default for RouteTable<S> {
    fn default() -> Self {
        RouteTable { routes: Vec::new() }
    }
}

macro_rules! method_shortcuts {
    ($($name:ident => $method:ident),*) => {
        $(
            #[doc = concat!("Adds a ", stringify!($method), " route with the default body rules.")]
            pub fn $name<F, Fut>(self, path: &'static str, handler: F) -> Self
            where
                F: Fn(Arc<S>, Request) -> Fut + Send + Sync + 'static,
                Fut: Future<Output = Result<Reply, ApiError>> + Send + 'static,
            {
                self.route(Route::new(Method::$method, path, handler))
            }
        )*
    };
}

impl<S: Send + Sync + 'static> RouteTable<S> {
    /// An empty table.
    pub fn new() -> Self {
        RouteTable::default()
    }

    /// Adds a route. Panics if the same method and path were added before: that is a programming
    /// error caught by the route-table tests, never by a request.
    pub fn route(mut self, route: Route<S>) -> Self {
        assert!(
            !self
                .routes
                .iter()
                .any(|r| r.method == route.method && r.path == route.path),
            "route {route:?} added twice"
        );
        self.routes.push(route);
        self
    }

    method_shortcuts!(get => Get, post => Post, put => Put, patch => Patch, delete => Delete);

    /// Appends every route of `other`.
    pub fn merge(mut self, other: RouteTable<S>) -> Self {
        for r in other.routes {
            self = self.route(r);
        }
        self
    }

    /// Describes the last route added with `f` (for the OpenAPI document). Panics on an empty
    /// table (a programming error).
    fn describe(mut self, f: impl FnOnce(&mut RouteDoc)) -> Self {
        let last = self
            .routes
            .last_mut()
            .expect("describe a route after adding it");
        f(&mut last.doc);
        self
    }

    /// The last route added takes a JSON body of type `T`.
    pub fn accepts<T: schemars::JsonSchema>(self) -> Self {
        self.describe(|d| d.request = Some(schema_of::<T>))
    }

    /// The last route added takes the query parameters of `T` (an object type's fields).
    pub fn query<T: schemars::JsonSchema>(self) -> Self {
        self.describe(|d| d.query = Some(schema_of::<T>))
    }

    /// The last route added takes path parameter `name` as described by `schema` (a JSON Schema;
    /// without one a parameter is any string).
    pub fn param(self, name: &'static str, schema: serde_json::Value) -> Self {
        self.describe(|d| d.params.push((name, schema)))
    }

    /// The last route added answers `status` with a JSON `T`.
    pub fn answers<T: schemars::JsonSchema>(self, status: u16) -> Self {
        self.describe(|d| d.answers.push((status, Body::Json(schema_of::<T>))))
    }

    /// The last route added answers `status` with `body` (text, bytes, nothing).
    pub fn answers_with(self, status: u16, body: Body) -> Self {
        self.describe(|d| d.answers.push((status, body)))
    }

    /// The last route added may also answer these error statuses (those of its own rules; the
    /// kit adds the ones its body rules give, see [`crate::openapi`]).
    pub fn errors(self, statuses: &[u16]) -> Self {
        self.describe(|d| d.errors.extend_from_slice(statuses))
    }

    /// One line on what the last route added does.
    pub fn summary(self, summary: &'static str) -> Self {
        self.describe(|d| d.summary = Some(summary))
    }

    /// The routes, in order.
    pub fn routes(&self) -> &[Route<S>] {
        &self.routes
    }

    /// Every route without its handler, in order.
    pub fn specs(&self) -> Vec<RouteSpec> {
        self.routes.iter().map(Route::spec).collect()
    }
}

fn panic_message(panic: &Box<dyn Any + Send>) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("handler panicked: {text}")
}
