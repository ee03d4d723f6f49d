//! The per-second series of a run: for each second of the measured window, the requests completed,
//! the errors among them and their p50 and p99, so a reader can see a run over time (an outage, the
//! time to recover) and not only its totals. Each thread keeps its own buckets (a count, an error
//! count and a small log-scale latency histogram per second: under a kilobyte each), merged at the
//! end like the per-route statistics. Asked for sub-windows (the SLO search), it also keeps an
//! exact histogram per sub-window, so that the search can pool a step's sub-windows exactly and
//! judge a percentile with the sub-window as the unit.

use std::time::Duration;

use brigade_records::histogram::LatencyHistogram;
use brigade_records::result::{Second, SubWindow};

/// Latency buckets of a second: bucket `i` holds latencies up to `FIRST_US * RATIO^i`
/// microseconds, from 1 µs to past 100 s, so a quantile is within about 5% of its true value.
const BUCKETS: usize = 200;
const RATIO: f64 = 1.1;
const FIRST_US: f64 = 1.0;

/// One second of one thread's counts.
#[derive(Debug, Clone)]
pub(crate) struct SecondStats {
    requests: u64,
    errors: u64,
    latency: Box<[u32; BUCKETS]>,
}

impl Default for SecondStats {
    fn default() -> SecondStats {
        SecondStats {
            requests: 0,
            errors: 0,
            latency: Box::new([0; BUCKETS]),
        }
    }
}

fn bucket(latency: Duration) -> usize {
    let us = latency.as_secs_f64() * 1e6;
    if us <= FIRST_US {
        return 0;
    }
    ((us / FIRST_US).ln() / RATIO.ln())
        .ceil()
        .min((BUCKETS - 1) as f64) as usize
}

fn bucket_top_ms(i: usize) -> f64 {
    FIRST_US * RATIO.powi(i as i32) / 1000.0
}

/// One sub-window of one thread: its counts and its exact histogram.
#[derive(Debug, Clone, Default)]
struct Exact {
    requests: u64,
    errors: u64,
    latency: LatencyHistogram,
}

/// A thread's seconds, indexed from the measured window's start, and its sub-windows when asked.
#[derive(Debug, Clone, Default)]
pub(crate) struct SecondSeries {
    seconds: Vec<SecondStats>,
    /// The sub-windows' length, when exact histograms are kept per sub-window.
    sub_window: Option<Duration>,
    exact: Vec<Exact>,
}

impl SecondSeries {
    /// An empty series; with `sub_window`, keeping an exact histogram per sub-window of that length.
    pub(crate) fn new(sub_window: Option<Duration>) -> SecondSeries {
        SecondSeries {
            sub_window: sub_window.filter(|d| !d.is_zero()),
            ..SecondSeries::default()
        }
    }

    /// Counts one request completed `at` after the window opened.
    pub(crate) fn record(&mut self, at: Duration, failed: bool, latency: Option<Duration>) {
        let i = at.as_secs() as usize;
        if self.seconds.len() <= i {
            self.seconds.resize_with(i + 1, SecondStats::default);
        }
        let s = &mut self.seconds[i];
        s.requests += 1;
        s.errors += u64::from(failed);
        if let Some(l) = latency {
            s.latency[bucket(l)] += 1;
        }
        if let Some(width) = self.sub_window {
            let j = (at.as_nanos() / width.as_nanos()) as usize;
            if self.exact.len() <= j {
                self.exact.resize_with(j + 1, Exact::default);
            }
            let e = &mut self.exact[j];
            e.requests += 1;
            e.errors += u64::from(failed);
            if let Some(l) = latency {
                e.latency.record(l);
            }
        }
    }

