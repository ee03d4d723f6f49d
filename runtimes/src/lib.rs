//! Thin adapters that serve any Brigade application ([`AppHandle`]) on a real HTTP runtime.
//!
//! Each adapter mounts the application's endpoints through its runtime's own router and body
//! extraction, hands the route index, path parameters and body to [`AppHandle::call`], and turns
//! the [`Reply`](brigade_kit::Reply) into its runtime's response in one function. It knows no route:
//! adding a route never touches an adapter. Adding a runtime is one module here, one feature, and one
//! line in [`RUNTIMES`].
//!
//! Threading is the same everywhere: each mounted service gets `workers` worker threads (default: the
//! cores this process may use). axum, hyper and warp run on one multi-threaded tokio runtime with
//! `workers` workers per service; actix-web, ntex and xitca-web run `workers` single-threaded
//! workers per service (their own model). Listeners are bound the same way for all ([`bind`]): `SO_REUSEADDR`, backlog 1024,
//! `TCP_NODELAY` (inherited by accepted sockets on Linux).
//!
//! Limits are the same for all ([`ServerLimits`], from the kit): every adapter serves the protocols
//! the limits name (HTTP/1.1 by default; h2c, both, or TLS with ALPN `h2, http/1.1` when asked) and
//! applies the kit's head, body, timeout, connection and HTTP/2 limits; axum, hyper, warp, salvo
//! and poem share one loop on hyper's own builders and one tokio-rustls acceptor (`hyper_loop`),
//! actix-web, ntex and xitca-web set their own knobs from the same values and take the same rustls
//! configuration ([`brigade_kit::tls`]). Every runtime answers `HEAD` for every `GET` route,
//! without the body. HTTP/3 (`--protocol h3`) stands on one QUIC endpoint (`quic`): the
//! hyper-based runtimes serve it through the shared loop's h3 (`hyper_loop::quic`), xitca-web
//! through xitca-http's own h3 dispatcher (`xitca_h3`); the others refuse it at start.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
pub use brigade_kit::limits::ServerLimits;
use brigade_kit::AppHandle;

/// Defines the house rules' glue for a runtime with its own HTTP stack (actix-web, ntex), over its
/// own `HttpRequest`, `HttpResponse` and `ConnectionType` (in scope where it is used; `$http10`
/// and `$http2` are its `Version::HTTP_10` and `Version::HTTP_2`): `admit`, `closing`, `answer`, `refusal` and `unmatched`. One macro because
/// the two stacks' types are their own, their methods the same.
#[allow(unused_macros)] // a build without actix-web and ntex
macro_rules! house_rules {
    ($http10:expr, $http2:expr) => {
        /// The kit's house rules ([`brigade_kit::rules`]) on a request.
        fn admit(req: &HttpRequest, limits: &ServerLimits) -> Result<Admitted, Refused> {
            let target = req.uri().path_and_query().map_or("", |p| p.as_str());
            let headers = || {
                req.headers()
                    .iter()
                    .map(|(k, v)| (k.as_str().as_bytes(), v.as_bytes()))
            };
            let version = rules::Version::of(req.version() <= $http10, req.version() >= $http2);
            rules::admit(limits, req.method().as_str(), target, version, headers)
        }

        /// `resp`, closing the connection after it when `close`.
        fn closing(mut resp: HttpResponse, close: bool) -> HttpResponse {
            if close {
                resp.head_mut().set_connection_type(ConnectionType::Close);
            }
            resp
        }

        /// The answer to a request the house rules admitted: `reply`, closing where the rules say.
        fn answer(reply: Reply, admitted: Admitted) -> HttpResponse {
            let close = admitted.closes_after(reply.status);
            closing(respond(reply), close)
        }

        /// The answer to a request the house rules refused.
        fn refusal(refused: Refused) -> HttpResponse {
            closing(respond(refused.error.to_reply()), refused.close)
        }

        /// The kit's 404 or 405 for a request no route takes, after the house rules.
        fn unmatched(
            app: &Arc<dyn AppHandle>,
            req: &HttpRequest,
            limits: &ServerLimits,
        ) -> HttpResponse {
            match admit(req, limits) {
                Err(refused) => refusal(refused),
                Ok(a) => answer(app.unmatched(req.method().as_str(), req.path()), a),
            }
        }
    };
}

