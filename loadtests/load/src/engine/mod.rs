//! The load generator: runs a [`Scenario`] against its targets and measures it.
//!
//! Shape of a run: the scenario's setup steps create their fixtures (one after the other, on one
//! connection per service); then `threads` generator threads, each a single-threaded tokio runtime
//! (optionally pinned to a CPU), start together; each runs its share of the closed-loop users or
//! open-loop paced connections, every one of them with its own HTTP/1.1 connection per service
//! (the generator's own lean client, `brigade_clients::http1`: requests encoded once, answers parsed with
//! `httparse`; no pool, no retries). Each thread counts into its own per-route
//! HdrHistograms and counters; they are merged once at the end, so memory stays constant however
//! long the run is and threads never contend.
//!
//! - Closed loop (`users`): each user sends its next request when the last one has been answered
//!   (plus `think`). Latency is from the moment the request was started to its last byte.
//! - Open loop (`rate`): the `connections` share a fixed schedule of `rate` sends per second; each
//!   latency is measured from the send's *intended* time, so a stalled server's backlog shows in the
//!   percentiles instead of silently lowering the send rate (coordinated omission, corrected the way
//!   wrk2 does it).
//! - Protocols ([`Protocol`]): plaintext HTTP/1.1 (`h1`, the default), HTTP/1.1 over TLS
//!   (`h1-tls`) on the same connection code, and HTTP/2 plaintext or over TLS (`h2c`, `h2-tls`)
//!   through the generator's own client (`brigade_clients::http2`). With HTTP/2 each closed-loop user is one
//!   connection with `streams` request loops on it (users × streams requests in flight), and the
//!   open-loop schedule is spread over connections × streams paced senders, `streams` of them on
//!   each connection.
//!   A TLS run checks one handshake per target before it starts (a certificate not trusted or a
//!   protocol the server does not speak stops it with the reason) and measures every handshake
//!   of the measured window, full and resumed apart (`result::TlsResult`).
//! - Requests started during `warmup` are sent but not counted. A request counts if it started (open
//!   loop: was due) inside the measured window; one still in flight when the window closes is waited
//!   for (at most the timeout) and counted.

mod seconds;
pub mod session;
mod stats;
mod targets;
mod worker;
pub use worker::pin_current_thread;

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{anyhow, bail, Context, Result};

use crate::result::{LoadResult, LoadSettings, Window};
use crate::scenario::{Pools, Scenario};
use crate::shard::{Fixtures, Shard, ShardPlan};
use brigade_clients::{http1, http2, http3, tls, Dialer, Protocol, Target, TlsClient};
use stats::RouteStats;
use worker::{Pace, Progress, Share, Shared};

/// The lowest open-loop rate a run may offer, requests/s (one request every 100 s).
pub const MIN_RATE: f64 = 0.01;
/// The highest open-loop rate a run may offer, requests/s.
pub const MAX_RATE: f64 = 100_000_000.0;

/// Refuses an open-loop rate no schedule can keep: not a number, or outside
/// [`MIN_RATE`]..=[`MAX_RATE`]. `what` names the flag in the message.
pub fn check_rate(what: &str, rate: f64) -> Result<()> {
    if !(rate.is_finite() && (MIN_RATE..=MAX_RATE).contains(&rate)) {
        anyhow::bail!(
            "{what} {rate}: a rate is a number of requests per second from {MIN_RATE} to {MAX_RATE}"
        );
    }
    Ok(())
}

