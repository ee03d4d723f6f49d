//! The result of one load run: what `brigade load --json` writes and what `brigade compare` reads.
//! This is the contract between the generator (`engine`) and the comparison (`compare`, `report`).
//! It sits above the histograms (their [`Latency`] summary and their encoding) and below everything
//! that measures or reads runs: nothing it imports imports it back.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::histogram::Latency;

/// The settings a run was made with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadSettings {
    /// Base URL(s) of the target, `name=url` or a plain url.
    pub targets: Vec<String>,
    /// The scenario's name (built-in) or path (file).
    pub scenario: String,
    /// Closed loop: the number of users (connections). `None` for an open-loop run.
    pub users: Option<u32>,
    /// Open loop: requests per second on a fixed schedule. `None` for a closed-loop run.
    pub rate: Option<f64>,
    /// Open loop: connections used to send the schedule.
    pub connections: u32,
    /// Measured seconds (after warm-up), if the run was bounded by time.
    pub duration_s: Option<f64>,
    /// Measured requests, if the run was bounded by count.
    pub requests: Option<u64>,
    /// Seconds of warm-up, not counted.
    pub warmup_s: f64,
    /// Whether connections were kept alive.
    pub keepalive: bool,
    /// Generator threads (each a single-threaded tokio runtime).
    pub threads: u32,
    /// Per-request timeout in milliseconds.
    pub timeout_ms: u64,
    /// Closed loop think time between a user's requests, milliseconds.
    pub think_ms: u64,
    /// Open loop: the tick sends left on, milliseconds (`--pace-tick`); absent where each send
    /// left at its own due time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace_tick_ms: Option<f64>,
    /// The seed every random choice derived from (given, or chosen at random and recorded so the
    /// run can be replayed; absent in results written before runs were seeded).
    #[serde(default)]
    pub seed: Option<u64>,
    /// The share of a run spread over several generators this run made (`None`: the whole run).
    /// A shard's users, rate, connections, requests and threads above are its own share: the
    /// merged result's are their sums.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::shard::Shard>,
    /// The wire protocol (`h1` in results written before there was a choice).
    #[serde(default)]
    pub protocol: crate::protocol::Protocol,
    /// HTTP/2 requests in flight per connection (1 for HTTP/1.1).
    #[serde(default = "one_stream")]
    pub streams: u32,
}

fn one_stream() -> u32 {
    1
}

/// Failed requests by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Errors {
    /// The connection could not be made.
    pub connect: u64,
    /// No answer within the timeout.
    pub timeout: u64,
    /// The connection was reset or closed mid-request.
    pub reset: u64,
    /// Answered 4xx (when the scenario did not expect it).
    pub status_4xx: u64,
    /// Answered 5xx.
    pub status_5xx: u64,
    /// Anything else (a malformed answer, a capture that found nothing).
    pub other: u64,
}

impl Errors {
    /// All errors together.
    pub fn total(&self) -> u64 {
        self.connect + self.timeout + self.reset + self.status_4xx + self.status_5xx + self.other
    }
}

/// Counts and latency for one route of the scenario, or for the whole run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RouteResult {
    /// The route's name in the scenario (`GET /waiters/{id}`), or `total`.
    pub name: String,
    /// Requests completed (answered or failed) in the measured window.
    pub requests: u64,
    /// Of those, answered as the scenario expected.
    pub ok: u64,
    /// Of those, failed, by kind.
    pub errors: Errors,
    /// Bytes written on the wire (request line, headers, body).
    pub bytes_sent: u64,
    /// Bytes read from the wire (status line, headers, body).
    pub bytes_received: u64,
    /// Requests per second over the measured window.
    pub hits_per_s: f64,
    /// Bytes per second, both directions together.
    pub bytes_per_s: f64,
    /// Latency summary.
    pub latency: Latency,
    /// The latency histogram (microseconds), HdrHistogram V2+deflate serialization, base64.
    pub histogram: String,
    /// The measured requests by their answer's status class (`2xx`, `4xx`, …; `none` where nothing
    /// answered: refused, reset, timed out), the way a server's request counters count them
    /// (absent in results written before it was recorded).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub statuses: BTreeMap<String, u64>,
    /// The warm-up's requests, which are sent but not measured, by class the same way: what the
    /// servers counted beyond the measured window.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub warmup_statuses: BTreeMap<String, u64>,
}

/// Adds the counts of `b` to `a`, class by class.
pub fn add_statuses(a: &mut BTreeMap<String, u64>, b: &BTreeMap<String, u64>) {
    for (class, n) in b {
        *a.entry(class.clone()).or_default() += n;
    }
}

