//! Pass/fail thresholds on a run's figures, as k6 and Taurus have them: `p99<5ms`,
//! `errors<0.1%`, `hits/s>=1000`. `brigade load --threshold ...` and `brigade compare --threshold
//! ...` check every one against what they measured and exit non-zero when one fails, saying which.
//!
//! Syntax: `METRIC OP VALUE[UNIT]`, spaces allowed anywhere.
//! - latency: `mean`, `p50`, `p90`, `p99`, `p99.9` (or `p999`), `max`; units `ms` (the default),
//!   `s`, `us` or `µs`;
//! - `errors`: with `%`, the share of requests that failed; without, their count;
//! - `hits/s` (or `rps`): requests per second; `requests`: the count;
//! - OP: `<`, `<=`, `>`, `>=`.

use std::fmt;
use std::str::FromStr;

use anyhow::{anyhow, bail, Result};
use serde::{Deserialize, Serialize};

use crate::result::{Latency, RouteResult};

/// What a threshold measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Metric {
    Mean,
    P50,
    P90,
    P99,
    P999,
    Max,
    ErrorShare,
    ErrorCount,
    HitsPerS,
    Requests,
}

/// How the measured figure must compare with the threshold's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn holds(self, actual: f64, limit: f64) -> bool {
        match self {
            Op::Lt => actual < limit,
            Op::Le => actual <= limit,
            Op::Gt => actual > limit,
            Op::Ge => actual >= limit,
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }
}

/// One parsed threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    text: String,
    metric: Metric,
    op: Op,
    /// In the metric's base unit: milliseconds, percent, a count, per second.
    limit: f64,
}

/// The figures a threshold is checked against: one run's (or route's) totals.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    /// Requests completed.
    pub requests: u64,
    /// Of those, failed.
    pub errors: u64,
    /// Requests per second.
    pub hits_per_s: f64,
    /// Latency, ms.
    pub latency: Latency,
}

impl From<&RouteResult> for Figures {
    fn from(r: &RouteResult) -> Figures {
        Figures {
            requests: r.requests,
            errors: r.errors.total(),
            hits_per_s: r.hits_per_s,
            latency: r.latency.clone(),
        }
    }
}

/// A threshold checked against figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// The threshold as given.
    pub threshold: String,
    /// The measured figure, in the threshold's base unit (ms, percent, count, per second).
    pub actual: f64,
    /// Whether it held.
    pub passed: bool,
    /// In words: `p99 = 6.20 ms (wanted < 5 ms)`.
    pub text: String,
}