/// Defines `fn content_type_value(&'static str) -> $value`: the `Content-Type` header value of a
/// reply, the kit's usual types pre-validated at compile time (a `from_static` at run time re-checks
/// every byte on every request). One macro because actix-web's header type is not `http` 1's.
macro_rules! content_type_values {
    ($value:ty) => {
        fn content_type_value(ct: &'static str) -> $value {
            use brigade_kit::http::content_type::{JSON, OCTETS, TEXT};
            const JSON_V: $value = <$value>::from_static(JSON);
            const TEXT_V: $value = <$value>::from_static(TEXT);
            const OCTETS_V: $value = <$value>::from_static(OCTETS);
            match ct {
                JSON => JSON_V,
                TEXT => TEXT_V,
                OCTETS => OCTETS_V,
                other => <$value>::from_static(other),
            }
        }
    };
}

#[cfg(feature = "hyper-loop")]
mod hyper_loop;
#[cfg(any(feature = "hyper-loop", feature = "xitca"))]
mod quic;
#[cfg(feature = "xitca")]
#[path = "xitca/h3.rs"]
mod xitca_h3;

mod dispatch;
pub mod hello;
#[cfg(any(feature = "actix", feature = "xitca"))]
mod idle;
pub mod inprocess;

/// How long in-flight requests may run after a shutdown begins.
pub const GRACE: Duration = Duration::from_secs(10);

/// How long a draining server keeps its connections open after it stops accepting, answering
/// each request with `Connection: close`, before it shuts those left (docs/reliability.md).
pub const DRAIN: Duration = Duration::from_secs(2);

/// Waits until `open()` (the connections still open) is 0, or [`DRAIN`] has passed (on any
/// tokio-based runtime: all of them).
#[allow(dead_code)] // a build with no runtime feature has no server to drain
async fn drain(open: impl Fn() -> usize) {
    let until = tokio::time::Instant::now() + DRAIN;
    while open() > 0 && tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The drain of a runtime whose own stop only stops accepting (actix-web, ntex, xitca-web), once
/// `shutdown` fires (docs/reliability.md): the listening socket (a second handle on it) stops
/// completing handshakes at once, `draining` is set so that every answer from then on closes its
/// connection, and [`drain`] waits on `open()`; the runtime then stops what is left within its grace.
#[allow(dead_code)] // a build with none of those runtimes has no listener to drain this way
async fn drain_listener(
    shutdown: Shutdown,
    listening: std::net::TcpListener,
    draining: Arc<std::sync::atomic::AtomicBool>,
    open: impl Fn() -> usize,
) {
    shutdown.wait().await;
    let _ = socket2::SockRef::from(&listening).shutdown(std::net::Shutdown::Read);
    draining.store(true, std::sync::atomic::Ordering::Relaxed);
    drain(open).await;
}

/// A server's TLS configuration (the kit's, [`brigade_kit::tls::TlsSettings::load`]).
pub type TlsConfig = Arc<rustls::ServerConfig>;

/// Where a server accepts connections: a bound socket, and TLS on it or not.
pub struct Listener {
    /// The socket, already bound (see [`bind`]).
    pub socket: std::net::TcpListener,
    /// TLS on every connection, or plaintext.
    pub tls: Option<TlsConfig>,
}

impl From<std::net::TcpListener> for Listener {
    /// A plaintext listener.
    fn from(socket: std::net::TcpListener) -> Listener {
        Listener { socket, tls: None }
    }
}

/// A service to serve: its bound listener and the application.
pub struct Mount {
    /// The listener, already bound (see [`bind`]).
    pub listener: Listener,
    /// The application.
    pub app: Arc<dyn AppHandle>,
}

impl std::fmt::Debug for Mount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Mount({} on {:?})",
            self.app.name(),
            self.listener.socket.local_addr().ok()
        )
    }
}

/// Resolves when the server should stop accepting and drain. Cloneable; cheap.
#[derive(Debug, Clone)]
pub struct Shutdown(tokio::sync::watch::Receiver<bool>);

/// Starts a shutdown for every [`Shutdown`] made with it.
#[derive(Debug)]
pub struct ShutdownTrigger(tokio::sync::watch::Sender<bool>);

/// A trigger and the signal it fires.
pub fn shutdown_channel() -> (ShutdownTrigger, Shutdown) {
    let (tx, rx) = tokio::sync::watch::channel(false);
    (ShutdownTrigger(tx), Shutdown(rx))
}

impl ShutdownTrigger {
    /// Begins the shutdown.
    pub fn fire(&self) {
        let _ = self.0.send(true);
    }
}

impl Shutdown {
    /// Whether the shutdown has begun.
    pub fn begun(&self) -> bool {
        *self.0.borrow()
    }

    /// Waits until the shutdown begins (or its trigger is dropped).
    pub async fn wait(mut self) {
        let _ = self.0.wait_for(|stop| *stop).await;
    }
}

