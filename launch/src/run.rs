//! `serve` itself: pick the runtime and services, bind, build, preload, announce, serve until
//! SIGTERM or SIGINT, drain, close the stores, and drop throw-away databases if asked.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use anyhow::{bail, Context};
use brigade_kit::announce::{Announcement, Listening, Preloaded};
use brigade_kit::limits::{ServeProtocol, ServerLimits};
use brigade_kit::peer::{PeerTimeouts, PeerTransport};
use brigade_kit::service::ServiceConfig;
use brigade_kit::store::StoreConfig;
use brigade_kit::tls::ServerTls;
use brigade_runtimes::Runtime;

use crate::args::LogFormat;
use crate::prepare::{bind, local_url, prepare, scheme_url, Prepared};
use crate::{ServeArgs, Services};

/// Sets up logging once: to stderr (stdout carries only the announcements), at `RUST_LOG` or
/// `info`, as text.
pub fn init_tracing() {
    init_logging(LogFormat::Text);
}

/// Sets up logging once: to stderr, at `RUST_LOG` or `info`, as text or one JSON object a line
/// (with the current span's fields, so a request's `trace_id` is on every line it logs).
pub fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
}

/// The compiled-in runtime called `name`, or the first compiled in.
pub fn pick_runtime(name: Option<&str>) -> anyhow::Result<&'static Runtime> {
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

/// Prints one announcement on stdout and flushes it, so whoever waits for it sees it now.
pub fn announce(a: &Announcement) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", a.line())?;
    out.flush()
}

/// Resolves on SIGTERM or SIGINT (Ctrl-C).
pub async fn shutdown_signal() {
    listen_for_shutdown().await;
}

/// Starts listening for SIGTERM and SIGINT now (inside a tokio runtime) and returns a future that
/// resolves on the first of them: a signal that arrives before the future is first polled still
/// counts, so a server that listens before it announces itself drains rather than dies.
fn listen_for_shutdown() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let term = signal(SignalKind::terminate());
        let int = signal(SignalKind::interrupt());
        async move {
            match (term, int) {
                (Ok(mut term), Ok(mut int)) => {
                    tokio::select! {
                        _ = term.recv() => {},
                        _ = int.recv() => {},
                    }
                }
                (Ok(mut term), Err(_)) => {
                    term.recv().await;
                }
                (Err(_), Ok(mut int)) => {
                    int.recv().await;
                }
                (Err(_), Err(_)) => std::future::pending().await,
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// The deadlines a service runs under in words, and on MongoDB how many operations it has on the
/// wire at once: what the start-up line and the `listening` lines' `limits` say after the server
/// limits (so compare's and the studies' reports show them in their setup section).
pub(crate) fn deadlines_text(args: &ServeArgs) -> String {
    let deadlines = brigade_kit::deadline::Deadlines {
        store: Duration::from_millis(args.store_timeout_ms),
        peer: Duration::from_millis(args.peer_timeout_ms),
    };
    if args.store != brigade_kit::store::StoreKind::Mongo {
        return deadlines.to_string();
    }
    #[cfg(feature = "mongo")]
    let (reads, ferretdb_writers) = (
        brigade_kit::store::mongo::DEFAULT_CONCURRENCY,
        brigade_kit::store::mongo::DEFAULT_FERRETDB_WRITERS,
    );
    #[cfg(not(feature = "mongo"))]
    let (reads, ferretdb_writers) = (0, 0);
    let reads = args.store_concurrency.map_or(reads, |n| n as usize);
    let writes = match args.store_writers {
        Some(n) => n.to_string(),
        None => format!("{ferretdb_writers} (FerretDB; {reads} on MongoDB)"),
    };
    format!(
        "{deadlines}; MongoDB: at most {reads} reads and {writes} writes on the wire per \
         service, the rest wait in line, first come first served"
    )
}

#[cfg(all(test, feature = "mongo"))]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn text(args: &[&str]) -> String {
        let cli = Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied())).unwrap();
        deadlines_text(&cli.serve)
    }

    #[test]
    fn the_deadlines_and_the_lines_are_said_in_words() {
        assert_eq!(
            text(&[]),
            "store deadline 2000 ms (wait in line + operation); peer call deadline 2000 ms; both \
             cut to the caller's x-brigade-budget-ms"
        );
        assert_eq!(
            text(&["--store", "mongo", "--store-timeout-ms", "1500"]),
            "store deadline 1500 ms (wait in line + operation); peer call deadline 2000 ms; both \
             cut to the caller's x-brigade-budget-ms; MongoDB: at most 4 reads and 1 (FerretDB; 4 \
             on MongoDB) writes on the wire per service, the rest wait in line, first come first \
             served"
        );
        assert!(text(&[
            "--store",
            "mongo",
            "--store-concurrency",
            "8",
            "--store-writers",
            "2"
        ])
        .ends_with(
            "at most 8 reads and 2 writes on the wire per service, the rest wait in \
                        line, first come first served"
        ));
    }
}

