//! Side by side: every runtime's server alive at once on the same server CPUs, each driven at the
//! same offered rate with the same seed, each server's CPU time read in short windows. The
//! per-window paired ratio of CPU per request is compare's efficiency figure.
//!
//! Why: runs of one runtime after another on a shared machine drift (measured here: ±12% per
//! 1-second slice between two hyper servers run one after the other), while servers measured in
//! the same seconds share whatever the machine does in those seconds — a neighbour's burst, the
//! hypervisor taking the CPU, a cache flushed — and it cancels in the ratio (±0.4% A/A after 20 s).
//!
//! One cell (scenario × users × preload) in order:
//! 1. one fresh server per runtime (its own fresh store state, as an isolated run's), all pinned
//!    to the server CPUs;
//! 2. per load level: each server's fixtures made on its own store with the one seed (the setup
//!    steps send the same requests, so every store holds the same data); then one open-loop
//!    generator per server, all started at one agreed instant (the engine's `start_at`), each at
//!    the level's rate over `users` connections and with the one seed, so every runtime receives
//!    the same request stream and its data grows the same way;
//! 3. at every window boundary after the warm-up, each server's CPU-time clock is read, back to
//!    back ([`counters`]); requests per window come from each generator's per-second series;
//! 4. after the measured windows, the same load goes on for the counting windows while `perf stat`
//!    counts syscalls and context switches (kept apart from the CPU windows, since counting costs);
//! 5. while a level is undecided and the `--budget` has time left, more windows at the same level
//!    on the same servers.
//!
//! Latency measured here includes the other servers' work on the same CPU: it is recorded and
//! labelled so, and never judged (the isolated runs judge latency).

pub mod counters;

use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use brigade_load::engine::{self, LoadConfig};
use brigade_load::result::LoadResult;
use brigade_load::scenario::Scenario;
use brigade_load::shard::ShardPlan;
use serde::{Deserialize, Serialize};

use crate::measure::Bench;
use crate::procstat::{self, read_cpus, CpuSample};
use crate::report::ServerRecord;
use crate::servers::{self, ServerProcess, ServerSpec};
use crate::state;
use counters::{CpuClock, EventCounts, Ticks};

/// The side-by-side settings of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct SideSettings {
    /// Whether to run side by side at all.
    pub enabled: bool,
    /// Load levels as shares of the server CPUs in total (0.4, 0.8), when rates are not given.
    pub levels: Vec<f64>,
    /// Offered rates per runtime, requests/s (`--side-by-side-rates`), replacing the levels.
    pub rates: Option<Vec<f64>>,
    /// Measured windows per level.
    pub windows: u32,
    /// Length of one window, whole seconds.
    pub window_s: u32,
    /// Warm-up before the first window.
    pub warmup: Duration,
    /// Seconds of extra load counted by `perf stat` after the windows (0: no counts).
    pub count_s: u32,
    /// Extra time for more windows where a level is undecided.
    pub budget: Duration,
}

impl Default for SideSettings {
    fn default() -> SideSettings {
        SideSettings {
            enabled: true,
            levels: vec![0.4, 0.8],
            rates: None,
            windows: 10,
            window_s: 1,
            warmup: Duration::from_secs(1),
            count_s: 2,
            budget: Duration::ZERO,
        }
    }
}

