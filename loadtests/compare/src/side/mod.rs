//! Side by side: every runtime's server alive at once on the same server CPUs, each driven at the
//! same offered rate with the same seed, each server's CPU time read in short windows. The
//! per-window paired ratio of CPU per request is compare's efficiency figure.
//!
//! Why: runs of one runtime after another on a shared machine drift (measured here: ±12% per
//! 1-second slice between two hyper servers run one after the other), while servers measured in
//! the same seconds share whatever the machine does in those seconds — a neighbour's burst, the
//! hypervisor taking the CPU, a cache flushed — and it cancels in the ratio (±0.4% A/A after 20 s).
//!
//! One cell (scenario × users × preload) runs in **rounds** (`--rounds`): two fresh servers of one
//! runtime differ by about 0.7% in cost, an effect no number of windows on one pair can cover, so
//! the server instance is the unit of replication and each round starts every runtime afresh.
//! Between rounds the order in which servers start, their generators start and their clocks are
//! read at a window boundary rotates, and each gets new ports. One round in order:
//! 1. one fresh server per runtime (its own fresh store state, as an isolated run's), all pinned
//!    to the server CPUs, started at once; a runtime on servers compare did not start
//!    (`--external` with `--external-cgroup`: containers) is taken as it runs, its CPU read from
//!    its cgroups (its rounds then share one instance, and the report says so);
//! 2. in the first round only, short probes set each level's rate from the busy share the
//!    servers measure (the rounds after keep those rates);
//! 3. per load level: each server's fixtures made on its own store with the one seed (the setup
//!    steps send the same requests, so every store holds the same data); then one open-loop
//!    generator per server, all started at one agreed instant (the engine's `start_at`), each at
//!    the level's rate over `users` connections and with the one seed, so every runtime receives
//!    the same request stream and its data grows the same way;
//! 4. at every window boundary after the warm-up, each server's CPU-time clock is read, back to
//!    back ([`counters`]); requests per window come from each generator's per-second series;
//! 5. in the first round, after the measured windows, the same load goes on for the counting
//!    windows while `perf stat` counts syscalls and context switches (kept apart from the CPU
//!    windows, since counting costs);
//! 6. the servers stop, while the next round starts and measures its levels (its records are
//!    joined after them).
//!
//! After every cell's first look, `--budget` adds rounds ([`budget`]) to the levels still open:
//! fresh copies of the runtimes still in question filling every place (so the level's load stays
//! what it names).
//!
//! Latency measured here includes the other servers' work on the same CPU: it is recorded and
//! labelled so, and never judged (the isolated runs judge latency).

pub(crate) mod aim;
pub(crate) mod budget;
pub(crate) mod instructions;

use brigade_meter::window::{fell_short_waiting, WindowPlan, WindowServer};

use aim::{busy_share, corrected_level, corrected_rate, missed_share, off_its_share, reaim};

use brigade_records::side::{extend, merge_copies, Level, Looks, SideCell};

use std::time::{Duration, Instant};

use anyhow::Context;
use brigade_load::scenario::Scenario;

use crate::measure::Bench;
use crate::phases::Phase;
use crate::state;
use brigade_meter::counters::CpuClock;
use brigade_meter::servers::announce::Announced;
use brigade_meter::servers::{self, ServerProcess, ServerSpec};
use brigade_report::ServerRecord;

pub(crate) use crate::settings::{SideSettings, DEFAULT_COUNT_S, DEFAULT_WINDOWS};

/// The warm-up of a probe: the servers are warm already from their fixtures and earlier sets.
const PROBE_WARMUP: Duration = Duration::from_millis(500);

/// How many times a probe that saturates the servers is halved before the levels keep their rates.
const MAX_PROBE_HALVINGS: u64 = 2;
/// Seconds of the probe that corrects a level's rate by what the servers measure side by side.
const PROBE_WINDOWS: u32 = 1;

/// A side-by-side cell to run.
#[derive(Debug, Clone)]
pub(crate) struct CellPlan<'a> {
    /// The scenario to send.
    pub scenario: &'a Scenario,
    /// Its name in the report.
    pub label: &'a str,
    /// Connections per runtime.
    pub users: u32,
    /// Documents preloaded per collection.
    pub preload: u64,
    /// The levels to run (after [`run_cell`], the rates its first round settled on).
    pub levels: Vec<Level>,
    /// Its index among side-by-side cells (names logs and folders).
    pub index: usize,
}

