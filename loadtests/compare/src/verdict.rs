//! Who won, by how much, or why nobody did — on throughput and on efficiency.
//!
//! A cell (one scenario at one user count and one preload) gets two verdicts:
//! - **throughput**: the runtimes ranked by their median successful hits/s over the repeats;
//! - **efficiency**: ranked by their median server CPU µs per request (lower is better); the lead
//!   is how much more CPU per request the runner-up spent.
//!
//! Either way the leader wins only if, repeat by repeat, it was ahead of the runner-up every time,
//! and its median paired lead clears the noise floor (5% unless told otherwise); otherwise it is a
//! tie. Repeats are compared pairwise because the runs of one cell are made back to back: whatever
//! drifts over a comparison (the machine warming, a neighbour's load) moves both sides of a pair
//! alike. The verdict line shows the numbers its percentage comes from: the paired leads, and the
//! medians of each side.
//!
//! A cell in which any run was generator-bound (the generator's CPUs had no headroom) names no
//! throughput winner: the figures then measure the generator, not the servers. Its efficiency
//! verdict still stands, since a server's CPU per request does not depend on who set the pace. A
//! cell in which any run was contended (other processes took at least 20% of the server's or the
//! generator's CPUs) names no winner on either: that run's CPU figures say more about the
//! neighbours.
//!
//! A scenario's verdict sums its cells up: a runtime wins the scenario when it is the only runtime
//! to win any cell and it wins most of the cells that could be judged.

use serde::{Deserialize, Serialize};

use crate::procstat::CpuBusy;

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
    /// Processes that serve with the server on its CPUs, apart from it (an external server's
    /// databases, `--external-companion`): their use is the server side's own, not contention.
    #[serde(default)]
    pub companions: f64,
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
                run.server_cpus.task_percent - run.server_process - run.companions,
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
            run.server_cpus.task_percent
                - run.server_process
                - run.companions
                - run.generator_process,
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
}

impl Measure {
    /// The figures' unit, as the verdict line prints it.
    fn unit(self) -> &'static str {
        match self {
            Measure::Throughput => "successful hits/s",
            Measure::Efficiency => "server CPU µs per request",
        }
    }

    /// The figure as a score where higher is better (`None` for a figure that cannot rank).
    fn score(self, value: f64) -> Option<f64> {
        match self {
            Measure::Throughput => Some(value),
            Measure::Efficiency => (value > 0.0 && value.is_finite()).then(|| 1.0 / value),
        }
    }
}

/// One runtime's figures in one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeFigures {
    /// The runtime.
    pub runtime: String,
    /// Its figure per repeat (index = repeat; successful hits/s, or server CPU µs per request for
    /// [`Measure::Efficiency`]), `None` where the run failed.
    pub values: Vec<Option<f64>>,
    /// Why one of its runs was generator-bound, if one was.
    pub generator_bound: Option<String>,
    /// Why one of its runs was contended by other processes, if one was.
    pub contended: Option<String>,
}

/// One runtime's scores (higher is better) per repeat, and its median figure as measured.
struct Scored<'a> {
    figures: &'a RuntimeFigures,
    scores: Vec<Option<f64>>,
    /// The median score, used to rank.
    rank: f64,
    /// The median of the figures as measured, for the reader.
    median: f64,
}

