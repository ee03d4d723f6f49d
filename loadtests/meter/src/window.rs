//! One side-by-side window set: every runtime's server, already running on the same CPUs, driven
//! at the same offered rate by its own open-loop generator (all started at one agreed instant,
//! all with the one seed), each server's CPU-time clock read at every window boundary
//! ([`crate::counters`]), requests per window from each generator's per-second series, then
//! extra counting windows for `perf stat`. What compare's side-by-side cells and, later, the SLO
//! search reuse; starting the servers and choosing the rates is theirs.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use brigade_load::engine::{self, LoadConfig};
use brigade_load::scenario::Scenario;
use brigade_load::shard::{Fixtures, ShardPlan};
use brigade_records::result::LoadResult;

use crate::counters::{self, CpuClock, EventCounts, Ticks};
use crate::procstat::{read_cpus, CpuSample, CpuSeries};
use brigade_records::cpus::CpuPlan;
use brigade_records::result::GENERATOR_SATURATED;
use brigade_records::side::{Level, Looks, SideCell, SideRuntime, ACHIEVED_SHARE, MAX_ERROR_SHARE};

/// A running server to measure.
#[derive(Debug, Clone)]
pub struct WindowServer {
    /// Its name in the comparison (`hyper#2`).
    pub label: String,
    /// Its CPU time in nanoseconds: its process's clock, or its containers' cgroups.
    pub clock: CpuClock,
    /// Service → base URL, for the scenario.
    pub targets: BTreeMap<String, String>,
    /// The calibration cost planted in it, µs per request, if any.
    pub handicap_us: Option<f64>,
}

/// What one window set sends and reads.
#[derive(Debug, Clone)]
pub struct WindowPlan<'a> {
    /// The scenario every generator sends.
    pub scenario: &'a Scenario,
    /// Its name in the report.
    pub label: &'a str,
    /// Connections per server.
    pub users: u32,
    /// Documents preloaded per collection (for the report).
    pub preload: u64,
    /// The load level.
    pub level: &'a Level,
    /// Measured windows.
    pub windows: u32,
    /// Seconds per window.
    pub window_s: u32,
    /// Warm-up before the first window.
    pub warmup: Duration,
    /// Seconds counted by `perf stat` after the windows (0: none).
    pub count_s: u32,
    /// Keep connections alive.
    pub keepalive: bool,
    /// Generator threads per server.
    pub threads: u32,
    /// Per-request timeout.
    pub timeout: Duration,
    /// The one seed of every generator.
    pub seed: u64,
    /// Where servers and generators run.
    pub cpus: &'a CpuPlan,
    /// What every generator speaks (the servers were started to speak it).
    pub wire: crate::wire::Wire,
    /// Offset each generator's schedule by its place in the list (only when the rounds rotate
    /// every server through every place; see [`measure`]).
    pub stagger: bool,
}

/// How a level's reason starts when a runtime completed less than it was offered; [`assemble`]
/// adds who was busy.
pub const SHORT_OF_OFFERED: &str = "short of the offered rate";

/// What one measured window set of a level collected for one server.
#[derive(Debug)]
struct Collected {
    cpu_ns: Vec<u64>,
    ticks: (Ticks, Ticks),
    counts: Result<EventCounts, String>,
    /// Seconds `perf stat` counted.
    counted_s: f64,
    new_threads: bool,
}

