//! From comparisons to answers: a cell's leader (the best runtime and those equivalent to it, and
//! whether that is decided), and what a scenario's cells add up to, as one headline.
//!
//! A scenario runs several cells (a concurrency, a payload size, a load level…); each cell
//! compares its best runtime, `a`, with every other. The one rule: a cell's **leading group** is
//! its best plus every runtime equivalent to it; it is **decided** when no comparison is
//! undecided (every other runtime is behind by a win beyond the margin, ahead-of by an order
//! inside it, or equivalent). The headline names a winner only when the cells back it up, and is
//! built from the same comparisons as the tables so the two cannot disagree.

use serde::{Deserialize, Serialize};

use crate::rule::Outcome;

/// One judged comparison of a cell, as the roll-up sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Judged {
    /// The runtime ahead in the comparison (the cell's best).
    pub a: String,
    /// The runtime it is compared with.
    pub b: String,
    /// The four-way verdict, or not judged.
    pub outcome: Outcome,
}

/// A cell's leader: the best runtime and those equivalent to it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Leader {
    /// The leading group, the best first.
    pub runtimes: Vec<String>,
    /// Whether no comparison of the cell is undecided (or not judged).
    pub decided: bool,
    /// The runtimes the best could not be told from (undecided or not judged), if any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open: Vec<String>,
}

/// How many comparisons ended each way; an order inside the margin ("ahead") is counted apart
/// from a win beyond it, so nobody mistakes an order for a difference that matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Tally {
    /// Behind the best by more than the margin.
    pub wins: usize,
    /// Behind the best, the interval inside the margin at one end.
    pub ahead: usize,
    /// The whole interval inside the margin.
    pub equivalent: usize,
    /// The interval holds 1 and crosses a margin bound.
    pub undecided: usize,
    /// Could not be judged.
    pub not_judged: usize,
}

/// What a scenario's cells add up to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Rollup {
    /// One runtime leads alone, decided, in more than half of the judged cells, and no other
    /// runtime leads any cell alone.
    Winner {
        /// The winning runtime.
        runtime: String,
        /// How many cells it leads alone, decided.
        cells_won: usize,
        /// How many cells were judged.
        cells_judged: usize,
    },
    /// Every judged comparison in every cell was equivalent.
    Equivalent {
        /// How many cells were judged.
        cells: usize,
    },
    /// Cells disagree or stay undecided.
    Mixed {
        /// How many judged cells have a decided leader.
        decided: usize,
        /// How many cells were judged.
        judged: usize,
    },
    /// No cell could be judged.
    NotJudged,
}

/// The leader of a cell whose comparisons all have its best as `a`; None when nothing is judged.
pub fn leader(cell: &[Judged]) -> Option<Leader> {
    let best = cell.first()?;
    if cell.iter().all(|c| c.outcome == Outcome::NotJudged) {
        return None;
    }
    let mut runtimes = vec![best.a.clone()];
    let mut open = Vec::new();
    for c in cell {
        match c.outcome {
            Outcome::Equivalent => runtimes.push(c.b.clone()),
            Outcome::Undecided | Outcome::NotJudged => open.push(c.b.clone()),
            Outcome::Win | Outcome::Ahead => {}
        }
    }
    Some(Leader {
        runtimes,
        decided: open.is_empty(),
        open,
    })
}

/// Counts the comparisons of `cells` by outcome.
pub fn tally(cells: &[Vec<Judged>]) -> Tally {
    let mut t = Tally::default();
    for c in cells.iter().flatten() {
        match c.outcome {
            Outcome::Win => t.wins += 1,
            Outcome::Ahead => t.ahead += 1,
            Outcome::Equivalent => t.equivalent += 1,
            Outcome::Undecided => t.undecided += 1,
            Outcome::NotJudged => t.not_judged += 1,
        }
    }
    t
}

/// What a scenario's cells add up to.
///
/// `cells[i]` lists the comparisons of cell i, each with that cell's best runtime as `a`. Cells
/// with no judged comparison are left out. Equivalent when every comparison left is Equivalent;
/// Winner when one runtime leads alone, decided (see [`leader`]), in more than half of the cells
/// and no other runtime leads any cell alone; Mixed otherwise.
pub fn rollup(cells: &[Vec<Judged>]) -> Rollup {
    let leaders: Vec<Leader> = cells.iter().filter_map(|cell| leader(cell)).collect();
    if leaders.is_empty() {
        return Rollup::NotJudged;
    }
    let all_equivalent = cells
        .iter()
        .filter(|cell| leader(cell).is_some())
        .all(|cell| cell.iter().all(|c| c.outcome == Outcome::Equivalent));
    if all_equivalent {
        return Rollup::Equivalent {
            cells: leaders.len(),
        };
    }
    let alone: Vec<&str> = leaders
        .iter()
        .filter(|l| l.decided && l.runtimes.len() == 1)
        .map(|l| l.runtimes[0].as_str())
        .collect();
    if let Some(&first) = alone.first() {
        // "More than half": one led cell among many undecided ones is not a scenario headline.
        if alone.iter().all(|r| *r == first) && 2 * alone.len() > leaders.len() {
            return Rollup::Winner {
                runtime: first.to_owned(),
                cells_won: alone.len(),
                cells_judged: leaders.len(),
            };
        }
    }
    Rollup::Mixed {
        decided: leaders.iter().filter(|l| l.decided).count(),
        judged: leaders.len(),
    }
}

