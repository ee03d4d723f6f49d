//! One measured run, start to stop: make its fresh state, start its server on it (pinned, on free
//! ports), load it with the scenario (fixtures, warm-up, then the measured window) while `/proc` is
//! sampled, then stop the server. Everything that happens before the window — copying a prepared
//! folder, a preload, the fixtures, the warm-up — is recorded but not measured.

use std::io::Write as _;
use std::time::Duration;

use crate::settings::CompareSettings;
use crate::state::{self, FreshState};
use brigade_load::engine::LoadConfig;
use brigade_load::scenario::Scenario;
use brigade_meter::order::Planned;
use brigade_meter::runcpu::CpuShape;
use brigade_meter::servers::{self, ServerProcess, ServerSpec};
use brigade_records::cpus::CpuPlan;
use brigade_records::proc::{ProcSeries, ProcUsage};
use brigade_records::runcpu::RunCpu;
use brigade_report::{RunRecord, ServerRecord, StateReset};

/// A run's server: its record, and what it said.
#[derive(Debug)]
pub(crate) struct Served {
    /// Its record for the report.
    pub record: ServerRecord,
    /// The worker count it said it runs with.
    pub workers: Option<u32>,
    /// The server limits it said it runs under.
    pub limits: Option<String>,
    /// The services it announced, in order.
    pub services: Vec<String>,
}

/// What every run of a comparison shares.
pub(crate) struct Bench<'a> {
    /// The comparison's settings.
    pub settings: &'a CompareSettings,
    /// The CPU split.
    pub cpus: &'a CpuPlan,
    /// The CPU split, as the verdicts see it.
    pub shape: CpuShape,
    /// `--workers` for every server.
    pub workers: u32,
    /// Generator threads.
    pub threads: u32,
    /// Fresh state for every run.
    pub state: &'a FreshState,
    /// Where the time goes, phase by phase.
    pub phases: &'a crate::phases::Phases,
}