/// One runtime in one side-by-side level.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SideRuntime {
    /// The runtime, as the comparison names it (`hyper#2` for a second hyper).
    pub runtime: String,
    /// The planted cost per request, µs (`--handicap`), when one was planted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handicap_us: Option<u64>,
    /// Its CPU time in each measured window, nanoseconds.
    pub window_cpu_ns: Vec<u64>,
    /// Requests it completed in each measured window.
    pub window_requests: Vec<u64>,
    /// Requests completed over the measured windows.
    pub requests: u64,
    /// Of those, failed.
    pub errors: u64,
    /// Requests per second it completed over the measured windows.
    pub achieved_per_s: f64,
    /// Its CPU µs per request over all the measured windows.
    pub cpu_us_per_request: f64,
    /// User-mode CPU µs per request (ticks over the windows, scaled to the nanosecond total).
    pub user_cpu_us_per_request: Option<f64>,
    /// Kernel-mode CPU µs per request.
    pub system_cpu_us_per_request: Option<f64>,
    /// Syscalls per request over the counting windows.
    pub syscalls_per_request: Option<f64>,
    /// Context switches per request over the counting windows.
    pub context_switches_per_request: Option<f64>,
    /// Instructions per request (callgrind, `--instructions`); null when not measured.
    pub instructions_per_request: Option<f64>,
    /// Why a count is missing or partial, if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts_note: Option<String>,
    /// Median latency side by side, ms: includes the other servers' work on the same CPUs.
    pub side_by_side_p50_ms: f64,
    /// 99th percentile latency side by side, ms (the same caveat).
    pub side_by_side_p99_ms: f64,
    /// Why this runtime's figures are missing, if they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl SideRuntime {
    /// CPU µs per request in each window (NaN where a window had no request).
    pub fn window_costs(&self) -> Vec<f64> {
        self.window_cpu_ns
            .iter()
            .zip(&self.window_requests)
            .map(|(&ns, &n)| {
                if n == 0 {
                    f64::NAN
                } else {
                    ns as f64 / 1e3 / n as f64
                }
            })
            .collect()
    }
}

/// One level of one cell, measured side by side.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SideCell {
    /// The scenario.
    pub scenario: String,
    /// Connections per runtime.
    pub users: u32,
    /// Documents preloaded per collection.
    pub preload: u64,
    /// The load level: `40%` of the server CPUs, or `given` for `--side-by-side-rates`.
    pub level: String,
    /// Offered requests per second to every runtime.
    pub rate_per_s: f64,
    /// How the rate was chosen, in words.
    pub rate_from: String,
    /// Length of a window, seconds.
    pub window_s: f64,
    /// Measured windows.
    pub windows: usize,
    /// Window sets added by `--budget` after the first.
    pub extensions: u32,
    /// Every runtime, in the comparison's order.
    pub runtimes: Vec<SideRuntime>,
    /// The server CPUs' busy share over the windows, percent of their capacity.
    pub server_cpus_busy_pct: f64,
    /// The generator CPUs' busy share over the windows, percent of their capacity.
    pub generator_cpus_busy_pct: f64,
    /// Task time on the server CPUs that no server used, percent of their capacity (neighbours;
    /// it lands on every runtime in the same windows, so it is recorded, not disqualifying).
    pub others_on_server_cpus_pct: f64,
    /// Why no verdict can be drawn from this level (generator-bound, failed), if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_judged: Option<String>,
}

/// How a level is set: a share of the server CPUs or a given rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    /// Its label (`40%`, `given`).
    pub label: String,
    /// Offered requests per second to every runtime.
    pub rate_per_s: f64,
    /// How the rate was chosen, in words.
    pub from: String,
}

/// The generator must deliver this share of the offered rate for a level to be judged.
pub const ACHIEVED_SHARE: f64 = 0.99;

/// Above this error share a runtime's figures are not judged: cheap failures are no efficiency.
pub const MAX_ERROR_SHARE: f64 = 0.01;

/// The rates of the load levels for a cell from what its isolated runs measured: each runtime's
/// CPU µs per request and successful hits/s. A level `f` offers every runtime
/// `f × min(server CPUs × 10⁶ / Σ cost, min hits/s)`: the first term puts the servers' CPUs in
/// total at the share `f`, the second keeps a runtime whose closed-loop rate is bounded by waiting
/// (durable writes) below what it could deliver alone.
pub fn level_rates(levels: &[f64], server_cpus: usize, isolated: &[(f64, f64)]) -> Vec<Level> {
    let costs: f64 = isolated.iter().map(|(cost, _)| cost).sum();
    let slowest = isolated
        .iter()
        .map(|(_, hits)| *hits)
        .fold(f64::INFINITY, f64::min);
    if !(costs > 0.0 && slowest.is_finite() && slowest > 0.0) {
        return Vec::new();
    }
    let by_cpu = server_cpus.max(1) as f64 * 1e6 / costs;
    let full = by_cpu.min(slowest);
    let bound = if by_cpu <= slowest {
        format!(
            "the server CPUs' share: {} CPU(s) ÷ the runtimes' isolated CPU per request summed \
             ({costs:.1} µs)",
            server_cpus.max(1)
        )
    } else {
        format!("the slowest runtime's isolated closed-loop rate ({slowest:.0}/s)")
    };
    levels
        .iter()
        .map(|&f| Level {
            label: format!("{:.0}%", f * 100.0),
            rate_per_s: (f * full).round().max(1.0),
            from: format!("{:.0}% of {bound}", f * 100.0),
        })
        .collect()
}

