//! A search as the reports keep it: what was searched and its outcome ([`SloSearch`]), with what
//! serving a target rate at that capacity costs, and a runtime's capacity over its independent
//! searches ([`CapacitySummary`], a geometric mean with its interval).

use serde::{Deserialize, Serialize};

use crate::outcome::SearchOutcome;
use crate::stalls;

/// One search as reports write it: what was searched, its outcome, and what it costs to serve a
/// target rate at that capacity.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SloSearch {
    /// The runtime searched (`target` for a server `brigade load` did not start).
    pub runtime: String,
    /// The scenario.
    pub scenario: String,
    /// Connections sending the open-loop schedule.
    pub users: u32,
    /// Documents preloaded per collection.
    #[serde(default)]
    pub preload: u64,
    /// Which of the runtime's independent searches in this cell (0 for the first): searches with
    /// one number ran interleaved, one step each in turn.
    #[serde(default)]
    pub search: u32,
    /// The search's outcome: capacity, bracket, curve.
    #[serde(flatten)]
    pub outcome: SearchOutcome,
    /// Where the start rate came from, in words.
    pub start_from: String,
    /// How each step's server was made, in words.
    pub fresh: String,
    /// The machine's own pauses, probed just before this search (and the searches it ran beside).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_probe: Option<stalls::StallProbe>,
    /// The CPUs the server ran on, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpus: Option<u32>,
    /// The capacity per server CPU, requests/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_per_cpu: Option<f64>,
    /// `--slo-target-rate`, requests/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_rate_per_s: Option<f64>,
    /// Server CPUs needed for the target rate at this capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores_for_target: Option<f64>,
    /// Wall-clock time the search took, seconds (its steps, servers started included).
    pub seconds: f64,
}

impl SloSearch {
    /// Fills the per-CPU figures from the capacity, `server_cpus` and `target_rate_per_s`.
    pub fn size(&mut self, server_cpus: Option<u32>, target_rate_per_s: Option<f64>) {
        self.server_cpus = server_cpus;
        self.target_rate_per_s = target_rate_per_s;
        self.capacity_per_cpu = match (self.outcome.capacity_per_s, server_cpus) {
            (Some(c), Some(n)) if n > 0 => Some(c / f64::from(n)),
            _ => None,
        };
        self.cores_for_target = match (self.capacity_per_cpu, target_rate_per_s) {
            (Some(per_cpu), Some(target)) if per_cpu > 0.0 => Some(target / per_cpu),
            _ => None,
        };
    }

    /// A search the machine's own stalls refused before it took a step.
    pub fn refused(&self) -> bool {
        self.outcome.steps == 0
            && self
                .stall_probe
                .as_ref()
                .is_some_and(|p| p.refused.is_some())
    }
}

/// A runtime's capacity over its independent searches in one cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CapacitySummary {
    /// The runtime.
    pub runtime: String,
    /// Searches made.
    pub searches: u32,
    /// Of those, the ones that found a capacity.
    pub found: u32,
    /// The geometric mean of the capacities found, requests/s.
    pub capacity_per_s: Option<f64>,
    /// Its interval (Student's t on the log capacities, [`SUMMARY_CONFIDENCE`]), only when every
    /// search found one and there are at least two.
    pub low_per_s: Option<f64>,
    /// The interval's high end.
    pub high_per_s: Option<f64>,
    /// Server CPUs for the target rate at the capacity, and at the interval's ends.
    pub cores_for_target: Option<f64>,
    /// Cores at the interval's high capacity (the fewest).
    pub cores_low: Option<f64>,
    /// Cores at the interval's low capacity (the most).
    pub cores_high: Option<f64>,
    /// Why searches found none, one line each.
    pub missing: Vec<String>,
}

/// The confidence of a capacity summary's interval.
pub const SUMMARY_CONFIDENCE: f64 = 0.95;

impl CapacitySummary {
    /// The summary of `searches` (one runtime's, one cell's).
    pub fn of(searches: &[&SloSearch]) -> CapacitySummary {
        let found: Vec<&SloSearch> = searches
            .iter()
            .copied()
            .filter(|s| s.outcome.capacity_per_s.is_some())
            .collect();
        let capacities: Vec<f64> = found
            .iter()
            .filter_map(|s| s.outcome.capacity_per_s)
            .collect();
        let all = brigade_stats::geometric_interval(&capacities, SUMMARY_CONFIDENCE);
        let centre = all.map(|i| i.0).or_else(|| capacities.first().copied());
        // An interval only when no search is missing from it.
        let interval = all.filter(|_| found.len() == searches.len());
        // Cores scale as 1 ÷ capacity: the ratio of one search's cores to its capacity holds for all.
        let per = found
            .iter()
            .find_map(|s| Some(s.cores_for_target? * s.outcome.capacity_per_s?));
        let cores = |c: Option<f64>| per.zip(c).map(|(p, c)| p / c);
        CapacitySummary {
            runtime: searches
                .first()
                .map_or(String::new(), |s| s.runtime.clone()),
            searches: searches.len() as u32,
            found: found.len() as u32,
            capacity_per_s: centre,
            low_per_s: interval.map(|i| i.1),
            high_per_s: interval.map(|i| i.2),
            cores_for_target: cores(centre),
            cores_low: cores(interval.map(|i| i.2)),
            cores_high: cores(interval.map(|i| i.1)),
            missing: searches
                .iter()
                .filter(|s| s.outcome.capacity_per_s.is_none())
                .map(|s| {
                    format!(
                        "search {}: {}",
                        s.search + 1,
                        s.outcome.reason.as_deref().unwrap_or("no capacity")
                    )
                })
                .collect(),
        }
    }
}
