//! Who won, by how much, or why nobody did — on efficiency and on throughput, by one rule.
//!
//! Every judged comparison is a ratio between the best runtime (`a`) and another (`b`), with a
//! confidence interval (`brigade-stats`):
//! - **efficiency**: b's CPU per request ÷ a's, from the side-by-side windows (paired, one ratio a
//!   window; a moving-block bootstrap interval);
//! - **throughput**: a's successful hits/s ÷ b's, from the isolated runs' seconds (unpaired: the
//!   runs were made at different times, so the interval carries the drift between them);
//! - **capacity** (`--slo`): a's highest rate holding every SLO ÷ b's, from the rates their
//!   repeated confirmations confirmed (unpaired; the search's bracket is its precision, not an
//!   interval).
//!
//! The three-way rule: **win** when the whole interval lies beyond the equivalence margin (2% for
//! efficiency, 5% for throughput, or `--equivalence`), **equivalent** when it lies inside,
//! **undecided** otherwise — with the interval shown and about how many more windows would
//! likely decide it. A cell's verdict gathers its comparisons: a winner when the best beats every
//! other runtime, the top group when some are equivalent to the best and the rest lose, undecided
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

pub use brigade_bench::runcpu::{
    contended, generator_bound, CpuShape, RunCpu, CONTENTION, GENERATOR_SATURATED, SERVER_HEADROOM,
};

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
    /// better. Judged from the rates each search's confirmations confirmed.
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

/// The median of `values` (0 when empty).
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

fn min(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::INFINITY, f64::min)
}