/// The machine a run was made on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Host name.
    pub hostname: String,
    /// OS and kernel.
    pub os: String,
    /// CPU model.
    pub cpu: String,
    /// Logical cores.
    pub cores: u32,
    /// Memory in MiB.
    pub memory_mib: u64,
    /// Brigade's version.
    pub brigade_version: String,
    /// rustc version Brigade was built with, if known.
    pub rustc: String,
}

/// The compiler that built this binary (`rustc -V`, recorded at build time by this crate's
/// `build.rs`): every result and report names it.
pub fn rustc() -> &'static str {
    env!("BRIGADE_RUSTC")
}

/// The generator counts as saturated at this share of its threads' CPU (as compare judges its
/// CPUs): a run whose `generator_cpu_percent` reaches it measured the generator, not the server.
pub const GENERATOR_SATURATED: f64 = 0.90;

/// One whole load run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadResult {
    /// How it was run.
    pub settings: LoadSettings,
    /// Where it was run.
    pub machine: Machine,
    /// When it started (RFC 3339).
    pub started_at: String,
    /// Seconds actually measured.
    pub elapsed_s: f64,
    /// The generator process's own CPU use over the measured window, percent of one core.
    pub generator_cpu_percent: f64,
    /// All routes together.
    pub total: RouteResult,
    /// Each route of the scenario.
    pub routes: Vec<RouteResult>,
    /// All routes together, second by second from the measured window's start (hits, errors,
    /// p50/p99): the run over time.
    #[serde(default)]
    pub seconds: Vec<Second>,
    /// The sub-windows with their exact histograms, when the run was asked for them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sub_windows: Vec<SubWindow>,
    /// The measured window in wall-clock time (absent in results written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
    /// A merged result's parts ([`merge_shards`]): each shard's window and count, in shard order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardPart>,
    /// A TLS run's handshakes (absent for plaintext runs and older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsResult>,
    /// Which attempt at its shard this run was, when not the first (`load --attempt`): a shard
    /// run again after its first attempt was lost (its generator stopped, its pod deleted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Why the run ended before its end, when it did (a SIGTERM): its figures are what it
    /// measured until then, and `merge` lists it as a lost attempt instead of counting it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
}

/// The TLS handshakes of a run's measured window: every connection's, full and resumed apart,
/// each timed from the TCP connection made (TCP connect excluded) to the handshake complete.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TlsResult {
    /// The application protocol the server chose by ALPN (`h2`, `http/1.1`; none if it ignored ALPN).
    pub alpn: Option<String>,
    /// Full handshakes (certificate sent and checked; after a HelloRetryRequest too).
    pub full: HandshakeResult,
    /// Resumed handshakes (a session ticket or id accepted).
    pub resumed: HandshakeResult,
    /// Handshakes of both kinds per second over the measured window.
    pub handshakes_per_s: f64,
}

/// The count and latency of one kind of TLS handshake.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HandshakeResult {
    /// How many.
    pub count: u64,
    /// Mean latency, ms.
    pub mean_ms: f64,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 99th percentile latency, ms.
    pub p99_ms: f64,
    /// Largest latency, ms.
    pub max_ms: f64,
    /// The latency histogram (microseconds), encoded as [`RouteResult::histogram`] is.
    pub histogram: String,
}

impl HandshakeResult {
    /// The count and latency summary of `h`.
    pub fn from_histogram(h: &crate::histogram::LatencyHistogram) -> HandshakeResult {
        let l = h.latency();
        HandshakeResult {
            count: h.len(),
            mean_ms: l.mean_ms,
            p50_ms: l.p50_ms,
            p99_ms: l.p99_ms,
            max_ms: l.max_ms,
            histogram: h.encode(),
        }
    }

    /// Adds `other`'s handshakes (histograms merged, figures recomputed).
    pub fn absorb(&mut self, other: &HandshakeResult) -> anyhow::Result<()> {
        let mut h = crate::histogram::LatencyHistogram::decode(&self.histogram)?;
        h.merge(&crate::histogram::LatencyHistogram::decode(
            &other.histogram,
        )?);
        *self = HandshakeResult::from_histogram(&h);
        Ok(())
    }
}

impl TlsResult {
    /// Adds `other`'s handshakes and puts the rate over `elapsed_s`.
    pub fn absorb(&mut self, other: &TlsResult, elapsed_s: f64) -> anyhow::Result<()> {
        self.full.absorb(&other.full)?;
        self.resumed.absorb(&other.resumed)?;
        if self.alpn.is_none() {
            self.alpn.clone_from(&other.alpn);
        }
        self.rescale(elapsed_s);
        Ok(())
    }

