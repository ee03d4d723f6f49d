//! What a verdict is — who won, by how much, or why nobody did — on efficiency and on throughput,
//! by one rule; the types the judge (`brigade-compare`'s `judge`) fills in and the renderers read.
//!
//! Every judged comparison is a ratio between the best runtime (`a`) and another (`b`), with a
//! confidence interval (`brigade-stats`):
//! - **efficiency**: b's CPU per request ÷ a's, from the side-by-side windows (paired, one ratio a
//!   window; a moving-block bootstrap interval);
//! - **throughput**: a's successful hits/s ÷ b's, from the isolated runs' seconds (unpaired: the
//!   runs were made at different times, so the interval carries the drift between them);
//! - **capacity** (`--slo`): a's highest rate holding every SLO ÷ b's, from their independent
//!   searches, round by round (simultaneous intervals; the search's bracket is its precision, not
//!   an interval).
//!
//! The four-way rule (`brigade_stats::four_way`): **win** when the whole interval lies beyond the
//! equivalence margin (2% for efficiency, 5% for throughput, or `--equivalence`), **ahead** when it
//! excludes no difference but reaches inside the margin, **equivalent** when it lies inside,
//! **undecided** otherwise — with the interval shown and about how many more samples would likely
//! decide it; a comparison with no interval is **not judged**. A cell's verdict gathers its
//! comparisons: a winner when the best beats every other runtime, a leader when the order is known
//! but some trail inside the margin, the top group when some are equivalent to the best, undecided
//! as soon as one comparison is.
//!
//! Cells whose figures cannot rank runtimes are not judged, with the reason: a side-by-side level
//! the generator could not deliver (achieved more than 1% under offered, or its CPUs saturated), a
//! cell with failures; an isolated cell in which a run was generator-bound (no throughput verdict)
//! or contended (other processes took at least 20% of a side's CPUs).
//!
//! A scenario's verdict sums its cells up: a runtime wins the scenario when it is the only runtime
//! to win any cell and it wins most of the cells that could be judged.

use serde::{Deserialize, Serialize};

/// The largest margin reported (a runner-up with no successful request at all).
pub const MAX_MARGIN_PCT: f64 = 1_000_000.0;

/// The efficiency margin unless `--equivalence` says otherwise, percent.
pub const DEFAULT_EFFICIENCY_MARGIN_PCT: f64 = 2.0;

/// The throughput margin unless `--equivalence` says otherwise, percent.
pub const DEFAULT_THROUGHPUT_MARGIN_PCT: f64 = 5.0;

/// The confidence level unless `--confidence` says otherwise, percent.
pub const DEFAULT_CONFIDENCE_PCT: f64 = 95.0;

/// How verdicts are judged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// `--equivalence PCT` for every measure; `None`: each measure's default.
    pub equivalence_pct: Option<f64>,
    /// The confidence level, percent.
    pub confidence_pct: f64,
}

impl Default for Rule {
    fn default() -> Rule {
        Rule {
            equivalence_pct: None,
            confidence_pct: DEFAULT_CONFIDENCE_PCT,
        }
    }
}

impl Rule {
    /// The equivalence margin of `measure`, percent.
    pub fn margin_pct(&self, measure: Measure) -> f64 {
        self.equivalence_pct.unwrap_or(match measure {
            Measure::Efficiency => DEFAULT_EFFICIENCY_MARGIN_PCT,
            Measure::Throughput | Measure::Capacity => DEFAULT_THROUGHPUT_MARGIN_PCT,
        })
    }

    /// The confidence level as a fraction.
    pub fn confidence(&self) -> f64 {
        (self.confidence_pct / 100.0).clamp(0.5, 0.999)
    }
}

/// What a verdict compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// Successful hits/s; higher is better. Generator-bound cells name no winner.
    Throughput,
    /// Server CPU µs per request (user + system over the measured window ÷ requests); lower is
    /// better. A lead is how much more CPU per request the other runtime spent. Generator-bound
    /// cells are judged too: the server's cost per request does not depend on who set the pace.
    Efficiency,
    /// The highest open-loop rate at which every SLO held (`--slo`), requests/s; higher is
    /// better. Judged from the capacities of each runtime's independent searches.
    Capacity,
}

