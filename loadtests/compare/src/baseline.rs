//! `brigade compare --baseline OLD/report.json`: every cell of this comparison (scenario × users ×
//! preload × runtime) set against the same cell of a saved report, on throughput (successful hits/s)
//! and on efficiency (server CPU µs per request), with the rule the verdicts use between runtimes:
//! repeat `i` of this comparison is paired with repeat `i` of the baseline, and a cell has changed
//! only when it moved the same way in every pair by a median at least the noise floor; anything
//! less is within noise. Cells whose runs were generator-bound (throughput) or contended (either)
//! on either side are not judged, for the reasons they name no winner in a comparison.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::report::{self, Report, RunRecord};
use crate::verdict::{self, figure, Measure, Outcome, RuntimeFigures};

/// The name this comparison goes by in the baseline's verdicts.
const NOW: &str = "this run";
/// The name the saved report goes by.
const BEFORE: &str = "the baseline";

/// This comparison against a saved one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// The saved report's path, as given.
    pub path: String,
    /// When the saved comparison started.
    pub started_at: String,
    /// The machine it ran on, in words.
    pub machine: String,
    /// Every cell found in both, in this comparison's order.
    pub cells: Vec<CellChange>,
    /// Cells of this comparison the baseline does not have (`scenario, N users, preload P, runtime`).
    pub missing: Vec<String>,
    /// Settings that differ between the two (each a sentence), which may explain a change.
    pub differences: Vec<String>,
}

/// One cell against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellChange {
    /// The scenario.
    pub scenario: String,
    /// Closed-loop users (open loop: connections).
    pub users: u32,
    /// Documents preloaded per collection.
    pub preload: u64,
    /// The runtime.
    pub runtime: String,
    /// Successful hits/s.
    pub throughput: Change,
    /// Server CPU µs per request.
    pub efficiency: Change,
}

/// How one figure moved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The baseline's median.
    pub before: f64,
    /// This comparison's median.
    pub after: f64,
    /// `after` against `before`, percent (0 when there is no `before`).
    pub change_pct: f64,
    /// Better, worse, within noise, or not judged.
    pub call: Call,
    /// Why, with the paired numbers.
    pub reason: String,
}

/// What a change amounts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// Better in every pair, by at least the noise floor (more hits/s, or less CPU per request).
    Better,
    /// Worse in every pair, by at least the noise floor.
    Worse,
    /// Neither.
    WithinNoise,
    /// Generator-bound, contended, or without figures on one side.
    NotJudged,
}

impl Change {
    /// `+12.3% better`, `-4.0% within noise`, `not judged`.
    pub fn label(&self) -> String {
        match self.call {
            Call::NotJudged => "not judged".to_owned(),
            call => format!(
                "{:+.1}% {}",
                self.change_pct,
                match call {
                    Call::Better => "better",
                    Call::Worse => "worse",
                    _ => "within noise",
                }
            ),
        }
    }
}

/// Reads the saved report at `path` (a `report.json`, or the folder holding one).
pub fn read(path: &Path) -> anyhow::Result<Report> {
    let file = if path.is_dir() {
        path.join("report.json")
    } else {
        path.to_path_buf()
    };
    report::json::read(&file)
}

/// Sets `now` against `before` (read from `path`) cell by cell.
pub fn compare(now: &Report, before: &Report, path: &Path, noise_floor_pct: f64) -> Baseline {
    let mut cells = Vec::new();
    let mut missing = Vec::new();
    for row in &now.rows {
        let key = |r: &&RunRecord| {
            r.scenario == row.scenario
                && r.users == row.users
                && r.preload == row.preload
                && r.runtime == row.runtime
        };
        let mine: Vec<&RunRecord> = now.runs.iter().filter(key).collect();
        let theirs: Vec<&RunRecord> = before.runs.iter().filter(key).collect();
        let name = format!(
            "{}, {} users, preload {}, {}",
            row.scenario, row.users, row.preload, row.runtime
        );
        if theirs.is_empty() {
            missing.push(name);
            continue;
        }
        cells.push(CellChange {
            scenario: row.scenario.clone(),
            users: row.users,
            preload: row.preload,
            runtime: row.runtime.clone(),
            throughput: change(
                &mine,
                &theirs,
                &RunRecord::ok_per_s,
                Measure::Throughput,
                noise_floor_pct,
            ),
            efficiency: change(
                &mine,
                &theirs,
                &RunRecord::server_cpu_us_per_request,
                Measure::Efficiency,
                noise_floor_pct,
            ),
        });
    }
    Baseline {
        path: path.display().to_string(),
        started_at: before.started_at.clone(),
        machine: format!(
            "{} — {} ({} cores)",
            before.machine.hostname, before.machine.cpu, before.machine.cores
        ),
        cells,
        missing,
        differences: differences(now, before),
    }
}

