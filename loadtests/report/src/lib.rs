//! Brigade's reports as plain data and their renderers: what `brigade compare` and the studies found
//! ([`Report`], [`study::StudyReport`], serialized whole into `report.json`) and the documents made
//! from it (`report.md`, `report.html` with SVG charts). It sits below the code that measures and
//! judges (`brigade-compare`, `brigade-studies`): they fill these types in, the renderers here only
//! read them, and nothing here imports back.
//!
//! The table rows are derived from the runs by [`rows`]: one row per scenario, preload, user count
//! and runtime, each figure the median over the repeats, so the markdown, the HTML and the JSON all
//! show the same numbers. Fields added since the first reports carry serde defaults, so an older
//! `report.json` still reads (and `--rejudge` still works on it).
//!
//! Beside the comparison's report lives the general one every `brigade study` writes
//! ([`study::StudyReport`]: titled tables with named dimension and metric columns, charts as named
//! x/y series). Both open with the same [`setup::Setup`] section and go through the same writer
//! ([`write_all`], for anything that is a [`ReportDocument`]) into the same three files.

pub mod answer;
pub mod baseline;
pub mod capacity;
pub mod comparison;
pub mod html;
pub mod json;
pub mod markdown;
pub mod render;
pub mod setup;
pub mod study;
pub mod thresholds;
pub mod verdict;
pub mod write;

pub use write::{write_all, ReportDocument, Written};

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::thresholds::RunCheck;
use crate::verdict::{count, RunCpu, Verdict};
use brigade_load::result::{LoadResult, Machine};
use brigade_meter::pin::{self, CpuPlan};
use brigade_meter::procstat::{ProcSeries, ProcUsage};
use brigade_meter::servers::StopOutcome;

/// Everything one comparison measured and decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// When the comparison started (RFC 3339, UTC).
    pub started_at: String,
    /// Wall-clock seconds the whole comparison took.
    pub wall_s: f64,
    /// The machine it ran on.
    pub machine: Machine,
    /// Versions of Brigade, the compiler and the measured crates.
    pub versions: Versions,
    /// How threads and CPUs were set up.
    pub threads: ThreadSetup,
    /// The settings it ran with.
    pub settings: Settings,
    /// How every run's store state was made fresh, and the preloaded data prepared for it.
    #[serde(default)]
    pub state: StateSetup,
    /// Each server process started (one per runtime, or one per runtime and round).
    pub servers: Vec<ServerRecord>,
    /// Every load run, in the order run.
    pub runs: Vec<RunRecord>,
    /// The table: medians per scenario, user count and runtime.
    pub rows: Vec<Row>,
    /// The verdict per scenario and user count.
    pub cells: Vec<CellVerdict>,
    /// The verdict per scenario.
    pub scenarios: Vec<ScenarioVerdict>,
    /// Every side-by-side level of every cell, window by window.
    #[serde(default)]
    pub side_by_side: Vec<brigade_meter::window::SideCell>,
    /// Every judged comparison (best runtime of a cell against each other), one shape for every
    /// measure.
    #[serde(default)]
    pub comparisons: Vec<comparison::Comparison>,
    /// Every runtime measured under two labels in a side-by-side level (`hyper` / `hyper#2`,
    /// `axum` / `axum#loopback`), judged against each other ([`crate::judge::judge_pairs`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<comparison::Comparison>,
    /// Caveats a reader should know (machine size, shared CPUs, failures).
    pub notes: Vec<String>,
    /// Every `--threshold` checked against every run (empty without thresholds).
    #[serde(default)]
    pub threshold_checks: Vec<RunCheck>,
    /// Every cell against a saved report (`--baseline`), if one was given.
    #[serde(default)]
    pub baseline: Option<baseline::Baseline>,
    /// Every `--slo` search: per runtime, scenario, user count and preload, the capacity, its
    /// bracket, its stall probe and the latency–rate curve (several independent searches each).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slo_searches: Vec<brigade_slo::SloSearch>,
}

