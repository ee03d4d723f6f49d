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

mod assemble;
mod layout;
mod prepare;
mod progress;
mod seconds;
pub mod session;
mod stats;
mod targets;
mod threads;
mod worker;
pub use worker::pin_current_thread;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use brigade_clients::Dialer;
use brigade_records::protocol::{Protocol, TlsClient};

use crate::scenario::Scenario;
use crate::shard::{Fixtures, ShardPlan};
use assemble::{assemble_result, Assembled, MeasuredWindow};
use brigade_records::result::LoadResult;
use layout::Layout;
use prepare::{check_tls, prepare_requests, run_setup, send_setup};
use threads::{agreed_start, join_threads, start_threads, watch};
use worker::Shared;

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
        spacing: crate::shard::spacing(
            plan.shard,
            plan.fixtures.as_ref().map_or(0, |f| f.seq_used),
        ),
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
