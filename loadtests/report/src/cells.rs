//! The verdicts of a cell (a scenario at one user count and preload), of its side-by-side levels,
//! and of a scenario over its cells.

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
    /// The capacity verdict (`--slo`) over the scenario's cells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Verdict>,
}
