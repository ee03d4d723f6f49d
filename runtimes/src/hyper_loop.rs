//! The server the hyper-based adapters (axum, hyper, warp, salvo, poem) share: one accept loop
//! with the connection limit, TLS through one tokio-rustls acceptor (the kit's configuration,
//! [`brigade_kit::tls`]), hyper-util's auto builder set from the [`ServerLimits`] for HTTP/1.1,
//! HTTP/2 or both, and a thin guard in front of the runtime's service that applies the kit's
//! house rules and head limits and answers `HEAD` as `GET`.
//!
//! `axum::serve` and `warp::serve` expose no hyper builder, so their adapters hand their router or
//! filter, as a service, to this loop, as the hyper adapter does: the protocol stack and every
//! limit are then the same code. What hyper does itself: the HTTP/1.1 head timer
//! (`header_read_timeout`, which also bounds the wait for the next request on a kept-alive
//! connection, so it is set to the smaller of the head and keep-alive limits), a backstop on a
//! head's bytes at actix-web's fixed 128 KiB (its own bare 431 past it), the HTTP/2 settings
//! ([`brigade_kit::limits::Http2Settings`]: streams, windows, header list; adaptive windows off,
//! as on actix-web), and `HEAD` answers without the body a `GET` would get.
//!
//! Which protocol a connection speaks: on plaintext, `--protocol` (h1: HTTP/1.1 only; h2c: HTTP/2
//! only, by prior knowledge; auto: hyper-util tells them apart by the connection's first bytes);
//! under TLS, what ALPN chose (`h2` → HTTP/2, anything else → HTTP/1.1). A TLS handshake must end
//! within the header read limit, as a request head must, so a client that stalls its handshake
//! (slowloris on TLS) holds its connection no longer than one that stalls its head.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use brigade_kit::limits::{
    ConnectionGate, ConnectionPermit, ServerLimits, RUNTIME_MAX_HEADER_BYTES,
};
use brigade_kit::rules::{Admitted, Refused};
use bytes::Bytes;
use futures::future::{Either as EitherFuture, Ready};
use http::{header, HeaderValue, Method, Request, Response, StatusCode, Version};
use http_body_util::{Either, Full};
use hyper::body::{Body, Incoming};
use hyper::service::Service;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;

use brigade_kit::limits::ServeProtocol;

use crate::{run_on_tokio, Listener, Shutdown};

/// The error type hyper's builders hand back.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

mod quic;

/// The HTTP/3 stack of every runtime on this loop ([`crate::Runtime::h3_stack`]): `h3` over
/// `h3-quinn` on quinn ([`quic`]), every limit set.
pub(crate) const H3_STACK: crate::runtime::H3Stack = crate::runtime::H3Stack {
    crates: &["h3", "h3-quinn", "quinn"],
    unset: &[],
};

/// A request's body as the runtime's service sees it: hyper's own over HTTP/1.1 and HTTP/2, the
/// request stream's over HTTP/3 ([`quic`]). One type for both, so a runtime's service is one value
/// whatever the protocol (the adapters name this type where they named hyper's `Incoming`); on
/// hyper's path it costs a match per body poll.
pub(crate) enum RequestBody {
    /// HTTP/1.1 or HTTP/2: hyper's body.
    Http(Incoming),
    /// HTTP/3: the request stream's receiving half.
    Quic(quic::QuicBody),
}

impl From<Incoming> for RequestBody {
    fn from(body: Incoming) -> RequestBody {
        RequestBody::Http(body)
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            RequestBody::Http(body) => Pin::new(body).poll_frame(cx).map_err(Into::into),
            RequestBody::Quic(body) => Pin::new(body).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            RequestBody::Http(body) => body.is_end_stream(),
            RequestBody::Quic(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        match self {
            RequestBody::Http(body) => body.size_hint(),
            RequestBody::Quic(body) => body.size_hint(),
        }
    }
}

/// A runtime's service as the loop serves it: what hyper's builders ask of a service run on a
/// connection task of its own (its answers' body, its error and its future sendable), named once.
pub(crate) trait Served:
    Service<
        Request<RequestBody>,
        Response = Response<Self::Answer>,
        Error: Into<BoxError> + Send + 'static,
        Future: Send + 'static,
    > + Send
    + 'static
{
    /// The body of its answers.
    type Answer: Body<Data = Bytes, Error: Into<BoxError>> + Send + 'static;
}

impl<S, B> Served for S
where
    S: Service<Request<RequestBody>, Response = Response<B>> + Send + 'static,
    S::Error: Into<BoxError> + Send + 'static,
    S::Future: Send + 'static,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Answer = B;
}

/// A response of the guarded service: the runtime's own, or the guard's error.
type Guarded<B> = Response<Either<B, Full<Bytes>>>;

