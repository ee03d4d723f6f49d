//! Brigade's generic kit: everything a service needs to be served by any runtime and measured,
//! and nothing about restaurants.
//!
//! - [`http`]: the route table, the request and reply values, the one error type ([`ApiError`]).
//! - [`limits`]: the server limits every runtime applies alike ([`limits::ServerLimits`]) and the
//!   shared code that enforces them (head size and count, body size and read time, connections).
//! - [`store`]: the [`store::Store`] trait and its backends (memory, embedded redb, MongoDB).
//! - [`peer`]: the pooled HTTP client services use to call each other.
//! - [`deadline`]: the budget that follows a request across services, so store operations and
//!   peer calls wait within it instead of stacking their timeouts.
//! - [`preload`]: filling an empty store with an application's realistic documents, in bulk.
//! - [`resource`]: resources kept in a store: typed values to documents and back, GETs and lists
//!   answered from the stored JSON, and the paging every list takes.
//! - [`standard`]: `/health`, `/ready` and the `/bench/*` endpoints every service carries.
//! - [`service`]: what a service is to whoever serves or tests it ([`service::Service`]), and the one
//!   place its store is opened and its application built.
//! - [`observe`]: Prometheus metrics (`GET /metrics`) and the W3C trace context that follows a
//!   request across services.
//! - [`openapi`]: the OpenAPI 3.1 document generated from the route table (`GET /openapi.json`).
//! - [`announce`]: the JSON lines a server prints on stdout (`listening`, `preloaded`) and
//!   `runtimes --json`: the contract with whoever starts it.
//! - [`skip`]: how a test that cannot run here says so, and the `BRIGADE_REQUIRE_*` variables
//!   (`BRIGADE_REQUIRE_MONGO`, `BRIGADE_REQUIRE_CGROUP`) that make the skip a failure.
//! - [`handicap`]: a calibration knob (`serve --handicap-us N`): a known CPU cost planted before
//!   every handler, to test the comparison's verdicts; off by default.
//! - `conformance` (feature `conformance`): the black-box HTTP test client and the checks every
//!   service passes whatever its domain.

pub mod announce;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod deadline;
pub mod handicap;
pub mod http;
pub mod limits;
pub mod observe;
pub mod openapi;
pub mod peer;
pub mod preload;
pub mod resource;
pub mod rules;
pub mod service;
pub mod skip;
pub mod standard;
pub mod store;
pub mod tls;

pub use http::{
    ApiError, App, AppHandle, ErrorCode, Method, RawRequest, Reply, Request, Route, RouteSpec,
    RouteTable,
};
pub use schemars;
pub use service::Service;