fn max(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// A figure as a reader wants it: thousands separated and no false precision (`58,026`, `412`,
/// `41.2`, `4.12`).
pub fn figure(value: f64) -> String {
    if !value.is_finite() {
        return value.to_string();
    }
    let magnitude = value.abs();
    if magnitude >= 1000.0 {
        let grouped = brigade_load::table::grouped(magnitude.round() as u64);
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

/// Sums up a scenario from its cells, given as (users, verdict).
pub fn judge_scenario(cells: &[(u32, Verdict)]) -> Verdict {
    let cells: Vec<(CellAt, Verdict)> = cells
        .iter()
        .map(|(users, v)| (CellAt::from(*users), v.clone()))
        .collect();
    judge_scenario_at(&cells)
}

/// Sums up a scenario from its cells, each given with where it lies: a runtime wins when it is the
/// only one to win any cell and it wins most of the cells that could be judged.
pub fn judge_scenario_at(cells: &[(CellAt, Verdict)]) -> Verdict {
    let judged: Vec<&(CellAt, Verdict)> = cells
        .iter()
        .filter(|(_, v)| {
            !matches!(
                v.outcome,
                Outcome::GeneratorBound | Outcome::Contended | Outcome::NoData | Outcome::NotJudged
            )
        })
        .collect();
    let bound = cells_where(cells, Outcome::GeneratorBound);
    let contended = cells_where(cells, Outcome::Contended);
    let unjudged = cells_where(cells, Outcome::NotJudged);
    if judged.is_empty() {
        return nothing_judged(&bound, &contended, &unjudged);
    }
    let bound_note = unjudged_note(&bound, &contended, &unjudged);
    let tally = Tally::of(&judged);
    tally.verdict(&judged, &bound_note)
}

/// The cells whose verdict is `outcome`.
fn cells_where(cells: &[(CellAt, Verdict)], outcome: Outcome) -> Vec<CellAt> {
    cells
        .iter()
        .filter(|(_, v)| v.outcome == outcome)
        .map(|(at, _)| at.clone())
        .collect()
}

/// The tail of a summed reason naming the cells left out of the judgement, and why.
fn unjudged_note(bound: &[CellAt], contended: &[CellAt], unjudged: &[CellAt]) -> String {
    let mut bound_note = String::new();
    if !bound.is_empty() {
        bound_note.push_str(&format!("; generator-bound at {}", join_cells(bound)));
    }
    if !contended.is_empty() {
        bound_note.push_str(&format!("; contended at {}", join_cells(contended)));
    }
    if !unjudged.is_empty() {
        bound_note.push_str(&format!("; not judged at {}", join_cells(unjudged)));
    }
    bound_note
}

/// The verdict of a scenario none of whose cells could be judged: the first reason that holds.
fn nothing_judged(bound: &[CellAt], contended: &[CellAt], unjudged: &[CellAt]) -> Verdict {
    if !bound.is_empty() {
        Verdict {
            outcome: Outcome::GeneratorBound,
            reason: format!(
                "no user count could be judged; generator-bound at {}: these figures \
                 measure the generator{}",
                join_cells(bound),
                if contended.is_empty() {
                    String::new()
                } else {
                    format!("; contended at {}", join_cells(contended))
                }
            ),
        }
    } else if !contended.is_empty() {
        Verdict {
            outcome: Outcome::Contended,
            reason: format!(
                "other processes took CPU in every cell ({}): no comparable figures",
                join_cells(contended)
            ),
        }
    } else if !unjudged.is_empty() {
        Verdict {
            outcome: Outcome::NotJudged,
            reason: format!(
                "no cell could be judged (not judged at {}; each cell says why)",
                join_cells(unjudged)
            ),
        }
    } else {
        Verdict {
            outcome: Outcome::NoData,
            reason: "no user count could be judged".to_owned(),
        }
    }
}

/// What a scenario's judged cells say together: who won where, by how much, and who led.
struct Tally {
    /// The runtimes that won a cell, in first-win order.
    winners: Vec<String>,
    /// Each won cell's margin, in %.
    margins: Vec<f64>,
    /// Each won cell's runner-up.
    runners_up: Vec<String>,
    /// Every runtime that won or tied for the lead in a cell, in first-seen order.
    leaders: Vec<String>,
}

impl Tally {
    /// Counts the judged cells' outcomes.
    fn of(judged: &[&(CellAt, Verdict)]) -> Tally {
        let mut tally = Tally {
            winners: Vec::new(),
            margins: Vec::new(),
            runners_up: Vec::new(),
            leaders: Vec::new(),
        };
        for (_, verdict) in judged {
            match &verdict.outcome {
                Outcome::Winner {
                    runtime,
                    runner_up,
                    margin_pct,
                } => {
                    if !tally.winners.contains(runtime) {
                        tally.winners.push(runtime.clone());
                    }
                    tally.margins.push(*margin_pct);
                    tally.runners_up.push(runner_up.clone());
                    if !tally.leaders.contains(runtime) {
                        tally.leaders.push(runtime.clone());
                    }
                }
                Outcome::Equivalent { leaders: tied } | Outcome::Undecided { leaders: tied } => {
                    for runtime in tied {
                        if !tally.leaders.contains(runtime) {
                            tally.leaders.push(runtime.clone());
                        }
                    }
                }
                Outcome::GeneratorBound
                | Outcome::Contended
                | Outcome::NoData
                | Outcome::NotJudged => {}
            }
        }
        tally
    }

    /// The scenario's verdict: one runtime winning most judged cells wins; equivalent everywhere
    /// is equivalent; anything else is undecided.
    fn verdict(self, judged: &[&(CellAt, Verdict)], bound_note: &str) -> Verdict {
        let per_cell = judged
            .iter()
            .map(|(at, v)| format!("{at}: {}", v.label()))
            .collect::<Vec<_>>()
            .join(", ");
        let counts = if judged
            .iter()
            .any(|(at, _)| at.preload.is_some() || at.level.is_some())
        {
            "cells"
        } else {
            "user counts"
        };
        if self.winners.len() == 1 && self.margins.len() * 2 > judged.len() {
            return self.sole_winner(judged.len(), counts, &per_cell, bound_note);
        }
        let why = if self.winners.len() > 1 {
            format!("different runtimes lead at different {counts} ({per_cell})")
        } else if self.winners.len() == 1 {
            format!(
                "{} wins only {} of {} judged {counts} ({per_cell})",
                self.winners[0],
                self.margins.len(),
                judged.len()
            )
        } else if judged
            .iter()
            .all(|(_, v)| matches!(v.outcome, Outcome::Equivalent { .. }))
        {
            return Verdict {
                outcome: Outcome::Equivalent {
                    leaders: self.leaders,
                },
                reason: format!("equivalent at every judged cell ({per_cell}){bound_note}"),
            };
        } else {
            format!("undecided at some judged cells ({per_cell})")
        };
        Verdict {
            outcome: Outcome::Undecided {
                leaders: self.leaders,
            },
            reason: format!("{why}{bound_note}"),
        }
    }

    /// The verdict when one runtime wins most judged cells: by the range of its margins.
    fn sole_winner(
        mut self,
        judged: usize,
        counts: &str,
        per_cell: &str,
        bound_note: &str,
    ) -> Verdict {
        let low = min(&self.margins);
        let high = max(&self.margins);
        let range = if (high - low).abs() < 0.05 {
            format!("{low:.1}%")
        } else {
            format!("{low:.1}–{high:.1}%")
        };
        self.runners_up.sort();
        self.runners_up.dedup();
        Verdict {
            outcome: Outcome::Winner {
                runtime: self.winners[0].clone(),
                runner_up: self.runners_up.join("/"),
                margin_pct: low,
            },
            reason: format!(
                "{} wins {} of {} judged {counts} by {range} ({per_cell}){bound_note}",
                self.winners[0],
                self.margins.len(),
                judged
            ),
        }
    }
}

/// `10, 20 users` when only user counts differ, else each cell in full.
fn join_cells(cells: &[CellAt]) -> String {
    if cells
        .iter()
        .all(|c| c.preload.is_none() && c.level.is_none())
    {
        let users = cells
            .iter()
            .map(|c| c.users.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        format!("{users} users")
    } else {
        cells
            .iter()
            .map(CellAt::to_string)
            .collect::<Vec<_>>()
            .join(", ")
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

    #[test]
    fn scenario_reasons_name_the_preload_of_each_cell_when_it_varies() {
        let win = Verdict {
            outcome: Outcome::Winner {
                runtime: "axum".into(),
                runner_up: "warp".into(),
                margin_pct: 9.0,
            },
            reason: String::new(),
        };
        let at = |users, preload| CellAt {
            users,
            preload: Some(preload),
            level: None,
        };
        let verdict = judge_scenario_at(&[(at(10, 1_000), win.clone()), (at(10, 1_000_000), win)]);
        assert!(
            verdict
                .reason
                .contains("axum wins 2 of 2 judged cells by 9.0% (10 users with 1,000 preloaded"),
            "{}",
            verdict.reason
        );
    }
}
