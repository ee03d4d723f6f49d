//! Who won, by how much, or why nobody did.
//!
//! A cell (one scenario at one user count) ranks the runtimes by their median successful hits/s
//! over the repeats. The leader wins only if, repeat by repeat, it was ahead of the runner-up every
//! time, and its median lead clears the noise floor (5% unless told otherwise); otherwise it is a
//! tie. Repeats are compared pairwise because the runs of one repeat are made back to back: drift
//! over the comparison (the stores growing, the machine warming) moves both sides of a pair alike. A cell in which any run was generator-bound (the generator's CPUs had no headroom) names
//! no winner at all: the figures then measure the generator, not the servers. Nor does a cell in
//! which any run was contended (other processes took at least 20% of the server's or the
//! generator's CPUs): on a shared machine that run's figures say more about the neighbours.
//!
//! A scenario's verdict sums its cells up: a runtime wins the scenario when it is the only runtime
//! to win any cell and it wins most of the cells that could be judged.

use serde::{Deserialize, Serialize};

use super::procstat::CpuBusy;

/// The largest margin reported (a runner-up with no successful request at all).
pub const MAX_MARGIN_PCT: f64 = 1_000_000.0;

/// The noise floor used unless `--noise-floor` says otherwise, percent.
pub const DEFAULT_NOISE_FLOOR_PCT: f64 = 5.0;

/// The generator counts as saturated at this share of its CPUs.
pub const GENERATOR_SATURATED: f64 = 0.90;

/// The server has headroom below this share of its CPUs (said in a generator-bound run's reason).
pub const SERVER_HEADROOM: f64 = 0.90;

/// How the CPUs were shared between the servers and the generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuShape {
    /// CPUs the generator may use.
    pub generator_cpus: usize,
    /// CPUs the server may use.
    pub server_cpus: usize,
    /// Whether the two are pinned to disjoint CPUs (false: they share all of them).
    pub pinned: bool,
}

/// Other processes may use at most this share of a side's CPUs before a run counts as contended.
pub const CONTENTION: f64 = 0.20;

/// The CPU figures of one run, all in percent of one core.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RunCpu {
    /// The generator process.
    pub generator_process: f64,
    /// The server process.
    pub server_process: f64,
    /// The generator's CPUs, whoever used them (the same CPUs as the server's when unpinned).
    pub generator_cpus: CpuBusy,
    /// The server's CPUs, whoever used them.
    pub server_cpus: CpuBusy,
}

impl RunCpu {
    /// Busy share of the generator's CPUs (its own figure if the CPUs were not sampled).
    fn generator_busy(&self, shape: CpuShape) -> f64 {
        self.generator_cpus.busy_percent.max(self.generator_process)
            / capacity(self.generator_cpus, shape.generator_cpus)
    }

    /// Busy share of the server's CPUs (its own figure if the CPUs were not sampled).
    fn server_busy(&self, shape: CpuShape) -> f64 {
        self.server_cpus.busy_percent.max(self.server_process)
            / capacity(self.server_cpus, shape.server_cpus)
    }
}

fn capacity(busy: CpuBusy, cpus: usize) -> f64 {
    if busy.capacity_percent > 0.0 {
        busy.capacity_percent
    } else {
        cpus.max(1) as f64 * 100.0
    }
}

/// Why a run counts as generator-bound, or `None` if it does not.
///
/// Pinned: the generator's CPUs were at least 90% busy — by the generator, by the kernel's work
/// sending its traffic, or by anything else that starved it. With no headroom on the generator's
/// side the run cannot show what the server could do, whether or not the server's CPUs were full
/// too, so the run names no winner either way. Sharing CPUs: they were at least 90% busy and the
/// generator used more of them than the server.
pub fn generator_bound(run: &RunCpu, shape: CpuShape) -> Option<String> {
    let generator = run.generator_busy(shape);
    let server = run.server_busy(shape);
    if shape.pinned {
        (generator >= GENERATOR_SATURATED).then(|| {
            let server_side = if server < SERVER_HEADROOM {
                "while the server's had headroom"
            } else {
                "and the server's were full too, so either side may be the limit"
            };
            format!(
                "the generator's CPUs were {:.0}% busy (the generator itself {:.0}% of a core) \
                 {server_side} ({:.0}% busy, the server itself {:.0}%)",
                generator * 100.0,
                run.generator_process,
                server * 100.0,
                run.server_process
            )
        })
    } else {
        (server >= GENERATOR_SATURATED && run.generator_process >= run.server_process).then(|| {
            format!(
                "the shared CPUs were {:.0}% busy and the generator ({:.0}% of a core) used more \
                 of them than the server ({:.0}%)",
                server * 100.0,
                run.generator_process,
                run.server_process
            )
        })
    }
}