/// Versions of what was measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Versions {
    /// Brigade's version (of the comparing binary).
    pub brigade: String,
    /// The server binary that was started.
    pub server_binary: String,
    /// What that binary says for `--version`, if anything.
    pub server_binary_version: Option<String>,
    /// The compiler Brigade was built with.
    pub rustc: String,
    /// Crate name → version(s) from the build's lock file.
    pub crates: BTreeMap<String, String>,
    /// Runtime → how the server binary describes it (`runtimes --json`).
    #[serde(default)]
    pub runtimes: BTreeMap<String, String>,
}

/// How CPUs and threads were set up; equal for every runtime.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadSetup {
    /// The CPU split between servers and generator.
    pub cpus: CpuPlan,
    /// `--workers` handed to every runtime.
    pub server_workers: u32,
    /// The worker count each runtime printed when it started (runtime → workers).
    pub workers_reported: BTreeMap<String, Option<u32>>,
    /// The server limits each runtime printed when it started (runtime → limits in words).
    #[serde(default)]
    pub limits_reported: BTreeMap<String, Option<String>>,
    /// Generator threads (one single-threaded tokio runtime each).
    pub generator_threads: u32,
}

/// The settings of the comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// The runtimes compared, in the order given.
    pub runtimes: Vec<String>,
    /// The store every service used.
    pub store: String,
    /// The scenarios run.
    pub scenarios: Vec<String>,
    /// The closed-loop user counts.
    pub users: Vec<u32>,
    /// Documents preloaded per collection before the fixtures, one value per cell (`[0]`: none).
    #[serde(default = "no_preload")]
    pub preloads: Vec<u64>,
    /// Measured seconds per run.
    pub duration_s: f64,
    /// Warm-up seconds per run (not counted).
    pub warmup_s: f64,
    /// Runs per runtime, scenario and user count.
    pub repeat: u32,
    /// The verdicts' rule: equivalence margin and confidence.
    #[serde(default)]
    pub rule: crate::verdict::Rule,
    /// The side-by-side settings, in words (absent: no side-by-side runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side_by_side: Option<SideSetup>,
    /// Calibration handicaps planted per runtime, µs per request (`--handicap`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub handicaps: BTreeMap<String, f64>,
    /// Each runtime compared that is another runtime's adapter on another I/O engine, with that
    /// sibling when it was compared too (`ntex-uring` → `ntex`): judged as a pair.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub engine_variants: BTreeMap<String, String>,
    /// Per-request timeout, milliseconds.
    pub timeout_ms: u64,
    /// Whether `--quick` chose the defaults.
    pub quick: bool,
    /// How runs were interleaved across runtimes, in words.
    pub interleaving: String,
    /// The command line as given.
    pub command_line: String,
    /// The services the server announced, in order (empty in reports made before servers
    /// announced them).
    #[serde(default)]
    pub services: Vec<String>,
    /// How every server was started: its command, placeholders unfilled.
    #[serde(default)]
    pub server_command: String,
    /// Whether the generator kept connections alive (false: a connection per request).
    #[serde(default = "kept_alive")]
    pub keepalive: bool,
    /// The protocol every server and load spoke (`h1` in reports made before protocols).
    #[serde(default)]
    pub protocol: brigade_clients::Protocol,
    /// HTTP/2 requests in flight per connection (1 over HTTP/1.1 and in older reports).
    #[serde(default = "one_stream")]
    pub streams: u32,
    /// Open loop: the requests per second every runtime was offered (`None`: closed loop).
    #[serde(default)]
    pub rate: Option<f64>,
    /// The seed of the generator's random choices, the same for every run, so every runtime
    /// received the same request stream (absent in reports made before).
    #[serde(default)]
    pub seed: Option<u64>,
    /// The `--threshold`s, as given.
    #[serde(default)]
    pub thresholds: Vec<String>,
    /// Lines the user added to the setup section (`--setup-note`), e.g. how external servers ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup_notes: Vec<setup::SetupLine>,
    /// Whether the servers were external (`--external`): compare neither started nor configured them.
    #[serde(default)]
    pub external: bool,
    /// How the `--slo` searches were made, when there were any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<SloSetup>,
}

