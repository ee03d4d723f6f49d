//! A judged comparison of two runtimes in one cell: the ratio, its interval and the outcome the
//! verdict rule gave it. Plain data: the judge fills it in, the renderers read it.

use serde::{Deserialize, Serialize};

use brigade_stats::Outcome;

use crate::verdict::Measure;

/// One judged comparison: the best runtime of a cell (`a`) against another (`b`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// What is compared.
    pub measure: Measure,
    /// The scenario.
    pub scenario: String,
    /// Users (closed loop) or connections per runtime (side by side).
    pub users: u32,
    /// Documents preloaded per collection.
    pub preload: u64,
    /// The side-by-side load level (`40%`), for efficiency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    /// The offered rate per runtime at that level, requests/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_s: Option<f64>,
    /// The store every service used.
    pub store: String,
    /// The better runtime.
    pub a: String,
    /// The other runtime.
    pub b: String,
    /// > 1 means `a` is better: b's cost ÷ a's (efficiency), a's rate ÷ b's (throughput).
    pub ratio: Option<f64>,
    /// The interval's low end, on the same scale.
    pub ci_low: Option<f64>,
    /// The interval's high end.
    pub ci_high: Option<f64>,
    /// The confidence level, percent.
    pub confidence_pct: f64,
    /// The equivalence margin, percent.
    pub margin_pct: f64,
    /// What the interval rests on: rounds of fresh servers (efficiency; windows in reports written
    /// before rounds), isolated runs per runtime (throughput), independent searches (capacity).
    pub samples: usize,
    /// Whether the interval holds together with the cell's other comparisons at the stated
    /// confidence (simultaneous over every pair), not only alone.
    #[serde(default)]
    pub simultaneous: bool,
    /// The four-way outcome, or not judged (see `reason`).
    pub outcome: Outcome,
    /// Why it was not judged, if it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For an undecided comparison, about how many samples in all would likely decide it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples_to_decide: Option<usize>,
    /// The verdict line.
    pub sentence: String,
}

impl Comparison {
    /// Whether this comparison and `other` are of the same cell and runtimes (for `--baseline`).
    pub fn same_cell(&self, other: &Comparison) -> bool {
        self.measure == other.measure
            && self.scenario == other.scenario
            && self.users == other.users
            && self.preload == other.preload
            && self.level == other.level
    }
}
