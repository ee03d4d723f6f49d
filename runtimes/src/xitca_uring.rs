//! xitca-web on io_uring: the [xitca](crate::xitca) adapter's application, guard, gate and drain,
//! served by xitca-http's io_uring dispatchers (`HttpServiceBuilder::io_uring`) on `workers`
//! tokio-uring runtimes, one ring per worker. It answers "what does io_uring change for this
//! service" beside its tokio sibling (`compare --runtimes xitca,xitca-uring`).
//!
//! Why not xitca-server's `io-uring` feature: it moves every worker of every xitca server in the
//! build onto tokio-uring (a crate-wide switch), so the tokio sibling would change too. This module
//! runs its own workers instead, each a thread in `tokio_uring_xitca::start` that builds the
//! connection service once and accepts from the shared listener (the accept itself on the
//! worker's tokio reactor, as xitca-server's listener does; every connection's reads and writes
//! on the worker's ring). xitca-http's io_uring services take the accepted socket and move it onto
//! the ring themselves; TLS runs over the ring too (rustls through xitca-http's unbuffered API).
//!
//! The drain is the sibling's: the listening socket is shut (each worker's accept then ends),
//! every HTTP/1.1 answer closes its connection, the idle connections close when the drain ends,
//! and a worker returns once its connections have ended, or at the grace.
//!
//! Where io_uring is refused (a container's default seccomp profile, `kernel.io_uring_disabled`)
//! the server refuses to start and says so.

use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use brigade_kit::limits::{ServeProtocol, ServerLimits};
use xitca_http::HttpServiceBuilder;
use xitca_io::net::Stream;
use xitca_web::service::{Service, ServiceExt};

use crate::xitca::{Draining, Gate, Http2Only};
use crate::{Listener, Mount, Runtime, Shutdown, GRACE};

/// The registry's entry.
pub(crate) const RUNTIME: Runtime = Runtime {
    name: "xitca-uring",
    crates: &["xitca-web", "xitca-http"],
    threading: "N single-threaded tokio-uring workers per service, each accepting from the \
                listener",
    engine: "io_uring (tokio-uring under xitca-http's io_uring dispatchers, a ring per worker)",
    variant_of: Some("xitca"),
    h3: Err(
        "quinn, under xitca-http's h3 dispatcher, has no io_uring driver: its UDP would run \
         on tokio's epoll, not this runtime's rings (`--runtime xitca` serves h3)",
    ),
    serve_one: serve,
    hello,
    control,
    memory: None,
};

fn serve(
    mount: Mount,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let app = crate::xitca::app(mount.app, limits);
    run(app, mount.listener, workers, limits, shutdown)
}

fn hello(
    listener: Listener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    run(
        crate::xitca::hello_app(),
        listener,
        workers,
        limits,
        shutdown,
    )
}

/// The control server ([`crate::control`]): xitca's control application
/// ([`crate::xitca::control::control_app`]) served by xitca-http's io_uring dispatchers on one
/// tokio-uring worker of this module's own ([`start_workers`]: xitca-web's `enable_io_uring` needs
/// xitca-server's crate-wide switch), every timeout and limit at xitca-http's defaults: HTTP/1.1
/// and h2c by prior knowledge on plaintext (`peek_protocol`, what xitca-web's
/// `h2c_prior_knowledge` sets), the kit's rustls configuration under TLS.
fn control(c: crate::control::Control) -> anyhow::Result<()> {
    check_io_uring()?;
    let app = crate::xitca::control::control_app();
    let (threads, stop) = match c.tls {
        Some(tls) => {
            let http = HttpServiceBuilder::new().rustls(tls).io_uring();
            start_workers(Arc::new(app.enclosed(http)), &c.listener, 1)?
        }
        None => {
            let config = xitca_http::config::HttpServiceConfig::new().peek_protocol();
            let http = HttpServiceBuilder::with_config(config).io_uring();
            start_workers(Arc::new(app.enclosed(http)), &c.listener, 1)?
        }
    };
    for thread in threads {
        thread
            .join()
            .map_err(|_| anyhow::anyhow!("the control's worker panicked"))??;
    }
    // Held until the worker ends: dropping it would end the worker at once.
    drop(stop);
    Ok(())
}