    /// Adds another thread's seconds (and sub-windows).
    pub(crate) fn merge(&mut self, other: &SecondSeries) {
        if self.seconds.len() < other.seconds.len() {
            self.seconds
                .resize_with(other.seconds.len(), SecondStats::default);
        }
        for (a, b) in self.seconds.iter_mut().zip(&other.seconds) {
            a.requests += b.requests;
            a.errors += b.errors;
            for (x, y) in a.latency.iter_mut().zip(b.latency.iter()) {
                *x += y;
            }
        }
        self.sub_window = self.sub_window.or(other.sub_window);
        if self.exact.len() < other.exact.len() {
            self.exact.resize_with(other.exact.len(), Exact::default);
        }
        for (a, b) in self.exact.iter_mut().zip(&other.exact) {
            a.requests += b.requests;
            a.errors += b.errors;
            a.latency.merge(&b.latency);
        }
    }

    /// The sub-windows as the result carries them (empty unless asked for), each with its exact
    /// histogram; a last sub-window the window's end cut short is left out when it holds less than
    /// half a sub-window's requests (its few requests would weigh as one unit).
    pub(crate) fn sub_windows(&self) -> Vec<SubWindow> {
        let Some(width) = self.sub_window else {
            return Vec::new();
        };
        let mut out: Vec<SubWindow> = self
            .exact
            .iter()
            .enumerate()
            .map(|(i, e)| SubWindow {
                start_s: width.as_secs_f64() * i as f64,
                requests: e.requests,
                errors: e.errors,
                histogram: e.latency.encode(),
            })
            .collect();
        if out.len() >= 2 {
            let last = out[out.len() - 1].requests as f64;
            let typical = out[..out.len() - 1]
                .iter()
                .map(|w| w.requests as f64)
                .sum::<f64>()
                / (out.len() - 1) as f64;
            if last < typical / 2.0 {
                out.pop();
            }
        }
        out
    }

    /// The series as the result carries it, one entry per second (empty seconds included).
    pub(crate) fn into_result(self) -> Vec<Second> {
        self.seconds
            .into_iter()
            .enumerate()
            .map(|(i, s)| Second {
                second: i as u32,
                requests: s.requests,
                errors: s.errors,
                p50_ms: quantile(&s.latency, 0.50),
                p99_ms: quantile(&s.latency, 0.99),
            })
            .collect()
    }
}

/// The top of the bucket holding quantile `q`, in milliseconds (0 when nothing was recorded).
fn quantile(latency: &[u32; BUCKETS], q: f64) -> f64 {
    let total: u64 = latency.iter().map(|&n| u64::from(n)).sum();
    if total == 0 {
        return 0.0;
    }
    let rank = ((q * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for (i, &n) in latency.iter().enumerate() {
        seen += u64::from(n);
        if seen >= rank {
            return bucket_top_ms(i);
        }
    }
    bucket_top_ms(BUCKETS - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_count_requests_errors_and_quantiles_within_their_bucket() {
        let mut a = SecondSeries::default();
        for _ in 0..98 {
            a.record(
                Duration::from_millis(100),
                false,
                Some(Duration::from_millis(2)),
            );
        }
        a.record(
            Duration::from_millis(900),
            true,
            Some(Duration::from_millis(50)),
        );
        a.record(Duration::from_millis(2500), true, None);
        let mut b = SecondSeries::default();
        b.record(
            Duration::from_millis(10),
            false,
            Some(Duration::from_millis(50)),
        );
        a.merge(&b);
        let s = a.into_result();
        assert_eq!(s.len(), 3, "second 1 is there, empty");
        assert_eq!((s[0].requests, s[0].errors), (100, 1));
        assert_eq!((s[1].requests, s[2].requests, s[2].errors), (0, 1, 1));
        assert!((2.0..2.2).contains(&s[0].p50_ms), "{}", s[0].p50_ms);
        assert!((50.0..55.0).contains(&s[0].p99_ms), "{}", s[0].p99_ms);
        assert_eq!(s[1].p99_ms, 0.0);
        assert_eq!(bucket(Duration::from_secs(1000)), BUCKETS - 1);
    }
}