/// Why a run counts as contended (other processes took at least 20% of the server's or the
/// generator's CPUs), or `None`.
///
/// Task time is compared, not interrupts: the kernel's network work for the run itself is
/// interrupt time that no process is charged with.
pub fn contended(run: &RunCpu, shape: CpuShape) -> Option<String> {
    if run.server_cpus.capacity_percent <= 0.0 {
        return None;
    }
    let sides: Vec<(&str, f64, f64)> = if shape.pinned {
        vec![
            (
                "server",
                run.server_cpus.task_percent - run.server_process,
                run.server_cpus.capacity_percent,
            ),
            (
                "generator",
                run.generator_cpus.task_percent - run.generator_process,
                run.generator_cpus.capacity_percent,
            ),
        ]
    } else {
        vec![(
            "shared",
            run.server_cpus.task_percent - run.server_process - run.generator_process,
            run.server_cpus.capacity_percent,
        )]
    };
    sides
        .into_iter()
        .find(|(_, others, cap)| *cap > 0.0 && *others >= CONTENTION * cap)
        .map(|(side, others, cap)| {
            format!(
                "other processes used {:.0}% of the {side} CPUs ({:.0}% of a core)",
                others / cap * 100.0,
                others
            )
        })
}

/// One runtime's figures in one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeFigures {
    /// The runtime.
    pub runtime: String,
    /// Successful hits/s per repeat (index = repeat), `None` where the run failed.
    pub values: Vec<Option<f64>>,
    /// Why one of its runs was generator-bound, if one was.
    pub generator_bound: Option<String>,
    /// Why one of its runs was contended by other processes, if one was.
    pub contended: Option<String>,
}

impl RuntimeFigures {
    /// The figures of the runs that completed.
    fn present(&self) -> Vec<f64> {
        self.values.iter().flatten().copied().collect()
    }
}