/// The runtime's service behind the kit's house rules ([`brigade_kit::rules`]: the head limits,
/// the rules where runtimes differ, `Connection: close` where they say so) and `HEAD` handling.
#[derive(Clone)]
struct Guard<S> {
    inner: S,
    limits: ServerLimits,
    /// Set once the server drains: every answer from then on closes its connection.
    draining: Arc<AtomicBool>,
    /// Under `--protocol h3`, on TCP: the `Alt-Svc` every answer carries (HTTP/3 on this port),
    /// so a client that speaks QUIC (a browser, curl) finds it.
    alt_svc: Option<HeaderValue>,
}

/// The kit's error as a bare hyper response (the guard answers before any runtime code runs).
fn error_response<B>(refused: Refused) -> Guarded<B> {
    let reply = refused.error.to_reply();
    let mut resp = Response::new(Either::Right(Full::new(reply.body)));
    *resp.status_mut() = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::BAD_REQUEST);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        crate::head::content_type_value(reply.content_type),
    );
    if refused.close {
        resp.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    resp
}

pin_project_lite::pin_project! {
    /// The runtime's answer, with `Connection: close` added where the rules close the connection
    /// after it (hyper then closes it once the answer is written).
    struct Answer<F> {
        #[pin]
        inner: F,
        admitted: Admitted,
        alt_svc: Option<HeaderValue>,
        // A `HEAD` over HTTP/2, served as a `GET`: the answer goes without its body (hyper's
        // HTTP/2 server, unlike its HTTP/1.1 one, would send the body of the `GET` it saw).
        bodiless: bool,
    }
}

impl<F, B: Body, E> Future for Answer<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Guarded<B>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let (admitted, bodiless) = (*this.admitted, *this.bodiless);
        this.inner.poll(cx).map(|r| {
            r.map(|resp| {
                let mut resp = if bodiless {
                    // The length the `GET` would have had, as a `HEAD` answer tells it.
                    let length = resp.body().size_hint().exact();
                    let mut resp = resp.map(|_| Either::Right(Full::new(Bytes::new())));
                    if let Some(n) =
                        length.filter(|_| !resp.headers().contains_key(header::CONTENT_LENGTH))
                    {
                        resp.headers_mut()
                            .insert(header::CONTENT_LENGTH, HeaderValue::from(n));
                    }
                    resp
                } else {
                    resp.map(Either::Left)
                };
                if admitted.closes_after(resp.status().as_u16()) {
                    resp.headers_mut()
                        .insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
                if let Some(alt_svc) = this.alt_svc.take() {
                    resp.headers_mut().insert(header::ALT_SVC, alt_svc);
                }
                resp
            })
        })
    }
}

impl<S, B, In> Service<Request<In>> for Guard<S>
where
    S: Service<Request<RequestBody>, Response = Response<B>>,
    B: Body,
    In: Into<RequestBody>,
{
    type Response = Guarded<B>;
    type Error = S::Error;
    type Future = EitherFuture<Ready<Result<Guarded<B>, S::Error>>, Answer<S::Future>>;

    fn call(&self, mut req: Request<In>) -> Self::Future {
        let http2 = req.version() >= Version::HTTP_2;
        let admitted = match crate::house::admit(&self.limits, &mut req) {
            // (An HTTP/2 connection is drained by its GOAWAY, which the graceful shutdown sends.)
            Ok(a) if !http2 && self.draining.load(Ordering::Relaxed) => {
                Admitted { close: true, ..a }
            }
            Ok(a) => a,
            Err(refused) => {
                return EitherFuture::Left(futures::future::ready(Ok(error_response(refused))))
            }
        };
        let head = req.method() == Method::HEAD;
        if head {
            // RFC 9110: HEAD is answered for every GET route; over HTTP/1.1 hyper leaves the body
            // out because the request it parsed was a HEAD, over HTTP/2 the answer drops it.
            *req.method_mut() = Method::GET;
        }
        EitherFuture::Right(Answer {
            inner: self.inner.call(req.map(Into::into)),
            admitted,
            alt_svc: self.alt_svc.clone(),
            bodiless: head && http2,
        })
    }
}

/// The first pause after a failed accept.
const ACCEPT_PAUSE_MIN: std::time::Duration = std::time::Duration::from_millis(5);
/// The longest pause between failed accepts.
const ACCEPT_PAUSE_MAX: std::time::Duration = std::time::Duration::from_secs(1);

/// The pause after `pause` when accepting fails again: twice as long, at most a second.
fn next_pause(pause: std::time::Duration) -> std::time::Duration {
    (pause * 2).min(ACCEPT_PAUSE_MAX)
}