    /// Recomputes handshakes/s for `elapsed_s` measured seconds.
    pub fn rescale(&mut self, elapsed_s: f64) {
        let n = self.full.count + self.resumed.count;
        self.handshakes_per_s = if elapsed_s > 0.0 {
            n as f64 / elapsed_s
        } else {
            0.0
        };
    }
}

/// A measured window in wall-clock time, seconds since the UNIX epoch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// When measuring began (after setup and warm-up).
    pub start_unix_s: f64,
    /// When the measured window closed: `start_unix_s + elapsed_s`.
    pub end_unix_s: f64,
}

/// One part of a merged result: which shard, where it ran, when it measured, what it counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardPart {
    /// The shard it ran (`None`: a whole run, merged as a concurrent part).
    pub shard: Option<crate::shard::Shard>,
    /// The generator's host name.
    pub hostname: String,
    /// Its measured window.
    pub window: Window,
    /// Its measured requests.
    pub requests: u64,
    /// Its generator's CPU use, percent of one core.
    pub generator_cpu_percent: f64,
    /// Which attempt at its shard it was, when not the first (a retried shard).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Set on a lost attempt (an interrupted run, its shard run again): why it ended early. Its
    /// requests are listed here and not counted in the merged figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
}

impl ShardPart {
    /// The part `r` is, measured over `window`.
    fn of(r: &LoadResult, window: Window) -> ShardPart {
        ShardPart {
            shard: r.settings.shard,
            hostname: r.machine.hostname.clone(),
            window,
            requests: r.total.requests,
            generator_cpu_percent: r.generator_cpu_percent,
            attempt: r.attempt,
            interrupted: r.interrupted.clone(),
        }
    }
}

/// One sub-window of a run (`LoadConfig::sub_window`), all routes together, with its exact latency
/// histogram: what the SLO search pools, with the sub-window as the unit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubWindow {
    /// Seconds from the measured window's opening to this sub-window's.
    pub start_s: f64,
    /// Requests completed in it.
    pub requests: u64,
    /// Of those, failed.
    pub errors: u64,
    /// Its latency histogram (µs), as [`RouteResult::histogram`] is written.
    pub histogram: String,
}

/// One second of a run, all routes together.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Second {
    /// Seconds since the measured window opened (this one covers `second..second + 1`).
    pub second: u32,
    /// Requests completed in it.
    pub requests: u64,
    /// Of those, failed.
    pub errors: u64,
    /// Median latency of those answered or timed out, ms (to about 5%; 0 when none).
    pub p50_ms: f64,
    /// 99th percentile latency, ms (to about 5%; 0 when none).
    pub p99_ms: f64,
}

// --- helpers for the generator's histograms and for merging runs (added with the engine) ---

impl RouteResult {
    /// The latency histogram, decoded from [`RouteResult::histogram`].
    pub fn histogram(&self) -> anyhow::Result<crate::histogram::LatencyHistogram> {
        crate::histogram::LatencyHistogram::decode(&self.histogram)
    }

    /// Adds `other`'s counts and histogram to this route and recomputes the rates over
    /// `elapsed_s` (the two runs' measured seconds together) and the latency from the merged histogram.
    pub fn absorb(&mut self, other: &RouteResult, elapsed_s: f64) -> anyhow::Result<()> {
        let mut h = self.histogram()?;
        h.merge(&other.histogram()?);
        self.requests += other.requests;
        self.ok += other.ok;
        self.errors.connect += other.errors.connect;
        self.errors.timeout += other.errors.timeout;
        self.errors.reset += other.errors.reset;
        self.errors.status_4xx += other.errors.status_4xx;
        self.errors.status_5xx += other.errors.status_5xx;
        self.errors.other += other.errors.other;
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        add_statuses(&mut self.statuses, &other.statuses);
        add_statuses(&mut self.warmup_statuses, &other.warmup_statuses);
        self.rescale(elapsed_s);
        self.latency = h.latency();
        self.histogram = h.encode();
        Ok(())
    }

    /// Recomputes hits/s and bytes/s for `elapsed_s` measured seconds.
    fn rescale(&mut self, elapsed_s: f64) {
        let per_s = |n: u64| {
            if elapsed_s > 0.0 {
                n as f64 / elapsed_s
            } else {
                0.0
            }
        };
        self.hits_per_s = per_s(self.requests);
        self.bytes_per_s = per_s(self.bytes_sent + self.bytes_received);
    }
}

