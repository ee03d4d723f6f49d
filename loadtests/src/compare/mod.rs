//! `brigade compare`: start the services on every runtime, load them the same way, and say which
//! runtime wins, by how much, at what CPU and memory cost — or that the difference is noise, or that
//! the generator was the bottleneck.
//!
//! The plan, in order:
//! 1. Split the CPUs between the servers and the generator ([`pin`]); every runtime gets the same
//!    `--workers` (the number of server CPUs unless told) and the same CPUs.
//! 2. Start each runtime's services as one child process (`brigade serve --service all`), on free
//!    ports, with a fresh data folder, pinned, and wait for `/ready` ([`servers`]).
//! 3. Run every scenario at every user count on every runtime, `--repeat` times, interleaved so that
//!    drift in the machine hits every runtime alike: with the embedded or memory store all runtimes'
//!    servers run at once (idle ones sleep) and are loaded one at a time, the order rotating from
//!    one cell to the next; with MongoDB, whose databases the runtimes would share, one runtime's
//!    server runs at a time, each repeat being one round over the runtimes in a rotated order.
//! 4. While each run is measured, sample the server's and the generator's CPU and memory from
//!    `/proc` ([`procstat`]); flag runs where the generator, not the server, was saturated.
//! 5. Stop the servers (SIGTERM, then SIGKILL), judge ([`verdict`]) and write the reports.

pub mod cli;
pub mod pin;
pub mod procstat;
pub mod servers;
pub mod verdict;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::engine::{self, LoadConfig};
use crate::report::{self, CellVerdict, Report, RunRecord, ScenarioVerdict, ServerRecord};
use crate::scenario::Scenario;
use pin::CpuPlan;
use procstat::{ProcSeries, ProcUsage, Sampler};
use servers::{ServerProcess, ServerSpec};
use verdict::{CpuShape, RunCpu, RuntimeFigures};

/// How often `/proc` is sampled during a run.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// How long a server may take to start and answer `/ready`.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a server has to exit after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Seconds of fixture setup and bookkeeping a run costs beyond warm-up and measurement (estimates).
const RUN_OVERHEAD_S: f64 = 0.3;

/// Seconds to start one server process (estimates).
const START_OVERHEAD_S: f64 = 0.5;

/// How servers are kept while runs are interleaved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interleave {
    /// All runtimes' servers run at once on different ports; one is loaded at a time, the runtime
    /// order rotating from cell to cell.
    Together,
    /// One runtime's server at a time: each repeat is a round over the runtimes (rotated), each
    /// server started fresh for its round and stopped after it.
    OneAtATime,
}

impl Interleave {
    fn describe(self) -> &'static str {
        match self {
            Interleave::Together => {
                "all runtimes' servers run at once (each with its own ports and data folder); they \
                 are loaded one at a time, runtime by runtime for each scenario and user count, the \
                 order rotating by one from cell to cell and repeat to repeat"
            }
            Interleave::OneAtATime => {
                "one runtime's server at a time: each repeat is a round over the runtimes (order \
                 rotated each round), every server started fresh for its round and stopped after"
            }
        }
    }
}

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
    /// How to interleave (default: together, or one at a time for mongo).
    pub interleave: Interleave,
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
        self.runtimes.len() * self.scenarios.len() * self.users.len() * self.repeat as usize
    }

    /// A rough wall-clock estimate, seconds.
    pub fn estimate_s(&self) -> f64 {
        let per_run = self.duration.as_secs_f64() + self.warmup.as_secs_f64() + RUN_OVERHEAD_S;
        let starts = match self.interleave {
            Interleave::Together => self.runtimes.len(),
            Interleave::OneAtATime => self.runtimes.len() * self.repeat as usize,
        };
        self.run_count() as f64 * per_run + starts as f64 * START_OVERHEAD_S
    }
}

/// One run to make.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Planned {
    repeat: u32,
    runtime: usize,
    scenario: usize,
    users: u32,
}

