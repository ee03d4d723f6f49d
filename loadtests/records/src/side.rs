//! Side-by-side levels as measured: every runtime's CPU time and requests window by window, the
//! rounds of fresh servers they came from, and the looks a level was judged at.

use serde::{Deserialize, Serialize};

/// One runtime in one side-by-side level.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SideRuntime {
    /// The runtime, as the comparison names it (`hyper#2` for a second hyper).
    pub runtime: String,
    /// The planted cost per request, µs (`--handicap`), when one was planted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handicap_us: Option<f64>,
    /// Its CPU time in each measured window, nanoseconds; 0 where it is unknown (a clock read at
    /// either boundary failed): see [`SideRuntime::window_costs`].
    pub window_cpu_ns: Vec<u64>,
    /// Requests it completed in each measured window.
    pub window_requests: Vec<u64>,
    /// Its place in each round's order (0: started, loaded and read first; its generator's
    /// schedule offset least): a position can carry a cost of its own, which the analysis of
    /// balanced rounds removes. Empty in reports written before rounds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub round_positions: Vec<u32>,
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
    /// The spread of its two samples, percent of it (a scenario is a mix of requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions_spread_pct: Option<f64>,
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
    /// CPU µs per request in each window (NaN where a window had no request or no known CPU time).
    ///
    /// A window's CPU time of exactly 0 ns marks it unknown: a server that answered requests in a
    /// second used some CPU doing it, and its clocks count nanoseconds, so 0 is never a real
    /// reading; it is what [`window_cpu_ns`] records beside a failed read. The verdict drops
    /// non-finite costs, so such a window leaves the comparison instead of looking free.
    pub fn window_costs(&self) -> Vec<f64> {
        self.window_cpu_ns
            .iter()
            .zip(&self.window_requests)
            .map(|(&ns, &n)| {
                if n == 0 || ns == 0 {
                    f64::NAN
                } else {
                    ns as f64 / 1e3 / n as f64
                }
            })
            .collect()
    }

    /// The CPUs it kept busy on average over the windows whose CPU time is known (0 when none is),
    /// for windows of `window_s` seconds.
    pub fn busy_cpus(&self, window_s: f64) -> f64 {
        let known: Vec<u64> = self
            .window_cpu_ns
            .iter()
            .copied()
            .filter(|&ns| ns > 0)
            .collect();
        let cpu_s = known.iter().sum::<u64>() as f64 / 1e9;
        cpu_s / (known.len() as f64 * window_s).max(1e-9)
    }

    /// CPU µs per request over the measured windows whose CPU time is known (0 when none is).
    pub fn overall_cost(&self) -> f64 {
        let (cpu_ns, requests) = self
            .window_cpu_ns
            .iter()
            .zip(&self.window_requests)
            .filter(|(&ns, _)| ns > 0)
            .fold((0u64, 0u64), |(cpu, n), (ns, r)| (cpu + ns, n + r));
        cpu_ns as f64 / 1e3 / requests.max(1) as f64
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
    /// Window sets added by `--budget` after the first (reports written before rounds).
    pub extensions: u32,
    /// Windows measured in each round, in order: every round ran fresh servers of every runtime
    /// (their windows follow one another in each runtime's `window_cpu_ns`). Empty in reports
    /// written before rounds: one round of `windows`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub round_windows: Vec<u32>,
    /// The rounds each verdict was drawn at, in order (`[4]`, or `[4, 8]` when `--budget` added
    /// rounds after a first look), and the looks planned, which split the error rate between them.
    #[serde(default, skip_serializing_if = "Looks::is_unplanned")]
    pub looks: Looks,
    /// Every runtime, in the comparison's order.
    pub runtimes: Vec<SideRuntime>,
    /// The server CPUs' busy share over the windows, percent of their capacity.
    pub server_cpus_busy_pct: f64,
    /// The generator CPUs' busy share over the windows, percent of their capacity.
    pub generator_cpus_busy_pct: f64,
    /// Task time on the server CPUs that no server used, percent of their capacity (neighbours;
    /// it lands on every runtime in the same windows, so it is recorded, not disqualifying).
    pub others_on_server_cpus_pct: f64,
    /// The kernel's interrupt and softirq time on the server and generator CPUs together, µs per
    /// request completed (all runtimes' requests): network work done outside any process's or
    /// container's account (loopback and bridge delivery, a container's port forwarding). From
    /// `/proc/stat`'s 10 ms ticks over the whole set; shared by every runtime of the cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupts_us_per_request: Option<f64>,
    /// Why no verdict can be drawn from this level (generator-bound, failed), if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_judged: Option<String>,
}

