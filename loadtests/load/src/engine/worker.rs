//! One generator thread: a single-threaded tokio runtime running its share of the users (closed
//! loop) or paced connections (open loop), each with its own connection per service, counting into
//! the thread's own statistics. With HTTP/2 a user (paced connection) is one connection per
//! service shared by `streams` request loops (paced senders), each with its own random draws and
//! timeout, counting as a closed-loop user (a paced connection) of its own.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use brigade_clients::http1::{abandon, encode, exchange, Connection};
use brigade_clients::http2::{self, Http2Stream, SharedConnection};
use brigade_clients::{Dialer, Exchange, Failure, Protocol, Target, WireCount};

use super::seconds::SecondSeries;
use super::stats::{HandshakeStats, RouteStats};
use crate::scenario::{Pools, RenderContext, Scenario};

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

/// A task's request timeout. A fresh `tokio::time::timeout` per request would insert into and
/// remove from the timer wheel every time; this keeps one timer per task armed at some earlier
/// request's limit, which is never later than the current one's. When it fires before the current
/// request's limit it is re-armed at that limit, so the timer is touched about once per timeout
/// period instead of once per request, and a request still times out exactly at its limit.
pub(crate) struct Deadline {
    sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
    timeout: Duration,
}

impl Deadline {
    pub(crate) fn new(timeout: Duration) -> Deadline {
        Deadline {
            sleep: Box::pin(tokio::time::sleep(timeout)),
            timeout,
        }
    }

    /// Runs `fut` until it completes (`Some`) or `timeout` has passed since `start` (`None`).
    pub(crate) async fn run<F: Future>(&mut self, start: Instant, fut: F) -> Option<F::Output> {
        let limit = start + self.timeout;
        let mut fut = std::pin::pin!(fut);
        std::future::poll_fn(|cx| {
            if let std::task::Poll::Ready(out) = fut.as_mut().poll(cx) {
                return std::task::Poll::Ready(Some(out));
            }
            loop {
                match self.sleep.as_mut().poll(cx) {
                    std::task::Poll::Pending => return std::task::Poll::Pending,
                    std::task::Poll::Ready(()) if Instant::now() >= limit => {
                        return std::task::Poll::Ready(None)
                    }
                    std::task::Poll::Ready(()) => self.sleep.as_mut().reset(limit.into()),
                }
            }
        })
        .await
    }
}

/// What answered a request, as a server counts it: its status (`None`: nothing answered), and
/// whether the request has a latency (answered or timed out; a refused connection has none).
struct Answer {
    status: Option<u16>,
    timed: bool,
}

/// How one request ended, from the scenario's point of view.
enum Verdict {
    Ok,
    Failed(ErrorKind),
}

#[derive(Clone, Copy)]
enum ErrorKind {
    Connect,
    Timeout,
    Reset,
    Status4xx,
    Status5xx,
    Other,
}

impl From<Failure> for ErrorKind {
    fn from(f: Failure) -> ErrorKind {
        match f {
            Failure::Connect => ErrorKind::Connect,
            Failure::Timeout => ErrorKind::Timeout,
            Failure::Reset => ErrorKind::Reset,
            Failure::Other => ErrorKind::Other,
        }
    }
}

impl Local {
    fn choose(&self, rng: &mut fastrand::Rng) -> Option<usize> {
        let pools = self.pools.borrow();
        self.shared.scenario.choose(rng, &pools)
    }

    /// Sends request `i` and judges the answer. Returns the verdict, the bytes on the wire and
    /// whether the request has a latency (answered or timed out; a refused connection has none);
    /// a TLS handshake it made is counted (when `measured`).
    async fn send(
        &self,
        client: &mut Client,
        start: Instant,
        i: usize,
        measured: bool,
    ) -> (Verdict, WireCount, Answer) {
        let (ex, count) = if self.shared.protocol.multiplexed() {
            self.exchange_http2(client, start, i).await
        } else {
            self.exchange_http1(client, start, i).await
        };
        if let (true, Some(handshake)) = (measured, ex.handshake) {
            self.handshakes.borrow_mut().record(&handshake);
        }
        let (verdict, answer) = self.judge(i, ex);
        (verdict, count, answer)
    }

