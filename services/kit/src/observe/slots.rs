//! Lock-free metric slots: a counter per status class and a latency histogram, each a few atomics,
//! so recording a request costs a handful of relaxed atomic adds and no lock or hash lookup. They
//! are encoded by `metrics` through prometheus-client's encoder.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the latency buckets, in seconds (100 µs .. 10 s); `+Inf` follows.
pub(crate) const BUCKETS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// The same bounds in nanoseconds, compared against without floating point.
const BUCKETS_NANOS: [u64; 16] = [
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// A latency histogram: per-bucket counts (not cumulative; summed when encoded), count and sum.
#[derive(Debug, Default)]
pub(crate) struct Histogram {
    buckets: [AtomicU64; BUCKETS.len() + 1],
    count: AtomicU64,
    sum_nanos: AtomicU64,
}

impl Histogram {
    /// Records one observation.
    pub(crate) fn observe(&self, d: Duration) {
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let i = BUCKETS_NANOS.partition_point(|&b| b < nanos);
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Sum in seconds, count, and each bucket's own count (prometheus-client's encoder makes them
    /// cumulative, as Prometheus wants them).
    pub(crate) fn snapshot(&self) -> (f64, u64, Vec<(f64, u64)>) {
        let buckets: Vec<(f64, u64)> = BUCKETS
            .iter()
            .chain(std::iter::once(&f64::INFINITY))
            .enumerate()
            .map(|(i, le)| (*le, self.buckets[i].load(Ordering::Relaxed)))
            .collect();
        let sum = self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
        // The count is the buckets' total, so the two always agree in one scrape.
        let count = buckets.iter().map(|(_, n)| n).sum();
        (sum, count, buckets)
    }

    /// How many observations so far.
    pub(crate) fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}

/// The status classes counted apart: `1xx` .. `5xx`.
pub(crate) const CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// One counter per status class.
#[derive(Debug, Default)]
pub(crate) struct ByClass([AtomicU64; 5]);

impl ByClass {
    /// Counts one answer with `status`; anything outside 100..=599 counts as `5xx`.
    pub(crate) fn count(&self, status: u16) {
        let i = match status {
            100..=599 => usize::from(status / 100 - 1),
            _ => 4,
        };
        self.0[i].fetch_add(1, Ordering::Relaxed);
    }

    /// The count of class `i` (0 for `1xx`).
    pub(crate) fn get(&self, i: usize) -> u64 {
        self.0[i].load(Ordering::Relaxed)
    }
}

/// A plain counter.
#[derive(Debug, Default)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    /// Adds one.
    pub(crate) fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// The count.
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_the_first_bucket_at_or_above_them_and_accumulate() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(100)); // exactly the first bound
        h.observe(Duration::from_millis(3));
        h.observe(Duration::from_secs(60));
        let (sum, count, buckets) = h.snapshot();
        assert_eq!(count, 3);
        assert_eq!(buckets[0], (0.0001, 1));
        assert_eq!(buckets[4], (0.0025, 0));
        assert_eq!(buckets[5], (0.005, 1));
        assert_eq!(buckets[15], (10.0, 0));
        assert_eq!(buckets[16], (f64::INFINITY, 1));
        assert!((sum - 60.0031).abs() < 1e-9, "{sum}");
    }

    #[test]
    fn statuses_count_by_class_and_nonsense_is_5xx() {
        let c = ByClass::default();
        for s in [200, 201, 204, 404, 422, 503, 42] {
            c.count(s);
        }
        assert_eq!(
            (0..5).map(|i| c.get(i)).collect::<Vec<_>>(),
            [0, 3, 0, 2, 2]
        );
    }
}