/// How to run a load.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadConfig {
    /// Service name → base URL (`"waiter"` → `"http://127.0.0.1:8081"`); the key `"*"` serves any
    /// service not named.
    pub targets: BTreeMap<String, String>,
    /// Closed loop: the number of users. With neither `users` nor `rate`, `connections` users.
    pub users: Option<u32>,
    /// Open loop: requests per second on a fixed schedule (takes precedence over `users`).
    pub rate: Option<f64>,
    /// Open loop: the connections sending the schedule (closed loop: the default user count).
    pub connections: u32,
    /// Length of the measured window (after warm-up).
    pub duration: Option<Duration>,
    /// Number of measured requests (after warm-up); with `duration` too, whichever ends first.
    pub requests: Option<u64>,
    /// Time sent but not counted before the measured window.
    pub warmup: Duration,
    /// Keep connections open between requests (off: one connection per request).
    pub keepalive: bool,
    /// Generator threads (each a single-threaded runtime); 0 means one per usable CPU.
    pub threads: u32,
    /// Per-request timeout, connection included.
    pub timeout: Duration,
    /// Closed loop: pause between a user's answer and its next request.
    pub think: Duration,
    /// Open loop: sends leave on ticks of this length, every send due since the last tick
    /// together, each latency counted from its tick (h2load's `--rps` ticks every 10 ms or
    /// slower). Zero (the default): each send at its own due time.
    pub pace_tick: Duration,
    /// Pin generator thread `i` to CPU `cpus[i % len]`.
    pub cpus: Option<Vec<usize>>,
    /// Show a progress bar on stderr (only drawn when stderr is a terminal).
    pub progress: bool,
    /// Seed for every random choice (the mix, template values): with one seed, every run sends
    /// each user the same requests in the same order. `None`: a random seed, recorded in the
    /// result's settings so the run can be replayed.
    pub seed: Option<u64>,
    /// The wire protocol (default plaintext HTTP/1.1).
    pub protocol: Protocol,
    /// HTTP/2: requests in flight per connection (per closed-loop user; per paced connection,
    /// each stream a paced sender of its own). 1 for HTTP/1.1.
    pub streams: u32,
    /// The TLS client's settings (used by `h1-tls` and `h2-tls`).
    pub tls: TlsClient,
    /// Keep an exact latency histogram per sub-window of this length (the SLO search judges its
    /// percentile over them); `None`: only the per-second series.
    pub sub_window: Option<Duration>,
}

impl Default for LoadConfig {
    fn default() -> Self {
        LoadConfig {
            targets: BTreeMap::new(),
            users: None,
            rate: None,
            connections: 10,
            duration: Some(Duration::from_secs(10)),
            requests: None,
            warmup: Duration::from_secs(1),
            keepalive: true,
            threads: 0,
            timeout: Duration::from_secs(10),
            think: Duration::ZERO,
            pace_tick: Duration::ZERO,
            cpus: None,
            progress: false,
            seed: None,
            protocol: Protocol::H1,
            streams: 1,
            tls: TlsClient::default(),
            sub_window: None,
        }
    }
}

/// CPUs this process may run on (its affinity mask), at least 1.
pub fn usable_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs `scenario` with `config` and returns the measured result. Blocking: it builds its own
/// threads and runtimes (call it from outside any async runtime, or from `spawn_blocking`).
pub fn run(config: &LoadConfig, scenario: &Scenario) -> Result<LoadResult> {
    run_notifying(config, scenario, None)
}

/// [`run`], sending the instant the measured window opens (after the setup steps and the
/// warm-up) on `notify`, so a caller can time something against the result's per-second
/// series (a fault injected at its second 10).
pub fn run_notifying(
    config: &LoadConfig,
    scenario: &Scenario,
    notify: Option<std::sync::mpsc::Sender<Instant>>,
) -> Result<LoadResult> {
    run_planned(config, scenario, notify, &ShardPlan::default())
}

/// [`run`] as one shard of a run spread over several generators (its share of `config`'s users,
/// rate and requests, its fixtures from a file), starting at an agreed time: see
/// [`crate::shard`].
pub fn run_shard(config: &LoadConfig, scenario: &Scenario, plan: &ShardPlan) -> Result<LoadResult> {
    run_planned(config, scenario, None, plan)
}