    /// Renders request `i` when it was not prepared once for the run (None if it cannot be).
    fn render(&self, rng: &mut fastrand::Rng, i: usize) -> Option<brigade_clients::Request> {
        let shared = &self.shared;
        shared.scenario.requests()[i]
            .render(&mut RenderContext {
                rng,
                pools: &mut self.pools.borrow_mut(),
                seq: &shared.seq,
                spacing: shared.spacing,
            })
            .ok()
    }

    /// Request `i` over HTTP/2, within the deadline from `start`.
    async fn exchange_http2(
        &self,
        client: &mut Client,
        start: Instant,
        i: usize,
    ) -> (Exchange, WireCount) {
        let shared = &self.shared;
        let spec = &shared.scenario.requests()[i];
        let target = &shared.targets[spec.service];
        let mut count = WireCount::default();
        let built;
        let (request, body) = match &shared.prebuilt[i] {
            Some((request, body)) => (request, body),
            None => {
                let Some(rendered) = self.render(&mut client.rng, i) else {
                    return (Exchange::failed(Failure::Other, None), count);
                };
                match http2::build(target, &rendered, shared.protocol.tls()) {
                    Ok(request) => built = (request, rendered.body),
                    Err(_) => return (Exchange::failed(Failure::Other, None), count),
                }
                (&built.0, &built.1)
            }
        };
        let stream = &mut client.http2[spec.service];
        let exchanged = client
            .deadline
            .run(
                start,
                http2::exchange(
                    stream,
                    &self.dialer,
                    target,
                    request,
                    body,
                    shared.keepalive,
                    spec.captures_anything(),
                    &mut count,
                ),
            )
            .await;
        match exchanged {
            Some(ex) => (ex, count),
            None => {
                stream.abandon(&mut count);
                (Exchange::failed(Failure::Timeout, None), count)
            }
        }
    }

    /// Request `i` over HTTP/1.1 (plain or TLS), within the deadline from `start`.
    async fn exchange_http1(
        &self,
        client: &mut Client,
        start: Instant,
        i: usize,
    ) -> (Exchange, WireCount) {
        let shared = &self.shared;
        let spec = &shared.scenario.requests()[i];
        let target = &shared.targets[spec.service];
        let mut count = WireCount::default();
        let Client {
            conns,
            deadline,
            rng,
            scratch,
            ..
        } = client;
        let request: &[u8] = match &shared.encoded[i] {
            Some(bytes) => bytes,
            None => {
                let Some(rendered) = self.render(rng, i) else {
                    return (Exchange::failed(Failure::Other, None), count);
                };
                encode(scratch, target, &rendered, shared.keepalive);
                scratch.as_slice()
            }
        };
        let slot = &mut conns[spec.service];
        let want_body = spec.captures_anything();
        let ex = match deadline
            .run(
                start,
                exchange(
                    slot,
                    &self.dialer,
                    target,
                    request,
                    spec.method == http::Method::HEAD,
                    shared.keepalive,
                    want_body,
                    &mut count,
                ),
            )
            .await
        {
            Some(ex) => ex,
            None => {
                // The connection is mid-request: it cannot be reused.
                abandon(slot, &mut count);
                Exchange::failed(Failure::Timeout, None)
            }
        };
        (ex, count)
    }

    /// The verdict on request `i`'s exchange, its status and whether it has a latency. A 2xx
    /// answer's captures go into the pools.
    fn judge(&self, i: usize, ex: Exchange) -> (Verdict, Answer) {
        let spec = &self.shared.scenario.requests()[i];
        let want_body = spec.captures_anything();
        let status = ex.result.as_ref().ok().copied();
        let verdict = match ex.result {
            Ok(status) if spec.expects(status) => {
                if (200..300).contains(&status) && want_body {
                    let body = ex.body.unwrap_or_default();
                    match spec.capture(&body, &mut self.pools.borrow_mut()) {
                        Ok(()) => Verdict::Ok,
                        Err(_) => Verdict::Failed(ErrorKind::Other),
                    }
                } else {
                    Verdict::Ok
                }
            }
            Ok(status) if (400..500).contains(&status) => Verdict::Failed(ErrorKind::Status4xx),
            Ok(status) if (500..600).contains(&status) => Verdict::Failed(ErrorKind::Status5xx),
            Ok(_) => Verdict::Failed(ErrorKind::Other),
            Err(f) => Verdict::Failed(f.into()),
        };
        let timed = matches!(ex.result, Ok(_) | Err(Failure::Timeout));
        (verdict, Answer { status, timed })
    }

