//! `brigade study faults`: what production does to a service, on every runtime × store, with the
//! servers started as `compare` starts them. Each fault runs under load; the generator's
//! per-second series (hits, errors, p50/p99) gives "errors during" and "time to recover", drawn over
//! time in the report:
//!
//! - `abuse`: slowloris connections, idle keep-alive connections, bodies that never finish and a
//!   connection flood past the limit, while a normal load whose connections opened first runs: every
//!   abusive connection closed by the server's limits, the normal load without errors, its p99
//!   against its unloaded p99;
//! - `sigterm`: SIGTERM in the middle of a load: in-flight requests finish, exit 0;
//! - `crash`: SIGKILL in the middle of a write-heavy run, then a restart on the same data: every
//!   write answered 2xx (logged with its body) is there, intact (needs the application's
//!   [`WriteProbe`]);
//! - `outage`: the database stopped (`--db-stop-command`) for a while under load and started again
//!   (`--db-start-command`), on the mongo store: fast 503s, then no errors without a restart;
//! - `soak`: a long run of a mix that creates and deletes (`--soak`), twice: zero errors, and the
//!   server's RSS after the second soak against after the first.
//!
//! Parts: `cli` (arguments, settings), `writes` (the write log of `crash`), `report` (the tables
//! and charts). The short forms of these checks are in the test suite (`docs/reliability.md`).

pub(crate) mod cli;
mod report;
mod writes;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use brigade_load::abuse::{self, Abuse, AbuseConfig, AbuseOutcome};
use brigade_load::engine::{self, LoadConfig};
use brigade_load::scenario::Scenario;
use brigade_records::result::{LoadResult, Second};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use brigade_meter::servers::{start_on_free_ports, Launch, ServerProcess, ServerSpec};

use brigade_records::stop::StopOutcome;

/// The faults the study can inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Fault {
    /// Slow and abusive clients under a normal load.
    Abuse,
    /// SIGTERM under load.
    Sigterm,
    /// SIGKILL under writes, then a restart on the same data.
    Crash,
    /// The database stopped and started again under load (mongo).
    Outage,
    /// A long create-and-delete run, twice.
    Soak,
}

impl Fault {
    /// Its name in reports.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Fault::Abuse => "abusive clients",
            Fault::Sigterm => "SIGTERM under load",
            Fault::Crash => "SIGKILL under writes",
            Fault::Outage => "database outage",
            Fault::Soak => "soak",
        }
    }
}

/// A create route and its read route, so `crash` can log acknowledged writes and look for them
/// after a restart; registered by the application.
#[derive(Debug, Clone, Copy)]
pub struct WriteProbe {
    /// The service it is on.
    pub service: &'static str,
    /// The create route's path (`POST`).
    pub create: &'static str,
    /// The body sent, JSON; `{n}` is replaced by a number unique to the write.
    pub body: &'static str,
    /// A JSON pointer to the created resource's id in the answer (`/id`).
    pub id_pointer: &'static str,
    /// The read route's path, `{id}` for the id (`GET`).
    pub read: &'static str,
}

/// Everything one study run needs, resolved from the command line.
#[derive(Debug, Clone)]
pub(crate) struct FaultsSettings {
    /// The server binary and how to start it.
    pub launch: Launch,
    /// Runtimes, in order.
    pub runtimes: Vec<String>,
    /// Stores, in order.
    pub stores: Vec<String>,
    /// The MongoDB URI for `mongo`.
    pub mongodb_uri: Option<String>,
    /// Faults, in order.
    pub faults: Vec<Fault>,
    /// The scenario of the load under which faults are injected.
    pub scenario: Scenario,
    /// The scenario of the soak (creates and deletes).
    pub soak_scenario: Scenario,
    /// Closed-loop users of the load.
    pub users: u32,
    /// Length of each loaded run around a fault.
    pub duration: Duration,
    /// Length of each soak.
    pub soak: Duration,
    /// `abuse`: slowloris connections.
    pub slowloris: usize,
    /// `abuse`: idle keep-alive connections.
    pub idle: usize,
    /// `abuse`: unfinished bodies.
    pub unfinished: usize,
    /// `abuse`: connections past the limit (the server's `--max-connections` less those open).
    pub flood: usize,
    /// `outage`: how long the database stays down.
    pub outage: Duration,
    /// `outage`: shell commands that stop and start the database.
    pub db_commands: Option<(String, String)>,
    /// `crash`: the application's write probe.
    pub probe: Option<WriteProbe>,
    /// Worker threads per server.
    pub workers: u32,
    /// Where the reports and logs go.
    pub out_dir: PathBuf,
    /// A CI-sized run.
    pub quick: bool,
    /// The command line as given.
    pub command_line: String,
}