/// One window set of one level on the running servers: every server driven at the level's rate
/// by its own open-loop generator, all started in one instant, each server's CPU-time clock read
/// at every window boundary, then the counting windows.
pub fn measure(plan: &WindowPlan<'_>, servers: &[WindowServer]) -> anyhow::Result<SideCell> {
    let windows = plan.windows.max(1) as usize;
    let window = Duration::from_secs(u64::from(plan.window_s.max(1)));
    let counting = Duration::from_secs(u64::from(plan.count_s));
    let scenario = plan.scenario;
    let level = plan.level;
    let loads = configs_and_fixtures(plan, servers, window * windows as u32 + counting)?;
    // One agreed start for every generator: their windows open in the same instant. The lead
    // covers starting the generators' threads, 300 ms from now at least; a generator up to half
    // the warm-up late (a stall of the VM) starts at once with a shorter warm-up, since the
    // windows are timed from here, not from its start, so the lead itself can be that much
    // shorter (every set pays it).
    let late_ok = plan.warmup / 2;
    let lead = Duration::from_millis(300)
        .saturating_sub(late_ok)
        .max(Duration::from_millis(100));
    let start_wall = SystemTime::now() + lead;
    let start = Instant::now() + lead;
    // The engine opens its window `warmup` after the agreed start (`start_at` lies well beyond
    // its own 5 ms lead).
    let window_open = start + plan.warmup;
    // With `stagger`, each generator's schedule is offset by its share of one send interval, so
    // the servers' requests arrive interleaved rather than in the same instants: the CPU then meets
    // them in the order of the list, and the first pays the CPU's wake-up every time (measured
    // here at +5-10% with seven servers) — a cost of the place, which rounds that rotate the
    // order through every place remove (`brigade_stats::all_pairs`), leaving less scatter than
    // the same instants do. Without, the order the servers meet the ticks in shifts at random.
    let stagger = if plan.stagger {
        1.0 / (level.rate_per_s.max(1.0) * loads.len().max(1) as f64)
    } else {
        0.0
    };
    let (results, collected) = std::thread::scope(|scope| {
        let handles: Vec<_> = loads
            .into_iter()
            .enumerate()
            .map(|(i, (config, fixtures))| {
                let plan = ShardPlan {
                    start_at: Some(start_wall + Duration::from_secs_f64(stagger * i as f64)),
                    late_ok,
                    fixtures: Some(fixtures),
                    ..ShardPlan::default()
                };
                scope.spawn(move || engine::run_shard(&config, scenario, &plan))
            })
            .collect();
        // This thread reads the clocks while the generators run.
        let collected = collect(plan.cpus, servers, window_open, window, windows, counting);
        let results: Vec<anyhow::Result<LoadResult>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a generator thread panicked")))
            })
            .collect();
        (results, collected)
    });
    Ok(assemble(plan, servers, results, collected))
}