impl FromStr for Threshold {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> Result<Threshold> {
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let at = compact
            .find(['<', '>'])
            .ok_or_else(|| anyhow!("threshold {text:?}: no < or > (e.g. p99<5ms, errors<0.1%)"))?;
        let (name, rest) = compact.split_at(at);
        let (op, value) = if let Some(v) = rest.strip_prefix("<=") {
            (Op::Le, v)
        } else if let Some(v) = rest.strip_prefix(">=") {
            (Op::Ge, v)
        } else if let Some(v) = rest.strip_prefix('<') {
            (Op::Lt, v)
        } else {
            (Op::Gt, &rest[1..])
        };
        let number_end = value
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e'))
            .unwrap_or(value.len());
        let (number, unit) = value.split_at(number_end);
        let number: f64 = number
            .parse()
            .map_err(|_| anyhow!("threshold {text:?}: {number:?} is not a number"))?;
        if !number.is_finite() {
            bail!("threshold {text:?}: the value must be finite");
        }
        let latency = |metric| -> Result<(Metric, f64)> {
            let scale = match unit {
                "" | "ms" => 1.0,
                "s" => 1000.0,
                "us" | "µs" => 0.001,
                other => bail!("threshold {text:?}: unit {other:?} is not a time (ms, s, us)"),
            };
            Ok((metric, number * scale))
        };
        let plain = |metric| -> Result<(Metric, f64)> {
            if unit.is_empty() {
                Ok((metric, number))
            } else {
                bail!("threshold {text:?}: {name} takes no unit")
            }
        };
        let (metric, limit) = match name.to_ascii_lowercase().as_str() {
            "mean" | "avg" => latency(Metric::Mean)?,
            "p50" | "median" => latency(Metric::P50)?,
            "p90" => latency(Metric::P90)?,
            "p99" => latency(Metric::P99)?,
            "p99.9" | "p999" => latency(Metric::P999)?,
            "max" => latency(Metric::Max)?,
            "errors" if unit == "%" => (Metric::ErrorShare, number),
            "errors" => plain(Metric::ErrorCount)?,
            "hits/s" | "rps" | "hits_per_s" => plain(Metric::HitsPerS)?,
            "requests" => plain(Metric::Requests)?,
            other => bail!(
                "threshold {text:?}: unknown metric {other:?} (known: mean, p50, p90, p99, p99.9, \
                 max, errors, hits/s, requests)"
            ),
        };
        Ok(Threshold {
            text: text.trim().to_owned(),
            metric,
            op,
            limit,
        })
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// What an SLO bounds, in the form the SLO search judges over sub-windows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SloBound {
    /// A percentile below `ms`: the share of latencies at or above `ms` (above it, for `<=`)
    /// must stay under `share` (0.01 for a p99).
    Tail {
        /// The bound, ms.
        ms: f64,
        /// The share of latencies the percentile lets past it.
        share: f64,
        /// Whether a latency equal to the bound holds (`<=`).
        inclusive: bool,
    },
    /// The mean latency below `ms` (`<=`: at most).
    Mean {
        /// The bound, ms.
        ms: f64,
    },
    /// Every latency below `ms`.
    Max {
        /// The bound, ms.
        ms: f64,
    },
    /// The share of failed requests below `share` (0.001 for `errors<0.1%`).
    ErrorShare {
        /// The share allowed.
        share: f64,
    },
    /// The count of failed requests below `count` (`<=`: at most).
    ErrorCount {
        /// The count allowed.
        count: f64,
        /// Whether `count` itself holds.
        inclusive: bool,
    },
}

impl Threshold {
    /// What an SLO (a threshold [`parse_slo`] accepted) bounds; `None` for any other threshold.
    pub fn slo_bound(&self) -> Option<SloBound> {
        let inclusive = match self.op {
            Op::Lt => false,
            Op::Le => true,
            Op::Gt | Op::Ge => return None,
        };
        let tail = |q: f64| SloBound::Tail {
            ms: self.limit,
            share: 1.0 - q,
            inclusive,
        };
        Some(match self.metric {
            Metric::P50 => tail(0.50),
            Metric::P90 => tail(0.90),
            Metric::P99 => tail(0.99),
            Metric::P999 => tail(0.999),
            Metric::Mean => SloBound::Mean { ms: self.limit },
            Metric::Max => SloBound::Max { ms: self.limit },
            Metric::ErrorShare => SloBound::ErrorShare {
                share: self.limit / 100.0,
            },
            Metric::ErrorCount => SloBound::ErrorCount {
                count: self.limit,
                inclusive,
            },
            Metric::HitsPerS | Metric::Requests => return None,
        })
    }

    /// The bound in ms of a threshold on latency (`None` for errors, rates and counts).
    pub fn latency_bound_ms(&self) -> Option<f64> {
        matches!(
            self.metric,
            Metric::Mean | Metric::P50 | Metric::P90 | Metric::P99 | Metric::P999 | Metric::Max
        )
        .then_some(self.limit)
    }

    /// Checks the threshold against `figures`.
    pub fn check(&self, figures: &Figures) -> Check {
        let l = &figures.latency;
        let (name, actual, unit) = match self.metric {
            Metric::Mean => ("mean", l.mean_ms, " ms"),
            Metric::P50 => ("p50", l.p50_ms, " ms"),
            Metric::P90 => ("p90", l.p90_ms, " ms"),
            Metric::P99 => ("p99", l.p99_ms, " ms"),
            Metric::P999 => ("p99.9", l.p999_ms, " ms"),
            Metric::Max => ("max", l.max_ms, " ms"),
            Metric::ErrorShare => (
                "errors",
                if figures.requests == 0 {
                    0.0
                } else {
                    100.0 * figures.errors as f64 / figures.requests as f64
                },
                "%",
            ),
            Metric::ErrorCount => ("errors", figures.errors as f64, ""),
            Metric::HitsPerS => ("hits/s", figures.hits_per_s, ""),
            Metric::Requests => ("requests", figures.requests as f64, ""),
        };
        // A run that completed nothing has no latency to hold a latency threshold with.
        let measured = figures.requests > 0
            || matches!(
                self.metric,
                Metric::ErrorCount | Metric::HitsPerS | Metric::Requests
            );
        let passed = measured && self.op.holds(actual, self.limit);
        let text = if measured {
            format!(
                "{name} = {}{unit} (wanted {} {}{unit})",
                short(actual),
                self.op.symbol(),
                short(self.limit)
            )
        } else {
            format!("{name}: no request completed")
        };
        Check {
            threshold: self.text.clone(),
            actual,
            passed,
            text,
        }
    }
}

/// Parses a latency SLO (`brigade compare --slo`, `brigade load --slo`): a threshold that bounds
/// latency (a percentile, the mean or the maximum) or errors from above, so that a lower rate can
/// only help it hold; anything else is refused with the reason.
pub fn parse_slo(text: &str) -> Result<Threshold> {
    let threshold: Threshold = text.parse()?;
    if !matches!(threshold.op, Op::Lt | Op::Le) {
        bail!(
            "--slo {text:?}: an SLO bounds latency or errors from above (< or <=), e.g. p99<10ms, \
             errors<0.1%"
        );
    }
    if matches!(threshold.metric, Metric::HitsPerS | Metric::Requests) {
        bail!(
            "--slo {text:?}: an SLO is on latency (mean, p50, p90, p99, p99.9, max) or errors; \
             the rate is what the search finds"
        );
    }
    Ok(threshold)
}

/// Parses every threshold, or says which one is wrong.
pub fn parse_all(texts: &[String]) -> Result<Vec<Threshold>> {
    texts.iter().map(|t| t.parse()).collect()
}

/// Checks every threshold against `figures`.
pub fn check_all(thresholds: &[Threshold], figures: &Figures) -> Vec<Check> {
    thresholds.iter().map(|t| t.check(figures)).collect()
}

/// `6.2`, `0.05`, `1250`: a figure without trailing zeros.
pub fn short(v: f64) -> String {
    let text = if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    };
    trim_zeros(text)
}