/// The outcome of a cell or a scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Outcome {
    /// One runtime is ahead of every other beyond the margin.
    Winner {
        /// The winner.
        runtime: String,
        /// The next best.
        runner_up: String,
        /// How far ahead of the runner-up, percent (for a scenario: the smallest lead).
        margin_pct: f64,
    },
    /// One runtime leads and the order is known for every other, but at least one trails it by a
    /// difference whose interval reaches inside the margin ("ahead", not a win that matters).
    Leads {
        /// The leader.
        runtime: String,
        /// The closest behind it.
        runner_up: String,
        /// How far ahead of the runner-up, percent.
        margin_pct: f64,
    },
    /// The leaders are equivalent: their intervals lie inside the margin (any other runtime
    /// loses to them).
    Equivalent {
        /// The runtimes at the top, equivalent to each other.
        leaders: Vec<String>,
    },
    /// The figures could not tell: an interval straddles the margin. (Reports written before the
    /// three-way rule said `tie` for this and for equivalence alike; they read as undecided.)
    #[serde(alias = "tie")]
    Undecided {
        /// The runtimes that could not be told apart at the top.
        leaders: Vec<String>,
    },
    /// The generator, not the servers, limited the figures.
    GeneratorBound,
    /// Other processes took a share of the CPUs during a run: the figures are not comparable.
    Contended,
    /// Not enough results to compare.
    NoData,
    /// Figures were measured but cannot rank runtimes (a side-by-side level short of its offered
    /// rate, or with failures); the verdict's reason says why.
    NotJudged,
}

/// An outcome and the sentence that explains it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// What was decided.
    pub outcome: Outcome,
    /// Why, in words.
    pub reason: String,
}

impl Verdict {
    /// A short label: `axum +12.3%`, `equivalent`, `undecided`, `generator-bound`, `no data`.
    pub fn label(&self) -> String {
        match &self.outcome {
            Outcome::Winner {
                runtime,
                margin_pct,
                ..
            } => format!("{runtime} +{margin_pct:.1}%"),
            Outcome::Leads {
                runtime,
                margin_pct,
                ..
            } => format!("{runtime} leads (+{margin_pct:.1}%)"),
            Outcome::Equivalent { leaders } if leaders.len() > 1 => {
                format!("{} equivalent", leaders.join("≈"))
            }
            Outcome::Equivalent { .. } => "equivalent".to_owned(),
            Outcome::Undecided { .. } => "undecided".to_owned(),
            Outcome::GeneratorBound => "generator-bound".to_owned(),
            Outcome::Contended => "contended".to_owned(),
            Outcome::NoData => "no data".to_owned(),
            Outcome::NotJudged => "not judged".to_owned(),
        }
    }
}

/// A figure as a reader wants it: thousands separated and no false precision (`58,026`, `412`,
/// `41.2`, `4.12`).
pub fn figure(value: f64) -> String {
    if !value.is_finite() {
        return value.to_string();
    }
    let magnitude = value.abs();
    if magnitude >= 1000.0 {
        let grouped = brigade_records::number::grouped(magnitude.round() as u64);
        if value < 0.0 {
            format!("-{grouped}")
        } else {
            grouped
        }
    } else if magnitude >= 100.0 {
        format!("{value:.0}")
    } else if magnitude >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// A count with its thousands separated: `0`, `200`, `1,000,000`.
pub fn count(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else {
        figure(n as f64)
    }
}

/// Where in a scenario a cell lies: its user count and, when the comparison has several, its
/// preload and its side-by-side load level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellAt {
    /// Closed-loop users (side by side: connections per runtime).
    pub users: u32,
    /// Documents preloaded per collection, when preloads are a dimension of the comparison.
    pub preload: Option<u64>,
    /// The side-by-side load level (`40%`), for efficiency cells.
    pub level: Option<String>,
}

impl From<u32> for CellAt {
    fn from(users: u32) -> CellAt {
        CellAt {
            users,
            preload: None,
            level: None,
        }
    }
}

impl std::fmt::Display for CellAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.preload {
            None => write!(f, "{} users", self.users)?,
            Some(n) => write!(f, "{} users with {} preloaded", self.users, count(n))?,
        }
        match &self.level {
            Some(level) => write!(f, " at {level}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_grouped_by_thousands_without_false_precision() {
        assert_eq!(figure(58_026.4), "58,026");
        assert_eq!(figure(1_000_000.0), "1,000,000");
        assert_eq!(figure(412.3), "412");
        assert_eq!(figure(41.23), "41.2");
        assert_eq!(figure(4.123), "4.12");
        assert_eq!(
            (count(0), count(200), count(1_000)),
            ("0".into(), "200".into(), "1,000".into())
        );
    }
}