impl<'a> Scored<'a> {
    fn new(figures: &'a RuntimeFigures, measure: Measure) -> Option<Scored<'a>> {
        let scores: Vec<Option<f64>> = figures
            .values
            .iter()
            .map(|v| v.and_then(|v| measure.score(v)))
            .collect();
        let present: Vec<f64> = scores.iter().flatten().copied().collect();
        if present.is_empty() {
            return None;
        }
        let raw: Vec<f64> = figures
            .values
            .iter()
            .zip(&scores)
            .filter_map(|(v, s)| s.and(*v))
            .collect();
        Some(Scored {
            figures,
            rank: median(&present),
            median: median(&raw),
            scores,
        })
    }

    fn runtime(&self) -> &str {
        &self.figures.runtime
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

/// A figure as a reader wants it: thousands separated and no false precision (`58,026`, `412`,
/// `41.2`, `4.12`).
pub fn figure(value: f64) -> String {
    if !value.is_finite() {
        return value.to_string();
    }
    let magnitude = value.abs();
    if magnitude >= 1000.0 {
        let digits = format!("{:.0}", magnitude);
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        if value < 0.0 {
            out.insert(0, '-');
        }
        out
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

/// Judges one cell (one scenario at one user count and preload) on throughput.
pub fn judge_cell(figures: &[RuntimeFigures], noise_floor_pct: f64) -> Verdict {
    judge_cell_on(figures, noise_floor_pct, Measure::Throughput)
}

/// Judges one cell on `measure`: the leader wins when it was ahead of the runner-up in every
/// repeat and its median paired lead clears the noise floor.
pub fn judge_cell_on(
    figures: &[RuntimeFigures],
    noise_floor_pct: f64,
    measure: Measure,
) -> Verdict {
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
    if measure == Measure::Throughput {
        if let Some(bound) = figures.iter().find(|f| f.generator_bound.is_some()) {
            return Verdict {
                outcome: Outcome::GeneratorBound,
                reason: format!(
                    "no winner: generator-bound in the {} run ({}); the efficiency verdict still \
                     ranks the servers' CPU per request",
                    bound.runtime,
                    bound.generator_bound.as_deref().unwrap_or_default()
                ),
            };
        }
    }
    let mut ranked: Vec<Scored<'_>> = figures
        .iter()
        .filter_map(|f| Scored::new(f, measure))
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
    ranked.sort_by(|a, b| b.rank.total_cmp(&a.rank));
    if ranked[0].rank <= 0.0 {
        return Verdict {
            outcome: Outcome::NoData,
            reason: "no runtime answered a request successfully".to_owned(),
        };
    }
    let best = &ranked[0];
    // Everyone the leader cannot be told apart from shares the top.
    let indistinct = |other: &Scored<'_>| -> Option<String> {
        let lead = pair(best, other);
        if lead.margin_pct <= 0.0 {
            return Some(format!(
                "{} and {} are level: {}'s lead is {}",
                best.runtime(),
                other.runtime(),
                best.runtime(),
                lead.detail(best, other, measure)
            ));
        }
        let said = lead.sentence(best, other, measure);
        if lead.margin_pct < noise_floor_pct {
            return Some(format!(
                "{said}, under the {noise_floor_pct:.0}% noise floor"
            ));
        }
        if let Some(repeat) = lead.behind_in {
            return Some(format!(
                "{said}, but {} was ahead in repeat {}: within the spread",
                other.runtime(),
                repeat + 1
            ));
        }
        None
    };
    let runner_up = &ranked[1];
    match indistinct(runner_up) {
        Some(reason) => {
            let mut leaders = vec![best.runtime().to_owned()];
            leaders.extend(
                ranked[1..]
                    .iter()
                    .filter(|f| indistinct(f).is_some())
                    .map(|f| f.runtime().to_owned()),
            );
            Verdict {
                outcome: Outcome::Tie { leaders },
                reason,
            }
        }
        None => {
            let lead = pair(best, runner_up);
            Verdict {
                outcome: Outcome::Winner {
                    runtime: best.runtime().to_owned(),
                    runner_up: runner_up.runtime().to_owned(),
                    margin_pct: lead.margin_pct,
                },
                reason: lead.sentence(best, runner_up, measure),
            }
        }
    }
}

/// How the leader compares with another runtime.
struct Lead {
    /// The lead, percent: the median of the paired leads, or of the medians without pairs.
    margin_pct: f64,
    /// The lead in each repeat in which both completed, percent, in repeat order.
    paired: Vec<f64>,
    /// A repeat in which the other runtime was ahead (or level), if any.
    behind_in: Option<usize>,
}

impl Lead {
    /// The verdict line: the median lead and the numbers it comes from, e.g. "hyper leads axum by
    /// a median 12.2% over 3 repeats (paired leads 1.4%, 12.2%, 15.3%; medians 58,026 vs 57,213
    /// successful hits/s)".
    fn sentence(&self, best: &Scored<'_>, other: &Scored<'_>, measure: Measure) -> String {
        format!(
            "{} leads {} by {}",
            best.runtime(),
            other.runtime(),
            self.detail(best, other, measure)
        )
    }

    /// The lead and what it comes from: "a median 12.2% over 3 repeats (paired leads …; medians
    /// …)", and for efficiency what a lead means.
    fn detail(&self, best: &Scored<'_>, other: &Scored<'_>, measure: Measure) -> String {
        let medians = format!(
            "medians {} vs {} {}",
            figure(best.median),
            figure(other.median),
            measure.unit()
        );
        let meaning = match measure {
            Measure::Throughput => String::new(),
            Measure::Efficiency => format!(
                " ({} spent that much more CPU per request)",
                other.runtime()
            ),
        };
        let leads = |values: &[f64]| {
            values
                .iter()
                .map(|v| format!("{v:.1}%"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let how = match self.paired.len() {
            0 => format!(
                "{:.1}% on the medians, with no repeat in which both completed ({medians})",
                self.margin_pct
            ),
            1 => format!(
                "{:.1}% in the one repeat both completed ({medians})",
                self.margin_pct
            ),
            n => format!(
                "a median {:.1}% over {n} repeats (paired leads {}; {medians})",
                self.margin_pct,
                leads(&self.paired)
            ),
        };
        format!("{how}{meaning}")
    }
}

/// Compares the leader with `other` repeat by repeat.
///
/// Runs of one repeat are made back to back, so whatever drifts over a comparison — the machine
/// warming, a neighbour's load — affects both sides of a pair alike, while it widens each runtime's
/// own min–max range. Pairing keeps the drift out of the spread: the leader must be ahead in every
/// repeat, and its median lead must clear the noise floor.
fn pair(best: &Scored<'_>, other: &Scored<'_>) -> Lead {
    let leads: Vec<(usize, f64)> = best
        .scores
        .iter()
        .zip(&other.scores)
        .enumerate()
        .filter_map(|(repeat, (a, b))| Some((repeat, lead_pct((*a)?, (*b)?))))
        .collect();
    if leads.is_empty() {
        return Lead {
            margin_pct: lead_pct(best.rank, other.rank),
            paired: Vec::new(),
            behind_in: None,
        };
    }
    let paired: Vec<f64> = leads.iter().map(|(_, lead)| *lead).collect();
    Lead {
        margin_pct: median(&paired),
        behind_in: if leads.len() > 1 {
            leads
                .iter()
                .find(|(_, lead)| *lead <= 0.0)
                .map(|(repeat, _)| *repeat)
        } else {
            None
        },
        paired,
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

/// Where in a scenario a cell lies: its user count and, when the comparison has several, its
/// preload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellAt {
    /// Closed-loop users.
    pub users: u32,
    /// Documents preloaded per collection, when preloads are a dimension of the comparison.
    pub preload: Option<u64>,
}

impl From<u32> for CellAt {
    fn from(users: u32) -> CellAt {
        CellAt {
            users,
            preload: None,
        }
    }
}

impl std::fmt::Display for CellAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.preload {
            None => write!(f, "{} users", self.users),
            Some(n) => write!(f, "{} users with {} preloaded", self.users, count(n)),
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
                Outcome::GeneratorBound | Outcome::Contended | Outcome::NoData
            )
        })
        .collect();
    let cells_where = |outcome: Outcome| -> Vec<CellAt> {
        cells
            .iter()
            .filter(|(_, v)| v.outcome == outcome)
            .map(|(at, _)| *at)
            .collect()
    };
    let bound = cells_where(Outcome::GeneratorBound);
    let contended = cells_where(Outcome::Contended);
    let mut bound_note = String::new();
    if !bound.is_empty() {
        bound_note.push_str(&format!("; generator-bound at {}", join_cells(&bound)));
    }
    if !contended.is_empty() {
        bound_note.push_str(&format!("; contended at {}", join_cells(&contended)));
    }
    if judged.is_empty() {
        return if !bound.is_empty() {
            Verdict {
                outcome: Outcome::GeneratorBound,
                reason: format!(
                    "no user count could be judged; generator-bound at {}: these figures \
                     measure the generator{}",
                    join_cells(&bound),
                    if contended.is_empty() {
                        String::new()
                    } else {
                        format!("; contended at {}", join_cells(&contended))
                    }
                ),
            }
        } else if !contended.is_empty() {
            Verdict {
                outcome: Outcome::Contended,
                reason: format!(
                    "other processes took CPU in every cell ({}): no comparable figures",
                    join_cells(&contended)
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
        .map(|(at, v)| format!("{at}: {}", v.label()))
        .collect::<Vec<_>>()
        .join(", ");
    let counts = if judged.iter().any(|(at, _)| at.preload.is_some()) {
        "cells"
    } else {
        "user counts"
    };
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
                "{} wins {} of {} judged {counts} by {range} ({per_cell}){bound_note}",
                winners[0],
                margins.len(),
                judged.len()
            ),
        };
    }
    let why = if winners.len() > 1 {
        format!("different runtimes lead at different {counts} ({per_cell})")
    } else if winners.len() == 1 {
        format!(
            "{} wins only {} of {} judged {counts} ({per_cell})",
            winners[0],
            margins.len(),
            judged.len()
        )
    } else {
        format!("within the noise at every judged cell ({per_cell})")
    };
    Verdict {
        outcome: Outcome::Tie { leaders },
        reason: format!("{why}{bound_note}"),
    }
}

/// `10, 20 users` when only user counts differ, else each cell in full.
fn join_cells(cells: &[CellAt]) -> String {
    if cells.iter().all(|c| c.preload.is_none()) {
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

    fn figures(runtime: &str, values: &[f64]) -> RuntimeFigures {
        RuntimeFigures {
            runtime: runtime.to_owned(),
            values: values.iter().copied().map(Some).collect(),
            generator_bound: None,
            contended: None,
        }
    }

    #[test]
    fn the_verdict_line_shows_the_numbers_its_percentage_comes_from() {
        let verdict = judge_cell(
            &[
                figures("hyper", &[58_026.0 * 1.014, 58_026.0, 57_213.0 * 1.153]),
                figures("axum", &[58_026.0, 58_026.0 / 1.122, 57_213.0]),
            ],
            1.0,
        );
        assert_eq!(verdict.label(), "hyper +12.2%");
        assert!(
            verdict.reason.starts_with(
                "hyper leads axum by a median 12.2% over 3 repeats (paired leads 1.4%, 12.2%, 15.3%; medians"
            ),
            "{}",
            verdict.reason
        );
        assert!(
            verdict.reason.ends_with("successful hits/s)"),
            "{}",
            verdict.reason
        );
    }

    #[test]
    fn efficiency_ranks_the_runtime_spending_less_cpu_per_request_even_when_generator_bound() {
        let mut lean = figures("actix", &[40.0, 41.0]);
        lean.generator_bound = Some("generator at 99%".into());
        let heavy = figures("warp", &[50.0, 49.2]);
        let throughput = judge_cell(&[lean.clone(), heavy.clone()], 5.0);
        assert_eq!(throughput.outcome, Outcome::GeneratorBound);
        let efficiency = judge_cell_on(&[heavy, lean], 5.0, Measure::Efficiency);
        match &efficiency.outcome {
            Outcome::Winner {
                runtime,
                margin_pct,
                ..
            } => {
                assert_eq!(runtime, "actix");
                // warp spent 25% and 20% more per request: the median of the paired leads.
                assert!((margin_pct - 22.5).abs() < 1e-9, "{margin_pct}");
            }
            other => panic!("expected a winner, got {other:?}"),
        }
        assert!(
            efficiency
                .reason
                .contains("medians 40.5 vs 49.6 server CPU µs per request")
                && efficiency
                    .reason
                    .contains("warp spent that much more CPU per request"),
            "{}",
            efficiency.reason
        );
    }

    #[test]
    fn a_leader_behind_in_most_pairs_is_level_and_says_so_with_its_numbers() {
        // a has the better median only thanks to one outlying repeat.
        let verdict = judge_cell(
            &[
                figures("a", &[1000.0, 2000.0, 1005.0]),
                figures("b", &[1001.0, 998.0, 1006.0]),
            ],
            5.0,
        );
        assert!(
            matches!(verdict.outcome, Outcome::Tie { .. }),
            "{verdict:?}"
        );
        assert!(
            verdict
                .reason
                .starts_with("a and b are level: a's lead is a median -0.1% over 3 repeats (paired leads -0.1%, 100.4%, -0.1%; medians 1,005 vs 1,001"),
            "{}",
            verdict.reason
        );
    }

    #[test]
    fn contended_cells_get_no_efficiency_verdict() {
        let mut noisy = figures("warp", &[50.0]);
        noisy.contended = Some("others took 40%".into());
        let verdict = judge_cell_on(&[figures("axum", &[10.0]), noisy], 5.0, Measure::Efficiency);
        assert_eq!(verdict.outcome, Outcome::Contended);
    }

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
