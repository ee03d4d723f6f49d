//! The route table and the values that cross it.
//!
//! A service lists every route once in a [`RouteTable`]: method, path pattern (`/waiters/{id}`), what
//! its body is, and an async handler from a [`Request`] to a [`Reply`]. A runtime adapter never sees
//! the handlers' types: it mounts the table's [`Endpoint`]s through its own router and calls
//! [`AppHandle::call`] with the route index, the path parameters and the body it extracted. Content-type
//! checks, JSON decoding, error bodies and per-request logging live here, so every runtime does the
//! same work.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures::FutureExt;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// The content types replies carry; adapters turn these into header values without re-validating.
pub mod content_type {
    /// JSON bodies and every error.
    pub const JSON: &str = "application/json";
    /// `/bench/hello`.
    pub const TEXT: &str = "text/plain; charset=utf-8";
    /// Raw bytes.
    pub const OCTETS: &str = "application/octet-stream";
}

/// A boxed, sendable future, the shape every handler returns.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Largest JSON body accepted on an ordinary route (1 MiB).
pub const JSON_BODY_LIMIT: usize = 1 << 20;
/// Largest body accepted on a bench route (16 MiB).
pub const BENCH_BODY_LIMIT: usize = 16 << 20;

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

/// The error codes of the API and their statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// 400: malformed JSON, a bad query string or path value.
    BadRequest,
    /// 404: no such path or resource.
    NotFound,
    /// 405: a known path with the wrong method.
    MethodNotAllowed,
    /// 409: the resource is not in a state that allows the change, or a unique key is taken.
    Conflict,
    /// 413: the body is larger than the route accepts.
    PayloadTooLarge,
    /// 415: a JSON route was sent something that is not JSON.
    UnsupportedMediaType,
    /// 422: well-formed input that breaks a rule.
    Unprocessable,
    /// 500: a bug or an unexpected failure; details go to the log only.
    Internal,
    /// 502: a peer service answered with something unusable.
    BadGateway,
    /// 503: a peer service or the store cannot be reached.
    Unavailable,
}

impl ErrorCode {
    /// The HTTP status for this code.
    pub fn status(self) -> u16 {
        match self {
            ErrorCode::BadRequest => 400,
            ErrorCode::NotFound => 404,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::Conflict => 409,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::UnsupportedMediaType => 415,
            ErrorCode::Unprocessable => 422,
            ErrorCode::Internal => 500,
            ErrorCode::BadGateway => 502,
            ErrorCode::Unavailable => 503,
        }
    }

    /// The code's name in error bodies.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::NotFound => "not_found",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::Conflict => "conflict",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::UnsupportedMediaType => "unsupported_media_type",
            ErrorCode::Unprocessable => "unprocessable",
            ErrorCode::Internal => "internal",
            ErrorCode::BadGateway => "bad_gateway",
            ErrorCode::Unavailable => "unavailable",
        }
    }
}

/// The one error type of every handler: a code and a message for the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct ApiError {
    /// What went wrong, which fixes the status.
    pub code: ErrorCode,
    /// A sentence for the client; for 500 a generic one (the cause is logged).
    pub message: String,
}

macro_rules! error_constructors {
    ($($name:ident => $code:ident),* $(,)?) => {
        $(
            #[doc = concat!("An error with code `", stringify!($code), "`.")]
            pub fn $name(message: impl Into<String>) -> ApiError {
                ApiError { code: ErrorCode::$code, message: message.into() }
            }
        )*
    };
}

impl ApiError {
    error_constructors! {
        bad_request => BadRequest,
        not_found => NotFound,
        method_not_allowed => MethodNotAllowed,
        conflict => Conflict,
        payload_too_large => PayloadTooLarge,
        unsupported_media_type => UnsupportedMediaType,
        unprocessable => Unprocessable,
        bad_gateway => BadGateway,
        unavailable => Unavailable,
    }

    /// A 500 whose cause is logged here and never sent to the client.
    pub fn internal(cause: impl fmt::Display) -> ApiError {
        tracing::error!(%cause, "internal error");
        ApiError {
            code: ErrorCode::Internal,
            message: "internal error".into(),
        }
    }

    /// The 404 for a path no route matches.
    pub fn no_route(method: &str, path: &str) -> ApiError {
        ApiError::not_found(format!("no route for {method} {path}"))
    }

    /// The 413 for a body over `limit` bytes.
    pub fn too_large(limit: usize) -> ApiError {
        ApiError::payload_too_large(format!("body larger than {limit} bytes"))
    }

