//! `brigade study conformance`: does each runtime speak HTTP correctly, through Brigade and on its
//! own? Suites Brigade did not write where there is one (h2spec for HTTP/2, over h2c and over TLS,
//! [`h2spec`]); for HTTP/1.1 and HTTP/3, which have none here, suites written from their RFCs
//! ([`h1`], [`h3`]). Each runs against the application's first service on the memory store
//! (Brigade's server, as `compare` starts it) and against the same runtime's control server
//! (`brigade serve-control`: the runtime's own minimal server, no kit layer;
//! `brigade_runtimes::control`; for HTTP/3 on the hyper-based runtimes, the `h3` crate's own
//! serving loop, as they serve h3 through it), on two routes: one that reads the request body
//! and one that does not (a route that answers before the body is read races a malformed body, so
//! the route is named, and every suite runs [`ConformanceArgs::runs`] times). A case that fails
//! through Brigade and on the control is the runtime's; one that fails only through Brigade, in
//! every run, is Brigade's ([`classify`]).

mod classify;
pub(crate) mod h1;
mod h2spec;
mod h3;
mod report;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use brigade_meter::servers::{start_on_free_ports, Launch, Listening, ServerSpec};
use brigade_records::protocol::Protocol;
use clap::Args;

use classify::Tally;

/// Arguments of `brigade study conformance`.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Examples:\n  bash scripts/conformance-tools.sh   # installs h2spec\n  \
brigade study conformance --quick\n  brigade study conformance --runtimes hyper,actix --runs 5"
)]
pub struct ConformanceArgs {
    /// Runtimes, comma-separated [default: every runtime the binary has]
    #[arg(long, value_delimiter = ',')]
    pub(crate) runtimes: Vec<String>,
    /// Runs of each suite against each server and route [default: 3; 1 with --quick]
    #[arg(long)]
    pub(crate) runs: Option<u32>,
    /// Suites, comma-separated: http1, h2c, h2-tls, h3 [default: all four; h3 on the runtimes
    /// that offer it]
    #[arg(long, value_delimiter = ',', value_enum)]
    pub(crate) suites: Vec<Suite>,
    /// A CI-sized run: one run each, h2spec's connection, frame, stream-state and HTTP sections
    /// only, the whole HTTP/1.1 and HTTP/3 suites
    #[arg(long)]
    pub(crate) quick: bool,
    /// h2spec [default: $BRIGADE_TOOLS/bin/h2spec, else target/conformance-tools/bin/h2spec, else
    /// h2spec on the PATH]
    #[arg(long)]
    pub(crate) h2spec: Option<PathBuf>,
    /// Seconds h2spec waits for each answer (its -o)
    #[arg(long, default_value_t = 1)]
    pub(crate) h2spec_timeout: u32,
    /// Exit non-zero when a failure is classified as Brigade's and is not a deliberate house rule
    #[arg(long)]
    pub(crate) fail_on_brigade: bool,
    /// The server binary [default: this executable]
    #[arg(long)]
    pub(crate) binary: Option<PathBuf>,
    /// Where to write report.json, report.md, report.html and the server logs
    /// [default: results/study-conformance-<UTC timestamp>]
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
}

/// h2spec's sections the quick study runs: the preface, frame sizes, stream states, the error
/// handling sections and HTTP message exchanges.
const QUICK_H2SPEC: &[&str] = &[
    "http2/3.5",
    "http2/4.2",
    "http2/5.1",
    "http2/5.4",
    "http2/8.1",
];

/// The study's settings, defaults resolved.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) launch: Launch,
    pub(crate) runtimes: Vec<String>,
    pub(crate) suites: Vec<Suite>,
    /// The runtimes that offer HTTP/3.
    pub(crate) h3: Vec<String>,
    pub(crate) runs: u32,
    pub(crate) quick: bool,
    pub(crate) h2spec: PathBuf,
    pub(crate) h2spec_version: String,
    /// Why h2spec's suites were left out (h2spec not installed, only the default suites asked for).
    pub(crate) h2spec_missing: Option<String>,
    pub(crate) h2spec_timeout: u32,
    pub(crate) out_dir: PathBuf,
    pub(crate) command_line: String,
}

/// A suite of the study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub(crate) enum Suite {
    /// The HTTP/1.1 suite on plaintext.
    #[value(name = "http1")]
    Http1,
    /// h2spec over h2c (prior knowledge).
    H2c,
    /// h2spec over TLS (ALPN h2).
    #[value(name = "h2-tls")]
    H2Tls,
    /// The HTTP/3 suite, on the runtimes that offer h3.
    #[value(name = "h3")]
    H3,
}