/// A side-by-side cell to run.
#[derive(Debug, Clone)]
pub struct CellPlan<'a> {
    /// The scenario to send.
    pub scenario: &'a Scenario,
    /// Its name in the report.
    pub label: &'a str,
    /// Connections per runtime.
    pub users: u32,
    /// Documents preloaded per collection.
    pub preload: u64,
    /// The levels to run.
    pub levels: Vec<Level>,
    /// Its index among side-by-side cells (names logs and folders).
    pub index: usize,
}

/// One started server of a side-by-side cell.
struct Running {
    label: String,
    process: ServerProcess,
    clock: CpuClock,
    record: ServerRecord,
    _state: state::RunState,
}

/// What one measured window set of a level collected for one server.
#[derive(Debug)]
struct Collected {
    cpu_ns: Vec<u64>,
    ticks: (Ticks, Ticks),
    counts: Result<EventCounts, String>,
    new_threads: bool,
}

/// Runs a cell side by side; `decided` says whether a level's figures decide its verdict (more
/// windows are added, within `budget_left`, while it is false). Returns every level and the
/// servers' records.
pub fn run_cell(
    bench: &Bench<'_>,
    plan: &CellPlan<'_>,
    budget_left: &mut Duration,
    decided: &dyn Fn(&SideCell) -> bool,
) -> (Vec<SideCell>, Vec<ServerRecord>) {
    let settings = bench.settings;
    let side = &settings.side;
    let blank = |level: &Level, reason: String| SideCell {
        scenario: plan.label.to_owned(),
        users: plan.users,
        preload: plan.preload,
        level: level.label.clone(),
        rate_per_s: level.rate_per_s,
        rate_from: level.from.clone(),
        window_s: f64::from(side.window_s),
        not_judged: Some(reason),
        ..SideCell::default()
    };
    let mut servers = match start_all(bench, plan) {
        Ok(servers) => servers,
        Err(err) => {
            let reason = format!("failed: servers not started: {err:#}");
            println!("side by side {} {} users: {reason}", plan.label, plan.users);
            return (
                plan.levels.iter().map(|l| blank(l, reason.clone())).collect(),
                Vec::new(),
            );
        }
    };
    let mut cells = Vec::new();
    for level in &plan.levels {
        let began = Instant::now();
        let mut cell = match measure_level(bench, plan, level, &servers) {
            Ok(cell) => cell,
            Err(err) => blank(level, format!("failed: {err:#}")),
        };
        print_level(&cell);
        // More windows where the verdict is still open, while the budget lasts.
        while cell.not_judged.is_none() && !decided(&cell) && cell.extensions < 3 {
            let cost = began.elapsed() / (cell.extensions + 1);
            if *budget_left < cost {
                break;
            }
            let step = Instant::now();
            match measure_level(bench, plan, level, &servers) {
                Ok(more) => extend(&mut cell, more),
                Err(err) => {
                    println!("  more windows failed: {err:#}");
                    break;
                }
            }
            *budget_left = budget_left.saturating_sub(step.elapsed());
            print_level(&cell);
        }
        cells.push(cell);
    }
    let mut records = Vec::new();
    for server in servers.drain(..) {
        records.push(stop(server));
    }
    (cells, records)
}

fn print_level(cell: &SideCell) {
    let costs: Vec<String> = cell
        .runtimes
        .iter()
        .map(|r| format!("{} {:.1} µs", r.runtime, r.cpu_us_per_request))
        .collect();
    println!(
        "side by side {} {} users, {} ({:.0}/s each, {} windows): {}{}",
        cell.scenario,
        cell.users,
        cell.level,
        cell.rate_per_s,
        cell.windows,
        costs.join(", "),
        cell.not_judged
            .as_deref()
            .map(|r| format!(" — not judged: {r}"))
            .unwrap_or_default()
    );
}

