//! The verdicts of a comparison from its runs: every cell (scenario × users × preload) judged on
//! throughput and on efficiency, every scenario from its cells, and the caveats a reader should know;
//! and `--rejudge`, which derives all of them again from a written report.

use crate::report::{self, CellVerdict, Report, RunRecord, ScenarioVerdict};
use crate::verdict::{self, CellAt, CpuShape, Measure, RuntimeFigures};

/// Re-judges the report in `dir` (its `report.json`) with the current rules and `noise_floor_pct`,
/// and rewrites its three files: every flag, row, verdict and note is derived again from the
/// recorded runs; nothing is run. Reports written before a field existed read with its default
/// (no preload, no efficiency verdict), and gain what can be derived from their runs.
pub fn rejudge(dir: &std::path::Path, noise_floor_pct: f64) -> anyhow::Result<Report> {
    let mut report = report::json::read(&dir.join("report.json"))?;
    let cpus = &report.threads.cpus;
    let shape = CpuShape {
        generator_cpus: cpus.generator.len(),
        server_cpus: cpus.server.len(),
        pinned: cpus.pinned,
    };
    for run in &mut report.runs {
        if run.result.is_some() {
            run.generator_bound = verdict::generator_bound(&run.cpu, shape);
            run.contended = verdict::contended(&run.cpu, shape);
        }
    }
    report.settings.noise_floor_pct = noise_floor_pct;
    let thresholds = brigade_load::threshold::parse_all(&report.settings.thresholds)?;
    report.threshold_checks = crate::thresholds::check(&report.runs, &thresholds);
    if report.settings.preloads.is_empty() {
        report.settings.preloads = vec![0];
    }
    let s = &report.settings;
    report.rows = report::rows(
        &report.runs,
        &s.scenarios,
        &s.users,
        &s.preloads,
        &s.runtimes,
    );
    let (cells, scenarios) = judge(
        &report.runs,
        &s.scenarios,
        &s.users,
        &s.preloads,
        &s.runtimes,
        noise_floor_pct,
    );
    report.cells = cells;
    report.scenarios = scenarios;
    report.notes = notes(&report);
    report::write_all(&report, dir)?;
    Ok(report)
}

/// Judges every cell (scenario × users × preload), on throughput and on efficiency, and every
/// scenario from its cells.
pub fn judge(
    runs: &[RunRecord],
    scenarios: &[String],
    users: &[u32],
    preloads: &[u64],
    runtimes: &[String],
    noise_floor_pct: f64,
) -> (Vec<CellVerdict>, Vec<ScenarioVerdict>) {
    let repeats = runs.iter().map(|r| r.repeat + 1).max().unwrap_or(0) as usize;
    let several_preloads = preloads.iter().any(|&n| n != 0);
    let mut cells = Vec::new();
    let mut verdicts = Vec::new();
    for scenario in scenarios {
        let mut throughput = Vec::new();
        let mut efficiency = Vec::new();
        for &preload in preloads {
            for &count in users {
                let figures = |value: &dyn Fn(&RunRecord) -> Option<f64>| -> Vec<RuntimeFigures> {
                    runtimes
                        .iter()
                        .map(|runtime| {
                            let mine: Vec<&RunRecord> = runs
                                .iter()
                                .filter(|r| {
                                    &r.scenario == scenario
                                        && r.users == count
                                        && r.preload == preload
                                        && &r.runtime == runtime
                                })
                                .collect();
                            let mut values = vec![None; repeats];
                            for run in &mine {
                                values[run.repeat as usize] = value(run);
                            }
                            RuntimeFigures {
                                runtime: runtime.clone(),
                                values,
                                generator_bound: mine
                                    .iter()
                                    .find_map(|r| r.generator_bound.clone()),
                                contended: mine.iter().find_map(|r| r.contended.clone()),
                            }
                        })
                        .collect()
                };
                let on_throughput = verdict::judge_cell_on(
                    &figures(&RunRecord::ok_per_s),
                    noise_floor_pct,
                    Measure::Throughput,
                );
                let on_efficiency = verdict::judge_cell_on(
                    &figures(&RunRecord::server_cpu_us_per_request),
                    noise_floor_pct,
                    Measure::Efficiency,
                );
                let at = CellAt {
                    users: count,
                    preload: several_preloads.then_some(preload),
                };
                throughput.push((at, on_throughput.clone()));
                efficiency.push((at, on_efficiency.clone()));
                cells.push(CellVerdict {
                    scenario: scenario.clone(),
                    users: count,
                    preload,
                    verdict: on_throughput,
                    efficiency: Some(on_efficiency),
                });
            }
        }
        verdicts.push(ScenarioVerdict {
            scenario: scenario.clone(),
            verdict: verdict::judge_scenario_at(&throughput),
            efficiency: Some(verdict::judge_scenario_at(&efficiency)),
        });
    }
    (cells, verdicts)
}