impl Suite {
    pub(crate) const ALL: [Suite; 4] = [Suite::Http1, Suite::H2c, Suite::H2Tls, Suite::H3];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Suite::Http1 => "HTTP/1.1",
            Suite::H2c => "h2spec h2c",
            Suite::H2Tls => "h2spec h2-tls",
            Suite::H3 => "HTTP/3",
        }
    }

    /// Whether h2spec runs it.
    fn is_h2spec(self) -> bool {
        matches!(self, Suite::H2c | Suite::H2Tls)
    }

    /// The protocol Brigade's server is started with for it.
    fn protocol(self) -> Protocol {
        match self {
            Suite::Http1 => Protocol::H1,
            Suite::H2c => Protocol::H2c,
            Suite::H2Tls => Protocol::H2Tls,
            Suite::H3 => Protocol::H3,
        }
    }
}

/// Which server a case ran against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Server {
    /// The application through Brigade's kit and adapter.
    Brigade,
    /// The runtime's control server.
    Control,
}

/// Which route a case ran on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Route {
    /// One that reads the request body.
    Reads,
    /// One that answers without reading it.
    Skips,
}

impl Route {
    pub(crate) const ALL: [Route; 2] = [Route::Reads, Route::Skips];

    /// The path on `server`: Brigade's bench routes (`POST /bench/bytes` reads the body; `GET
    /// /bench/hello` answers without it), the control's `/echo` and any other path.
    pub(crate) fn path(self, server: Server) -> &'static str {
        match (self, server) {
            (Route::Reads, Server::Brigade) => "/bench/bytes",
            (Route::Skips, Server::Brigade) => "/bench/hello",
            (Route::Reads, Server::Control) => brigade_runtimes::control::ECHO_PATH,
            (Route::Skips, Server::Control) => "/hello",
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Route::Reads => "reads the body",
            Route::Skips => "body unread",
        }
    }
}

/// One case's outcome on one run against one server and route.
#[derive(Debug, Clone)]
pub(crate) struct CaseRun {
    pub(crate) runtime: String,
    pub(crate) suite: Suite,
    pub(crate) server: Server,
    pub(crate) route: Route,
    pub(crate) id: String,
    pub(crate) section: String,
    pub(crate) what: String,
    pub(crate) smuggling: bool,
    /// None: passed (or skipped by h2spec).
    pub(crate) failure: Option<String>,
    pub(crate) skipped: bool,
}

/// What a runtime's servers could not do (a server that would not start), per suite.
#[derive(Debug, Clone)]
pub(crate) struct NotRun {
    pub(crate) runtime: String,
    pub(crate) suite: Suite,
    pub(crate) server: Server,
    pub(crate) why: String,
}

impl ConformanceArgs {
    fn settings(&self) -> Result<Settings> {
        let (launch, info, picked) =
            Launch::resolve_runtimes(self.binary.as_deref(), None, &self.runtimes)?;
        let runtimes = if self.runtimes.is_empty() {
            info.runtime_names()
        } else {
            picked
        };
        let mut suites: Vec<Suite> = if self.suites.is_empty() {
            Suite::ALL.to_vec()
        } else {
            Suite::ALL
                .into_iter()
                .filter(|s| self.suites.contains(s))
                .collect()
        };
        // h2spec asked for (by a suite or its path) and missing is an error; missing when only the
        // default suites were asked for, h2c and h2-tls are left out and the report says why.
        let (h2spec, found) = match (&self.h2spec, default_h2spec()) {
            (Some(path), _) => (path.clone(), Ok(())),
            (None, Ok(path)) => (path, Ok(())),
            (None, Err(e)) => (PathBuf::from("h2spec"), Err(e)),
        };
        let (h2spec_version, h2spec_missing) = match found {
            Ok(()) => {
                let version = h2spec::version(&h2spec).with_context(|| {
                    format!(
                        "{} does not run (install it: bash scripts/conformance-tools.sh)",
                        h2spec.display()
                    )
                })?;
                (version, None)
            }
            Err(e) if self.suites.is_empty() => {
                suites.retain(|s| !s.is_h2spec());
                (String::new(), Some(format!("{e:#}")))
            }
            Err(e) => return Err(e),
        };
        let stamp = brigade_meter::clock::stamp();
        let h3 = runtimes
            .iter()
            .filter(|r| info.offers(r, Protocol::H3))
            .cloned()
            .collect();
        Ok(Settings {
            launch,
            runtimes,
            suites,
            h3,
            runs: self.runs.unwrap_or(if self.quick { 1 } else { 3 }).max(1),
            quick: self.quick,
            h2spec,
            h2spec_version,
            h2spec_missing,
            h2spec_timeout: self.h2spec_timeout.max(1),
            out_dir: self.out.clone().unwrap_or_else(|| {
                PathBuf::from("results").join(format!("study-conformance-{stamp}"))
            }),
            command_line: std::env::args().collect::<Vec<_>>().join(" "),
        })
    }
}

