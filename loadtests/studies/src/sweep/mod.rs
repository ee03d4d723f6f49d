//! `brigade study sweep`: a web-server shoot-out. The original ran `ab` against a handful of web
//! servers with more and more concurrent clients, with and without keep-alive, on files of
//! several sizes and on a missing page, watched whether a server stayed usable while it served the
//! benchmark, and looked at its memory afterwards.
//!
//! The plan, per runtime (one server each, up for the whole sweep, [`super::lab`]):
//! 1. Ask the bad URL once and check the answer: 404 with the JSON error body (`not_found`).
//! 2. **Clients**: `GET /bench/static/{size}` (2 KiB by default) at 1, 3, 5, … 316 clients, each
//!    count with keep-alive and without (a new connection per request, as `ab` did).
//! 3. **Sizes**: the bodies 256 B … 512 KiB, and the bad URL, at one client count with keep-alive.
//! 4. During every step, the probe ([`probe`]) asks `/health` every 100 ms and reports its p99.
//! 5. **Memory after**: the server's RSS once ready, its peak (`VmHWM`) and its RSS at the end of
//!    the sweep and again `--settle` (10 s) later; growth that does not come back is flagged.
//! 6. **TLS handshakes** ([`handshakes`]): on a second server per runtime started with
//!    `--tls-self-signed`, `GET /bench/hello` over `h1-tls` with a new connection per request, once
//!    with every handshake full (session resumption off) and once resumed: handshakes/s, their
//!    p50/p99 from the generator's TLS figures, and the server's CPU per handshake (its CPU per
//!    request, one request being one connection); then the same over QUIC (`h3`) on a third
//!    server per runtime that offers h3.
//!
//! The steps of every runtime are interleaved as `compare` interleaves its runs (each step made
//! back to back on every runtime, the first runtime rotating), each measured by the generator
//! with `/proc` sampled and generator-bound or contended steps flagged.

pub(crate) mod handshakes;
pub(crate) mod probe;
pub(crate) mod report;

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use brigade_load::engine::session::Session;
use brigade_records::protocol::Protocol;
use clap::Args;
use serde_json::Value;

use super::lab::shapes::{size_text, Shape};
use super::lab::{self, LabArgs, Served, StepRun, Window};
use brigade_meter::procstat;
use brigade_meter::servers::runtime_of;
use brigade_report::study::StudyReport;
use probe::{Probe, ProbeResult};

/// The original's client counts (a log scale from 1 to 316).
pub(crate) const DEFAULT_CLIENTS: &[u32] = &[1, 3, 5, 10, 17, 31, 56, 100, 177, 316];
/// `--quick`'s client counts.
pub(crate) const QUICK_CLIENTS: &[u32] = &[1, 10, 56];
/// The original's body sizes, bytes.
pub(crate) const DEFAULT_SIZES: &[usize] = &[256, 2048, 4096, 65_536, 524_288];
/// `--quick`'s body sizes.
pub(crate) const QUICK_SIZES: &[usize] = &[256, 65_536];

/// Arguments of `brigade study sweep`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:\n  brigade study sweep --quick\n  \
brigade study sweep --runtimes axum,hyper --duration 5s --settle 30s")]
pub struct SweepArgs {
    /// Servers, CPUs, repeats (default 1) and where to write.
    #[command(flatten)]
    pub(crate) lab: LabArgs,
    /// Client counts, comma-separated, each run with and without keep-alive
    /// [default: 1,3,5,10,17,31,56,100,177,316; --quick: 1,10,56]
    #[arg(long, value_delimiter = ',')]
    pub(crate) clients: Vec<u32>,
    /// The body the client counts ask for, bytes (`GET /bench/static/{size}`)
    #[arg(long, default_value_t = 2048)]
    pub(crate) client_body: usize,
    /// Body sizes, bytes, comma-separated [default: 256,2048,4096,65536,524288; --quick:
    /// 256,65536]
    #[arg(long, value_delimiter = ',')]
    pub(crate) sizes: Vec<usize>,
    /// Clients of the body-size and bad-URL steps (keep-alive on)
    #[arg(long, default_value_t = 10)]
    pub(crate) size_clients: u32,
    /// Measured time per step [default: 2s; --quick: 500ms]
    #[arg(long, value_parser = humantime::parse_duration)]
    pub(crate) duration: Option<Duration>,
    /// Warm-up per step, not counted [default: 300ms; --quick: 100ms]
    #[arg(long, value_parser = humantime::parse_duration)]
    pub(crate) warmup: Option<Duration>,
    /// How long after the sweep the servers' memory is read again [default: 10s; --quick: 2s]
    #[arg(long, value_parser = humantime::parse_duration)]
    pub(crate) settle: Option<Duration>,
    /// Clients of the TLS handshake steps (a new connection per request over h1-tls, and over
    /// h3 where a runtime of the sweep offers it)
    /// [default: 10; --quick: 2]
    #[arg(long)]
    pub(crate) handshake_clients: Option<u32>,
    /// No TLS handshake steps (and no TLS servers)
    #[arg(long)]
    pub(crate) no_handshakes: bool,
    /// A CI-sized sweep (3 client counts, 2 sizes, short steps): under a minute
    #[arg(long)]
    pub(crate) quick: bool,
}

