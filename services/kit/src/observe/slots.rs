//! Lock-free metric slots: a counter per status class and a latency histogram, each a few atomics,
//! so recording a request costs a handful of relaxed atomic adds and no lock or hash lookup. They
//! are encoded by `metrics` through prometheus-client's encoder. Durations are read with a
//! [`Stopwatch`]: the TSC through `quanta` (calibrated once per process against the OS clock), not a
//! `clock_gettime` call, because a request reads the clock four times (docs/observability.md).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// The process's clock for metrics: the TSC where it is invariant, else the OS's monotonic clock.
fn clock() -> &'static quanta::Clock {
    static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();
    CLOCK.get_or_init(quanta::Clock::new)
}

/// Calibrates the clock now (tens of milliseconds, once per process), so no request pays for it.
pub(crate) fn calibrate_clock() {
    let _ = clock();
}

/// A started stopwatch: one raw clock reading.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stopwatch(u64);

impl Stopwatch {
    /// Starts timing now.
    pub(crate) fn start() -> Stopwatch {
        Stopwatch(clock().raw())
    }

    /// Nanoseconds since [`Stopwatch::start`].
    pub(crate) fn nanos(self) -> u64 {
        let clock = clock();
        clock.delta_as_nanos(self.0, clock.raw())
    }

    /// The time since [`Stopwatch::start`].
    pub(crate) fn elapsed(self) -> Duration {
        Duration::from_nanos(self.nanos())
    }
}

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

/// For each bit length of a duration in nanoseconds (0..=64), the first bucket whose bound is at
/// least the smallest duration of that length. The bounds lie at least twice apart, so from there
/// the bucket is at most two steps away: no search over all sixteen.
const FIRST_BUCKET: [u8; 65] = {
    let mut table = [0u8; 65];
    let mut bits = 1;
    while bits < 65 {
        let smallest = 1u64 << (bits - 1);
        let mut i = 0;
        while i < BUCKETS_NANOS.len() && BUCKETS_NANOS[i] < smallest {
            i += 1;
        }
        table[bits] = i as u8;
        bits += 1;
    }
    table
};

/// The bucket of a duration of `nanos` nanoseconds: the first whose bound is at least `nanos`
/// (`BUCKETS.len()`, `+Inf`, past the last).
fn bucket(nanos: u64) -> usize {
    let mut i = FIRST_BUCKET[(u64::BITS - nanos.leading_zeros()) as usize] as usize;
    while i < BUCKETS_NANOS.len() && BUCKETS_NANOS[i] < nanos {
        i += 1;
    }
    i
}

/// A latency histogram: per-bucket counts (not cumulative; summed when encoded) and the sum.
#[derive(Debug, Default)]
pub(crate) struct Histogram {
    buckets: [AtomicU64; BUCKETS.len() + 1],
    sum_nanos: AtomicU64,
}

impl Histogram {
    /// Records one observation of `nanos` nanoseconds.
    pub(crate) fn observe(&self, nanos: u64) {
        let i = bucket(nanos);
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
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

    /// How many observations so far: the buckets' total (summed when asked, so that an
    /// observation costs two atomic adds, not three).
    pub(crate) fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).sum()
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
        h.observe(100_000); // exactly the first bound
        h.observe(3_000_000);
        h.observe(60_000_000_000);
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
    fn the_bucket_is_the_first_bound_at_or_above_the_duration() {
        let slow = |nanos: u64| BUCKETS_NANOS.partition_point(|&b| b < nanos);
        let mut probes = vec![0, 1, u64::MAX];
        for b in BUCKETS_NANOS {
            probes.extend([b - 1, b, b + 1]);
        }
        probes.extend((0..64).flat_map(|s| [1u64 << s, (1u64 << s) - 1, (1u64 << s) + 1]));
        for nanos in probes {
            assert_eq!(bucket(nanos), slow(nanos), "{nanos} ns");
        }
    }

    #[test]
    fn a_stopwatch_measures_a_sleep_at_least_as_long_as_it_was() {
        calibrate_clock();
        let watch = Stopwatch::start();
        std::thread::sleep(Duration::from_millis(20));
        let measured = watch.elapsed();
        // The lower bound only: a busy machine may make the sleep as long as it likes.
        assert!(measured >= Duration::from_millis(19), "{measured:?}");
        assert!(measured < Duration::from_secs(3600), "{measured:?}");
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