/// Serves the application `factory` builds on io_uring workers, with the sibling's limits, gate
/// and drain.
fn run<F, S, B>(
    factory: F,
    listener: Listener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()>
where
    F: Service<Response = S> + Send + Sync + 'static,
    F::Error: std::fmt::Debug + 'static,
    S: xitca_web::service::ready::ReadyService
        + Service<
            xitca_web::http::WebRequest,
            Response = xitca_web::http::Response<B>,
            Error = std::convert::Infallible,
        > + 'static,
    B: xitca_web::body::Body<Data = bytes::Bytes> + 'static,
    B::Error: std::fmt::Debug,
{
    check_io_uring()?;
    let limits = *limits;
    let gate = Gate::new(&limits);
    let draining = Arc::new(AtomicBool::new(false));
    let listening = listener.socket.try_clone()?;
    let config = crate::xitca::config(&limits);
    // (No `Alt-Svc`: this variant serves no h3.)
    let factory = factory.enclosed(Draining::without_alt_svc(draining.clone()));
    // One set of workers per protocol, as each of xitca-http's services is its own type.
    macro_rules! workers {
        ($factory:expr) => {
            start_workers(
                Arc::new($factory.enclosed(gate.clone())),
                &listener.socket,
                workers,
            )?
        };
    }
    let (threads, stop) =
        match (listener.tls.clone(), limits.protocol) {
            (Some(tls), _) => workers!(factory.enclosed(
                HttpServiceBuilder::with_config(config)
                    .rustls(tls)
                    .io_uring()
            )),
            (None, ServeProtocol::H1) => {
                workers!(factory.enclosed(HttpServiceBuilder::with_config(config).io_uring()))
            }
            (None, ServeProtocol::H2c) => workers!(factory
                .enclosed(Http2Only)
                .enclosed(HttpServiceBuilder::h2().config(config).io_uring())
                .enclosed(OnTheRing)),
            (None, ServeProtocol::Auto) => workers!(factory
                .enclosed(HttpServiceBuilder::with_config(config.peek_protocol()).io_uring())),
            // (`Runtime::check_protocol` refuses h3 before this; h3 without TLS never validates.)
            (None, ServeProtocol::H3) => anyhow::bail!(crate::H3_NOT_OFFERED),
        };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        crate::drain_listener(shutdown, listening, draining, || gate.gate.open()).await;
        gate.held.close_idle();
        let mut joined = tokio::task::spawn_blocking(move || {
            threads
                .into_iter()
                .map(|t| t.join().map_err(|_| anyhow::anyhow!("a worker panicked"))?)
                .collect::<anyhow::Result<Vec<()>>>()
        });
        let joined = tokio::select! {
            joined = &mut joined => joined,
            _ = tokio::time::sleep(GRACE) => {
                tracing::warn!("requests still running {GRACE:?} after the drain; dropping them");
                let _ = stop.send(true);
                joined.await
            }
        };
        joined.map_err(|e| anyhow::anyhow!("joining the workers: {e}"))??;
        Ok(())
    })
}

/// Fails where this process may not set up an io_uring instance.
fn check_io_uring() -> anyhow::Result<()> {
    tokio_uring_xitca::uring_builder()
        .build(2)
        .map(drop)
        .map_err(|e| {
            anyhow::anyhow!(
                "xitca-uring needs io_uring, and this process may not set one up ({e}): a \
                 container's default seccomp profile blocks io_uring_setup \
                 (docs/containers.md), as does kernel.io_uring_disabled; run xitca instead"
            )
        })
}

type Workers = (
    Vec<std::thread::JoinHandle<anyhow::Result<()>>>,
    tokio::sync::watch::Sender<bool>,
);

/// Starts `workers` threads, each a tokio-uring runtime serving connections from `listener` with
/// the service `factory` builds on it; the sender ends them once sent `true` (the grace).
fn start_workers<F, S>(
    factory: Arc<F>,
    listener: &std::net::TcpListener,
    workers: usize,
) -> anyhow::Result<Workers>
where
    F: Service<Response = S> + Send + Sync + 'static,
    F::Error: std::fmt::Debug,
    S: Service<Stream, Response = ()> + 'static,
{
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let threads = (0..workers)
        .map(|i| {
            let (factory, stopped) = (factory.clone(), stopped.clone());
            let listener = listener.try_clone()?;
            Ok(std::thread::Builder::new()
                .name(format!("brigade-xitca-uring-{i}"))
                .spawn(move || tokio_uring_xitca::start(worker(factory, listener, stopped)))?)
        })
        .collect::<anyhow::Result<_>>()?;
    Ok((threads, stop))
}

/// One worker: builds the connection service, accepts until the drain shuts the listener, then
/// waits for its connections to end (or for the stop).
async fn worker<F, S>(
    factory: Arc<F>,
    listener: std::net::TcpListener,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<()>
where
    F: Service<Response = S>,
    F::Error: std::fmt::Debug,
    S: Service<Stream, Response = ()> + 'static,
{
    let service = factory
        .call(())
        .await
        .map_err(|e| anyhow::anyhow!("building xitca's service: {e:?}"))?;
    let service = Rc::new(service);
    listener.set_nonblocking(true)?;
    let accepting = tokio::net::TcpListener::from_std(listener)?;
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = accepting.accept() => match accepted {
                Ok((stream, addr)) => {
                    let stream = Stream::Tcp(stream.into_std()?, addr);
                    let service = service.clone();
                    connections.spawn_local(async move {
                        let _ = service.call(stream).await;
                    });
                }
                // The drain shut the listening socket.
                Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => break,
                Err(e) => {
                    // Out of descriptors or the like: the next accept may succeed.
                    tracing::debug!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = stopped.wait_for(|stop| *stop) => return Ok(()),
        }
    }
    tokio::select! {
        _ = async { while connections.join_next().await.is_some() {} } => {}
        _ = stopped.wait_for(|stop| *stop) => {}
    }
    Ok(())
}

/// xitca-http's HTTP/2-only io_uring service takes the socket already on the ring, with its
/// address: this moves an accepted [`Stream`] there (the gate in front still sees the plain
/// socket, to track it).
#[derive(Clone)]
struct OnTheRing;

impl<S, E> Service<Result<S, E>> for OnTheRing {
    type Response = OnTheRingService<S>;
    type Error = E;

    async fn call(&self, service: Result<S, E>) -> Result<OnTheRingService<S>, E> {
        service.map(OnTheRingService)
    }
}

/// A service behind [`OnTheRing`].
struct OnTheRingService<S>(S);

impl<S> Service<Stream> for OnTheRingService<S>
where
    S: Service<(xitca_io::net::io_uring::TcpStream, std::net::SocketAddr), Response = ()>,
{
    type Response = ();
    type Error = S::Error;

    async fn call(&self, io: Stream) -> Result<(), S::Error> {
        match io {
            Stream::Tcp(tcp, addr) => {
                let tcp = xitca_io::net::io_uring::TcpStream::from_std(tcp);
                self.0.call((tcp, addr)).await
            }
            // Only TCP listeners serve here.
            _ => Ok(()),
        }
    }
}