/// One server of a side-by-side cell: started for it, or external (`--external`, read through
/// its cgroups).
struct Running {
    label: String,
    services: Announced,
    clock: CpuClock,
    started: Option<Started>,
}

/// A server the cell started, with what stopping it needs.
struct Started {
    process: ServerProcess,
    record: ServerRecord,
    _state: state::RunState,
}

/// The most rounds one cell may run (first look and budget together); it spaces the rounds'
/// folder numbers and seeds.
pub(crate) const MAX_ROUNDS: u32 = 64;

/// Runs a cell's first look: `--rounds` rounds, each on fresh servers of every runtime, every
/// level measured in each. Returns every level (its windows round after round), the servers'
/// records, and `plan.levels` set to the rates the first round settled on (what later rounds,
/// and [`budget::more_rounds`], run at).
pub(crate) fn run_cell(
    bench: &Bench<'_>,
    plan: &mut CellPlan<'_>,
) -> (Vec<SideCell>, Vec<ServerRecord>) {
    let side = &bench.settings.side;
    let mut cells: Vec<SideCell> = Vec::new();
    let mut records = Vec::new();
    let mut stopping: Option<Stopping> = None;
    for round in 0..side.rounds.max(1) {
        let servers = match start_all(bench, plan, round) {
            Ok(servers) => servers,
            Err(err) => {
                let reason = format!(
                    "failed: servers not started in round {}: {err:#}",
                    round + 1
                );
                println!("side by side {} {} users: {reason}", plan.label, plan.users);
                fail_levels(bench, plan, &mut cells, &reason);
                break;
            }
        };
        if round == 0 {
            cells = first_round(bench, plan, &servers);
        } else {
            let all: Vec<usize> = (0..plan.levels.len()).collect();
            let busy = later_round(bench, plan, &servers, &mut cells, &all, round);
            if round == 1 {
                reaim(&mut plan.levels, &mut cells, &busy);
            }
        }
        // The round before's servers have had this round's start and levels to finish stopping.
        if let Some(stopping) = stopping.take() {
            records.extend(stopping.join(bench));
        }
        stopping = Some(Stopping::start(servers));
    }
    if let Some(stopping) = stopping {
        records.extend(stopping.join(bench));
    }
    let planned = if side.budget.is_zero() { 1 } else { 2 };
    for cell in &mut cells {
        cell.looks = Looks {
            rounds: vec![cell.rounds().len() as u32],
            planned,
            stopped: None,
            contenders: Vec::new(),
        };
    }
    (cells, records)
}

/// Every level of a cell marked not judged for `reason` (blank if it has no figures yet).
fn fail_levels(bench: &Bench<'_>, plan: &CellPlan<'_>, cells: &mut Vec<SideCell>, reason: &str) {
    if cells.is_empty() {
        *cells = plan
            .levels
            .iter()
            .map(|l| blank_cell(bench, plan, l, reason.to_owned()))
            .collect();
    }
    for cell in cells.iter_mut() {
        cell.not_judged.get_or_insert_with(|| reason.to_owned());
    }
}

