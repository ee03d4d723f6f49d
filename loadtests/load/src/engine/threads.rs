//! The generator threads' lives as the run sees them: an agreed start, the threads started
//! together (pinned when asked), watched while they run (progress, the measured window's end, a
//! stop from outside), and joined with what each counted.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{anyhow, bail, Context, Result};

use super::progress::ProgressView;
use super::seconds;
use super::stats::{self, RouteStats};
use super::worker::{self, Progress, Share, Shared};
use super::LoadConfig;
use crate::scenario::Pools;
use crate::shard::ShardPlan;

/// The instant `--start-at` names, or `None` without one; now when it passed less than the plan's
/// `late_ok` ago; an error when it passed longer ago.
pub(super) fn agreed_start(plan: &ShardPlan) -> Result<Option<Instant>> {
    let Some(at) = plan.start_at else {
        return Ok(None);
    };
    let wait = match at.duration_since(SystemTime::now()) {
        Ok(wait) => wait,
        Err(late) if late.duration() <= plan.late_ok => Duration::ZERO,
        Err(late) => bail!(
            "--start-at was {:.1} s ago: the shards would not start together (choose a later time)",
            late.duration().as_secs_f64()
        ),
    };
    Ok(Some(Instant::now() + wait))
}

/// The generator threads of a run, started, and what each reports its progress in.
pub(super) struct Threads {
    pub(super) handles: Vec<std::thread::JoinHandle<Result<worker::ThreadOutput>>>,
    pub(super) progress: Vec<Arc<Progress>>,
}

/// Starts one generator thread per share (pinned when `cpus` are given), waits until every one
/// has built its runtime, and sets the clock they all start on: just ahead, or `start_at`.
pub(super) fn start_threads(
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
pub(super) struct Watched {
    pub(super) finished: Instant,
    pub(super) finished_wall: SystemTime,
    /// The process's CPU seconds when measuring began (and that instant), once seen.
    pub(super) cpu_at_start: Option<(Instant, f64)>,
    pub(super) cpu_at_end: f64,
}

/// Waits for the threads to end, drawing the progress bar and reading the process's CPU time
/// when the measured window opens and when the run ends.
pub(super) fn watch(
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
pub(super) struct Joined {
    pub(super) routes: Vec<RouteStats>,
    pub(super) seconds: seconds::SecondSeries,
    pub(super) handshakes: stats::HandshakeStats,
}

/// Joins the threads and adds up their routes (`routes` of them), seconds and handshakes.
pub(super) fn join_threads(
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
