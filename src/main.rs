//! `brigade`: serve the restaurant services on a chosen runtime, load them, compare runtimes, and
//! run the studies.
//!
//! Run `brigade --help` for the commands; the README's top shows the two a newcomer needs.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use brigade::launch;
use brigade_kit::peer::PeerTimeouts;
use brigade_kit::store::{StoreConfig, StoreKind};
use brigade_runtimes::Runtime;
use brigade_services::{ServiceConfig, ServiceName};
use clap::{Args, Parser, Subcommand};

/// Which HTTP server runtime should my services run on? Brigade measures it.
#[derive(Debug, Parser)]
#[command(name = "brigade", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve one service, or all three, on one runtime.
    Serve(ServeArgs),
    /// List the runtimes and stores compiled into this binary.
    Runtimes,
    /// GET a URL and exit 0 on a 2xx answer (a container health check without curl).
    Probe {
        /// The URL to ask, e.g. http://127.0.0.1:8080/ready.
        url: String,
        /// Give up after this many milliseconds.
        #[arg(long, default_value_t = 2000)]
        timeout_ms: u64,
    },
    /// Serve a runtime's hand-written minimal hello (`GET /bench/hello`), the baseline of
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
    /// Load a target with a scenario and report hits/s, bandwidth, latency and errors.
    Load(brigade_load::cli::LoadArgs),
    /// The main job: run every runtime in turn under the same load and report who wins.
    Compare(brigade_compare::cli::CompareArgs),
    /// The classic studies (today: `storage`), written with the same reports as `compare`.
    Study(brigade_compare::study::StudyArgs),
}

