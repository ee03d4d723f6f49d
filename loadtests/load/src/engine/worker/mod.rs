//! One generator thread: a single-threaded tokio runtime running its share of the users (closed
//! loop) or paced connections (open loop), each with its own connection per service, counting into
//! the thread's own statistics. With HTTP/2 a user (paced connection) is one connection per
//! service shared by `streams` request loops (paced senders), each with its own random draws and
//! timeout, counting as a closed-loop user (a paced connection) of its own.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

mod loops;
mod send;

pub(crate) use send::Deadline;

use anyhow::{Context, Result};

use brigade_clients::http1::Connection;
use brigade_clients::http2::{self, Http2Stream, SharedConnection};
use brigade_clients::{Dialer, Target};
use brigade_records::protocol::Protocol;

use super::seconds::SecondSeries;
use super::stats::{HandshakeStats, RouteStats};
use crate::scenario::{Pools, Scenario};
use loops::{closed_user, paced_connection};

/// How late a paced send may leave without being charged to the server: the timer's granularity.
/// Open-loop latency is measured from `min(actual send, intended send + SLACK)`: a request that
/// left a few hundred microseconds late because the timer wheel ticks in milliseconds is not the
/// server's fault, one that left late because its connection was still waiting is.
pub(crate) const TIMER_SLACK: Duration = Duration::from_millis(1);

/// What every generator thread reads: the scenario, the targets, the clock.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) scenario: Scenario,
    /// By the scenario's service index.
    pub(crate) targets: Vec<Target>,
    pub(crate) keepalive: bool,
    pub(crate) timeout: Duration,
    pub(crate) think: Duration,
    /// Open loop: sends leave on ticks of this length ([`on_tick`]); zero, each at its own time.
    pub(crate) pace_tick: Duration,
    pub(crate) warmup: Duration,
    pub(crate) duration: Option<Duration>,
    pub(crate) requests: Option<u64>,
    /// Measured requests handed out so far (for `--requests`).
    pub(crate) claimed: AtomicU64,
    /// Behind `{{seq}}`.
    pub(crate) seq: AtomicU64,
    /// How its values become `{{seq}}` numbers (apart from other shards' and the fixtures').
    pub(crate) spacing: crate::scenario::SeqSpacing,
    /// The run's seed: every user's (paced connection's) random draws derive from it and its
    /// number, so two runs with one seed send the same requests in the same order per user.
    pub(crate) seed: u64,
    /// By request index: the request's bytes, encoded once, when its templates have no holes.
    pub(crate) encoded: Vec<Option<Vec<u8>>>,
    /// HTTP/2, by request index: the request and its body, built once, when it has no holes.
    pub(crate) prebuilt: Vec<Option<(http2::Http2Request, bytes::Bytes)>>,
    /// The wire protocol.
    pub(crate) protocol: Protocol,
    /// The length of the sub-windows that keep an exact histogram each, if any.
    pub(crate) sub_window: Option<Duration>,
    /// HTTP/2 request loops per connection (1 for HTTP/1.1).
    pub(crate) streams: u32,
    /// The TLS client config every thread clones (TLS protocols only).
    pub(crate) tls: Option<Arc<rustls::ClientConfig>>,
    /// Whether threads keep a TLS session cache.
    pub(crate) resumption: bool,
    /// When the run (warm-up included) starts; set once every thread is ready.
    pub(crate) start: OnceLock<Instant>,
    /// Set to end the run early ([`crate::shard::ShardPlan::stop`]).
    pub(crate) stop: Option<Arc<std::sync::atomic::AtomicBool>>,
}

impl Shared {
    fn t0(&self) -> Instant {
        *self
            .start
            .get()
            .expect("start is set before threads pass the barrier")
    }

    pub(crate) fn measure_start(&self) -> Instant {
        self.t0() + self.warmup
    }

    pub(crate) fn measure_end(&self) -> Option<Instant> {
        self.duration.map(|d| self.measure_start() + d)
    }

    /// Whether the run was told to end early: nothing more is sent.
    pub(crate) fn stopping(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
    }

    /// A dialer for one thread (TLS: with a session cache of its own).
    pub(crate) fn dialer(&self) -> Dialer {
        Dialer::new(self.protocol, self.tls.as_deref(), self.resumption)
    }

    /// Takes one measured request from the `--requests` budget; false once it is spent.
    fn claim(&self) -> bool {
        match self.requests {
            None => true,
            Some(n) => self.claimed.fetch_add(1, Ordering::Relaxed) < n,
        }
    }
}

/// Live counters one thread publishes for the progress bar (all requests, warm-up included).
#[derive(Debug, Default)]
pub(crate) struct Progress {
    pub(crate) done: AtomicU64,
    pub(crate) errors: AtomicU64,
}

