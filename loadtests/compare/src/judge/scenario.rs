//! A scenario's verdict from its cells': a runtime wins the scenario when it is the only one to
//! lead any cell alone and it leads most of the cells that could be judged (the one roll-up of
//! [`brigade_stats::rollup`]), with the cells left out named and why.

use brigade_report::verdict::{CellAt, Outcome, Verdict};

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
pub(crate) fn judge_scenario_at(cells: &[(CellAt, Verdict)]) -> Verdict {
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
    let leaders: Vec<Vec<brigade_stats::Judged>> =
        judged.iter().map(|(_, v)| leader_view(v)).collect();
    let standings = Standings::of(&judged);
    standings.verdict(&judged, &bound_note, brigade_stats::rollup(&leaders))
}

/// A cell's verdict as the one roll-up of [`brigade_stats::rollup`] reads it: the comparisons that
/// make its leader (the verdict itself was drawn by [`brigade_stats::leader`]).
fn leader_view(verdict: &Verdict) -> Vec<brigade_stats::Judged> {
    use brigade_stats::Outcome as Four;
    let pairs = |best: &str, others: &[String], outcome: Four| {
        others
            .iter()
            .map(|b| brigade_stats::Judged {
                a: best.to_owned(),
                b: b.clone(),
                outcome,
            })
            .collect()
    };
    match &verdict.outcome {
        Outcome::Winner {
            runtime, runner_up, ..
        } => pairs(runtime, std::slice::from_ref(runner_up), Four::Win),
        Outcome::Leads {
            runtime, runner_up, ..
        } => pairs(runtime, std::slice::from_ref(runner_up), Four::Ahead),
        Outcome::Equivalent { leaders } | Outcome::Undecided { leaders } => {
            let outcome = if matches!(verdict.outcome, Outcome::Equivalent { .. }) {
                Four::Equivalent
            } else {
                Four::Undecided
            };
            match leaders.split_first() {
                Some((best, others)) => pairs(best, others, outcome),
                None => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
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
struct Standings {
    /// The runtimes that won a cell, in first-win order.
    winners: Vec<String>,
    /// Each won cell's margin, in %.
    margins: Vec<f64>,
    /// Each won cell's runner-up.
    runners_up: Vec<String>,
    /// Every runtime that won or tied for the lead in a cell, in first-seen order.
    leaders: Vec<String>,
}

impl Standings {
    /// Counts the judged cells' outcomes.
    fn of(judged: &[&(CellAt, Verdict)]) -> Standings {
        let mut standings = Standings {
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
                }
                | Outcome::Leads {
                    runtime,
                    runner_up,
                    margin_pct,
                } => {
                    if !standings.winners.contains(runtime) {
                        standings.winners.push(runtime.clone());
                    }
                    standings.margins.push(*margin_pct);
                    standings.runners_up.push(runner_up.clone());
                    if !standings.leaders.contains(runtime) {
                        standings.leaders.push(runtime.clone());
                    }
                }
                Outcome::Equivalent { leaders: tied } | Outcome::Undecided { leaders: tied } => {
                    for runtime in tied {
                        if !standings.leaders.contains(runtime) {
                            standings.leaders.push(runtime.clone());
                        }
                    }
                }
                Outcome::GeneratorBound
                | Outcome::Contended
                | Outcome::NoData
                | Outcome::NotJudged => {}
            }
        }
        standings
    }

    /// The scenario's verdict as `rolled` decided it (one runtime leading most judged cells alone
    /// wins; equivalent everywhere is equivalent; anything else is undecided), in words.
    fn verdict(
        self,
        judged: &[&(CellAt, Verdict)],
        bound_note: &str,
        rolled: brigade_stats::Rollup,
    ) -> Verdict {
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
        if let brigade_stats::Rollup::Winner { runtime, .. } = &rolled {
            return self.sole_winner(runtime, judged.len(), counts, &per_cell, bound_note);
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
        } else if matches!(rolled, brigade_stats::Rollup::Equivalent { .. }) {
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
        runtime: &str,
        judged: usize,
        counts: &str,
        per_cell: &str,
        bound_note: &str,
    ) -> Verdict {
        let low = self.margins.iter().copied().fold(f64::INFINITY, f64::min);
        let high = self
            .margins
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        let range = if (high - low).abs() < 0.05 {
            format!("{low:.1}%")
        } else {
            format!("{low:.1}–{high:.1}%")
        };
        self.runners_up.sort();
        self.runners_up.dedup();
        Verdict {
            outcome: Outcome::Winner {
                runtime: runtime.to_owned(),
                runner_up: self.runners_up.join("/"),
                margin_pct: low,
            },
            reason: format!(
                "{runtime} leads {} of {} judged {counts} alone, by {range} ({per_cell}){bound_note}",
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
            verdict.reason.contains(
                "axum leads 2 of 2 judged cells alone, by 9.0% (10 users with 1,000 preloaded"
            ),
            "{}",
            verdict.reason
        );
    }
}
