//! How a search goes: its defaults and the constants that shape it, and the settings one search
//! runs with ([`SearchSettings`]).

use serde::{Deserialize, Serialize};

/// The precision unless told: the bracket's ends within 2% of each other.
pub const DEFAULT_PRECISION: f64 = 0.02;
/// Sub-windows a step measures unless told.
pub const DEFAULT_WINDOWS: u32 = 4;
/// Sub-windows a rate may pool before "not yet known" counts as failed, unless told.
pub const DEFAULT_MAX_WINDOWS: u32 = 16;
/// Independent searches per runtime and cell unless told (the samples of the capacity).
pub const DEFAULT_SEARCHES: u32 = 3;
/// Visits each end of a narrow bracket needs before the search ends.
pub const RECHECK_VISITS: u32 = 2;
/// The ramp's factor per step.
pub const GROWTH: f64 = 2.0;
/// A step that completes less than this share of its offered rate was not offered in full.
pub const ACHIEVED_SHARE: f64 = 0.99;
/// Requests a step may complete beyond [`ACHIEVED_SHARE`]'s shortfall before it counts as not
/// offered in full: a window's two edges each cut a request, so 33 of the 33.6 that 0.4 s at 84/s
/// schedules (98.2%) is rounding, not a generator falling behind.
pub const EDGE_REQUESTS: f64 = 2.0;
/// How a search goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchSettings {
    /// The first rate offered, requests/s.
    pub start_per_s: f64,
    /// The bracket is narrow enough when high ÷ low − 1 is at most this (0.02 = 2%).
    pub precision: f64,
    /// Sub-windows one step measures.
    pub windows: u32,
    /// Sub-windows a rate may pool; past them, not yet known is failed.
    pub max_windows: u32,
    /// The ramp stops going down below this rate, requests/s.
    pub floor_per_s: f64,
    /// The ramp stops going up above this rate, requests/s.
    pub ceiling_per_s: f64,
    /// The most steps one search may take.
    pub max_steps: u32,
}

impl SearchSettings {
    /// The defaults from `start_per_s`.
    pub fn from_start(start_per_s: f64) -> SearchSettings {
        SearchSettings {
            start_per_s,
            precision: DEFAULT_PRECISION,
            windows: DEFAULT_WINDOWS,
            max_windows: DEFAULT_MAX_WINDOWS,
            floor_per_s: 1.0,
            ceiling_per_s: 10_000_000.0,
            max_steps: 60,
        }
    }

    /// Refuses settings no search can run with.
    pub fn check(&self) -> anyhow::Result<()> {
        if !(self.start_per_s.is_finite() && self.start_per_s > 0.0) {
            anyhow::bail!(
                "--slo-start {}: the first rate must be above 0",
                self.start_per_s
            );
        }
        if !(self.precision > 0.0 && self.precision < 0.5) {
            anyhow::bail!("--slo-precision must be above 0% and below 50%");
        }
        if self.windows == 0 || self.max_windows < self.windows.max(2) {
            anyhow::bail!(
                "--slo-windows must be at least 1 and --slo-max-windows at least 2 and at least                  --slo-windows"
            );
        }
        Ok(())
    }
}