/// The first round: the probes that set the levels' rates, then every level measured, with the
/// counting windows after each.
fn first_round(bench: &Bench<'_>, plan: &mut CellPlan<'_>, servers: &[Running]) -> Vec<SideCell> {
    let side = &bench.settings.side;
    // A rate and the share of the server CPUs it measured side by side: the isolated runs' cost
    // per request (closed loop, the CPU never idle) understates the cost at a lower rate, so a
    // level's rate is corrected from the nearest rate measured side by side.
    let mut measured = probe(bench, plan, servers);
    let mut cells = Vec::new();
    for i in 0..plan.levels.len() {
        let mut level = corrected_level(&plan.levels[i], measured);
        let shape = |set: u64| SetShape {
            windows: side.windows,
            count_s: side.count_s,
            set,
            warmup: side.warmup,
        };
        // Each attempt its own seed: a second on the same servers with the first's would make the
        // same keys (table numbers) again, refused as taken.
        let measure = |level: &Level, attempt| {
            let set = attempt_set(i, attempt);
            match once_more_if_waited(0, set, |set| {
                timed_set(bench, plan, level, servers, shape(set))
            }) {
                Ok(cell) => cell,
                Err(err) => blank_cell(bench, plan, level, format!("failed: {err:#}")),
            }
        };
        let mut cell = measure(&level, 0);
        print_level(&cell, 1);
        // A level whose busy share missed its name by more than the tolerance is set again from
        // what it measured (a secant through the last two attempts once there are two) and
        // measured again, at most MAX_LEVEL_ATTEMPTS times: the rounds after keep the rate it
        // settles on; one that never lands says so.
        let mut tried = vec![(level.rate_per_s, busy_share(&cell))];
        for attempt in 1..MAX_LEVEL_ATTEMPTS {
            let Some(again) = off_its_share(&level, &cell, &tried) else {
                break;
            };
            println!(
                "  {} kept the server CPUs {:.0}% busy: measured again at {:.0}/s",
                level.label, cell.server_cpus_busy_pct, again.rate_per_s
            );
            level = again;
            cell = measure(&level, attempt);
            print_level(&cell, 1);
            tried.push((level.rate_per_s, busy_share(&cell)));
        }
        if let Some(missed) = missed_share(&level, &cell, tried.len()) {
            level.from = format!("{}; {missed}", level.from);
            cell.rate_from.clone_from(&level.from);
        }
        plan.levels[i] = level.clone();
        if cell.not_judged.is_none() {
            measured = Some((level.rate_per_s, busy_share(&cell)));
        }
        cells.push(cell);
    }
    cells
}

/// A round after the first: the levels `which` measured again on fresh servers, each appended to
/// its level as a round of its own. Returns each level's busy share in this round (None where the
/// round's set was not usable).
fn later_round(
    bench: &Bench<'_>,
    plan: &CellPlan<'_>,
    servers: &[Running],
    cells: &mut [SideCell],
    which: &[usize],
    round: u32,
) -> Vec<(usize, Option<f64>)> {
    let side = &bench.settings.side;
    let mut busy = Vec::new();
    for &i in which {
        let level = &plan.levels[i];
        let shape = |set| SetShape {
            windows: side.windows,
            count_s: 0,
            set,
            warmup: side.warmup,
        };
        let measured = once_more_if_waited(round, set_number(round, i), |set| {
            timed_set(bench, plan, level, servers, shape(set))
        });
        let more = match measured {
            Ok(more) => more,
            Err(err) => blank_cell(
                bench,
                plan,
                level,
                format!("failed in round {}: {err:#}", round + 1),
            ),
        };
        let mut more = more;
        more.runtimes = merge_copies(more.runtimes, f64::from(side.window_s));
        let usable = more.not_judged.is_none() && more.windows > 0;
        busy.push((i, usable.then(|| busy_share(&more))));
        extend(&mut cells[i], more);
        print_level(&cells[i], round + 1);
    }
    busy
}

/// What a window set measured again ([`once_more_if_waited`]) adds to its number: above every
/// round's, attempt's and probe's, so its keys meet none of theirs on the same servers.
const AGAIN_SET: u64 = 2 * MAX_ROUNDS as u64 * 16;

/// A window set of round `round` (from 0) that fell short of its offered rate while neither
/// side's CPUs were saturated ([`fell_short_waiting`]: the servers waiting, a durable write's
/// fsync stalling them all alike) is measured once more on the same servers, in the same places,
/// its figures replacing the first's: one stall of the disk then costs a set, not the level, and
/// every round stays a complete block of every runtime in every place. A second shortfall stands
/// (the level is not judged, as for any other). The level says what was measured again.
fn once_more_if_waited(
    round: u32,
    set: u64,
    mut measure: impl FnMut(u64) -> anyhow::Result<SideCell>,
) -> anyhow::Result<SideCell> {
    let first = measure(set)?;
    if !fell_short_waiting(&first) {
        return Ok(first);
    }
    let why = format!(
        "round {}: {}",
        round + 1,
        first.not_judged.unwrap_or_default()
    );
    println!("  {why}: measured again on the same servers");
    let mut again = measure(set + AGAIN_SET)?;
    again.measured_again.push(why);
    Ok(again)
}

/// A level of a cell with no figures, and why.
fn blank_cell(bench: &Bench<'_>, plan: &CellPlan<'_>, level: &Level, reason: String) -> SideCell {
    SideCell {
        scenario: plan.label.to_owned(),
        users: plan.users,
        preload: plan.preload,
        level: level.label.clone(),
        rate_per_s: level.rate_per_s,
        rate_from: level.from.clone(),
        window_s: f64::from(bench.settings.side.window_s),
        not_judged: Some(reason),
        ..SideCell::default()
    }
}