/// How the `--slo` searches were made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloSetup {
    /// The SLOs, every one to hold.
    pub slo: Vec<String>,
    /// The bracket's precision, percent.
    pub precision_pct: f64,
    /// Sub-windows per step.
    #[serde(default)]
    pub windows: u32,
    /// Sub-windows a rate may pool before not yet known counts as failed.
    #[serde(default)]
    pub max_windows: u32,
    /// Independent searches per runtime and cell.
    #[serde(default)]
    pub searches: u32,
    /// `--slo-start`, when given.
    #[serde(default)]
    pub start_per_s: Option<f64>,
    /// `--slo-target-rate`, when given.
    #[serde(default)]
    pub target_rate_per_s: Option<f64>,
    /// Seconds per sub-window.
    pub window_s: f64,
    /// Warm-up seconds per step.
    pub warmup_s: f64,
    /// How each step's server was made, and the order of the steps.
    pub interleaving: String,
}

/// What the isolated runs (or, without them, the SLO search's steps) measured, in words.
fn runs_words(s: &Settings) -> String {
    let window = format!(
        "{} s measured after {} s warm-up",
        render::trim(s.duration_s),
        render::trim(s.warmup_s)
    );
    match &s.slo {
        Some(slo) if s.repeat == 0 => format!(
            "no isolated runs (--slo): every search step {} sub-windows of {} s after {} s warm-up",
            slo.windows,
            render::trim(s.duration_s),
            render::trim(s.warmup_s)
        ),
        _ => format!("isolated runs: {window}, repeat {}", s.repeat),
    }
}

/// How the side-by-side runs were made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideSetup {
    /// Load levels, shares of the server CPUs (when rates were not given).
    pub levels: Vec<f64>,
    /// Rates given per runtime (`--side-by-side-rates`).
    pub rates: Option<Vec<f64>>,
    /// Rounds per level at the first look, each on fresh servers (reports written before rounds:
    /// 0, one round of `windows`).
    #[serde(default)]
    pub rounds: u32,
    /// Measured windows per level and round.
    pub windows: u32,
    /// Seconds per window.
    pub window_s: u32,
    /// Warm-up seconds before the first window.
    pub warmup_s: f64,
    /// Seconds counted by `perf stat` after the windows (0: none).
    pub count_s: u32,
    /// Extra seconds allowed for more rounds of undecided levels.
    pub budget_s: f64,
}

fn kept_alive() -> bool {
    true
}

fn no_preload() -> Vec<u64> {
    vec![0]
}

/// How the store state of every run was made fresh.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StateSetup {
    /// In words: what each run started from (empty for reports made before runs had their own
    /// servers).
    pub how: String,
    /// Preloaded data folders prepared once and copied for each run (the embedded store).
    pub prepared: Vec<PreparedState>,
}

/// A data folder filled once with `--preload` and copied for every run that needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreparedState {
    /// Documents per collection.
    pub preload: u64,
    /// Seconds the preparing server took from spawn to ready (the fill included).
    pub startup_s: f64,
    /// Seconds the fill itself took, as the server reported it (all collections).
    pub fill_s: f64,
    /// Bytes of the folder.
    pub bytes: u64,
    /// How the preparing server ended.
    pub stop: Option<StopOutcome>,
    /// Its log file.
    pub log: String,
}

/// How one run's fresh store state was made.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StateReset {
    /// The fresh server process the run was made on.
    pub pid: u32,
    /// In words: `fresh data folder`, `copy of the prepared 1,000-document folder`, `fresh
    /// process`, `fresh databases run7_*`.
    pub how: String,
    /// Seconds spent copying a prepared data folder, before the server started (not measured).
    pub copy_s: Option<f64>,
    /// Seconds the server spent preloading at start-up, as it reported them (all collections).
    pub preload_s: Option<f64>,
    /// Documents the server said it preloaded, per collection.
    pub preloaded: BTreeMap<String, u64>,
    /// Seconds from spawn to every service ready (any preload included).
    pub startup_s: f64,
}

