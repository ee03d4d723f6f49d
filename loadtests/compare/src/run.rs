//! `brigade compare`: start the services on every runtime, load them the same way, and say which
//! runtime wins, by how much, at what CPU cost per request — or that the difference is noise, or
//! that the generator was the bottleneck.
//!
//! The plan, in order:
//! 1. Split the CPUs between the servers and the generator ([`pin`]); every runtime gets the same
//!    `--workers` (the number of server CPUs unless told) and the same CPUs.
//! 2. For the embedded store with `--preload`, fill a data folder once per preload ([`state`]).
//! 3. Make every run — runtime × scenario × users × preload × repeat — in an order that pairs them
//!    ([`plan`]): the runs of a cell back to back, the runtime order rotating from cell to cell.
//!    Each run starts its own server (the binary's standard `serve --service all`, or the
//!    `--server-command` template) on a fresh, identical store state ([`state`]), pinned, on free
//!    ports, learns its services from its announcements and waits for `/ready` on each
//!    ([`servers`]: the contract), loads it, and stops it ([`measure`]). The order of runs therefore cannot move a result, and no idle server
//!    shares the measured one's CPUs.
//! 4. While each run is measured, sample the server's and the generator's CPU and memory from
//!    `/proc` ([`procstat`]); flag runs where the generator, not the server, was saturated.
//! 5. Judge ([`verdict`]) throughput and efficiency (server CPU µs per request), and write the
//!    reports.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::time::Instant;

use anyhow::{bail, Context};
use brigade_load::scenario::Scenario;
use brigade_load::Registry;

use crate::judge::{judge, notes};
use crate::measure::Bench;
use crate::pin;
use crate::report::{self, Report, RunRecord, ServerRecord};
use crate::settings::CompareSettings;
use crate::state::FreshState;
use crate::verdict::CpuShape;
use crate::{plan, servers};

pub use brigade_bench::servers::STOP_GRACE;

/// How runs are ordered and servers kept, in words, for the report.
const INTERLEAVING: &str =
    "isolated runs: a fresh server per run; the runs of each cell (scenario × users × \
    preload) made back to back, one per runtime, the runtime order rotating by one from cell to \
    cell and on into the next repeat";

/// The names the report gives the scenarios asked for by `args`: a registered name stays, a file
/// becomes the `name` it declares (unless two would share a name); `None` when nothing changes.
fn scenario_labels(
    args: &[String],
    scenarios: &[Scenario],
    registry: &Registry,
) -> Option<Vec<String>> {
    let labels: Vec<String> = args
        .iter()
        .zip(scenarios)
        .map(|(arg, scenario)| match registry.toml(arg) {
            Some(_) => arg.clone(),
            None => scenario.name().to_owned(),
        })
        .collect();
    let distinct: std::collections::BTreeSet<&String> = labels.iter().collect();
    (labels != args && distinct.len() == labels.len()).then_some(labels)
}