/// What one thread runs.
#[derive(Debug, Clone)]
pub(crate) enum Share {
    /// Closed loop: this many users, numbered from `first` in the whole run.
    Closed { users: u32, first: u32 },
    /// Open loop: paced connections, each its streams' shares of the schedule.
    Open { connections: Vec<Vec<Pace>> },
}

/// One paced connection's share of the open-loop schedule: the run's sends are numbered 0, 1, 2, ...
/// and send `n` is due `n / rate` seconds after the start; this connection makes sends `first`,
/// `first + stride`, `first + 2 * stride`, ... Computing each due time from its number (rather than
/// adding an interval again and again) keeps rounding from drifting the schedule, so a run of `D`
/// seconds at `R` per second schedules exactly `R * D` sends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pace {
    pub(crate) first: u64,
    pub(crate) stride: u64,
    pub(crate) rate: f64,
}

impl Pace {
    /// When this connection's `k`-th send is due, after the run's start.
    fn due(&self, k: u64) -> Duration {
        Duration::from_secs_f64((self.first + k * self.stride) as f64 / self.rate)
    }
}

/// When a send due `due` after the run's start leaves: then, with no tick; else on the first tick
/// at or after it, every send due since the last tick together (`--pace-tick`, as h2load's
/// `--rps` sends what came due on a timer of at least 10 ms). Its latency counts from that tick:
/// the schedule is bursty by choice, the server is charged from when each burst is sent.
fn on_tick(due: Duration, tick: Duration) -> Duration {
    if tick.is_zero() {
        return due;
    }
    let ticks = due.as_nanos().div_ceil(tick.as_nanos());
    Duration::from_nanos(u64::try_from(ticks * tick.as_nanos()).unwrap_or(u64::MAX))
}

/// What a thread hands back.
#[derive(Debug)]
pub(crate) struct ThreadOutput {
    pub(crate) routes: Vec<RouteStats>,
    /// Its requests second by second.
    pub(crate) seconds: SecondSeries,
    /// Its TLS handshakes in the measured window.
    pub(crate) handshakes: HandshakeStats,
}

struct Local {
    shared: Arc<Shared>,
    dialer: Dialer,
    handshakes: RefCell<HandshakeStats>,
    pools: RefCell<Pools>,
    stats: RefCell<Vec<RouteStats>>,
    seconds: RefCell<SecondSeries>,
    progress: Arc<Progress>,
}

/// What one user (or paced connection) owns: its connections, its timeout, its random draws, and
/// the buffer its templated requests are encoded into.
pub(crate) struct Client {
    conns: Vec<Option<Connection>>,
    /// HTTP/2: this stream loop's handles on its user's connections, by service.
    http2: Vec<Http2Stream>,
    deadline: Deadline,
    rng: fastrand::Rng,
    scratch: Vec<u8>,
}

impl Client {
    /// Stream loop `stream` of user (paced connection) `number`, on `shared` HTTP/2 connections
    /// (empty for HTTP/1.1). Stream 0 draws what an HTTP/1.1 user of that number draws.
    fn new(shared: &Shared, number: u64, stream: u32, http2: &[Arc<SharedConnection>]) -> Client {
        Client {
            conns: (0..shared.targets.len()).map(|_| None).collect(),
            http2: http2.iter().cloned().map(Http2Stream::new).collect(),
            deadline: Deadline::new(shared.timeout),
            rng: seeded_rng(shared.seed, number ^ (u64::from(stream) << 32)),
            scratch: Vec::new(),
        }
    }
}

/// A user's (paced connection's) HTTP/2 connections, one per service (none for HTTP/1.1).
fn shared_connections(shared: &Shared) -> Vec<Arc<SharedConnection>> {
    if !shared.protocol.multiplexed() {
        return Vec::new();
    }
    (0..shared.targets.len()).map(|_| Arc::default()).collect()
}