    /// Counts one request: always for the progress bar, in the statistics when `measured`.
    /// Counts a request that could not be made because no route could be chosen (every one needs
    /// an id from an empty pool): an `other` error with no latency.
    fn record_unroutable(&self, measured: bool) {
        let failed = Verdict::Failed(ErrorKind::Other);
        self.record(None, measured, &failed, WireCount::default(), None, None);
    }

    /// Counts one request; a warm-up request (not `measured`) only by its answer's status class.
    fn record(
        &self,
        route: Option<usize>,
        measured: bool,
        verdict: &Verdict,
        count: WireCount,
        latency: Option<Duration>,
        status: Option<u16>,
    ) {
        self.progress.done.fetch_add(1, Ordering::Relaxed);
        if matches!(verdict, Verdict::Failed(_)) {
            self.progress.errors.fetch_add(1, Ordering::Relaxed);
        }
        let class = super::stats::status_class(status);
        if !measured {
            self.stats.borrow_mut()[route.unwrap_or(0)].warmup[class] += 1;
            return;
        }
        let at = Instant::now().saturating_duration_since(self.shared.measure_start());
        let failed = matches!(verdict, Verdict::Failed(_));
        self.seconds.borrow_mut().record(at, failed, latency);
        let mut stats = self.stats.borrow_mut();
        // A request that could not even be formed has no route: count it against the first one.
        let r = &mut stats[route.unwrap_or(0)];
        r.requests += 1;
        r.statuses[class] += 1;
        r.bytes_sent += count.sent;
        r.bytes_received += count.received;
        match verdict {
            Verdict::Ok => r.ok += 1,
            Verdict::Failed(kind) => {
                let e = &mut r.errors;
                match kind {
                    ErrorKind::Connect => e.connect += 1,
                    ErrorKind::Timeout => e.timeout += 1,
                    ErrorKind::Reset => e.reset += 1,
                    ErrorKind::Status4xx => e.status_4xx += 1,
                    ErrorKind::Status5xx => e.status_5xx += 1,
                    ErrorKind::Other => e.other += 1,
                }
            }
        }
        if let Some(l) = latency {
            r.latency.record(l);
        }
    }
}

/// A closed-loop user: one connection per service, and `streams` request loops on it (one for
/// HTTP/1.1).
async fn closed_user(local: Rc<Local>, number: u64) {
    let http2 = shared_connections(&local.shared);
    let streams = local.shared.streams;
    if streams == 1 {
        return closed_stream(local, number, 0, http2).await;
    }
    let loops: Vec<_> = (0..streams)
        .map(|s| tokio::task::spawn_local(closed_stream(local.clone(), number, s, http2.clone())))
        .collect();
    for l in loops {
        let _ = l.await;
    }
}

/// One request loop of a closed-loop user: sends, waits for the whole answer, thinks, sends
/// again.
async fn closed_stream(
    local: Rc<Local>,
    number: u64,
    stream: u32,
    http2: Vec<Arc<SharedConnection>>,
) {
    let shared = local.shared.clone();
    let measure_start = shared.measure_start();
    let measure_end = shared.measure_end();
    let mut client = Client::new(&shared, number, stream, &http2);
    // The run starts at t0, just after every thread is ready: a request sent before it would be
    // neither warm-up nor measured.
    tokio::time::sleep_until(shared.t0().into()).await;
    // After a refused connection, wait a little before trying again rather than spinning.
    let mut backoff = Duration::ZERO;
    loop {
        if !backoff.is_zero() {
            tokio::time::sleep(backoff).await;
        }
        let now = Instant::now();
        if measure_end.is_some_and(|end| now >= end) || shared.stopping() {
            break;
        }
        let measured = now >= measure_start;
        if measured && !shared.claim() {
            break;
        }
        let Some(i) = local.choose(&mut client.rng) else {
            local.record_unroutable(measured);
            backoff = Duration::from_millis(10);
            continue;
        };
        let route = shared.scenario.requests()[i].route;
        let start = Instant::now();
        let (verdict, count, answer) = local.send(&mut client, start, i, measured).await;
        let latency = start.elapsed();
        backoff = match verdict {
            Verdict::Failed(ErrorKind::Connect) => Duration::from_millis(10),
            _ => Duration::ZERO,
        };
        local.record(
            Some(route),
            measured,
            &verdict,
            count,
            answer.timed.then_some(latency),
            answer.status,
        );
        if !shared.think.is_zero() {
            tokio::time::sleep(shared.think).await;
        }
    }
}

