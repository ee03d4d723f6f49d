//! xitca-web: each endpoint becomes a route of xitca-web's own `App` router (xitca-router, the
//! table's `{name}` patterns as they are), its service one endpoint service that picks the route
//! for the request's method (a `HEAD` takes the `GET` route; the kit's JSON 405 for the others),
//! reads the body through the kit's reader under the endpoint's limit and hands the kit the route
//! and the raw request (the kit takes the path parameters from the raw path). A guard around the
//! router runs the kit's house rules and head limits first, once per request, and turns what the
//! router does not take into the kit's JSON 404 ([`app`]). xitca-web's `Route` is typed by its
//! method count, fixed at compile time, so the table's methods are matched in the endpoint's
//! service instead (the same linear match xitca's `Route` does).
//!
//! Modules by job: `app` (the application: endpoints, body, guard), `connection` (the drain's
//! layer, the connection gate, HTTP/2-only's body), `memory` (the in-memory server for fuzzing),
//! `h3` (HTTP/3 through xitca-http's own dispatcher), `control` (the control server, no kit
//! layer); this file the configuration and the server.
//!
//! xitca has its own HTTP stack (xitca-http: its own HTTP/1.1 parser and HTTP/2 implementation,
//! rustls through its unbuffered API) and server (xitca-server: `workers` single-threaded tokio
//! workers, the listener's readiness on one more thread). The adapter builds the server from those
//! two, as xitca-web's `HttpServer` does, because `HttpServer` sets neither a shutdown timeout nor
//! anything in front of the HTTP service. The kit's [`ServerLimits`] are set on xitca-http's
//! configuration: the head timer (`request_head_timeout`, which runs from the head's first bytes),
//! the keep-alive timer (which is also the wait for a new connection's first bytes, so it is set to
//! the smaller of the keep-alive and head limits, as on the hyper-based runtimes), the TLS handshake
//! at the head limit, actix-web's fixed 96 headers and 128 KiB head buffer as backstops (the kit
//! checks the head's count and size itself in the guard), and three of the four HTTP/2 settings.
//! xitca-http cannot set the HTTP/2 connection window: it stays at the protocol's 65,535 bytes. The
//! connection limit is the kit's gate, in front of the HTTP service and the TLS handshake
//! ([`Gate`]): past it the socket is closed before a byte is read.
//!
//! Protocols through xitca-http's own services: HTTP/1.1 (`HttpServiceBuilder`, plaintext), h2c
//! (`HttpServiceBuilder::h2`), both on one port (`peek_protocol`: it tells them apart by the
//! preface), TLS with the kit's rustls configuration as it is (ALPN `h2, http/1.1`), and HTTP/3
//! beside TLS (`HttpServiceBuilder::h3`, [`crate::xitca::h3`]), its TCP answers carrying `Alt-Svc`.
//!
//! The drain: the listening socket is shut and every HTTP/1.1 answer from then on closes its
//! connection ([`crate::drain_listener`]); when the drain ends the connections with no request
//! running are closed ([`Held`](crate::idle::Held): xitca-http sends no GOAWAY on a stop, it has no way to be told, and
//! xitca-server's graceful stop waits for every connection), then xitca-server's graceful stop gives
//! the rest the grace.
//!
//! For a sibling runtime on another I/O engine (io_uring) the application ([`app`]), the guard and
//! the gate are the same; only the serving function ([`run`]) and its connection services differ.

use std::convert::Infallible;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use brigade_kit::limits::{
    ServeProtocol, ServerLimits, RUNTIME_MAX_HEADERS, RUNTIME_MAX_HEADER_BYTES,
};
use bytes::Bytes;
use xitca_http::config::{HttpServiceConfig, DEFAULT_WRITE_BUF_LIMIT};
use xitca_http::HttpServiceBuilder;
use xitca_io::net::Stream;
use xitca_server::net::{IntoListener, Listen};
use xitca_web::body::Body;
use xitca_web::http::Response;
use xitca_web::service::ready::ReadyService;
use xitca_web::service::{Service, ServiceExt};
use xitca_web::App;

use crate::{Mount, Runtime, Shutdown, GRACE};

mod app;
mod connection;
pub(crate) mod control;
pub(crate) mod h3;
mod memory;

pub(crate) use app::app;
pub(crate) use connection::{Draining, Gate, Http2Only};
use control::control;
use memory::memory;