/// One fault on one runtime and store: the table's row and the series to draw.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct FaultResult {
    /// The runtime.
    pub runtime: String,
    /// The store.
    pub store: String,
    /// The fault (its report name).
    pub fault: String,
    /// Failed requests while the fault lasted (and after, until recovered).
    pub errors_during: Option<f64>,
    /// Seconds from the fault's end to the last second with an error (0: none after it).
    pub recover_s: Option<f64>,
    /// Requests that were in flight and got no answer (reset, timed out, broken).
    pub requests_lost: Option<f64>,
    /// Writes answered 2xx that were missing, doubled or changed afterwards (must be 0).
    pub writes_lost: Option<f64>,
    /// Restarts the service needed to answer again (must be 0; a crash restarts once by design).
    pub restarts_needed: Option<f64>,
    /// The normal load's p99 during the fault, ms (abuse).
    pub p99_ms: Option<f64>,
    /// The same load's p99 with no fault, ms (abuse).
    pub unloaded_p99_ms: Option<f64>,
    /// Abusive connections not closed by the server within their watch (abuse; must be 0).
    pub abusive_left_open: Option<f64>,
    /// Server RSS after the first and second soak, MiB (soak).
    pub rss_mib: Option<(f64, f64)>,
    /// The server limits the server announced.
    pub server_limits: Option<String>,
    /// What happened, in words (exit codes, outcomes).
    pub notes: Vec<String>,
    /// The load's series over time, seconds from its start.
    pub seconds: Vec<Second>,
    /// When the fault began and ended, seconds from the load's start.
    pub window: Option<(f64, f64)>,
}

/// Runs the study and writes its reports.
pub(crate) fn run(settings: &FaultsSettings) -> Result<brigade_report::study::StudyReport> {
    let started_at = brigade_meter::clock::now_rfc3339();
    let began = Instant::now();
    std::fs::create_dir_all(settings.out_dir.join("logs"))?;
    abuse::raise_open_file_limit(
        (settings.slowloris + settings.idle + settings.unfinished + settings.flood) as u64 + 4096,
    );
    let mut results = Vec::new();
    for runtime in &settings.runtimes {
        for store in &settings.stores {
            for &fault in &settings.faults {
                println!("faults: {runtime} on {store}: {}", fault.as_str());
                let r = match one(settings, runtime, store, fault) {
                    Ok(r) => r,
                    Err(e) => FaultResult {
                        runtime: runtime.clone(),
                        store: store.clone(),
                        fault: fault.as_str().to_owned(),
                        notes: vec![format!("not run: {e:#}")],
                        ..FaultResult::default()
                    },
                };
                for note in &r.notes {
                    println!("  {note}");
                }
                results.push(r);
            }
        }
    }
    let report = report::build(settings, &results, started_at, began.elapsed());
    brigade_report::write_all(&report, &settings.out_dir)?;
    Ok(report)
}

/// A server of the study: its spec (kept to restart it on the same data) and the process.
struct Server {
    spec: ServerSpec,
    process: ServerProcess,
}

fn start(settings: &FaultsSettings, runtime: &str, store: &str, tag: &str) -> Result<Server> {
    let stamp = brigade_meter::clock::stamp().replace('-', "_");
    let data_dir = std::env::temp_dir().join(format!("brigade-faults-{stamp}-{tag}"));
    let spec = ServerSpec {
        launch: settings.launch.clone(),
        runtime: runtime.to_owned(),
        store: store.to_owned(),
        mongodb_uri: (store == "mongo")
            .then(|| settings.mongodb_uri.clone())
            .flatten(),
        workers: settings.workers,
        port: 0,
        data_dir,
        preload: 0,
        database_prefix: (store == "mongo")
            .then(|| format!("f{}_{}_", &stamp[stamp.len() - 6..], std::process::id())),
        services: None,
        log_path: settings
            .out_dir
            .join("logs")
            .join(format!("{runtime}-{store}-{tag}.log")),
        cpus: None,
        handicap_us: 0.0,
        protocol: brigade_records::protocol::Protocol::H1,
    };
    let process = start_on_free_ports(&spec, &[], Duration::from_secs(60))?;
    Ok(Server { spec, process })
}