/// Whether `rounds` rounds of `runtimes` runtimes offset each generator by its place: only when
/// the analysis removes the places' own cost, which needs every runtime in every place equally
/// often (rounds a multiple of the runtimes) and enough runtimes to spare the degrees of freedom.
fn staggered(rounds: u32, runtimes: usize) -> bool {
    runtimes >= brigade_stats::MIN_RUNTIMES_FOR_PLACES && (rounds as usize).is_multiple_of(runtimes)
}

/// The window set number of level `level` in round `round` (its seed, [`set_seed`]): every round
/// and level its own, so fixtures drawing keys never meet an earlier set's on the same servers.
fn set_number(round: u32, level: usize) -> u64 {
    1 + u64::from(round) * 16 + level as u64
}

/// How many times the first round may measure a level to bring it within
/// [`aim::LEVEL_TOLERANCE_PCT`] of its share (the first try and two corrections).
const MAX_LEVEL_ATTEMPTS: u64 = 3;

/// The window set number of level `level`'s attempt `attempt` in the first round: the first is the
/// round's own; the others lie above every round's (below [`MAX_ROUNDS`] × 16) and the probes'.
fn attempt_set(level: usize, attempt: u64) -> u64 {
    if attempt == 0 {
        set_number(0, level)
    } else {
        u64::from(MAX_ROUNDS) * 16 + attempt * 16 + level as u64
    }
}

fn print_level(cell: &SideCell, round: u32) {
    let costs: Vec<String> = cell
        .runtimes
        .iter()
        .map(|r| format!("{} {:.1} µs", r.runtime, r.cpu_us_per_request))
        .collect();
    println!(
        "side by side {} {} users, {} round {round} ({:.0}/s each, server CPUs {:.0}% busy, {} \
         windows): {}{}",
        cell.scenario,
        cell.users,
        cell.level,
        cell.rate_per_s,
        cell.server_cpus_busy_pct,
        cell.windows,
        costs.join(", "),
        cell.not_judged
            .as_deref()
            .map(|r| format!(" — not judged: {r}"))
            .unwrap_or_default()
    );
}

/// One window set of `level` on the running servers (the measurement itself is
/// [`brigade_meter::window::measure`]).
/// A rate and the share of the server CPUs it kept busy side by side, from two short probes: the
/// first at the first level's first guess, the second at the rate that guess's share says. The
/// isolated runs' cost per request (closed loop, the CPU never idle) understates the cost at a
/// lower rate, and the cost grows as the rate falls, so one correction overshoots; two land close.
/// Each level's rate is then corrected from the nearest rate measured side by side. `None` for
/// given rates, or when a probe was not usable. Probes use window sets from 100 on (their seeds).
fn probe(bench: &Bench<'_>, plan: &CellPlan<'_>, servers: &[Running]) -> Option<(f64, f64)> {
    let first = plan.levels.first().filter(|l| l.share.is_some())?;
    let _probes = bench.phases.timer(Phase::Probes);
    let mut level = first.clone();
    let mut measured = None;
    // Two usable probes; a first guess that saturates the servers (many runtimes side by side
    // make a closed loop's guess far too high) is halved and probed again, at most twice.
    let (mut usable, mut halved) = (0, 0);
    while usable < 2 {
        let set = 100 + usable + halved;
        if let Some((rate, share)) = measured {
            level.rate_per_s = corrected_rate(first, rate, share);
        }
        let shape = SetShape {
            windows: PROBE_WINDOWS,
            count_s: 0,
            set,
            warmup: PROBE_WARMUP.min(bench.settings.side.warmup),
        };
        match measure_level(bench, plan, &level, servers, shape) {
            Ok(probe) if probe.not_judged.is_none() => {
                measured = Some((level.rate_per_s, busy_share(&probe)));
                usable += 1;
            }
            Ok(probe)
                if measured.is_none()
                    && halved < MAX_PROBE_HALVINGS
                    && busy_share(&probe) >= brigade_records::result::GENERATOR_SATURATED =>
            {
                println!(
                    "side by side {} {} users: the probe at {:.0}/s saturated the server CPUs \
                     ({:.0}% busy); probing again at half the rate",
                    plan.label, plan.users, level.rate_per_s, probe.server_cpus_busy_pct
                );
                level.rate_per_s /= 2.0;
                halved += 1;
            }
            Ok(probe) => {
                println!(
                    "side by side {} {} users: the probe at {:.0}/s was not usable ({}); levels \
                     keep the rates they have",
                    plan.label,
                    plan.users,
                    level.rate_per_s,
                    probe.not_judged.unwrap_or_default()
                );
                return measured;
            }
            Err(err) => {
                println!("side by side probe failed: {err:#}");
                return measured;
            }
        }
    }
    measured
}