/// Sends the scenario's setup steps once, as a run would, and returns the fixtures they made, for
/// the shards of a run to share (`brigade load --setup-only --fixtures FILE`).
pub fn make_fixtures(config: &LoadConfig, scenario: &Scenario) -> Result<Fixtures> {
    let (targets, _) = targets::resolve_targets(scenario, &config.targets, config.protocol)?;
    let tls = check_tls(config, &targets)?;
    let seq = AtomicU64::new(0);
    let seed = config.seed.unwrap_or_else(|| fastrand::u64(..));
    let dialer = Dialer::new(config.protocol, tls.as_deref(), config.tls.resumption);
    let pools = send_setup(scenario, targets, &dialer, config.timeout, &seq, seed)
        .context("scenario setup (fixtures) failed")?;
    Ok(Fixtures::from_pools(
        scenario,
        &pools,
        seq.load(Ordering::Relaxed),
    ))
}

/// One run, whole or a shard: checks the config, lays the run out over threads, sends the setup,
/// starts the threads together, watches them, and adds up what they measured. Each phase is a
/// function below; none of them is on the per-request path.
fn run_planned(
    config: &LoadConfig,
    scenario: &Scenario,
    notify: Option<std::sync::mpsc::Sender<Instant>>,
    plan: &ShardPlan,
) -> Result<LoadResult> {
    check_config(config)?;
    let layout = Layout::new(config, scenario, plan)?;
    let (targets, target_names) =
        targets::resolve_targets(scenario, &config.targets, config.protocol)?;
    let tls = check_tls(config, &targets)?;
    let seed = config.seed.unwrap_or_else(|| fastrand::u64(..));
    let (encoded, prebuilt) = prepare_requests(config, scenario, &targets);

    let shared = Arc::new(Shared {
        scenario: scenario.clone(),
        targets,
        keepalive: config.keepalive,
        timeout: config.timeout,
        think: config.think,
        pace_tick: config.pace_tick,
        warmup: config.warmup,
        duration: config.duration,
        requests: layout.requests,
        claimed: AtomicU64::new(0),
        seq: AtomicU64::new(0),
        spacing: plan
            .shard
            .spacing(plan.fixtures.as_ref().map_or(0, |f| f.seq_used)),
        seed,
        encoded,
        prebuilt,
        protocol: config.protocol,
        streams: config.streams,
        tls,
        resumption: config.tls.resumption,
        sub_window: config.sub_window,
        start: OnceLock::new(),
        stop: plan.stop.clone(),
    });

    let started_at = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let filled = match &plan.fixtures {
        Some(fixtures) => fixtures.pools_for(scenario, plan.shard)?,
        None => run_setup(&shared).context("scenario setup (fixtures) failed")?,
    };
    let pools = scenario.share_pools(&filled, layout.threads);
    let shares = layout.shares(config.streams);
    // An agreed start: checked before any thread starts, so a failure leaves none waiting.
    let start_at = agreed_start(plan)?;
    let threads = start_threads(&shared, shares, pools, layout.cpus.as_deref(), start_at)?;

    let measure_start = shared.measure_start();
    if let Some(tx) = notify {
        let _ = tx.send(measure_start);
    }
    let watched = watch(config, &shared, &threads, measure_start);
    let joined = join_threads(threads.handles, scenario.routes().len())?;
    let window = MeasuredWindow::new(config, measure_start, &watched);
    let mut result = assemble_result(
        config,
        scenario,
        &layout,
        Assembled {
            target_names,
            seed,
            started_at,
            window,
            joined,
        },
    );
    mark_attempt(&mut result, config, plan, shared.stopping());
    Ok(result)
}

/// Records which attempt at its shard `result` was, and, when the run was told to stop
/// (`stopped`) before its window's end, that it was interrupted and after how long.
fn mark_attempt(result: &mut LoadResult, config: &LoadConfig, plan: &ShardPlan, stopped: bool) {
    result.attempt = (plan.attempt > 1).then_some(plan.attempt);
    let cut_short = config
        .duration
        .is_none_or(|d| result.elapsed_s < d.as_secs_f64() - 1e-3);
    if stopped && cut_short {
        result.interrupted = Some(format!(
            "stopped from outside (SIGTERM) after {:.1} s of the measured window{}",
            result.elapsed_s,
            config
                .duration
                .map(|d| format!(" of {:.1} s", d.as_secs_f64()))
                .unwrap_or_default()
        ));
    }
}

