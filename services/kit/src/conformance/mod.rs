//! Black-box conformance helpers for any service built on the kit: an HTTP client whose answers
//! assert Brigade's error bodies ([`TestClient`], [`Answer::expect`]), and the checks every service
//! must pass whatever its domain, written against its own route table ([`run_standard_checks`]):
//! `/health` and `/ready`, JSON errors for 400, 404, 405, 413, 415 and 422, the bench endpoints,
//! `/openapi.json` covering the route table and `/metrics` following it.
//!
//! A service's own suite runs these, then its domain's checks, against a running [`Deployment`];
//! `brigade-launch`'s test harness gives one for every compiled runtime × store (its
//! `conformance_matrix!`), the way juniper's `run_http_test_suite` runs against each integration.
//!
//! Parts: `client` ([`TestClient`], [`Answer`]), [`errors`] (the error answers, from the route
//! table), [`standard`] (health, readiness, bench endpoints), [`observe`] (the OpenAPI document and
//! the metrics), `races` ([`exactly_one_wins`]).

mod client;
pub mod errors;
mod http3;
pub mod observe;
mod races;
pub mod standard;

pub use client::{Answer, TestClient, Wire, ANSWER_TIMEOUT};
pub use races::exactly_one_wins;

use crate::http::RouteSpec;

/// A running deployment of one or more services under test.
pub trait Deployment: Send + Sync {
    /// The services it runs, by name.
    fn services(&self) -> Vec<String>;
    /// The base URL of service `service` (`http://127.0.0.1:PORT`). Panics for a service it does
    /// not run.
    fn url(&self, service: &str) -> String;
    /// The routes of service `service`.
    fn routes(&self, service: &str) -> Vec<RouteSpec>;
    /// The runtime serving it, as `/health` reports it.
    fn runtime(&self) -> String;
    /// The store it uses, as `/health` reports it.
    fn store(&self) -> String;
    /// Stops service `service`; the others keep running (to check how a peer that is down is
    /// answered).
    fn stop(&self, service: &str);
    /// A client that speaks the deployment's protocol (plaintext HTTP/1.1 unless it says else).
    fn client(&self) -> TestClient {
        TestClient::default()
    }
}

/// Runs the checks every service passes, on every service of `d`: health and readiness, the error
/// answers its route table implies, the bench endpoints where it carries them, its OpenAPI document
/// and its metrics.
pub async fn run_standard_checks(c: &TestClient, d: &dyn Deployment) {
    let (runtime, store) = (d.runtime(), d.store());
    for service in d.services() {
        let base = d.url(&service);
        let routes = d.routes(&service);
        standard::health_and_readiness(c, &base, &service, &runtime, &store).await;
        errors::run(c, &base, &routes).await;
        if routes.iter().any(|r| r.path == "/bench/hello") {
            standard::bench_endpoints(c, &base).await;
        }
        observe::openapi_covers_the_route_table(c, &base, &routes).await;
        observe::metrics_follow_the_route_table(c, &base, &routes).await;
    }
}