impl Bench<'_> {
    /// The server command every run and preparation starts from (port, folder, preload and log
    /// are the run's own).
    pub(crate) fn server_template(&self) -> ServerSpec {
        let settings = self.settings;
        ServerSpec {
            launch: settings.launch.clone(),
            services: settings.expected_services(),
            runtime: settings
                .runtimes
                .first()
                .map(|label| brigade_meter::servers::runtime_of(label).to_owned())
                .unwrap_or_default(),
            store: settings.store.clone(),
            mongodb_uri: settings.mongodb_uri.clone(),
            workers: self.workers,
            port: 0,
            data_dir: std::env::temp_dir(),
            preload: 0,
            database_prefix: None,
            log_path: settings.out_dir.join("logs").join("server.log"),
            cpus: self.cpus.server_mask().map(<[usize]>::to_vec),
            handicap_us: 0.0,
            protocol: settings.wire.protocol,
        }
    }

    /// Makes run number `index` as `planned`: returns its record and, if a server was started,
    /// what it was and said.
    pub(crate) fn run(
        &self,
        index: usize,
        planned: &Planned,
        scenario: &Scenario,
        progress: &str,
    ) -> (RunRecord, Option<Served>) {
        let settings = self.settings;
        let runtime = &settings.runtimes[planned.runtime];
        let mut record = blank_record(
            index,
            planned,
            runtime,
            &settings.scenarios[planned.scenario],
        );
        if let Some(external) = settings.external.iter().find(|e| &e.runtime == runtime) {
            let served = self.run_external(external, planned, scenario, &mut record, progress);
            return (record, Some(served));
        }
        let fresh = match self.state.for_run(index, runtime, planned.preload) {
            Ok(fresh) => fresh,
            Err(err) => {
                record.error = Some(format!("could not make its fresh state: {err:#}"));
                println!(
                    "{progress}: skipped, {}",
                    record.error.as_deref().unwrap_or_default()
                );
                return (record, None);
            }
        };
        let log_path = settings
            .out_dir
            .join("logs")
            .join(format!("{:03}-{runtime}.log", index + 1));
        let mut server = match self.start_server(runtime, &fresh, &log_path) {
            Ok(server) => server,
            Err(err) => {
                record.error = Some(format!("server not started: {err:#}"));
                println!(
                    "{progress}: skipped, {}",
                    record.error.as_deref().unwrap_or_default()
                );
                return (record, None);
            }
        };
        let pid = server.pid();
        let workers = server.workers_reported();
        let limits = server.limits_reported().map(str::to_owned);
        let services = server.announced().names();
        let mut server_record =
            record_started(runtime, index as u32, planned.preload, &server, &log_path);
        record.reset = Some(state_reset(&fresh, &server, server_record.startup_s));
        if server.is_running() {
            self.load(&server, scenario, planned, &mut record, progress);
        } else {
            record.error = Some("the server process had exited".to_owned());
            println!("{progress}: failed, the server process had exited");
        }
        // RSS after the test, then a clean stop (and, for MongoDB, its databases dropped).
        let stop = record_stop(&mut server_record, server);
        if !matches!(
            stop,
            brigade_records::stop::StopOutcome::Graceful { code: Some(0) }
        ) {
            println!("{runtime} (pid {pid}): {stop}");
        }
        drop(fresh);
        let served = Served {
            record: server_record,
            workers,
            limits,
            services,
        };
        (record, Some(served))
    }

    /// Starts `runtime`'s server on its fresh state, on free ports, logging to `log_path`.
    fn start_server(
        &self,
        runtime: &str,
        fresh: &state::RunState,
        log_path: &std::path::Path,
    ) -> anyhow::Result<ServerProcess> {
        let spec = ServerSpec {
            runtime: brigade_meter::servers::runtime_of(runtime).to_owned(),
            handicap_us: self.settings.handicaps.get(runtime).copied().unwrap_or(0.0),
            data_dir: fresh.data.path().to_path_buf(),
            preload: fresh.preload_arg,
            database_prefix: fresh.database_prefix.clone(),
            log_path: log_path.to_path_buf(),
            ..self.server_template()
        };
        servers::start_on_free_ports(&spec, &[], state::ready_timeout(fresh.preload_arg))
    }

    /// The generator's configuration for a run of `planned` against `targets`.
    pub(crate) fn config(
        &self,
        targets: std::collections::BTreeMap<String, String>,
        planned: &Planned,
    ) -> LoadConfig {
        let settings = self.settings;
        let cpus = self.cpus;
        // An SLO search's step measures its sub-windows of --duration each, an exact histogram
        // kept per sub-window.
        let (duration, sub_window) = match (&settings.slo, planned.rate) {
            (Some(slo), Some(_)) => (
                settings.duration * slo.search.windows,
                Some(settings.duration),
            ),
            _ => (settings.duration, None),
        };
        settings.wire.apply(LoadConfig {
            targets,
            users: Some(planned.users),
            rate: planned.rate.or(settings.rate),
            connections: planned.users,
            duration: Some(duration),
            sub_window,
            requests: None,
            warmup: settings.warmup,
            keepalive: settings.keepalive,
            threads: self.threads,
            timeout: settings.timeout,
            think: Duration::ZERO,
            cpus: cpus.generator_mask().map(<[usize]>::to_vec),
            progress: settings.progress,
            seed: Some(self.seed(planned)),
            ..LoadConfig::default()
        })
    }

    /// The generator's seed for a run of `planned`: the comparison's seed for every run, since
    /// every run starts from the same state. On external servers, which keep what earlier runs
    /// made, a seed of its own per cell and repeat (the same for every runtime in it, so runs
    /// stay paired), so that fixtures drawing random keys (table numbers) do not meet the last
    /// cell's.
    pub(crate) fn seed(&self, planned: &Planned) -> u64 {
        if self.settings.external.is_empty() {
            return self.settings.seed;
        }
        let cell = [
            planned.scenario as u64,
            u64::from(planned.users),
            planned.preload,
            u64::from(planned.repeat),
        ];
        cell.iter().fold(self.settings.seed, |seed, &part| {
            (seed ^ part)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .rotate_left(29)
        })
    }

    /// Loads `server` with the scenario and fills `record` with what was measured.
    fn load(
        &self,
        server: &ServerProcess,
        scenario: &Scenario,
        planned: &Planned,
        record: &mut RunRecord,
        progress: &str,
    ) {
        let cpus = self.cpus;
        let targets = match server
            .announced()
            .targets(scenario.label(), &scenario.services())
        {
            Ok(targets) => targets,
            Err(err) => {
                println!("{progress}: failed: {err:#}");
                record.error = Some(format!("{err:#}"));
                return;
            }
        };
        let config = self.config(targets, planned);
        let sampled = sampled_run(&config, scenario, server.pid(), cpus, self.shape);
        fill(record, sampled, progress);
    }
}

use brigade_meter::isolated::{sampled_run, Sampled};