/// hyper's HTTP/1.1 connection builder, set from `limits` (the in-memory server's).
fn builder(limits: &ServerLimits) -> hyper::server::conn::http1::Builder {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout.min(limits.keep_alive_timeout))
        .max_header_size(RUNTIME_MAX_HEADER_BYTES);
    builder
}

/// The same HTTP/1.1 stack as [`serve`] (builder, house rules, limits) over in-memory
/// connections, each with the service `make` gives it.
pub(crate) fn memory_server<M, S>(make: M, limits: &ServerLimits) -> crate::MemoryServer
where
    M: Fn() -> S + Send + Sync + 'static,
    S: Served,
{
    let limits = *limits;
    let mut builder = builder(&limits);
    // The in-memory client ends its side once its bytes are written; the server still answers
    // every request it read (on a socket hyper's default applies: such a request is dropped).
    builder.half_close(true);
    let draining = Arc::new(AtomicBool::new(false));
    crate::MemoryServer {
        serve: Box::new(move |io| {
            let guard = Guard {
                inner: make(),
                limits,
                draining: draining.clone(),
                alt_svc: None,
            };
            let conn = builder.serve_connection(TokioIo::new(io), guard);
            Box::pin(async move {
                let _ = conn.await;
            })
        }),
    }
}

/// The connection builders a server needs, set from its limits: hyper's own for HTTP/1.1 and for
/// HTTP/2, and hyper-util's auto builder (which tells them apart by the first bytes) with both.
struct Builders {
    h1: hyper::server::conn::http1::Builder,
    h2: hyper::server::conn::http2::Builder<TokioExecutor>,
    auto: auto::Builder<TokioExecutor>,
}

/// Which builder serves a connection.
#[derive(Clone, Copy)]
enum Speaks {
    Http1,
    Http2,
    Either,
}

impl Builders {
    fn new(limits: &ServerLimits) -> Builders {
        // hyper's HTTP/2 builder and the auto builder's HTTP/2 half are two types with the
        // same setters: one list of settings for both.
        macro_rules! http2_settings {
            ($builder:expr) => {{
                let h2 = &limits.http2;
                $builder
                    .timer(TokioTimer::new())
                    .max_concurrent_streams(h2.max_concurrent_streams)
                    .initial_stream_window_size(h2.initial_stream_window)
                    .initial_connection_window_size(h2.initial_connection_window)
                    .adaptive_window(false)
                    .max_header_list_size(h2.max_header_list_bytes);
            }};
        }
        let mut http2 = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
        http2_settings!(http2);
        let mut auto = auto::Builder::new(TokioExecutor::new());
        auto.http1()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout.min(limits.keep_alive_timeout))
            .max_buf_size(RUNTIME_MAX_HEADER_BYTES);
        http2_settings!(auto.http2());
        Builders {
            h1: builder(limits),
            h2: http2,
            auto,
        }
    }

    /// Serves one connection on `io` as `speaks` says, watched by the graceful shutdown.
    async fn serve<I, S>(
        &self,
        speaks: Speaks,
        io: I,
        guard: Guard<S>,
        watcher: hyper_util::server::graceful::Watcher,
    ) -> Result<(), BoxError>
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
        S: Served,
    {
        let io = TokioIo::new(io);
        match speaks {
            Speaks::Http1 => Ok(watcher.watch(self.h1.serve_connection(io, guard)).await?),
            Speaks::Http2 => Ok(watcher.watch(self.h2.serve_connection(io, guard)).await?),
            Speaks::Either => watcher.watch(self.auto.serve_connection(io, guard)).await,
        }
    }
}

impl Speaks {
    /// What a plaintext connection speaks under `protocol`.
    fn plain(protocol: ServeProtocol) -> Speaks {
        match protocol {
            ServeProtocol::H1 => Speaks::Http1,
            ServeProtocol::H2c => Speaks::Http2,
            ServeProtocol::Auto => Speaks::Either,
            // (h3 is served under TLS only, ALPN choosing on TCP: never reached.)
            ServeProtocol::H3 => Speaks::Either,
        }
    }

    /// What a TLS connection whose ALPN chose `alpn` speaks.
    fn negotiated(alpn: Option<&[u8]>) -> Speaks {
        if alpn == Some(b"h2") {
            Speaks::Http2
        } else {
            Speaks::Http1
        }
    }
}

/// The next accepted connection, or `None` once `stop` is done. An accept error (out of files, or
/// another) pauses before the next accept, each pause twice the last up to a second, as hyper-util
/// and tokio's examples do, so that a full file table does not spin a core.
async fn next_connection(
    listener: &tokio::net::TcpListener,
    stop: &mut (impl std::future::Future<Output = ()> + Unpin),
) -> Option<tokio::net::TcpStream> {
    let mut pause = ACCEPT_PAUSE_MIN;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut *stop => return None,
        };
        match accepted {
            Ok((stream, _)) => return Some(stream),
            Err(e) => {
                tracing::warn!(error = %e, pause_ms = pause.as_millis() as u64, "accept failed");
                brigade_kit::observe::accept_failed();
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = &mut *stop => return None,
                }
                pause = next_pause(pause);
            }
        }
    }
}