/// Every generator's configuration (the level's rate for `duration`) and fixtures, made before
/// anyone's clock starts: each on its own server, all at once (one after another they took
/// 0.2–0.6 s of every set).
fn configs_and_fixtures(
    plan: &WindowPlan<'_>,
    servers: &[WindowServer],
    duration: Duration,
) -> anyhow::Result<Vec<(LoadConfig, Fixtures)>> {
    let (scenario, level) = (plan.scenario, plan.level);
    let configs: Vec<LoadConfig> = servers
        .iter()
        .map(|server| {
            plan.wire.apply(LoadConfig {
                targets: server.targets.clone(),
                users: None,
                rate: Some(level.rate_per_s),
                connections: plan.users,
                duration: Some(duration),
                requests: None,
                warmup: plan.warmup,
                keepalive: plan.keepalive,
                threads: plan.threads,
                timeout: plan.timeout,
                think: Duration::ZERO,
                cpus: plan.cpus.generator_mask().map(<[usize]>::to_vec),
                progress: false,
                seed: Some(plan.seed),
                ..LoadConfig::default()
            })
        })
        .collect();
    let made: Vec<anyhow::Result<_>> = std::thread::scope(|scope| {
        let handles: Vec<_> = configs
            .iter()
            .zip(servers)
            .map(|(config, server)| {
                scope.spawn(move || {
                    engine::make_fixtures(config, scenario)
                        .with_context(|| format!("{}: fixtures", server.label))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a fixtures thread panicked")))
            })
            .collect()
    });
    configs
        .into_iter()
        .zip(made)
        .map(|(config, fixtures)| Ok((config, fixtures?)))
        .collect()
}

/// One runtime's row of a level from its generator's result and what the clocks read; the reason
/// the level cannot be judged, if this runtime's figures say so.
fn runtime_row(
    plan: &WindowPlan<'_>,
    server: &WindowServer,
    result: anyhow::Result<LoadResult>,
    c: Collected,
) -> (SideRuntime, Option<String>) {
    let level = plan.level;
    let windows = plan.windows.max(1) as usize;
    let per = plan.window_s.max(1) as usize;
    let span_s = (per * windows) as f64;
    let mut row = SideRuntime {
        runtime: server.label.clone(),
        handicap_us: server.handicap_us,
        ..SideRuntime::default()
    };
    let result = match result {
        Ok(result) => result,
        Err(err) => {
            row.error = Some(format!("{err:#}"));
            let why = format!("failed: {} did not run: {err:#}", server.label);
            return (row, Some(why));
        }
    };
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
    row.window_cpu_ns = c.cpu_ns;
    row.achieved_per_s = row.requests as f64 / span_s;
    row.cpu_us_per_request = row.overall_cost();
    let user = c.ticks.1.user.saturating_sub(c.ticks.0.user) as f64;
    let system = c.ticks.1.system.saturating_sub(c.ticks.0.system) as f64;
    if user + system > 0.0 {
        row.user_cpu_us_per_request = Some(row.cpu_us_per_request * user / (user + system));
        row.system_cpu_us_per_request = Some(row.cpu_us_per_request * system / (user + system));
    }
    // Open loop: the requests sent while counting are the offered rate over the counted time.
    let counted = (c.counted_s * level.rate_per_s).max(1.0);
    match &c.counts {
        Ok(counts) => {
            row.syscalls_per_request = Some(counts.syscalls as f64 / counted);
            row.context_switches_per_request = Some(counts.context_switches as f64 / counted);
            if c.new_threads {
                row.counts_note = Some(
                    "threads started while counting are not counted: a lower bound".to_owned(),
                );
            }
        }
        Err(why) => row.counts_note = Some(format!("not measured: {why}")),
    }
    row.side_by_side_p50_ms = result.total.latency.p50_ms;
    row.side_by_side_p99_ms = result.total.latency.p99_ms;
    let mut why = None;
    if (row.requests as f64) < ACHIEVED_SHARE * level.rate_per_s * span_s {
        why = Some(format!(
            "{SHORT_OF_OFFERED}: {} completed {:.0}/s of the {:.0}/s offered",
            server.label, row.achieved_per_s, level.rate_per_s
        ));
    } else if row.errors as f64 > MAX_ERROR_SHARE * row.requests.max(1) as f64 {
        why = Some(format!(
            "failed: {} answered {} of {} requests with errors",
            server.label, row.errors, row.requests
        ));
    }
    (row, why)
}

/// Turns what the generators and the clocks measured into a level's figures, and judges whether
/// the level can be judged at all (the generator kept up, nothing failed).
fn assemble(
    plan: &WindowPlan<'_>,
    servers: &[WindowServer],
    results: Vec<anyhow::Result<LoadResult>>,
    collected: CollectedAll,
) -> SideCell {
    let level = plan.level;
    let windows = plan.windows.max(1) as usize;
    let window_s = f64::from(plan.window_s.max(1));
    let mut not_judged: Option<String> = None;
    let mut runtimes = Vec::new();
    for (position, ((server, result), c)) in servers
        .iter()
        .zip(results)
        .zip(collected.servers)
        .enumerate()
    {
        let (mut row, why) = runtime_row(plan, server, result, c);
        row.round_positions = vec![position as u32];
        if let Some(why) = why {
            not_judged.get_or_insert(why);
        }
        runtimes.push(row);
    }
    let (server_busy, server_task) = busy(&plan.cpus.server, &collected.server_cpus);
    let (generator_busy, _) = busy(&plan.cpus.generator, &collected.generator_cpus);
    let interrupt_s = |pair: &(CpuSample, CpuSample)| {
        ((pair.1.busy_s - pair.1.task_s) - (pair.0.busy_s - pair.0.task_s)).max(0.0)
    };
    let all_requests: u64 = runtimes.iter().map(|r| r.requests).sum();
    let interrupts_us_per_request = (all_requests > 0).then(|| {
        let generator = if plan.cpus.generator == plan.cpus.server {
            0.0
        } else {
            interrupt_s(&collected.generator_cpus)
        };
        (interrupt_s(&collected.server_cpus) + generator) * 1e6 / all_requests as f64
    });
    let capacity = plan.cpus.server.len().max(1) as f64;
    let servers_pct: f64 = runtimes
        .iter()
        .map(|r| r.busy_cpus(window_s) * 100.0 / capacity)
        .sum();
    judge_cpus(plan, &mut not_judged, server_busy, generator_busy);
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
        round_windows: Vec::new(),
        looks: Looks::default(),
        runtimes,
        server_cpus_busy_pct: server_busy,
        generator_cpus_busy_pct: generator_busy,
        others_on_server_cpus_pct: (server_task - servers_pct).max(0.0),
        interrupts_us_per_request,
        not_judged,
        measured_again: Vec::new(),
    }
}

/// Each side's CPUs over the windows, as the sampler's series reads them: busy and task time, in
/// percent of their capacity.
fn busy(cpus: &[usize], pair: &(CpuSample, CpuSample)) -> (f64, f64) {
    let series = CpuSeries {
        cpus: cpus.to_vec(),
        samples: vec![pair.0, pair.1],
    };
    let b = series.busy(pair.0.t_s, pair.1.t_s);
    let of = |percent: f64| percent / b.capacity_percent.max(1.0) * 100.0;
    (of(b.busy_percent), of(b.task_percent))
}

/// Whether a window set fell short of its offered rate while neither side's CPUs were saturated:
/// the servers were waiting (a durable write's fsync stalls every server of the set alike), the
/// one shortfall that says nothing about the runtimes, so that the set may be measured again.
pub fn fell_short_waiting(cell: &SideCell) -> bool {
    cell.not_judged
        .as_deref()
        .is_some_and(|why| why.starts_with(SHORT_OF_OFFERED))
        && !saturated(cell.server_cpus_busy_pct)
        && !saturated(cell.generator_cpus_busy_pct)
}

/// Whether CPUs this busy (percent of their capacity) count as saturated.
fn saturated(busy_pct: f64) -> bool {
    busy_pct >= GENERATOR_SATURATED * 100.0
}

/// A pinned generator whose CPUs were saturated leaves the level not judged; a level that fell
/// short of the offered rate says whose CPUs were busy.
fn judge_cpus(
    plan: &WindowPlan<'_>,
    not_judged: &mut Option<String>,
    server_busy: f64,
    generator_busy: f64,
) {
    if plan.cpus.pinned && saturated(generator_busy) {
        *not_judged = Some(format!(
            "generator-bound: the generator's CPUs were {generator_busy:.0}% busy"
        ));
    } else if let Some(short) = not_judged
        .as_mut()
        .filter(|why| why.starts_with(SHORT_OF_OFFERED))
    {
        // Who fell behind: the servers' CPUs full, or neither side busy (waiting: a disk's fsync
        // stalls every server alike), in words beside the figure.
        let who = if saturated(server_busy) {
            "the server CPUs were saturated"
        } else {
            "neither side's CPUs were saturated: the servers were waiting (a durable write's \
             fsync stalls every server of the cell alike)"
        };
        short.push_str(&format!(
            " (server CPUs {server_busy:.0}% busy, generator CPUs {generator_busy:.0}%: {who})"
        ));
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
    cpus: &CpuPlan,
    servers: &[WindowServer],
    window_open: Instant,
    window: Duration,
    windows: usize,
    counting: Duration,
) -> CollectedAll {
    let mut all = CollectedAll {
        servers: servers.iter().map(|_| Collected::default()).collect(),
        ..CollectedAll::default()
    };
    let mut readings: Vec<Vec<Option<u64>>> = vec![Vec::with_capacity(windows + 1); servers.len()];
    for k in 0..=windows {
        let at = window_open + window * k as u32;
        let now = Instant::now();
        if at > now {
            std::thread::sleep(at - now);
        }
        for (server, reading) in servers.iter().zip(readings.iter_mut()) {
            reading.push(server.clock.read_ns().ok());
        }
        // Stamped with the window boundary, so that `CpuSeries::busy` reads the pair as a span.
        let edge = |set: &[usize]| CpuSample {
            t_s: (k as u64 * window.as_secs()) as f64,
            ..read_cpus(set).unwrap_or_default()
        };
        if k == 0 {
            all.server_cpus.0 = edge(&cpus.server);
            all.generator_cpus.0 = edge(&cpus.generator);
            for (server, c) in servers.iter().zip(all.servers.iter_mut()) {
                c.ticks.0 = server.clock.ticks().unwrap_or_default();
            }
        }
        if k == windows {
            all.server_cpus.1 = edge(&cpus.server);
            all.generator_cpus.1 = edge(&cpus.generator);
            for (server, c) in servers.iter().zip(all.servers.iter_mut()) {
                c.ticks.1 = server.clock.ticks().unwrap_or_default();
            }
        }
    }
    for (c, reading) in all.servers.iter_mut().zip(&readings) {
        c.cpu_ns = window_cpu_ns(reading);
    }
    if counting.is_zero() {
        for c in &mut all.servers {
            c.counts = Err("not counted (--count 0)".to_owned());
        }
        return all;
    }
    let before: Vec<Vec<u32>> = servers.iter().map(|s| s.clock.threads()).collect();
    let seconds = counting.as_secs_f64() - 0.2;
    let started: Vec<anyhow::Result<counters::Counting>> = servers
        .iter()
        .map(|s| counters::start_counting(&s.clock.pids(), seconds))
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
        c.counted_s = seconds;
        let after = server.clock.threads();
        c.new_threads = after.iter().any(|t| !before.contains(t));
    }
    all
}

/// Each window's CPU time, nanoseconds, from a clock's `readings` at the window boundaries (None
/// where a read failed); 0, the mark of an unknown window, for both windows beside a failed read.
///
/// A failed read once counted as a reading of 0: the window before it then looked free and the
/// one after carried the process's whole cumulative CPU time, an outlier the verdict kept.
fn window_cpu_ns(readings: &[Option<u64>]) -> Vec<u64> {
    readings
        .windows(2)
        .map(|w| match (w[0], w[1]) {
            (Some(before), Some(after)) => after.saturating_sub(before),
            _ => 0,
        })
        .collect()
}

impl Default for Collected {
    fn default() -> Collected {
        Collected {
            cpu_ns: Vec::new(),
            ticks: (Ticks::default(), Ticks::default()),
            counts: Err("not counted".to_owned()),
            counted_s: 0.0,
            new_threads: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_shortfall_with_neither_side_saturated_is_one_of_waiting() {
        let short = |server: f64, generator: f64, why: &str| SideCell {
            server_cpus_busy_pct: server,
            generator_cpus_busy_pct: generator,
            not_judged: Some(why.to_owned()),
            ..SideCell::default()
        };
        let shortfall = format!("{SHORT_OF_OFFERED}: warp completed 226/s of the 229/s offered");
        assert!(fell_short_waiting(&short(77.0, 20.0, &shortfall)));
        assert!(!fell_short_waiting(&short(95.0, 20.0, &shortfall)));
        assert!(!fell_short_waiting(&short(77.0, 95.0, &shortfall)));
        assert!(!fell_short_waiting(&short(
            77.0,
            20.0,
            "failed: warp answered 9 of 10"
        )));
        assert!(!fell_short_waiting(&SideCell::default()));
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

    #[test]
    fn a_failed_clock_read_leaves_both_its_windows_unusable_and_out_of_the_total() {
        // The process had used 10 s of CPU before the windows and uses 1 s in each of four; the
        // read at the third boundary fails.
        let readings = [
            Some(10e9 as u64),
            Some(11e9 as u64),
            None,
            Some(13e9 as u64),
            Some(14e9 as u64),
        ];
        let row = SideRuntime {
            window_cpu_ns: window_cpu_ns(&readings),
            window_requests: vec![1000; 4],
            requests: 4000,
            ..SideRuntime::default()
        };
        assert!(
            row.window_cpu_ns.iter().all(|&ns| ns <= 1e9 as u64),
            "a window carries the cumulative CPU: {:?}",
            row.window_cpu_ns
        );
        let costs = row.window_costs();
        assert_eq!(costs[0], 1000.0, "{costs:?}");
        assert!(costs[1].is_nan() && costs[2].is_nan(), "{costs:?}");
        assert_eq!(costs[3], 1000.0, "{costs:?}");
        assert_eq!(row.overall_cost(), 1000.0);
        assert_eq!(row.busy_cpus(1.0), 1.0);
    }
}
