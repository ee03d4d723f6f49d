//! The HTTP/1.1 server the hyper-based adapters (axum, hyper, warp) share: one accept loop with the
//! connection limit, hyper's own `http1::Builder` set from the [`ServerLimits`], and a thin guard in
//! front of the runtime's service that applies the kit's head limits and answers `HEAD` as `GET`.
//!
//! `axum::serve` and `warp::serve` expose no hyper builder (and serve through hyper-util's auto
//! HTTP/1 + HTTP/2 builder), so their adapters hand their router or filter, as a service, to this
//! loop, as the hyper adapter does: the protocol stack and every limit are then the same code.
//! What hyper does itself: the head timer (`header_read_timeout`, which also bounds the wait for
//! the next request on a kept-alive connection, so it is set to the smaller of the head and
//! keep-alive limits) and a backstop on a head's bytes at actix-web's fixed 128 KiB (its own bare
//! 431 past it); hyper answers a `HEAD` without the body it would send a `GET`.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use brigade_kit::limits::{ConnectionGate, ServerLimits, RUNTIME_MAX_HEADER_BYTES};
use brigade_kit::rules::{self, Admitted, Refused};
use bytes::Bytes;
use futures::future::{Either as EitherFuture, Ready};
use http::{header, HeaderValue, Method, Request, Response, StatusCode, Version};
use http_body_util::{Either, Full};
use hyper::body::{Body, Incoming};
use hyper::service::Service;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;

use crate::{run_on_tokio, Shutdown};

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
}

/// The kit's error as a bare hyper response (the guard answers before any runtime code runs).
fn error_response<B>(refused: Refused) -> Guarded<B> {
    let reply = refused.error.to_reply();
    let mut resp = Response::new(Either::Right(Full::new(reply.body)));
    *resp.status_mut() = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::BAD_REQUEST);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        crate::content_type_value(reply.content_type),
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
    }
}

impl<F, B, E> Future for Answer<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Guarded<B>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let admitted = *this.admitted;
        this.inner.poll(cx).map(|r| {
            r.map(|resp| {
                let mut resp = resp.map(Either::Left);
                if admitted.closes_after(resp.status().as_u16()) {
                    resp.headers_mut()
                        .insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
                resp
            })
        })
    }
}

impl<S, B> Service<Request<Incoming>> for Guard<S>
where
    S: Service<Request<Incoming>, Response = Response<B>>,
{
    type Response = Guarded<B>;
    type Error = S::Error;
    type Future = EitherFuture<Ready<Result<Guarded<B>, S::Error>>, Answer<S::Future>>;

    fn call(&self, mut req: Request<Incoming>) -> Self::Future {
        let target = req.uri().path_and_query().map_or("", |p| p.as_str());
        let headers = || {
            req.headers()
                .iter()
                .map(|(k, v)| (k.as_str().as_bytes(), v.as_bytes()))
        };
        let version = if req.version() <= Version::HTTP_10 {
            rules::Version::Http10
        } else {
            rules::Version::Http11
        };
        let admitted = match rules::admit(
            &self.limits,
            req.method().as_str(),
            target,
            version,
            headers,
        ) {
            Ok(a) if self.draining.load(Ordering::Relaxed) => Admitted { close: true, ..a },
            Ok(a) => a,
            Err(refused) => {
                return EitherFuture::Left(futures::future::ready(Ok(error_response(refused))))
            }
        };
        if let Some(path) = rules::normalize_path(req.uri().path()) {
            // `/he%61lth` routes as `/health` on every runtime (some routers unescape, some not).
            let query = req.uri().query().map_or(String::new(), |q| format!("?{q}"));
            if let Ok(uri) = format!("{path}{query}").parse() {
                *req.uri_mut() = uri;
            }
        }
        if req.method() == Method::HEAD {
            // RFC 9110: HEAD is answered for every GET route; hyper leaves the body out because
            // the request it parsed was a HEAD.
            *req.method_mut() = Method::GET;
        }
        EitherFuture::Right(Answer {
            inner: self.inner.call(req),
            admitted,
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

/// hyper's HTTP/1.1 connection builder, set from `limits`.
fn builder(limits: &ServerLimits) -> hyper::server::conn::http1::Builder {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout.min(limits.keep_alive_timeout))
        .max_header_size(RUNTIME_MAX_HEADER_BYTES);
    builder
}

/// The same HTTP/1.1 stack as [`serve_http1`] (builder, house rules, limits) over in-memory
/// connections, each with the service `make` gives it.
pub(crate) fn memory_server<M, S, B>(make: M, limits: &ServerLimits) -> crate::MemoryServer
where
    M: Fn() -> S + Send + Sync + 'static,
    S: Service<Request<Incoming>, Response = Response<B>> + Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>> + Send + 'static,
    S::Future: Send + 'static,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
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
            };
            let conn = builder.serve_connection(TokioIo::new(io), guard);
            Box::pin(async move {
                let _ = conn.await;
            })
        }),
    }
}

/// Serves over HTTP/1.1 under `limits` with Brigade's threading and shutdown, each connection with
/// the service `make` gives it (a clone of one service, or salvo's handler that carries the
/// connection's own state): at most `limits.max_connections` connections at once (one more is
/// accepted and closed at once).
pub(crate) fn serve_http1<M, S, B>(
    make: M,
    listener: std::net::TcpListener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()>
where
    M: Fn() -> S + Send + 'static,
    S: Service<Request<Incoming>, Response = Response<B>> + Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>> + Send + 'static,
    S::Future: Send + 'static,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let limits = *limits;
    run_on_tokio(workers, shutdown.clone(), async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let builder = builder(&limits);
        let gate = ConnectionGate::new(limits.max_connections);
        let graceful = GracefulShutdown::new();
        let draining = Arc::new(AtomicBool::new(false));
        let stop = shutdown.wait();
        tokio::pin!(stop);
        let mut pause = ACCEPT_PAUSE_MIN;
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                _ = &mut stop => break,
            };
            let stream = match accepted {
                Ok((stream, _)) => {
                    pause = ACCEPT_PAUSE_MIN;
                    stream
                }
                Err(e) => {
                    // Out of files (or another accept error): pause before the next accept, each
                    // pause twice the last up to a second, as hyper-util and tokio's examples do,
                    // so that a full file table does not spin a core.
                    tracing::warn!(error = %e, pause_ms = pause.as_millis() as u64, "accept failed");
                    brigade_kit::observe::accept_failed();
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => {}
                        _ = &mut stop => break,
                    }
                    pause = next_pause(pause);
                    continue;
                }
            };
            let Some(permit) = gate.try_enter() else {
                // Past the connection limit: closed at once, before any byte is read.
                drop(stream);
                continue;
            };
            let guard = Guard {
                inner: make(),
                limits,
                draining: draining.clone(),
            };
            let conn = graceful.watch(builder.serve_connection(TokioIo::new(stream), guard));
            tokio::spawn(async move {
                if let Err(e) = conn.await {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                drop(permit);
            });
        }
        // The drain (docs/reliability.md): no new connection from here on; for a short window
        // every answer carries `Connection: close`, so a client that honours it closes each
        // connection after the answer to a request it has sent, and none is closed under a
        // request it is writing; then what is left (idle, or still running) is shut gracefully.
        drop(listener);
        draining.store(true, Ordering::Relaxed);
        crate::drain(|| gate.open()).await;
        graceful.shutdown().await;
        Ok(())
    })
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