/// Appends a further window set to a level.
fn extend(cell: &mut SideCell, more: SideCell) {
    let windows = cell.windows as f64;
    let added = more.windows as f64;
    let weigh = |a: f64, b: f64| (a * windows + b * added) / (windows + added).max(1.0);
    cell.server_cpus_busy_pct = weigh(cell.server_cpus_busy_pct, more.server_cpus_busy_pct);
    cell.generator_cpus_busy_pct =
        weigh(cell.generator_cpus_busy_pct, more.generator_cpus_busy_pct);
    cell.others_on_server_cpus_pct =
        weigh(cell.others_on_server_cpus_pct, more.others_on_server_cpus_pct);
    cell.windows += more.windows;
    cell.extensions += 1;
    if cell.not_judged.is_none() {
        cell.not_judged = more.not_judged;
    }
    for (mine, theirs) in cell.runtimes.iter_mut().zip(more.runtimes) {
        mine.window_cpu_ns.extend(theirs.window_cpu_ns);
        mine.window_requests.extend(theirs.window_requests);
        mine.requests += theirs.requests;
        mine.errors += theirs.errors;
        let cpu: u64 = mine.window_cpu_ns.iter().sum();
        let secs = mine.window_requests.len() as f64 * cell.window_s;
        mine.achieved_per_s = mine.requests as f64 / secs.max(1e-9);
        mine.cpu_us_per_request = cpu as f64 / 1e3 / mine.requests.max(1) as f64;
    }
}

/// Starts one fresh server per runtime, all pinned to the server CPUs.
fn start_all(bench: &Bench<'_>, plan: &CellPlan<'_>) -> anyhow::Result<Vec<Running>> {
    let settings = bench.settings;
    let mut started = Vec::new();
    for (i, label) in settings.runtimes.iter().enumerate() {
        let index = 10_000 + plan.index * settings.runtimes.len() + i;
        let fresh = bench
            .state
            .for_run(index, &label.replace('#', "-"), plan.preload)?;
        let log_path = settings.out_dir.join("logs").join(format!(
            "side-{:03}-{}.log",
            plan.index + 1,
            label.replace('#', "-")
        ));
        let spec = ServerSpec {
            runtime: crate::settings::runtime_of(label).to_owned(),
            data_dir: fresh.data.path().to_path_buf(),
            preload: fresh.preload_arg,
            database_prefix: fresh.database_prefix.clone(),
            log_path: log_path.clone(),
            handicap_us: settings.handicaps.get(label).copied().unwrap_or(0),
            ..bench.server_template()
        };
        let process =
            servers::start_on_free_ports(&spec, &[], state::ready_timeout(fresh.preload_arg))
                .with_context(|| format!("{label} did not start"))?;
        let pid = process.pid();
        let clock = CpuClock::of(pid)?;
        let record = ServerRecord {
            runtime: label.clone(),
            round: index as u32,
            preload: plan.preload,
            pid,
            urls: process.urls(),
            cpus_allowed: procstat::allowed_cpus(pid),
            startup_s: process.started_in().as_secs_f64(),
            rss_idle_mib: procstat::read(pid)
                .map(|r| r.rss_kib as f64 / 1024.0)
                .unwrap_or(0.0),
            rss_after_mib: None,
            rss_peak_mib: None,
            stop: None,
            log: log_path.display().to_string(),
            source: Some("side by side".to_owned()),
        };
        started.push(Running {
            label: label.clone(),
            process,
            clock,
            record,
            _state: fresh,
        });
    }
    Ok(started)
}

fn stop(server: Running) -> ServerRecord {
    let mut record = server.record;
    let pid = record.pid;
    record.rss_after_mib = procstat::read(pid).ok().map(|r| r.rss_kib as f64 / 1024.0);
    record.rss_peak_mib = procstat::peak_rss_kib(pid)
        .ok()
        .map(|kib| kib as f64 / 1024.0);
    let outcome = server.process.stop(crate::run::STOP_GRACE);
    if !matches!(outcome, servers::StopOutcome::Graceful { code: Some(0) }) {
        println!("{} (pid {pid}): {outcome}", server.label);
    }
    record.stop = Some(outcome);
    record
}

