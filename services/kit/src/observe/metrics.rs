//! [`Metrics`]: every metric of one service, made when the service is built (one slot per route,
//! store operation and peer, so recording never allocates, locks or hashes), and their encoding in
//! the Prometheus/OpenMetrics text format by prometheus-client at scrape time.
//!
//! Names and labels (documented in `docs/observability.md`, identical on every runtime):
//! - `brigade_http_requests_total{method, route, status}`: answers by route pattern and status
//!   class (`2xx`); requests no route takes share `route="(unmatched)"`, and their method is one of
//!   the usual ones or `OTHER`, so a scanner cannot grow the series count.
//! - `brigade_http_request_duration_seconds{method, route}`: histogram, from the route table's
//!   call to the reply (the body already read).
//! - `brigade_http_requests_in_flight`: requests inside the route table now.
//! - `brigade_store_operation_duration_seconds{collection, operation}`: histogram per store call.
//! - `brigade_store_errors_total{collection, operation, kind}`: `duplicate`, `unavailable`,
//!   `internal`.
//! - `brigade_peer_request_duration_seconds{peer}`: histogram per call to a peer service.
//! - `brigade_peer_requests_total{peer, status}`: the peers' answers by status class.
//! - `brigade_peer_errors_total{peer, kind}`: calls that got no usable answer: `unavailable`
//!   (no connection, or no answer in time), `bad_gateway` (a broken answer).
//! - `process_cpu_seconds_total`, `process_resident_memory_bytes`, `process_start_time_seconds`:
//!   from `/proc`, at scrape time (the start time tells one process behind several URLs apart).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use super::slots::{calibrate_clock, ByClass, Counter, Histogram, CLASSES};
use crate::http::{ErrorCode, RouteSpec};
use crate::store::StoreError;

/// The `route` label of requests that match no route.
pub const UNMATCHED: &str = "(unmatched)";
/// The `collection` label of store operations on no collection (`ping`) or on an undeclared one.
const NO_COLLECTION: &str = "(none)";
/// The `peer` label of a call to a peer not declared when the service was built.
const OTHER_PEER: &str = "(other)";

/// The store operations timed, in the order of their slots.
pub(crate) const STORE_OPS: [&str; 9] = [
    "insert",
    "insert_many",
    "get",
    "get_json",
    "list",
    "list_json",
    "update",
    "delete",
    "ping",
];
const STORE_ERRORS: [&str; 3] = ["duplicate", "unavailable", "internal"];
const PEER_ERRORS: [&str; 2] = ["unavailable", "bad_gateway"];

/// The methods the `method` label of an unmatched request takes; any other is `OTHER`.
const METHODS: [&str; 9] = [
    "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "OTHER",
];

/// One route's answers and latency.
#[derive(Debug, Default)]
pub struct RouteMetrics {
    answers: ByClass,
    latency: Histogram,
}

impl RouteMetrics {
    /// Records one answer with `status` that took `nanos` nanoseconds.
    pub fn record(&self, status: u16, nanos: u64) {
        self.answers.count(status);
        self.latency.observe(nanos);
    }
}

/// One store operation on one collection: its latency and its errors by kind.
#[derive(Debug, Default)]
pub(crate) struct StoreOpSlot {
    latency: Histogram,
    errors: [Counter; 3],
}

impl StoreOpSlot {
    /// Records a call that took `nanos` nanoseconds, and its error's kind if it failed.
    pub(crate) fn record(&self, nanos: u64, error: Option<&StoreError>) {
        self.latency.observe(nanos);
        if let Some(e) = error {
            let kind = match e {
                StoreError::Duplicate { .. } => 0,
                StoreError::Unavailable(_) => 1,
                StoreError::Internal(_) => 2,
            };
            self.errors[kind].inc();
        }
    }
}

#[derive(Debug, Default)]
struct PeerSlot {
    latency: Histogram,
    answers: ByClass,
    errors: [Counter; 2],
}

/// Every metric of one service.
#[derive(Debug)]
pub struct Metrics {
    routes: OnceLock<Vec<(RouteSpec, RouteMetrics)>>,
    unmatched: Vec<RouteMetrics>,
    in_flight: AtomicI64,
    collections: Vec<&'static str>,
    store: Vec<StoreOpSlot>,
    peers: Vec<String>,
    peer_slots: Vec<PeerSlot>,
}

