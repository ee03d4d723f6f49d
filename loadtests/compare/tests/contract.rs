//! `compare` on a server binary that is not Brigade's: this test binary is also the server. Run
//! with `serve ...` or `runtimes --json`, it keeps the contract of `brigade_meter::servers` by
//! hand (the standard serve flags, a JSON announcement per service, `/ready`, `runtimes --json`
//! listing two runtimes and two services, `links` and `tags`, exit 0 on SIGTERM) with a few lines
//! of hyper; run otherwise, it runs the tests below against itself. No restaurant, no kit.
//!
//! A custom harness (`harness = false`): the tests run one after the other, each named on its
//! line; arguments that are not a subcommand filter them by name, as libtest's do.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use brigade_compare::cli::CompareArgs;
use brigade_load::Registry;
use brigade_meter::servers::ServerInfo;
use brigade_report::Report;
use clap::Parser;

/// Set in the tests' own environment: a child started as the server that does not recognise its
/// command line must fail, not run the tests again.
const IN_TESTS: &str = "BRIGADE_CONTRACT_TESTS";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("serve") => fake::serve(&args[2..]),
        Some("runtimes") => fake::runtimes(),
        Some("--version") => println!("fake-server 1.0"),
        _ if std::env::var_os(IN_TESTS).is_some() => {
            eprintln!("fake server: unknown command line {args:?}");
            std::process::exit(2);
        }
        _ => {
            std::env::set_var(IN_TESTS, "1");
            harness(&args[1..]);
        }
    }
}

/// The tests, by name.
const TESTS: &[(&str, fn())] = &[
    (
        "the_binary_is_asked_for_its_runtimes_and_services_as_json",
        the_binary_is_asked_for_its_runtimes_and_services_as_json,
    ),
    (
        "compare_runs_every_listed_runtime_on_the_services_the_server_announces",
        compare_runs_every_listed_runtime_on_the_services_the_server_announces,
    ),
    (
        "a_scenario_for_a_service_not_listed_is_refused_before_any_server_starts",
        a_scenario_for_a_service_not_listed_is_refused_before_any_server_starts,
    ),
    (
        "a_server_announcing_another_runtime_than_asked_is_refused",
        a_server_announcing_another_runtime_than_asked_is_refused,
    ),
];

/// Runs the tests whose names contain one of `filters` (all without filters); exits 1 on a failure.
fn harness(filters: &[String]) {
    let filters: Vec<&String> = filters.iter().filter(|f| !f.starts_with('-')).collect();
    let mut failed = Vec::new();
    let chosen: Vec<_> = TESTS
        .iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())))
        .collect();
    println!("\nrunning {} tests", chosen.len());
    for (name, test) in chosen {
        let outcome = std::panic::catch_unwind(test);
        println!(
            "test {name} ... {}",
            if outcome.is_ok() { "ok" } else { "FAILED" }
        );
        if outcome.is_err() {
            failed.push(*name);
        }
    }
    println!(
        "\ntest result: {}. {} failed",
        if failed.is_empty() { "ok" } else { "FAILED" },
        failed.len()
    );
    if !failed.is_empty() {
        std::process::exit(1);
    }
}

/// This executable: the server binary under test.
fn me() -> PathBuf {
    std::env::current_exe().unwrap()
}

/// A scenario on the fake's `links` service: fixtures captured, then reads and writes.
const LINKS: &str = r#"
name = "links"
service = "links"

[[setup]]
method = "POST"
path = "/links"
body = '{"url": "https://example.com/{{seq}}"}'
times = 3
expect = [201]
capture = { links = "/id" }

[[request]]
name = "GET /links/{id}"
weight = 3
path = "/links/{{pick links}}"

[[request]]
name = "POST /links"
method = "POST"
path = "/links"
body = '{"url": "https://example.com/{{random_string 6}}"}'
expect = [201]
"#;

/// `brigade compare ARGS` as a library call, with only the engine's registry.
fn compare(args: &[&str]) -> anyhow::Result<Report> {
    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        compare: CompareArgs,
    }
    let cli = Cli::try_parse_from(std::iter::once("compare").chain(args.iter().copied()))?;
    let settings = cli.compare.settings(&Registry::new())?;
    brigade_compare::run(&settings)
}

fn scenario_file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn the_binary_is_asked_for_its_runtimes_and_services_as_json() {
    let info = ServerInfo::ask(&me()).unwrap();
    assert_eq!(info.runtime_names(), ["quick", "steady"]);
    assert_eq!(info.services, ["links", "tags"]);
    assert_eq!(info.runtimes[1].describe(), "steady 2.0 — one thread");
}