/// The seed of window set number `set` on a cell's servers: the same for every runtime in it, so
/// they receive one request stream, and another for each set, so that fixtures drawing keys
/// (table numbers) do not meet the ones an earlier set made on the same servers.
fn set_seed(seed: u64, set: u64) -> u64 {
    if set == 0 {
        return seed;
    }
    (seed ^ set)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .rotate_left(29)
}

/// The seed a cell's window sets derive theirs from: the comparison's own, where every cell has
/// fresh servers; one of its own per cell on external servers, which keep what every earlier cell
/// made (the same seed again would make the same table numbers, refused as taken).
fn cell_seed(settings: &crate::settings::CompareSettings, cell: usize) -> u64 {
    if settings.external.is_empty() {
        settings.seed
    } else {
        set_seed(settings.seed, 1_000 + cell as u64)
    }
}

/// The shape of one window set on a cell's servers.
#[derive(Debug, Clone, Copy)]
struct SetShape {
    /// Measured windows.
    windows: u32,
    /// Seconds counted by `perf stat` after them.
    count_s: u32,
    /// Its number on these servers (its seed, [`set_seed`]).
    set: u64,
    /// Warm-up before the first window.
    warmup: Duration,
}

/// [`measure_level`] for a verdict's window set, its time split by what the shape asked
/// ([`crate::phases::Phases::window_set`]); a probe's sets count as the probe's.
fn timed_set(
    bench: &Bench<'_>,
    plan: &CellPlan<'_>,
    level: &Level,
    servers: &[Running],
    shape: SetShape,
) -> anyhow::Result<SideCell> {
    let began = Instant::now();
    let windows = f64::from(bench.settings.side.window_s * shape.windows);
    let (warmup, counts) = (shape.warmup, Duration::from_secs(u64::from(shape.count_s)));
    let out = measure_level(bench, plan, level, servers, shape);
    bench.phases.window_set(
        began.elapsed(),
        warmup,
        Duration::from_secs_f64(windows),
        counts,
    );
    out
}

