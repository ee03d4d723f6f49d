//! What the HTTP studies (`rpc`, `sweep`, `inproc`) share: their common flags, the servers
//! (started as `compare` starts them: any binary that speaks the contract of [`brigade_meter::servers`],
//! pinned to the server CPUs, on free ports, learned from their announcements), the order of runs
//! ([`brigade_meter::order`], as compare orders them: a cell's runs back to back, one per runtime,
//! the first runtime rotating), one measured run ([`brigade_meter::isolated::sampled_run`]:
//! `/proc` sampled, generator-bound and contended runs flagged by [`brigade_meter::runcpu`]'s
//! rules), the setup section in compare's words,
//! and the columns every run's row carries.
//!
//! One thing differs from `compare`: a study keeps one server per runtime up for its whole length
//! (on the memory store: the bench endpoints keep no state), because the sweep's "memory after"
//! is about one server's life. The idle servers share the server CPUs but use none of them; the
//! contention check would see it if they did.

pub(crate) mod calls;
pub(crate) mod inprocess;
pub(crate) mod shapes;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use brigade_load::engine::LoadConfig;
use brigade_load::scenario::Scenario;
use brigade_meter::wire::Wire;
use brigade_records::protocol::Protocol;
use brigade_records::result::LoadResult;
use clap::Args;

use brigade_meter::isolated::{sampled_run, Sampled};
use brigade_meter::order::{self, Planned};
use brigade_meter::pin;
use brigade_meter::pin::CpuArgs;
use brigade_meter::procstat;
use brigade_meter::runcpu::CpuShape;
use brigade_meter::servers::{self, Launch, ServerInfo, ServerProcess, ServerSpec};
use brigade_records::cpus::CpuPlan;
use brigade_records::stop::StopOutcome;
use brigade_report::setup::{build_versions, Setup};
use brigade_report::study::{Better, Metric};

/// The seed of every study run's random choices (fixed, so any study can be replayed).
const STUDY_SEED: u64 = 0x5eed_b41a;

use brigade_meter::servers::READY_TIMEOUT;

use brigade_meter::servers::STOP_GRACE;

/// How runs are ordered, in words, for the report.
pub(crate) const INTERLEAVING: &str =
    "one server per runtime, up for the whole study (memory store); \
    the runs of each cell made back to back, one per runtime, the runtime order rotating by one \
    from cell to cell and on into the next repeat (compare's order)";

/// The flags every HTTP study shares (the servers, the CPUs, the repeats, where to write).
#[derive(Debug, Clone, Args)]
pub(crate) struct LabArgs {
    /// Runtimes, comma-separated [default: every runtime the binary has]
    #[arg(long, value_delimiter = ',')]
    pub(crate) runtimes: Vec<String>,
    /// Runs per cell and runtime [default: the study's]
    #[arg(long)]
    pub(crate) repeat: Option<u32>,
    /// Worker threads for every runtime [default: the number of server CPUs]
    #[arg(long)]
    pub(crate) workers: Option<u32>,
    /// Generator threads [default: the number of generator CPUs]
    #[arg(long)]
    pub(crate) threads: Option<u32>,
    /// Per-request timeout
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub(crate) timeout: Duration,
    /// Where to write report.json, report.md, report.html and the server logs
    /// [default: results/study-<study>-<UTC timestamp>]
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// The server binary, started as `compare` starts one (docs/embedding.md)
    /// [default: this executable]
    #[arg(long)]
    pub(crate) binary: Option<PathBuf>,
    /// Start each server with this command instead of the standard flags (placeholders as for
    /// `compare --server-command`)
    #[arg(long, value_name = "TEMPLATE")]
    pub(crate) server_command: Option<String>,
    /// Where servers and generator run.
    #[command(flatten)]
    pub(crate) cpus: CpuArgs,
}