/// One server process's life.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerRecord {
    /// The runtime it served with.
    pub runtime: String,
    /// The run it served (its index in the order of runs; every run has a fresh server). In reports
    /// made before that, the round it served.
    pub round: u32,
    /// Documents per collection its store held at start.
    #[serde(default)]
    pub preload: u64,
    /// Its process id.
    pub pid: u32,
    /// Service → base URL.
    pub urls: BTreeMap<String, String>,
    /// The CPUs the kernel allowed it (`Cpus_allowed_list`), as checked after start.
    pub cpus_allowed: Option<String>,
    /// Seconds from spawn to every service ready.
    pub startup_s: f64,
    /// Resident memory once ready, before any load, MiB.
    pub rss_idle_mib: f64,
    /// Resident memory after its last run, MiB.
    pub rss_after_mib: Option<f64>,
    /// The most it ever had resident (`VmHWM`), MiB.
    pub rss_peak_mib: Option<f64>,
    /// How it ended.
    pub stop: Option<StopOutcome>,
    /// Its log file (stdout and stderr).
    pub log: String,
    /// Where its CPU and memory figures came from, when not its `/proc` (a server compare did not
    /// start: its `/metrics`, or nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl ServerRecord {
    /// The record of a server just started for `runtime`: its process, CPUs, start-up time and
    /// memory once ready.
    pub fn started(
        runtime: &str,
        round: u32,
        preload: u64,
        process: &brigade_meter::servers::ServerProcess,
        log: &Path,
    ) -> ServerRecord {
        let pid = process.pid();
        ServerRecord {
            runtime: runtime.to_owned(),
            round,
            preload,
            pid,
            urls: process.urls(),
            cpus_allowed: brigade_meter::procstat::allowed_cpus(pid),
            startup_s: process.started_in().as_secs_f64(),
            rss_idle_mib: brigade_meter::procstat::read(pid)
                .map(|r| r.rss_kib as f64 / 1024.0)
                .unwrap_or(0.0),
            rss_after_mib: None,
            rss_peak_mib: None,
            stop: None,
            log: log.display().to_string(),
            source: None,
        }
    }

    /// Reads its memory after its last run and stops it, recording how it ended.
    pub fn stop(&mut self, process: brigade_meter::servers::ServerProcess) -> &StopOutcome {
        let pid = self.pid;
        self.rss_after_mib = brigade_meter::procstat::read(pid)
            .ok()
            .map(|r| r.rss_kib as f64 / 1024.0);
        self.rss_peak_mib = brigade_meter::procstat::peak_rss_kib(pid)
            .ok()
            .map(|kib| kib as f64 / 1024.0);
        self.stop
            .insert(process.stop(brigade_meter::servers::STOP_GRACE))
    }
}

/// One load run and what the servers and the generator did during it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Position in the order of runs (0-based).
    pub index: usize,
    /// Which repeat it belongs to (0-based).
    pub repeat: u32,
    /// The runtime loaded.
    pub runtime: String,
    /// The scenario run.
    pub scenario: String,
    /// Closed-loop users.
    pub users: u32,
    /// Documents per collection preloaded before the fixtures.
    #[serde(default)]
    pub preload: u64,
    /// How the run's fresh store state was made (absent in older reports).
    #[serde(default)]
    pub reset: Option<StateReset>,
    /// The generator's result, if the run completed.
    pub result: Option<LoadResult>,
    /// Why the run failed, if it did.
    pub error: Option<String>,
    /// The server process over the measured window.
    pub server: ProcUsage,
    /// The generator (this process) over the measured window, as sampled from `/proc`.
    pub generator: ProcUsage,
    /// The generator's CPU use reported for the run, percent of one core.
    pub generator_cpu_percent: f64,
    /// Why the run counts as generator-bound, if it does.
    pub generator_bound: Option<String>,
    /// Why the run counts as contended by other processes, if it does.
    #[serde(default)]
    pub contended: Option<String>,
    /// The run's CPU figures: both processes and both sides' CPUs (whoever used them).
    #[serde(default)]
    pub cpu: RunCpu,
    /// The server's raw samples over the whole run (fixtures and warm-up included).
    pub server_samples: ProcSeries,
    /// The measured window on the samples' clock, seconds: (start, end).
    pub window_s: (f64, f64),
}