/// Refuses a config no run can keep: no end, a zero duration, count or timeout, streams that
/// HTTP/1.1 cannot carry.
fn check_config(config: &LoadConfig) -> Result<()> {
    if config.duration.is_none() && config.requests.is_none() {
        bail!("a run needs a duration or a request count");
    }
    if config.duration.is_some_and(|d| d.is_zero()) || config.requests == Some(0) {
        bail!("the duration and the request count must be more than zero");
    }
    if config.timeout.is_zero() {
        bail!("the timeout must be more than zero");
    }
    if config.streams == 0 {
        bail!("--streams must be at least 1");
    }
    if config.streams > 1 && !config.protocol.multiplexed() {
        bail!(
            "--streams {} needs HTTP/2 or HTTP/3 (--protocol h2c, h2-tls or h3): an HTTP/1.1 connection carries one request at a time",
            config.streams
        );
    }
    Ok(())
}

/// How one run (or this shard of it) is laid out: the loop, its users or paced connections,
/// this shard's share of them and of the request budget, and the threads that carry them.
struct Layout {
    /// Open loop: the run's rate; `None` for a closed loop.
    open: Option<f64>,
    /// The whole run's users (closed loop) or paced connections (open loop).
    tasks: u32,
    /// This shard's users (a block of the run's numbers) or paced connections (every count-th of
    /// the run's, each keeping its place in the run's schedule).
    mine: Vec<u32>,
    /// This shard's part of the request budget.
    requests: Option<u64>,
    /// Generator threads, at most one per task of this shard.
    threads: usize,
    /// The CPUs to pin the threads to, when given.
    cpus: Option<Vec<usize>>,
    /// The shard this generator runs (the whole run unless `--shard`).
    shard: Shard,
}

impl Layout {
    /// The layout `config` and `plan` ask for, or why there is none.
    fn new(config: &LoadConfig, scenario: &Scenario, plan: &ShardPlan) -> Result<Layout> {
        let open = match config.rate {
            Some(r) if !(r.is_finite() && r > 0.0) => {
                bail!("the rate must be a positive number of requests per second")
            }
            Some(r) => Some(r),
            None => None,
        };
        let tasks = match open {
            Some(_) => config.connections,
            None => config.users.unwrap_or(config.connections),
        };
        if tasks == 0 {
            bail!("at least one user (closed loop) or connection (open loop) is needed");
        }
        let shard = plan.shard;
        let mine: Vec<u32> = match open {
            None => {
                let (first, len) = shard.block(u64::from(tasks));
                (first as u32..(first + len) as u32).collect()
            }
            Some(_) => (0..tasks).filter(|&c| shard.owns(u64::from(c))).collect(),
        };
        if mine.is_empty() {
            bail!(
                "shard {shard} has nothing to run: the run has {tasks} user(s)/connection(s), fewer than its {} shards",
                shard.count
            );
        }
        let requests = config.requests.map(|n| shard.block(n).1);
        if requests == Some(0) {
            bail!(
                "shard {shard} has no request to send: --requests is smaller than the shard count"
            );
        }
        if !shard.is_whole() && plan.fixtures.is_none() && !scenario.setup().is_empty() {
            bail!(
                "scenario {} makes fixtures: make them once with `--setup-only --fixtures FILE` and give every shard `--fixtures FILE`",
                scenario.name()
            );
        }
        let cpus = config.cpus.clone().filter(|c| !c.is_empty());
        let wanted_threads = match (config.threads, &cpus) {
            (0, Some(c)) => c.len(),
            (0, None) => usable_cpus(),
            (n, _) => n as usize,
        };
        let threads = wanted_threads.clamp(1, mine.len());
        Ok(Layout {
            open,
            tasks,
            mine,
            requests,
            threads,
            cpus,
            shard,
        })
    }