/// Where `scripts/conformance-tools.sh` puts h2spec, else the PATH's.
fn default_h2spec() -> Result<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(tools) = std::env::var_os("BRIGADE_TOOLS") {
        candidates.push(PathBuf::from(tools).join("bin/h2spec"));
    }
    candidates.push(PathBuf::from("target/conformance-tools/bin/h2spec"));
    if let Some(found) = candidates.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    let on_path = std::env::var_os("PATH").map(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("h2spec"))
            .find(|p| p.is_file())
    });
    on_path.flatten().with_context(|| {
        "h2spec not found: run `bash scripts/conformance-tools.sh` (it installs the pinned h2spec \
         into target/conformance-tools) or give --h2spec"
    })
}

/// Runs `brigade study conformance`.
pub(crate) fn run_conformance(args: &ConformanceArgs) -> Result<()> {
    let settings = args.settings()?;
    std::fs::create_dir_all(settings.out_dir.join("logs"))?;
    let started_at = brigade_meter::clock::now_rfc3339();
    let began = Instant::now();
    let mut runs = Vec::new();
    let mut not_run = Vec::new();
    for runtime in &settings.runtimes {
        eprintln!("conformance: {runtime}");
        study_runtime(&settings, runtime, &mut runs, &mut not_run);
    }
    let tally = Tally::new(&runs);
    let report = report::build(&settings, &tally, &not_run, started_at, began.elapsed());
    brigade_report::write_all(&report, &settings.out_dir)?;
    crate::show(&report, &settings.out_dir);
    let brigade = tally.brigades_unexcused();
    if args.fail_on_brigade && !brigade.is_empty() {
        bail!(
            "{} failure(s) classified as Brigade's: {}",
            brigade.len(),
            brigade.join("; ")
        );
    }
    Ok(())
}

/// Every suite against one runtime's servers, `settings.runs` times.
fn study_runtime(
    settings: &Settings,
    runtime: &str,
    runs: &mut Vec<CaseRun>,
    not_run: &mut Vec<NotRun>,
) {
    for &suite in &settings.suites {
        if suite == Suite::H3 && !settings.h3.iter().any(|r| r == runtime) {
            continue; // not applicable: the runtime offers no HTTP/3
        }
        let brigade = start_brigade(settings, runtime, suite);
        let control = start_control(settings, runtime, suite);
        let mut addrs = Vec::new();
        for (server, started) in [
            (Server::Brigade, brigade.as_ref().map(|s| s.0)),
            (Server::Control, control.as_ref().map(|c| c.addr)),
        ] {
            match started {
                Ok(addr) => addrs.push((server, addr)),
                Err(e) => not_run.push(NotRun {
                    runtime: runtime.to_owned(),
                    suite,
                    server,
                    why: format!("{e:#}"),
                }),
            }
        }
        for _ in 0..settings.runs {
            let (cases, failed) = run_suite(settings, runtime, suite, &addrs);
            runs.extend(cases);
            not_run.extend(failed);
        }
        if let Ok((_, process)) = brigade {
            process.stop(Duration::from_secs(5));
        }
        drop(control);
    }
}

/// One run of `suite` against every server and route at once: its cases, and what could not run.
fn run_suite(
    settings: &Settings,
    runtime: &str,
    suite: Suite,
    addrs: &[(Server, SocketAddr)],
) -> (Vec<CaseRun>, Vec<NotRun>) {
    std::thread::scope(|scope| {
        let handles: Vec<_> = addrs
            .iter()
            .flat_map(|&(server, addr)| Route::ALL.map(|route| (server, addr, route)))
            .map(|(server, addr, route)| {
                let handle =
                    scope.spawn(move || run_one(settings, suite, addr, route, route.path(server)));
                (server, route, handle)
            })
            .collect();
        let (mut out, mut failed) = (Vec::new(), Vec::new());
        for (server, route, handle) in handles {
            let cases = handle
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("the suite's thread panicked")));
            match cases {
                Ok(cases) => out.extend(cases.into_iter().map(|c| CaseRun {
                    runtime: runtime.to_owned(),
                    suite,
                    server,
                    route,
                    ..c
                })),
                Err(e) => failed.push(NotRun {
                    runtime: runtime.to_owned(),
                    suite,
                    server,
                    why: format!("a run on the route ({}): {e:#}", route.name()),
                }),
            }
        }
        (out, failed)
    })
}

