//! What a running service shows about itself: Prometheus metrics ([`Metrics`], served on
//! `GET /metrics`) and the W3C trace context that follows one request across services ([`trace`]).
//!
//! Both live in the kit, beside the route table, so every runtime and every application built on the
//! kit shows the same metric names and labels and passes the same trace id on: the adapters only hand
//! the `traceparent` header to [`crate::Request`] and unmatched requests to
//! [`crate::AppHandle::unmatched`].
//!
//! Parts: `slots` (lock-free counters and histograms, one per label set, made when the service is
//! built so a request touches atomics only, and the TSC stopwatch that times them), `metrics` ([`Metrics`]: the slots of one service and
//! their Prometheus encoding), `process` (CPU seconds and resident memory from `/proc`), `store`
//! ([`MeteredStore`]: a store that times its operations), and [`trace`].

mod metrics;
mod process;
mod slots;
mod store;
pub mod trace;

pub use metrics::{accept_failed, Metrics, RouteMetrics, UNMATCHED};
pub(crate) use slots::Stopwatch;
pub use store::MeteredStore;
