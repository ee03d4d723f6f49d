//! `brigade compare`: start the services on every runtime, load them the same way, and say which
//! runtime wins, by how much, at what CPU cost per request — or that the difference is noise, or
//! that the generator was the bottleneck.
//!
//! [`run`] is a list of phases, each a function of what the one before gave it:
//! 1. **plan** ([`crate::plan`]): the settings checked once — scenarios loaded, the CPUs split
//!    between the servers and the generator ([`pin`]), every runtime the same `--workers`, the
//!    isolated runs ordered so that verdicts can pair them (a cell's runs back to back, the
//!    runtime order rotating from cell to cell).
//! 2. **launch**: the reports' folder and the fresh state every run starts from ([`crate::state`]:
//!    for the embedded store with `--preload`, a data folder filled once per preload).
//! 3. **measure**: every isolated run on its own fresh server, pinned, on free ports, ready on
//!    every service ([`brigade_meter::servers`]: the contract), loaded and stopped ([`crate::measure`]),
//!    its CPU and memory sampled from `/proc` ([`brigade_meter::procstat`]); then side by side
//!    ([`crate::side`]), instruction counts and capacity searches ([`crate::capacity`]).
//! 4. **judge** ([`crate::judge`]): throughput, efficiency (server CPU µs per request),
//!    capacities, thresholds, the baseline, the notes.
//! 5. **render** ([`brigade_report`]): report.md, report.json, report.html.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::time::Instant;

use anyhow::Context;

use brigade_meter::pin;
use brigade_records::side::SideCell;
use brigade_report::{self as report, Report, RunRecord, ServerRecord};

use crate::judge::{judge, Evidence};
use crate::measure::{Bench, Served};
use crate::phases::{Phase, Phases};
use crate::plan::Plan;
use crate::settings::CompareSettings;
use crate::side::budget::Need;
use crate::state::FreshState;

/// Runs the whole comparison and writes the reports; returns the report. The phases in order:
/// plan → launch → measure → judge → render, each taking what the one before gave it.
pub fn run(settings: &CompareSettings) -> anyhow::Result<Report> {
    let began = Instant::now();
    let started_at = brigade_meter::clock::now_rfc3339();
    let plan = Plan::check(settings)?;
    plan.announce();
    // This thread is pinned to the generator's CPUs by `launch`; it gets all of its CPUs back at
    // the end.
    let _unpin = pin::Unpin::remember();
    let phases = Phases::default();
    let fresh = launch(&plan, &phases)?;
    let bench = bench(&plan, &fresh, &phases);
    // What the budget's second look asks of a level still open: the judge's rule, handed down so
    // that measuring never calls into the judging phase itself.
    let rule = plan.settings.rule;
    let need = |cell: &SideCell, max_rounds: u32| {
        crate::judge::rounds_to_decide(cell, &plan.settings.store, &rule, max_rounds)
    };
    let measured = measure(&plan, &bench, &need)?;
    let mut measurements = assemble(&plan, &fresh, measured, started_at, began);
    let judging = phases.timer(Phase::Judge);
    let judged = judge(&Evidence::measured(&measurements), &plan.settings.rule)?;
    drop(judging);
    measurements.phases = phases.report();
    measurements.wall_s = began.elapsed().as_secs_f64();
    let report = Report::new(measurements, judged.into_parts());
    let report = with_correctness(with_baseline(report, &plan.settings)?, &plan.settings)?;
    report::write_all(&report, &plan.settings.out_dir)?;
    Ok(report)
}

/// What every measured run shares: the plan's settings, CPUs and threads, and the fresh state.
fn bench<'a>(plan: &'a Plan<'_>, state: &'a FreshState, phases: &'a Phases) -> Bench<'a> {
    Bench {
        settings: &plan.settings,
        cpus: &plan.cpus,
        shape: plan.shape(),
        workers: plan.workers,
        threads: plan.threads,
        state,
        phases,
    }
}