/// The I/O engine of every runtime on tokio: its reactor, on epoll.
pub const TOKIO_EPOLL: &str = "tokio (epoll)";

/// A runtime compiled into this binary: one module's `RUNTIME` (see `build.rs`, which derives the
/// registry from the modules and the feature lines).
#[derive(Debug)]
pub struct Runtime {
    /// Its name on the command line (its module's and feature's name).
    pub name: &'static str,
    /// How it uses threads, printed in reports.
    pub threading: &'static str,
    /// The I/O engine its sockets run on ([`TOKIO_EPOLL`], or io_uring for the `-uring`
    /// variants), printed in reports.
    pub engine: &'static str,
    /// The runtime whose adapter this one is, on another I/O engine (`ntex` for `ntex-uring`):
    /// compare leaves variants out of its default set (`--runtimes all` takes them).
    pub variant_of: Option<&'static str>,
    /// The crates it is, the framework first (`["axum", "hyper"]`): its version line names them
    /// with the versions this build resolved.
    crates: &'static [&'static str],
    /// Its HTTP/3 stack: the crates that serve `--protocol h3`, the one that answers the requests
    /// first and QUIC's last ([`Runtime::h3_stack`] names them with their versions), or why it
    /// offers none (said when `--protocol h3` is refused).
    h3: Result<H3Stack, &'static str>,
    serve_one: fn(Mount, usize, &ServerLimits, Shutdown) -> anyhow::Result<()>,
    /// The runtime's own hand-written hello ([`hello`]).
    hello: fn(Listener, usize, &ServerLimits, Shutdown) -> anyhow::Result<()>,
    /// The runtime's request path over in-memory connections, where it can serve one (the
    /// hyper-based runtimes and xitca-web; actix-web and ntex serve sockets only).
    memory: Option<MakeMemoryServer>,
}

/// How a runtime makes its [`MemoryServer`] for an application under limits.
type MakeMemoryServer = fn(Arc<dyn AppHandle>, &ServerLimits) -> MemoryServer;

/// A future that serves one in-memory connection.
type Serving = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// A runtime's server over in-memory connections: the same protocol stack, house rules and
/// limits as on a socket, for fuzzing the request path without the kernel.
pub struct MemoryServer {
    serve: Box<dyn Fn(tokio::io::DuplexStream) -> Serving + Send + Sync>,
}

impl std::fmt::Debug for MemoryServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryServer")
    }
}

impl MemoryServer {
    /// Writes `input` on a fresh connection, ends the client's side, and returns what the server
    /// wrote until it closed the connection; None if it did not close within `limit`. Runs on
    /// `rt` (a current-thread runtime is the fastest).
    pub fn exchange(
        &self,
        rt: &tokio::runtime::Runtime,
        input: &[u8],
        limit: Duration,
    ) -> Option<Vec<u8>> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let serving = (self.serve)(server);
        rt.block_on(async move {
            let task = tokio::spawn(serving);
            let talk = async {
                let (mut read, mut write) = tokio::io::split(&mut client);
                let send = async {
                    let _ = write.write_all(input).await;
                    let _ = write.shutdown().await;
                };
                let mut out = Vec::new();
                let receive = read.read_to_end(&mut out);
                let _ = tokio::join!(send, receive);
                out
            };
            let out = tokio::time::timeout(limit, talk).await.ok();
            task.abort();
            out
        })
    }
}

impl Runtime {
    /// The runtime's server over in-memory connections for `app` under `limits`, if it has one.
    pub fn memory_server(
        &self,
        app: Arc<dyn AppHandle>,
        limits: &ServerLimits,
    ) -> Option<MemoryServer> {
        self.memory.map(|m| m(app, limits))
    }

    /// Whether it can serve over in-memory connections (its request path is a fuzz target).
    pub fn has_memory_server(&self) -> bool {
        self.memory.is_some()
    }
}

include!(concat!(env!("OUT_DIR"), "/registry.rs"));

/// The version `Cargo.lock` resolved for `krate`, one of this crate's dependencies.
pub fn locked_version(krate: &str) -> Option<&'static str> {
    LOCKED.iter().find(|(n, _)| *n == krate).map(|(_, v)| *v)
}

/// The compiled-in runtime called `name`.
pub fn find(name: &str) -> Option<&'static Runtime> {
    RUNTIMES.iter().find(|r| r.name == name)
}

/// The names of the compiled-in runtimes.
pub fn names() -> Vec<&'static str> {
    RUNTIMES.iter().map(|r| r.name).collect()
}

