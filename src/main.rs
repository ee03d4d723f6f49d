//! `brigade`: serve the restaurant services on a chosen runtime (the library's serve entry point,
//! `brigade_launch`, over the restaurant's three services), load them, compare runtimes, and run the
//! studies.
//!
//! Run `brigade --help` for the commands; the README's top shows the two a newcomer needs.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{bail, Context};
use brigade_kit::announce::{Announcement, Listening};
use brigade_launch::{ServerCommand, Services};
use brigade_restaurant::ServiceName;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Which HTTP server runtime should my services run on? Brigade measures it.
#[derive(Debug, Parser)]
#[command(name = "brigade", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// `serve` and `runtimes`: the serve entry point every server binary built on the kit has,
    /// here over the restaurant's three services.
    #[command(flatten)]
    Server(ServerCommand),
    /// GET a URL and exit 0 on a 2xx answer (a container health check without curl).
    Probe {
        /// The URL to ask, e.g. http://127.0.0.1:8080/ready.
        url: String,
        /// Give up after this many milliseconds.
        #[arg(long, default_value_t = 2000)]
        timeout_ms: u64,
    },
    /// Serve a runtime's hand-written minimal hello (`GET /bench/hello`), the floor of
    /// `cargo bench --bench overhead`.
    #[command(hide = true)]
    ServeBaseline {
        /// The runtime.
        #[arg(long)]
        runtime: String,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8090")]
        listen: SocketAddr,
        /// Worker threads; default: the cores this process may use.
        #[arg(long)]
        workers: Option<usize>,
    },
    /// Serve a runtime's control server (`brigade_runtimes::control`: the runtime's own minimal
    /// server, no kit layer), the control of `brigade study conformance`.
    #[command(hide = true)]
    ServeControl {
        /// The runtime.
        #[arg(long)]
        runtime: String,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8091")]
        listen: SocketAddr,
        /// TLS with the kit's configuration and a certificate made at start; else plaintext
        /// (HTTP/1.1 and h2c).
        #[arg(long)]
        tls_self_signed: bool,
        /// HTTP/3 as well, on the listener's port number over UDP (with --tls-self-signed; the
        /// six runtimes that offer h3).
        #[arg(long, requires = "tls_self_signed")]
        h3: bool,
    },
    /// Load a target with a scenario and report hits/s, bandwidth, latency and errors.
    Load(brigade_load::cli::LoadCommand),
    /// Merge the results of generators that ran together (`load --shard I/N`) into one exact result.
    Merge(brigade_load::cli::MergeArgs),
    /// What the servers counted around a run (their /metrics, read before and after) against what
    /// its generators sent, route by route: every difference accounted for, or named.
    Tally(brigade_meter::tally::TallyArgs),
    /// The main job: every runtime side by side under the same load, and alone, and who wins.
    Compare(Box<brigade_compare::cli::CompareArgs>),
    /// The classic studies (`storage`, `rpc`, `sweep`, `inproc`, `faults`, `conformance`), written
    /// with the same reports as `compare`.
    Study(brigade_studies::StudyArgs),
}

/// What the restaurant supplies to the load tester: its scenarios by name (`waiter`, `tables`,
/// `kitchen`, `all`, `read-heavy`, beside the engine's `hello`; `compare` runs them by default) and
/// where its services listen by default (`brigade load` without `--target`).
fn load_registry() -> brigade_load::Registry {
    let mut registry = brigade_load::Registry::new();
    for (name, toml) in brigade_restaurant::scenarios::load_scenarios() {
        registry.scenario(*name, *toml);
    }
    for service in ServiceName::ALL {
        registry.target(
            service.as_str(),
            format!("http://127.0.0.1:{}", service.default_port()),
        );
    }
    registry
}

/// What the restaurant supplies to the studies: its growing documents for
/// `brigade study storage --via http` (kitchen orders grown by appending items), and the waiter
/// service, linked into this binary, for the in-process provider of `brigade study rpc` and
/// `brigade study inproc` (its bench endpoints are the ones the served waiter answers first).
fn study_registry() -> brigade_studies::Registry {
    brigade_studies::Registry {
        http_growth: Some(brigade_studies::BuiltinGrowth {
            name: "restaurant: kitchen orders",
            toml: include_str!("../services/restaurant/studies/storage-growth.toml"),
        }),
        load: load_registry(),
        fault_scenario: Some("all"),
        soak_scenario: Some("waiter"),
        write_probe: Some(brigade_studies::WriteProbe {
            service: "waiter",
            create: "/waiters",
            body: r#"{"name": "Fault waiter {n}", "shift": "night"}"#,
            id_pointer: "/id",
            read: "/waiters/{id}",
        }),
        inproc: Some(brigade_studies::InprocApp {
            name: "restaurant: waiter",
            service: std::sync::Arc::new(ServiceName::Waiter),
        }),
    }
}