/// The registry's entry.
pub(crate) const RUNTIME: Runtime = Runtime {
    name: "xitca",
    crates: &["xitca-web", "xitca-http"],
    threading: "xitca-server, N single-threaded tokio workers per service (the listener's \
                readiness on one more thread)",
    engine: crate::TOKIO_EPOLL,
    variant_of: None,
    h3: Ok(crate::xitca::h3::H3_STACK),
    serve_one: serve,
    hello,
    control,
    memory: Some(memory),
};

/// xitca-http's configuration with the kit's backstops: actix-web's fixed 96 headers and 128 KiB
/// head buffer (the kit's own head limits stay under both and answer a JSON 431 first).
pub(crate) type Config =
    HttpServiceConfig<RUNTIME_MAX_HEADERS, RUNTIME_MAX_HEADER_BYTES, DEFAULT_WRITE_BUF_LIMIT>;

/// xitca-http's knobs from the kit's limits.
pub(crate) fn config(limits: &ServerLimits) -> Config {
    let h2 = &limits.http2;
    HttpServiceConfig::new()
        .max_request_headers::<RUNTIME_MAX_HEADERS>()
        .max_read_buf_size::<RUNTIME_MAX_HEADER_BYTES>()
        // xitca's keep-alive timer is also how long a new connection may wait before its first
        // byte (its head timer starts with the head's first bytes): the smaller of the two, as the
        // hyper-based runtimes' one timer.
        .keep_alive_timeout(limits.keep_alive_timeout.min(limits.header_read_timeout))
        .request_head_timeout(limits.header_read_timeout)
        .tls_accept_timeout(limits.header_read_timeout)
        .h2_max_concurrent_streams(h2.max_concurrent_streams)
        .h2_initial_window_size(h2.initial_stream_window)
        .h2_max_header_list_size(h2.max_header_list_bytes)
}

/// The listening socket as xitca-server accepts from it, quiet once the drain has shut it: the
/// accept then fails at once (`EINVAL`), which xitca-server would log and retry every second, so
/// it waits instead until the server's stop ends the listener's runtime (an error xitca-server
/// ends its accept loop on).
struct Listening(std::net::TcpListener);

/// [`Listening`] registered with the listener's runtime.
struct Accepting(tokio::net::TcpListener);

impl IntoListener for Listening {
    type Listener = Accepting;

    fn into_listener(self) -> std::io::Result<Accepting> {
        self.0.set_nonblocking(true)?;
        tokio::net::TcpListener::from_std(self.0).map(Accepting)
    }
}