/// Serves under `limits` with Brigade's threading and shutdown, on plaintext or TLS as `listener`
/// says, each connection with the service `make` gives it (a clone of one service, or salvo's
/// handler that carries the connection's own state): at most `limits.max_connections`
/// connections at once (one more is accepted and closed at once, before any TLS).
pub(crate) fn serve<M, S>(
    make: M,
    listener: Listener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()>
where
    M: Fn() -> S + Send + Sync + 'static,
    S: Served,
{
    let limits = *limits;
    let Listener { socket, tls } = listener;
    let make = Arc::new(make);
    run_on_tokio(workers, shutdown.clone(), async move {
        let listener = tokio::net::TcpListener::from_std(socket)?;
        let builders = Arc::new(Builders::new(&limits));
        let gate = ConnectionGate::new(limits.max_connections);
        // `--protocol h3`: QUIC on the same port number, beside TLS on TCP ([`quic`]), one
        // connection count for both.
        let (quic, alt_svc) = match (&tls, limits.protocol) {
            (Some(tls), ServeProtocol::H3) => {
                let addr = listener.local_addr()?;
                let (serving, alt_svc) = quic::start(
                    addr,
                    tls,
                    make.clone(),
                    limits,
                    gate.clone(),
                    shutdown.clone(),
                )?;
                (Some(serving), alt_svc)
            }
            _ => (None, None),
        };
        let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
        let graceful = GracefulShutdown::new();
        let draining = Arc::new(AtomicBool::new(false));
        let stop = shutdown.wait();
        tokio::pin!(stop);
        while let Some(stream) = next_connection(&listener, &mut stop).await {
            let Some(permit) = gate.try_enter() else {
                // Past the connection limit: closed at once, before any byte is read.
                drop(stream);
                continue;
            };
            let guard = Guard {
                inner: (*make)(),
                limits,
                draining: draining.clone(),
                alt_svc: alt_svc.clone(),
            };
            tokio::spawn(serve_connection(
                stream,
                acceptor.clone(),
                builders.clone(),
                guard,
                graceful.watcher(),
                permit,
            ));
        }
        // The drain (docs/reliability.md): no new connection from here on; for a short window
        // every HTTP/1.1 answer carries `Connection: close`, so a client that honours it closes
        // each connection after the answer to a request it has sent, and none is closed under a
        // request it is writing; then what is left (idle, or still running) is shut gracefully
        // (HTTP/2 connections get their GOAWAY then).
        drop(listener);
        draining.store(true, Ordering::Relaxed);
        crate::drain(|| gate.open()).await;
        graceful.shutdown().await;
        if let Some(quic) = quic {
            let _ = quic.await;
        }
        Ok(())
    })
}

/// Serves one accepted connection: the TLS handshake first where there is one (within the
/// header-read timeout), then HTTP as the listener or the ALPN says; `permit` is held until the
/// connection ends.
async fn serve_connection<S: Served>(
    stream: tokio::net::TcpStream,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    builders: Arc<Builders>,
    guard: Guard<S>,
    watcher: hyper_util::server::graceful::Watcher,
    permit: ConnectionPermit,
) {
    let limits = guard.limits;
    let served = match acceptor {
        None => {
            let speaks = Speaks::plain(limits.protocol);
            builders.serve(speaks, stream, guard, watcher).await
        }
        Some(acceptor) => {
            let handshake = acceptor.accept(stream);
            let Ok(Ok(tls)) = tokio::time::timeout(limits.header_read_timeout, handshake).await
            else {
                // A handshake that failed or did not end in time: nothing to answer.
                return;
            };
            let speaks = Speaks::negotiated(tls.get_ref().1.alpn_protocol());
            builders.serve(speaks, tls, guard, watcher).await
        }
    };
    if let Err(e) = served {
        tracing::debug!(error = %e, "connection ended with an error");
    }
    drop(permit);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_accepts_pause_twice_as_long_each_time_up_to_a_second() {
        let mut pause = ACCEPT_PAUSE_MIN;
        let mut pauses = vec![pause];
        for _ in 0..12 {
            pause = next_pause(pause);
            pauses.push(pause);
        }
        assert_eq!(pauses[1], ACCEPT_PAUSE_MIN * 2);
        assert!(pauses.windows(2).all(|w| w[1] >= w[0]));
        assert_eq!(*pauses.last().unwrap(), ACCEPT_PAUSE_MAX);
    }
}