/// The sweep's settings.
#[derive(Debug, Clone)]
pub(crate) struct SweepSettings {
    /// Servers, CPUs, repeats.
    pub lab: lab::Lab,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// The client counts.
    pub clients: Vec<u32>,
    /// The body of the client steps, bytes.
    pub client_body: usize,
    /// The body sizes, bytes.
    pub sizes: Vec<usize>,
    /// Clients of the size steps.
    pub size_clients: u32,
    /// Measured time per step.
    pub duration: Duration,
    /// Warm-up per step.
    pub warmup: Duration,
    /// Wait before memory is read again after the sweep.
    pub settle: Duration,
    /// The TLS handshake steps, in order (empty: `--no-handshakes`).
    pub handshakes: Vec<handshakes::HandshakeStep>,
}

/// Which part of the sweep a step belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// A client count, keep-alive on or off.
    Clients,
    /// A body size (or the bad URL) at one client count.
    Sizes,
}

impl Part {
    /// Its name in tables.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Part::Clients => "clients",
            Part::Sizes => "sizes",
        }
    }
}

/// One step of the sweep.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    /// Its part.
    pub part: Part,
    /// The request.
    pub shape: Shape,
    /// Its body size, bytes (`None`: the bad URL).
    pub size: Option<usize>,
    /// Concurrent clients.
    pub clients: u32,
    /// Keep-alive on.
    pub keepalive: bool,
}

impl Step {
    /// Its body's name in tables: `2 KiB`, `bad URL (404)`.
    pub(crate) fn body(&self) -> String {
        self.size.map_or_else(|| self.shape.name.clone(), size_text)
    }

    /// `on` or `off`.
    pub(crate) fn keepalive_text(&self) -> &'static str {
        if self.keepalive {
            "on"
        } else {
            "off"
        }
    }
}

impl SweepArgs {
    /// Resolves defaults (and `--quick`).
    pub(crate) fn settings(&self) -> Result<SweepSettings> {
        let quick = self.quick;
        let lab = self.lab.lab("sweep", quick, 1)?;
        let (clients, sizes) = self.clients_and_sizes()?;
        let ms = Duration::from_millis;
        let duration = self
            .duration
            .unwrap_or(if quick { ms(500) } else { ms(2000) });
        let warmup = self.warmup.unwrap_or(if quick { ms(100) } else { ms(300) });
        let settle = self
            .settle
            .unwrap_or(if quick { ms(2000) } else { ms(10_000) });
        let steps = self.steps(&clients, &sizes);
        let handshake_clients = self.handshake_clients.unwrap_or(if quick { 2 } else { 10 });
        if handshake_clients == 0 {
            bail!("--handshake-clients must be at least 1");
        }
        let handshakes = if self.no_handshakes {
            Vec::new()
        } else {
            // QUIC's steps where a runtime of the sweep offers h3.
            let protocols: Vec<Protocol> = handshakes::PROTOCOLS
                .into_iter()
                .filter(|&p| {
                    lab.runtimes
                        .iter()
                        .any(|runtime| lab.info.offers(runtime_of(runtime), p))
                })
                .collect();
            handshakes::steps(handshake_clients, &protocols)
        };
        Ok(SweepSettings {
            lab,
            handshakes,
            steps,
            clients,
            client_body: self.client_body,
            sizes,
            size_clients: self.size_clients,
            duration,
            warmup,
            settle,
        })
    }