/// A study's servers, CPUs and settings, resolved from [`LabArgs`].
#[derive(Debug, Clone)]
pub(crate) struct Lab {
    /// The study's name (`rpc`).
    pub study: &'static str,
    /// How to start the servers.
    pub launch: Launch,
    /// What the binary said about itself.
    pub info: ServerInfo,
    /// The runtimes, in order.
    pub runtimes: Vec<String>,
    /// The CPU split.
    pub cpus: CpuPlan,
    /// The CPU split, as the verdicts see it.
    pub shape: CpuShape,
    /// `--workers` for every server.
    pub workers: u32,
    /// Generator threads.
    pub threads: u32,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Runs per cell.
    pub repeat: u32,
    /// Whether `--quick` chose the settings.
    pub quick: bool,
    /// Where the reports and logs go.
    pub out_dir: PathBuf,
    /// The command line, for the report.
    pub command_line: String,
    /// What the servers and loads speak (plaintext HTTP/1.1 unless a study asks otherwise).
    pub wire: Wire,
}

impl LabArgs {
    /// Resolves the flags for `study`; `default_repeat` applies when `--repeat` is not given.
    pub(crate) fn lab(&self, study: &'static str, quick: bool, default_repeat: u32) -> Result<Lab> {
        let (launch, info, runtimes) = Launch::resolve_runtimes(
            self.binary.as_deref(),
            self.server_command.as_deref(),
            &self.runtimes,
        )?;
        launch.check("memory", false, runtimes.len())?;
        let repeat = self.repeat.unwrap_or(default_repeat);
        if repeat == 0 {
            bail!("--repeat must be at least 1");
        }
        let choice = self.cpus.choice()?;
        let cpus = choice.plan(&pin::available_cpus())?;
        let workers = self.workers.unwrap_or(cpus.server.len().max(1) as u32);
        let threads = self.threads.unwrap_or(cpus.generator.len().max(1) as u32);
        let shape = CpuShape {
            generator_cpus: cpus.generator.len(),
            server_cpus: cpus.server.len(),
            pinned: cpus.pinned,
        };
        let out_dir = self.out.clone().unwrap_or_else(|| {
            PathBuf::from("results")
                .join(format!("study-{study}-{}", brigade_meter::clock::stamp()))
        });
        Ok(Lab {
            study,
            launch,
            info,
            runtimes,
            cpus,
            shape,
            workers,
            threads,
            timeout: self.timeout,
            repeat,
            quick,
            out_dir,
            command_line: std::env::args().collect::<Vec<_>>().join(" "),
            wire: Wire::default(),
        })
    }
}

/// One runtime's server, up for the whole study.
pub(crate) struct Served {
    /// The runtime it serves with.
    pub runtime: String,
    /// The process.
    pub process: ServerProcess,
    /// The base URL of the first service it announced (where the bench endpoints are asked).
    pub url: String,
    /// The command it was started with.
    pub command: String,
    /// Its resident memory once ready, before any load, KiB.
    pub rss_ready_kib: u64,
    /// The worker count it said it runs with.
    pub workers: Option<u32>,
    _data: tempfile::TempDir,
}

impl std::fmt::Debug for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Served")
            .field("runtime", &self.runtime)
            .field("pid", &self.process.pid())
            .field("url", &self.url)
            .finish()
    }
}

impl Served {
    /// The targets of a scenario that names no service: this server's first service.
    pub(crate) fn targets(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("*".to_owned(), self.url.clone())])
    }

    /// Its resident memory now, KiB (0 if it cannot be read).
    pub(crate) fn rss_kib(&self) -> u64 {
        procstat::read(self.process.pid()).map_or(0, |r| r.rss_kib)
    }
}

/// How a measured run is bounded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Window {
    /// A fixed time after a warm-up.
    Time {
        /// The measured time.
        duration: Duration,
        /// The warm-up before it, not counted.
        warmup: Duration,
    },
    /// A fixed number of requests after a warm-up.
    Requests {
        /// Measured requests, all users together.
        count: u64,
        /// The warm-up before them, not counted.
        warmup: Duration,
    },
}