/// When a level's verdict was looked at: the rounds at each look, and how many looks were
/// planned before any was taken (the error rate is split between them, so that stopping when a
/// look decides keeps the stated confidence).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Looks {
    /// Rounds measured at each look taken.
    pub rounds: Vec<u32>,
    /// Looks planned (1: no budget for more rounds; 2: a first look, then more rounds if open).
    pub planned: u32,
    /// Why an open level got no second look, when it did not (the budget could not decide it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

impl Looks {
    /// Whether nothing was planned (a report written before rounds).
    pub fn is_unplanned(&self) -> bool {
        self.planned == 0
    }
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
    /// The share of the server CPUs (all servers together) the level aims at, when it is a
    /// share and not a given rate: the rate is then corrected by what the servers measure.
    pub share: Option<f64>,
    /// The most the level may offer each runtime (the slowest runtime's isolated rate × share).
    pub cap_per_s: f64,
}

/// The generator must deliver this share of the offered rate for a level to be judged.
pub const ACHIEVED_SHARE: f64 = 0.99;

/// Above this error share a runtime's figures are not judged: cheap failures are no efficiency.
pub const MAX_ERROR_SHARE: f64 = 0.01;

/// Appends a further window set to a level: the next round, measured on fresh servers (`more`
/// may list the runtimes in another order: each is matched by its label).
pub fn extend(cell: &mut SideCell, more: SideCell) {
    let windows = cell.windows as f64;
    let added = more.windows as f64;
    let weigh = |a: f64, b: f64| (a * windows + b * added) / (windows + added).max(1.0);
    cell.server_cpus_busy_pct = weigh(cell.server_cpus_busy_pct, more.server_cpus_busy_pct);
    cell.generator_cpus_busy_pct =
        weigh(cell.generator_cpus_busy_pct, more.generator_cpus_busy_pct);
    cell.others_on_server_cpus_pct = weigh(
        cell.others_on_server_cpus_pct,
        more.others_on_server_cpus_pct,
    );
    cell.interrupts_us_per_request = match (
        cell.interrupts_us_per_request,
        more.interrupts_us_per_request,
    ) {
        (Some(a), Some(b)) => Some(weigh(a, b)),
        (a, b) => a.or(b),
    };
    if cell.round_windows.is_empty() {
        cell.round_windows.push(cell.windows as u32);
    }
    cell.round_windows.push(more.windows as u32);
    cell.windows += more.windows;
    if cell.not_judged.is_none() {
        cell.not_judged = more.not_judged;
    }
    for theirs in more.runtimes {
        let Some(mine) = cell
            .runtimes
            .iter_mut()
            .find(|r| r.runtime == theirs.runtime)
        else {
            continue;
        };
        mine.window_cpu_ns.extend(theirs.window_cpu_ns);
        mine.window_requests.extend(theirs.window_requests);
        mine.round_positions.extend(theirs.round_positions);
        mine.requests += theirs.requests;
        mine.errors += theirs.errors;
        if mine.error.is_none() {
            mine.error = theirs.error;
        }
        let secs = mine.window_requests.len() as f64 * cell.window_s;
        mine.achieved_per_s = mine.requests as f64 / secs.max(1e-9);
        mine.cpu_us_per_request = mine.overall_cost();
    }
}

impl SideCell {
    /// The windows of each round as index ranges into every runtime's per-window series (one
    /// round of every window for a report written before rounds).
    pub fn rounds(&self) -> Vec<std::ops::Range<usize>> {
        if self.round_windows.is_empty() {
            return std::iter::once(0..self.windows).collect();
        }
        let mut start = 0;
        self.round_windows
            .iter()
            .map(|&n| {
                let range = start..start + n as usize;
                start = range.end;
                range
            })
            .collect()
    }
}
