//! Latency histograms: one HdrHistogram per generator thread and route, in microseconds, merged at
//! the end of a run. Memory is fixed by the range and precision, never by the run's length, and the
//! serialized form (HdrHistogram's V2 + deflate, base64) travels in the JSON result so runs can be
//! merged and compared later without losing the distribution. The [`Latency`] summary a histogram
//! gives lives here and is part of the result's JSON (re-exported as `result::Latency`), so the
//! histograms import nothing of the result.

use std::time::Duration;

use anyhow::{Context, Result};
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Latency figures in milliseconds (open loop: from the intended send time).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Mean.
    pub mean_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

/// Smallest latency told apart: 1 µs.
pub const LOWEST_US: u64 = 1;
/// Largest latency recorded as itself: 100 s (anything slower is recorded as 100 s).
pub const HIGHEST_US: u64 = 100_000_000;
/// Significant decimal digits kept (3: values are exact to 0.1%).
pub const SIGFIGS: u8 = 3;

/// A latency histogram in microseconds.
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    inner: Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram covering 1 µs to 100 s with 3 significant digits.
    pub fn new() -> LatencyHistogram {
        let inner =
            Histogram::new_with_bounds(LOWEST_US, HIGHEST_US, SIGFIGS).expect("valid fixed bounds");
        LatencyHistogram { inner }
    }

    /// Records one latency; below 1 µs counts as 1 µs, above the range as its top.
    pub fn record(&mut self, latency: Duration) {
        let us = u64::try_from(latency.as_micros())
            .unwrap_or(u64::MAX)
            .max(LOWEST_US);
        self.inner.saturating_record(us);
    }

    /// Records `count` latencies of one value (what a simulated server adds at once).
    pub fn record_n(&mut self, latency: Duration, count: u64) {
        let us = u64::try_from(latency.as_micros())
            .unwrap_or(u64::MAX)
            .max(LOWEST_US);
        self.inner.saturating_record_n(us, count);
    }

    /// How many latencies lie past `ms`: at or above it, or strictly above it when `inclusive`
    /// (an SLO `<=` lets the bound itself hold), to the histogram's 0.1%.
    pub fn count_past_ms(&self, ms: f64, inclusive: bool) -> u64 {
        let us = (ms * 1000.0).max(0.0);
        self.inner
            .iter_recorded()
            .filter(|v| {
                let value = self.inner.median_equivalent(v.value_iterated_to()) as f64;
                if inclusive {
                    value > us
                } else {
                    value >= us
                }
            })
            .map(|v| v.count_at_value())
            .sum()
    }

    /// Adds every value of `other` to this one.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        // Both sides have the same fixed bounds, so adding cannot fail.
        self.inner
            .add(&other.inner)
            .expect("histograms with the same bounds");
    }

    /// How many latencies were recorded.
    pub fn len(&self) -> u64 {
        self.inner.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// The value at quantile `q` (0..=1), in milliseconds.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        if self.inner.is_empty() {
            return 0.0;
        }
        self.inner.value_at_quantile(q) as f64 / 1000.0
    }

    /// The mean, max and percentiles in milliseconds (all zero when empty).
    pub fn latency(&self) -> Latency {
        if self.inner.is_empty() {
            return Latency::default();
        }
        Latency {
            mean_ms: self.inner.mean() / 1000.0,
            p50_ms: self.quantile_ms(0.50),
            p90_ms: self.quantile_ms(0.90),
            p99_ms: self.quantile_ms(0.99),
            p999_ms: self.quantile_ms(0.999),
            max_ms: self.inner.max() as f64 / 1000.0,
        }
    }

    /// The histogram serialized as HdrHistogram V2 + deflate, base64 (standard alphabet, padded).
    pub fn encode(&self) -> String {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.inner, &mut bytes)
            .expect("serializing to memory");
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Reads a histogram written by [`LatencyHistogram::encode`] (or any V2/V2+deflate HdrHistogram).
    pub fn decode(text: &str) -> Result<LatencyHistogram> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .context("histogram is not valid base64")?;
        let read: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| anyhow::anyhow!("histogram cannot be decoded: {e:?}"))?;
        // Re-home into the standard bounds so any two decoded histograms can be merged.
        let mut out = LatencyHistogram::new();
        for v in read.iter_recorded() {
            out.inner
                .saturating_record_n(v.value_iterated_to().max(LOWEST_US), v.count_at_value());
        }
        Ok(out)
    }

    /// The underlying HdrHistogram, for callers that want other quantiles or iteration.
    pub fn as_hdr(&self) -> &Histogram<u64> {
        &self.inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_come_out_in_milliseconds() {
        let mut h = LatencyHistogram::new();
        for ms in 1..=1000u64 {
            h.record(Duration::from_millis(ms));
        }
        let l = h.latency();
        assert!((l.p50_ms - 500.0).abs() < 1.0, "{l:?}");
        assert!((l.p99_ms - 990.0).abs() < 1.5, "{l:?}");
        assert!((l.max_ms - 1000.0).abs() < 1.5, "{l:?}");
        assert!((l.mean_ms - 500.5).abs() < 1.0, "{l:?}");
    }

    #[test]
    fn an_empty_histogram_reports_zeros_and_round_trips() {
        let h = LatencyHistogram::new();
        assert_eq!(h.latency(), Latency::default());
        let back = LatencyHistogram::decode(&h.encode()).unwrap();
        assert!(back.is_empty());
    }

    #[test]
    fn values_beyond_the_range_saturate_instead_of_failing() {
        let mut h = LatencyHistogram::new();
        h.record(Duration::from_secs(10_000));
        h.record(Duration::from_nanos(10));
        assert_eq!(h.len(), 2);
        assert!(h.latency().max_ms >= 99_000.0);
        assert!(h.quantile_ms(0.0) <= 0.002);
    }
}