/// One figure of one cell, this comparison's runs against the baseline's, paired by repeat.
fn change(
    mine: &[&RunRecord],
    theirs: &[&RunRecord],
    value: &dyn Fn(&RunRecord) -> Option<f64>,
    measure: Measure,
    noise_floor_pct: f64,
) -> Change {
    let figures = |name: &str, runs: &[&RunRecord]| {
        let repeats = runs
            .iter()
            .map(|r| r.repeat as usize + 1)
            .max()
            .unwrap_or(0);
        let mut values = vec![None; repeats];
        for run in runs {
            values[run.repeat as usize] = value(run);
        }
        RuntimeFigures {
            runtime: name.to_owned(),
            values,
            generator_bound: runs.iter().find_map(|r| r.generator_bound.clone()),
            contended: runs.iter().find_map(|r| r.contended.clone()),
        }
    };
    let now = figures(NOW, mine);
    let before = figures(BEFORE, theirs);
    let median = |f: &RuntimeFigures| {
        verdict::median(&f.values.iter().flatten().copied().collect::<Vec<_>>())
    };
    let (after_median, before_median) = (median(&now), median(&before));
    let judged = verdict::judge_cell_on(&[now, before], noise_floor_pct, measure);
    let call = match &judged.outcome {
        Outcome::Winner { runtime, .. } if runtime == NOW => Call::Better,
        Outcome::Winner { .. } => Call::Worse,
        Outcome::Tie { .. } => Call::WithinNoise,
        Outcome::GeneratorBound | Outcome::Contended | Outcome::NoData => Call::NotJudged,
    };
    Change {
        before: before_median,
        after: after_median,
        change_pct: if before_median > 0.0 {
            (after_median / before_median - 1.0) * 100.0
        } else {
            0.0
        },
        call,
        reason: judged.reason,
    }
}

/// The settings that differ between the two comparisons, in words.
fn differences(now: &Report, before: &Report) -> Vec<String> {
    let (a, b) = (&now.settings, &before.settings);
    let mut out = Vec::new();
    let mut differ = |what: &str, now: String, then: String| {
        if now != then {
            out.push(format!("{what}: {now} now, {then} in the baseline"));
        }
    };
    differ("store", a.store.clone(), b.store.clone());
    differ(
        "measured seconds per run",
        figure(a.duration_s),
        figure(b.duration_s),
    );
    differ("repeats", a.repeat.to_string(), b.repeat.to_string());
    differ(
        "keep-alive",
        a.keepalive.to_string(),
        b.keepalive.to_string(),
    );
    differ("rate", format!("{:?}", a.rate), format!("{:?}", b.rate));
    differ(
        "machine",
        format!("{} ({} cores)", now.machine.cpu, now.machine.cores),
        format!("{} ({} cores)", before.machine.cpu, before.machine.cores),
    );
    differ(
        "CPUs (server / generator)",
        format!(
            "{:?} / {:?}",
            now.threads.cpus.server, now.threads.cpus.generator
        ),
        format!(
            "{:?} / {:?}",
            before.threads.cpus.server, before.threads.cpus.generator
        ),
    );
    differ(
        "brigade",
        now.versions.brigade.clone(),
        before.versions.brigade.clone(),
    );
    out
}

/// The header of the baseline table.
pub const HEADER: [&str; 11] = [
    "scenario",
    "users",
    "preload",
    "runtime",
    "hits/s before",
    "hits/s now",
    "throughput",
    "CPU µs/req before",
    "CPU µs/req now",
    "efficiency",
    "why",
];

/// One cell's line in the baseline table.
pub fn cells(change: &CellChange) -> Vec<String> {
    vec![
        change.scenario.clone(),
        change.users.to_string(),
        change.preload.to_string(),
        change.runtime.clone(),
        figure(change.throughput.before),
        figure(change.throughput.after),
        change.throughput.label(),
        figure(change.efficiency.before),
        figure(change.efficiency.after),
        change.efficiency.label(),
        format!(
            "throughput: {}; efficiency: {}",
            change.throughput.reason, change.efficiency.reason
        ),
    ]
}

/// The rule, in words, under the table.
pub fn rule(noise_floor_pct: f64) -> String {
    format!(
        "Each cell is set against the same cell of the baseline, repeat i against repeat i: it \
         changed when it moved the same way in every pair by a median of at least \
         {noise_floor_pct:.0}% (the noise floor), the rule the verdicts between runtimes use; \
         anything less is within noise. Throughput is successful hits/s (higher is better), \
         efficiency the server's CPU µs per request (lower is better). Generator-bound or \
         contended cells are not judged."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(values: &[f64]) -> Vec<Option<f64>> {
        values.iter().copied().map(Some).collect()
    }

    fn call(now: &[f64], before: &[f64], measure: Measure) -> Call {
        let judged = verdict::judge_cell_on(
            &[
                RuntimeFigures {
                    runtime: NOW.into(),
                    values: figures(now),
                    generator_bound: None,
                    contended: None,
                },
                RuntimeFigures {
                    runtime: BEFORE.into(),
                    values: figures(before),
                    generator_bound: None,
                    contended: None,
                },
            ],
            5.0,
            measure,
        );
        match &judged.outcome {
            Outcome::Winner { runtime, .. } if runtime == NOW => Call::Better,
            Outcome::Winner { .. } => Call::Worse,
            Outcome::Tie { .. } => Call::WithinNoise,
            _ => Call::NotJudged,
        }
    }

    #[test]
    fn a_change_needs_every_pair_and_the_noise_floor() {
        assert_eq!(
            call(&[1100.0, 1120.0], &[1000.0, 1000.0], Measure::Throughput),
            Call::Better
        );
        assert_eq!(
            call(&[900.0, 910.0], &[1000.0, 1000.0], Measure::Throughput),
            Call::Worse
        );
        // Ahead in one pair only, or by less than the floor: noise.
        assert_eq!(
            call(&[1300.0, 990.0], &[1000.0, 1000.0], Measure::Throughput),
            Call::WithinNoise
        );
        assert_eq!(
            call(&[1020.0, 1030.0], &[1000.0, 1000.0], Measure::Throughput),
            Call::WithinNoise
        );
        // Less CPU per request is better.
        assert_eq!(
            call(&[8.0, 8.1], &[10.0, 10.0], Measure::Efficiency),
            Call::Better
        );
    }
}