    /// This shard's users or paced connections.
    fn my_tasks(&self) -> u32 {
        self.mine.len() as u32
    }

    /// Deals the users / paced connections out to the threads, one [`Share`] each.
    fn shares(&self, streams: u32) -> Vec<Share> {
        let (threads, my_tasks) = (self.threads, self.my_tasks());
        match self.open {
            None => {
                let mut first = self.mine[0];
                (0..threads as u32)
                    .map(|t| {
                        let users =
                            my_tasks / threads as u32 + u32::from(t < my_tasks % threads as u32);
                        first += users;
                        Share::Closed {
                            users,
                            first: first - users,
                        }
                    })
                    .collect()
            }
            Some(rate) => {
                // Connection `c`'s streams are the schedule's slots `c * streams ..`: sends spread
                // evenly over connections × streams paced senders.
                let mut v: Vec<Vec<Vec<Pace>>> = vec![Vec::new(); threads];
                let slots = u64::from(self.tasks) * u64::from(streams);
                for (i, &c) in self.mine.iter().enumerate() {
                    v[i % threads].push(
                        (0..u64::from(streams))
                            .map(|s| Pace {
                                first: u64::from(c) * u64::from(streams) + s,
                                stride: slots,
                                rate,
                            })
                            .collect(),
                    );
                }
                v.into_iter()
                    .map(|connections| Share::Open { connections })
                    .collect()
            }
        }
    }
}

/// The instant `--start-at` names, or `None` without one; an error when it has passed.
fn agreed_start(plan: &ShardPlan) -> Result<Option<Instant>> {
    let Some(at) = plan.start_at else {
        return Ok(None);
    };
    let wait = at.duration_since(SystemTime::now()).map_err(|late| {
        anyhow!(
            "--start-at was {:.1} s ago: the shards would not start together (choose a later time)",
            late.duration().as_secs_f64()
        )
    })?;
    Ok(Some(Instant::now() + wait))
}

/// The generator threads of a run, started, and what each reports its progress in.
struct Threads {
    handles: Vec<std::thread::JoinHandle<Result<worker::ThreadOutput>>>,
    progress: Vec<Arc<Progress>>,
}

/// Starts one generator thread per share (pinned when `cpus` are given), waits until every one
/// has built its runtime, and sets the clock they all start on: just ahead, or `start_at`.
fn start_threads(
    shared: &Arc<Shared>,
    shares: Vec<Share>,
    pools: Vec<Pools>,
    cpus: Option<&[usize]>,
    start_at: Option<Instant>,
) -> Result<Threads> {
    let threads = shares.len();
    let barrier = Arc::new(Barrier::new(threads + 1));
    let progress: Vec<Arc<Progress>> = (0..threads)
        .map(|_| Arc::new(Progress::default()))
        .collect();
    let mut handles = Vec::new();
    for (t, (pools, share)) in pools.into_iter().zip(shares).enumerate() {
        let shared = shared.clone();
        let cpu = cpus.map(|c| c[t % c.len()]);
        let progress = progress[t].clone();
        let barrier = barrier.clone();
        let handle = std::thread::Builder::new()
            .name(format!("brigade-load-{t}"))
            .spawn(move || worker::thread_main(shared, share, pools, cpu, progress, barrier))
            .context("Failed to start a generator thread")?;
        handles.push(handle);
    }
    // Every thread has built its runtime and waits at the barrier: start the clock just ahead.
    let t0 = (Instant::now() + Duration::from_millis(5)).max(start_at.unwrap_or(Instant::now()));
    shared.start.set(t0).expect("start set once");
    barrier.wait();
    Ok(Threads { handles, progress })
}

/// What the watching thread saw of a run: when it ended and the process's CPU time over it.
struct Watched {
    finished: Instant,
    finished_wall: SystemTime,
    /// The process's CPU seconds when measuring began (and that instant), once seen.
    cpu_at_start: Option<(Instant, f64)>,
    cpu_at_end: f64,
}

