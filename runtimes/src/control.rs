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

use std::sync::Arc;

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
}

/// Serves runtime `name`'s control server until the process is stopped. Blocks.
pub fn serve_control(name: &str, control: Control) -> anyhow::Result<()> {
    let Some(runtime) = crate::find(name) else {
        anyhow::bail!("no control server for runtime {name:?} in this binary");
    };
    (runtime.control)(control)
}

/// The answer to a body read on [`ECHO_PATH`]: its length in decimal.
#[allow(dead_code)] // a build with none of the runtimes
pub(crate) fn echo_answer(length: usize) -> String {
    length.to_string()
}

/// Runs `server` on a tokio multi-thread runtime with one worker, the threading of every
/// tokio-based control.
#[cfg(feature = "hyper-loop")]
pub(crate) fn on_one_worker<F>(server: F) -> anyhow::Result<()>
where
    F: std::future::Future<Output = anyhow::Result<()>>,
{
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("brigade-control")
        .enable_all()
        .build()?
        .block_on(server)
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
