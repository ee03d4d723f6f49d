//! The tables beside the verdicts: one row per runtime and cell, the medians of its isolated runs
//! with the cost breakdown of the cell's lowest side-by-side level; and every run checked against
//! every `--threshold`.

use brigade_records::result::LoadResult;
use brigade_records::side::SideCell;
use brigade_records::threshold::{Check, Figures};
use brigade_report::thresholds::RunCheck;
use brigade_report::{Row, RunRecord};
use brigade_stats::median;

use super::Evidence;

/// Checks every threshold against every run.
pub(super) fn check_thresholds(
    runs: &[RunRecord],
    thresholds: &[String],
) -> anyhow::Result<Vec<RunCheck>> {
    let thresholds = brigade_records::threshold::parse_all(thresholds)?;
    let mut out = Vec::new();
    for run in runs {
        for threshold in &thresholds {
            let check = match &run.result {
                Some(result) => threshold.check(&Figures::from(&result.total)),
                None => Check {
                    threshold: threshold.to_string(),
                    actual: 0.0,
                    passed: false,
                    text: format!(
                        "the run failed: {}",
                        run.error.as_deref().unwrap_or("no result")
                    ),
                },
            };
            out.push(RunCheck {
                run: run.index,
                runtime: run.runtime.clone(),
                scenario: run.scenario.clone(),
                users: run.users,
                preload: run.preload,
                repeat: run.repeat,
                check,
            });
        }
    }
    Ok(out)
}

/// Fills each row's cost breakdown from the side-by-side level of its cell with the lowest rate.
fn add_breakdown(rows: &mut [Row], side: &[SideCell]) {
    for row in rows {
        let lowest = side
            .iter()
            .filter(|c| {
                c.scenario == row.scenario && c.users == row.users && c.preload == row.preload
            })
            .min_by(|a, b| a.rate_per_s.total_cmp(&b.rate_per_s));
        let Some(found) = lowest.and_then(|c| c.runtimes.iter().find(|r| r.runtime == row.runtime))
        else {
            continue;
        };
        row.user_cpu_us_per_request = found.user_cpu_us_per_request;
        row.system_cpu_us_per_request = found.system_cpu_us_per_request;
        row.syscalls_per_request = found.syscalls_per_request;
        row.context_switches_per_request = found.context_switches_per_request;
        row.instructions_per_request = found.instructions_per_request;
    }
}

/// The table's rows from the isolated runs, in the order of the settings' scenarios, preloads,
/// users and runtimes, each with its cost breakdown.
pub(super) fn rows(evidence: &Evidence<'_>) -> Vec<Row> {
    let s = evidence.settings;
    let mut rows = Vec::new();
    for scenario in &s.scenarios {
        for &preload in &s.preloads {
            for &count in &s.users {
                for runtime in &s.runtimes {
                    let all: Vec<&RunRecord> = evidence
                        .runs
                        .iter()
                        .filter(|r| {
                            &r.scenario == scenario
                                && r.users == count
                                && r.preload == preload
                                && &r.runtime == runtime
                        })
                        .collect();
                    if all.is_empty() {
                        continue;
                    }
                    let mut row = row(scenario, count, runtime, &all);
                    row.preload = preload;
                    rows.push(row);
                }
            }
        }
    }
    add_breakdown(&mut rows, evidence.side);
    rows
}

fn row(scenario: &str, users: u32, runtime: &str, runs: &[&RunRecord]) -> Row {
    let done: Vec<(&RunRecord, &LoadResult)> = runs
        .iter()
        .filter_map(|r| r.result.as_ref().map(|res| (*r, res)))
        .collect();
    // A row prints 0 where nothing was measured (every run failed), not the median's NaN.
    let median_or_0 = |values: &[f64]| {
        if values.is_empty() {
            0.0
        } else {
            median(values)
        }
    };
    let pick = |f: &dyn Fn(&RunRecord, &LoadResult) -> f64| -> f64 {
        median_or_0(&done.iter().map(|(r, res)| f(r, res)).collect::<Vec<_>>())
    };
    let hits: Vec<f64> = done.iter().map(|(_, res)| res.total.hits_per_s).collect();
    let median_hits = median_or_0(&hits);
    let (low, high) = if hits.is_empty() {
        (0.0, 0.0)
    } else {
        (
            hits.iter().copied().fold(f64::INFINITY, f64::min),
            hits.iter().copied().fold(0.0, f64::max),
        )
    };
    Row {
        scenario: scenario.to_owned(),
        users,
        preload: 0,
        runtime: runtime.to_owned(),
        runs: done.len() as u32,
        failed_runs: (runs.len() - done.len()) as u32,
        requests: done.iter().map(|(_, res)| res.total.requests).sum(),
        hits_per_s: median_hits,
        hits_per_s_min: low,
        hits_per_s_max: high,
        spread_pct: if median_hits > 0.0 {
            (high - low) / median_hits * 100.0
        } else {
            0.0
        },
        ok_per_s: pick(&|r, _| r.ok_per_s().unwrap_or(0.0)),
        kib_per_s: pick(&|_, res| res.total.bytes_per_s / 1024.0),
        mean_ms: pick(&|_, res| res.total.latency.mean_ms),
        p50_ms: pick(&|_, res| res.total.latency.p50_ms),
        p90_ms: pick(&|_, res| res.total.latency.p90_ms),
        p99_ms: pick(&|_, res| res.total.latency.p99_ms),
        p999_ms: pick(&|_, res| res.total.latency.p999_ms),
        max_ms: pick(&|_, res| res.total.latency.max_ms),
        error_pct: pick(&|_, res| {
            if res.total.requests == 0 {
                0.0
            } else {
                res.total.errors.total() as f64 / res.total.requests as f64 * 100.0
            }
        }),
        server_cpu_pct: pick(&|r, _| r.server.cpu_percent),
        server_cpu_us_per_request: median_or_0(
            &done
                .iter()
                .filter_map(|(r, _)| r.server_cpu_us_per_request())
                .collect::<Vec<_>>(),
        ),
        generator_cpu_pct: pick(&|r, _| r.generator_cpu_percent),
        peak_rss_mib: runs
            .iter()
            .map(|r| r.server.peak_rss_mib)
            .fold(0.0, f64::max),
        generator_bound_runs: runs.iter().filter(|r| r.generator_bound.is_some()).count() as u32,
        contended_runs: runs.iter().filter(|r| r.contended.is_some()).count() as u32,
        server_cpus_busy_pct: pick(&|r, _| r.cpu.server_cpus.busy_percent),
        user_cpu_us_per_request: None,
        system_cpu_us_per_request: None,
        syscalls_per_request: None,
        context_switches_per_request: None,
        instructions_per_request: None,
    }
}
