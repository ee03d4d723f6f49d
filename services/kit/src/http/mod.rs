//! The route table and the values that cross it.
//!
//! A service lists every route once in a [`RouteTable`]: method, path pattern (`/waiters/{id}`), what
//! its body is, and an async handler from a [`Request`] to a [`Reply`]. A runtime adapter never sees
//! the handlers' types: it mounts the table's [`Endpoint`]s through its own router and calls
//! [`AppHandle::call`] with the index of the route its router matched and the [`RawRequest`] it
//! read (raw path, query, the headers the kit reads, body), or [`AppHandle::unmatched`] for what no
//! route takes (the one place a 404 or 405 comes from). Path parameters, content-type checks, JSON
//! decoding, error bodies and per-request logging live here, so every runtime does the same work.
//!
//! Parts: `error` ([`ApiError`] and its codes), `request` ([`Request`], [`RawRequest`],
//! [`decode_json`]), `reply`
//! ([`Reply`]), `route` ([`Method`], [`Route`], [`RouteTable`]), `pattern` (path patterns), `app`
//! ([`App`], [`AppHandle`], [`Endpoint`]).

use std::future::Future;
use std::pin::Pin;

mod app;
mod error;
mod pattern;
mod reply;
mod request;
mod route;

pub use app::{App, AppHandle, Endpoint, METRICS_PATH, OPENAPI_PATH};
pub use error::{ApiError, ErrorCode};
pub use pattern::{pattern_params, pattern_segments, ParamError, ParamSlots, Segment};
pub use reply::Reply;
pub use request::{decode_json, RawRequest, Request};
pub use route::{BodyKind, Method, Route, RouteSpec, RouteTable};

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

#[cfg(test)]
mod tests;