impl Metrics {
    /// The metrics of a service with these store collections and peers, all counting from zero;
    /// its routes' slots come with [`Metrics::set_routes`] once its application is built.
    pub fn new(collections: &[&'static str], peers: &[&str]) -> Metrics {
        calibrate_clock();
        let mut collections = collections.to_vec();
        collections.push(NO_COLLECTION);
        let mut peers: Vec<String> = peers.iter().map(|p| p.to_string()).collect();
        peers.push(OTHER_PEER.to_string());
        Metrics {
            routes: OnceLock::new(),
            unmatched: METHODS.iter().map(|_| RouteMetrics::default()).collect(),
            in_flight: AtomicI64::new(0),
            store: (0..collections.len() * STORE_OPS.len())
                .map(|_| StoreOpSlot::default())
                .collect(),
            collections,
            peer_slots: peers.iter().map(|_| PeerSlot::default()).collect(),
            peers,
        }
    }

    /// Makes one slot per route (the application's order); a second call is ignored.
    pub fn set_routes(&self, routes: &[RouteSpec]) {
        let _ = self.routes.set(
            routes
                .iter()
                .map(|r| (*r, RouteMetrics::default()))
                .collect(),
        );
    }

    fn route_slots(&self) -> &[(RouteSpec, RouteMetrics)] {
        self.routes.get().map_or(&[], Vec::as_slice)
    }

    /// Route `i`'s slot (the application's order); `None` before [`Metrics::set_routes`] or past
    /// its routes.
    pub fn route(&self, i: usize) -> Option<&RouteMetrics> {
        self.route_slots().get(i).map(|(_, m)| m)
    }

    /// The shared slot of requests no route takes, by method.
    pub fn unmatched(&self, method: &str) -> &RouteMetrics {
        let i = METHODS
            .iter()
            .position(|m| *m == method)
            .unwrap_or(METHODS.len() - 1);
        &self.unmatched[i]
    }

    /// One more request inside the route table; the guard counts it out when dropped (answered
    /// or abandoned).
    pub fn enter(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(&self.in_flight)
    }

    /// The slot of store operation `op` (its index in `STORE_OPS`) on `collection`.
    pub(crate) fn store_slot(&self, collection: &str, op: usize) -> &StoreOpSlot {
        &self.store[self.collection_slot(collection) * STORE_OPS.len() + op]
    }

    /// Records a store call: its latency in nanoseconds, and its error's kind if it failed.
    #[cfg(test)]
    fn store_op(&self, collection: &str, op: usize, nanos: u64, error: Option<&StoreError>) {
        self.store_slot(collection, op).record(nanos, error);
    }

    /// The index of `collection` among the declared ones (the last, `(none)`, for any other).
    /// Handlers name collections by the same `&'static str` their specs declared, so comparing
    /// addresses finds it without reading the names; the names are compared only when that fails.
    fn collection_slot(&self, collection: &str) -> usize {
        let same =
            |c: &&str| std::ptr::eq(c.as_ptr(), collection.as_ptr()) && c.len() == collection.len();
        self.collections
            .iter()
            .position(same)
            .or_else(|| self.collections.iter().position(|c| *c == collection))
            .unwrap_or(self.collections.len() - 1)
    }

    /// Records a call to `peer`: its latency and its status, or the error it became.
    pub fn peer_call(&self, peer: &str, elapsed: Duration, outcome: Result<u16, ErrorCode>) {
        let i = self
            .peers
            .iter()
            .position(|p| p == peer)
            .unwrap_or(self.peers.len() - 1);
        let slot = &self.peer_slots[i];
        slot.latency
            .observe(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX));
        match outcome {
            Ok(status) => slot.answers.count(status),
            Err(ErrorCode::BadGateway) => slot.errors[1].inc(),
            Err(_) => slot.errors[0].inc(),
        }
    }

    /// How many answers route `i` gave so far, all statuses.
    pub fn route_count(&self, i: usize) -> u64 {
        self.route(i).map_or(0, |m| m.latency.count())
    }

    /// Every metric in the OpenMetrics text format (which Prometheus scrapes), ending `# EOF`.
    pub fn encode(self: &std::sync::Arc<Self>) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self.clone()));
        registry.register_collector(Box::new(ProcessCollector));
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &registry) {
            let _ = writeln!(out, "# encoding failed: {e}");
        }
        out
    }
}

/// Counts a request out of `brigade_http_requests_in_flight` when dropped.
#[derive(Debug)]
pub struct InFlight<'a>(&'a AtomicI64);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

type Result_ = Result<(), std::fmt::Error>;

fn histogram<'a>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl Iterator<Item = (Vec<(&'a str, &'a str)>, &'a Histogram)>,
) -> Result_ {
    let mut metric =
        encoder.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Histogram)?;
    for (labels, h) in series {
        let (sum, count, buckets) = h.snapshot();
        metric
            .encode_family(&labels.as_slice())?
            .encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                sum, count, &buckets, None,
            )?;
    }
    Ok(())
}

fn counter<'a>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl Iterator<Item = (Vec<(&'a str, &'a str)>, u64)>,
) -> Result_ {
    let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, v) in series {
        ConstCounter::new(v).encode(metric.encode_family(&labels.as_slice())?)?;
    }
    Ok(())
}

