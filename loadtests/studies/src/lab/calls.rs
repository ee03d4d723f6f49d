//! Calls timed one by one from a few concurrent clients, for the studies whose providers the
//! generator's load engine cannot drive: the in-process provider (no socket), and clients that do
//! their own work per call (serialise a request object, decode the answer) over one persistent
//! connection each. Each client makes its warm-up calls, then its measured ones; the latencies go
//! into one HdrHistogram, and the whole becomes a [`LoadResult`] like the generator's, so the
//! studies' tables, medians and merges treat every provider alike.

use std::time::{Duration, Instant};

use brigade_records::histogram::LatencyHistogram;
use brigade_records::result::{Errors, LoadResult, LoadSettings, RouteResult};

/// What one client measured.
#[derive(Debug, Default)]
pub(crate) struct ClientTally {
    /// Latencies of the measured calls.
    pub histogram: LatencyHistogram,
    /// Body bytes sent by the measured calls.
    pub bytes_sent: u64,
    /// Body bytes received by the measured calls.
    pub bytes_received: u64,
}

impl ClientTally {
    /// Records one measured call.
    pub(crate) fn record(&mut self, elapsed: Duration, sent: u64, received: u64) {
        self.histogram.record(elapsed);
        self.bytes_sent += sent;
        self.bytes_received += received;
    }
}

/// How a set of timed calls was made, for the result's settings.
#[derive(Debug, Clone)]
pub(crate) struct CallsMade {
    /// Where they went (`in process`, a URL).
    pub target: String,
    /// What was called.
    pub operation: String,
    /// Concurrent clients.
    pub clients: u32,
    /// Warm-up before the measured calls.
    pub warmup: Duration,
    /// Per-call timeout (over a socket).
    pub timeout: Duration,
}

/// The clients' tallies as one result over `elapsed` (the measured calls' wall-clock time, from
/// the first measured call started to the last one answered).
pub(crate) fn result(made: &CallsMade, tallies: &[ClientTally], elapsed: Duration) -> LoadResult {
    let mut histogram = LatencyHistogram::new();
    let (mut sent, mut received) = (0, 0);
    for tally in tallies {
        histogram.merge(&tally.histogram);
        sent += tally.bytes_sent;
        received += tally.bytes_received;
    }
    let elapsed_s = elapsed.as_secs_f64();
    let per_s = |n: u64| {
        if elapsed_s > 0.0 {
            n as f64 / elapsed_s
        } else {
            0.0
        }
    };
    let requests = histogram.len();
    let total = RouteResult {
        name: made.operation.clone(),
        requests,
        ok: requests,
        errors: Errors::default(),
        bytes_sent: sent,
        bytes_received: received,
        hits_per_s: per_s(requests),
        bytes_per_s: per_s(sent + received),
        latency: histogram.latency(),
        histogram: histogram.encode(),
        ..RouteResult::default()
    };
    LoadResult {
        settings: LoadSettings {
            targets: vec![made.target.clone()],
            scenario: made.operation.clone(),
            users: Some(made.clients),
            rate: None,
            connections: made.clients,
            duration_s: None,
            requests: Some(requests),
            warmup_s: made.warmup.as_secs_f64(),
            keepalive: true,
            threads: made.clients,
            timeout_ms: made.timeout.as_millis() as u64,
            think_ms: 0,
            pace_tick_ms: None,
            // Timed calls draw nothing at random.
            seed: None,
            shard: None,
            protocol: Default::default(),
            streams: 1,
        },
        machine: brigade_load::machine::describe(),
        started_at: brigade_meter::clock::now_rfc3339(),
        elapsed_s,
        generator_cpu_percent: 0.0,
        routes: vec![total.clone()],
        total,
        // Calls made in process have no per-second series.
        seconds: Vec::new(),
        sub_windows: Vec::new(),
        window: None,
        shards: Vec::new(),
        tls: None,
        attempt: None,
        interrupted: None,
    }
}

/// The window of measured calls: from the first client's first measured call to the last
/// client's last answer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    /// When the first measured call started.
    pub first: Instant,
    /// When the last measured call ended.
    pub last: Instant,
}

impl Span {
    /// The span covering all of `spans` (`None` if there are none).
    pub(crate) fn cover(spans: impl IntoIterator<Item = Span>) -> Option<Span> {
        spans.into_iter().reduce(|a, b| Span {
            first: a.first.min(b.first),
            last: a.last.max(b.last),
        })
    }

    /// Its length.
    pub(crate) fn elapsed(&self) -> Duration {
        self.last.saturating_duration_since(self.first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_add_up_into_one_result() {
        let mut a = ClientTally::default();
        let mut b = ClientTally::default();
        for _ in 0..3 {
            a.record(Duration::from_millis(1), 10, 100);
        }
        b.record(Duration::from_millis(3), 10, 100);
        let made = CallsMade {
            target: "in process".into(),
            operation: "op".into(),
            clients: 2,
            warmup: Duration::ZERO,
            timeout: Duration::from_secs(1),
        };
        let r = result(&made, &[a, b], Duration::from_secs(2));
        assert_eq!(r.total.requests, 4);
        assert_eq!(r.total.hits_per_s, 2.0);
        assert_eq!(r.total.bytes_per_s, 220.0);
        assert!((r.total.latency.mean_ms - 1.5).abs() < 0.01);
        let now = Instant::now();
        let span = Span::cover([
            Span {
                first: now,
                last: now + Duration::from_secs(1),
            },
            Span {
                first: now + Duration::from_millis(10),
                last: now + Duration::from_secs(2),
            },
        ])
        .unwrap();
        assert_eq!(span.elapsed(), Duration::from_secs(2));
    }
}