/// Merges runs of the same scenario into one result, as if they had been one long run: counts and
/// histograms add up (per route, matched by name, and in total), rates are over the summed measured
/// time, and latency percentiles come from the merged histograms, not from averaging percentiles.
/// Settings, machine and start time are the first run's; the generator CPU is the time-weighted mean.
pub fn merge(results: &[LoadResult]) -> anyhow::Result<LoadResult> {
    let (first, rest) = results
        .split_first()
        .ok_or_else(|| anyhow::anyhow!("nothing to merge"))?;
    let mut out = first.clone();
    let elapsed: f64 = results.iter().map(|r| r.elapsed_s).sum();
    let cpu_weighted: f64 = results
        .iter()
        .map(|r| r.generator_cpu_percent * r.elapsed_s)
        .sum();
    out.elapsed_s = elapsed;
    out.generator_cpu_percent = if elapsed > 0.0 {
        cpu_weighted / elapsed
    } else {
        first.generator_cpu_percent
    };
    for run in rest {
        // The series follow one another, as one long run's would.
        let offset = out.seconds.len() as u32;
        out.seconds.extend(run.seconds.iter().map(|s| Second {
            second: s.second + offset,
            ..s.clone()
        }));
    }
    add_counts(&mut out, rest, elapsed)?;
    Ok(out)
}

/// Adds every run of `rest` into `out`, in total and per route (matched by name; a route only a
/// later run had is added), histograms merged, and puts every rate over `elapsed_s`.
fn add_counts(out: &mut LoadResult, rest: &[LoadResult], elapsed_s: f64) -> anyhow::Result<()> {
    out.total.rescale(elapsed_s);
    for r in &mut out.routes {
        r.rescale(elapsed_s);
    }
    if let Some(tls) = out.tls.as_mut() {
        tls.rescale(elapsed_s);
    }
    for run in rest {
        match (out.tls.as_mut(), &run.tls) {
            (Some(mine), Some(theirs)) => mine.absorb(theirs, elapsed_s)?,
            (None, Some(theirs)) => {
                let mut added = theirs.clone();
                added.rescale(elapsed_s);
                out.tls = Some(added);
            }
            (_, None) => {}
        }
        out.total.absorb(&run.total, elapsed_s)?;
        for route in &run.routes {
            match out.routes.iter_mut().find(|r| r.name == route.name) {
                Some(mine) => mine.absorb(route, elapsed_s)?,
                None => {
                    let mut added = route.clone();
                    added.rescale(elapsed_s);
                    out.routes.push(added);
                }
            }
        }
    }
    Ok(())
}

