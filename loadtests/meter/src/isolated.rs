//! One isolated run: a load from this process against a running server while `/proc` is sampled
//! around it, judged for generator-bound and contended — what `compare` and the studies measure
//! alike. Every figure covers the measured window only (fixtures and warm-up left out).

use std::time::Duration;

use brigade_load::engine::{self, LoadConfig};
use brigade_load::scenario::Scenario;
use brigade_records::result::LoadResult;

use crate::procstat::{Sampler, Source};
use crate::runcpu::{self, CpuShape};
use brigade_records::cpus::CpuPlan;
use brigade_records::proc::{ProcSample, ProcSeries, ProcUsage};
use brigade_records::runcpu::RunCpu;

/// How often `/proc` is sampled during a run.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// How often servers read through their `/metrics` (`--external`) are sampled: a scrape costs the
/// server a few hundred µs of CPU (about 270 µs for the waiter's 28 KB, release), which at 100 ms
/// and a few dozen requests a second would be a visible share of the CPU it is charged with.
pub const SCRAPE_EVERY: Duration = Duration::from_secs(1);

/// One load run against a running server with `/proc` sampled around it, judged for
/// generator-bound and contended: what `compare` and the studies measure alike.
#[derive(Debug)]
pub struct Sampled {
    /// The generator's result, or why the run failed.
    pub outcome: anyhow::Result<LoadResult>,
    /// The server process over the measured window.
    pub server: ProcUsage,
    /// The generator (this process) over the measured window.
    pub generator: ProcUsage,
    /// The generator's CPU use, percent of one core (its own figure, else the sampled one).
    pub generator_cpu_percent: f64,
    /// Both processes and both sides' CPUs over the measured window.
    pub cpu: RunCpu,
    /// Why the run counts as generator-bound, if it does.
    pub generator_bound: Option<String>,
    /// Why the run counts as contended by other processes, if it does.
    pub contended: Option<String>,
    /// The measured window on the samples' clock, seconds.
    pub window_s: (f64, f64),
    /// The server's raw samples over the whole run.
    pub server_samples: ProcSeries,
}

/// Runs `config` × `scenario` while sampling `server_pid`, this process and both sides' CPUs
/// every [`SAMPLE_EVERY`]; the figures cover the measured window only (fixtures and warm-up
/// left out). Failed runs keep the samples and leave the figures at zero.
pub fn sampled_run(
    config: &LoadConfig,
    scenario: &Scenario,
    server_pid: u32,
    cpus: &CpuPlan,
    shape: CpuShape,
) -> Sampled {
    sampled(server_pid, cpus, shape, || engine::run(config, scenario))
}

/// Runs `load` (anything that loads `server_pid` from this process and says what it measured)
/// while sampling as [`sampled_run`] does.
pub fn sampled(
    server_pid: u32,
    cpus: &CpuPlan,
    shape: CpuShape,
    load: impl FnOnce() -> anyhow::Result<LoadResult>,
) -> Sampled {
    sampled_sources(&[Source::Process(server_pid)], &[], cpus, shape, load)
}

