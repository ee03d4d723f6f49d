//! The judging phase: from what a comparison measured to its verdicts, one measure a file — every
//! side-by-side level on efficiency ([`efficiency`]), every isolated cell on throughput
//! ([`throughput`]), every `--slo` cell on capacity ([`capacity`]), each comparison by the
//! four-way rule and told in words ([`words`]), every scenario from its cells ([`scenario`]) and pooled over its levels ([`pooled`]); the
//! tables' rows and the thresholds' checks ([`tables`]). [`judge`] takes the measured figures and
//! returns a [`Judgement`]; [`rejudge`] derives one again from a written report.

mod capacity;
mod contenders;
mod efficiency;
mod pooled;
mod scenario;
mod tables;
mod throughput;
mod words;

use std::path::Path;

use brigade_meter::runcpu::{contended, generator_bound, CpuShape};
use brigade_records::side::SideCell;
use brigade_report::comparison::Comparison;
use brigade_report::thresholds::RunCheck;
use brigade_report::verdict::{CellAt, Outcome, Rule, Verdict};
use brigade_report::{CellVerdict, LevelVerdict, Report, Row, RunRecord, ScenarioVerdict};
use brigade_slo::SloSearch;

pub(crate) use contenders::rounds_to_decide;
pub use scenario::judge_scenario;
pub(crate) use scenario::judge_scenario_at;
use words::Key;

/// What the judge reads: the figures a comparison measured and the settings they were measured
/// under (a report's own, so that `--rejudge` reads the same from a written one).
#[derive(Debug, Clone, Copy)]
pub struct Evidence<'a> {
    /// The isolated runs.
    pub runs: &'a [RunRecord],
    /// The side-by-side levels.
    pub side: &'a [SideCell],
    /// `--slo`'s searches.
    pub searches: &'a [SloSearch],
    /// The report's settings: scenarios, users, preloads, runtimes, store, thresholds.
    pub settings: &'a brigade_report::Settings,
}