/// Merges the results of generators that ran *at the same time* (the shards of one run, from
/// `brigade load --shard I/N`) into one result: counts, bytes and errors add up and histograms are
/// merged exactly (per route, matched by name, and in total), like [`merge`]; but rates are over
/// the common window, from the first shard's measured start to the last one's end, not over the
/// sum of their durations. Settings add up (users, rate, connections, requests, threads); the
/// generator CPU is the shards' sum; the per-second series are aligned on wall-clock time, their
/// counts summed and their p50/p99 the worst shard's (a second's percentiles are summaries, not
/// histograms). Every part needs its window (results of this version have one); when parts are
/// shards, every shard of one count must be there exactly once. An interrupted part (a lost
/// attempt, its shard run again) is listed among the parts, marked, and not counted: the shard's
/// complete attempt is.
pub fn merge_shards(parts: &[LoadResult]) -> anyhow::Result<LoadResult> {
    use anyhow::bail;
    let results: Vec<LoadResult> = parts
        .iter()
        .filter(|r| r.interrupted.is_none())
        .cloned()
        .collect();
    let lost: Vec<&LoadResult> = parts.iter().filter(|r| r.interrupted.is_some()).collect();
    let (first, rest) = results.split_first().ok_or_else(|| match lost.len() {
        0 => anyhow::anyhow!("nothing to merge"),
        n => anyhow::anyhow!("all {n} parts were interrupted: nothing complete to merge"),
    })?;
    let mut windows = Vec::new();
    for (i, r) in results.iter().enumerate() {
        match r.window {
            Some(w) => windows.push(w),
            None => bail!(
                "result {} ({}) has no measured window: it was written by an older brigade",
                i + 1,
                r.settings.scenario
            ),
        }
        if r.settings.scenario != first.settings.scenario {
            bail!(
                "the results ran different scenarios ({} and {})",
                first.settings.scenario,
                r.settings.scenario
            );
        }
    }
    check_shards(&results).map_err(|e| match lost.len() {
        0 => e,
        _ => e.context(format!(
            "lost attempts: {}",
            lost.iter()
                .map(|r| describe_part(r))
                .collect::<Vec<_>>()
                .join("; ")
        )),
    })?;
    let start = windows
        .iter()
        .map(|w| w.start_unix_s)
        .fold(f64::INFINITY, f64::min);
    let end = windows
        .iter()
        .map(|w| w.end_unix_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let elapsed = (end - start).max(0.0);

    let mut out = first.clone();
    out.elapsed_s = elapsed;
    out.window = Some(Window {
        start_unix_s: start,
        end_unix_s: end,
    });
    out.generator_cpu_percent = results.iter().map(|r| r.generator_cpu_percent).sum();
    add_counts(&mut out, rest, elapsed)?;
    out.seconds = merge_seconds(&results, start);
    out.settings = merged_settings(&results);
    out.attempt = None;
    out.shards = results
        .iter()
        .zip(&windows)
        .map(|(r, w)| ShardPart::of(r, *w))
        .chain(
            lost.iter()
                .map(|r| ShardPart::of(r, r.window.unwrap_or_default())),
        )
        .collect();
    out.shards
        .sort_by_key(|p| (p.shard.map(|s| s.index), p.attempt.unwrap_or(1)));
    Ok(out)
}

/// A part in words, for errors: its shard, attempt and why it ended.
fn describe_part(r: &LoadResult) -> String {
    let shard = r
        .settings
        .shard
        .map_or("a whole run".to_string(), |s| format!("shard {s}"));
    format!(
        "{shard}, attempt {}: {} ({} requests)",
        r.attempt.unwrap_or(1),
        r.interrupted.as_deref().unwrap_or("complete"),
        r.total.requests
    )
}

/// Parts that are shards must be one run's: one count, each index once, none missing.
fn check_shards(results: &[LoadResult]) -> anyhow::Result<()> {
    let shards: Vec<_> = results.iter().filter_map(|r| r.settings.shard).collect();
    if shards.is_empty() {
        return Ok(());
    }
    if shards.len() != results.len() {
        anyhow::bail!(
            "some results are shards (--shard) and some are whole runs: merge one or the other"
        );
    }
    let count = shards[0].count;
    let mut seen = vec![false; count as usize];
    for s in &shards {
        if s.count != count {
            anyhow::bail!(
                "the results are shards of different runs (of {count} and of {})",
                s.count
            );
        }
        if std::mem::replace(&mut seen[s.index as usize], true) {
            anyhow::bail!("shard {s} appears twice");
        }
    }
    let missing: Vec<String> = (0..count)
        .filter(|&i| !seen[i as usize])
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        anyhow::bail!(
            "shard(s) {} missing: a merged result must hold every shard",
            missing.join(", ")
        );
    }
    Ok(())
}

/// The whole run's settings from its parts': counts add up, the seed is kept if they share it,
/// the rest is the first part's.
fn merged_settings(results: &[LoadResult]) -> LoadSettings {
    let mut s = results[0].settings.clone();
    s.users = results
        .iter()
        .map(|r| r.settings.users)
        .sum::<Option<u32>>();
    s.rate = results.iter().map(|r| r.settings.rate).sum::<Option<f64>>();
    s.connections = results.iter().map(|r| r.settings.connections).sum();
    s.requests = results
        .iter()
        .map(|r| r.settings.requests)
        .sum::<Option<u64>>();
    s.threads = results.iter().map(|r| r.settings.threads).sum();
    for r in &results[1..] {
        for t in &r.settings.targets {
            if !s.targets.contains(t) {
                s.targets.push(t.clone());
            }
        }
    }
    // One seed replays the whole run only if every part had it.
    if results.iter().any(|r| r.settings.seed != s.seed) {
        s.seed = None;
    }
    s.shard = None;
    s
}

/// The parts' per-second series on one wall-clock axis from `start`: counts summed, p50/p99 the
/// worst part's.
fn merge_seconds(results: &[LoadResult], start: f64) -> Vec<Second> {
    let mut out: Vec<Second> = Vec::new();
    for r in results {
        let offset = r
            .window
            .map_or(0, |w| (w.start_unix_s - start).max(0.0).round() as u32);
        for s in &r.seconds {
            let at = (s.second + offset) as usize;
            if out.len() <= at {
                out.extend((out.len() as u32..=at as u32).map(|second| Second {
                    second,
                    ..Second::default()
                }));
            }
            let m = &mut out[at];
            m.requests += s.requests;
            m.errors += s.errors;
            m.p50_ms = m.p50_ms.max(s.p50_ms);
            m.p99_ms = m.p99_ms.max(s.p99_ms);
        }
    }
    out
}