/// The outcome of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Outcome {
    /// One runtime is ahead beyond the noise.
    Winner {
        /// The winner.
        runtime: String,
        /// The next best.
        runner_up: String,
        /// How far ahead, percent of the runner-up's figure (for a scenario: the smallest lead).
        margin_pct: f64,
    },
    /// The leaders are within the noise of each other.
    Tie {
        /// The runtimes that could not be told apart at the top.
        leaders: Vec<String>,
    },
    /// The generator, not the servers, limited the figures.
    GeneratorBound,
    /// Other processes took a share of the CPUs during a run: the figures are not comparable.
    Contended,
    /// Not enough results to compare.
    NoData,
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
    /// A short label: `axum +12.3%`, `tie`, `generator-bound`, `no data`.
    pub fn label(&self) -> String {
        match &self.outcome {
            Outcome::Winner {
                runtime,
                margin_pct,
                ..
            } => format!("{runtime} +{margin_pct:.1}%"),
            Outcome::Tie { .. } => "tie".to_owned(),
            Outcome::GeneratorBound => "generator-bound".to_owned(),
            Outcome::Contended => "contended".to_owned(),
            Outcome::NoData => "no data".to_owned(),
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

/// Judges one cell (one scenario at one user count).
pub fn judge_cell(figures: &[RuntimeFigures], noise_floor_pct: f64) -> Verdict {
    if let Some(busy) = figures.iter().find(|f| f.contended.is_some()) {
        return Verdict {
            outcome: Outcome::Contended,
            reason: format!(
                "no winner: in the {} run {}; rerun on a quieter machine",
                busy.runtime,
                busy.contended.as_deref().unwrap_or_default()
            ),
        };
    }
    if let Some(bound) = figures.iter().find(|f| f.generator_bound.is_some()) {
        return Verdict {
            outcome: Outcome::GeneratorBound,
            reason: format!(
                "no winner: generator-bound in the {} run ({})",
                bound.runtime,
                bound.generator_bound.as_deref().unwrap_or_default()
            ),
        };
    }
    let mut ranked: Vec<(&RuntimeFigures, f64)> = figures
        .iter()
        .filter(|f| !f.present().is_empty())
        .map(|f| (f, median(&f.present())))
        .collect();
    if ranked.len() < 2 {
        return Verdict {
            outcome: Outcome::NoData,
            reason: format!(
                "{} runtime(s) produced results; nothing to compare",
                ranked.len()
            ),
        };
    }
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    let (best, best_median) = ranked[0];
    if best_median <= 0.0 {
        return Verdict {
            outcome: Outcome::NoData,
            reason: "no runtime answered a request successfully".to_owned(),
        };
    }
    let compare =
        |other: &RuntimeFigures, other_median: f64| pair(best, best_median, other, other_median);
    // Everyone the leader cannot be told apart from shares the top.
    let indistinct = |other: &RuntimeFigures, other_median: f64| -> Option<String> {
        let lead = compare(other, other_median);
        if lead.margin_pct <= 0.0 {
            return Some(format!(
                "{} and {} are level: {} was ahead by a median {:.1}% repeat by repeat",
                best.runtime, other.runtime, other.runtime, -lead.margin_pct
            ));
        }
        if lead.margin_pct < noise_floor_pct {
            return Some(format!(
                "{} leads {} by {:.1}%, under the {noise_floor_pct:.0}% noise floor",
                best.runtime, other.runtime, lead.margin_pct
            ));
        }
        if let Some(repeat) = lead.behind_in {
            return Some(format!(
                "{} leads {} by {:.1}%, but {} was ahead in repeat {}: within the spread",
                best.runtime,
                other.runtime,
                lead.margin_pct,
                other.runtime,
                repeat + 1
            ));
        }
        None
    };
    let (runner_up, runner_up_median) = ranked[1];
    match indistinct(runner_up, runner_up_median) {
        Some(reason) => {
            let mut leaders = vec![best.runtime.clone()];
            leaders.extend(
                ranked[1..]
                    .iter()
                    .filter(|(f, m)| indistinct(f, *m).is_some())
                    .map(|(f, _)| f.runtime.clone()),
            );
            Verdict {
                outcome: Outcome::Tie { leaders },
                reason,
            }
        }
        None => {
            let lead = compare(runner_up, runner_up_median);
            let margin_pct = lead.margin_pct;
            let spread = if lead.pairs > 1 {
                format!(
                    "; ahead in each of {} repeats, by {:.1}–{:.1}%",
                    lead.pairs, lead.low_pct, lead.high_pct
                )
            } else {
                String::new()
            };
            Verdict {
                outcome: Outcome::Winner {
                    runtime: best.runtime.clone(),
                    runner_up: runner_up.runtime.clone(),
                    margin_pct,
                },
                reason: format!(
                    "{} {best_median:.0} vs {} {runner_up_median:.0} successful hits/s \
                     (+{margin_pct:.1}%{spread})",
                    best.runtime, runner_up.runtime
                ),
            }
        }
    }
}

/// How the leader compares with another runtime.
struct Lead {
    /// The lead, percent: the median of the per-repeat leads, or of the medians without pairs.
    margin_pct: f64,
    /// Smallest and largest per-repeat lead, percent.
    low_pct: f64,
    high_pct: f64,
    /// Repeats in which both completed.
    pairs: usize,
    /// A repeat in which the other runtime was ahead (or level), if any.
    behind_in: Option<usize>,
}

/// Compares the leader with `other` repeat by repeat.
///
/// Runs of one repeat are made back to back, so whatever drifts over a comparison — the stores
/// growing, the machine warming, a neighbour's load — affects both sides of a pair alike, while it
/// widens each runtime's own min–max range. Pairing keeps the drift out of the spread: the leader
/// must be ahead in every repeat, and its median lead must clear the noise floor.
fn pair(
    best: &RuntimeFigures,
    best_median: f64,
    other: &RuntimeFigures,
    other_median: f64,
) -> Lead {
    let leads: Vec<(usize, f64)> = best
        .values
        .iter()
        .zip(&other.values)
        .enumerate()
        .filter_map(|(repeat, (a, b))| Some((repeat, lead_pct((*a)?, (*b)?))))
        .collect();
    if leads.is_empty() {
        let margin = lead_pct(best_median, other_median);
        return Lead {
            margin_pct: margin,
            low_pct: margin,
            high_pct: margin,
            pairs: 0,
            behind_in: None,
        };
    }
    let values: Vec<f64> = leads.iter().map(|(_, lead)| *lead).collect();
    Lead {
        margin_pct: median(&values),
        low_pct: min(&values),
        high_pct: max(&values),
        pairs: leads.len(),
        behind_in: if leads.len() > 1 {
            leads
                .iter()
                .find(|(_, lead)| *lead <= 0.0)
                .map(|(repeat, _)| *repeat)
        } else {
            None
        },
    }
}

/// How far `a` is ahead of `b`, percent of `b` (capped, so a runner-up with nothing stays finite).
fn lead_pct(a: f64, b: f64) -> f64 {
    if b <= 0.0 {
        MAX_MARGIN_PCT
    } else {
        (a / b - 1.0) * 100.0
    }
}

/// Sums up a scenario from its cells, given as (users, verdict).
pub fn judge_scenario(cells: &[(u32, Verdict)]) -> Verdict {
    let judged: Vec<&(u32, Verdict)> = cells
        .iter()
        .filter(|(_, v)| {
            !matches!(
                v.outcome,
                Outcome::GeneratorBound | Outcome::Contended | Outcome::NoData
            )
        })
        .collect();
    let users_where = |outcome: Outcome| -> Vec<u32> {
        cells
            .iter()
            .filter(|(_, v)| v.outcome == outcome)
            .map(|(users, _)| *users)
            .collect()
    };
    let bound = users_where(Outcome::GeneratorBound);
    let contended = users_where(Outcome::Contended);
    let mut bound_note = String::new();
    if !bound.is_empty() {
        bound_note.push_str(&format!(
            "; generator-bound at {} users",
            join_users(&bound)
        ));
    }
    if !contended.is_empty() {
        bound_note.push_str(&format!("; contended at {} users", join_users(&contended)));
    }
    if judged.is_empty() {
        return if !bound.is_empty() {
            Verdict {
                outcome: Outcome::GeneratorBound,
                reason: format!(
                    "no user count could be judged; generator-bound at {} users: these figures \
                     measure the generator{}",
                    join_users(&bound),
                    if contended.is_empty() {
                        String::new()
                    } else {
                        format!("; contended at {} users", join_users(&contended))
                    }
                ),
            }
        } else if !contended.is_empty() {
            Verdict {
                outcome: Outcome::Contended,
                reason: format!(
                    "other processes took CPU at every user count ({}): no comparable figures",
                    join_users(&contended)
                ),
            }
        } else {
            Verdict {
                outcome: Outcome::NoData,
                reason: "no user count could be judged".to_owned(),
            }
        };
    }
    let mut winners: Vec<&str> = Vec::new();
    let mut margins = Vec::new();
    let mut runners_up = Vec::new();
    let mut leaders: Vec<String> = Vec::new();
    for (_, verdict) in &judged {
        match &verdict.outcome {
            Outcome::Winner {
                runtime,
                runner_up,
                margin_pct,
            } => {
                if !winners.contains(&runtime.as_str()) {
                    winners.push(runtime);
                }
                margins.push(*margin_pct);
                runners_up.push(runner_up.clone());
                if !leaders.contains(runtime) {
                    leaders.push(runtime.clone());
                }
            }
            Outcome::Tie { leaders: tied } => {
                for runtime in tied {
                    if !leaders.contains(runtime) {
                        leaders.push(runtime.clone());
                    }
                }
            }
            Outcome::GeneratorBound | Outcome::Contended | Outcome::NoData => {}
        }
    }
    let per_cell = judged
        .iter()
        .map(|(users, v)| format!("{users} users: {}", v.label()))
        .collect::<Vec<_>>()
        .join(", ");
    if winners.len() == 1 && margins.len() * 2 > judged.len() {
        let low = min(&margins);
        let high = max(&margins);
        let range = if (high - low).abs() < 0.05 {
            format!("{low:.1}%")
        } else {
            format!("{low:.1}–{high:.1}%")
        };
        runners_up.sort();
        runners_up.dedup();
        return Verdict {
            outcome: Outcome::Winner {
                runtime: winners[0].to_owned(),
                runner_up: runners_up.join("/"),
                margin_pct: low,
            },
            reason: format!(
                "{} wins {} of {} judged user counts by {range} ({per_cell}){bound_note}",
                winners[0],
                margins.len(),
                judged.len()
            ),
        };
    }
    let why = if winners.len() > 1 {
        format!("different runtimes lead at different user counts ({per_cell})")
    } else if winners.len() == 1 {
        format!(
            "{} wins only {} of {} judged user counts ({per_cell})",
            winners[0],
            margins.len(),
            judged.len()
        )
    } else {
        format!("within the noise at every judged user count ({per_cell})")
    };
    Verdict {
        outcome: Outcome::Tie { leaders },
        reason: format!("{why}{bound_note}"),
    }
}

fn join_users(users: &[u32]) -> String {
    users
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
