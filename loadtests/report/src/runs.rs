//! The servers a comparison started, its load runs, and the table's rows.

use std::collections::BTreeMap;

use brigade_records::proc::{ProcSeries, ProcUsage};
use brigade_records::result::LoadResult;
use brigade_records::runcpu::RunCpu;
use brigade_records::stop::StopOutcome;
use serde::{Deserialize, Serialize};

use crate::StateReset;

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