/// One measured run of a study: the generator's result and what `/proc` said about it.
#[derive(Debug, Clone)]
pub(crate) struct StepRun {
    /// The runtime loaded.
    pub runtime: String,
    /// Which repeat (0-based).
    pub repeat: u32,
    /// The generator's result, if the run completed.
    pub result: Option<LoadResult>,
    /// Why it failed, if it did.
    pub error: Option<String>,
    /// The server process's CPU over the measured window, percent of one core.
    pub server_cpu_percent: f64,
    /// The generator's CPU, percent of one core.
    pub generator_cpu_percent: f64,
    /// Why the run counts as generator-bound, if it does.
    pub generator_bound: Option<String>,
    /// Why the run counts as contended by other processes, if it does.
    pub contended: Option<String>,
}

impl StepRun {
    /// The run of `runtime` that `sampled` measured.
    pub(crate) fn from_sampled(runtime: &str, repeat: u32, sampled: Sampled) -> StepRun {
        let (result, error) = match sampled.outcome {
            Ok(result) => (Some(result), None),
            Err(err) => (None, Some(format!("{err:#}"))),
        };
        StepRun {
            runtime: runtime.to_owned(),
            repeat,
            result,
            error,
            server_cpu_percent: sampled.server.cpu_percent,
            generator_cpu_percent: sampled.generator_cpu_percent,
            generator_bound: sampled.generator_bound,
            contended: sampled.contended,
        }
    }

    /// A run of the in-process provider (no server, no generator: no CPU figures and no flag
    /// but failure).
    pub(crate) fn in_process(outcome: Result<LoadResult>, repeat: u32) -> StepRun {
        let (result, error) = match outcome {
            Ok(result) => (Some(result), None),
            Err(err) => (None, Some(format!("{err:#}"))),
        };
        StepRun {
            runtime: inprocess::INPROC.to_owned(),
            repeat,
            result,
            error,
            server_cpu_percent: 0.0,
            generator_cpu_percent: 0.0,
            generator_bound: None,
            contended: None,
        }
    }

    /// Its line on the terminal: `what` names the cell (`hello, 1 client(s)`).
    pub(crate) fn print(&self, progress: &str, what: &str) {
        match &self.result {
            Some(result) => println!(
                "{progress} {} {what}: {} calls, mean {:.4} ms, p99 {:.4} ms{}",
                self.runtime,
                result.total.requests,
                result.total.latency.mean_ms,
                result.total.latency.p99_ms,
                match self.flag().as_str() {
                    "" => String::new(),
                    flag => format!(" — {flag}"),
                }
            ),
            None => println!(
                "{progress} {} {what}: failed: {}",
                self.runtime,
                self.error.as_deref().unwrap_or("?")
            ),
        }
    }
    /// The run's flag for tables: `contended`, `generator-bound` or empty (contention first, as
    /// compare says it).
    pub(crate) fn flag(&self) -> String {
        match (&self.contended, &self.generator_bound, &self.error) {
            (_, _, Some(_)) => "failed".to_owned(),
            (Some(_), _, _) => "contended".to_owned(),
            (None, Some(_), _) => "generator-bound".to_owned(),
            (None, None, None) => String::new(),
        }
    }

    /// The reason behind the flag, if any.
    pub(crate) fn reason(&self) -> Option<&str> {
        self.error
            .as_deref()
            .or(self.contended.as_deref())
            .or(self.generator_bound.as_deref())
    }
}

/// One provider's run of one cell (an operation at a client count).
#[derive(Debug, Clone)]
pub(crate) struct CellRun {
    /// Index into the study's operations.
    pub operation: usize,
    /// Concurrent clients.
    pub clients: u32,
    /// A runtime, or `inproc`.
    pub provider: String,
    /// The run.
    pub run: StepRun,
}

/// The metric columns of a run's row, in [`run_values`]' order.
pub(crate) fn run_metrics() -> Vec<Metric> {
    vec![
        Metric::new("requests", "", Better::Neither, 0),
        Metric::new("seconds", "s", Better::Neither, 3),
        Metric::new("hits/s", "", Better::Higher, 0),
        Metric::new("errors", "", Better::Lower, 0),
        Metric::new("mean", "ms", Better::Lower, 3),
        Metric::new("p50", "ms", Better::Lower, 3),
        Metric::new("p99", "ms", Better::Lower, 3),
        Metric::new("bytes/s", "", Better::Higher, 0),
        Metric::new("received per request", "bytes", Better::Neither, 0),
        Metric::new("server CPU", "%", Better::Neither, 0),
        Metric::new("generator CPU", "%", Better::Neither, 0),
    ]
}