/// One window set of one level on the running servers.
fn measure_level(
    bench: &Bench<'_>,
    plan: &CellPlan<'_>,
    level: &Level,
    servers: &[Running],
) -> anyhow::Result<SideCell> {
    let settings = bench.settings;
    let side = &settings.side;
    let windows = side.windows.max(1) as usize;
    let window = Duration::from_secs(u64::from(side.window_s.max(1)));
    let counting = Duration::from_secs(u64::from(side.count_s));
    let scenario = plan.scenario;
    // Every generator's configuration and fixtures, made before anyone's clock starts.
    let mut loads = Vec::new();
    for server in servers {
        let targets = server
            .process
            .announced()
            .targets(scenario.label(), &scenario.services())?;
        let config = LoadConfig {
            targets,
            users: None,
            rate: Some(level.rate_per_s),
            connections: plan.users,
            duration: Some(window * windows as u32 + counting),
            requests: None,
            warmup: side.warmup,
            keepalive: settings.keepalive,
            threads: bench.threads,
            timeout: settings.timeout,
            think: Duration::ZERO,
            cpus: bench.cpus.generator_mask().map(<[usize]>::to_vec),
            progress: false,
            seed: Some(settings.seed),
        };
        let fixtures = engine::make_fixtures(&config, scenario)
            .with_context(|| format!("{}: fixtures", server.label))?;
        loads.push((config, fixtures));
    }
    // One agreed start for every generator: their windows open in the same instant.
    let lead = Duration::from_millis(300);
    let start_wall = SystemTime::now() + lead;
    let start = Instant::now() + lead;
    let window_open = start + side.warmup + Duration::from_millis(5);
    let (results, collected) = std::thread::scope(|scope| {
        let handles: Vec<_> = loads
            .into_iter()
            .map(|(config, fixtures)| {
                let plan = ShardPlan {
                    start_at: Some(start_wall),
                    fixtures: Some(fixtures),
                    ..ShardPlan::default()
                };
                scope.spawn(move || engine::run_shard(&config, scenario, &plan))
            })
            .collect();
        // This thread reads the clocks while the generators run.
        let collected = collect(bench, servers, window_open, window, windows, counting);
        let results: Vec<anyhow::Result<LoadResult>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a generator thread panicked")))
            })
            .collect();
        (results, collected)
    });
    Ok(assemble(bench, plan, level, servers, results, collected))
}

