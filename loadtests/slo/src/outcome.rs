//! What a search found: its latency–rate curve, one [`CurvePoint`] per step, and the
//! [`SearchOutcome`] (the capacity or why there is none, and the bracket).

use brigade_records::threshold::Threshold;
use serde::{Deserialize, Serialize};

use crate::evidence::{Answer, SloEvidence};
use crate::step::Stage;

/// One step on the latency–rate curve: what it measured alone, and the rate's pooled answer after
/// it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// The rate offered, requests/s.
    pub offered_per_s: f64,
    /// Requests completed per second.
    pub achieved_per_s: f64,
    /// Median latency of this step, ms (from the intended send time).
    pub p50_ms: f64,
    /// 99th percentile of this step, ms.
    pub p99_ms: f64,
    /// 99.9th percentile of this step, ms.
    pub p999_ms: f64,
    /// Failed requests of this step, percent of those sent.
    pub error_pct: f64,
    /// Whether the rate's answer after this step is held (and the rate was offered in full).
    pub held: bool,
    /// The search stage that asked for it.
    pub stage: Stage,
    /// The rate's answer after this step, on everything pooled at it.
    #[serde(default)]
    pub answer: Answer,
    /// Visits made at this rate so far, this one included.
    #[serde(default)]
    pub visits: u32,
    /// Sub-windows pooled at this rate so far.
    #[serde(default)]
    pub windows: u32,
    /// The pooled median at this rate, ms.
    #[serde(default)]
    pub pooled_p50_ms: f64,
    /// The pooled p99 at this rate, ms.
    #[serde(default)]
    pub pooled_p99_ms: f64,
    /// The pooled p99.9 at this rate, ms.
    #[serde(default)]
    pub pooled_p999_ms: f64,
    /// Every SLO judged on the pool: figure, bounds, limit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<SloEvidence>,
    /// The server's CPU per request, µs, when sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_us_per_request: Option<f64>,
    /// What failed or is not yet known, in words, when the rate did not hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Other processes took CPU on a side during the step, in words, if they did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contended: Option<String>,
}

/// A finished search: the capacity (or why there is none), its bracket and its curve.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchOutcome {
    /// The SLOs, as given.
    pub slo: Vec<String>,
    /// The highest rate at which every SLO held, below every rate that failed, requests/s; `None`
    /// with a `reason` when none was found.
    pub capacity_per_s: Option<f64>,
    /// Why no capacity was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The bracket's low end at the end (the capacity, when one was found).
    pub bracket_low: Option<f64>,
    /// The bracket's high end at the end: the lowest rate that failed.
    pub bracket_high: Option<f64>,
    /// The rate the ramp started from, requests/s.
    pub start_per_s: f64,
    /// Steps taken.
    pub steps: u32,
    /// Every step, in the order taken.
    pub curve: Vec<CurvePoint>,
}

impl SearchOutcome {
    /// A search the stall probe refused: no step, the probe's reason.
    pub fn refused(slo: &[Threshold], start_per_s: f64, why: &str) -> SearchOutcome {
        SearchOutcome {
            slo: slo.iter().map(ToString::to_string).collect(),
            reason: Some(why.to_owned()),
            start_per_s,
            ..SearchOutcome::default()
        }
    }
}