/// How `compare --stores ...,mongo` asks the MongoDB server what it is (its `buildInfo`): this
/// binary links the mongo store, so compare (which links no store) gets the question from here.
#[cfg(feature = "mongo")]
fn describe_mongo() -> Option<brigade_compare::cli::DescribeServer> {
    fn describe(uri: &str) -> anyhow::Result<String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let asked = brigade_kit::store::mongo::server::describe(uri, Duration::from_secs(5));
        Ok(rt.block_on(asked)?)
    }
    Some(describe)
}

/// Without the mongo store this build cannot ask (compare's report says so).
#[cfg(not(feature = "mongo"))]
fn describe_mongo() -> Option<brigade_compare::cli::DescribeServer> {
    None
}

/// What `brigade serve` serves: the restaurant's three services, in dependency order.
fn restaurant() -> Services {
    Services::from(brigade_restaurant::services())
}

fn main() {
    let command = Cli::command().mut_subcommand("study", brigade_studies::with_flag_index);
    let cli = Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        Command::Server(command) => command.run(&restaurant()),
        Command::Probe { url, timeout_ms } => probe(&url, Duration::from_millis(timeout_ms)),
        Command::ServeBaseline {
            runtime,
            listen,
            workers,
        } => {
            brigade_launch::init_tracing();
            serve_hello(&runtime, listen, workers)
        }
        Command::ServeControl {
            runtime,
            listen,
            tls_self_signed,
            h3,
        } => serve_control(&runtime, listen, tls_self_signed, h3),
        Command::Load(args) => {
            brigade_launch::init_tracing();
            brigade_load::cli::run_load(args, &load_registry())
        }
        Command::Merge(args) => brigade_load::cli::run_merge(args),
        Command::Tally(args) => brigade_meter::tally::run(&args, &load_registry()),
        Command::Compare(mut args) => {
            brigade_launch::init_tracing();
            args.describe_mongo = describe_mongo();
            brigade_compare::cli::run_compare(*args, &load_registry())
        }
        Command::Study(args) => {
            brigade_launch::init_tracing();
            brigade_studies::run_study(&args, &study_registry())
        }
    };
    if let Err(e) = result {
        eprintln!("brigade: {e:#}");
        std::process::exit(1);
    }
}

fn serve_hello(runtime: &str, listen: SocketAddr, workers: Option<usize>) -> anyhow::Result<()> {
    let runtime = brigade_launch::pick_runtime(Some(runtime))?;
    let workers = workers
        .unwrap_or_else(brigade_runtimes::available_cores)
        .max(1);
    let listener = brigade_runtimes::bind(listen)?;
    let addr = listener.local_addr()?;
    brigade_launch::announce(&Announcement::Listening(Listening {
        service: "baseline".to_string(),
        url: format!("http://{addr}"),
        runtime: runtime.name.to_string(),
        store: "none".to_string(),
        workers,
        limits: Some(brigade_kit::limits::ServerLimits::default().to_string()),
    }))?;
    let (trigger, shutdown) = brigade_runtimes::shutdown_channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        if let Ok(rt) = rt {
            rt.block_on(brigade_launch::shutdown_signal());
        }
        trigger.fire();
    });
    brigade_runtimes::hello::serve_hello(runtime.name, listener, workers, shutdown)
}

fn serve_control(runtime: &str, listen: SocketAddr, tls: bool, h3: bool) -> anyhow::Result<()> {
    let runtime = brigade_launch::pick_runtime(Some(runtime))?;
    let settings = brigade_kit::tls::TlsSettings {
        self_signed: tls,
        ..Default::default()
    };
    let tls = settings.load()?.map(|t| t.config);
    let control = brigade_runtimes::control::Control::bind(runtime.name, listen, tls, h3)?;
    let addr = control.listener.local_addr()?;
    let scheme = if control.tls.is_some() {
        "https"
    } else {
        "http"
    };
    brigade_launch::announce(&Announcement::Listening(Listening {
        service: "control".to_string(),
        url: format!("{scheme}://{addr}"),
        runtime: runtime.name.to_string(),
        store: "none".to_string(),
        workers: 1,
        limits: None,
    }))?;
    control.serve()
}

/// The most of an answer's body `probe` reads.
const PROBE_MAX_BODY: usize = 1024 * 1024;

fn probe(url: &str, timeout: Duration) -> anyhow::Result<()> {
    use http_body_util::{BodyExt, Empty};
    let uri: hyper::Uri = url.parse().with_context(|| format!("bad URL {url:?}"))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let status = rt.block_on(async {
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http::<Empty<bytes::Bytes>>();
        // The whole exchange, body included, under the one timeout: a server that sends its head
        // and then trickles is cut off like one that never answers. The body is read (and capped)
        // only to finish the exchange cleanly.
        let exchange = async {
            let resp = client.get(uri).await?;
            let status = resp.status();
            let _ = http_body_util::Limited::new(resp.into_body(), PROBE_MAX_BODY)
                .collect()
                .await;
            anyhow::Ok(status)
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .with_context(|| format!("no whole answer within {} ms", timeout.as_millis()))?
    })?;
    if !status.is_success() {
        bail!("{url} answered {status}");
    }
    println!("{url}: {status}");
    Ok(())
}
