//! Control servers, one per runtime (each runtime module's `control`): the runtime's own minimal
//! server, with its own protocol set-up and defaults and no kit layer in front — no house rules,
//! no head or body limits of the kit's, no connection gate, and for the hyper-based runtimes not
//! the shared `hyper_loop` but hyper's or the framework's own serve path. `brigade study
//! conformance` runs each suite through Brigade and through the runtime's control: a case that
//! fails on both is the runtime's, one that fails only through Brigade is Brigade's.
//!
//! Every control answers two routes, so a suite can say whether a case saw the body read:
//! [`ECHO_PATH`] reads the whole request body (any method) and answers its length, every other
//! path answers [`CONTROL_BODY`] without reading the body. A plaintext listener serves HTTP/1.1
//! and HTTP/2 by prior knowledge (h2c), told apart by the runtime's own server (ntex alone cannot:
//! its control picks ntex's h1 or h2 service by the connection's first bytes, the one piece of
//! non-framework code in any control, `ntex.rs` says how); under TLS, the kit's rustls configuration ([`brigade_kit::tls`], ALPN `h2,
//! http/1.1`), so TLS itself is the same as through Brigade and only the HTTP stack differs. A
//! control runs on one worker thread (where the runtime asks how many) until its process is
//! stopped; every limit and timeout is the runtime's default.
//!
//! HTTP/3, on the six runtimes that offer it, is served on the TLS listener's port number over
//! UDP when the control is asked for it ([`Control::bind`]): for the hyper-based runtimes, which
//! serve h3 through the `h3` crate that Brigade mounts (no framework here has an h3 of its own
//! that Brigade serves on), the `h3` crate's own serving loop ([`http3`]); for xitca-web, xitca-http's
//! own h3 dispatcher in front of the same control application. quinn at its defaults, the kit's
//! TLS with ALPN `h3`.

use std::net::SocketAddr;
use std::sync::Arc;

#[cfg(feature = "hyper-loop")]
mod http3;

/// The route that reads the whole request body and answers its length in decimal.
pub const ECHO_PATH: &str = "/echo";
/// What every other path answers (200, `text/plain`), the body left unread.
pub const CONTROL_BODY: &str = "ok";

/// What a control server is handed.
pub struct Control {
    /// Where it listens (bound with [`crate::bind`]).
    pub listener: std::net::TcpListener,
    /// TLS with the kit's configuration, or None for plaintext (HTTP/1.1 and h2c).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// HTTP/3's UDP socket, on the listener's port number, where HTTP/3 is asked for.
    quic: Option<std::net::UdpSocket>,
    /// The runtime whose control it is.
    runtime: &'static crate::Runtime,
}

impl Control {
    /// The sockets of runtime `name`'s control on `addr`: its TCP listener and, with `h3` (which
    /// needs `tls`), a UDP socket on the port the listener got. HTTP/3 asked of a runtime that
    /// offers none is refused, as `serve --protocol h3` is.
    pub fn bind(
        name: &str,
        addr: SocketAddr,
        tls: Option<Arc<rustls::ServerConfig>>,
        h3: bool,
    ) -> anyhow::Result<Control> {
        let Some(runtime) = crate::find(name) else {
            anyhow::bail!("no control server for runtime {name:?} in this binary");
        };
        if h3 && runtime.h3_stack().is_none() {
            anyhow::bail!("{name}: {}", crate::H3_NOT_OFFERED);
        }
        let listener = crate::bind(addr)?;
        let quic = if h3 {
            anyhow::ensure!(tls.is_some(), "HTTP/3 is served under TLS only");
            let udp = SocketAddr::new(addr.ip(), listener.local_addr()?.port());
            let socket = std::net::UdpSocket::bind(udp)
                .map_err(|e| anyhow::anyhow!("Failed to bind UDP {udp} for QUIC: {e}"))?;
            socket.set_nonblocking(true)?;
            Some(socket)
        } else {
            None
        };
        Ok(Control {
            listener,
            tls,
            quic,
            runtime,
        })
    }

    /// Serves the control until the process is stopped. Blocks.
    pub fn serve(self) -> anyhow::Result<()> {
        (self.runtime.control)(self)
    }