/// How many cores this process may run on.
pub fn available_cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Binds a listener the same way for every runtime: `SO_REUSEADDR`, `TCP_NODELAY`, backlog 1024.
pub fn bind(addr: SocketAddr) -> anyhow::Result<std::net::TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_nodelay(true)?;
    socket
        .bind(&addr.into())
        .with_context(|| format!("Failed to bind {addr}"))?;
    socket.listen(1024)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// What a runtime without HTTP/3 answers `--protocol h3` with (scripts and tests look for it).
pub const H3_NOT_OFFERED: &str = "h3 not offered by this runtime";

/// An HTTP/3 stack ([`Runtime::h3_stack`]): its crates, and the kit's limits it cannot be told.
#[derive(Debug, Clone, Copy)]
pub(crate) struct H3Stack {
    /// The crates, the one that answers the requests first and QUIC's last.
    crates: &'static [&'static str],
    /// The limits of the start-up line's HTTP/3 clause that this stack does not set, in words
    /// (docs/reliability.md, "HTTP/3"); `serve` says them beside that clause.
    unset: &'static [&'static str],
}

impl Runtime {
    /// The HTTP/3 stack that serves `--protocol h3` on this runtime, with the versions this build
    /// resolved, or None where it offers no h3: `h3 0.0.8 + h3-quinn 0.0.10 on quinn 0.11.12` for
    /// the runtimes on hyper's loop (`hyper_loop`), whose QUIC half serves them all alike, each
    /// request handed to the runtime's own service as over HTTP/2; `xitca-http 0.9.6 + h3 0.0.8 +
    /// h3-quinn 0.0.10 on quinn 0.11.12` for xitca-web, through xitca-http's own h3 dispatcher.
    pub fn h3_stack(&self) -> Option<String> {
        let stack = self.h3.ok().filter(|s| !s.crates.is_empty())?;
        let named: Vec<String> = stack
            .crates
            .iter()
            .map(|c| format!("{c} {}", locked_version(c).unwrap_or("(version unknown)")))
            .collect();
        let (quic, above) = named.split_last()?;
        Some(if above.is_empty() {
            quic.clone()
        } else {
            format!("{} on {quic}", above.join(" + "))
        })
    }

    /// Whether it can serve `protocol` (every runtime serves h1, h2c and auto; h3 where
    /// [`Runtime::h3_stack`] names a stack).
    pub fn offers(&self, protocol: brigade_kit::limits::ServeProtocol) -> bool {
        protocol != brigade_kit::limits::ServeProtocol::H3
            || self.h3.is_ok_and(|s| !s.crates.is_empty())
    }