fn measure_level(
    bench: &Bench<'_>,
    plan: &CellPlan<'_>,
    level: &Level,
    servers: &[Running],
    shape: SetShape,
) -> anyhow::Result<SideCell> {
    let SetShape {
        windows,
        count_s,
        set,
        warmup,
    } = shape;
    let settings = bench.settings;
    let side = &settings.side;
    let scenario = plan.scenario;
    let window_servers = servers
        .iter()
        .map(|s| {
            Ok(WindowServer {
                label: s.label.clone(),
                clock: s.clock.clone(),
                targets: s.services.targets(scenario.label(), &scenario.services())?,
                handicap_us: settings.handicaps.get(&s.label).copied(),
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let window_plan = WindowPlan {
        scenario,
        label: plan.label,
        users: plan.users,
        preload: plan.preload,
        level,
        windows,
        window_s: side.window_s,
        warmup,
        count_s,
        keepalive: settings.keepalive,
        threads: bench.threads,
        timeout: settings.timeout,
        seed: set_seed(cell_seed(settings, plan.index), set),
        cpus: bench.cpus,
        wire: settings.wire,
        // Only rounds whose analysis removes the places' cost may stagger.
        stagger: staggered(side.rounds, settings.runtimes.len()),
    };
    brigade_meter::window::measure(&window_plan, &window_servers)
}

/// Starts one fresh server per runtime for round `round`, all at once, all pinned to the server
/// CPUs; the list comes rotated by the round, so that which server starts, is loaded and has its
/// clock read first moves round by round. An external runtime's servers are taken as they run,
/// their CPU read from their cgroups.
fn start_all(bench: &Bench<'_>, plan: &CellPlan<'_>, round: u32) -> anyhow::Result<Vec<Running>> {
    let every: Vec<(String, u32)> = bench
        .settings
        .runtimes
        .iter()
        .map(|l| (l.clone(), 0))
        .collect();
    start_servers(bench, plan, round, &every)
}

/// Starts the servers `roster` names (each a runtime's label and which copy of it) for round
/// `round`, as [`start_all`] does.
fn start_servers(
    bench: &Bench<'_>,
    plan: &CellPlan<'_>,
    round: u32,
    roster: &[(String, u32)],
) -> anyhow::Result<Vec<Running>> {
    let _starts = bench.phases.timer(Phase::Starts);
    let shift = round as usize % roster.len().max(1);
    let order: Vec<(usize, &(String, u32))> = roster
        .iter()
        .enumerate()
        .cycle()
        .skip(shift)
        .take(roster.len())
        .collect();
    let started: Vec<anyhow::Result<Running>> = std::thread::scope(|scope| {
        let handles: Vec<_> = order
            .iter()
            .map(|&(place, (label, copy))| {
                scope.spawn(move || start_one(bench, plan, round, place, label, *copy))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a server start panicked")))
            })
            .collect()
    });
    let mut running = Vec::new();
    let mut first_err = None;
    for result in started {
        match result {
            Ok(server) => running.push(server),
            Err(err) => {
                first_err.get_or_insert(err);
            }
        }
    }
    match first_err {
        None => Ok(running),
        Some(err) => {
            drop(stop_all(bench, running));
            Err(err)
        }
    }
}

/// Starts (or takes, when external) copy `copy` of the server of runtime `label` in place
/// `place` of round `round`.
fn start_one(
    bench: &Bench<'_>,
    plan: &CellPlan<'_>,
    round: u32,
    place: usize,
    label: &str,
    copy: u32,
) -> anyhow::Result<Running> {
    let settings = bench.settings;
    if let Some(external) = settings.external.iter().find(|e| e.runtime == label) {
        let cgroups: Vec<String> = external.cgroups.iter().map(|(_, c)| c.clone()).collect();
        return Ok(Running {
            label: label.to_owned(),
            services: external.services.clone(),
            clock: CpuClock::of_cgroups(&cgroups)
                .with_context(|| format!("{label}: its cgroups (--external-cgroup)"))?,
            started: None,
        });
    }
    let slot =
        (plan.index * MAX_ROUNDS as usize + round as usize) * settings.runtimes.len() + place;
    let index = 10_000 + slot;
    let name = match copy {
        0 => label.replace('#', "-"),
        n => format!("{}-copy{}", label.replace('#', "-"), n + 1),
    };
    let fresh = bench.state.for_run(index, &name, plan.preload)?;
    let log_path = settings.out_dir.join("logs").join(format!(
        "side-{:03}-r{}-{name}.log",
        plan.index + 1,
        round + 1,
    ));
    let spec = ServerSpec {
        runtime: brigade_meter::servers::runtime_of(label).to_owned(),
        data_dir: fresh.data.path().to_path_buf(),
        preload: fresh.preload_arg,
        database_prefix: fresh.database_prefix.clone(),
        log_path: log_path.clone(),
        handicap_us: settings.handicaps.get(label).copied().unwrap_or(0.0),
        ..bench.server_template()
    };
    let process = servers::start_on_free_ports(&spec, &[], state::ready_timeout(fresh.preload_arg))
        .with_context(|| format!("{label} did not start"))?;
    let clock = CpuClock::of(process.pid())?;
    let record =
        crate::measure::record_started(label, index as u32, plan.preload, &process, &log_path);
    Ok(Running {
        label: label.to_owned(),
        services: process.announced().clone(),
        clock,
        started: Some(Started {
            process,
            record,
            _state: fresh,
        }),
    })
}

/// Stops every server of a round at once (each drains on its own, so one after another would pay
/// every grace period in turn) and returns their records, in order.
fn stop_all(bench: &Bench<'_>, servers: Vec<Running>) -> Vec<ServerRecord> {
    let _stops = bench.phases.timer(Phase::Stops);
    stop_each(servers)
}

/// Stops `servers` at once, each on its own thread; their records in order.
fn stop_each(servers: Vec<Running>) -> Vec<ServerRecord> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = servers
            .into_iter()
            .map(|server| scope.spawn(move || stop(server)))
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().ok().flatten())
            .collect()
    })
}

