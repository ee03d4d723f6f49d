//! The "Against the baseline" section's values and its table (`--baseline`; how they are
//! judged is [`crate::baseline`]): what a report carries, and how it is printed.

use serde::{Deserialize, Serialize};

use crate::verdict::{Measure, Rule};

/// This comparison against a saved one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// The saved reports' paths, as given (comma-separated).
    pub path: String,
    /// When the saved comparisons started (comma-separated).
    pub started_at: String,
    /// The machine it ran on, in words.
    pub machine: String,
    /// Every comparison found in both, in this report's order.
    pub cells: Vec<CellChange>,
    /// Comparisons of this report the baseline does not have (`measure scenario N users: a vs b`).
    pub missing: Vec<String>,
    /// Settings that differ between the two (each a sentence), which may explain a change.
    pub differences: Vec<String>,
    /// How the changes were judged against how many earlier runs, in words.
    #[serde(default)]
    pub basis: String,
}

/// One comparison's ratio against the baseline's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellChange {
    /// What is compared.
    pub measure: Measure,
    /// The scenario.
    pub scenario: String,
    /// Users (closed loop) or connections per runtime (side by side).
    pub users: u32,
    /// Documents preloaded per collection.
    pub preload: u64,
    /// The side-by-side level, for efficiency.
    #[serde(default)]
    pub level: Option<String>,
    /// The better runtime now.
    pub a: String,
    /// The other.
    pub b: String,
    /// The ratio (a better when > 1) in the baseline.
    pub before: f64,
    /// The ratio now.
    pub after: f64,
    /// `after ÷ before − 1`, percent.
    pub change_pct: f64,
    /// The interval of that change, percent.
    pub ci_pct: Option<(f64, f64)>,
    /// Changed, the same, undecided, or not judged.
    pub call: Call,
    /// The absolute figures of `a` and `b`, then and now (measured at another time), in words.
    pub absolute: String,
    /// Why, in words.
    pub reason: String,
}

/// What a change of ratio amounts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// The whole interval of the change lies beyond the margin.
    Changed,
    /// The whole interval lies inside the margin.
    Same,
    /// The interval straddles the margin.
    Undecided,
    /// No interval on one side.
    NotJudged,
}

impl CellChange {
    /// `+3.1% changed`, `-0.4% same`, `not judged`.
    pub fn label(&self) -> String {
        match self.call {
            Call::NotJudged => "not judged".to_owned(),
            call => format!(
                "{:+.1}% {}",
                self.change_pct,
                match call {
                    Call::Changed => "changed",
                    Call::Same => "same",
                    _ => "undecided",
                }
            ),
        }
    }
}

/// The header of the baseline table.
pub const HEADER: [&str; 10] = [
    "measure",
    "scenario",
    "users",
    "level",
    "runtimes",
    "lead before",
    "lead now",
    "change",
    "absolute figures",
    "why",
];

/// One comparison's line in the baseline table.
pub fn cells(change: &CellChange) -> Vec<String> {
    vec![
        format!("{:?}", change.measure).to_lowercase(),
        change.scenario.clone(),
        change.users.to_string(),
        change
            .level
            .clone()
            .unwrap_or_else(|| "isolated".to_owned()),
        format!("{} vs {}", change.a, change.b),
        lead(change.before),
        lead(change.after),
        change.label(),
        change.absolute.clone(),
        change.reason.clone(),
    ]
}

/// A lead as a percentage, or a dash where the comparison had no ratio (one runtime's figure
/// missing).
fn lead(ratio: f64) -> String {
    if ratio > 0.0 {
        format!("{:+.1}%", (ratio - 1.0) * 100.0)
    } else {
        "—".to_owned()
    }
}

/// The rule, in words, under the table.
pub fn rule(rule: &Rule, baseline: &Baseline) -> String {
    format!(
        "Each comparison's ratio between two runtimes is set against the same comparison of the \
         baseline: it changed when the whole interval of the change lies beyond the margin \
         (±{:.0}% efficiency, ±{:.0}% throughput), is the same when it lies inside, and is undecided \
         otherwise — the three-way rule of the verdicts. {} Absolute figures were measured at \
         another time and are shown, not judged.",
        rule.margin_pct(Measure::Efficiency),
        rule.margin_pct(Measure::Throughput),
        baseline.basis
    )
}