/// A run's values for [`run_metrics`] (all missing if it failed).
pub(crate) fn run_values(run: &StepRun) -> Vec<Option<f64>> {
    let Some(result) = &run.result else {
        return vec![None; run_metrics().len()];
    };
    let t = &result.total;
    vec![
        Some(t.requests as f64),
        Some(result.elapsed_s),
        Some(t.hits_per_s),
        Some(t.errors.total() as f64),
        Some(t.latency.mean_ms),
        Some(t.latency.p50_ms),
        Some(t.latency.p99_ms),
        Some(t.bytes_per_s),
        (t.requests > 0).then(|| t.bytes_received as f64 / t.requests as f64),
        Some(run.server_cpu_percent),
        Some(run.generator_cpu_percent),
    ]
}

/// `1, 5, 10`.
pub(crate) fn counts_text(values: &[u32]) -> String {
    values
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Lab {
    /// This lab with servers started to speak `protocol` and every load speaking it.
    pub(crate) fn over(&self, protocol: Protocol) -> Lab {
        Lab {
            wire: Wire::new(protocol, 1),
            ..self.clone()
        }
    }

    /// The order of every run: `cells` cells × the runtimes × the repeats, compare's order.
    pub(crate) fn order(&self, cells: usize) -> Vec<Planned> {
        order::plan(self.runtimes.len(), cells, &[1], &[0], self.repeat)
    }

    /// Makes every run of the cells operation × client count in compare's order: each runtime's
    /// by `socket`, then, after the runtimes' runs of a cell in a repeat, the in-process
    /// provider's by `local` when there is one. `name` names an operation on the terminal.
    pub(crate) fn run_cells(
        &self,
        servers: &[Served],
        (operations, clients): (usize, &[u32]),
        name: impl Fn(usize) -> String,
        mut socket: impl FnMut(&Served, usize, u32, u32) -> StepRun,
        mut local: Option<impl FnMut(usize, u32, u32) -> StepRun>,
    ) -> Vec<CellRun> {
        let cells: Vec<(usize, u32)> = (0..operations)
            .flat_map(|op| clients.iter().map(move |&c| (op, c)))
            .collect();
        let order = self.order(cells.len());
        let mut runs = Vec::new();
        for (i, planned) in order.iter().enumerate() {
            let (operation, clients) = cells[planned.scenario];
            let served = &servers[planned.runtime];
            let what = format!("{}, {clients} client(s)", name(operation));
            let run = socket(served, operation, clients, planned.repeat);
            run.print(&format!("[{}/{}]", i + 1, order.len()), &what);
            runs.push(CellRun {
                operation,
                clients,
                provider: served.runtime.clone(),
                run,
            });
            let last_of_cell = order.get(i + 1).is_none_or(|next| {
                next.scenario != planned.scenario || next.repeat != planned.repeat
            });
            if let (true, Some(local)) = (last_of_cell, local.as_mut()) {
                let run = local(operation, clients, planned.repeat);
                run.print("   ", &what);
                runs.push(CellRun {
                    operation,
                    clients,
                    provider: inprocess::INPROC.to_owned(),
                    run,
                });
            }
        }
        runs
    }

    /// Starts one server per runtime, each pinned to the server CPUs on free ports, on the memory
    /// store; stops those already started if one fails.
    pub(crate) fn start_servers(&self) -> Result<Vec<Served>> {
        let logs = self.out_dir.join("logs");
        std::fs::create_dir_all(&logs)
            .with_context(|| format!("Failed to create {}", logs.display()))?;
        let mut started: Vec<Served> = Vec::new();
        for runtime in &self.runtimes {
            match self.start_one(runtime, &logs) {
                Ok(served) => {
                    println!(
                        "{runtime}: server pid {} ready in {:.2} s at {} (CPUs {}, --workers {})",
                        served.process.pid(),
                        served.process.started_in().as_secs_f64(),
                        served.url,
                        brigade_records::cpus::list(&self.cpus.server),
                        self.workers
                    );
                    started.push(served);
                }
                Err(err) => {
                    stop_servers(started);
                    return Err(err.context(format!("starting the {runtime} server")));
                }
            }
        }
        Ok(started)
    }

    fn start_one(&self, runtime: &str, logs: &std::path::Path) -> Result<Served> {
        let data = tempfile::Builder::new()
            .prefix("brigade-study-")
            .tempdir()
            .context("Failed to create a data folder")?;
        let spec = ServerSpec {
            launch: self.launch.clone(),
            services: (self.launch.serves_all() && !self.info.services.is_empty())
                .then(|| self.info.services.clone()),
            runtime: runtime.to_owned(),
            store: "memory".to_owned(),
            mongodb_uri: None,
            workers: self.workers,
            port: 0,
            data_dir: data.path().to_path_buf(),
            preload: 0,
            database_prefix: None,
            log_path: logs.join(format!("{}-{runtime}{}.log", self.study, self.log_suffix())),
            cpus: self.cpus.server_mask().map(<[usize]>::to_vec),
            handicap_us: 0.0,
            protocol: self.wire.protocol,
        };
        let process = servers::start_on_free_ports(&spec, &[], READY_TIMEOUT)?;
        let url = process
            .announced()
            .first_url()
            .context("the server announced no service")?
            .to_owned();
        let rss_ready_kib = procstat::read(process.pid()).map_or(0, |r| r.rss_kib);
        Ok(Served {
            runtime: runtime.to_owned(),
            workers: process.workers_reported(),
            command: spec.command_line(),
            url,
            rss_ready_kib,
            process,
            _data: data,
        })
    }

    /// Starts the servers, pins this thread to the generator's CPUs (given back after), runs
    /// `study` with them, and stops them whatever it answered. Returns its answer and each
    /// server's line for the setup section (how it was started and how it ended).
    pub(crate) fn with_servers<T>(
        &self,
        study: impl FnOnce(&[Served]) -> Result<T>,
    ) -> Result<(T, Vec<(String, String)>)> {
        let _unpin = pin::Unpin::remember();
        let servers = self.start_servers()?;
        if let Some(generator) = self.cpus.generator_mask() {
            if let Err(err) = pin::pin_current_thread(generator) {
                stop_servers(servers);
                return Err(err);
            }
        }
        let texts: Vec<String> = servers
            .iter()
            .map(|served| server_text(served, &self.cpus))
            .collect();
        let answer = study(&servers);
        let stops = stop_servers(servers);
        let lines = stops
            .into_iter()
            .zip(texts)
            .map(|((runtime, stop), text)| {
                println!("{runtime}: server {stop}");
                (runtime, format!("{text}; {stop}"))
            })
            .collect();
        Ok((answer?, lines))
    }

    /// The generator's settings for a closed-loop run of `users` against `served`.
    pub(crate) fn load_config(
        &self,
        served: &Served,
        users: u32,
        keepalive: bool,
        window: Window,
    ) -> LoadConfig {
        let (duration, requests, warmup) = match window {
            Window::Time { duration, warmup } => (Some(duration), None, warmup),
            Window::Requests { count, warmup } => (None, Some(count), warmup),
        };
        self.wire.apply(LoadConfig {
            targets: served.targets(),
            users: Some(users),
            rate: None,
            connections: users,
            duration,
            requests,
            warmup,
            keepalive,
            threads: self.threads,
            timeout: self.timeout,
            think: Duration::ZERO,
            cpus: self.cpus.generator_mask().map(<[usize]>::to_vec),
            progress: false,
            // One fixed seed: every runtime and repeat is sent the same request stream.
            seed: Some(STUDY_SEED),
            ..LoadConfig::default()
        })
    }

    /// `-h1-tls` in the servers' log names when they speak another protocol than h1.
    fn log_suffix(&self) -> String {
        match self.wire.protocol {
            Protocol::H1 => String::new(),
            other => format!("-{other}"),
        }
    }

    /// One measured run of `scenario` with `config` against `served`, `/proc` sampled around it.
    pub(crate) fn measure(
        &self,
        served: &Served,
        scenario: &Scenario,
        config: &LoadConfig,
        repeat: u32,
    ) -> StepRun {
        let sampled = sampled_run(
            config,
            scenario,
            served.process.pid(),
            &self.cpus,
            self.shape,
        );
        StepRun::from_sampled(&served.runtime, repeat, sampled)
    }

    /// The setup section: machine, versions, threads and CPUs in compare's words, the settings
    /// line given, the interleaving and every server's command.
    pub(crate) fn setup(&self, servers: &[(String, String)], settings: String) -> Setup {
        let mut versions = build_versions();
        versions.runtimes = self
            .info
            .runtimes
            .iter()
            .filter(|r| self.runtimes.contains(&r.name))
            .map(|r| (r.name.clone(), r.describe()))
            .collect();
        let binary = self.launch.binary();
        versions.server_binary = binary.display().to_string();
        versions.server_binary_version = servers::binary_version(binary);
        let mut out = Setup {
            machine: brigade_load::machine::describe(),
            versions,
            lines: Vec::new(),
            command_line: self.command_line.clone(),
        };
        out.line(
            "Threads",
            format!(
                "every runtime `--workers {}`; generator {} thread(s); {}",
                self.workers, self.threads, self.cpus.note
            ),
        )
        .line(
            "CPUs",
            format!(
                "server {} / generator {}{}",
                brigade_records::cpus::list(&self.cpus.server),
                brigade_records::cpus::list(&self.cpus.generator),
                if self.cpus.pinned {
                    ""
                } else {
                    " (shared, not pinned)"
                }
            ),
        )
        .line(
            "Settings",
            format!(
                "{settings}; repeat {}; request timeout {} ms{}",
                self.repeat,
                self.timeout.as_millis(),
                if self.quick { "; --quick" } else { "" }
            ),
        )
        .line("Interleaving", INTERLEAVING);
        for (runtime, text) in servers {
            out.line(format!("Server ({runtime})"), text.clone());
        }
        out
    }
}

/// Stops every server; returns how each ended, by runtime.
pub(crate) fn stop_servers(servers: Vec<Served>) -> Vec<(String, StopOutcome)> {
    servers
        .into_iter()
        .map(|served| {
            let runtime = served.runtime.clone();
            let stop = served.process.stop(STOP_GRACE);
            (runtime, stop)
        })
        .collect()
}

/// A server's line for the setup section: how it was started, its workers and limits, how it
/// ended.
pub(crate) fn server_text(served: &Served, cpus: &CpuPlan) -> String {
    format!(
        "`{}` on CPUs {} (said --workers {}{})",
        served.command,
        brigade_records::cpus::list(&cpus.server),
        served
            .workers
            .map_or("?".to_owned(), |workers| workers.to_string()),
        served
            .process
            .limits_reported()
            .map(|l| format!("; limits: {l}"))
            .unwrap_or_default()
    )
}

/// Notes for every flagged or failed run: `what` names the run's cell.
pub(crate) fn flag_notes<'a>(runs: impl Iterator<Item = (String, &'a StepRun)>) -> Vec<String> {
    runs.filter_map(|(what, run)| {
        run.reason().map(|reason| {
            format!(
                "{} {what} (repeat {}) was {}: {reason}.",
                run.runtime,
                run.repeat + 1,
                run.flag()
            )
        })
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_run_has_no_values_and_says_why() {
        let run = StepRun {
            runtime: "axum".into(),
            repeat: 0,
            result: None,
            error: Some("refused".into()),
            server_cpu_percent: 0.0,
            generator_cpu_percent: 0.0,
            generator_bound: None,
            contended: Some("others".into()),
        };
        assert_eq!(run.flag(), "failed");
        assert_eq!(run.reason(), Some("refused"));
        assert!(run_values(&run).iter().all(Option::is_none));
        assert_eq!(run_values(&run).len(), run_metrics().len());
        let notes = flag_notes(std::iter::once(("hello at 1 client".to_owned(), &run)));
        assert_eq!(
            notes,
            ["axum hello at 1 client (repeat 1) was failed: refused."]
        );
    }
}