impl Server {
    fn targets(&self) -> BTreeMap<String, String> {
        let mut targets = self.process.urls();
        if let Some(first) = self.process.announced().names().first() {
            targets.insert("*".to_owned(), self.process.urls()[first].clone());
        }
        targets
    }

    fn addr(&self, service: Option<&str>) -> Result<std::net::SocketAddr> {
        let urls = self.process.urls();
        let url = match service {
            Some(s) => urls.get(s),
            None => urls.values().next(),
        }
        .context("the server announced no service")?;
        Ok(url.trim_start_matches("http://").parse()?)
    }

    fn signal(&self, signal: Signal) -> Result<()> {
        kill(Pid::from_raw(self.process.pid() as i32), signal)
            .with_context(|| format!("Failed to send {signal}"))
    }

    /// Starts a fresh process on the same data (same folder, same database names).
    fn restart(&mut self) -> Result<()> {
        let process = start_on_free_ports(&self.spec, &[], Duration::from_secs(60))?;
        let old = std::mem::replace(&mut self.process, process);
        drop(old); // already dead; reaped here
        Ok(())
    }
}

fn load_config(
    settings: &FaultsSettings,
    targets: BTreeMap<String, String>,
    d: Duration,
) -> LoadConfig {
    LoadConfig {
        targets,
        users: Some(settings.users),
        duration: Some(d),
        warmup: Duration::ZERO,
        threads: 1,
        timeout: Duration::from_secs(5),
        ..LoadConfig::default()
    }
}

/// Runs `scenario` on a thread while `inject` runs on this one; `inject` gets the instant the
/// load's measured window opened (second 0 of its series), once its setup steps are done.
fn under_load<T>(
    config: LoadConfig,
    scenario: &Scenario,
    inject: impl FnOnce(Instant) -> Result<T>,
) -> Result<(LoadResult, T)> {
    let scenario = scenario.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let load = std::thread::spawn(move || engine::run_notifying(&config, &scenario, Some(tx)));
    let injected = match rx.recv() {
        Ok(start) => inject(start),
        // The load ended before measuring (its setup failed): its error says why.
        Err(_) => Err(anyhow::anyhow!("the load did not start")),
    };
    let result = load
        .join()
        .map_err(|_| anyhow::anyhow!("the load thread panicked"))??;
    Ok((result, injected?))
}

fn sleep_until(t: Instant) {
    std::thread::sleep(t.saturating_duration_since(Instant::now()));
}

/// Errors during and after `from_s`, and seconds from `to_s` to the end of the last second with an
/// error (0 when none came after the fault).
fn errors_and_recovery(seconds: &[Second], from_s: f64, to_s: f64) -> (f64, f64) {
    let during: u64 = seconds
        .iter()
        .filter(|s| f64::from(s.second) + 1.0 > from_s)
        .map(|s| s.errors)
        .sum();
    let last_error = seconds
        .iter()
        .filter(|s| s.errors > 0)
        .map(|s| f64::from(s.second) + 1.0)
        .fold(0.0, f64::max);
    (during as f64, (last_error - to_s).max(0.0))
}

fn lost(result: &LoadResult) -> f64 {
    let e = &result.total.errors;
    (e.reset + e.timeout + e.other) as f64
}

fn one(settings: &FaultsSettings, runtime: &str, store: &str, fault: Fault) -> Result<FaultResult> {
    let mut r = FaultResult {
        runtime: runtime.to_owned(),
        store: store.to_owned(),
        fault: fault.as_str().to_owned(),
        ..FaultResult::default()
    };
    let tag = format!("{fault:?}").to_lowercase();
    let mut server = start(settings, runtime, store, &tag)?;
    r.server_limits = server.process.limits_reported().map(str::to_owned);
    let outcome = match fault {
        Fault::Abuse => abuse_fault(settings, &server, &mut r),
        Fault::Sigterm => return sigterm_fault(settings, server, r),
        Fault::Crash => crash_fault(settings, &mut server, &mut r),
        Fault::Outage => outage_fault(settings, &server, &mut r),
        Fault::Soak => soak_fault(settings, &server, &mut r),
    };
    let stop = server.process.stop(Duration::from_secs(15));
    if !matches!(stop, StopOutcome::Graceful { code: Some(0) }) {
        r.notes.push(format!("stop: {stop}"));
    }
    let _ = std::fs::remove_dir_all(&server.spec.data_dir);
    outcome.map(|()| r)
}