impl Collector for Metrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result_ {
        self.encode_http(&mut encoder)?;
        self.encode_store(&mut encoder)?;
        self.encode_peers(&mut encoder)
    }
}

impl Metrics {
    /// The route table's families: answers and durations by route, and requests in flight.
    fn encode_http(&self, encoder: &mut DescriptorEncoder) -> Result_ {
        let routes = || {
            self.route_slots()
                .iter()
                .map(|(spec, m)| (spec.method.as_str(), spec.path, m))
                .chain(
                    METHODS
                        .iter()
                        .zip(&self.unmatched)
                        .map(|(method, m)| (*method, UNMATCHED, m)),
                )
        };
        counter(
            encoder,
            "brigade_http_requests",
            "HTTP answers by route pattern and status class.",
            routes().flat_map(|(method, route, m)| {
                CLASSES.iter().enumerate().filter_map(move |(i, class)| {
                    let n = m.answers.get(i);
                    // Classes a route never answered are left out, as an unseen label set is.
                    (n > 0).then(|| {
                        (
                            vec![("method", method), ("route", route), ("status", *class)],
                            n,
                        )
                    })
                })
            }),
        )?;
        histogram(
            encoder,
            "brigade_http_request_duration",
            "Time from the route table's call to the reply, by route pattern.",
            routes()
                .filter(|(_, route, m)| *route != UNMATCHED || m.latency.count() > 0)
                .map(|(method, route, m)| (vec![("method", method), ("route", route)], &m.latency)),
        )?;
        let in_flight = ConstGauge::new(self.in_flight.load(Ordering::Relaxed));
        in_flight.encode(encoder.encode_descriptor(
            "brigade_http_requests_in_flight",
            "Requests inside the route table now.",
            None,
            in_flight.metric_type(),
        )?)?;
        Ok(())
    }

    /// The store's families: call durations and errors by collection and operation.
    fn encode_store(&self, encoder: &mut DescriptorEncoder) -> Result_ {
        let store = || {
            self.collections
                .iter()
                .enumerate()
                .flat_map(move |(c, coll)| {
                    super::metrics::STORE_OPS
                        .iter()
                        .enumerate()
                        .map(move |(o, op)| (*coll, *op, &self.store[c * STORE_OPS.len() + o]))
                })
        };
        histogram(
            encoder,
            "brigade_store_operation_duration",
            "Time of each store call, by collection and operation.",
            store()
                .filter(|(_, _, s)| s.latency.count() > 0)
                .map(|(c, op, s)| (vec![("collection", c), ("operation", op)], &s.latency)),
        )?;
        counter(
            encoder,
            "brigade_store_errors",
            "Store calls that failed, by collection, operation and kind.",
            store().flat_map(|(c, op, s)| {
                STORE_ERRORS
                    .iter()
                    .enumerate()
                    .filter_map(move |(k, kind)| {
                        let n = s.errors[k].get();
                        (n > 0).then(|| {
                            (
                                vec![("collection", c), ("operation", op), ("kind", *kind)],
                                n,
                            )
                        })
                    })
            }),
        )
    }

    /// The peer client's families: call durations, answers by status class and errors by kind.
    fn encode_peers(&self, encoder: &mut DescriptorEncoder) -> Result_ {
        let peers = || self.peers.iter().map(String::as_str).zip(&self.peer_slots);
        histogram(
            encoder,
            "brigade_peer_request_duration",
            "Time of each call to a peer service, answered or not.",
            peers()
                .filter(|(p, s)| *p != OTHER_PEER || s.latency.count() > 0)
                .map(|(p, s)| (vec![("peer", p)], &s.latency)),
        )?;
        counter(
            encoder,
            "brigade_peer_requests",
            "Peer answers by status class.",
            peers().flat_map(|(p, s)| {
                CLASSES.iter().enumerate().filter_map(move |(i, class)| {
                    let n = s.answers.get(i);
                    (n > 0).then(|| (vec![("peer", p), ("status", *class)], n))
                })
            }),
        )?;
        counter(
            encoder,
            "brigade_peer_errors",
            "Peer calls that got no usable answer, by kind.",
            peers().flat_map(|(p, s)| {
                PEER_ERRORS.iter().enumerate().filter_map(move |(k, kind)| {
                    let n = s.errors[k].get();
                    (n > 0).then(|| (vec![("peer", p), ("kind", *kind)], n))
                })
            }),
        )
    }
}

/// Connections the process failed to accept (out of files, out of memory, ...), counted by the
/// accept loop the hyper-based runtimes share; per process, as the file table they exhaust is.
static ACCEPT_ERRORS: AtomicU64 = AtomicU64::new(0);

/// Counts one failed accept in `brigade_accept_errors_total`.
pub fn accept_failed() {
    ACCEPT_ERRORS.fetch_add(1, Ordering::Relaxed);
}

