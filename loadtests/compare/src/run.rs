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
//!    Each run starts its own server (`brigade serve --service all`) on a fresh, identical store
//!    state ([`state`]), pinned, on free ports, waits for `/ready` ([`servers`]), loads it, and
//!    stops it ([`measure`]). The order of runs therefore cannot move a result, and no idle server
//!    shares the measured one's CPUs.
//! 4. While each run is measured, sample the server's and the generator's CPU and memory from
//!    `/proc` ([`procstat`]); flag runs where the generator, not the server, was saturated.
//! 5. Judge ([`verdict`]) throughput and efficiency (server CPU µs per request), and write the
//!    reports.

pub mod cli;
pub mod measure;
pub mod pin;
pub mod plan;
pub mod procstat;
pub mod servers;
pub mod state;
pub mod verdict;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::report::{self, CellVerdict, Report, RunRecord, ScenarioVerdict, ServerRecord};
use crate::scenario::Scenario;
use measure::Bench;
use pin::CpuPlan;
use state::FreshState;
use verdict::{CellAt, CpuShape, Measure, RuntimeFigures};

/// How often `/proc` is sampled during a run.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// How long a server has to exit after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Seconds of fixture setup and bookkeeping a run costs beyond warm-up and measurement (estimates).
const RUN_OVERHEAD_S: f64 = 0.3;

/// Seconds to start and stop one server process (estimates).
const START_OVERHEAD_S: f64 = 0.6;

/// Documents per second a server preloads at start-up, all collections together (a rough
/// estimate for the time estimate; a release build on the memory store).
const PRELOAD_PER_S: f64 = 300_000.0;

/// How runs are ordered and servers kept, in words, for the report.
const INTERLEAVING: &str = "a fresh server per run; the runs of each cell (scenario × users × \
    preload) made back to back, one per runtime, the runtime order rotating by one from cell to \
    cell and on into the next repeat";

/// Everything a comparison needs, resolved from the command line.
#[derive(Debug, Clone)]
pub struct CompareSettings {
    /// The `brigade` binary to start the servers with.
    pub binary: PathBuf,
    /// Runtimes to compare.
    pub runtimes: Vec<String>,
    /// Store kind for every service.
    pub store: String,
    /// MongoDB URI for `--store mongo`.
    pub mongodb_uri: Option<String>,
    /// Scenarios (built-in names or TOML files).
    pub scenarios: Vec<String>,
    /// Closed-loop user counts.
    pub users: Vec<u32>,
    /// Documents per collection preloaded before the fixtures (`[0]`: none).
    pub preloads: Vec<u64>,
    /// Measured time per run.
    pub duration: Duration,
    /// Warm-up per run.
    pub warmup: Duration,
    /// Runs per cell.
    pub repeat: u32,
    /// `--workers` for the servers (default: the number of server CPUs).
    pub workers: Option<u32>,
    /// Generator threads (default: the number of generator CPUs).
    pub threads: Option<u32>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Differences under this percentage are ties.
    pub noise_floor_pct: f64,
    /// How to split the CPUs.
    pub cpus: CpuChoice,
    /// Where the reports and logs go.
    pub out_dir: PathBuf,
    /// Whether `--quick` chose the defaults.
    pub quick: bool,
    /// Whether to show the generator's progress bar.
    pub progress: bool,
    /// The command line, for the report.
    pub command_line: String,
}

/// How the CPUs are split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuChoice {
    /// Half and half (see [`CpuPlan::split`]).
    Auto,
    /// Nothing pinned.
    NoPin,
    /// These CPUs for the servers, those for the generator.
    Explicit {
        /// Server CPUs.
        server: Vec<usize>,
        /// Generator CPUs.
        generator: Vec<usize>,
    },
}

impl CompareSettings {
    /// Number of load runs the settings ask for.
    pub fn run_count(&self) -> usize {
        self.runtimes.len()
            * self.scenarios.len()
            * self.users.len()
            * self.preloads.len()
            * self.repeat as usize
    }

