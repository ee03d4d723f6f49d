//! The verdicts of a cell (a scenario at one user count and preload), of its side-by-side levels,
//! and of a scenario over its cells.

use crate::comparison::Comparison;
use crate::verdict::Verdict;
use serde::{Deserialize, Serialize};

/// The verdicts for one scenario at one user count and preload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellVerdict {
    /// The scenario.
    pub scenario: String,
    /// Closed-loop users.
    pub users: u32,
    /// Documents per collection preloaded.
    #[serde(default)]
    pub preload: u64,
    /// The throughput verdict (successful hits/s): what was decided and why.
    pub verdict: Verdict,
    /// The efficiency verdict (server CPU µs per request side by side, lower is better) over the
    /// cell's load levels.
    #[serde(default)]
    pub efficiency: Option<Verdict>,
    /// The efficiency verdict at each side-by-side load level.
    #[serde(default)]
    pub efficiency_levels: Vec<LevelVerdict>,
    /// The cell's efficiency leader: the best runtime and those equivalent to it, over its levels
    /// (decided when every level's leader is decided and all name the same group).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader: Option<brigade_stats::Leader>,
    /// The capacity verdict (`--slo`): the highest rate holding every SLO, higher is better.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Verdict>,
}

/// The efficiency verdict of a cell at one side-by-side load level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelVerdict {
    /// The level (`40%` of the server CPUs, or `given`).
    pub level: String,
    /// The rate offered to every runtime, requests/s.
    pub rate_per_s: f64,
    /// The share of the server CPUs the level kept busy, percent (what the level measured, beside
    /// the share its name asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_pct: Option<f64>,
    /// What was decided and why.
    pub verdict: Verdict,
    /// The level's leader: the best runtime and those equivalent to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader: Option<brigade_stats::Leader>,
}

/// The verdicts for one scenario over its cells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioVerdict {
    /// The scenario.
    pub scenario: String,
    /// The throughput verdict: what was decided and why.
    pub verdict: Verdict,
    /// The efficiency verdict (server CPU µs per request, lower is better).
    #[serde(default)]
    pub efficiency: Option<Verdict>,
    /// The efficiency answer pooled over the scenario's side-by-side levels (reports written
    /// before it have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooled: Option<PooledVerdict>,
    /// The capacity verdict (`--slo`) over the scenario's cells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Verdict>,
}

/// A scenario's efficiency answer pooled over its side-by-side levels: every runtime's cost
/// relative to the others from all the levels and rounds together, intervals simultaneous over
/// every pair and widened by however much the gaps move between levels (`brigade_stats::over_levels`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PooledVerdict {
    /// The levels pooled (`10 users at 40%`), in the report's order.
    pub levels: Vec<String>,
    /// The scenario's levels left out, each with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// The leading group (the best and every runtime equivalent to it), decided when no
    /// comparison with the best is undecided; None when nothing could be pooled.
    pub leader: Option<brigade_stats::Leader>,
    /// The best against each other runtime, cheapest first.
    pub comparisons: Vec<Comparison>,
    /// Every runtime measured under two labels (`hyper` / `hyper#2`), the cheaper of the two as
    /// `a`, from the same simultaneous intervals.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<Comparison>,
    /// The level-to-level scatter of the gaps over what the rounds' noise explains (about 1 when
    /// every gap holds at every level); None when a level's own noise is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interaction: Option<f64>,
    /// Where another runtime leads the pooled best at a level, decidedly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub order_changes: Vec<String>,
    /// Each runtime's requests per server CPU-second, over the pooled levels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_core: Vec<PerCore>,
}

/// A runtime's capacity per core: requests per second of server CPU (10⁶ / CPU µs per request),
/// the geometric mean over a scenario's pooled levels and the lowest and highest level's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerCore {
    /// The runtime.
    pub runtime: String,
    /// Requests per server CPU-second, geometric mean over the levels.
    pub hits_per_cpu_s: f64,
    /// The lowest level's.
    pub lowest: f64,
    /// The highest level's.
    pub highest: f64,
}