/// Runs the whole comparison and writes the reports; returns the report.
pub fn run(settings: &CompareSettings) -> anyhow::Result<Report> {
    let began = Instant::now();
    let started_at = now_rfc3339();
    if settings.runtimes.is_empty()
        || settings.scenarios.is_empty()
        || settings.users.is_empty()
        || settings.preloads.is_empty()
    {
        bail!("nothing to compare: give at least one runtime, scenario, user count and preload");
    }
    if settings.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    let scenarios: Vec<Scenario> = settings
        .scenarios
        .iter()
        .map(|name| {
            settings
                .registry
                .load(name)
                .with_context(|| format!("Failed to load scenario {name:?}"))
        })
        .collect::<anyhow::Result<_>>()?;
    // A scenario given as a file is reported under the name its file gives it, not its path.
    let relabeled;
    let settings = match scenario_labels(&settings.scenarios, &scenarios, &settings.registry) {
        Some(labels) => {
            relabeled = CompareSettings {
                scenarios: labels,
                ..settings.clone()
            };
            &relabeled
        }
        None => settings,
    };
    // The services come from the server: from its `runtimes --json` now when it says, else from
    // the first server's announcements; a scenario naming another service is refused either way.
    let mut services = settings.expected_services();
    if let Some(known) = &services {
        check_scenarios(&scenarios, known)?;
    }
    // Servers compare did not start: all of them ready and serving the runtime they are listed
    // under before the first run, and every scenario's services among theirs.
    let external_stores = crate::external::check_all(&settings.external)?;
    for external in &settings.external {
        check_scenarios(&scenarios, &external.services.names())?;
    }
    if settings.external.iter().any(|e| e.cgroups.is_empty()) {
        println!(
            "Side by side: skipped — an external runtime without --external-cgroup has no CPU \
             counter fine enough for 1-second windows (its /metrics count 10 ms ticks)"
        );
    }
    let fresh_words = if settings.external.is_empty() {
        FreshState::describe(&settings.store, &settings.preloads)
    } else {
        crate::external::STATE.to_owned()
    };

    let available = pin::available_cpus();
    // This thread is pinned to the generator's CPUs below; it gets all of its CPUs back at the end.
    let _unpin = pin::Unpin::remember();
    let cpus = settings.cpus.plan(&available)?;
    let workers = settings.workers.unwrap_or(cpus.server.len().max(1) as u32);
    let threads = settings
        .threads
        .unwrap_or(cpus.generator.len().max(1) as u32);
    let shape = CpuShape {
        generator_cpus: cpus.generator.len(),
        server_cpus: cpus.server.len(),
        pinned: cpus.pinned,
    };

    let logs = settings.out_dir.join("logs");
    std::fs::create_dir_all(&logs)
        .with_context(|| format!("Failed to create {}", settings.out_dir.display()))?;
    let estimate = settings.estimate_s();
    if settings.isolated || settings.slo.is_none() {
        println!(
            "brigade compare: {} runtimes × {} scenarios × {} user counts × {} preload(s) × {} \
             repeat(s) = {} runs of {} s (+{} s warm-up), each on a fresh server; about {} min {} s",
            settings.runtimes.len(),
            settings.scenarios.len(),
            settings.users.len(),
            settings.preloads.len(),
            settings.repeat,
            settings.run_count(),
            settings.duration.as_secs_f64(),
            settings.warmup.as_secs_f64(),
            estimate as u64 / 60,
            estimate as u64 % 60
        );
    } else {
        println!(
            "brigade compare --slo: {} runtimes × {} scenarios × {} user counts × {} preload(s), \
             one search each; about {} min {} s",
            settings.runtimes.len(),
            settings.scenarios.len(),
            settings.users.len(),
            settings.preloads.len(),
            estimate as u64 / 60,
            estimate as u64 % 60
        );
    }
    if let Some(plan) = &settings.slo {
        println!(
            "SLO search at {}: every runtime × scenario × users × preload, steps of {} s (+{} s \
             warm-up) on a fresh server each, bracket to {}%, {} confirmation(s) of {} windows",
            plan.args.slo.join(", "),
            settings.duration.as_secs_f64(),
            settings.warmup.as_secs_f64(),
            plan.args.slo_precision,
            plan.args.slo_repeats,
            plan.args.slo_confirm
        );
    }
    println!(
        "CPUs: {}; every runtime --workers {workers}; generator {threads} thread(s)",
        cpus.note
    );
    println!("Fresh state: {fresh_words}");
    println!("Reports and server logs: {}", settings.out_dir.display());

    let mut fresh = FreshState::new(&settings.store);
    {
        let bench = Bench {
            settings,
            cpus: &cpus,
            shape,
            workers,
            threads,
            state: &fresh,
        };
        let template = bench.server_template();
        fresh.prepare(&template, &settings.preloads, &logs)?;
    }
    if let Some(generator) = cpus.generator_mask() {
        // Everything this thread starts from now on (the sampler, the generator's helpers, the
        // copies of prepared folders) stays off the servers' CPUs; servers are pinned as they start.
        pin::pin_current_thread(generator)?;
    }
    let bench = Bench {
        settings,
        cpus: &cpus,
        shape,
        workers,
        threads,
        state: &fresh,
    };

    let mut server_records: Vec<ServerRecord> = Vec::new();
    let mut workers_reported: BTreeMap<String, Option<u32>> = BTreeMap::new();
    let mut limits_reported: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut runs: Vec<RunRecord> = Vec::new();
    let planned = if settings.isolated {
        plan::plan(
            settings.runtimes.len(),
            settings.scenarios.len(),
            &settings.users,
            &settings.preloads,
            settings.repeat,
        )
    } else {
        Vec::new()
    };
    let total_runs = planned.len();
    for planned in &planned {
        let index = runs.len();
        let progress = format!(
            "[{}/{}] {} {} {} users, preload {} (repeat {})",
            index + 1,
            total_runs,
            settings.runtimes[planned.runtime],
            settings.scenarios[planned.scenario],
            planned.users,
            planned.preload,
            planned.repeat + 1
        );
        let (record, served) = bench.run(index, planned, &scenarios[planned.scenario], &progress);
        if let Some(served) = served {
            if services.is_none() {
                check_scenarios(&scenarios, &served.services)?;
                services = Some(served.services.clone());
            }
            // The worker count each runtime said it started with (the same for all its runs).
            workers_reported.insert(served.record.runtime.clone(), served.workers);
            limits_reported.insert(served.record.runtime.clone(), served.limits.clone());
            server_records.push(served.record);
        }
        runs.push(record);
        let _ = std::io::stdout().flush();
    }

    // Side by side: every runtime at once per cell, at rates derived from its isolated runs.
    let mut side_cells = Vec::new();
    if settings.side.enabled {
        let (cells, records) = side_by_side(&bench, &scenarios, &runs);
        side_cells = cells;
        server_records.extend(records);
    }

    if settings.side.instructions && settings.external.is_empty() {
        count_instructions(&bench, settings, &scenarios, &mut side_cells);
    }

    // --slo: every runtime's capacity at the SLOs, searched step by step, interleaved.
    let mut slo_searches = Vec::new();
    if let Some(plan) = &settings.slo {
        let searched = crate::capacity::search_all(&bench, plan, &scenarios, &runs, runs.len());
        for served in searched.served {
            if services.is_none() {
                check_scenarios(&scenarios, &served.services)?;
                services = Some(served.services.clone());
            }
            let runtime = served.record.runtime.clone();
            workers_reported
                .entry(runtime.clone())
                .or_insert(served.workers);
            limits_reported
                .entry(runtime)
                .or_insert(served.limits.clone());
        }
        slo_searches = searched.searches;
    }

    let preloads = &settings.preloads;
    let mut rows = report::rows(
        &runs,
        &settings.scenarios,
        &settings.users,
        preloads,
        &settings.runtimes,
    );
    report::add_breakdown(&mut rows, &side_cells);
    let mut state = fresh.setup(preloads);
    state.how = fresh_words;
    let mut report = Report {
        started_at,
        wall_s: 0.0,
        machine: brigade_load::machine::describe(),
        versions: versions(settings),
        threads: report::ThreadSetup {
            cpus,
            server_workers: workers,
            workers_reported,
            limits_reported,
            generator_threads: threads,
        },
        settings: report::Settings {
            runtimes: settings.runtimes.clone(),
            store: if settings.external.is_empty() || external_stores.is_empty() {
                settings.store.clone()
            } else {
                external_stores.join(", ")
            },
            scenarios: settings.scenarios.clone(),
            users: settings.users.clone(),
            preloads: preloads.clone(),
            duration_s: settings.duration.as_secs_f64(),
            warmup_s: settings.warmup.as_secs_f64(),
            repeat: if settings.isolated {
                settings.repeat
            } else {
                0
            },
            rule: settings.rule,
            side_by_side: settings.side.enabled.then(|| report::SideSetup {
                levels: settings.side.levels.clone(),
                rates: settings.side.rates.clone(),
                windows: settings.side.windows,
                window_s: settings.side.window_s,
                warmup_s: settings.side.warmup.as_secs_f64(),
                count_s: settings.side.count_s,
                budget_s: settings.side.budget.as_secs_f64(),
            }),
            handicaps: settings.handicaps.clone(),
            timeout_ms: settings.timeout.as_millis() as u64,
            quick: settings.quick,
            interleaving: if settings.external.is_empty() {
                INTERLEAVING.to_owned()
            } else {
                INTERLEAVING.replacen(
                    "a fresh server per run",
                    "the same servers for every run (--external)",
                    1,
                )
            },
            command_line: settings.command_line.clone(),
            services: services.unwrap_or_default(),
            server_command: if settings.external.is_empty() {
                settings.launch.describe()
            } else {
                crate::external::server_words(&settings.external, &external_stores)
            },
            keepalive: settings.keepalive,
            protocol: settings.wire.protocol,
            streams: settings.wire.effective_streams(),
            rate: settings.rate,
            seed: Some(settings.seed),
            thresholds: settings
                .thresholds
                .iter()
                .map(ToString::to_string)
                .collect(),
            external: !settings.external.is_empty(),
            slo: crate::capacity::setup(settings),
            setup_notes: settings
                .setup_notes
                .iter()
                .map(|(label, text)| report::setup::SetupLine {
                    label: label.clone(),
                    text: text.clone(),
                })
                .collect(),
        },
        state,
        servers: server_records,
        runs,
        rows,
        cells: Vec::new(),
        scenarios: Vec::new(),
        side_by_side: side_cells,
        comparisons: Vec::new(),
        pairs: Vec::new(),
        notes: Vec::new(),
        threshold_checks: Vec::new(),
        baseline: None,
        slo_searches,
    };
    let judged = judge(
        &report.runs,
        &report.side_by_side,
        &report.settings,
        &settings.rule,
    );
    report.cells = judged.cells;
    report.scenarios = judged.scenarios;
    report.comparisons = judged.comparisons;
    report.pairs =
        crate::judge::judge_pairs(&report.side_by_side, &report.settings.store, &settings.rule);
    crate::judge::judge_capacity(&mut report, &settings.rule);
    report.threshold_checks = report::check_thresholds(&report.runs, &settings.thresholds);
    if let Some(path) = &settings.baseline {
        let before = crate::baseline::read(path)
            .with_context(|| format!("--baseline {}", path.display()))?;
        report.baseline = Some(crate::baseline::compare(
            &report,
            &before,
            path,
            &settings.rule,
        ));
    }
    report.notes = notes(&report);
    report.wall_s = began.elapsed().as_secs_f64();
    report::write_all(&report, &settings.out_dir)?;
    Ok(report)
}