/// `serve`: runs `args` over `services` until SIGTERM or SIGINT. Blocks; `Ok` once every request
/// in flight has finished and the stores are closed.
pub fn serve(args: ServeArgs, services: &Services) -> anyhow::Result<()> {
    let runtime = pick_runtime(args.runtime.as_deref())?;
    let chosen = services.select(&args.service)?;
    check_peers(&args, services)?;
    let tls_settings = args.tls.settings();
    let tls = tls_settings.load()?;
    let mut limits = args
        .limits
        .limits_under(tls_settings.mode())
        .map_err(anyhow::Error::msg)?;
    limits.validate()?;
    runtime.check_protocol(&limits)?;
    let workers = args
        .workers
        .unwrap_or_else(brigade_runtimes::available_cores)
        .max(1);
    let config = service_config(&args, runtime, &limits, tls.as_ref())?;
    let store = config.store;
    let deadlines = deadlines_text(&args);
    set_handicap(args.handicap_us);
    limits.max_connections = crate::files::fit_connections(
        limits.max_connections,
        args.limits.max_connections.is_some(),
        chosen.len(),
        crate::files::raise_open_files(),
    )?;
    let drop_config = args.drop_databases_on_exit.then(|| config.clone());
    let bound = bind(&chosen, args.listen)?;
    let mut prepared = prepare(runtime, services, bound, workers, config)?;
    prepared.limits = limits;
    prepared.tls = tls.map(|t| t.config);
    if args.preload > 0 {
        // Before the listening lines: whoever waits for them gets a store already filled.
        preload(&prepared, args.preload)?;
    }
    // Listen for SIGTERM/SIGINT before the listening lines: whoever reads them may signal at once.
    let signalled = {
        let _context = prepared.support().enter();
        listen_for_shutdown()
    };
    let limits_line = limits_in_words(runtime, &limits);
    tracing::info!(
        runtime = runtime.name,
        version = %runtime.version(),
        threading = runtime.threading,
        engine = runtime.engine,
        workers,
        store = %store,
        data_dir = %args.data_dir.display(),
        limits = %limits_line,
        %deadlines,
        "starting"
    );
    for (name, addr) in &prepared.addrs {
        announce(&Announcement::Listening(Listening {
            service: name.clone(),
            url: scheme_url(local_url(*addr), limits.tls.on()),
            runtime: runtime.name.to_string(),
            store: store.as_str().to_string(),
            workers,
            limits: Some(format!("{limits_line}; {deadlines}")),
        }))?;
    }
    let (trigger, shutdown) = brigade_runtimes::shutdown_channel();
    prepared.support().spawn(async move {
        signalled.await;
        tracing::info!("shutting down: no new connections; finishing requests in flight");
        trigger.fire();
    });
    prepared.run(shutdown)?;
    tracing::info!("stopped");
    if let Some(config) = drop_config {
        crate::drop_databases(&chosen, &config)?;
    }
    Ok(())
}

/// Refuses a `--peer` naming a service the binary does not have.
fn check_peers(args: &ServeArgs, services: &Services) -> anyhow::Result<()> {
    for (name, _) in &args.peers {
        if services.find(name).is_none() {
            bail!(
                "--peer {name}=...: unknown service {name:?}; expected {}",
                services.names().join(", ")
            );
        }
    }
    Ok(())
}