/// `6.200` → `6.2`, `5.000` → `5`: a decimal figure without trailing zeros.
pub fn trim_zeros(text: String) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures() -> Figures {
        Figures {
            requests: 2000,
            errors: 3,
            hits_per_s: 1000.0,
            latency: Latency {
                mean_ms: 1.0,
                p50_ms: 0.8,
                p90_ms: 2.0,
                p99_ms: 6.2,
                p999_ms: 9.0,
                max_ms: 12.0,
            },
        }
    }

    fn check(text: &str) -> Check {
        text.parse::<Threshold>().unwrap().check(&figures())
    }

    #[test]
    fn thresholds_hold_or_fail_and_say_what_was_measured() {
        let p99 = check("p99<5ms");
        assert!(!p99.passed);
        assert_eq!(p99.text, "p99 = 6.2 ms (wanted < 5 ms)");
        assert!(check("p99 < 0.01s").passed);
        assert!(check("p99<=6200us").passed);
        assert!(check("p99.9<10").passed);
        // 3 of 2000 is 0.15%.
        let errors = check("errors<0.1%");
        assert!(!errors.passed, "{errors:?}");
        assert!((errors.actual - 0.15).abs() < 1e-9);
        assert!(check("errors<0.2%").passed);
        assert!(check("errors<=3").passed);
        assert!(!check("errors<3").passed);
        assert!(check("hits/s>=1000").passed);
        assert!(!check("rps>1000").passed);
        assert!(check("requests>1999").passed);
    }

    #[test]
    fn a_run_without_requests_fails_latency_thresholds() {
        let t: Threshold = "p99<5ms".parse().unwrap();
        let none = t.check(&Figures::default());
        assert!(!none.passed);
        assert_eq!(none.text, "p99: no request completed");
        let t: Threshold = "errors<1".parse().unwrap();
        assert!(t.check(&Figures::default()).passed);
    }

    #[test]
    fn slos_are_upper_bounds_on_latency_or_errors_and_nothing_else() {
        for text in [
            "p99<10ms",
            "p99.9<=50ms",
            "errors<0.1%",
            "mean<2ms",
            "max<1s",
            "errors<5",
        ] {
            assert!(parse_slo(text).is_ok(), "{text}");
        }
        for (text, says) in [
            ("p99>10ms", "from above"),
            ("errors>=1%", "from above"),
            ("hits/s<1000", "the rate is what the search finds"),
            ("requests<=10", "the rate is what the search finds"),
            ("p98<5ms", "unknown metric"),
        ] {
            let err = format!("{:#}", parse_slo(text).unwrap_err());
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn malformed_thresholds_are_refused_with_the_reason() {
        for (text, says) in [
            ("p99=5ms", "no < or >"),
            ("p98<5ms", "unknown metric"),
            ("p99<5kg", "not a time"),
            ("p99<fast", "not a number"),
            ("hits/s>5ms", "takes no unit"),
        ] {
            let err = format!("{:#}", text.parse::<Threshold>().unwrap_err());
            assert!(err.contains(says), "{text}: {err}");
        }
    }
}