/// Waits for the threads to end, drawing the progress bar and reading the process's CPU time
/// when the measured window opens and when the run ends.
fn watch(
    config: &LoadConfig,
    shared: &Shared,
    threads: &Threads,
    measure_start: Instant,
) -> Watched {
    let bar = ProgressView::new(config, shared, &threads.progress);
    let mut cpu_at_start = None;
    while !threads.handles.iter().all(|h| h.is_finished()) {
        std::thread::sleep(Duration::from_millis(50));
        let now = Instant::now();
        if cpu_at_start.is_none() && now >= measure_start {
            cpu_at_start = Some((now, worker::process_cpu_s()));
        }
        bar.tick(now);
    }
    let finished = Instant::now();
    let finished_wall = SystemTime::now();
    let cpu_at_end = worker::process_cpu_s();
    bar.finish();
    Watched {
        finished,
        finished_wall,
        cpu_at_start,
        cpu_at_end,
    }
}

/// What the threads measured, added up.
struct Joined {
    routes: Vec<RouteStats>,
    seconds: seconds::SecondSeries,
    handshakes: stats::HandshakeStats,
}

/// Joins the threads and adds up their routes (`routes` of them), seconds and handshakes.
fn join_threads(
    handles: Vec<std::thread::JoinHandle<Result<worker::ThreadOutput>>>,
    routes: usize,
) -> Result<Joined> {
    let mut joined = Joined {
        routes: vec![RouteStats::default(); routes],
        seconds: seconds::SecondSeries::default(),
        handshakes: stats::HandshakeStats::default(),
    };
    for h in handles {
        let out = h
            .join()
            .map_err(|_| anyhow!("a generator thread panicked"))??;
        for (acc, r) in joined.routes.iter_mut().zip(&out.routes) {
            acc.merge(r);
        }
        joined.handshakes.merge(&out.handshakes);
        joined.seconds.merge(&out.seconds);
    }
    Ok(joined)
}

/// The measured window in seconds and on the wall clock, and the generator's CPU use over it.
struct MeasuredWindow {
    elapsed_s: f64,
    start_unix_s: f64,
    generator_cpu_percent: f64,
}

impl MeasuredWindow {
    /// The window from `measure_start` to the end `watched` saw, no longer than the duration.
    fn new(config: &LoadConfig, measure_start: Instant, watched: &Watched) -> MeasuredWindow {
        let finished = watched.finished;
        let measured_wall = finished
            .saturating_duration_since(measure_start)
            .as_secs_f64();
        let elapsed_s = match config.duration {
            Some(d) => d.as_secs_f64().min(measured_wall.max(f64::MIN_POSITIVE)),
            None => measured_wall,
        };
        let start_unix_s = crate::shard::unix_s(watched.finished_wall)
            - finished
                .saturating_duration_since(measure_start)
                .as_secs_f64();
        let generator_cpu_percent = match watched.cpu_at_start {
            Some((at, cpu)) if finished > at => {
                100.0 * (watched.cpu_at_end - cpu) / (finished - at).as_secs_f64()
            }
            _ => 0.0,
        };
        MeasuredWindow {
            elapsed_s,
            start_unix_s,
            generator_cpu_percent,
        }
    }
}

/// What a run's result is made of besides its config, scenario and layout.
struct Assembled {
    target_names: Vec<String>,
    seed: u64,
    started_at: String,
    window: MeasuredWindow,
    joined: Joined,
}