/// What the measuring phase gives the report.
#[derive(Default)]
struct Measured {
    /// The isolated runs, in the order made.
    runs: Vec<RunRecord>,
    /// The side-by-side cells, with instruction counts where asked for.
    side_cells: Vec<SideCell>,
    /// `--slo`'s searches.
    slo_searches: Vec<brigade_slo::SloSearch>,
    /// Every server started, with what it said.
    servers: Vec<ServerRecord>,
    /// The worker count each runtime said it started with.
    workers_reported: BTreeMap<String, Option<u32>>,
    /// The server limits each runtime said it runs under.
    limits_reported: BTreeMap<String, Option<String>>,
    /// The services the servers announced (or were known to before they started).
    services: Option<Vec<String>>,
}

impl Measured {
    /// Takes in what a server said when it started; the first announcement of services is checked
    /// against the scenarios. `first_wins`: keep the figures a runtime's earlier servers gave.
    fn served(&mut self, plan: &Plan<'_>, served: &Served, first_wins: bool) -> anyhow::Result<()> {
        if self.services.is_none() {
            plan.check_services(&served.services)?;
            self.services = Some(served.services.clone());
        }
        let runtime = served.record.runtime.clone();
        if first_wins {
            self.workers_reported
                .entry(runtime.clone())
                .or_insert(served.workers);
            self.limits_reported
                .entry(runtime)
                .or_insert(served.limits.clone());
        } else {
            self.workers_reported
                .insert(runtime.clone(), served.workers);
            self.limits_reported.insert(runtime, served.limits.clone());
        }
        Ok(())
    }
}

/// The launching phase: the reports' folder, the fresh state every run starts from (an embedded
/// store's preloaded folders made once), and this thread moved onto the generator's CPUs.
fn launch(plan: &Plan<'_>, phases: &Phases) -> anyhow::Result<FreshState> {
    let _prepare = phases.timer(Phase::Prepare);
    let settings = &plan.settings;
    let logs = settings.out_dir.join("logs");
    std::fs::create_dir_all(&logs)
        .with_context(|| format!("Failed to create {}", settings.out_dir.display()))?;
    let mut fresh = FreshState::new(&settings.store);
    let template = bench(plan, &fresh, phases).server_template();
    fresh.prepare(&template, &settings.preloads, &logs)?;
    if let Some(generator) = plan.cpus.generator_mask() {
        // Everything this thread starts from now on (the sampler, the generator's helpers, the
        // copies of prepared folders) stays off the servers' CPUs; servers are pinned as they start.
        pin::pin_current_thread(generator)?;
    }
    Ok(fresh)
}

/// The measuring phase: the isolated runs, then side by side (at rates derived from them), the
/// instruction counts, and the capacity searches.
fn measure(plan: &Plan<'_>, bench: &Bench<'_>, need: &Need<'_>) -> anyhow::Result<Measured> {
    let mut measured = Measured {
        services: plan.services.clone(),
        ..Measured::default()
    };
    {
        let _isolated = bench.phases.timer(Phase::Isolated);
        measure_isolated(plan, bench, &mut measured)?;
    }
    let (cells, records) = side_by_side(plan, bench, &measured.runs, need);
    measured.side_cells = cells;
    measured.servers.extend(records);
    if plan.counts_instructions() {
        let _instructions = bench.phases.timer(Phase::Instructions);
        count_instructions(plan, bench, &mut measured.side_cells);
    }
    if let Some(slo) = plan.slo() {
        let _capacity = bench.phases.timer(Phase::Capacity);
        let first = measured.runs.len();
        let searched =
            crate::capacity::search_all(bench, slo, &plan.scenarios, &measured.runs, first);
        for served in &searched.served {
            measured.served(plan, served, true)?;
        }
        measured.slo_searches = searched.searches;
    }
    Ok(measured)
}