    /// A rough wall-clock estimate, seconds.
    pub fn estimate_s(&self) -> f64 {
        let per_run = self.duration.as_secs_f64()
            + self.warmup.as_secs_f64()
            + RUN_OVERHEAD_S
            + START_OVERHEAD_S;
        // Every run pays its preload at start-up, except on the embedded store, which fills a
        // folder once per preload and copies it.
        let documents: f64 = self.preloads.iter().map(|&n| n as f64 * 3.0).sum();
        let fills = if self.store == "embedded" {
            documents
        } else {
            documents * (self.run_count() / self.preloads.len().max(1)) as f64
        };
        self.run_count() as f64 * per_run + fills / PRELOAD_PER_S
    }
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
            Scenario::load(name).with_context(|| format!("Failed to load scenario {name:?}"))
        })
        .collect::<anyhow::Result<_>>()?;
    for scenario in &scenarios {
        for service in scenario.services() {
            if !servers::ALL_SERVICES.contains(&service.as_str()) {
                bail!(
                    "scenario {} targets service {service:?}, which `brigade serve --service all` does \
                     not start ({})",
                    scenario.name(),
                    servers::ALL_SERVICES.join(", ")
                );
            }
        }
    }

    let available = pin::available_cpus();
    let cpus = match &settings.cpus {
        CpuChoice::Auto => CpuPlan::split(&available),
        CpuChoice::NoPin => CpuPlan::unpinned(&available),
        CpuChoice::Explicit { server, generator } => {
            CpuPlan::explicit(&available, server, generator)?
        }
    };
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
    println!(
        "CPUs: {}; every runtime --workers {workers}; generator {threads} thread(s)",
        cpus.note
    );
    println!(
        "Fresh state: {}",
        FreshState::describe(&settings.store, &settings.preloads)
    );
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
    let mut runs: Vec<RunRecord> = Vec::new();
    let planned = plan::plan(
        settings.runtimes.len(),
        settings.scenarios.len(),
        &settings.users,
        &settings.preloads,
        settings.repeat,
    );
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
        let (record, server) = bench.run(index, planned, &scenarios[planned.scenario], &progress);
        if let Some((server, workers)) = server {
            // The worker count each runtime said it started with (the same for all its runs).
            workers_reported.insert(server.runtime.clone(), workers);
            server_records.push(server);
        }
        runs.push(record);
        let _ = std::io::stdout().flush();
    }

    let preloads = &settings.preloads;
    let rows = report::rows(
        &runs,
        &settings.scenarios,
        &settings.users,
        preloads,
        &settings.runtimes,
    );
    let (cells, scenario_verdicts) = judge(
        &runs,
        &settings.scenarios,
        &settings.users,
        preloads,
        &settings.runtimes,
        settings.noise_floor_pct,
    );
    let state = fresh.setup(preloads);
    let mut report = Report {
        started_at,
        wall_s: 0.0,
        machine: crate::machine::describe(),
        versions: versions(settings),
        threads: report::ThreadSetup {
            cpus,
            server_workers: workers,
            workers_reported,
            generator_threads: threads,
        },
        settings: report::Settings {
            runtimes: settings.runtimes.clone(),
            store: settings.store.clone(),
            scenarios: settings.scenarios.clone(),
            users: settings.users.clone(),
            preloads: preloads.clone(),
            duration_s: settings.duration.as_secs_f64(),
            warmup_s: settings.warmup.as_secs_f64(),
            repeat: settings.repeat,
            noise_floor_pct: settings.noise_floor_pct,
            timeout_ms: settings.timeout.as_millis() as u64,
            quick: settings.quick,
            interleaving: INTERLEAVING.to_owned(),
            command_line: settings.command_line.clone(),
        },
        state,
        servers: server_records,
        runs,
        rows,
        cells,
        scenarios: scenario_verdicts,
        notes: Vec::new(),
    };
    report.notes = notes(&report);
    report.wall_s = began.elapsed().as_secs_f64();
    report::write_all(&report, &settings.out_dir)?;
    Ok(report)
}

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
fn notes(report: &Report) -> Vec<String> {
    let mut notes = Vec::new();
    let t = &report.threads;
    if !t.cpus.pinned {
        notes.push(
            "Servers and generator shared the CPUs (nothing pinned): they competed for them, and \
             generator-bound runs are detected only roughly."
                .to_owned(),
        );
    }
    if report.machine.cores <= 4 {
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

/// Versions of everything measured.
fn versions(settings: &CompareSettings) -> report::Versions {
    let runtimes = servers::describe_runtimes(&settings.binary)
        .unwrap_or_default()
        .into_iter()
        .filter(|(name, _)| settings.runtimes.contains(name))
        .collect();
    report::Versions {
        runtimes,
        server_binary: settings.binary.display().to_string(),
        server_binary_version: servers::binary_version(&settings.binary),
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

    fn settings(store: &str, preloads: Vec<u64>, repeat: u32) -> CompareSettings {
        CompareSettings {
            binary: "brigade".into(),
            runtimes: vec!["a".into(), "b".into(), "c".into()],
            store: store.into(),
            mongodb_uri: None,
            scenarios: vec!["s".into(), "t".into()],
            users: vec![10, 20],
            preloads,
            duration: Duration::from_secs(1),
            warmup: Duration::ZERO,
            repeat,
            workers: None,
            threads: None,
            timeout: Duration::from_secs(1),
            noise_floor_pct: 5.0,
            cpus: CpuChoice::Auto,
            out_dir: "out".into(),
            quick: false,
            progress: false,
            command_line: String::new(),
        }
    }

    #[test]
    fn the_estimate_counts_every_run_and_every_preload_fill() {
        let s = settings("memory", vec![0], 1);
        assert_eq!(s.run_count(), 12);
        assert!(s.estimate_s() >= 12.0);
        // Memory fills at every start, embedded once per preload.
        let memory = settings("memory", vec![0, 1_000_000], 1);
        let embedded = settings("embedded", vec![0, 1_000_000], 1);
        assert_eq!(memory.run_count(), 24);
        assert!(memory.estimate_s() > embedded.estimate_s() + 60.0);
    }
}