fn abuse_fault(settings: &FaultsSettings, server: &Server, r: &mut FaultResult) -> Result<()> {
    let hello = brigade_load::Registry::new().load("hello")?;
    let targets = server.targets();
    // The normal load alone first: its p99 with nothing else going on.
    let quiet = engine::run(
        &load_config(settings, targets.clone(), settings.duration),
        &hello,
    )?;
    r.unloaded_p99_ms = Some(quiet.total.latency.p99_ms);
    let addr = server.addr(None)?;
    let watch = Duration::from_secs(20);
    let client = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let config = load_config(settings, targets, settings.duration);
    let (load, outcomes) = under_load(config, &hello, |start| {
        // The normal load's connections are open first.
        sleep_until(start + Duration::from_secs(1));
        let from = start.elapsed().as_secs_f64();
        let batches: Vec<AbuseConfig> = [
            (Abuse::Slowloris, settings.slowloris),
            (Abuse::Idle, settings.idle),
            (Abuse::UnfinishedBody, settings.unfinished),
            (Abuse::Flood, settings.flood),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(abuse, n)| {
            let mut c = AbuseConfig::new(abuse, n, addr);
            c.watch = watch;
            if abuse == Abuse::UnfinishedBody {
                c.path = "/bench/bytes".to_owned(); // a route that reads a body, on every service
            }
            c
        })
        .collect();
        let outcomes: Vec<(Abuse, AbuseOutcome)> = client.block_on(async {
            let runs = batches
                .iter()
                .map(|b| async move { (b.abuse, abuse::run(b).await) });
            futures::future::join_all(runs).await
        });
        Ok((outcomes, from, start.elapsed().as_secs_f64()))
    })?;
    let (outcomes, from, to) = outcomes;
    let (errors, recover) = errors_and_recovery(&load.seconds, from, to);
    r.errors_during = Some(errors);
    r.recover_s = Some(recover);
    r.requests_lost = Some(lost(&load));
    r.restarts_needed = Some(0.0);
    r.p99_ms = Some(load.total.latency.p99_ms);
    let mut open = 0;
    for (abuse, o) in &outcomes {
        open += o.still_open;
        r.notes.push(format!(
            "{}: {} connections, {} refused, {} closed by the server (median {:.1} s, max {:.1} s), \
             {} still open after {} s, answers {:?}",
            abuse.as_str(),
            o.connections,
            o.refused,
            o.closed,
            o.close_p50_s,
            o.close_max_s,
            o.still_open,
            watch.as_secs(),
            o.answered
        ));
    }
    r.abusive_left_open = Some(open as f64);
    r.seconds = load.seconds;
    r.window = Some((from, to));
    Ok(())
}

fn sigterm_fault(
    settings: &FaultsSettings,
    server: Server,
    mut r: FaultResult,
) -> Result<FaultResult> {
    let config = load_config(settings, server.targets(), settings.duration);
    let at = settings.duration / 2;
    let Server { spec, process } = server;
    let (load, stop) = under_load(config, &settings.scenario, move |start| {
        sleep_until(start + at);
        let from = start.elapsed().as_secs_f64();
        let stop = process.stop(Duration::from_secs(15));
        Ok((stop, from))
    })?;
    let (stop, from) = stop;
    r.notes.push(format!("stop: {stop}"));
    // After the stop every request fails to connect, as it should: what counts is what was lost
    // in flight (reset, broken, timed out), not refused connections.
    r.requests_lost = Some(lost(&load));
    r.errors_during = Some(load.total.errors.total() as f64);
    r.restarts_needed = Some(0.0);
    r.writes_lost = None;
    if !matches!(stop, StopOutcome::Graceful { code: Some(0) }) {
        r.notes.push("did not exit 0 on SIGTERM".to_owned());
    }
    r.seconds = load.seconds;
    r.window = Some((from, from));
    let _ = std::fs::remove_dir_all(&spec.data_dir);
    Ok(r)
}