/// Whether a cell's leader is decided (see [`leader`]); false if nothing is judged.
pub fn cell_decided(cell: &[Judged]) -> bool {
    leader(cell).is_some_and(|l| l.decided)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(a: &str, b: &str, outcome: Outcome) -> Judged {
        Judged {
            a: a.to_owned(),
            b: b.to_owned(),
            outcome,
        }
    }

    fn won_by(a: &str) -> Vec<Judged> {
        vec![
            judged(a, "other-1", Outcome::Win),
            judged(a, "other-2", Outcome::Win),
        ]
    }

    #[test]
    fn one_runtime_winning_every_cell_is_the_winner() {
        let cells = vec![won_by("hyper"), won_by("hyper"), won_by("hyper")];
        assert_eq!(
            rollup(&cells),
            Rollup::Winner {
                runtime: "hyper".to_owned(),
                cells_won: 3,
                cells_judged: 3,
            }
        );
    }

    #[test]
    fn a_runtime_winning_most_cells_with_the_rest_undecided_is_the_winner() {
        let undecided = vec![judged("hyper", "axum", Outcome::Undecided)];
        let cells = vec![won_by("hyper"), won_by("hyper"), undecided];
        assert!(matches!(
            rollup(&cells),
            Rollup::Winner {
                cells_won: 2,
                cells_judged: 3,
                ..
            }
        ));
    }

    #[test]
    fn every_comparison_equivalent_is_equivalent() {
        let tie = vec![
            judged("axum", "hyper", Outcome::Equivalent),
            judged("axum", "warp", Outcome::Equivalent),
        ];
        assert_eq!(rollup(&[tie.clone(), tie]), Rollup::Equivalent { cells: 2 });
    }

    #[test]
    fn two_different_cell_winners_are_mixed() {
        let cells = vec![won_by("hyper"), won_by("actix")];
        assert_eq!(
            rollup(&cells),
            Rollup::Mixed {
                decided: 2,
                judged: 2
            }
        );
    }

    #[test]
    fn another_runtime_sharing_the_lead_of_a_cell_does_not_stop_a_winner() {
        let shared = vec![
            judged("actix", "hyper", Outcome::Equivalent),
            judged("actix", "axum", Outcome::Win),
        ];
        let cells = vec![won_by("hyper"), won_by("hyper"), won_by("hyper"), shared];
        assert!(matches!(
            rollup(&cells),
            Rollup::Winner {
                cells_won: 3,
                cells_judged: 4,
                ..
            }
        ));
    }

    #[test]
    fn an_order_inside_the_margin_decides_a_leader_and_is_counted_apart() {
        let ordered = vec![
            judged("hyper", "warp", Outcome::Ahead),
            judged("hyper", "axum", Outcome::Win),
            judged("hyper", "poem", Outcome::Equivalent),
        ];
        let l = leader(&ordered).expect("judged");
        assert_eq!(l.runtimes, ["hyper", "poem"]);
        assert!(l.decided);
        let t = tally(&[ordered]);
        assert_eq!((t.wins, t.ahead, t.equivalent, t.undecided), (1, 1, 1, 0));
    }

    #[test]
    fn an_undecided_comparison_leaves_the_leader_open_and_names_who() {
        let open = vec![
            judged("hyper", "warp", Outcome::Undecided),
            judged("hyper", "axum", Outcome::Win),
        ];
        let l = leader(&open).expect("judged");
        assert_eq!(l.runtimes, ["hyper"]);
        assert_eq!(l.open, ["warp"]);
        assert!(!l.decided);
        assert_eq!(leader(&[judged("a", "b", Outcome::NotJudged)]), None);
    }

    #[test]
    fn a_single_won_cell_among_undecided_ones_is_mixed() {
        let undecided = vec![judged("hyper", "axum", Outcome::Undecided)];
        let cells = vec![won_by("hyper"), undecided.clone(), undecided];
        assert_eq!(
            rollup(&cells),
            Rollup::Mixed {
                decided: 1,
                judged: 3
            }
        );
    }

    #[test]
    fn cells_never_judged_are_left_out_and_all_of_them_is_not_judged() {
        let unjudged = vec![judged("axum", "hyper", Outcome::NotJudged)];
        assert_eq!(rollup(&[unjudged.clone(), Vec::new()]), Rollup::NotJudged);
        assert_eq!(rollup(&[]), Rollup::NotJudged);
        assert!(matches!(
            rollup(&[won_by("warp"), unjudged]),
            Rollup::Winner {
                cells_won: 1,
                cells_judged: 1,
                ..
            }
        ));
    }

    #[test]
    fn a_cell_is_decided_only_when_every_comparison_is() {
        assert!(cell_decided(&won_by("hyper")));
        assert!(!cell_decided(&[]));
        assert!(!cell_decided(&[judged("a", "b", Outcome::NotJudged)]));
        assert!(!cell_decided(&[
            judged("a", "b", Outcome::Win),
            judged("a", "c", Outcome::NotJudged),
        ]));
        assert!(!cell_decided(&[judged("a", "b", Outcome::Undecided)]));
    }
}