/// The random draws of user (or paced connection) `number`, derived from the run's seed.
pub(crate) fn seeded_rng(seed: u64, number: u64) -> fastrand::Rng {
    // An odd multiplier (the golden ratio's): distinct users get well-separated seeds.
    fastrand::Rng::with_seed(seed ^ number.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// The body of a generator thread.
pub(crate) fn thread_main(
    shared: Arc<Shared>,
    share: Share,
    pools: Pools,
    cpu: Option<usize>,
    progress: Arc<Progress>,
    barrier: Arc<Barrier>,
) -> Result<ThreadOutput> {
    let pinned = cpu.map(pin_current_thread);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    // Whatever happened, reach the barrier, or the other threads and the caller would wait forever.
    barrier.wait();
    if let Some(Err(e)) = pinned {
        return Err(e);
    }
    let runtime = runtime.context("Failed to build a generator runtime")?;
    let routes = shared.scenario.routes().len();
    let local = Rc::new(Local {
        dialer: shared.dialer(),
        handshakes: RefCell::new(HandshakeStats::default()),
        shared: shared.clone(),
        pools: RefCell::new(pools),
        stats: RefCell::new(vec![RouteStats::default(); routes]),
        seconds: RefCell::new(SecondSeries::new(shared.sub_window)),
        progress,
    });
    let set = tokio::task::LocalSet::new();
    set.block_on(&runtime, async {
        for t in spawn_share(&local, share) {
            let _ = t.await;
        }
    });
    drop(set);
    runtime.block_on(local.dialer.close());
    let routes = std::mem::take(&mut *local.stats.borrow_mut());
    let seconds = std::mem::take(&mut *local.seconds.borrow_mut());
    let handshakes = std::mem::take(&mut *local.handshakes.borrow_mut());
    Ok(ThreadOutput {
        routes,
        seconds,
        handshakes,
    })
}

/// Spawns a thread's users (closed loop) or paced connections (open loop) on its `LocalSet`.
fn spawn_share(local: &Rc<Local>, share: Share) -> Vec<tokio::task::JoinHandle<()>> {
    let mut tasks = Vec::new();
    match share {
        Share::Closed { users, first } => {
            for user in first..first + users {
                tasks.push(tokio::task::spawn_local(closed_user(
                    local.clone(),
                    u64::from(user),
                )));
            }
        }
        Share::Open { connections } => {
            for paces in connections {
                tasks.push(tokio::task::spawn_local(paced_connection(
                    local.clone(),
                    paces,
                )));
            }
        }
    }
    tasks
}

/// Pins the calling thread to one CPU.
pub fn pin_current_thread(cpu: usize) -> Result<()> {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu)
        .with_context(|| format!("CPU {cpu} is out of range"))?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
        .with_context(|| format!("Failed to pin a generator thread to CPU {cpu}"))
}

/// CPU seconds (user + system) the whole process has used.
pub(crate) fn process_cpu_s() -> f64 {
    rusage_s(nix::sys::resource::UsageWho::RUSAGE_SELF)
}

fn rusage_s(who: nix::sys::resource::UsageWho) -> f64 {
    match nix::sys::resource::getrusage(who) {
        Ok(u) => {
            let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
            t(u.user_time()) + t(u.system_time())
        }
        Err(_) => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paced_schedule_holds_exactly_rate_times_duration_sends() {
        // 316 connections sharing 3000 sends/s for 600 s: no send lost or added to rounding.
        let (rate, connections, end) = (3000.0, 316u64, Duration::from_secs(600));
        let mut total = 0u64;
        for c in 0..connections {
            let pace = Pace {
                first: c,
                stride: connections,
                rate,
            };
            total += (0..).take_while(|&k| pace.due(k) < end).count() as u64;
        }
        assert_eq!(total, 1_800_000);
        // Consecutive sends of the whole run are 1/rate apart.
        let a = Pace {
            first: 0,
            stride: 2,
            rate: 1000.0,
        };
        let b = Pace {
            first: 1,
            stride: 2,
            rate: 1000.0,
        };
        assert_eq!(b.due(0) - a.due(0), Duration::from_millis(1));
        assert_eq!(a.due(1) - b.due(0), Duration::from_millis(1));
    }

    #[test]
    fn on_a_tick_every_send_due_since_the_last_leaves_together_never_early() {
        let tick = Duration::from_millis(10);
        let ms = Duration::from_millis;
        assert_eq!(on_tick(ms(7), Duration::ZERO), ms(7));
        assert_eq!(on_tick(ms(0), tick), ms(0));
        assert_eq!(on_tick(ms(1), tick), ms(10));
        assert_eq!(on_tick(ms(10), tick), ms(10));
        assert_eq!(on_tick(Duration::from_micros(10_001), tick), ms(20));
        // 1250/s on one connection with h2load's 10 ms tick: 12 or 13 sends a tick, none later
        // than one tick after its due time, and as many ticks as the run has.
        let pace = Pace {
            first: 0,
            stride: 1,
            rate: 1250.0,
        };
        let mut per_tick = std::collections::BTreeMap::<Duration, u32>::new();
        for k in 0..1250 {
            let (due, at) = (pace.due(k), on_tick(pace.due(k), tick));
            assert!(
                at >= due && at - due < tick,
                "send {k}: due {due:?}, left {at:?}"
            );
            *per_tick.entry(at).or_default() += 1;
        }
        assert_eq!(per_tick.len(), 101);
        assert!(
            per_tick.values().skip(1).all(|&n| n == 12 || n == 13),
            "{per_tick:?}"
        );
    }
}