impl<'a> Evidence<'a> {
    /// The evidence of what a comparison just measured.
    pub fn measured(measured: &'a brigade_report::Measurements) -> Evidence<'a> {
        Evidence {
            runs: &measured.runs,
            side: &measured.side_by_side,
            searches: &measured.slo_searches,
            settings: &measured.settings,
        }
    }

    /// The evidence a written report holds.
    pub fn of(report: &'a Report) -> Evidence<'a> {
        Evidence {
            runs: &report.runs,
            side: &report.side_by_side,
            searches: &report.slo_searches,
            settings: &report.settings,
        }
    }
}

/// Everything judged: the tables' rows, cells, scenarios, every comparison, the pairs and the
/// thresholds' checks.
#[derive(Debug, Clone, Default)]
pub struct Judgement {
    /// One row per runtime × scenario × users × preload: the medians of its isolated runs, with
    /// the cost breakdown of its side-by-side level.
    pub rows: Vec<Row>,
    /// One per scenario × users × preload.
    pub cells: Vec<CellVerdict>,
    /// One per scenario.
    pub scenarios: Vec<ScenarioVerdict>,
    /// Every judged comparison.
    pub comparisons: Vec<Comparison>,
    /// A/A pairs, one runtime under two labels, I/O-engine variants against their siblings.
    pub pairs: Vec<Comparison>,
    /// Every isolated run against every `--threshold`.
    pub threshold_checks: Vec<RunCheck>,
}

/// Judges everything `evidence` holds by `rule`: throughput from the isolated runs, efficiency from
/// the side-by-side levels, capacity from the searches, every scenario from its cells; the rows
/// and the thresholds' checks beside them.
pub fn judge(evidence: &Evidence<'_>, rule: &Rule) -> anyhow::Result<Judgement> {
    let settings = evidence.settings;
    let mut out = Judgement {
        rows: tables::rows(evidence),
        pairs: efficiency::judge_pairs(
            evidence.side,
            &settings.store,
            rule,
            &settings.engine_variants,
        ),
        threshold_checks: tables::check_thresholds(evidence.runs, &settings.thresholds)?,
        ..Judgement::default()
    };
    for scenario in &settings.scenarios {
        judge_cells(evidence, scenario, rule, &mut out);
    }
    capacity::judge_all(evidence, rule, &mut out);
    Ok(out)
}

/// Judges one scenario: each of its cells (users × preload) on throughput and on efficiency at
/// every side-by-side level, then the scenario from its cells.
fn judge_cells(evidence: &Evidence<'_>, scenario: &str, rule: &Rule, out: &mut Judgement) {
    let settings = evidence.settings;
    let several_preloads = settings.preloads.iter().any(|&n| n != 0);
    let mut throughput = Vec::new();
    let mut efficiency = Vec::new();
    let mut for_pool: Vec<(&SideCell, Vec<Comparison>)> = Vec::new();
    for &preload in &settings.preloads {
        for &users in &settings.users {
            let at = |level: Option<String>| CellAt {
                users,
                preload: several_preloads.then_some(preload),
                level,
            };
            let key = Key::cell(scenario, users, preload, &settings.store);
            let mine: Vec<&RunRecord> = evidence
                .runs
                .iter()
                .filter(|r| r.scenario == scenario && r.users == users && r.preload == preload)
                .collect();
            let on_throughput = if mine.is_empty() {
                Verdict {
                    outcome: Outcome::NoData,
                    reason: "no isolated runs".to_owned(),
                }
            } else {
                let (comparisons, verdict) =
                    throughput::judge_cell(&mine, &settings.runtimes, &key, rule);
                out.comparisons.extend(comparisons);
                verdict
            };
            throughput.push((at(None), on_throughput.clone()));
            let levels: Vec<LevelVerdict> = evidence
                .side
                .iter()
                .filter(|c| c.scenario == scenario && c.users == users && c.preload == preload)
                .map(|cell| {
                    let (comparisons, level) =
                        efficiency::judge_level_verdict(cell, settings, rule);
                    for_pool.push((cell, comparisons.clone()));
                    out.comparisons.extend(comparisons);
                    efficiency.push((at(Some(level.level.clone())), level.verdict.clone()));
                    level
                })
                .collect();
            let summary = (!levels.is_empty()).then(|| {
                let at_levels: Vec<(CellAt, Verdict)> = levels
                    .iter()
                    .map(|l| (at(Some(l.level.clone())), l.verdict.clone()))
                    .collect();
                judge_scenario_at(&at_levels)
            });
            out.cells.push(CellVerdict {
                scenario: scenario.to_owned(),
                users,
                preload,
                verdict: on_throughput,
                efficiency: summary,
                leader: efficiency::cell_leader(&levels),
                efficiency_levels: levels,
                capacity: None,
            });
        }
    }
    out.scenarios.push(ScenarioVerdict {
        scenario: scenario.to_owned(),
        verdict: judge_scenario_at(&throughput),
        efficiency: (!efficiency.is_empty()).then(|| judge_scenario_at(&efficiency)),
        pooled: pooled::pool_scenario(scenario, &for_pool, &settings.store, rule),
        capacity: None,
    });
}

/// Re-judges the report in `dir` (its `report.json`) with the current rules and `rule`, and
/// rewrites its three files: every flag, row, verdict and note is derived again from the recorded
/// runs and windows; nothing is run. Reports written before a field existed read with its
/// default (no preload, no side-by-side levels: throughput verdicts only).
pub fn rejudge(dir: &Path, rule: &Rule) -> anyhow::Result<Report> {
    let report = rejudged(dir, rule)?;
    brigade_report::write_all(&report, dir)?;
    Ok(report)
}

/// The report in `dir` judged again as [`rejudge`] does, not written.
pub(crate) fn rejudged(dir: &Path, rule: &Rule) -> anyhow::Result<Report> {
    let mut report = brigade_report::json::read(&dir.join("report.json"))?;
    let cpus = &report.threads.cpus;
    let shape = CpuShape {
        generator_cpus: cpus.generator.len(),
        server_cpus: cpus.server.len(),
        pinned: cpus.pinned,
    };
    for run in &mut report.runs {
        if run.result.is_some() {
            run.generator_bound = generator_bound(&run.cpu, shape);
            run.contended = contended(&run.cpu, shape);
        }
    }
    report.settings.rule = *rule;
    if report.settings.preloads.is_empty() {
        report.settings.preloads = vec![0];
    }
    let judgement = judge(&Evidence::of(&report), rule)?;
    let (baseline, correctness) = (report.baseline.take(), report.correctness.take());
    Ok(
        Report::new(report.into_measurements(), judgement.into_parts())
            .with_baseline(baseline)
            .with_correctness(correctness),
    )
}

impl Judgement {
    /// The judgement as the report's parts.
    pub fn into_parts(self) -> brigade_report::Judged {
        brigade_report::Judged {
            rows: self.rows,
            cells: self.cells,
            scenarios: self.scenarios,
            comparisons: self.comparisons,
            pairs: self.pairs,
            threshold_checks: self.threshold_checks,
        }
    }
}
