//! Brigade's verdict statistics: how much cheaper one runtime is than another, how sure we are, and
//! what a scenario's cells add up to.
//!
//! Brigade drives several servers side by side on the same CPUs and, every one-second window, reads
//! each server's cost (CPU µs per request). Machine noise hits every server in the same second, so
//! the per-window *paired* ratio cancels it; [`paired_cost_ratio`] summarises those ratios as a
//! geometric mean. Neighbouring windows correlate and the machine drifts, so the confidence
//! interval comes from a block bootstrap that keeps runs of neighbouring windows together,
//! prewhitened for the correlation a short block cannot see and widened for the few blocks a short
//! run has (see `bootstrap.rs` for why each step is there). Across rounds of fresh servers,
//! [`all_pairs`] gives every pair of runtimes an interval that holds for the whole cell at once
//! (see `rounds.rs`), and [`over_levels`] pools a scenario's levels into one answer whose
//! intervals widen where a runtime's gap moves between levels (see `levels.rs`). [`pooled_share`] bounds a share pooled over sub-windows (an SLO's tail, an
//! error rate) with the sub-window as the unit. [`four_way`] then turns an interval into a verdict with an equivalence
//! margin — a win, an order inside the margin, a tie within it, or not yet known —
//! and [`samples_to_decide`] says about how long a run would settle an undecided one. [`rollup()`]
//! adds the verdicts of a scenario's cells into one headline. [`predicted_change`] judges a
//! comparison against earlier runs of it, for a regression gate (see `drift.rs`).
//!
//! Everything here is pure: slices in, values out, randomness only from a caller's seed.

mod bootstrap;
mod distribution;
mod drift;
mod interval;
mod levels;
mod rollup;
mod rounds;
mod rule;
mod share;
mod summary;
#[cfg(test)]
mod synthetic;

pub use drift::{per_member, predicted_change, widened, Scatter};
pub use interval::{paired_cost_ratio, unpaired_rate_ratio, Interval};
pub use levels::{mean_noise, over_levels, OverLevels};
pub use rollup::{cell_decided, leader, rollup, tally, Judged, Leader, Rollup, Tally};
pub use rounds::{all_pairs, studentized_range_quantile, Simultaneous, MIN_RUNTIMES_FOR_PLACES};
pub use rule::{four_way, four_way_oriented, samples_to_decide, Outcome};
pub use share::{pooled_share, ShareBounds};
pub use summary::{geometric_interval, mean, median, std_dev};
