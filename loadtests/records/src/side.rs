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
    /// Its fresh servers in each round, when a round ran other than one: the rounds after a first
    /// look run only the runtimes still in question, each in several copies that fill the places
    /// of the others (0: not in that round; its windows there are unknown). Its per-window CPU
    /// time and requests in such a round are its copies' summed, so a window's cost is theirs
    /// pooled. Empty: one server in every round.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub round_copies: Vec<u32>,
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
    /// The window sets that fell short of their offered rate waiting (neither side's CPUs
    /// saturated) and were measured once more on the same servers, the second replacing the
    /// first: `round N: why` each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measured_again: Vec<String>,
}

/// What a side-by-side level still open after its first look needs to be decided, as far as that
/// look can tell: what the judge tells the budget's rounds to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Open {
    /// Rounds in all, at one server of each runtime per round.
    pub rounds: u32,
    /// The runtimes still in question: the best first, then those undecided against it.
    pub contenders: Vec<String>,
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
    /// The runtimes the rounds after the first look ran (the best and those still undecided
    /// against it), when not every runtime: the second look judges them alone on every round, the
    /// others keep what the first look said. Empty: every runtime ran every round.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contenders: Vec<String>,
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
/// may list the runtimes in another order: each is matched by its label). A runtime `more` does
/// not have (a round of the contenders only) gets unknown windows there and no server; one `more`
/// ran in copies ([`merge_copies`]) keeps their count.
pub fn extend(cell: &mut SideCell, more: SideCell) {
    let windows = cell.windows as f64;
    let added = more.windows as f64;
    let rounds_before = cell.rounds().len();
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
    cell.measured_again.extend(more.measured_again);
    let mut more = more.runtimes;
    for mine in &mut cell.runtimes {
        let theirs = more
            .iter()
            .position(|r| r.runtime == mine.runtime)
            .map(|i| more.swap_remove(i));
        let copies = theirs
            .as_ref()
            .map_or(0, |t| t.round_copies.first().copied().unwrap_or(1));
        if copies != 1 || !mine.round_copies.is_empty() {
            if mine.round_copies.is_empty() {
                mine.round_copies = vec![1; rounds_before];
            }
            mine.round_copies.push(copies);
        }
        match theirs {
            Some(theirs) => {
                mine.window_cpu_ns.extend(theirs.window_cpu_ns);
                mine.window_requests.extend(theirs.window_requests);
                mine.round_positions.extend(theirs.round_positions);
                mine.requests += theirs.requests;
                mine.errors += theirs.errors;
                if mine.error.is_none() {
                    mine.error = theirs.error;
                }
            }
            None => {
                let n = added as usize;
                mine.window_cpu_ns.extend(std::iter::repeat_n(0, n));
                mine.window_requests.extend(std::iter::repeat_n(0, n));
                if !mine.round_positions.is_empty() {
                    mine.round_positions.push(0);
                }
            }
        }
        settle(mine, &cell.round_windows, cell.window_s);
    }
}

/// A runtime's figures derived from its windows set again: its rate per server (the seconds its
/// servers were measured, copies counted apart) and its CPU per request.
fn settle(runtime: &mut SideRuntime, round_windows: &[u32], window_s: f64) {
    let windows: u64 = if runtime.round_copies.is_empty() {
        runtime.window_requests.len() as u64
    } else {
        round_windows
            .iter()
            .zip(&runtime.round_copies)
            .map(|(&w, &c)| u64::from(w) * u64::from(c))
            .sum()
    };
    runtime.achieved_per_s = runtime.requests as f64 / (windows as f64 * window_s).max(1e-9);
    runtime.cpu_us_per_request = runtime.overall_cost();
}