/// The caveats a reader of this report should know.
pub(crate) fn notes(report: &Report) -> Vec<String> {
    let mut notes = Vec::new();
    let t = &report.threads;
    if !t.cpus.pinned {
        notes.push(
            "Servers and generator shared the CPUs (nothing pinned): they competed for them, and \
             generator-bound runs are detected only roughly."
                .to_owned(),
        );
    }
    if report.machine.cores <= 4 && report.settings.external {
        notes.push(format!(
            "A {}-core machine: the servers ran where they were put outside compare (server CPUs \
             {} as given), so this compares runtimes on a small slice of a machine, not how they \
             scale across cores.",
            report.machine.cores,
            crate::pin::list(&t.cpus.server),
        ));
    } else if report.machine.cores <= 4 {
        notes.push(format!(
            "A {}-core machine: each server ran on {} CPU with {} worker(s), so this compares \
             runtimes on a small slice of a machine, not how they scale across cores.",
            report.machine.cores,
            t.cpus.server.len(),
            t.server_workers
        ));
    }
    if report.settings.repeat == 1 {
        notes.push(format!(
            "One run per cell: the spread between runs is unknown, so only the {:.0}% noise floor \
             separates a win from a tie. `--repeat 3` gives firmer verdicts.",
            report.settings.noise_floor_pct
        ));
    }
    let bound = report
        .runs
        .iter()
        .filter(|r| r.generator_bound.is_some() && r.contended.is_none())
        .count();
    if bound > 0 {
        notes.push(format!(
            "{bound} of {} runs were generator-bound (the generator's CPUs were at least 90% busy, \
             so the figures may show the generator's limit); their cells name no throughput winner, \
             but their efficiency verdicts (server CPU per request) stand.",
            report.runs.len()
        ));
    }
    let contended = report.runs.iter().filter(|r| r.contended.is_some()).count();
    if contended > 0 {
        notes.push(format!(
            "{contended} of {} runs shared their CPUs with other processes (at least {:.0}% of a \
             side's CPUs went to someone else); their cells name no winner on either verdict. Rerun \
             on a quiet machine.",
            report.runs.len(),
            verdict::CONTENTION * 100.0
        ));
    }
    // Neither side near its CPU limit: the runs waited on something else (disk syncs, peers).
    let waiting: Vec<&str> = report
        .settings
        .scenarios
        .iter()
        .filter(|scenario| {
            let rows: Vec<&report::Row> = report
                .rows
                .iter()
                .filter(|r| &r.scenario == *scenario && r.runs > 0)
                .collect();
            let server_cap = report.threads.cpus.server.len().max(1) as f64 * 100.0;
            let generator_cap = report.threads.cpus.generator.len().max(1) as f64 * 100.0;
            !rows.is_empty()
                && rows.iter().all(|r| {
                    r.server_cpus_busy_pct.max(r.server_cpu_pct) < 0.8 * server_cap
                        && r.generator_cpu_pct < 0.8 * generator_cap
                })
        })
        .map(String::as_str)
        .collect();
    if !waiting.is_empty() {
        notes.push(format!(
            "In {}, neither the servers' CPUs nor the generator were busy 80% of the time: \
             throughput there is bounded by waiting (with the {} store, mostly for its durable \
             writes), which every runtime pays alike, so differences are small.",
            waiting.join(", "),
            report.settings.store
        ));
    }
    let s = &report.settings;
    if let Some(rate) = s.rate {
        notes.push(format!(
            "Open loop: every runtime was offered the same {} requests/s (latency counted from each \
             request's intended send time). Throughput verdicts say only who kept up; the \
             efficiency verdict (server CPU per request) and the latencies compare the runtimes.",
            report::rate_words(rate)
        ));
    }
    if !s.keepalive {
        notes.push(
            "A new connection per request (no keep-alive): every request pays a TCP handshake and \
             close on both sides, so connection handling weighs as much as the route."
                .to_owned(),
        );
    }
    let failed: Vec<&RunRecord> = report.runs.iter().filter(|r| r.error.is_some()).collect();
    if !failed.is_empty() {
        notes.push(format!(
            "{} run(s) failed, first: {} {} {} users: {}",
            failed.len(),
            failed[0].runtime,
            failed[0].scenario,
            failed[0].users,
            failed[0].error.as_deref().unwrap_or_default()
        ));
    }
    for row in report.rows.iter().filter(|r| r.error_pct >= 1.0) {
        notes.push(format!(
            "{} on {} at {} users, preload {}: {:.1}% of requests failed (see report.json for the \
             kinds).",
            row.runtime, row.scenario, row.users, row.preload, row.error_pct
        ));
    }
    notes
}