/// Fills `record` with what `sampled` measured and prints its line.
pub(crate) fn fill(record: &mut RunRecord, sampled: Sampled, progress: &str) {
    record.server = sampled.server;
    record.generator = sampled.generator;
    record.generator_cpu_percent = sampled.generator_cpu_percent;
    record.cpu = sampled.cpu;
    record.generator_bound = sampled.generator_bound;
    record.contended = sampled.contended;
    record.window_s = sampled.window_s;
    record.server_samples = sampled.server_samples;
    match sampled.outcome {
        Ok(result) => {
            record.result = Some(result);
            println!("{progress}: {}", summary(record));
        }
        Err(err) => {
            println!("{progress}: failed: {err:#}");
            record.error = Some(format!("{err:#}"));
        }
    }
    let _ = std::io::stdout().flush();
}

/// How a run's fresh state was made: copied, preloaded by the server (what it announced) or
/// before it, and how long the server took to start on it.
fn state_reset(fresh: &state::RunState, server: &ServerProcess, startup_s: f64) -> StateReset {
    let preloaded = server.preloaded();
    StateReset {
        pid: server.pid(),
        how: fresh.how.clone(),
        copy_s: fresh.copy_s,
        preload_s: (!preloaded.is_empty()).then(|| preloaded.iter().map(|p| p.seconds).sum()),
        preloaded: if preloaded.is_empty() {
            fresh.preloaded.clone()
        } else {
            preloaded
                .iter()
                .map(|p| (p.collection.clone(), p.documents + p.existing))
                .collect()
        },
        startup_s,
    }
}

/// Run number `index` as planned, nothing measured yet.
pub(crate) fn blank_record(
    index: usize,
    planned: &Planned,
    runtime: &str,
    scenario: &str,
) -> RunRecord {
    RunRecord {
        index,
        repeat: planned.repeat,
        runtime: runtime.to_owned(),
        scenario: scenario.to_owned(),
        users: planned.users,
        preload: planned.preload,
        reset: None,
        result: None,
        error: None,
        server: ProcUsage::default(),
        generator: ProcUsage::default(),
        generator_cpu_percent: 0.0,
        generator_bound: None,
        contended: None,
        cpu: RunCpu::default(),
        server_samples: ProcSeries {
            pid: 0,
            samples: Vec::new(),
        },
        window_s: (0.0, 0.0),
    }
}

/// One line on the terminal for a completed run.
fn summary(record: &RunRecord) -> String {
    let Some(result) = &record.result else {
        return "no result".to_owned();
    };
    let total = &result.total;
    // Contention first: a generator starved by other processes is their doing.
    let flag = match (&record.contended, &record.generator_bound) {
        (Some(_), _) => " — contended by other processes",
        (None, Some(_)) => " — generator-bound",
        (None, None) => "",
    };
    let per_request = record
        .server_cpu_us_per_request()
        .map_or("-".to_owned(), |us| format!("{us:.0}"));
    format!(
        "{:.0} hits/s, mean {:.2} ms, p99 {:.2} ms, {} errors, server CPU {:.0}% = {per_request} \
         µs/request (its CPUs {:.0}% busy), generator CPU {:.0}% (its CPUs {:.0}% busy){flag}",
        total.hits_per_s,
        total.latency.mean_ms,
        total.latency.p99_ms,
        total.errors.total(),
        record.server.cpu_percent,
        record.cpu.server_cpus.busy_percent,
        record.generator_cpu_percent,
        record.cpu.generator_cpus.busy_percent,
    )
}

/// The record of a server just started for `runtime`: its process, CPUs, start-up time and
/// memory once ready.
pub(crate) fn record_started(
    runtime: &str,
    round: u32,
    preload: u64,
    process: &ServerProcess,
    log: &std::path::Path,
) -> ServerRecord {
    let pid = process.pid();
    ServerRecord {
        runtime: runtime.to_owned(),
        round,
        preload,
        pid,
        urls: process.urls(),
        cpus_allowed: brigade_meter::procstat::allowed_cpus(pid),
        startup_s: process.started_in().as_secs_f64(),
        rss_idle_mib: brigade_meter::procstat::read(pid)
            .map(|r| r.rss_kib as f64 / 1024.0)
            .unwrap_or(0.0),
        rss_after_mib: None,
        rss_peak_mib: None,
        stop: None,
        log: log.display().to_string(),
        source: None,
    }
}

/// Reads a server's memory after its last run and stops it, recording how it ended.
pub(crate) fn record_stop(
    record: &mut ServerRecord,
    process: ServerProcess,
) -> &brigade_records::stop::StopOutcome {
    let pid = record.pid;
    record.rss_after_mib = brigade_meter::procstat::read(pid)
        .ok()
        .map(|r| r.rss_kib as f64 / 1024.0);
    record.rss_peak_mib = brigade_meter::procstat::peak_rss_kib(pid)
        .ok()
        .map(|kib| kib as f64 / 1024.0);
    record
        .stop
        .insert(process.stop(brigade_meter::servers::STOP_GRACE))
}