/// Rotates `0..n` left by `by`.
fn rotated(n: usize, by: usize) -> impl Iterator<Item = usize> {
    (0..n).map(move |i| (i + by) % n.max(1))
}

/// The order of runs for a round (all of it for `Together`, one runtime's for `OneAtATime`).
fn plan(settings: &CompareSettings) -> Vec<Vec<Planned>> {
    let n = settings.runtimes.len();
    let mut rounds = Vec::new();
    match settings.interleave {
        Interleave::Together => {
            let mut runs = Vec::new();
            let mut cell = 0;
            for repeat in 0..settings.repeat {
                for scenario in 0..settings.scenarios.len() {
                    for &users in &settings.users {
                        for runtime in rotated(n, cell + repeat as usize) {
                            runs.push(Planned {
                                repeat,
                                runtime,
                                scenario,
                                users,
                            });
                        }
                        cell += 1;
                    }
                }
            }
            rounds.push(runs);
        }
        Interleave::OneAtATime => {
            for repeat in 0..settings.repeat {
                for runtime in rotated(n, repeat as usize) {
                    let mut runs = Vec::new();
                    for scenario in 0..settings.scenarios.len() {
                        for &users in &settings.users {
                            runs.push(Planned {
                                repeat,
                                runtime,
                                scenario,
                                users,
                            });
                        }
                    }
                    rounds.push(runs);
                }
            }
        }
    }
    rounds
}

/// A started server and the folder it keeps its data in (removed when dropped).
struct Running {
    process: ServerProcess,
    record: usize,
    _data: tempfile::TempDir,
}