/// Every cell side by side, in the order scenario, preload, users; the budget for undecided levels
/// shared out as the cells go.
fn side_by_side(
    bench: &Bench<'_>,
    scenarios: &[Scenario],
    runs: &[RunRecord],
) -> (Vec<crate::side::SideCell>, Vec<ServerRecord>) {
    let settings = bench.settings;
    let mut budget_left = settings.side.budget;
    let mut cells = Vec::new();
    let mut records = Vec::new();
    let cell_count = scenarios.len() * settings.preloads.len() * settings.users.len();
    let mut index = 0;
    for (scenario, label) in scenarios.iter().zip(&settings.scenarios) {
        for &preload in &settings.preloads {
            for &users in &settings.users {
                index += 1;
                let server_cpus = bench.cpus.server.len();
                let levels = side_levels(settings, runs, label, users, preload, server_cpus);
                if levels.is_empty() {
                    println!(
                        "side by side {label} {users} users: skipped, no rate (its isolated runs \
                         measured nothing; give --side-by-side-rates)"
                    );
                    continue;
                }
                let plan = crate::side::CellPlan {
                    scenario,
                    label,
                    users,
                    preload,
                    levels,
                    index: index - 1,
                    cells_left: cell_count + 1 - index,
                };
                let store = settings.store.clone();
                let rule = settings.rule;
                let decided = move |cell: &crate::side::SideCell| {
                    crate::judge::level_decided(cell, &store, &rule)
                };
                let (more, started) =
                    crate::side::run_cell(bench, &plan, &mut budget_left, &decided);
                cells.extend(more);
                records.extend(started);
                let _ = std::io::stdout().flush();
            }
        }
    }
    (cells, records)
}