impl Listen for Accepting {
    async fn accept(&self) -> std::io::Result<Stream> {
        loop {
            match self.0.accept().await {
                Ok((stream, addr)) => return Ok(Stream::Tcp(stream.into_std()?, addr)),
                Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Serves the application `make` gives (the service factory of an `App`; a second one for
/// HTTP/3 under `--protocol h3`) with Brigade's threading, limits and shutdown (the hand-written
/// hello uses it too).
fn run<M, F, S, B>(
    make: M,
    listener: crate::Listener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()>
where
    M: Fn() -> F,
    F: Service<Response = S> + Send + Sync + 'static,
    F::Error: std::fmt::Debug + 'static,
    S: ReadyService
        + Service<xitca_web::http::WebRequest, Response = Response<B>, Error = Infallible>
        + 'static,
    B: Body<Data = Bytes> + 'static,
    B::Error: std::fmt::Debug,
{
    let limits = *limits;
    let gate = Gate::new(&limits);
    // Set once the server drains: every answer from then on closes its connection.
    let draining = Arc::new(AtomicBool::new(false));
    // The listening socket itself (a second handle on it), to stop listening when the drain
    // begins: xitca-server's stop only stops accepting after it.
    let listening = listener.socket.try_clone()?;
    let addr = listener.socket.local_addr()?;
    // `--protocol h3`: QUIC on the same port number, beside TLS on TCP ([`crate::xitca::h3`]),
    // bound before anything starts, one connection count for both.
    let quic = match (&listener.tls, limits.protocol) {
        (Some(tls), ServeProtocol::H3) => Some(crate::xitca::h3::Quic::bind(addr, tls, &limits)?),
        _ => None,
    };
    let server = xitca_server::Builder::new()
        .worker_threads(workers)
        .server_threads(1)
        .disable_signal()
        .shutdown_timeout(GRACE.as_secs());
    let draining_layer = Draining {
        draining: draining.clone(),
        alt_svc: quic.as_ref().and(crate::quic::alt_svc(addr.port())),
    };
    let server = listen_tcp(server, listener, make(), draining_layer, &limits, &gate)?;
    let (server, quic) = match quic {
        Some(quic) => {
            let connections =
                crate::xitca::h3::Connections::new(gate.gate.clone(), &limits, shutdown.clone());
            let (server, drain) = crate::xitca::h3::listen(server, quic, make(), connections);
            (server, Some(drain))
        }
        None => (server, None),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let mut server = server.build();
        let handle = server.handle()?;
        tokio::spawn(async move {
            let open = || gate.gate.open();
            drain(shutdown, listening, draining, quic, open).await;
            gate.held.close_idle();
            handle.stop(true);
        });
        // Returns once the workers have stopped (the stop blocks this thread until then).
        server.await?;
        Ok(())
    })
}

/// Adds the TCP listener to `server`: `factory`'s application behind `draining`, over TLS where
/// the listener has it, else over the plaintext protocol `limits` name, every connection and TLS
/// handshake through `gate`.
fn listen_tcp<F, S, B>(
    server: xitca_server::Builder,
    listener: crate::Listener,
    factory: F,
    draining: Draining,
    limits: &ServerLimits,
    gate: &Gate,
) -> anyhow::Result<xitca_server::Builder>
where
    F: Service<Response = S> + Send + Sync + 'static,
    F::Error: std::fmt::Debug + 'static,
    S: ReadyService
        + Service<xitca_web::http::WebRequest, Response = Response<B>, Error = Infallible>
        + 'static,
    B: Body<Data = Bytes> + 'static,
    B::Error: std::fmt::Debug,
{
    let socket = Listening(listener.socket);
    let config = config(limits);
    // One `listen` per protocol, as each of xitca-http's services is its own type.
    macro_rules! listen {
        ($factory:expr, $http:expr) => {
            server.listen(
                "brigade",
                socket,
                $factory.enclosed($http).enclosed(gate.clone()),
            )
        };
    }
    let factory = factory.enclosed(draining);
    Ok(match (listener.tls, limits.protocol) {
        (Some(tls), _) => listen!(factory, HttpServiceBuilder::with_config(config).rustls(tls)),
        (None, ServeProtocol::H1) => listen!(factory, HttpServiceBuilder::with_config(config)),
        // (`Runtime::check_protocol` refuses h3 without TLS before this: it never validates.)
        (None, ServeProtocol::H3) => anyhow::bail!(crate::H3_NOT_OFFERED),
        (None, ServeProtocol::H2c) => listen!(
            factory.enclosed(Http2Only),
            HttpServiceBuilder::h2().config(config)
        ),
        (None, ServeProtocol::Auto) => listen!(
            factory,
            HttpServiceBuilder::with_config(config.peek_protocol())
        ),
    })
}

/// The drain, once `shutdown` fires: the listeners close at once (QUIC's takes no new
/// connection), the connections still open close after their next answer (QUIC's after their
/// last, [`crate::xitca::h3`]) until `open()` is 0 or the drain ends, then what is left of QUIC's
/// is closed; the caller then closes the idle TCP ones and stops the server (the rest within the
/// grace).
async fn drain(
    shutdown: Shutdown,
    listening: std::net::TcpListener,
    draining: Arc<AtomicBool>,
    quic: Option<crate::xitca::h3::QuicDrain>,
    open: impl Fn() -> usize,
) {
    if let Some(quic) = quic.clone() {
        let begun = shutdown.clone();
        tokio::spawn(async move {
            begun.wait().await;
            quic.refuse_new();
        });
    }
    crate::drain_listener(shutdown, listening, draining, open).await;
    if let Some(quic) = quic {
        quic.close().await;
    }
}

fn serve(
    mount: Mount,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let application = mount.app;
    run(
        || app(application.clone(), limits),
        mount.listener,
        workers,
        limits,
        shutdown,
    )
}

/// The hand-written hello ([`crate::hello`]): one route, xitca-web's plainest idiom.
fn hello(
    listener: crate::Listener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    run(hello_app, listener, workers, limits, shutdown)
}

/// The hand-written hello's application: one route, xitca-web's plainest idiom.
pub(crate) fn hello_app() -> impl Service<
    Response = impl ReadyService
                   + Service<
        xitca_web::http::WebRequest,
        Response = Response<impl Body<Data = Bytes, Error: std::fmt::Debug> + 'static>,
        Error = Infallible,
    > + 'static,
    Error: std::fmt::Debug + 'static,
> + Send
       + Sync
       + 'static {
    use xitca_web::handler::handler_service;
    use xitca_web::route::get;
    App::new()
        .at(
            "/bench/hello",
            get(handler_service(|| async { crate::hello::HELLO })),
        )
        .finish()
}