fn compare_runs_every_listed_runtime_on_the_services_the_server_announces() {
    let dir = tempfile::tempdir().unwrap();
    let links = scenario_file(dir.path(), "links.toml", LINKS);
    let out = dir.path().join("out");
    let exe = me().display().to_string();
    let cpus = brigade_meter::pin::available_cpus();
    let report = compare(&[
        "--binary",
        &exe,
        "--scenarios",
        &format!("{links},hello"),
        "--store",
        "memory",
        "--users",
        "2",
        "--preload",
        "0,7",
        "--repeat",
        "1",
        "--duration",
        "400ms",
        "--warmup",
        "100ms",
        // Side by side too, kept short: the contract is all a server needs for that as well.
        "--windows",
        "3",
        "--count-seconds",
        "0",
        "--budget",
        "0s",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ])
    .unwrap();
    // Every cell (2 scenarios × 2 preloads) side by side at two levels, both runtimes in each.
    assert_eq!(
        report.side_by_side.len(),
        2 * 2 * 2,
        "{:?}",
        report.side_by_side
    );
    assert!(report.side_by_side.iter().all(|c| c.runtimes.len() == 2));
    // The generator's pinning ended with the comparison.
    assert_eq!(brigade_meter::pin::available_cpus(), cpus);
    // Runtimes and services come from the binary, not from a list in compare.
    assert_eq!(report.settings.runtimes, ["quick", "steady"]);
    assert_eq!(report.settings.services, ["links", "tags"]);
    assert_eq!(report.runs.len(), 2 * 2 * 2);
    for run in &report.runs {
        let result = run
            .result
            .as_ref()
            .unwrap_or_else(|| panic!("{} {}: {:?}", run.runtime, run.scenario, run.error));
        assert!(result.total.requests > 0);
        assert_eq!(result.total.errors.total(), 0, "{:?}", result.total.errors);
        // The preload reached the server, which said what it filled.
        let reset = run.reset.as_ref().unwrap();
        let expected = if run.preload == 7 {
            BTreeMap::from([("links".to_owned(), 7), ("tags".to_owned(), 7)])
        } else {
            BTreeMap::new()
        };
        assert_eq!(reset.preloaded, expected, "{reset:?}");
    }
    // `hello` names no service: it went to the first one announced.
    for hello in report.runs.iter().filter(|r| r.scenario == "hello") {
        let server = report
            .servers
            .iter()
            .find(|s| s.round as usize == hello.index)
            .unwrap();
        let targets = &hello.result.as_ref().unwrap().settings.targets;
        assert_eq!(targets, &[format!("default={}", server.urls["links"])]);
    }
    for server in &report.servers {
        assert_eq!(
            server.urls.keys().collect::<Vec<_>>(),
            ["links", "tags"],
            "{server:?}"
        );
        // Consecutive ports from the one compare chose.
        let port = |s: &str| s.rsplit(':').next().unwrap().parse::<u16>().unwrap();
        assert_eq!(port(&server.urls["tags"]), port(&server.urls["links"]) + 1);
        assert_eq!(
            server.stop.as_ref().unwrap().to_string(),
            "stopped on SIGTERM, exit 0"
        );
    }
    assert_eq!(report.threads.workers_reported.len(), 2);
    assert_eq!(report.versions.runtimes["quick"], "quick 1.0 — one thread");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("- Server: services links, tags (as the server announced them)"));
}

fn a_scenario_for_a_service_not_listed_is_refused_before_any_server_starts() {
    let dir = tempfile::tempdir().unwrap();
    let users = scenario_file(
        dir.path(),
        "users.toml",
        "name = \"users\"\nservice = \"users\"\n[[request]]\npath = \"/users\"\n",
    );
    let out = dir.path().join("out");
    let exe = me().display().to_string();
    let err = compare(&[
        "--binary",
        &exe,
        "--scenarios",
        &users,
        "--store",
        "memory",
        "--quick",
        "--out",
        out.to_str().unwrap(),
    ])
    .unwrap_err();
    assert!(
        format!("{err:#}").contains(
            "talks to \"users\", which the server does not announce (it serves: links, tags)"
        ),
        "{err:#}"
    );
    let logs: Vec<_> = std::fs::read_dir(out.join("logs"))
        .map(|d| d.collect())
        .unwrap_or_default();
    assert!(logs.is_empty(), "a server was started: {logs:?}");
}