/// `process_cpu_seconds_total`, `process_resident_memory_bytes`,
/// `process_start_time_seconds`, read at scrape time, and `brigade_accept_errors_total`.
#[derive(Debug)]
struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result_ {
        let accept = ConstCounter::new(ACCEPT_ERRORS.load(Ordering::Relaxed));
        accept.encode(encoder.encode_descriptor(
            "brigade_accept_errors",
            "Connections the process failed to accept (each failure pauses the accept loop).",
            None,
            accept.metric_type(),
        )?)?;
        let Some(reading) = super::process::read() else {
            return Ok(());
        };
        let cpu = ConstCounter::new(reading.cpu_s);
        cpu.encode(encoder.encode_descriptor(
            "process_cpu",
            "User and system CPU time spent by the process.",
            Some(&Unit::Seconds),
            cpu.metric_type(),
        )?)?;
        let rss = ConstGauge::new(reading.rss_bytes as i64);
        rss.encode(encoder.encode_descriptor(
            "process_resident_memory",
            "Resident memory of the process.",
            Some(&Unit::Bytes),
            rss.metric_type(),
        )?)?;
        if let Some(start) = reading.start_time_s {
            let start = ConstGauge::new(start);
            start.encode(encoder.encode_descriptor(
                "process_start_time",
                "Start time of the process since the Unix epoch.",
                Some(&Unit::Seconds),
                start.metric_type(),
            )?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{BodyKind, Method};

    fn spec(method: Method, path: &'static str) -> RouteSpec {
        RouteSpec {
            method,
            path,
            body: BodyKind::Empty,
            limit: 0,
        }
    }

    #[test]
    fn failed_accepts_are_counted_in_every_services_text() {
        let m = std::sync::Arc::new(Metrics::new(&[], &[]));
        let count = |text: &str| -> u64 {
            text.lines()
                .find_map(|l| l.strip_prefix("brigade_accept_errors_total "))
                .and_then(|v| v.trim().parse().ok())
                .expect("the series is there")
        };
        let before = count(&m.encode());
        accept_failed();
        accept_failed();
        assert!(count(&m.encode()) >= before + 2);
    }

    #[test]
    fn the_text_names_each_series_with_its_labels() {
        let m = std::sync::Arc::new(Metrics::new(&["items"], &["users"]));
        m.set_routes(&[
            spec(Method::Get, "/items/{id}"),
            spec(Method::Get, "/health"),
        ]);
        m.route(0).unwrap().record(200, 2_000_000);
        m.route(0).unwrap().record(404, 1_000_000);
        m.unmatched("BREW").record(404, 5_000);
        m.store_op("items", 2, 50_000, None);
        // The same name at another address (a collection named at run time) finds its slot too.
        let items = String::from("items");
        m.store_op(
            items.as_str(),
            6,
            50_000,
            Some(&StoreError::Unavailable("down".into())),
        );
        m.peer_call("users", Duration::from_millis(1), Ok(200));
        m.peer_call(
            "users",
            Duration::from_millis(1),
            Err(ErrorCode::Unavailable),
        );
        let _guard = m.enter();
        let text = m.encode();
        for line in [
            "brigade_http_requests_total{method=\"GET\",route=\"/items/{id}\",status=\"2xx\"} 1",
            "brigade_http_requests_total{method=\"GET\",route=\"/items/{id}\",status=\"4xx\"} 1",
            "brigade_http_requests_total{method=\"OTHER\",route=\"(unmatched)\",status=\"4xx\"} 1",
            "brigade_http_request_duration_seconds_count{method=\"GET\",route=\"/health\"} 0",
            "brigade_http_requests_in_flight 1",
            "brigade_store_operation_duration_seconds_count{collection=\"items\",operation=\"get\"} 1",
            "brigade_store_errors_total{collection=\"items\",operation=\"update\",kind=\"unavailable\"} 1",
            "brigade_peer_requests_total{peer=\"users\",status=\"2xx\"} 1",
            "brigade_peer_errors_total{peer=\"users\",kind=\"unavailable\"} 1",
            "brigade_peer_request_duration_seconds_count{peer=\"users\"} 2",
            "brigade_http_request_duration_seconds_bucket{le=\"0.001\",method=\"GET\",route=\"/items/{id}\"} 1",
            "brigade_http_request_duration_seconds_bucket{le=\"0.0025\",method=\"GET\",route=\"/items/{id}\"} 2",
            "brigade_http_request_duration_seconds_bucket{le=\"+Inf\",method=\"GET\",route=\"/items/{id}\"} 2",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
        assert!(text.contains("process_cpu_seconds_total "), "{text}");
        assert!(text.contains("process_resident_memory_bytes "), "{text}");
        assert!(text.contains("process_start_time_seconds "), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
        assert!(!text.contains("route=\"(unmatched)\",status=\"2xx\""));
    }
}