/// One run of `suite` against one server's route: its cases, runtime and server left blank.
fn run_one(
    settings: &Settings,
    suite: Suite,
    addr: SocketAddr,
    route: Route,
    path: &str,
) -> Result<Vec<CaseRun>> {
    let blank = |id: String, section: String, what: String, smuggling, failure, skipped| CaseRun {
        runtime: String::new(),
        suite,
        server: Server::Brigade,
        route: Route::Reads,
        id,
        section,
        what,
        smuggling,
        failure,
        skipped,
    };
    if suite == Suite::H3 {
        let method = if route == Route::Reads { "POST" } else { "GET" };
        return Ok(h3::run(addr, h3::Route { path, method })?
            .into_iter()
            .map(|o| {
                let c = o.case;
                blank(
                    c.id.to_owned(),
                    c.section.to_owned(),
                    c.what.to_owned(),
                    false,
                    o.failure,
                    false,
                )
            })
            .collect());
    }
    if suite == Suite::Http1 {
        return Ok(h1::run(addr, path, route == Route::Reads)
            .into_iter()
            .map(|o| {
                blank(
                    o.case.id.to_owned(),
                    o.case.section.to_owned(),
                    o.case.what.to_owned(),
                    o.case.smuggling,
                    o.failure,
                    false,
                )
            })
            .collect());
    }
    let only = if settings.quick { QUICK_H2SPEC } else { &[] };
    let cases = h2spec::run(
        &settings.h2spec,
        addr,
        path,
        suite == Suite::H2Tls,
        settings.h2spec_timeout,
        only,
    )?;
    Ok(cases
        .into_iter()
        .map(|c| blank(c.id, c.section, c.what, false, c.failure, c.skipped))
        .collect())
}

/// The application's first service on the memory store through Brigade, over `suite`'s protocol: its address and process.
fn start_brigade(
    settings: &Settings,
    runtime: &str,
    suite: Suite,
) -> Result<(SocketAddr, brigade_meter::servers::process::ServerProcess)> {
    let tag = suite.protocol().to_string();
    let spec = ServerSpec {
        launch: settings.launch.clone(),
        runtime: runtime.to_owned(),
        store: "memory".to_owned(),
        mongodb_uri: None,
        workers: 1,
        port: 0,
        data_dir: std::env::temp_dir().join(format!("brigade-conformance-{}", std::process::id())),
        preload: 0,
        database_prefix: None,
        services: None,
        log_path: settings
            .out_dir
            .join("logs")
            .join(format!("{runtime}-{tag}.log")),
        cpus: None,
        handicap_us: 0.0,
        protocol: suite.protocol(),
    };
    let process = start_on_free_ports(&spec, &[], Duration::from_secs(60))?;
    // Every service carries the kit's bench routes: the first announced is as good as any.
    let url = process
        .announced()
        .first_url()
        .context("the server announced no service")?
        .to_owned();
    Ok((address_of(&url)?, process))
}

/// A control server's process, stopped when dropped.
struct ControlServer {
    addr: SocketAddr,
    child: Child,
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `runtime`'s control server (`brigade serve-control`) for `suite`: plaintext (HTTP/1.1 and
/// h2c), TLS, or TLS with HTTP/3 beside it on the same port number.
fn start_control(settings: &Settings, runtime: &str, suite: Suite) -> Result<ControlServer> {
    let binary = settings.launch.binary();
    let (tls, h3) = (
        matches!(suite, Suite::H2Tls | Suite::H3),
        suite == Suite::H3,
    );
    let log = settings.out_dir.join("logs").join(format!(
        "{runtime}-control{}.log",
        if h3 {
            "-h3"
        } else if tls {
            "-tls"
        } else {
            ""
        }
    ));
    let mut command = Command::new(binary);
    command
        .args([
            "serve-control",
            "--runtime",
            runtime,
            "--listen",
            "127.0.0.1:0",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(std::fs::File::create(&log)?));
    if tls {
        command.arg("--tls-self-signed");
    }
    if h3 {
        command.arg("--h3");
    }
    let mut child = command
        .spawn()
        .with_context(|| format!("could not run {}", binary.display()))?;
    let stdout = child.stdout.take().context("no stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let mut server = ControlServer {
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        child,
    };
    let line = rx.recv_timeout(Duration::from_secs(30)).map_err(|_| {
        let words = std::fs::read_to_string(&log).unwrap_or_default();
        anyhow::anyhow!(
            "{runtime}'s control server announced nothing: {}",
            words.trim()
        )
    })?;
    let listening =
        Listening::parse(&line).with_context(|| format!("not an announcement: {line}"))?;
    server.addr = address_of(&listening.url)?;
    Ok(server)
}

/// The socket address of a base URL (`http://127.0.0.1:8080`).
fn address_of(url: &str) -> Result<SocketAddr> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.trim_end_matches('/')
        .parse()
        .with_context(|| format!("no address in {url}"))
}