    /// The limits its HTTP/3 stack cannot be told, in words (empty where it sets them all, or
    /// offers no h3): `serve --protocol h3` says them after the limits it announces.
    pub fn h3_unset(&self) -> &'static [&'static str] {
        self.h3.map_or(&[], |s| s.unset)
    }

    /// Refuses limits whose protocol this runtime cannot serve, before anything is bound or
    /// announced: `--protocol h3` on a runtime without HTTP/3 is an error, never HTTP/2 in its place.
    pub fn check_protocol(&self, limits: &ServerLimits) -> anyhow::Result<()> {
        if self.offers(limits.protocol) {
            return Ok(());
        }
        let offering: Vec<&str> = RUNTIMES
            .iter()
            .filter(|r| r.offers(limits.protocol))
            .map(|r| r.name)
            .collect();
        let why = self
            .h3
            .err()
            .map_or(String::new(), |why| format!(": {why}"));
        anyhow::bail!(
            "--protocol {}: {H3_NOT_OFFERED} ({}{why}); it is offered by: {}",
            limits.protocol,
            self.name,
            if offering.is_empty() {
                "none compiled in".to_string()
            } else {
                offering.join(", ")
            }
        )
    }

    /// The crates it is, with the versions this build resolved: `axum 0.8.4 on hyper 1.7.0`.
    pub fn version(&self) -> String {
        let named: Vec<String> = self
            .crates
            .iter()
            .map(|c| format!("{c} {}", locked_version(c).unwrap_or("(version unknown)")))
            .collect();
        named.join(" on ")
    }

    /// Serves every mount until `shutdown` under the default [`ServerLimits`]; see
    /// [`Runtime::serve_with_limits`].
    pub fn serve(
        &'static self,
        mounts: Vec<Mount>,
        workers: usize,
        shutdown: Shutdown,
    ) -> anyhow::Result<()> {
        self.serve_with_limits(mounts, workers, &ServerLimits::default(), shutdown)
    }

    /// Serves every mount until `shutdown` under `limits`, each service on its own `workers`
    /// threads. Blocks. Returns once every server has drained (at most [`GRACE`] after the
    /// shutdown began).
    pub fn serve_with_limits(
        &'static self,
        mounts: Vec<Mount>,
        workers: usize,
        limits: &ServerLimits,
        shutdown: Shutdown,
    ) -> anyhow::Result<()> {
        limits.validate()?;
        self.check_protocol(limits)?;
        let (workers, limits) = (workers.max(1), *limits);
        let threads: Vec<_> = mounts
            .into_iter()
            .map(|m| {
                let sd = shutdown.clone();
                let name = format!("{}-{}", self.name, m.app.name());
                std::thread::Builder::new()
                    .name(name)
                    .spawn(move || (self.serve_one)(m, workers, &limits, sd))
            })
            .collect::<Result<_, _>>()?;
        let mut first_error = None;
        for t in threads {
            let r = t
                .join()
                .map_err(|_| anyhow::anyhow!("a server thread panicked"))
                .and_then(|r| r);
            if let Err(e) = r {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// Runs `server` on a multi-threaded tokio runtime with `workers` workers, giving it at most
/// [`GRACE`] to drain once `shutdown` fires. Shared by the tokio-based adapters.
#[cfg(feature = "hyper-loop")]
fn run_on_tokio<F>(workers: usize, shutdown: Shutdown, server: F) -> anyhow::Result<()>
where
    F: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("brigade-worker")
        .enable_all()
        .build()?;
    rt.block_on(async move {
        tokio::select! {
            r = server => r,
            _ = async { shutdown.wait().await; tokio::time::sleep(GRACE).await } => {
                tracing::warn!("requests still running {GRACE:?} after shutdown; dropping them");
                Ok(())
            }
        }
    })
}

#[cfg(any(feature = "hyper-loop", feature = "xitca"))]
content_type_values!(http::HeaderValue);

/// The kit's request from an `http` 1 request's raw path (the kit takes the path parameters from
/// it), query and headers (every hyper-based runtime uses these types).
#[cfg(feature = "hyper-loop")]
fn request_from(
    path: &str,
    query: Option<&str>,
    headers: &http::HeaderMap,
    body: bytes::Bytes,
) -> brigade_kit::Request {
    brigade_kit::Request {
        path: path.to_string(),
        params: Vec::new(),
        query: query.map(str::to_string),
        content_type: header_text(headers, &http::header::CONTENT_TYPE),
        body,
        traceparent: header_text(headers, &TRACEPARENT),
        budget: header_text(headers, &BUDGET),
    }
}

/// The caller's budget header ([`brigade_kit::deadline::BUDGET_HEADER`]), parsed once (every
/// runtime on `http` 1's types: the hyper-based ones and xitca-web).
#[cfg(any(feature = "hyper-loop", feature = "xitca"))]
const BUDGET: http::HeaderName =
    http::HeaderName::from_static(brigade_kit::deadline::BUDGET_HEADER);

/// The W3C trace context header, parsed once (a lookup by `&str` parses the name on every request).
#[cfg(any(feature = "hyper-loop", feature = "xitca"))]
const TRACEPARENT: http::HeaderName = http::HeaderName::from_static("traceparent");

/// A header's value as text, if present and ASCII.
#[cfg(feature = "hyper-loop")]
fn header_text(headers: &http::HeaderMap, name: &http::HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// The `Content-Length` a request announced, if any and well-formed.
#[cfg(feature = "hyper-loop")]
#[allow(dead_code)] // the runtimes whose body type gives no size hint (poem, warp) read it
fn content_length(headers: &http::HeaderMap) -> Option<u64> {
    headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use brigade_kit::limits::ServeProtocol;

    #[test]
    fn every_runtime_names_its_h3_stack_on_quinn_or_says_why_it_has_none() {
        let h3 = ServerLimits {
            protocol: ServeProtocol::H3,
            ..ServerLimits::default()
        };
        for runtime in RUNTIMES {
            match runtime.h3 {
                Ok(_) => {
                    let stack = runtime.h3_stack().expect("a stack");
                    assert!(
                        stack.contains(" on quinn ") && !stack.contains("unknown"),
                        "{}: {stack}",
                        runtime.name
                    );
                    assert!(runtime.check_protocol(&h3).is_ok(), "{}", runtime.name);
                }
                Err(why) => {
                    assert_eq!(runtime.h3_stack(), None, "{}", runtime.name);
                    let refused = runtime.check_protocol(&h3).unwrap_err().to_string();
                    assert!(
                        refused.contains(H3_NOT_OFFERED) && refused.contains(why),
                        "{}: {refused}",
                        runtime.name
                    );
                }
            }
        }
    }
}