/// A round's servers stopping while the next round starts and measures: a runtime's own stop can
/// wait long after its drain (ntex's sleeps 350 ms: 0.6 s a round here, a minute of the default
/// run), asleep, while the next round's servers start, take their fixtures and warm up.
struct Stopping(std::thread::JoinHandle<Vec<ServerRecord>>);

impl Stopping {
    fn start(servers: Vec<Running>) -> Stopping {
        Stopping(std::thread::spawn(move || stop_each(servers)))
    }

    /// Their records, once all have stopped; the wait counts as the run's stops.
    fn join(self, bench: &Bench<'_>) -> Vec<ServerRecord> {
        let _stops = bench.phases.timer(Phase::Stops);
        self.0.join().unwrap_or_default()
    }
}

/// Stops a server the cell started and returns its record; an external one is left running.
fn stop(server: Running) -> Option<ServerRecord> {
    let Started {
        process,
        mut record,
        _state,
    } = server.started?;
    let pid = record.pid;
    let outcome = crate::measure::record_stop(&mut record, process);
    if !matches!(
        outcome,
        brigade_records::stop::StopOutcome::Graceful { code: Some(0) }
    ) {
        println!("{} (pid {pid}): {outcome}", server.label);
    }
    Some(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_window_set_on_the_same_servers_has_a_seed_of_its_own() {
        assert_eq!(set_seed(7, 0), 7);
        assert_ne!(set_seed(7, 1), set_seed(7, 2));
        assert_ne!(set_seed(7, 1), 7);
        // Every level of a round, a second attempt at each, and the next round: all different.
        let mut sets: Vec<u64> = (0..2)
            .flat_map(|round| (0..4).map(move |level| set_number(round, level)))
            .chain((1..MAX_LEVEL_ATTEMPTS).flat_map(|a| (0..4).map(move |l| attempt_set(l, a))))
            .chain((0..MAX_ROUNDS).map(|round| set_number(round, 15)))
            .chain(100..110)
            .collect();
        // And each of those measured again.
        sets.extend(sets.clone().into_iter().map(|set| set + AGAIN_SET));
        let all = sets.len();
        sets.sort_unstable();
        sets.dedup();
        assert_eq!(sets.len(), all);
    }

    /// A set as `measure` returns it: short of its rate with the server CPUs `busy` % busy, or not.
    fn set(short: bool, busy: f64) -> SideCell {
        SideCell {
            server_cpus_busy_pct: busy,
            generator_cpus_busy_pct: 20.0,
            not_judged: short.then(|| {
                format!(
                    "{}: warp completed 226/s of the 229/s offered",
                    brigade_meter::window::SHORT_OF_OFFERED
                )
            }),
            ..SideCell::default()
        }
    }

    #[test]
    fn a_set_short_of_its_rate_while_waiting_is_measured_once_more_and_says_so() {
        // Short while waiting, then fine: the second set stands, with the first's reason.
        let mut seen = Vec::new();
        let mut answers = vec![set(true, 77.0), set(false, 78.0)].into_iter();
        let cell = once_more_if_waited(2, 35, |s| {
            seen.push(s);
            Ok(answers.next().unwrap())
        })
        .unwrap();
        assert_eq!(seen, vec![35, 35 + AGAIN_SET]);
        assert!(cell.not_judged.is_none());
        assert_eq!(cell.server_cpus_busy_pct, 78.0);
        assert_eq!(cell.measured_again.len(), 1);
        assert!(cell.measured_again[0].starts_with("round 3: short of the offered rate"));

        // Short twice: the second shortfall stands; measured again once, never more.
        let mut calls = 0;
        let cell = once_more_if_waited(0, 1, |_| {
            calls += 1;
            Ok(set(true, 77.0))
        })
        .unwrap();
        assert_eq!(calls, 2);
        assert!(fell_short_waiting(&cell));

        // Short with the server CPUs saturated, or fine: measured once, as it came.
        for first in [set(true, 95.0), set(false, 60.0)] {
            let mut calls = 0;
            let cell = once_more_if_waited(0, 1, |_| {
                calls += 1;
                Ok(first.clone())
            })
            .unwrap();
            assert_eq!(calls, 1);
            assert_eq!(cell, first);
            assert!(cell.measured_again.is_empty());
        }
    }
}