/// The server limits in words, as the start-up line and the `listening` lines say them: the kit's
/// line, and over h3 what the runtime's HTTP/3 stack cannot be told of it (xitca-http's
/// dispatcher, docs/reliability.md "HTTP/3"), so the line claims no limit the stack does not hold.
fn limits_in_words(runtime: &Runtime, limits: &ServerLimits) -> String {
    let unset = runtime.h3_unset();
    if limits.protocol != ServeProtocol::H3 || unset.is_empty() {
        return limits.to_string();
    }
    format!(
        "{limits}; not set by {}'s HTTP/3 stack: {}",
        runtime.name,
        unset.join(", ")
    )
}

/// What every served service is built with: the runtime's name, the store and its settings, the
/// peers and their timeouts, metrics, and how peers are reached under these limits and TLS.
fn service_config(
    args: &ServeArgs,
    runtime: &Runtime,
    limits: &ServerLimits,
    tls: Option<&ServerTls>,
) -> anyhow::Result<ServiceConfig> {
    Ok(ServiceConfig {
        runtime: runtime.name.to_string(),
        store: args.store,
        store_config: StoreConfig {
            data_dir: args.data_dir.clone(),
            mongodb_uri: args.mongodb_uri.clone(),
            timeout: Duration::from_millis(args.store_timeout_ms),
            cache_bytes: None,
            concurrency: args.store_concurrency.map_or(0, |n| n as usize),
            writers: args.store_writers.map_or(0, |n| n as usize),
        },
        database_prefix: args.database_prefix.clone(),
        peers: args.peers.iter().cloned().collect::<HashMap<_, _>>(),
        peer_timeouts: PeerTimeouts {
            connect: Duration::from_millis(args.peer_timeout_ms.min(1000)),
            request: Duration::from_millis(args.peer_timeout_ms),
        },
        metrics: !args.no_metrics,
        peer_transport: PeerTransport::of_server(limits, tls)?,
    })
}

/// `--handicap-us`: the calibration cost every request burns, said loudly when it is on.
fn set_handicap(handicap_us: f64) {
    if handicap_us > 0.0 {
        let iterations = brigade_kit::handicap::set_us(handicap_us);
        tracing::warn!(
            handicap_us,
            iterations,
            "calibration handicap on: every request burns extra CPU before its handler"
        );
    }
}

/// `--preload N`: fills every service's collections, one log line and one announcement each.
fn preload(prepared: &Prepared, documents: u64) -> anyhow::Result<()> {
    for (service, filled) in prepared.preload(documents)? {
        for f in filled {
            let seconds = (f.elapsed.as_secs_f64() * 1e6).round() / 1e6;
            tracing::info!(
                %service,
                collection = f.collection,
                inserted = f.inserted,
                existing = f.existing,
                seconds,
                "preloaded"
            );
            announce(&Announcement::Preloaded(Preloaded {
                service: service.clone(),
                collection: f.collection.to_string(),
                documents: f.inserted,
                existing: f.existing,
                seconds,
            }))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod limits_line {
    use super::*;
    use brigade_kit::tls::TlsMode;

    /// Over h3 the line names what the runtime's HTTP/3 stack cannot set; elsewhere, and on
    /// stacks that set every limit, it is the kit's line alone.
    #[test]
    fn over_h3_the_line_says_what_the_stack_does_not_set() {
        let h3 = ServerLimits {
            protocol: ServeProtocol::H3,
            tls: TlsMode::SelfSigned,
            ..ServerLimits::default()
        };
        let tls = ServerLimits {
            protocol: ServeProtocol::Auto,
            ..h3
        };
        for name in brigade_runtimes::names() {
            let runtime = brigade_runtimes::find(name).unwrap();
            assert_eq!(limits_in_words(runtime, &tls), tls.to_string(), "{name}");
            let line = limits_in_words(runtime, &h3);
            assert!(line.starts_with(&h3.to_string()), "{name}: {line}");
            let caveat = format!("; not set by {name}'s HTTP/3 stack: ");
            assert_eq!(
                line.contains(&caveat),
                !runtime.h3_unset().is_empty(),
                "{line}"
            );
            for unset in runtime.h3_unset() {
                assert!(line.contains(unset), "{line}");
            }
        }
        // xitca-http's h3 dispatcher takes no header-section limit (docs/reliability.md).
        if let Some(xitca) = brigade_runtimes::find("xitca") {
            let line = limits_in_words(xitca, &h3);
            assert!(
                line.contains("; not set by xitca's HTTP/3 stack: the header section's size"),
                "{line}"
            );
        }
    }
}