impl RunRecord {
    /// Successful requests per second (answered as the scenario expected), if the run completed.
    pub fn ok_per_s(&self) -> Option<f64> {
        let result = self.result.as_ref()?;
        (result.elapsed_s > 0.0).then(|| result.total.ok as f64 / result.elapsed_s)
    }

    /// The server's user + system CPU time over the measured window ÷ the requests completed in
    /// it, µs; `None` if the run failed, completed nothing, or the server was not sampled.
    pub fn server_cpu_us_per_request(&self) -> Option<f64> {
        let result = self.result.as_ref()?;
        let cpu_s = self.server.cpu_percent / 100.0 * result.elapsed_s;
        (result.total.requests > 0 && cpu_s > 0.0)
            .then(|| cpu_s * 1e6 / result.total.requests as f64)
    }
}

/// One line of the table: a runtime at one scenario, user count and preload, medians over the
/// repeats.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The scenario.
    pub scenario: String,
    /// Closed-loop users.
    pub users: u32,
    /// Documents per collection preloaded before the fixtures.
    #[serde(default)]
    pub preload: u64,
    /// The runtime.
    pub runtime: String,
    /// Runs that completed.
    pub runs: u32,
    /// Runs that failed.
    pub failed_runs: u32,
    /// Requests completed over all runs.
    pub requests: u64,
    /// Median hits/s.
    pub hits_per_s: f64,
    /// Slowest run's hits/s.
    pub hits_per_s_min: f64,
    /// Fastest run's hits/s.
    pub hits_per_s_max: f64,
    /// (max − min) / median, percent; 0 for a single run.
    pub spread_pct: f64,
    /// Median successful hits/s (what verdicts compare).
    pub ok_per_s: f64,
    /// Median bandwidth, both directions, KiB/s.
    pub kib_per_s: f64,
    /// Median mean latency, ms.
    pub mean_ms: f64,
    /// Median p50, ms.
    pub p50_ms: f64,
    /// Median p90, ms.
    pub p90_ms: f64,
    /// Median p99, ms.
    pub p99_ms: f64,
    /// Median p99.9, ms.
    pub p999_ms: f64,
    /// Median max, ms.
    pub max_ms: f64,
    /// Median error rate, percent of requests.
    pub error_pct: f64,
    /// Median server CPU, percent of one core.
    pub server_cpu_pct: f64,
    /// Median server CPU µs per request (user + system over the window ÷ requests; what the
    /// efficiency verdict compares), 0 where unknown.
    #[serde(default)]
    pub server_cpu_us_per_request: f64,
    /// Median generator CPU, percent of one core.
    pub generator_cpu_pct: f64,
    /// Largest server RSS seen in any run, MiB.
    pub peak_rss_mib: f64,
    /// Runs that were generator-bound.
    pub generator_bound_runs: u32,
    /// Runs in which other processes took a share of the CPUs.
    #[serde(default)]
    pub contended_runs: u32,
    /// Median busy share of the server's CPUs (anyone's use), percent of one core.
    #[serde(default)]
    pub server_cpus_busy_pct: f64,
    /// User-mode CPU µs per request, side by side at the cell's lowest level (null: not measured).
    #[serde(default)]
    pub user_cpu_us_per_request: Option<f64>,
    /// Kernel-mode CPU µs per request, side by side at the lowest level.
    #[serde(default)]
    pub system_cpu_us_per_request: Option<f64>,
    /// Syscalls per request, side by side at the lowest level.
    #[serde(default)]
    pub syscalls_per_request: Option<f64>,
    /// Context switches per request, side by side at the lowest level.
    #[serde(default)]
    pub context_switches_per_request: Option<f64>,
    /// Instructions per request (callgrind, `--instructions`).
    #[serde(default)]
    pub instructions_per_request: Option<f64>,
}