/// An open-loop connection: one connection per service, and a paced sender for each of its
/// streams' shares of the schedule (one for HTTP/1.1).
async fn paced_connection(local: Rc<Local>, paces: Vec<Pace>) {
    let http2 = shared_connections(&local.shared);
    if let [pace] = paces[..] {
        return paced_stream(local, pace, http2).await;
    }
    let senders: Vec<_> = paces
        .into_iter()
        .map(|pace| tokio::task::spawn_local(paced_stream(local.clone(), pace, http2.clone())))
        .collect();
    for s in senders {
        let _ = s.await;
    }
}

/// An open-loop sender: sends on a fixed schedule (see [`Pace`]) and measures
/// each latency from the send's intended time, so time a stalled server keeps requests waiting is
/// counted, not hidden (coordinated omission, corrected as in wrk2).
async fn paced_stream(local: Rc<Local>, pace: Pace, http2: Vec<Arc<SharedConnection>>) {
    let shared = local.shared.clone();
    let t0 = shared.start.get().copied().expect("start set");
    let measure_start = shared.measure_start();
    let measure_end = shared.measure_end();
    // In a timed run, sends still due when the window closed get one timeout to drain.
    let hard_end = measure_end.map(|end| end + shared.timeout);
    // Which sends the window holds is the schedule's (`due`); when each leaves, and its latency's
    // start, is its tick's (`intended`).
    let at = |k: u64| {
        let due = pace.due(k);
        (t0 + due, t0 + on_tick(due, shared.pace_tick))
    };
    let mut client = Client::new(&shared, pace.first, 0, &http2);
    let mut k = 0u64;
    loop {
        let (due, intended) = at(k);
        k += 1;
        if measure_end.is_some_and(|end| due >= end) || shared.stopping() {
            break;
        }
        let now = Instant::now();
        if hard_end.is_some_and(|hard| now >= hard) {
            // The schedule could not be kept before the drain deadline: every send still due in the
            // window is a timeout, with the latency it has reached.
            let end = measure_end.expect("hard end implies an end");
            let mut kk = k - 1;
            loop {
                let (due, late) = at(kk);
                if due >= end {
                    break;
                }
                if due >= measure_start {
                    if !shared.claim() {
                        break;
                    }
                    // Attributed to routes as the mix would have chosen them.
                    let route = local
                        .choose(&mut client.rng)
                        .map(|i| shared.scenario.requests()[i].route);
                    local.record(
                        route,
                        true,
                        &Verdict::Failed(ErrorKind::Timeout),
                        WireCount::default(),
                        Some(now - late),
                        None,
                    );
                }
                kk += 1;
            }
            break;
        }
        let measured = due >= measure_start;
        if measured && !shared.claim() {
            break;
        }
        if intended > now {
            tokio::time::sleep_until(intended.into()).await;
        }
        let from = Instant::now().min(intended + TIMER_SLACK);
        let Some(i) = local.choose(&mut client.rng) else {
            local.record_unroutable(measured);
            continue;
        };
        let route = shared.scenario.requests()[i].route;
        let start = Instant::now();
        let (verdict, count, answer) = local.send(&mut client, start, i, measured).await;
        let latency = from.elapsed();
        local.record(
            Some(route),
            measured,
            &verdict,
            count,
            answer.timed.then_some(latency),
            answer.status,
        );
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