/// The run's result: its settings, the per-route and total figures, the seconds and handshakes.
fn assemble_result(
    config: &LoadConfig,
    scenario: &Scenario,
    layout: &Layout,
    parts: Assembled,
) -> LoadResult {
    let Assembled {
        target_names,
        seed,
        started_at,
        window,
        joined,
    } = parts;
    let elapsed_s = window.elapsed_s;
    let mut total = RouteStats::default();
    for r in &joined.routes {
        total.merge(r);
    }
    let routes = joined
        .routes
        .into_iter()
        .zip(scenario.routes())
        .map(|(r, name)| r.into_result(name.clone(), elapsed_s))
        .collect();
    LoadResult {
        settings: settings_of(config, scenario, layout, target_names, seed),
        machine: crate::machine::describe(),
        started_at,
        elapsed_s,
        generator_cpu_percent: window.generator_cpu_percent,
        total: total.into_result("total".into(), elapsed_s),
        routes,
        sub_windows: joined.seconds.sub_windows(),
        seconds: joined.seconds.into_result(),
        window: Some(Window {
            start_unix_s: window.start_unix_s,
            end_unix_s: window.start_unix_s + elapsed_s,
        }),
        shards: Vec::new(),
        tls: config
            .protocol
            .tls()
            .then(|| joined.handshakes.into_result(elapsed_s)),
        attempt: None,
        interrupted: None,
    }
}

/// The settings a result records: this shard's users, rate, connections and requests.
fn settings_of(
    config: &LoadConfig,
    scenario: &Scenario,
    layout: &Layout,
    target_names: Vec<String>,
    seed: u64,
) -> LoadSettings {
    let my_tasks = layout.my_tasks();
    LoadSettings {
        targets: target_names,
        scenario: scenario.label().to_string(),
        users: if layout.open.is_none() {
            Some(my_tasks)
        } else {
            None
        },
        rate: layout
            .open
            .map(|r| r * f64::from(my_tasks) / f64::from(layout.tasks)),
        connections: my_tasks,
        duration_s: config.duration.map(|d| d.as_secs_f64()),
        requests: layout.requests,
        warmup_s: config.warmup.as_secs_f64(),
        keepalive: config.keepalive,
        threads: layout.threads as u32,
        timeout_ms: config.timeout.as_millis() as u64,
        think_ms: config.think.as_millis() as u64,
        pace_tick_ms: (layout.open.is_some() && !config.pace_tick.is_zero())
            .then_some(config.pace_tick.as_secs_f64() * 1e3),
        seed: Some(seed),
        shard: (!layout.shard.is_whole()).then_some(layout.shard),
        protocol: config.protocol,
        streams: config.streams,
    }
}

/// Each request's bytes encoded once for HTTP/1.1, or its HTTP/2 request built once, when its
/// templates have no holes (by request index; `None` where it must be rendered per send).
#[allow(clippy::type_complexity)]
fn prepare_requests(
    config: &LoadConfig,
    scenario: &Scenario,
    targets: &[Target],
) -> (
    Vec<Option<Vec<u8>>>,
    Vec<Option<(http2::Http2Request, bytes::Bytes)>>,
) {
    let literal = scenario
        .requests()
        .iter()
        .map(|spec| (spec, spec.literal()));
    if config.protocol.multiplexed() {
        let built = literal
            .map(|(spec, req)| {
                let req = req?;
                let built = http2::build(&targets[spec.service], &req, config.protocol.tls());
                built.ok().map(|b| (b, req.body))
            })
            .collect();
        (vec![None; scenario.requests().len()], built)
    } else {
        let encoded = literal
            .map(|(spec, req)| {
                req.map(|req| {
                    let mut bytes = Vec::new();
                    http1::encode(&mut bytes, &targets[spec.service], &req, config.keepalive);
                    bytes
                })
            })
            .collect();
        (encoded, vec![None; scenario.requests().len()])
    }
}

/// For a TLS protocol: the run's checked TLS client config, after one handshake with each
/// target succeeded (or found it not listening). `None` for plaintext.
fn check_tls(config: &LoadConfig, targets: &[Target]) -> Result<Option<Arc<rustls::ClientConfig>>> {
    if !config.protocol.tls() {
        return Ok(None);
    }
    let tls = tls::client_config(config.protocol, &config.tls)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("Failed to build the TLS check's runtime")?;
    for target in targets {
        if target.server_name.is_none() {
            tls::server_name(target)?;
        }
        if config.protocol.quic() {
            runtime.block_on(http3::probe(&tls, target))?;
        } else {
            runtime.block_on(tls::probe(&tls, config.protocol, target))?;
        }
    }
    Ok(Some(tls))
}