/// The verdicts' rule in words: `equivalence ±2% efficiency, ±5% throughput; 95% intervals`.
pub fn rule_words(rule: &crate::verdict::Rule) -> String {
    use crate::verdict::Measure;
    format!(
        "equivalence margin ±{}% efficiency, ±{}% throughput; {}% confidence intervals",
        render::trim(rule.margin_pct(Measure::Efficiency)),
        render::trim(rule.margin_pct(Measure::Throughput)),
        render::trim(rule.confidence_pct)
    )
}

/// The side-by-side settings in words.
pub fn side_words(side: &SideSetup) -> String {
    let levels = match &side.rates {
        Some(rates) => format!(
            "given rates {} requests/s per runtime",
            rates
                .iter()
                .map(|r| rate_words(*r))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => format!(
            "load levels {} of the server CPUs in total (each cell's rates guessed from its \
             isolated runs, then corrected by two 1-window probes side by side)",
            side.levels
                .iter()
                .map(|l| format!("{:.0}%", l * 100.0))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    format!(
        "every runtime's server alive at once on the server CPUs, each driven open loop at the same \
         rate with the same seed; {levels}; {} windows of {} s after {} s warm-up, each server's \
         CPU from its CPU-time clock (ns, exited threads included); then {} s counted by perf \
         stat (syscalls, context switches); up to {} s more windows for undecided levels \
         (--budget)",
        side.windows,
        side.window_s,
        render::trim(side.warmup_s),
        side.count_s,
        render::trim(side.budget_s)
    )
}

/// Checks every threshold against every run.
pub fn check_thresholds(
    runs: &[RunRecord],
    thresholds: &[brigade_load::threshold::Threshold],
) -> Vec<RunCheck> {
    use brigade_load::threshold::{Check, Figures};
    let mut out = Vec::new();
    for run in runs {
        for threshold in thresholds {
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
    out
}

/// Fills each row's cost breakdown from the side-by-side level of its cell with the lowest rate.
pub fn add_breakdown(rows: &mut [Row], side: &[brigade_meter::window::SideCell]) {
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

/// The verdicts for one scenario at one user count and preload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellVerdict {
    /// The scenario.
    pub scenario: String,
    /// Closed-loop users.
    pub users: u32,
    /// Documents per collection preloaded.
    #[serde(default)]
    pub preload: u64,
    /// The throughput verdict (successful hits/s): what was decided and why.
    pub verdict: Verdict,
    /// The efficiency verdict (server CPU µs per request side by side, lower is better) over the
    /// cell's load levels.
    #[serde(default)]
    pub efficiency: Option<Verdict>,
    /// The efficiency verdict at each side-by-side load level.
    #[serde(default)]
    pub efficiency_levels: Vec<LevelVerdict>,
    /// The cell's efficiency leader: the best runtime and those equivalent to it, over its levels
    /// (decided when every level's leader is decided and all name the same group).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader: Option<brigade_stats::Leader>,
    /// The capacity verdict (`--slo`): the highest rate holding every SLO, higher is better.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Verdict>,
}

/// The efficiency verdict of a cell at one side-by-side load level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelVerdict {
    /// The level (`40%` of the server CPUs, or `given`).
    pub level: String,
    /// The rate offered to every runtime, requests/s.
    pub rate_per_s: f64,
    /// The share of the server CPUs the level kept busy, percent (what the level measured, beside
    /// the share its name asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_pct: Option<f64>,
    /// What was decided and why.
    pub verdict: Verdict,
    /// The level's leader: the best runtime and those equivalent to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader: Option<brigade_stats::Leader>,
}

/// The verdicts for one scenario over its cells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioVerdict {
    /// The scenario.
    pub scenario: String,
    /// The throughput verdict: what was decided and why.
    pub verdict: Verdict,
    /// The efficiency verdict (server CPU µs per request, lower is better).
    #[serde(default)]
    pub efficiency: Option<Verdict>,
    /// The capacity verdict (`--slo`) over the scenario's cells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Verdict>,
}

/// Builds the table rows from the runs, in the order of `scenarios`, `preloads`, `users` and
/// `runtimes`.
pub fn rows(
    runs: &[RunRecord],
    scenarios: &[String],
    users: &[u32],
    preloads: &[u64],
    runtimes: &[String],
) -> Vec<Row> {
    let mut rows = Vec::new();
    for scenario in scenarios {
        for &preload in preloads {
            for &count in users {
                for runtime in runtimes {
                    let all: Vec<&RunRecord> = runs
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
    rows
}

fn row(scenario: &str, users: u32, runtime: &str, runs: &[&RunRecord]) -> Row {
    let done: Vec<(&RunRecord, &LoadResult)> = runs
        .iter()
        .filter_map(|r| r.result.as_ref().map(|res| (*r, res)))
        .collect();
    let pick = |f: &dyn Fn(&RunRecord, &LoadResult) -> f64| -> f64 {
        verdict::median(&done.iter().map(|(r, res)| f(r, res)).collect::<Vec<_>>())
    };
    let hits: Vec<f64> = done.iter().map(|(_, res)| res.total.hits_per_s).collect();
    let median_hits = verdict::median(&hits);
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
        server_cpu_us_per_request: verdict::median(
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

impl Report {
    /// Where each runtime's server CPU and memory came from, when not from `/proc` (servers
    /// compare did not start), once per runtime and source.
    pub fn figure_sources(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for server in &self.servers {
            if let Some(source) = &server.source {
                let entry = (server.runtime.clone(), source.clone());
                if !out.contains(&entry) {
                    out.push(entry);
                }
            }
        }
        out
    }

    /// The comparison's setup section (machine, versions, threads, CPUs, settings, command line).
    pub fn setup(&self) -> setup::Setup {
        let t = &self.threads;
        let s = &self.settings;
        let mut out = setup::Setup {
            machine: self.machine.clone(),
            versions: self.versions.clone(),
            lines: Vec::new(),
            command_line: s.command_line.clone(),
        };
        out.line("Threads", self.threads_words())
            .line(
                "CPUs",
                format!(
                    "server {} / generator {}{}",
                    pin::list(&t.cpus.server),
                    pin::list(&t.cpus.generator),
                    if t.cpus.pinned {
                        ""
                    } else {
                        " (shared, not pinned)"
                    }
                ),
            )
            .line("Settings", self.settings_words())
            .line(
                "Interleaving",
                match &s.slo {
                    Some(slo) if s.repeat == 0 => slo.interleaving.clone(),
                    _ => s.interleaving.clone(),
                },
            );
        self.server_lines(&mut out);
        self.recorded_lines(&mut out);
        out
    }

    /// The setup's threads: the servers' workers (or that they are the servers' own) and the
    /// generator's threads.
    fn threads_words(&self) -> String {
        let t = &self.threads;
        let reported = t
            .workers_reported
            .iter()
            .map(|(rt, w)| format!("{rt} {}", w.map_or("?".to_owned(), |w| w.to_string())))
            .collect::<Vec<_>>()
            .join(", ");
        let servers = if self.settings.external {
            "the servers' own (started outside compare, which set neither their workers nor their \
             CPUs)"
                .to_owned()
        } else {
            format!(
                "every runtime `--workers {}` (as printed: {reported})",
                t.server_workers
            )
        };
        format!(
            "{servers}; generator {} thread(s); {}",
            t.generator_threads, t.cpus.note
        )
    }

    /// The setup's settings: what ran, how often, under which rule and load.
    fn settings_words(&self) -> String {
        let s = &self.settings;
        format!(
            "scenarios {}; {} {}; preload {}; {}; request timeout {} ms; {}; {}{}{}",
            s.scenarios.join(", "),
            match s.rate {
                Some(_) => "connections",
                None => "users",
            },
            s.users
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            s.preloads
                .iter()
                .map(|&n| count(n))
                .collect::<Vec<_>>()
                .join(", "),
            runs_words(s),
            s.timeout_ms,
            rule_words(&s.rule),
            load_words(s),
            s.seed
                .map(|seed| format!("; generator seed {seed} (every run)"))
                .unwrap_or_default(),
            if s.quick { "; --quick" } else { "" }
        )
    }

    /// The setup's lines on the servers, each when it applies: side by side, calibration, limits,
    /// how they started.
    fn server_lines(&self, out: &mut setup::Setup) {
        let s = &self.settings;
        if let Some(side) = &s.side_by_side {
            out.line("Side by side", side_words(side));
        }
        if !s.handicaps.is_empty() {
            out.line(
                "Calibration",
                s.handicaps
                    .iter()
                    .map(|(r, us)| format!("{r} --handicap-us {us}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
        }
        if !self.threads.limits_reported.is_empty() {
            out.line(
                "Server limits",
                setup::limits_text(&self.threads.limits_reported),
            );
        }
        if !s.services.is_empty() || !s.server_command.is_empty() {
            out.line(
                "Server",
                format!(
                    "services {} (as the server announced them); started as `{}`",
                    if s.services.is_empty() {
                        "?".to_owned()
                    } else {
                        s.services.join(", ")
                    },
                    s.server_command
                ),
            );
        }
    }

    /// The setup's lines recorded along the run: fresh state, the user's notes, where figures
    /// came from, the prepared data folders.
    fn recorded_lines(&self, out: &mut setup::Setup) {
        if !self.state.how.is_empty() {
            out.line("Fresh state", self.state.how.clone());
        }
        for note in &self.settings.setup_notes {
            out.line(note.label.clone(), note.text.clone());
        }
        for (runtime, source) in self.figure_sources() {
            out.line(format!("Server figures, {runtime}"), source);
        }
        for p in &self.state.prepared {
            out.line(
                format!("Prepared data folder, preload {}", count(p.preload)),
                format!(
                    "filled in {:.2} s (server ready after {:.2} s), {:.1} MiB, {}",
                    p.fill_s,
                    p.startup_s,
                    p.bytes as f64 / (1024.0 * 1024.0),
                    p.stop.as_ref().map_or("?".to_owned(), ToString::to_string)
                ),
            );
        }
    }
}

/// One stream per connection: the default of reports made before protocols.
fn one_stream() -> u32 {
    1
}

/// How the load was offered, in words: `closed loop, keep-alive` or `open loop at 2,000
/// requests/s, a connection per request`, and the protocol when it is not plaintext HTTP/1.1
/// (`, over h2-tls, 4 stream(s) per connection`).
pub fn load_words(s: &Settings) -> String {
    let wire = brigade_meter::wire::Wire::new(s.protocol, s.streams);
    let over = if s.protocol == brigade_clients::Protocol::H1 {
        String::new()
    } else {
        format!(", over {}", wire.describe())
    };
    format!(
        "{}, {}{over}",
        match (s.rate, &s.slo) {
            (Some(rate), _) => format!("open loop at {} requests/s", rate_words(rate)),
            (None, Some(_)) if s.repeat == 0 => "open loop at the search's rates".to_owned(),
            (None, _) => "closed loop".to_owned(),
        },
        if s.keepalive {
            "keep-alive"
        } else {
            "a new connection per request"
        }
    )
}

/// A rate as a reader wants it: `40`, `2,000`, `12.5`.
pub fn rate_words(rate: f64) -> String {
    if rate.fract() == 0.0 && rate < 1e15 {
        count(rate as u64)
    } else {
        render::trim(rate)
    }
}

/// `10 users` or `10 users, preload 1,000`.
pub fn cell_name(report: &Report, cell: &CellVerdict) -> String {
    if preload_varies(report) {
        format!("{} users, preload {}", cell.users, count(cell.preload))
    } else {
        format!("{} users", cell.users)
    }
}

/// Whether the report's cells differ by preload (then every cell names its own).
pub fn preload_varies(report: &Report) -> bool {
    report.settings.preloads.iter().any(|&n| n != 0)
}
