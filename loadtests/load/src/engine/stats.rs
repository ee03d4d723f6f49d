//! What each generator thread counts per route during the measured window, and how the threads'
//! counts become the run's [`RouteResult`]s. A thread owns its counters (no locks, no shared cache
//! lines); they are merged once, at the end.

use brigade_clients::tls::{Handshake, HandshakeKind};
use brigade_records::histogram::LatencyHistogram;
use brigade_records::result::{Errors, HandshakeResult, RouteResult, TlsResult};

/// The status classes a route's answers are counted by: `none` (nothing answered), then 1xx–5xx.
const CLASSES: [&str; 6] = ["none", "1xx", "2xx", "3xx", "4xx", "5xx"];

/// The index in [`CLASSES`] of an answer's status (`None`: nothing answered).
pub(crate) fn status_class(status: Option<u16>) -> usize {
    match status {
        Some(s @ 100..=599) => usize::from(s / 100),
        _ => 0,
    }
}

/// Counts by class as a result writes them: the classes that occurred, by name.
fn by_class(counts: &[u64; 6]) -> std::collections::BTreeMap<String, u64> {
    CLASSES
        .iter()
        .zip(counts)
        .filter(|(_, n)| **n > 0)
        .map(|(c, n)| (c.to_string(), *n))
        .collect()
}

/// Counts and latencies for one route on one thread.
#[derive(Debug, Clone, Default)]
pub(crate) struct RouteStats {
    pub(crate) requests: u64,
    pub(crate) ok: u64,
    pub(crate) errors: Errors,
    pub(crate) bytes_sent: u64,
    pub(crate) bytes_received: u64,
    pub(crate) latency: LatencyHistogram,
    /// Measured requests by the class of their answer ([`status_class`]).
    pub(crate) statuses: [u64; 6],
    /// Warm-up requests by the class of their answer.
    pub(crate) warmup: [u64; 6],
}

impl RouteStats {
    /// Adds another thread's counts for the same route.
    pub(crate) fn merge(&mut self, other: &RouteStats) {
        self.requests += other.requests;
        self.ok += other.ok;
        add_errors(&mut self.errors, &other.errors);
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.latency.merge(&other.latency);
        for (a, b) in self.statuses.iter_mut().zip(other.statuses) {
            *a += b;
        }
        for (a, b) in self.warmup.iter_mut().zip(other.warmup) {
            *a += b;
        }
    }

    /// The route's result over `elapsed_s` measured seconds.
    pub(crate) fn into_result(self, name: String, elapsed_s: f64) -> RouteResult {
        let per_s = |n: u64| {
            if elapsed_s > 0.0 {
                n as f64 / elapsed_s
            } else {
                0.0
            }
        };
        RouteResult {
            name,
            requests: self.requests,
            ok: self.ok,
            hits_per_s: per_s(self.requests),
            bytes_per_s: per_s(self.bytes_sent + self.bytes_received),
            bytes_sent: self.bytes_sent,
            bytes_received: self.bytes_received,
            latency: self.latency.latency(),
            histogram: self.latency.encode(),
            errors: self.errors,
            statuses: by_class(&self.statuses),
            warmup_statuses: by_class(&self.warmup),
        }
    }
}

/// Adds `b`'s counts to `a`.
pub(crate) fn add_errors(a: &mut Errors, b: &Errors) {
    a.connect += b.connect;
    a.timeout += b.timeout;
    a.reset += b.reset;
    a.status_4xx += b.status_4xx;
    a.status_5xx += b.status_5xx;
    a.other += b.other;
}

/// One thread's TLS handshakes in the measured window, full and resumed apart.
#[derive(Debug, Clone, Default)]
pub(crate) struct HandshakeStats {
    full: LatencyHistogram,
    resumed: LatencyHistogram,
    /// The ALPN protocol the server chose (the first handshake's; every one is checked).
    alpn: Option<&'static str>,
}

impl HandshakeStats {
    /// Counts one handshake.
    pub(crate) fn record(&mut self, handshake: &Handshake) {
        match handshake.kind {
            HandshakeKind::Full => self.full.record(handshake.took),
            HandshakeKind::Resumed => self.resumed.record(handshake.took),
        }
        self.alpn = self.alpn.or(handshake.alpn);
    }

    /// Adds another thread's handshakes.
    pub(crate) fn merge(&mut self, other: &HandshakeStats) {
        self.full.merge(&other.full);
        self.resumed.merge(&other.resumed);
        self.alpn = self.alpn.or(other.alpn);
    }

    /// The run's TLS section over `elapsed_s` measured seconds.
    pub(crate) fn into_result(self, elapsed_s: f64) -> TlsResult {
        let mut tls = TlsResult {
            alpn: self.alpn.map(str::to_string),
            full: HandshakeResult::from_histogram(&self.full),
            resumed: HandshakeResult::from_histogram(&self.resumed),
            handshakes_per_s: 0.0,
        };
        tls.rescale(elapsed_s);
        tls
    }
}