/// `--instructions`: every runtime's instructions per request on every scenario (at the first user
/// count), written into that scenario's side-by-side rows.
fn count_instructions(
    bench: &Bench<'_>,
    settings: &CompareSettings,
    scenarios: &[Scenario],
    side_cells: &mut [crate::side::SideCell],
) {
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
) -> Vec<crate::side::Level> {
    if let Some(rates) = &settings.side.rates {
        return rates
            .iter()
            .map(|&rate| crate::side::Level {
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
        isolated.push((
            crate::verdict::median(&costs),
            crate::verdict::median(&hits),
        ));
    }
    crate::side::level_rates(&settings.side.levels, server_cpus, &isolated)
}

/// Refuses the comparison when a scenario talks to a service the server does not announce.
fn check_scenarios(scenarios: &[Scenario], services: &[String]) -> anyhow::Result<()> {
    for scenario in scenarios {
        servers::announce::refuse_unknown(services, scenario.label(), &scenario.services())?;
    }
    Ok(())
}

/// Versions of everything measured.
fn versions(settings: &CompareSettings) -> report::Versions {
    let runtimes = settings
        .server_info
        .runtimes
        .iter()
        .filter(|r| settings.runtimes.contains(&r.name))
        .map(|r| (r.name.clone(), r.describe()))
        .collect();
    if !settings.external.is_empty() {
        // Their versions are theirs to say; compare ran no binary of its own.
        return report::setup::build_versions();
    }
    let binary = settings.launch.binary();
    report::Versions {
        runtimes,
        server_binary: binary.display().to_string(),
        server_binary_version: servers::binary_version(binary),
        ..report::setup::build_versions()
    }
}

/// Now, as RFC 3339 in UTC.
fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    now.replace_nanosecond(0)
        .unwrap_or(now)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &std::path::Path, stem: &str, name: &str) -> String {
        let path = dir.join(format!("{stem}.toml"));
        std::fs::write(
            &path,
            format!("name = \"{name}\"\n[[request]]\npath = \"/\"\n"),
        )
        .unwrap();
        path.to_string_lossy().into_owned()
    }

    #[test]
    fn a_scenario_file_is_reported_under_its_declared_name_unless_two_would_clash() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::new();
        let load = |args: &[String]| -> Vec<Scenario> {
            args.iter().map(|a| registry.load(a).unwrap()).collect()
        };
        let args = vec!["hello".to_owned(), file(dir.path(), "a", "mine")];
        assert_eq!(
            scenario_labels(&args, &load(&args), &registry),
            Some(vec!["hello".to_owned(), "mine".to_owned()])
        );
        // Registered names alone: nothing to change.
        let args = vec!["hello".to_owned()];
        assert_eq!(scenario_labels(&args, &load(&args), &registry), None);
        // Two files declaring one name keep their paths, so their rows stay apart.
        let args = vec![file(dir.path(), "b", "same"), file(dir.path(), "c", "same")];
        assert_eq!(scenario_labels(&args, &load(&args), &registry), None);
    }
}