fn a_server_announcing_another_runtime_than_asked_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let exe = me().display().to_string();
    // The template forgets {runtime}: the server serves its default, not the one asked.
    let report = compare(&[
        "--binary",
        &exe,
        "--server-command",
        "{binary} serve --listen {listen}",
        "--runtimes",
        "steady",
        "--scenarios",
        "hello",
        "--store",
        "memory",
        "--quick",
        "--duration",
        "200ms",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ])
    .unwrap();
    let error = report.runs[0].error.as_deref().unwrap_or_default();
    assert!(
        error.contains("asked for runtime steady but the server announced quick"),
        "{error}"
    );
    assert!(report.runs[0].result.is_none());
}

/// The fake server: the contract kept by hand.
mod fake {
    use super::*;

    use bytes::Bytes;
    use http_body_util::{BodyExt, Full};
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;

    /// The services `serve --service all` starts, in port order.
    const SERVICES: [&str; 2] = ["links", "tags"];

    /// `runtimes --json`.
    pub(super) fn runtimes() {
        println!(
            "{}",
            serde_json::json!({
                "runtimes": [
                    {"name": "quick", "version": "1.0", "threading": "one thread"},
                    {"name": "steady", "version": "2.0", "threading": "one thread"},
                ],
                "stores": ["memory"],
                "services": SERVICES,
            })
        );
    }

    /// `serve --runtime R --listen ADDR [--workers N] [--preload N] ...`: the services on
    /// consecutive ports, until SIGTERM.
    pub(super) fn serve(args: &[String]) {
        let flag = |name: &str| {
            args.iter()
                .position(|a| a == name)
                .and_then(|i| args.get(i + 1))
                .cloned()
        };
        let runtime = flag("--runtime").unwrap_or_else(|| "quick".to_owned());
        let listen: std::net::SocketAddr = flag("--listen").unwrap().parse().unwrap();
        let workers: u32 = flag("--workers").map_or(1, |w| w.parse().unwrap());
        let preload: u64 = flag("--preload").map_or(0, |n| n.parse().unwrap());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let mut listeners = Vec::new();
            for (i, _) in SERVICES.iter().enumerate() {
                let addr = std::net::SocketAddr::new(listen.ip(), listen.port() + i as u16);
                listeners.push(tokio::net::TcpListener::bind(addr).await.unwrap());
            }
            for service in SERVICES.iter().filter(|_| preload > 0) {
                println!(
                    "{}",
                    serde_json::json!({"brigade": "preloaded", "service": service,
                        "collection": service, "documents": preload, "existing": 0,
                        "seconds": 0.001})
                );
            }
            for (service, listener) in SERVICES.iter().zip(&listeners) {
                println!(
                    "{}",
                    serde_json::json!({"brigade": "listening", "service": service,
                        "url": format!("http://{}", listener.local_addr().unwrap()),
                        "runtime": runtime, "store": "memory", "workers": workers})
                );
            }
            let next = Arc::new(AtomicU64::new(0));
            for listener in listeners {
                tokio::spawn(accept(listener, next.clone()));
            }
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).unwrap();
            term.recv().await;
        });
        std::process::exit(0);
    }

    async fn accept(listener: tokio::net::TcpListener, next: Arc<AtomicU64>) {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let next = next.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let next = next.clone();
                    async move {
                        let method = req.method().clone();
                        let path = req.uri().path().to_owned();
                        let _ = req.into_body().collect().await;
                        let (status, body) = match (method.as_str(), path.as_str()) {
                            ("GET", "/ready") => (200, r#"{"status":"ready"}"#.to_owned()),
                            ("GET", "/bench/hello") => (200, "Hello, World!".to_owned()),
                            ("POST", "/links") => {
                                let id = next.fetch_add(1, Ordering::Relaxed);
                                (201, format!(r#"{{"id":"l{id}"}}"#))
                            }
                            ("GET", p) if p.starts_with("/links/") => {
                                (200, format!(r#"{{"id":"{}"}}"#, &p[7..]))
                            }
                            _ => (404, r#"{"error":{"code":"not_found"}}"#.to_owned()),
                        };
                        Ok::<_, std::convert::Infallible>(
                            hyper::Response::builder()
                                .status(status)
                                .body(Full::new(Bytes::from(body)))
                                .unwrap(),
                        )
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    }
}