/// Sends the scenario's setup steps, one after the other, and returns the pools they filled.
fn run_setup(shared: &Shared) -> Result<Pools> {
    send_setup(
        &shared.scenario,
        shared.targets.clone(),
        &shared.dialer(),
        shared.timeout,
        &shared.seq,
        shared.seed,
    )
}

/// Sends `scenario`'s setup steps on one session, `{{seq}}` from `seq`, and returns the pools.
fn send_setup(
    scenario: &Scenario,
    targets: Vec<Target>,
    dialer: &Dialer,
    timeout: Duration,
    seq: &AtomicU64,
    seed: u64,
) -> Result<Pools> {
    if scenario.setup().is_empty() {
        return Ok(scenario.empty_pools());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("Failed to build the setup runtime")?;
    let mut session = session::Session::with_targets(scenario, targets, timeout, seq, Some(seed))
        .dialing(dialer.clone());
    let fixtures = runtime.block_on(session.fixtures());
    runtime.block_on(dialer.close());
    fixtures
}

/// The live progress bar.
struct ProgressView<'a> {
    bar: Option<indicatif::ProgressBar>,
    shared: &'a Shared,
    progress: &'a [Arc<Progress>],
    last: std::cell::Cell<(Instant, u64)>,
}

impl<'a> ProgressView<'a> {
    fn new(
        config: &LoadConfig,
        shared: &'a Shared,
        progress: &'a [Arc<Progress>],
    ) -> ProgressView<'a> {
        let bar = (config.progress && std::io::stderr().is_terminal()).then(|| {
            let (len, template) = match (config.duration, config.requests) {
                (Some(d), _) => (
                    (config.warmup + d).as_millis() as u64,
                    "{spinner} {prefix:>9} [{elapsed_precise}] {wide_bar} {msg}",
                ),
                (None, Some(n)) => (
                    n,
                    "{spinner} {prefix:>9} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
                ),
                (None, None) => (0, "{spinner} {msg}"),
            };
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(len),
                indicatif::ProgressDrawTarget::stderr(),
            );
            if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
                bar.set_style(style);
            }
            bar
        });
        ProgressView {
            bar,
            shared,
            progress,
            last: std::cell::Cell::new((Instant::now(), 0)),
        }
    }

    fn tick(&self, now: Instant) {
        let Some(bar) = &self.bar else { return };
        let done: u64 = self
            .progress
            .iter()
            .map(|p| p.done.load(Ordering::Relaxed))
            .sum();
        let errors: u64 = self
            .progress
            .iter()
            .map(|p| p.errors.load(Ordering::Relaxed))
            .sum();
        let (at, before) = self.last.get();
        let dt = (now - at).as_secs_f64();
        if dt < 0.25 {
            return;
        }
        self.last.set((now, done));
        let rate = (done - before) as f64 / dt;
        let warming = now < self.shared.measure_start();
        bar.set_prefix(if warming { "warm-up" } else { "measuring" });
        match self.shared.requests {
            Some(_) if self.shared.duration.is_none() => {
                bar.set_position(
                    self.shared
                        .claimed
                        .load(Ordering::Relaxed)
                        .min(bar.length().unwrap_or(0)),
                );
            }
            _ => bar.set_position(
                now.saturating_duration_since(self.shared.start.get().copied().unwrap_or(now))
                    .as_millis() as u64,
            ),
        }
        bar.set_message(format!("{rate:>9.0} hits/s  {errors} errors"));
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_no_schedule_can_keep_are_refused() {
        for rate in [0.0, -1.0, 1e-20, f64::NAN, f64::INFINITY, 1e12] {
            let err = check_rate("--rate", rate).unwrap_err().to_string();
            assert!(err.contains("requests per second from"), "{rate}: {err}");
        }
        for rate in [MIN_RATE, 1.0, 2_000.0, MAX_RATE] {
            assert!(check_rate("--rate", rate).is_ok(), "{rate}");
        }
    }
}