    /// The client counts and body sizes (defaults by `--quick`), each checked: at least one
    /// client, and every body one that /bench/static answers.
    fn clients_and_sizes(&self) -> Result<(Vec<u32>, Vec<usize>)> {
        let quick = self.quick;
        let clients = if self.clients.is_empty() {
            if quick {
                QUICK_CLIENTS
            } else {
                DEFAULT_CLIENTS
            }
            .to_vec()
        } else {
            self.clients.clone()
        };
        let sizes = if self.sizes.is_empty() {
            if quick { QUICK_SIZES } else { DEFAULT_SIZES }.to_vec()
        } else {
            self.sizes.clone()
        };
        if clients.contains(&0) || self.size_clients == 0 {
            bail!("client counts must be at least 1");
        }
        let range = brigade_kit::standard::STATIC_SIZES;
        for size in sizes.iter().chain([&self.client_body]) {
            if !range.contains(size) {
                bail!(
                    "body size {size} is outside what /bench/static answers ({}..={})",
                    range.start(),
                    range.end()
                );
            }
        }
        Ok((clients, sizes))
    }

    /// The sweep's steps in order: every client count with keep-alive on then off, every body
    /// size, then the bad URL.
    fn steps(&self, clients: &[u32], sizes: &[usize]) -> Vec<Step> {
        let mut steps = Vec::new();
        for keepalive in [true, false] {
            for &n in clients {
                steps.push(Step {
                    part: Part::Clients,
                    shape: Shape::static_body(self.client_body),
                    size: Some(self.client_body),
                    clients: n,
                    keepalive,
                });
            }
        }
        for &size in sizes {
            steps.push(Step {
                part: Part::Sizes,
                shape: Shape::static_body(size),
                size: Some(size),
                clients: self.size_clients,
                keepalive: true,
            });
        }
        steps.push(Step {
            part: Part::Sizes,
            shape: Shape::unknown_path(),
            size: None,
            clients: self.size_clients,
            keepalive: true,
        });
        steps
    }
}

impl SweepSettings {
    /// A rough wall-clock estimate, seconds.
    pub(crate) fn estimate_s(&self) -> f64 {
        let per_step = self.duration.as_secs_f64() + self.warmup.as_secs_f64() + 0.2;
        let steps = self.steps.len() + self.handshakes.len();
        let runs = steps * self.lab.runtimes.len() * self.lab.repeat as usize;
        let protocols = handshakes::PROTOCOLS
            .iter()
            .filter(|p| self.handshakes.iter().any(|s| s.protocol == **p))
            .count();
        let servers = 1.0 + protocols as f64;
        runs as f64 * per_step
            + self.settle.as_secs_f64()
            + servers * self.lab.runtimes.len() as f64
    }
}

/// One step's run on one runtime.
#[derive(Debug, Clone)]
pub(crate) struct SweepRun {
    /// Index into the steps.
    pub step: usize,
    /// The generator's run.
    pub run: StepRun,
    /// What the probe saw.
    pub probe: Option<ProbeResult>,
}

/// How the bad URL was answered by one runtime.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BadUrlAnswer {
    /// The runtime.
    pub runtime: String,
    /// The status.
    pub status: u16,
    /// The error code in the JSON body.
    pub code: String,
    /// The body's length, bytes.
    pub body_bytes: usize,
}

/// One server's memory over the sweep.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Memory {
    /// The runtime.
    pub runtime: String,
    /// RSS once ready, before any load, MiB.
    pub before_mib: f64,
    /// The most it had resident (`VmHWM`), MiB.
    pub peak_mib: f64,
    /// RSS right after the last step, MiB.
    pub end_mib: f64,
    /// RSS `--settle` after the last step, MiB.
    pub after_mib: f64,
}

/// Growth under this many MiB is never flagged (allocator noise, thread stacks).
pub(crate) const KEPT_FLOOR_MIB: f64 = 4.0;