    /// HTTP/3's socket and TLS, taken from the control (where asked for).
    #[allow(dead_code)] // a build with no runtime that offers h3
    pub(crate) fn take_h3(&mut self) -> Option<(std::net::UdpSocket, Arc<rustls::ServerConfig>)> {
        Some((self.quic.take()?, self.tls.clone()?))
    }
}

/// The QUIC endpoint configuration of every control that serves HTTP/3: quinn's defaults, the
/// kit's TLS as the TCP side has it with ALPN `h3` instead.
#[cfg(any(feature = "hyper-loop", feature = "xitca"))]
pub(crate) fn quic_config(tls: &rustls::ServerConfig) -> anyhow::Result<quinn::ServerConfig> {
    let mut tls = tls.clone();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
        .map_err(|e| anyhow::anyhow!("the TLS configuration cannot serve QUIC: {e}"))?;
    Ok(quinn::ServerConfig::with_crypto(Arc::new(crypto)))
}

/// The answer to a body read on [`ECHO_PATH`]: its length in decimal.
#[allow(dead_code)] // a build with none of the runtimes
pub(crate) fn echo_answer(length: usize) -> String {
    length.to_string()
}

/// Runs `server` on a tokio multi-thread runtime with one worker, the threading of every
/// tokio-based control, with HTTP/3 beside it where `c` asks for it (the `h3` crate's own loop,
/// [`http3`]); `server` is handed what is left of `c`.
#[cfg(feature = "hyper-loop")]
pub(crate) fn on_one_worker<F, S>(mut c: Control, server: S) -> anyhow::Result<()>
where
    S: FnOnce(Control) -> F,
    F: std::future::Future<Output = anyhow::Result<()>>,
{
    let quic = c.take_h3();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("brigade-control")
        .enable_all()
        .build()?;
    if let Some((socket, tls)) = quic {
        let endpoint = {
            let _entered = runtime.enter();
            http3::endpoint(socket, &tls)?
        };
        runtime.spawn(http3::serve(endpoint));
    }
    runtime.block_on(server(c))
}

/// Serves `service` on `control`'s listener the way hyper's own examples do, every setting at
/// hyper's defaults: one task per connection, hyper-util's auto builder (HTTP/1.1, or HTTP/2 when
/// the connection opens with its preface: h2c by prior knowledge on plaintext, what ALPN chose
/// under TLS), under TLS on a tokio-rustls stream (hyper-rustls's example server, axum's
/// `low-level-rustls` example). `upgrades` serves with `serve_connection_with_upgrades`, as
/// `axum::serve` and `warp::serve` do, else with hyper's plain `serve_connection`.
#[cfg(feature = "hyper-loop")]
pub(crate) async fn serve_hyper_util<S, B>(
    control: Control,
    service: S,
    upgrades: bool,
) -> anyhow::Result<()>
where
    S: hyper::service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<B>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto::Builder;

    /// One connection on `io`, to its end; its error is the connection's own, so only logged.
    async fn connection<I, S, B>(io: I, service: S, upgrades: bool)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
        S: hyper::service::Service<
                http::Request<hyper::body::Incoming>,
                Response = http::Response<B>,
            > + Send
            + 'static,
        S::Future: Send + 'static,
        S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
        B: hyper::body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let builder = Builder::new(TokioExecutor::new());
        let served = if upgrades {
            builder
                .serve_connection_with_upgrades(TokioIo::new(io), service)
                .await
        } else {
            builder.serve_connection(TokioIo::new(io), service).await
        };
        if let Err(e) = served {
            tracing::debug!(error = %e, "control connection ended with an error");
        }
    }

    let listener = tokio::net::TcpListener::from_std(control.listener)?;
    let acceptor = control.tls.map(tokio_rustls::TlsAcceptor::from);
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of descriptors, say: wait for some to close rather than spin.
                tracing::warn!(error = %e, "control accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let (service, acceptor) = (service.clone(), acceptor.clone());
        tokio::spawn(async move {
            match acceptor {
                None => connection(stream, service, upgrades).await,
                Some(acceptor) => match acceptor.accept(stream).await {
                    Ok(tls) => connection(tls, service, upgrades).await,
                    Err(e) => tracing::debug!(error = %e, "control TLS handshake failed"),
                },
            }
        });
    }
}