/// Turns what the generators and the clocks measured into a level's figures, and judges whether
/// the level can be judged at all (the generator kept up, nothing failed).
fn assemble(
    bench: &Bench<'_>,
    plan: &CellPlan<'_>,
    level: &Level,
    servers: &[Running],
    results: Vec<anyhow::Result<LoadResult>>,
    collected: CollectedAll,
) -> SideCell {
    let side = &bench.settings.side;
    let windows = side.windows.max(1) as usize;
    let per = side.window_s.max(1) as usize;
    let window_s = per as f64;
    let span_s = window_s * windows as f64;
    let mut not_judged: Option<String> = None;
    let mut runtimes = Vec::new();
    for ((server, result), c) in servers.iter().zip(results).zip(collected.servers) {
        let mut row = SideRuntime {
            runtime: server.label.clone(),
            handicap_us: bench.settings.handicaps.get(&server.label).copied(),
            ..SideRuntime::default()
        };
        match result {
            Err(err) => {
                row.error = Some(format!("{err:#}"));
                not_judged.get_or_insert(format!("failed: {} did not run: {err:#}", server.label));
            }
            Ok(result) => {
                let seconds = &result.seconds;
                row.window_requests = (0..windows)
                    .map(|k| {
                        seconds
                            .iter()
                            .skip(k * per)
                            .take(per)
                            .map(|s| s.requests)
                            .sum()
                    })
                    .collect();
                row.requests = row.window_requests.iter().sum();
                row.errors = seconds.iter().take(windows * per).map(|s| s.errors).sum();
                row.window_cpu_ns = c.cpu_ns.clone();
                row.achieved_per_s = row.requests as f64 / span_s;
                let cpu_ns: u64 = row.window_cpu_ns.iter().sum();
                let n = row.requests.max(1) as f64;
                row.cpu_us_per_request = cpu_ns as f64 / 1e3 / n;
                let user = c.ticks.1.user.saturating_sub(c.ticks.0.user) as f64;
                let system = c.ticks.1.system.saturating_sub(c.ticks.0.system) as f64;
                if user + system > 0.0 {
                    row.user_cpu_us_per_request = Some(row.cpu_us_per_request * user / (user + system));
                    row.system_cpu_us_per_request =
                        Some(row.cpu_us_per_request * system / (user + system));
                }
                let counted = (side.count_s as f64 * level.rate_per_s).max(1.0);
                match &c.counts {
                    Ok(counts) => {
                        row.syscalls_per_request = Some(counts.syscalls as f64 / counted);
                        row.context_switches_per_request =
                            Some(counts.context_switches as f64 / counted);
                        if c.new_threads {
                            row.counts_note = Some(
                                "threads started while counting are not counted: a lower bound"
                                    .to_owned(),
                            );
                        }
                    }
                    Err(why) => row.counts_note = Some(format!("not measured: {why}")),
                }
                let latency = &result.total.latency;
                row.side_by_side_p50_ms = latency.p50_ms;
                row.side_by_side_p99_ms = latency.p99_ms;
                let offered = level.rate_per_s * span_s;
                if (row.requests as f64) < ACHIEVED_SHARE * offered {
                    not_judged.get_or_insert(format!(
                        "generator-bound or saturated: {} completed {:.0}/s of the {:.0}/s offered",
                        server.label, row.achieved_per_s, level.rate_per_s
                    ));
                }
                if row.errors as f64 > MAX_ERROR_SHARE * row.requests.max(1) as f64 {
                    not_judged.get_or_insert(format!(
                        "failed: {} answered {} of {} requests with errors",
                        server.label, row.errors, row.requests
                    ));
                }
            }
        }
        runtimes.push(row);
    }
    let busy = |pair: &(CpuSample, CpuSample)| {
        let total = pair.1.total_s - pair.0.total_s;
        if total > 0.0 {
            (pair.1.busy_s - pair.0.busy_s) / total * 100.0
        } else {
            0.0
        }
    };
    let server_busy = busy(&collected.server_cpus);
    let generator_busy = busy(&collected.generator_cpus);
    let server_task = {
        let total = collected.server_cpus.1.total_s - collected.server_cpus.0.total_s;
        if total > 0.0 {
            (collected.server_cpus.1.task_s - collected.server_cpus.0.task_s) / total * 100.0
        } else {
            0.0
        }
    };
    let capacity = bench.cpus.server.len().max(1) as f64;
    let servers_pct: f64 = runtimes
        .iter()
        .map(|r| r.window_cpu_ns.iter().sum::<u64>() as f64 / 1e9 / span_s * 100.0 / capacity)
        .sum();
    if bench.cpus.pinned && generator_busy >= crate::verdict::GENERATOR_SATURATED * 100.0 {
        not_judged.get_or_insert(format!(
            "generator-bound: the generator's CPUs were {generator_busy:.0}% busy"
        ));
    }
    SideCell {
        scenario: plan.label.to_owned(),
        users: plan.users,
        preload: plan.preload,
        level: level.label.clone(),
        rate_per_s: level.rate_per_s,
        rate_from: level.from.clone(),
        window_s,
        windows,
        extensions: 0,
        runtimes,
        server_cpus_busy_pct: server_busy,
        generator_cpus_busy_pct: generator_busy,
        others_on_server_cpus_pct: (server_task - servers_pct).max(0.0),
        not_judged,
    }
}

/// What the measuring thread read while the generators ran.
#[derive(Debug, Default)]
struct CollectedAll {
    servers: Vec<Collected>,
    server_cpus: (CpuSample, CpuSample),
    generator_cpus: (CpuSample, CpuSample),
}