/// What the restaurant supplies to the load tester: its scenarios by name (`waiter`, `tables`,
/// `kitchen`, `all`, `read-heavy`, beside the engine's `hello`; `compare` runs them by default) and
/// where its services listen by default (`brigade load` without `--target`).
fn load_registry() -> brigade_load::Registry {
    let mut registry = brigade_load::Registry::new();
    for (name, toml) in brigade_services::scenarios::load_scenarios() {
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
/// `brigade study storage --via http` (kitchen orders grown by appending items).
fn study_registry() -> brigade_compare::study::Registry {
    brigade_compare::study::Registry {
        http_growth: Some(brigade_compare::study::BuiltinGrowth {
            name: "restaurant: kitchen orders",
            toml: include_str!("../services/restaurant/studies/storage-growth.toml"),
        }),
    }
}

/// `brigade serve`.
#[derive(Debug, Args)]
struct ServeArgs {
    /// The runtime (see `brigade runtimes`); default: the first compiled in.
    #[arg(long)]
    runtime: Option<String>,
    /// waiter, tables, kitchen, or all (the three in one process on consecutive ports).
    #[arg(long, default_value = "all")]
    service: String,
    /// Address to listen on. With `--service all`, the waiter's; tables and kitchen take the next two
    /// ports (port 0: any free ports). Default: 127.0.0.1 and the service's port (8081/8082/8083).
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// memory, embedded (default) or mongo.
    #[arg(long, default_value = "embedded")]
    store: StoreKind,
    /// Where the embedded store keeps its files (one per service).
    #[arg(long, default_value = "./data")]
    data_dir: PathBuf,
    /// MongoDB connection string for `--store mongo`.
    #[arg(long, env = "MONGODB_URI")]
    mongodb_uri: Option<String>,
    /// Store operation timeout in milliseconds (MongoDB server selection and operations).
    #[arg(long, default_value_t = 2000)]
    store_timeout_ms: u64,
    /// Worker threads per service; default: the cores this process may use.
    #[arg(long)]
    workers: Option<usize>,
    /// A peer's base URL, `name=URL` (e.g. `waiter=http://waiter:8080`); repeatable, or
    /// comma-separated in `BRIGADE_PEERS`.
    #[arg(long = "peer", env = "BRIGADE_PEERS", value_delimiter = ',', value_parser = parse_peer)]
    peers: Vec<(String, String)>,
    /// Timeout of a whole call to a peer, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    peer_timeout_ms: u64,
    /// Before listening, fill each service's collections with N realistic documents, in bulk;
    /// collections that already hold documents are left alone (a restart does not double them).
    #[arg(long, default_value_t = 0, value_name = "N")]
    preload: u64,
    /// Prepended to each service's database name (`<prefix>brigade_waiter`): the embedded store's
    /// file name and the MongoDB database. Letters, digits, `_` and `-`, at most 32.
    #[arg(long, default_value = "", value_parser = parse_prefix)]
    database_prefix: String,
    /// After stopping, drop the services' MongoDB databases (for throw-away databases, as
    /// `brigade compare` gives each run); ignored by other stores.
    #[arg(long)]
    drop_databases_on_exit: bool,
}

fn parse_prefix(s: &str) -> Result<String, String> {
    let ok = s.len() <= 32
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(s.to_string())
    } else {
        Err("expected at most 32 letters, digits, '_' or '-'".to_string())
    }
}

fn parse_peer(s: &str) -> Result<(String, String), String> {
    let (name, url) = s.split_once('=').ok_or("expected name=URL")?;
    name.parse::<ServiceName>()?;
    if !url.starts_with("http://") {
        return Err(format!("peer URL {url:?} must start with http://"));
    }
    Ok((name.to_string(), url.to_string()))
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => {
            init_tracing();
            serve(args)
        }
        Command::Runtimes => {
            for r in brigade_runtimes::RUNTIMES {
                println!("{:<6} {} — {}", r.name, r.version, r.threading);
            }
            let stores: Vec<&str> = StoreKind::compiled().iter().map(|s| s.as_str()).collect();
            println!("stores: {}", stores.join(", "));
            Ok(())
        }
        Command::Probe { url, timeout_ms } => probe(&url, Duration::from_millis(timeout_ms)),
        Command::ServeBaseline {
            runtime,
            listen,
            workers,
        } => {
            init_tracing();
            serve_baseline(&runtime, listen, workers)
        }
        Command::Load(args) => {
            init_tracing();
            brigade_load::cli::run_load(args, &load_registry())
        }
        Command::Compare(args) => {
            init_tracing();
            brigade_compare::cli::run_compare(args, &load_registry())
        }
        Command::Study(args) => {
            init_tracing();
            brigade_compare::study::run_study(&args, &study_registry())
        }
    };
    if let Err(e) = result {
        eprintln!("brigade: {e:#}");
        std::process::exit(1);
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn pick_runtime(name: Option<&str>) -> anyhow::Result<&'static Runtime> {
    let names = brigade_runtimes::names().join(", ");
    match name {
        Some(n) => brigade_runtimes::find(n).with_context(|| {
            format!("runtime {n:?} is not compiled into this binary (it has: {names})")
        }),
        None => brigade_runtimes::RUNTIMES
            .first()
            .context("this binary has no runtime compiled in"),
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let runtime = pick_runtime(args.runtime.as_deref())?;
    let services: Vec<ServiceName> = if args.service == "all" {
        ServiceName::ALL.to_vec()
    } else {
        vec![args
            .service
            .parse::<ServiceName>()
            .map_err(anyhow::Error::msg)?]
    };
    let workers = args
        .workers
        .unwrap_or_else(brigade_runtimes::available_cores)
        .max(1);
    let config = ServiceConfig {
        runtime: runtime.name.to_string(),
        store: args.store,
        store_config: StoreConfig {
            data_dir: args.data_dir.clone(),
            mongodb_uri: args.mongodb_uri.clone(),
            timeout: Duration::from_millis(args.store_timeout_ms),
            cache_bytes: None,
        },
        database_prefix: args.database_prefix.clone(),
        peers: args.peers.iter().cloned().collect::<HashMap<_, _>>(),
        peer_timeouts: PeerTimeouts {
            connect: Duration::from_millis(args.peer_timeout_ms.min(1000)),
            request: Duration::from_millis(args.peer_timeout_ms),
        },
    };
    let store = config.store;
    let drop_config = args.drop_databases_on_exit.then(|| config.clone());
    let prepared = launch::prepare(runtime, &services, args.listen, workers, config)?;
    if args.preload > 0 {
        // Before the listening lines: whoever waits for them gets a store already filled.
        for (service, filled) in prepared.preload(args.preload)? {
            for f in filled {
                tracing::info!(
                    %service,
                    collection = f.collection,
                    inserted = f.inserted,
                    existing = f.existing,
                    seconds = f.elapsed.as_secs_f64(),
                    "preloaded"
                );
                println!(
                    "preloaded service={service} collection={} documents={} existing={} seconds={:.3}",
                    f.collection,
                    f.inserted,
                    f.existing,
                    f.elapsed.as_secs_f64()
                );
            }
        }
    }
    tracing::info!(
        runtime = runtime.name,
        version = runtime.version,
        threading = runtime.threading,
        workers,
        store = %store,
        data_dir = %args.data_dir.display(),
        "starting"
    );
    for (name, addr) in &prepared.addrs {
        println!(
            "listening service={name} url=http://{addr} runtime={} store={store} workers={workers}",
            runtime.name
        );
    }
    use std::io::Write;
    std::io::stdout().flush()?;

    let (trigger, shutdown) = brigade_runtimes::shutdown_channel();
    prepared.support().spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutting down: no new connections; finishing requests in flight");
        trigger.fire();
    });
    prepared.run(shutdown)?;
    tracing::info!("stopped");
    if let Some(config) = drop_config {
        launch::drop_databases(&services, &config)?;
    }
    Ok(())
}

fn serve_baseline(runtime: &str, listen: SocketAddr, workers: Option<usize>) -> anyhow::Result<()> {
    let runtime = pick_runtime(Some(runtime))?;
    let workers = workers
        .unwrap_or_else(brigade_runtimes::available_cores)
        .max(1);
    let listener = brigade_runtimes::bind(listen)?;
    let addr = listener.local_addr()?;
    println!(
        "listening service=baseline url=http://{addr} runtime={} workers={workers}",
        runtime.name
    );
    use std::io::Write;
    std::io::stdout().flush()?;
    let (trigger, shutdown) = brigade_runtimes::shutdown_channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        if let Ok(rt) = rt {
            rt.block_on(wait_for_signal());
        }
        trigger.fire();
    });
    brigade_runtimes::baseline::serve_hello(runtime.name, listener, workers, shutdown)
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

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
        let resp = tokio::time::timeout(timeout, client.get(uri))
            .await
            .context("timed out")??;
        let status = resp.status();
        let _ = resp.into_body().collect().await;
        anyhow::Ok(status)
    })?;
    if !status.is_success() {
        bail!("{url} answered {status}");
    }
    println!("{url}: {status}");
    Ok(())
}