impl Memory {
    /// What the sweep added and the server still holds after settling, MiB.
    pub(crate) fn kept_mib(&self) -> f64 {
        self.after_mib - self.before_mib
    }

    /// Whether growth did not come back: it still holds at least half of what it grew by at
    /// its peak, and at least [`KEPT_FLOOR_MIB`].
    pub(crate) fn kept(&self) -> bool {
        let grown = self.peak_mib - self.before_mib;
        self.kept_mib() >= KEPT_FLOOR_MIB && self.kept_mib() >= 0.5 * grown
    }
}

/// Everything the sweep measured.
#[derive(Debug, Clone)]
pub(crate) struct SweepResults {
    /// Every step's run on every runtime, in the order made.
    pub runs: Vec<SweepRun>,
    /// The bad URL's answers.
    pub bad_url: Vec<BadUrlAnswer>,
    /// The servers' memory.
    pub memory: Vec<Memory>,
    /// Every TLS handshake step on every runtime, in the order made.
    pub handshakes: Vec<handshakes::HandshakeRun>,
}

/// Runs `brigade study sweep`: the sweep, the three reports, and the report on the terminal.
pub(crate) fn run_sweep(args: &SweepArgs) -> Result<()> {
    let settings = args.settings()?;
    let report = run(&settings)?;
    super::show(&report, &settings.lab.out_dir);
    Ok(())
}

/// Runs the sweep and writes its reports; returns the report.
pub(crate) fn run(settings: &SweepSettings) -> Result<StudyReport> {
    let began = std::time::Instant::now();
    let started_at = brigade_meter::clock::now_rfc3339();
    let lab = &settings.lab;
    let scenarios = settings
        .steps
        .iter()
        .map(|s| s.shape.scenario())
        .collect::<Result<Vec<_>>>()?;
    print_plan(settings);
    let (results, servers) = lab.with_servers(|servers| {
        let bad_url = servers
            .iter()
            .map(|served| check_bad_url(served, lab.timeout))
            .collect::<Result<Vec<_>>>()?;
        let runs = measure_steps(settings, servers, &scenarios)?;
        Ok(SweepResults {
            runs,
            bad_url,
            memory: memory_after(settings, servers),
            handshakes: Vec::new(),
        })
    })?;
    let (results, servers) = handshakes::run(settings, results, servers)?;
    let mut study = report::build(settings, &results, &servers, started_at);
    study.wall_s = began.elapsed().as_secs_f64();
    brigade_report::write_all(&study, &lab.out_dir)?;
    Ok(study)
}

/// Says what the sweep will do and about how long it will take.
fn print_plan(settings: &SweepSettings) {
    let lab = &settings.lab;
    let estimate = settings.estimate_s();
    println!(
        "brigade study sweep: {} steps × {} runtime(s) × {} repeat(s) of {} s (+{} s warm-up), \
         then {} s to settle; about {} min {} s",
        settings.steps.len(),
        lab.runtimes.len(),
        lab.repeat,
        settings.duration.as_secs_f64(),
        settings.warmup.as_secs_f64(),
        settings.settle.as_secs_f64(),
        estimate as u64 / 60,
        estimate as u64 % 60
    );
}

/// Every step on every runtime in compare's order, each with the probe beside it.
fn measure_steps(
    settings: &SweepSettings,
    servers: &[Served],
    scenarios: &[brigade_load::scenario::Scenario],
) -> Result<Vec<SweepRun>> {
    let lab = &settings.lab;
    let order = lab.order(settings.steps.len());
    let mut runs = Vec::new();
    for (i, planned) in order.iter().enumerate() {
        let step = &settings.steps[planned.scenario];
        let served = &servers[planned.runtime];
        let config = lab.load_config(
            served,
            step.clients,
            step.keepalive,
            Window::Time {
                duration: settings.duration,
                warmup: settings.warmup,
            },
        );
        let probe = Probe::start(
            &served.url,
            settings.warmup,
            lab.timeout,
            lab.cpus.generator_mask().map(<[usize]>::to_vec),
        )?;
        let run = lab.measure(
            served,
            &scenarios[planned.scenario],
            &config,
            planned.repeat,
        );
        let probe = probe.finish().ok();
        print_run(&format!("[{}/{}]", i + 1, order.len()), step, &run, &probe);
        runs.push(SweepRun {
            step: planned.scenario,
            run,
            probe,
        });
    }
    Ok(runs)
}