/// Reads every server's CPU clock at every window boundary, then counts events over the
/// counting windows.
fn collect(
    bench: &Bench<'_>,
    servers: &[Running],
    window_open: Instant,
    window: Duration,
    windows: usize,
    counting: Duration,
) -> CollectedAll {
    let cpus = bench.cpus;
    let mut all = CollectedAll {
        servers: servers.iter().map(|_| Collected::default()).collect(),
        ..CollectedAll::default()
    };
    let mut readings: Vec<Vec<u64>> = vec![Vec::with_capacity(windows + 1); servers.len()];
    for k in 0..=windows {
        let at = window_open + window * k as u32;
        let now = Instant::now();
        if at > now {
            std::thread::sleep(at - now);
        }
        for (server, reading) in servers.iter().zip(readings.iter_mut()) {
            reading.push(server.clock.read_ns().unwrap_or(0));
        }
        let edge = |set: &[usize]| read_cpus(set).unwrap_or_default();
        if k == 0 {
            all.server_cpus.0 = edge(&cpus.server);
            all.generator_cpus.0 = edge(&cpus.generator);
            for (server, c) in servers.iter().zip(all.servers.iter_mut()) {
                c.ticks.0 = counters::ticks(server.record.pid).unwrap_or_default();
            }
        }
        if k == windows {
            all.server_cpus.1 = edge(&cpus.server);
            all.generator_cpus.1 = edge(&cpus.generator);
            for (server, c) in servers.iter().zip(all.servers.iter_mut()) {
                c.ticks.1 = counters::ticks(server.record.pid).unwrap_or_default();
            }
        }
    }
    for (c, reading) in all.servers.iter_mut().zip(&readings) {
        c.cpu_ns = reading.windows(2).map(|w| w[1].saturating_sub(w[0])).collect();
    }
    if counting.is_zero() {
        for c in &mut all.servers {
            c.counts = Err("not counted (--count 0)".to_owned());
        }
        return all;
    }
    let before: Vec<Vec<u32>> = servers
        .iter()
        .map(|s| counters::threads(s.record.pid))
        .collect();
    let seconds = counting.as_secs_f64() - 0.2;
    let started: Vec<anyhow::Result<counters::Counting>> = servers
        .iter()
        .map(|s| counters::start_counting(s.record.pid, seconds))
        .collect();
    for ((c, counting), (server, before)) in all
        .servers
        .iter_mut()
        .zip(started)
        .zip(servers.iter().zip(&before))
    {
        c.counts = counting
            .and_then(counters::Counting::finish)
            .map_err(|e| format!("{e:#}"));
        let after = counters::threads(server.record.pid);
        c.new_threads = after.iter().any(|t| !before.contains(t));
    }
    all
}

impl Default for Collected {
    fn default() -> Collected {
        Collected {
            cpu_ns: Vec::new(),
            ticks: (Ticks::default(), Ticks::default()),
            counts: Err("not counted".to_owned()),
            new_threads: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_rates_put_the_servers_cpus_at_the_share_asked_or_stay_under_the_slowest() {
        // Two runtimes at 50 and 50 µs per request on one CPU: 10,000/s fill it together.
        let levels = level_rates(&[0.4, 0.8], 1, &[(50.0, 20_000.0), (50.0, 19_000.0)]);
        assert_eq!(levels.len(), 2);
        assert_eq!(levels[0].rate_per_s, 4_000.0);
        assert_eq!(levels[1].rate_per_s, 8_000.0);
        assert_eq!(levels[1].label, "80%");
        // Waiting-bound: a runtime that managed 1,000/s alone is never offered more than that.
        let bound = level_rates(&[0.8], 1, &[(50.0, 1_000.0), (50.0, 20_000.0)]);
        assert_eq!(bound[0].rate_per_s, 800.0);
        assert!(bound[0].from.contains("slowest"), "{}", bound[0].from);
        assert!(level_rates(&[0.5], 1, &[]).is_empty());
    }

    #[test]
    fn window_costs_are_cpu_microseconds_per_request_and_empty_windows_are_not_numbers() {
        let row = SideRuntime {
            window_cpu_ns: vec![2_000_000, 3_000_000],
            window_requests: vec![100, 0],
            ..SideRuntime::default()
        };
        let costs = row.window_costs();
        assert_eq!(costs[0], 20.0);
        assert!(costs[1].is_nan());
    }
}