fn crash_fault(settings: &FaultsSettings, server: &mut Server, r: &mut FaultResult) -> Result<()> {
    let Some(probe) = settings.probe else {
        bail!(
            "this binary registers no write probe (a create and a read route) to log writes with"
        );
    };
    let base = server
        .process
        .urls()
        .get(probe.service)
        .cloned()
        .with_context(|| format!("the server announced no {} service", probe.service))?;
    let log = writes::WriteLog::default();
    let at = settings.duration / 2;
    let started = Instant::now();
    let writers = writes::write_until(&base, probe, settings.users, settings.duration, log.clone());
    sleep_until(started + at);
    server.signal(Signal::SIGKILL)?;
    let killed_at = started.elapsed().as_secs_f64();
    let written = writers
        .join()
        .map_err(|_| anyhow::anyhow!("a writer panicked"))?;
    server.restart()?;
    let base = server.process.urls()[probe.service].clone();
    let check = writes::check(&base, probe, &log)?;
    r.writes_lost = Some((check.missing + check.changed) as f64);
    // Writers keep trying while the server is down, so failures count attempts, not lost work.
    r.errors_during = Some(written.failed as f64);
    r.restarts_needed = Some(0.0);
    r.notes.push(format!(
        "{} writes acknowledged before and around the kill at {killed_at:.1} s ({} logged), {} \
         failed; after the restart {} found intact, {} missing, {} changed",
        written.acknowledged,
        check.checked,
        written.failed,
        check.intact,
        check.missing,
        check.changed
    ));
    Ok(())
}

fn outage_fault(settings: &FaultsSettings, server: &Server, r: &mut FaultResult) -> Result<()> {
    if server.spec.store != "mongo" {
        bail!("the database outage applies to the mongo store");
    }
    let Some((stop, start_cmd)) = &settings.db_commands else {
        bail!("needs --db-stop-command and --db-start-command");
    };
    let config = load_config(settings, server.targets(), settings.duration);
    let from_s = (settings.duration.as_secs_f64() - settings.outage.as_secs_f64()).max(0.0) / 3.0;
    let (load, window) = under_load(config, &settings.scenario, |start| {
        sleep_until(start + Duration::from_secs_f64(from_s));
        shell(stop)?;
        let from = start.elapsed().as_secs_f64();
        std::thread::sleep(settings.outage);
        shell(start_cmd)?;
        Ok((from, start.elapsed().as_secs_f64()))
    })?;
    let (from, to) = window;
    let (errors, recover) = errors_and_recovery(&load.seconds, from, to);
    r.errors_during = Some(errors);
    r.recover_s = Some(recover);
    r.requests_lost = Some(lost(&load));
    r.restarts_needed = Some(0.0);
    r.notes.push(format!(
        "errors by kind: {:?}; 5xx are the fast 503s expected while the database is down",
        load.total.errors
    ));
    r.seconds = load.seconds;
    r.window = Some((from, to));
    Ok(())
}

fn shell(command: &str) -> Result<()> {
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdout(std::process::Stdio::null())
        .status()
        .with_context(|| format!("Failed to run {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed: {status}");
    }
    Ok(())
}

fn soak_fault(settings: &FaultsSettings, server: &Server, r: &mut FaultResult) -> Result<()> {
    let mut rss = Vec::new();
    let mut all = Vec::new();
    for _ in 0..2 {
        let config = load_config(settings, server.targets(), settings.soak);
        let load = engine::run(&config, &settings.soak_scenario)?;
        rss.push(brigade_meter::procstat::read(server.process.pid())?.rss_kib as f64 / 1024.0);
        all.push(load);
    }
    let errors: u64 = all.iter().map(|l| l.total.errors.total()).sum();
    let requests: u64 = all.iter().map(|l| l.total.requests).sum();
    r.errors_during = Some(errors as f64);
    r.requests_lost = Some(all.iter().map(lost).sum());
    r.restarts_needed = Some(0.0);
    r.rss_mib = Some((rss[0], rss[1]));
    r.notes.push(format!(
        "{requests} requests in two soaks of {} s; RSS {:.1} MiB after the first, {:.1} MiB after \
         the second ({:.2}×; target ≤ 1.1×)",
        settings.soak.as_secs(),
        rss[0],
        rss[1],
        rss[1] / rss[0].max(f64::MIN_POSITIVE)
    ));
    let merged = brigade_records::result::merge(&all)?;
    r.seconds = merged.seconds;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(second: u32, errors: u64) -> Second {
        Second {
            second,
            requests: 10,
            errors,
            ..Second::default()
        }
    }

    #[test]
    fn recovery_is_read_from_the_last_second_with_an_error() {
        let s = [
            second(0, 0),
            second(1, 3),
            second(2, 5),
            second(3, 1),
            second(4, 0),
        ];
        // Fault from 1.0 s to 2.5 s: errors in seconds 1..=3, the last ending at 4.0 s.
        assert_eq!(errors_and_recovery(&s, 1.0, 2.5), (9.0, 1.5));
        let clean = [second(0, 0), second(1, 0)];
        assert_eq!(errors_and_recovery(&clean, 0.5, 1.0), (0.0, 0.0));
    }
}
