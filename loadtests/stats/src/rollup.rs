//! From cells to a scenario: what a scenario's per-cell verdicts add up to, as one headline.
//!
//! A scenario runs several cells (a concurrency, a payload size…); each cell compares its best
//! runtime, `a`, with every other. The headline names a winner only when the cells back it up, and
//! is built from the same verdicts as the tables so the two cannot disagree.

use serde::{Deserialize, Serialize};

use crate::rule::Outcome;

/// One judged comparison of a cell, as the roll-up sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Judged {
    /// The runtime ahead in the comparison (the cell's best).
    pub a: String,
    /// The runtime it is compared with.
    pub b: String,
    /// The three-way verdict; None when the comparison could not be judged.
    pub outcome: Option<Outcome>,
}

/// What a scenario's cells add up to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Rollup {
    /// One runtime won more than half of the judged cells and no other runtime won any comparison.
    Winner {
        /// The winning runtime.
        runtime: String,
        /// How many cells it won outright.
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
        /// How many judged cells are decided (see [`cell_decided`]).
        decided: usize,
        /// How many cells were judged.
        judged: usize,
    },
    /// No cell could be judged.
    NotJudged,
}

/// What a scenario's cells add up to.
///
/// `cells[i]` lists the comparisons of cell i, each with that cell's best runtime as `a`. Cells
/// with no judged comparison are left out. Equivalent when every comparison left is Equivalent;
/// Winner when one runtime wins more than half of the cells (is `a` with a Win in every comparison
/// of the cell) and no comparison anywhere is a Win for another runtime; Mixed otherwise.
pub fn rollup(cells: &[Vec<Judged>]) -> Rollup {
    let judged: Vec<&[Judged]> = cells
        .iter()
        .map(Vec::as_slice)
        .filter(|cell| cell.iter().any(|c| c.outcome.is_some()))
        .collect();
    if judged.is_empty() {
        return Rollup::NotJudged;
    }
    let all_equivalent = judged
        .iter()
        .all(|cell| cell.iter().all(|c| c.outcome == Some(Outcome::Equivalent)));
    if all_equivalent {
        return Rollup::Equivalent {
            cells: judged.len(),
        };
    }
    if let Some(runtime) = sole_winner(&judged) {
        let cells_won = judged
            .iter()
            .filter(|cell| cell_winner(cell) == Some(runtime))
            .count();
        // "More than half": one won cell among many undecided ones is not a scenario headline.
        if 2 * cells_won > judged.len() {
            return Rollup::Winner {
                runtime: runtime.to_owned(),
                cells_won,
                cells_judged: judged.len(),
            };
        }
    }
    Rollup::Mixed {
        decided: judged.iter().filter(|cell| cell_decided(cell)).count(),
        judged: judged.len(),
    }
}

/// Whether every comparison of a cell is decided (Win or Equivalent); false if none is judged.
pub fn cell_decided(cell: &[Judged]) -> bool {
    !cell.is_empty()
        && cell
            .iter()
            .all(|c| matches!(c.outcome, Some(Outcome::Win) | Some(Outcome::Equivalent)))
}

/// The runtime that won the cell outright: `a` in every comparison, every comparison a Win.
fn cell_winner(cell: &[Judged]) -> Option<&str> {
    let first = cell.first()?;
    cell.iter()
        .all(|c| c.a == first.a && c.outcome == Some(Outcome::Win))
        .then_some(first.a.as_str())
}

/// The one runtime that any Win anywhere credits, if exactly one is; a Win for a second runtime —
/// even in a cell it did not win outright — says otherwise, and there is no sole winner.
fn sole_winner<'a>(cells: &[&'a [Judged]]) -> Option<&'a str> {
    let mut winners = cells
        .iter()
        .flat_map(|cell| cell.iter())
        .filter(|c| c.outcome == Some(Outcome::Win))
        .map(|c| c.a.as_str());
    let first = winners.next()?;
    winners.all(|other| other == first).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(a: &str, b: &str, outcome: Option<Outcome>) -> Judged {
        Judged {
            a: a.to_owned(),
            b: b.to_owned(),
            outcome,
        }
    }

    fn won_by(a: &str) -> Vec<Judged> {
        vec![
            judged(a, "other-1", Some(Outcome::Win)),
            judged(a, "other-2", Some(Outcome::Win)),
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
        let undecided = vec![judged("hyper", "axum", Some(Outcome::Undecided))];
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
            judged("axum", "hyper", Some(Outcome::Equivalent)),
            judged("axum", "warp", Some(Outcome::Equivalent)),
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
    fn a_win_for_another_runtime_in_a_cell_it_did_not_win_outright_still_mixes() {
        let partial = vec![
            judged("actix", "hyper", Some(Outcome::Win)),
            judged("actix", "axum", Some(Outcome::Equivalent)),
        ];
        let cells = vec![won_by("hyper"), won_by("hyper"), won_by("hyper"), partial];
        assert_eq!(
            rollup(&cells),
            Rollup::Mixed {
                decided: 4,
                judged: 4
            }
        );
    }

    #[test]
    fn a_single_won_cell_among_undecided_ones_is_mixed() {
        let undecided = vec![judged("hyper", "axum", Some(Outcome::Undecided))];
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
        let unjudged = vec![judged("axum", "hyper", None)];
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
        assert!(!cell_decided(&[judged("a", "b", None)]));
        assert!(!cell_decided(&[
            judged("a", "b", Some(Outcome::Win)),
            judged("a", "c", None),
        ]));
        assert!(!cell_decided(&[judged("a", "b", Some(Outcome::Undecided))]));
    }
}