    /// The error as the JSON body `{"error": {"code", "message"}}` with its status.
    pub fn to_reply(&self) -> Reply {
        #[derive(Serialize)]
        struct Body<'a> {
            error: Inner<'a>,
        }
        #[derive(Serialize)]
        struct Inner<'a> {
            code: &'a str,
            message: &'a str,
        }
        Reply::json(
            self.code.status(),
            &Body {
                error: Inner {
                    code: self.code.as_str(),
                    message: &self.message,
                },
            },
        )
    }
}

/// A request as a handler sees it, whatever runtime parsed it.
#[derive(Debug, Default)]
pub struct Request {
    /// Path parameters by name, as matched by the runtime's router.
    pub params: Vec<(String, String)>,
    /// The raw query string, without `?`.
    pub query: Option<String>,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The whole body, already limited by the adapter.
    pub body: Bytes,
}

impl Request {
    /// A path parameter by name (empty if the pattern has none of that name).
    pub fn param(&self, name: &str) -> &str {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    }

    /// Decodes the body as JSON: syntax errors are 400, values that break a type or rule are 422
    /// with the path of the offending field in the message.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        decode_json(&self.body)
    }

    /// Decodes the query string; a value of the wrong type is 400 naming the parameter.
    pub fn query<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        let raw = self.query.as_deref().unwrap_or("");
        let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(raw.as_bytes()));
        serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            ApiError::bad_request(format!("query parameter {path}: {}", e.inner()))
        })
    }
}

/// Decodes JSON bytes with Brigade's error rules (400 for syntax, 422 for content, field path named).
pub fn decode_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.inner();
        let field = if path == "." {
            String::new()
        } else {
            format!("{path}: ")
        };
        match inner.classify() {
            serde_json::error::Category::Data => ApiError::unprocessable(format!("{field}{inner}")),
            _ => ApiError::bad_request(format!("malformed JSON: {inner}")),
        }
    })?;
    de.end()
        .map_err(|e| ApiError::bad_request(format!("malformed JSON: {e}")))?;
    Ok(value)
}

/// What a handler answers: a status, a content type and a body.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type` header.
    pub content_type: &'static str,
    /// The body.
    pub body: Bytes,
}

impl Reply {
    /// `status` with `value` encoded as JSON.
    pub fn json<T: Serialize + ?Sized>(status: u16, value: &T) -> Reply {
        match serde_json::to_vec(value) {
            Ok(body) => Reply {
                status,
                content_type: content_type::JSON,
                body: body.into(),
            },
            Err(e) => ApiError::internal(format!("encoding a reply: {e}")).to_reply(),
        }
    }

    /// 200 with a JSON body.
    pub fn ok<T: Serialize + ?Sized>(value: &T) -> Reply {
        Reply::json(200, value)
    }

    /// 201 with a JSON body.
    pub fn created<T: Serialize + ?Sized>(value: &T) -> Reply {
        Reply::json(201, value)
    }

    /// 204 with no body.
    pub fn no_content() -> Reply {
        Reply {
            status: 204,
            content_type: content_type::TEXT,
            body: Bytes::new(),
        }
    }

    /// 200 with a plain-text body.
    pub fn text(body: impl Into<Bytes>) -> Reply {
        Reply {
            status: 200,
            content_type: content_type::TEXT,
            body: body.into(),
        }
    }

    /// 200 with a binary body.
    pub fn octets(body: impl Into<Bytes>) -> Reply {
        Reply {
            status: 200,
            content_type: content_type::OCTETS,
            body: body.into(),
        }
    }
}

impl From<ApiError> for Reply {
    fn from(e: ApiError) -> Reply {
        e.to_reply()
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

/// A type-erased handler: its future already maps errors and panics to replies, so a request costs
/// one allocation for the whole handler future.
type Handler<S> = Arc<dyn Fn(Arc<S>, Request) -> BoxFuture<Reply> + Send + Sync>;

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
    handler: Handler<S>,
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
            handler: Arc::new(move |s, r| {
                let fut = AssertUnwindSafe(handler(s, r)).catch_unwind();
                Box::pin(async move {
                    match fut.await {
                        Ok(Ok(reply)) => reply,
                        Ok(Err(e)) => e.to_reply(),
                        Err(panic) => ApiError::internal(panic_message(&panic)).to_reply(),
                    }
                })
            }),
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

    /// The routes, in order.
    pub fn routes(&self) -> &[Route<S>] {
        &self.routes
    }
}

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

/// The parameter names of a pattern such as `/tables/{id}/seat`.
pub fn pattern_params(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .collect()
}

/// A segment of a path pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment<'a> {
    /// A literal segment.
    Literal(&'a str),
    /// A `{name}` parameter.
    Param(&'a str),
}

/// Splits a pattern into its segments (`/tables/{id}` → `tables`, `{id}`).
pub fn pattern_segments(path: &str) -> Vec<Segment<'_>> {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(
            |seg| match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(name) => Segment::Param(name),
                None => Segment::Literal(seg),
            },
        )
        .collect()
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
}