/// One round's rows with a runtime's copies made one: per window their CPU time and requests
/// summed (a window unknown in any copy is unknown), their requests and errors added, the copies
/// counted in `round_copies`; each other field from the first copy, the rate per server. Rows
/// keep the order of each runtime's first copy.
pub fn merge_copies(rows: Vec<SideRuntime>, window_s: f64) -> Vec<SideRuntime> {
    let mut merged: Vec<SideRuntime> = Vec::new();
    let mut copies: Vec<u32> = Vec::new();
    for row in rows {
        let Some(i) = merged.iter().position(|m| m.runtime == row.runtime) else {
            merged.push(row);
            copies.push(1);
            continue;
        };
        let mine = &mut merged[i];
        copies[i] += 1;
        for (a, b) in mine.window_cpu_ns.iter_mut().zip(&row.window_cpu_ns) {
            *a = if *a == 0 || *b == 0 { 0 } else { *a + b };
        }
        for (a, b) in mine.window_requests.iter_mut().zip(&row.window_requests) {
            *a += b;
        }
        mine.requests += row.requests;
        mine.errors += row.errors;
        if mine.error.is_none() {
            mine.error = row.error;
        }
    }
    for (row, n) in merged.iter_mut().zip(copies) {
        if n > 1 {
            row.round_copies = vec![n];
            let windows = row.window_requests.len() as u32;
            settle(row, &[windows], window_s);
        }
    }
    merged
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

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, cpu: &[u64], requests: &[u64]) -> SideRuntime {
        SideRuntime {
            runtime: name.into(),
            window_cpu_ns: cpu.to_vec(),
            window_requests: requests.to_vec(),
            round_positions: vec![0],
            requests: requests.iter().sum(),
            ..SideRuntime::default()
        }
    }

    #[test]
    fn copies_of_one_runtime_in_a_round_become_one_row_that_counts_them() {
        let rows = vec![
            row("hyper", &[1_000, 2_000], &[10, 10]),
            row("xitca", &[3_000, 3_000], &[10, 10]),
            row("hyper", &[3_000, 0], &[10, 10]),
        ];
        let merged = merge_copies(rows, 1.0);
        assert_eq!(merged.len(), 2);
        let hyper = &merged[0];
        assert_eq!(hyper.runtime, "hyper");
        assert_eq!(hyper.round_copies, vec![2]);
        // Window 1 pooled; window 2 unknown in one copy, so unknown for both.
        assert_eq!(hyper.window_cpu_ns, vec![4_000, 0]);
        assert_eq!(hyper.window_requests, vec![20, 20]);
        assert_eq!(hyper.requests, 40);
        // The rate stays per server: 40 requests over 2 windows of 2 servers.
        assert_eq!(hyper.achieved_per_s, 10.0);
        assert_eq!(hyper.window_costs()[0], 0.2);
        assert!(merged[1].round_copies.is_empty());
    }

    #[test]
    fn a_round_of_the_contenders_leaves_the_others_unknown_windows_and_no_server() {
        let mut cell = SideCell {
            windows: 2,
            window_s: 1.0,
            runtimes: vec![
                row("hyper", &[1_000, 1_000], &[10, 10]),
                row("axum", &[2_000, 2_000], &[10, 10]),
            ],
            ..SideCell::default()
        };
        let mut hyper = row("hyper", &[4_000, 4_000], &[20, 20]);
        hyper.round_copies = vec![2];
        let more = SideCell {
            windows: 2,
            window_s: 1.0,
            runtimes: vec![hyper],
            ..SideCell::default()
        };
        extend(&mut cell, more);
        assert_eq!(cell.round_windows, vec![2, 2]);
        let (hyper, axum) = (&cell.runtimes[0], &cell.runtimes[1]);
        assert_eq!(hyper.round_copies, vec![1, 2]);
        assert_eq!(axum.round_copies, vec![1, 0]);
        assert_eq!(axum.window_cpu_ns.len(), 4);
        assert!(axum.window_costs()[2].is_nan());
        assert_eq!(axum.round_positions, vec![0, 0]);
        // Per server: hyper's 60 requests over 2 windows of one server and 2 of two.
        assert_eq!(hyper.achieved_per_s, 10.0);
        assert_eq!(axum.achieved_per_s, 10.0);
        assert_eq!(axum.cpu_us_per_request, 0.2);
        // Whole rounds of every runtime keep no copy count.
        let mut plain = cell.clone();
        plain
            .runtimes
            .iter_mut()
            .for_each(|r| r.round_copies.clear());
        plain.round_windows.truncate(1);
        plain.windows = 2;
        for r in &mut plain.runtimes {
            r.window_cpu_ns.truncate(2);
            r.window_requests.truncate(2);
            r.round_positions.truncate(1);
            r.requests = 20;
        }
        let again = plain.clone();
        extend(&mut plain, again);
        assert!(plain.runtimes.iter().all(|r| r.round_copies.is_empty()));
    }
}
