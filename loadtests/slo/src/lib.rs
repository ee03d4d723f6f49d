//! Capacity at a latency SLO: the highest open-loop rate at which every SLO (`p99<10ms`,
//! `errors<0.1%`) holds, found by search — the question a team provisions by, which a
//! peak-throughput figure does not answer.
//!
//! The search is a state machine that asks for one step at a time ([`Search::next_step`]) and is
//! told what the step measured ([`Search::record`]); whoever drives it runs the steps (`brigade
//! load --slo` against one server, `brigade compare --slo` interleaving several runtimes, each
//! step on a fresh server), so the logic is tested on a simulated server without a clock.
//!
//! **Every rate is judged on all that was measured at it** ([`evidence`]): a step measures
//! [`SearchSettings::windows`] sub-windows, each with an exact histogram; the steps at one rate
//! pool; and the rate is **held** when every SLO's upper bound (sub-windows as the unit) is inside
//! it, **failed** when one's lower bound is past it, and **not yet known** otherwise — then the
//! next step measures the same rate again, up to [`SearchSettings::max_windows`] sub-windows,
//! after which it counts as failed, saying so.
//!
//! **The search moves both ways** (a noisy bisection with backtracking, as Karp and Kleinberg's
//! noisy binary search checks its bracket before trusting it). Its bracket is always read from
//! every answer so far: the highest held rate below the lowest failed one.
//! 1. **ramp** from the start rate, ×2 while every rate held, ÷2 while every rate failed;
//! 2. **bisect** the bracket at its midpoint until its ends are within the precision (2%);
//! 3. **recheck** each end of the narrow bracket on a fresh visit (pooled with the earlier ones):
//!    an end whose answer turns moves the bracket — down when the low end fails, up when the high
//!    end holds — and the bisection goes on from there. A held rate above a failed one (a
//!    contradiction one stalled or lucky visit can make) is measured again, the thinner of the two
//!    first; if both reach the cap, the held one is set aside (a capacity cannot pass a rate that
//!    failed).
//!
//! The capacity is the low end once both ends have answered twice. A search is one sample of the
//! capacity: its interval comes from independent searches, each on its own fresh servers
//! (`--slo-searches`), never from steps within one.
//!
//! A step the generator could not offer (its CPUs saturated, or fewer requests sent than the
//! schedule asked while every SLO held) ends the search with "generator-bound at R": that rate
//! measured the generator, so no capacity is claimed.
//!
//! What this crate holds, one job a module: [`search`] (the state machine and [`interleave`]),
//! [`step`] (a step's [`Stage`] and what it [`Measured`]), [`evidence`] (the pooled sub-windows
//! and their bounds), [`settings`] (the defaults and [`SearchSettings`]), [`outcome`] (the curve
//! and a search's result), [`record`] (a search as the reports keep it, and a runtime's
//! [`CapacitySummary`]), [`words`] (its sentences), [`stalls`] (what the machine's own pauses,
//! probed before searching, mean for an SLO). The `--slo` flags are the generator's
//! (`brigade_load::args::SloArgs`), shared by `brigade load` and `brigade compare`.
//!
//! It is a crate of its own that runs nothing: on the plain records (`brigade-records`: thresholds,
//! histograms) and the pure statistics (`brigade-stats` gives the capacity's interval). Whoever
//! drives it runs the steps and the stall probe's timers: `brigade load --slo` (the generator's
//! `cli`) against one running server, `brigade compare --slo` on fresh servers. So the reports,
//! which render its records, depend on nothing that measures.

pub mod evidence;
pub mod outcome;
pub mod record;
pub mod search;
pub mod settings;
#[cfg(test)]
mod simulated;
pub mod stalls;
pub mod step;
pub mod words;

pub use evidence::{Answer, Pool, SloEvidence, WindowFigures};
pub use outcome::{CurvePoint, SearchOutcome};
pub use record::{CapacitySummary, SloSearch, SUMMARY_CONFIDENCE};
pub use search::{interleave, Search};
pub use settings::SearchSettings;
pub use step::{Measured, Stage};
pub use words::rate_words;