/// A route table bound to its state: the [`AppHandle`] of an application.
pub struct App<S> {
    name: String,
    table: RouteTable<S>,
    state: Arc<S>,
    endpoints: Vec<Endpoint>,
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

    fn call(&self, route: usize, request: Request) -> BoxFuture<Reply> {
        let Some(r) = self.table.routes.get(route) else {
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

fn panic_message(panic: &Box<dyn Any + Send>) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("handler panicked: {text}")
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

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> RouteTable<()> {
        RouteTable::new()
            .get("/items", |_, _| async { Ok(Reply::text("list")) })
            .post("/items", |_, r| async move {
                let v: serde_json::Value = r.json()?;
                Ok(Reply::created(&v))
            })
            .get("/items/{id}", |_, r| async move {
                Ok(Reply::text(r.param("id").to_string()))
            })
            .get("/boom", |_, _| async { panic!("kaboom") })
    }

    fn call(app: &App<()>, route: usize, req: Request) -> Reply {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(app.call(route, req))
    }

    #[test]
    fn endpoints_group_methods_by_path() {
        let app = App::new("t", table(), Arc::new(()));
        let e = app.endpoints();
        assert_eq!(e.len(), 3);
        assert_eq!(e[0].path, "/items");
        assert_eq!(e[0].methods, vec![(Method::Get, 0), (Method::Post, 1)]);
        assert_eq!(e[1].params, vec!["id"]);
        assert_eq!(e[0].route_for(Method::Delete), None);
        assert_eq!(
            e[0].method_not_allowed("DELETE").code,
            ErrorCode::MethodNotAllowed
        );
    }

    #[test]
    #[should_panic(expected = "added twice")]
    fn a_route_added_twice_is_refused() {
        let _ = table().get("/items", |_, _| async { Ok(Reply::text("again")) });
    }

    #[test]
    fn matcher_finds_endpoints_and_params() {
        let app = App::new("t", table(), Arc::new(()));
        let m = app.matcher().at("/items/abc").unwrap();
        assert_eq!(*m.value, 1);
        assert_eq!(m.params.get("id"), Some("abc"));
        assert!(app.matcher().at("/nothing").is_err());
    }

    #[test]
    fn json_route_refuses_other_content_types() {
        let app = App::new("t", table(), Arc::new(()));
        let req = Request {
            content_type: Some("text/plain".into()),
            body: "{}".into(),
            ..Default::default()
        };
        assert_eq!(call(&app, 1, req).status, 415);
        let req = Request {
            content_type: Some("application/json; charset=utf-8".into()),
            body: "{\"a\":1}".into(),
            ..Default::default()
        };
        assert_eq!(call(&app, 1, req).status, 201);
    }

    #[test]
    fn malformed_json_is_400_and_wrong_types_are_422_naming_the_field() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Thing {
            name: String,
        }
        let e = decode_json::<Thing>(b"{\"name\": ").unwrap_err();
        assert_eq!(e.code, ErrorCode::BadRequest);
        let e = decode_json::<Thing>(b"{\"name\": 5}").unwrap_err();
        assert_eq!(e.code, ErrorCode::Unprocessable);
        assert!(e.message.starts_with("name: "), "{}", e.message);
        let e = decode_json::<Thing>(b"{\"name\": \"a\"} trailing").unwrap_err();
        assert_eq!(e.code, ErrorCode::BadRequest);
    }

    #[test]
    fn a_panicking_handler_answers_500_with_a_json_body() {
        let app = App::new("t", table(), Arc::new(()));
        let reply = call(&app, 3, Request::default());
        assert_eq!(reply.status, 500);
        let v: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(v["error"]["code"], "internal");
    }

    #[test]
    fn error_bodies_have_code_and_message() {
        let r = ApiError::conflict("taken").to_reply();
        assert_eq!(r.status, 409);
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"error": {"code": "conflict", "message": "taken"}})
        );
    }

    #[test]
    fn query_values_of_the_wrong_type_are_400_naming_the_parameter() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Q {
            limit: Option<u32>,
        }
        let r = Request {
            query: Some("limit=abc".into()),
            ..Default::default()
        };
        let e = r.query::<Q>().unwrap_err();
        assert_eq!(e.code, ErrorCode::BadRequest);
        assert!(e.message.contains("limit"), "{}", e.message);
        let r = Request {
            query: Some("limit=7".into()),
            ..Default::default()
        };
        assert_eq!(r.query::<Q>().unwrap().limit, Some(7));
    }
}