/// Runs the whole comparison and writes the reports; returns the report.
pub fn run(settings: &CompareSettings) -> anyhow::Result<Report> {
    let began = Instant::now();
    let started_at = now_rfc3339();
    if settings.runtimes.is_empty() || settings.scenarios.is_empty() || settings.users.is_empty() {
        bail!("nothing to compare: give at least one runtime, scenario and user count");
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

    std::fs::create_dir_all(settings.out_dir.join("logs"))
        .with_context(|| format!("Failed to create {}", settings.out_dir.display()))?;
    let estimate = settings.estimate_s();
    println!(
        "brigade compare: {} runtimes × {} scenarios × {} user counts × {} repeat(s) = {} runs of {} s \
         (+{} s warm-up); about {} min {} s",
        settings.runtimes.len(),
        settings.scenarios.len(),
        settings.users.len(),
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
    println!("Interleaving: {}", settings.interleave.describe());
    println!("Reports and server logs: {}", settings.out_dir.display());

    let mut server_records: Vec<ServerRecord> = Vec::new();
    let mut workers_reported: BTreeMap<String, Option<u32>> = BTreeMap::new();
    let mut runs: Vec<RunRecord> = Vec::new();
    let rounds = plan(settings);
    let total_runs = settings.run_count();
    let start_server =
        |runtime: &str, round: u32, taken: &[u16], records: &mut Vec<ServerRecord>| {
            start_one(settings, &cpus, workers, runtime, round, taken, records)
        };

    for (round_index, round) in rounds.iter().enumerate() {
        // Start the servers this round needs.
        let mut needed: Vec<usize> = round.iter().map(|p| p.runtime).collect();
        needed.sort_unstable();
        needed.dedup();
        let mut running: BTreeMap<usize, Running> = BTreeMap::new();
        let mut failed_start: BTreeMap<usize, String> = BTreeMap::new();
        let round_number = match settings.interleave {
            Interleave::Together => 0,
            Interleave::OneAtATime => round_index as u32,
        };
        let mut taken: Vec<u16> = Vec::new();
        for &index in &needed {
            let runtime = &settings.runtimes[index];
            match start_server(runtime, round_number, &taken, &mut server_records) {
                Ok(server) => {
                    let port = server
                        .process
                        .urls()
                        .values()
                        .filter_map(|u| port_of(u))
                        .collect::<Vec<_>>();
                    taken.extend(port);
                    workers_reported.insert(runtime.clone(), server.process.workers_reported());
                    running.insert(index, server);
                }
                Err(err) => {
                    eprintln!("{runtime}: could not start: {err:#}");
                    failed_start.insert(index, format!("{err:#}"));
                }
            }
        }
        if let Some(generator) = cpus.generator_mask() {
            // Everything this thread starts from now on (the sampler, the generator's helpers)
            // stays off the servers' CPUs.
            pin::pin_current_thread(generator)?;
        }

        for planned in round {
            let runtime = &settings.runtimes[planned.runtime];
            let scenario = &scenarios[planned.scenario];
            let index = runs.len();
            let mut record = RunRecord {
                index,
                repeat: planned.repeat,
                runtime: runtime.clone(),
                scenario: settings.scenarios[planned.scenario].clone(),
                users: planned.users,
                result: None,
                error: None,
                server: ProcUsage::default(),
                generator: ProcUsage::default(),
                generator_cpu_percent: 0.0,
                generator_bound: None,
                contended: None,
                cpu: RunCpu::default(),
                server_samples: ProcSeries {
                    pid: 0,
                    samples: Vec::new(),
                },
                window_s: (0.0, 0.0),
            };
            let progress = format!(
                "[{}/{}] {runtime} {} {} users (repeat {})",
                index + 1,
                total_runs,
                record.scenario,
                planned.users,
                planned.repeat + 1
            );
            let Some(server) = running.get_mut(&planned.runtime) else {
                record.error = Some(format!(
                    "server not started: {}",
                    failed_start
                        .get(&planned.runtime)
                        .map_or("unknown", String::as_str)
                ));
                println!(
                    "{progress}: skipped, {}",
                    record.error.as_deref().unwrap_or_default()
                );
                runs.push(record);
                continue;
            };
            if !server.process.is_running() {
                record.error = Some("the server process had exited".to_owned());
                println!("{progress}: skipped, the server process had exited");
                runs.push(record);
                continue;
            }
            let config = LoadConfig {
                targets: scenario
                    .services()
                    .iter()
                    .filter_map(|s| server.process.urls().get(s).map(|u| (s.clone(), u.clone())))
                    .collect(),
                users: Some(planned.users),
                rate: None,
                connections: planned.users,
                duration: Some(settings.duration),
                requests: None,
                warmup: settings.warmup,
                keepalive: true,
                threads,
                timeout: settings.timeout,
                think: Duration::ZERO,
                cpus: cpus.generator_mask().map(<[usize]>::to_vec),
                progress: settings.progress,
            };
            let server_pid = server.process.pid();
            let cpu_sets = if cpus.pinned {
                vec![cpus.server.clone(), cpus.generator.clone()]
            } else {
                vec![cpus.server.clone()]
            };
            let sampler =
                Sampler::start(&[server_pid, std::process::id()], &cpu_sets, SAMPLE_EVERY);
            let outcome = engine::run(&config, scenario);
            let end_s = sampler.now_s();
            let recorded = sampler.finish();
            let mut processes = recorded.processes.into_iter();
            let served = processes.next().unwrap_or(ProcSeries {
                pid: server_pid,
                samples: Vec::new(),
            });
            let own = processes.next().unwrap_or(ProcSeries {
                pid: std::process::id(),
                samples: Vec::new(),
            });
            match outcome {
                Ok(result) => {
                    let window = ((end_s - result.elapsed_s).max(0.0), end_s);
                    record.server = served.usage(window.0, window.1);
                    record.generator = own.usage(window.0, window.1);
                    record.generator_cpu_percent = if result.generator_cpu_percent > 0.0 {
                        result.generator_cpu_percent
                    } else {
                        record.generator.cpu_percent
                    };
                    let busy = |i: usize| {
                        recorded
                            .cpus
                            .get(i)
                            .map(|series| series.busy(window.0, window.1))
                    };
                    record.cpu = RunCpu {
                        generator_process: record.generator_cpu_percent,
                        server_process: record.server.cpu_percent,
                        server_cpus: busy(0).unwrap_or_default(),
                        generator_cpus: busy(if cpus.pinned { 1 } else { 0 }).unwrap_or_default(),
                    };
                    record.generator_bound = verdict::generator_bound(&record.cpu, shape);
                    record.contended = verdict::contended(&record.cpu, shape);
                    record.window_s = window;
                    let total = &result.total;
                    let errors = total.errors.total();
                    // Contention first: a generator starved by other processes is their doing.
                    let flag = match (&record.contended, &record.generator_bound) {
                        (Some(_), _) => " — contended by other processes",
                        (None, Some(_)) => " — generator-bound",
                        (None, None) => "",
                    };
                    println!(
                        "{progress}: {:.0} hits/s, mean {:.2} ms, p99 {:.2} ms, {} errors, server CPU \
                         {:.0}% (its CPUs {:.0}% busy), generator CPU {:.0}% (its CPUs {:.0}% busy){flag}",
                        total.hits_per_s,
                        total.latency.mean_ms,
                        total.latency.p99_ms,
                        errors,
                        record.server.cpu_percent,
                        record.cpu.server_cpus.busy_percent,
                        record.generator_cpu_percent,
                        record.cpu.generator_cpus.busy_percent,
                    );
                    record.result = Some(result);
                }
                Err(err) => {
                    println!("{progress}: failed: {err:#}");
                    record.error = Some(format!("{err:#}"));
                }
            }
            record.server_samples = served;
            let _ = std::io::stdout().flush();
            runs.push(record);
        }

        // RSS after the test, then a clean stop.
        for (_, server) in running {
            let pid = server.process.pid();
            let record = &mut server_records[server.record];
            record.rss_after_mib = procstat::read(pid).ok().map(|r| r.rss_kib as f64 / 1024.0);
            record.rss_peak_mib = procstat::peak_rss_kib(pid)
                .ok()
                .map(|kib| kib as f64 / 1024.0);
            let stop = server.process.stop(STOP_GRACE);
            println!("{}: {stop}", record.runtime);
            record.stop = Some(stop);
        }
    }

    let rows = report::rows(
        &runs,
        &settings.scenarios,
        &settings.users,
        &settings.runtimes,
    );
    let (cells, scenario_verdicts) = judge(
        &runs,
        &settings.scenarios,
        &settings.users,
        &settings.runtimes,
        settings.noise_floor_pct,
    );
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
            duration_s: settings.duration.as_secs_f64(),
            warmup_s: settings.warmup.as_secs_f64(),
            repeat: settings.repeat,
            noise_floor_pct: settings.noise_floor_pct,
            timeout_ms: settings.timeout.as_millis() as u64,
            quick: settings.quick,
            interleaving: settings.interleave.describe().to_owned(),
            command_line: settings.command_line.clone(),
        },
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
/// recorded runs; nothing is run.
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
    let s = &report.settings;
    report.rows = report::rows(&report.runs, &s.scenarios, &s.users, &s.runtimes);
    let (cells, scenarios) = judge(
        &report.runs,
        &s.scenarios,
        &s.users,
        &s.runtimes,
        noise_floor_pct,
    );
    report.cells = cells;
    report.scenarios = scenarios;
    report.notes = notes(&report);
    report::write_all(&report, dir)?;
    Ok(report)
}

/// Starts one runtime's server and records it.
fn start_one(
    settings: &CompareSettings,
    cpus: &CpuPlan,
    workers: u32,
    runtime: &str,
    round: u32,
    taken: &[u16],
    records: &mut Vec<ServerRecord>,
) -> anyhow::Result<Running> {
    let data = tempfile::Builder::new()
        .prefix(&format!("brigade-compare-{runtime}-"))
        .tempdir()
        .context("Failed to create a data folder")?;
    let log_path = settings
        .out_dir
        .join("logs")
        .join(format!("{runtime}-{round}.log"));
    let mut last_err = None;
    // A port found free can be taken before the server binds it; try a few blocks.
    for _ in 0..3 {
        let port = servers::free_port_block(servers::ALL_SERVICES.len() as u16, taken)?;
        let spec = ServerSpec {
            binary: settings.binary.clone(),
            runtime: runtime.to_owned(),
            store: settings.store.clone(),
            mongodb_uri: settings.mongodb_uri.clone(),
            workers,
            port,
            data_dir: data.path().to_path_buf(),
            log_path: log_path.clone(),
            cpus: cpus.server_mask().map(<[usize]>::to_vec),
        };
        match ServerProcess::start(&spec, READY_TIMEOUT) {
            Ok(process) => {
                let pid = process.pid();
                let idle = procstat::read(pid)
                    .map(|r| r.rss_kib as f64 / 1024.0)
                    .unwrap_or(0.0);
                println!(
                    "{runtime}: pid {pid} ready in {:.2} s on {} (CPUs {})",
                    process.started_in().as_secs_f64(),
                    process
                        .urls()
                        .iter()
                        .map(|(s, u)| format!("{s}={u}"))
                        .collect::<Vec<_>>()
                        .join(" "),
                    procstat::allowed_cpus(pid).unwrap_or_else(|| "?".to_owned())
                );
                records.push(ServerRecord {
                    runtime: runtime.to_owned(),
                    round,
                    pid,
                    urls: process.urls().clone(),
                    cpus_allowed: procstat::allowed_cpus(pid),
                    startup_s: process.started_in().as_secs_f64(),
                    rss_idle_mib: idle,
                    rss_after_mib: None,
                    rss_peak_mib: None,
                    stop: None,
                    log: log_path.display().to_string(),
                });
                return Ok(Running {
                    process,
                    record: records.len() - 1,
                    _data: data,
                });
            }
            Err(err) => last_err = Some(err),
        }
    }
    Err(last_err.unwrap_or_else(|| anyhow::anyhow!("the server did not start")))
}

fn port_of(url: &str) -> Option<u16> {
    url.rsplit(':').next()?.trim_end_matches('/').parse().ok()
}

/// Judges every cell (scenario × user count) and every scenario from the runs made.
pub fn judge(
    runs: &[RunRecord],
    scenarios: &[String],
    users: &[u32],
    runtimes: &[String],
    noise_floor_pct: f64,
) -> (Vec<CellVerdict>, Vec<ScenarioVerdict>) {
    let repeats = runs.iter().map(|r| r.repeat + 1).max().unwrap_or(0) as usize;
    let mut cells = Vec::new();
    let mut verdicts = Vec::new();
    for scenario in scenarios {
        let mut per_users = Vec::new();
        for &count in users {
            let figures: Vec<RuntimeFigures> = runtimes
                .iter()
                .map(|runtime| {
                    let mine: Vec<&RunRecord> = runs
                        .iter()
                        .filter(|r| {
                            &r.scenario == scenario && r.users == count && &r.runtime == runtime
                        })
                        .collect();
                    let mut values = vec![None; repeats];
                    for run in &mine {
                        values[run.repeat as usize] = run.ok_per_s();
                    }
                    RuntimeFigures {
                        runtime: runtime.clone(),
                        values,
                        generator_bound: mine.iter().find_map(|r| r.generator_bound.clone()),
                        contended: mine.iter().find_map(|r| r.contended.clone()),
                    }
                })
                .collect();
            let verdict = verdict::judge_cell(&figures, noise_floor_pct);
            per_users.push((count, verdict.clone()));
            cells.push(CellVerdict {
                scenario: scenario.clone(),
                users: count,
                verdict,
            });
        }
        verdicts.push(ScenarioVerdict {
            scenario: scenario.clone(),
            verdict: verdict::judge_scenario(&per_users),
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
             so the figures may show the generator's limit); their cells name no winner.",
            report.runs.len()
        ));
    }
    let contended = report.runs.iter().filter(|r| r.contended.is_some()).count();
    if contended > 0 {
        notes.push(format!(
            "{contended} of {} runs shared their CPUs with other processes (at least {:.0}% of a \
             side's CPUs went to someone else); their cells name no winner. Rerun on a quiet machine.",
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
            "{} on {} at {} users: {:.1}% of requests failed (see report.json for the kinds).",
            row.runtime, row.scenario, row.users, row.error_pct
        ));
    }
    notes
}

/// Versions of everything measured.
fn versions(settings: &CompareSettings) -> report::Versions {
    let crates = env!("BRIGADE_CRATE_VERSIONS")
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, version)| (name.to_owned(), version.to_owned()))
        .collect();
    let runtimes = servers::describe_runtimes(&settings.binary)
        .unwrap_or_default()
        .into_iter()
        .filter(|(name, _)| settings.runtimes.contains(name))
        .collect();
    report::Versions {
        brigade: env!("CARGO_PKG_VERSION").to_owned(),
        runtimes,
        server_binary: settings.binary.display().to_string(),
        server_binary_version: servers::binary_version(&settings.binary),
        rustc: env!("BRIGADE_RUSTC").to_owned(),
        crates,
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

    fn settings(interleave: Interleave, repeat: u32) -> CompareSettings {
        CompareSettings {
            binary: "brigade".into(),
            runtimes: vec!["a".into(), "b".into(), "c".into()],
            store: "memory".into(),
            mongodb_uri: None,
            scenarios: vec!["s".into(), "t".into()],
            users: vec![10, 20],
            duration: Duration::from_secs(1),
            warmup: Duration::ZERO,
            repeat,
            workers: None,
            threads: None,
            timeout: Duration::from_secs(1),
            noise_floor_pct: 5.0,
            cpus: CpuChoice::Auto,
            interleave,
            out_dir: "out".into(),
            quick: false,
            progress: false,
            command_line: String::new(),
        }
    }

    #[test]
    fn together_runs_every_runtime_per_cell_and_rotates_who_goes_first() {
        let rounds = plan(&settings(Interleave::Together, 2));
        assert_eq!(rounds.len(), 1);
        let runs = &rounds[0];
        assert_eq!(runs.len(), 3 * 2 * 2 * 2);
        let firsts: Vec<usize> = runs.chunks(3).map(|cell| cell[0].runtime).collect();
        assert_eq!(&firsts[..4], &[0, 1, 2, 0]);
        for cell in runs.chunks(3) {
            let mut who: Vec<usize> = cell.iter().map(|p| p.runtime).collect();
            who.sort_unstable();
            assert_eq!(who, vec![0, 1, 2]);
            assert!(cell
                .iter()
                .all(|p| p.scenario == cell[0].scenario && p.users == cell[0].users));
        }
    }

    #[test]
    fn one_at_a_time_makes_a_round_per_runtime_and_repeat() {
        let rounds = plan(&settings(Interleave::OneAtATime, 2));
        assert_eq!(rounds.len(), 6);
        let order: Vec<usize> = rounds.iter().map(|r| r[0].runtime).collect();
        assert_eq!(order, vec![0, 1, 2, 1, 2, 0]);
        assert!(rounds.iter().all(|r| r.len() == 4));
    }

    #[test]
    fn the_estimate_counts_every_run() {
        let s = settings(Interleave::Together, 1);
        assert_eq!(s.run_count(), 12);
        assert!(s.estimate_s() >= 12.0);
    }
}