/// Each server's memory at the end of the sweep and again once `settle` has passed.
fn memory_after(settings: &SweepSettings, servers: &[Served]) -> Vec<Memory> {
    let end: Vec<u64> = servers.iter().map(Served::rss_kib).collect();
    println!(
        "Sweep done; reading the servers' memory again in {} s",
        settings.settle.as_secs_f64()
    );
    std::thread::sleep(settings.settle);
    servers
        .iter()
        .zip(end)
        .map(|(served, end)| {
            let mib = |kib: u64| kib as f64 / 1024.0;
            let pid = served.process.pid();
            Memory {
                runtime: served.runtime.clone(),
                before_mib: mib(served.rss_ready_kib),
                peak_mib: mib(procstat::peak_rss_kib(pid).unwrap_or(0)),
                end_mib: mib(end),
                after_mib: mib(served.rss_kib()),
            }
        })
        .collect()
}

/// Asks `served` for the bad URL once and checks the answer: 404 with the JSON error body.
fn check_bad_url(served: &Served, timeout: Duration) -> Result<BadUrlAnswer> {
    let scenario = Shape::unknown_path().scenario()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("Failed to build a runtime")?;
    let seq = AtomicU64::new(0);
    let targets: BTreeMap<String, String> = served.targets();
    let mut session = Session::new(&scenario, &targets, timeout, &seq)?;
    let mut pools = scenario.empty_pools();
    let answer = runtime
        .block_on(session.send(&scenario.requests()[0], &mut pools))
        .with_context(|| format!("{}: the bad URL", served.runtime))?;
    let body: Value = serde_json::from_slice(&answer.body).with_context(|| {
        format!(
            "{}: the bad URL's answer is not JSON: {}",
            served.runtime,
            String::from_utf8_lossy(&answer.body)
        )
    })?;
    let code = body
        .pointer("/error/code")
        .and_then(Value::as_str)
        .with_context(|| {
            format!(
                "{}: the bad URL's answer is not the JSON error body: {body}",
                served.runtime
            )
        })?;
    if code != "not_found" {
        bail!(
            "{}: the bad URL was answered with the error code {code:?}, not not_found",
            served.runtime
        );
    }
    Ok(BadUrlAnswer {
        runtime: served.runtime.clone(),
        status: answer.status,
        code: code.to_owned(),
        body_bytes: answer.body.len(),
    })
}

fn print_run(progress: &str, step: &Step, run: &StepRun, probe: &Option<ProbeResult>) {
    let what = format!(
        "{} {}, {} client(s), keep-alive {}",
        run.runtime,
        step.body(),
        step.clients,
        step.keepalive_text()
    );
    let Some(result) = &run.result else {
        println!(
            "{progress} {what}: failed: {}",
            run.error.as_deref().unwrap_or("?")
        );
        return;
    };
    let t = &result.total;
    println!(
        "{progress} {what}: {:.0} hits/s, p99 {:.2} ms, {:.1} MB/s, {} errors, probe p99 {}, \
         generator CPU {:.0}%{}",
        t.hits_per_s,
        t.latency.p99_ms,
        t.bytes_per_s / 1e6,
        t.errors.total(),
        probe
            .as_ref()
            .map_or("-".to_owned(), |p| format!("{:.2} ms", p.p99_ms)),
        run.generator_cpu_percent,
        match run.flag().as_str() {
            "" => String::new(),
            flag => format!(" — {flag}"),
        }
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_that_stays_grown_is_flagged_and_memory_that_returns_is_not() {
        let memory = |after| Memory {
            runtime: "x".into(),
            before_mib: 10.0,
            peak_mib: 60.0,
            end_mib: 60.0,
            after_mib: after,
        };
        assert!(memory(50.0).kept());
        assert!(!memory(20.0).kept(), "most of it came back");
        assert!(!Memory {
            peak_mib: 12.0,
            after_mib: 12.0,
            ..memory(0.0)
        }
        .kept());
    }
}