/// Runs `load` while sampling the servers' `sources` (their CPU and memory summed: one server
/// per service when they run apart), their `companions` (CPU on the server's side that is not
/// contention), this process and both sides' CPUs, as [`sampled_run`] does.
pub fn sampled_sources(
    sources: &[Source],
    companions: &[Source],
    cpus: &CpuPlan,
    shape: CpuShape,
    load: impl FnOnce() -> anyhow::Result<LoadResult>,
) -> Sampled {
    let server_pid = sources.first().map_or(0, Source::pid);
    let cpu_sets = if cpus.pinned {
        vec![cpus.server.clone(), cpus.generator.clone()]
    } else {
        vec![cpus.server.clone()]
    };
    let mut all = sources.to_vec();
    all.extend_from_slice(companions);
    all.push(Source::Process(std::process::id()));
    // Scraping a server's /metrics costs it CPU: those runs are sampled less often.
    let every = if all.iter().any(|s| matches!(s, Source::Metrics(_))) {
        SCRAPE_EVERY
    } else {
        SAMPLE_EVERY
    };
    let sampler = Sampler::start_sources(&all, &cpu_sets, every);
    let outcome = load();
    let end_s = sampler.now_s();
    let recorded = sampler.finish();
    let mut processes = recorded.processes;
    let own = processes.pop().unwrap_or(ProcSeries {
        pid: std::process::id(),
        samples: Vec::new(),
    });
    let companion_series = processes.split_off(sources.len());
    let servers = processes;
    let mut sampled = Sampled {
        outcome: Err(anyhow::anyhow!("not run")),
        server: ProcUsage::default(),
        generator: ProcUsage::default(),
        generator_cpu_percent: 0.0,
        cpu: RunCpu::default(),
        generator_bound: None,
        contended: None,
        window_s: (0.0, 0.0),
        server_samples: ProcSeries {
            pid: server_pid,
            samples: Vec::new(),
        },
    };
    if let Ok(result) = &outcome {
        let window = ((end_s - result.elapsed_s).max(0.0), end_s);
        sampled.server = summed_usage(&servers, window);
        sampled.generator = own.usage(window.0, window.1);
        sampled.generator_cpu_percent = if result.generator_cpu_percent > 0.0 {
            result.generator_cpu_percent
        } else {
            sampled.generator.cpu_percent
        };
        let busy = |i: usize| {
            recorded
                .cpus
                .get(i)
                .map(|series| series.busy(window.0, window.1))
        };
        sampled.cpu = RunCpu {
            generator_process: sampled.generator_cpu_percent,
            server_process: sampled.server.cpu_percent,
            server_cpus: busy(0).unwrap_or_default(),
            generator_cpus: busy(if cpus.pinned { 1 } else { 0 }).unwrap_or_default(),
            companions: summed_usage(&companion_series, window).cpu_percent,
        };
        sampled.generator_bound = runcpu::generator_bound(&sampled.cpu, shape);
        sampled.contended = runcpu::contended(&sampled.cpu, shape);
        sampled.window_s = window;
    }
    sampled.outcome = outcome;
    sampled.server_samples = summed_series(servers, server_pid);
    sampled
}

/// The servers' usage over `window`, summed (CPU and memory of processes that run side by side).
fn summed_usage(servers: &[ProcSeries], window: (f64, f64)) -> ProcUsage {
    servers
        .iter()
        .map(|series| series.usage(window.0, window.1))
        .reduce(|a, b| ProcUsage {
            cpu_percent: a.cpu_percent + b.cpu_percent,
            peak_rss_mib: a.peak_rss_mib + b.peak_rss_mib,
            mean_rss_mib: a.mean_rss_mib + b.mean_rss_mib,
            samples: a.samples.min(b.samples),
        })
        .unwrap_or_default()
}

/// One series for several servers: their samples summed tick by tick (each tick reads them all),
/// on the first one's clock; the first server's alone when a tick missed one of them.
fn summed_series(mut servers: Vec<ProcSeries>, pid: u32) -> ProcSeries {
    let aligned = servers
        .iter()
        .all(|s| s.samples.len() == servers[0].samples.len());
    if servers.len() <= 1 || !aligned {
        servers.truncate(1);
        return servers.pop().unwrap_or(ProcSeries {
            pid,
            samples: Vec::new(),
        });
    }
    let samples = (0..servers[0].samples.len())
        .map(|i| ProcSample {
            t_s: servers[0].samples[i].t_s,
            cpu_s: servers.iter().map(|s| s.samples[i].cpu_s).sum(),
            rss_kib: servers.iter().map(|s| s.samples[i].rss_kib).sum(),
        })
        .collect();
    ProcSeries { pid, samples }
}