/// Every isolated run in the plan's order, each on a fresh server.
fn measure_isolated(
    plan: &Plan<'_>,
    bench: &Bench<'_>,
    measured: &mut Measured,
) -> anyhow::Result<()> {
    let settings = &plan.settings;
    for planned in &plan.runs {
        let index = measured.runs.len();
        let progress = format!(
            "[{}/{}] {} {} {} users, preload {} (repeat {})",
            index + 1,
            plan.runs.len(),
            settings.runtimes[planned.runtime],
            settings.scenarios[planned.scenario],
            planned.users,
            planned.preload,
            planned.repeat + 1
        );
        let scenario = &plan.scenarios[planned.scenario];
        let (record, served) = bench.run(index, planned, scenario, &progress);
        if let Some(served) = served {
            measured.served(plan, &served, false)?;
            measured.servers.push(served.record);
        }
        measured.runs.push(record);
        let _ = std::io::stdout().flush();
    }
    Ok(())
}

/// What was measured, with the plan's settings and set-up, as the report's parts.
fn assemble(
    plan: &Plan<'_>,
    fresh: &FreshState,
    measured: Measured,
    started_at: String,
    began: Instant,
) -> report::Measurements {
    let settings = &plan.settings;
    let mut state = fresh.setup(&settings.preloads);
    state.how = plan.fresh_words.clone();
    report::Measurements {
        started_at,
        wall_s: began.elapsed().as_secs_f64(),
        machine: brigade_load::machine::describe(),
        versions: versions(settings),
        threads: report::ThreadSetup {
            workers_reported: measured.workers_reported,
            limits_reported: measured.limits_reported,
            ..plan.thread_setup()
        },
        settings: plan.report_settings(measured.services),
        state,
        servers: measured.servers,
        runs: measured.runs,
        side_by_side: measured.side_cells,
        slo_searches: measured.slo_searches,
        phases: Vec::new(),
    }
}

/// `--baseline`: the report set against the saved ones, if any were given.
fn with_baseline(report: Report, settings: &CompareSettings) -> anyhow::Result<Report> {
    crate::baseline::against(report, &settings.baselines, &settings.rule)
}

/// The report with what the newest conformance study (or `--conformance-report`, or the one
/// `--conformance` runs now) found for its runtimes.
fn with_correctness(report: Report, settings: &CompareSettings) -> anyhow::Result<Report> {
    let ran = if settings.conformance {
        let binary = settings.launch.binary();
        Some(crate::correctness::run_study(
            binary,
            &settings.runtimes,
            &settings.out_dir,
        )?)
    } else {
        None
    };
    let asked = ran.as_deref().or(settings.conformance_report.as_deref());
    let found = crate::correctness::read(asked, &settings.runtimes)?;
    Ok(report.with_correctness(found))
}

/// Every cell side by side, in the order scenario, preload, users, each to its first look; then
/// the budget's rounds for the levels still open ([`crate::side::budget`]).
fn side_by_side(
    plan: &Plan<'_>,
    bench: &Bench<'_>,
    runs: &[RunRecord],
    need: &Need<'_>,
) -> (Vec<SideCell>, Vec<ServerRecord>) {
    let settings = &plan.settings;
    let mut cells = Vec::new();
    let mut records = Vec::new();
    let mut ran = Vec::new();
    for (index, cell) in plan.side_cells().iter().enumerate() {
        let (scenario, label) = (
            &plan.scenarios[cell.scenario],
            &settings.scenarios[cell.scenario],
        );
        let (users, preload) = (cell.users, cell.preload);
        let levels = side_levels(
            settings,
            runs,
            label,
            users,
            preload,
            plan.cpus.server.len(),
        );
        if levels.is_empty() {
            println!(
                "side by side {label} {users} users: skipped, no rate (its isolated runs \
                 measured nothing; give --side-by-side-rates)"
            );
            continue;
        }
        let mut cell_plan = crate::side::CellPlan {
            scenario,
            label,
            users,
            preload,
            levels,
            index,
        };
        let (more, started) = crate::side::run_cell(bench, &mut cell_plan);
        let first = cells.len();
        cells.extend(more);
        ran.push((cell_plan, first..cells.len()));
        records.extend(started);
        let _ = std::io::stdout().flush();
    }
    records.extend(crate::side::budget::spend(bench, &ran, &mut cells, need));
    (cells, records)
}

/// `--instructions`: every runtime's instructions per request on every scenario (at the first user
/// count), written into that scenario's side-by-side rows.
fn count_instructions(plan: &Plan<'_>, bench: &Bench<'_>, side_cells: &mut [SideCell]) {
    let (settings, scenarios) = (&plan.settings, &plan.scenarios);
    let users = settings.users.first().copied().unwrap_or(1);
    for (label, scenario) in settings.scenarios.iter().zip(scenarios) {
        for runtime in &settings.runtimes {
            println!("instructions: {runtime} on {label} under callgrind…");
            let counted = crate::side::instructions::count(bench, scenario, runtime, users);
            let _ = std::io::stdout().flush();
            for cell in side_cells.iter_mut().filter(|c| &c.scenario == label) {
                for row in cell.runtimes.iter_mut().filter(|r| &r.runtime == runtime) {
                    match &counted {
                        Ok(c) => {
                            row.instructions_per_request = Some(c.per_request);
                            row.instructions_spread_pct = Some(c.spread_pct);
                        }
                        Err(err) => {
                            let note = format!("instructions not measured: {err:#}");
                            row.counts_note = Some(match row.counts_note.take() {
                                Some(n) => format!("{n}; {note}"),
                                None => note,
                            });
                        }
                    }
                }
            }
            match counted {
                Ok(c) => println!(
                    "instructions: {runtime} on {label}: {:.0} per request (two samples {:.1}% apart)",
                    c.per_request, c.spread_pct
                ),
                Err(err) => println!("instructions: {runtime} on {label}: not measured: {err:#}"),
            }
        }
    }
}

/// The side-by-side load levels of a cell: the rates given, or shares of the server CPUs derived
/// from the cell's isolated runs (each runtime's median CPU per request and hits/s).
fn side_levels(
    settings: &CompareSettings,
    runs: &[RunRecord],
    scenario: &str,
    users: u32,
    preload: u64,
    server_cpus: usize,
) -> Vec<brigade_records::side::Level> {
    if let Some(rates) = &settings.side.rates {
        return rates
            .iter()
            .map(|&rate| brigade_records::side::Level {
                label: format!("{}/s", report::rate_words(rate)),
                rate_per_s: rate,
                from: "given (--side-by-side-rates)".to_owned(),
                share: None,
                cap_per_s: rate,
            })
            .collect();
    }
    let mut isolated = Vec::new();
    for runtime in &settings.runtimes {
        let mine: Vec<&RunRecord> = runs
            .iter()
            .filter(|r| {
                &r.runtime == runtime
                    && r.scenario == scenario
                    && r.users == users
                    && r.preload == preload
            })
            .collect();
        let costs: Vec<f64> = mine
            .iter()
            .filter_map(|r| r.server_cpu_us_per_request())
            .collect();
        let hits: Vec<f64> = mine.iter().filter_map(|r| r.ok_per_s()).collect();
        if costs.is_empty() || hits.is_empty() {
            return Vec::new();
        }
        isolated.push((brigade_stats::median(&costs), brigade_stats::median(&hits)));
    }
    crate::side::aim::level_rates(&settings.side.levels, server_cpus, &isolated)
}

/// Versions of everything measured.
fn versions(settings: &CompareSettings) -> report::Versions {
    let runtimes = settings
        .server_info
        .runtimes
        .iter()
        .filter(|r| settings.runtimes.contains(&r.name))
        .map(|r| (r.name.clone(), r.describe_over(settings.wire.protocol)))
        .collect();
    if !settings.external.is_empty() {
        // Their versions are theirs to say; compare ran no binary of its own.
        return report::setup::build_versions();
    }
    let binary = settings.launch.binary();
    report::Versions {
        runtimes,
        server_binary: binary.display().to_string(),
        server_binary_version: brigade_meter::servers::binary_version(binary),
        ..report::setup::build_versions()
    }
}
