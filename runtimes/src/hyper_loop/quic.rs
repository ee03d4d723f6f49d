//! HTTP/3 for the runtimes on the shared loop (`--protocol h3`): a QUIC endpoint (quinn) on the
//! TCP listener's port number, the `h3` crate over it (`h3-quinn`), and each request handed to the
//! runtime's own `http` service behind the same [`Guard`] as over HTTP/2 — the way axum, hyper,
//! warp, poem and salvo users serve QUIC today, so no adapter knows it is on HTTP/3. The TLS
//! listener on TCP keeps serving h2 and http/1.1 beside it (peers and clients without QUIC), its
//! answers carrying `Alt-Svc` for this port.
//!
//! The kit's limits, as QUIC can hold them (docs/reliability.md, "HTTP/3"):
//! - head: the kit's count and bytes in the guard (a JSON 431), with h3's `max_field_section_size`
//!   at the HTTP/2 header-list backstop; a request head must arrive within the header read limit;
//! - body: the adapters' own reads (size and read time), as on every protocol;
//! - handshake: within the header read limit, as a TLS handshake on TCP;
//! - idle: the keep-alive limit between requests, kept by each connection's loop (no request in
//!   flight for that long: GOAWAY, then closed); QUIC's own idle timeout (no packet at all, the
//!   handshake included) is a backstop at twice the longest of the kit's timers, as a request
//!   that is slow to answer sends no packet;
//! - streams: the HTTP/2 stream limit as QUIC's concurrent bidirectional streams, the HTTP/2
//!   windows as QUIC's stream and connection receive windows;
//! - connections: the same gate as TCP's (one count for both), a QUIC connection past it refused.
//!
//! The endpoint is the one every h3 stack here shares ([`crate::quic`]: one UDP socket per
//! service, its buffers asked at [`UDP_BUFFER`](crate::quic::UDP_BUFFER) (the kernel caps them at
//! `net.core.rmem_max`/`wmem_max`; the sizes it gave are logged), with quinn's segmentation offload
//! (GSO) and receive offload (GRO) where the kernel has them, 0-RTT off). The drain: no new connection, a
//! GOAWAY on each open one (requests in flight finish), each connection closed (`H3_NO_ERROR`)
//! once its last request is answered — a QUIC client that went away without closing would
//! otherwise hold the drain to its end, as no FIN tells of it — and whatever is left closed when
//! the drain ends.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use brigade_kit::limits::{ConnectionGate, ConnectionPermit, ServerLimits};
use bytes::{Buf, Bytes};
use http::{header, HeaderValue, Request, Response};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, SizeHint};
use hyper::service::Service;

use super::{BoxError, Guard, Served};
use crate::quic::H3_NO_ERROR;
use crate::{Shutdown, TlsConfig};

/// A request's body over HTTP/3: the request stream's receiving half.
pub(crate) struct QuicBody {
    stream: h3::server::RequestStream<h3_quinn::RecvStream, Bytes>,
    /// The `Content-Length` the request announced, if any.
    length: Option<u64>,
    ended: bool,
}

impl Body for QuicBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        match std::task::ready!(this.stream.poll_recv_data(cx)) {
            Ok(Some(mut data)) => {
                Poll::Ready(Some(Ok(Frame::data(data.copy_to_bytes(data.remaining())))))
            }
            Ok(None) => {
                this.ended = true;
                Poll::Ready(None)
            }
            Err(e) => Poll::Ready(Some(Err(Box::new(e)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.length == Some(0)
    }

    fn size_hint(&self) -> SizeHint {
        self.length
            .map_or_else(SizeHint::default, SizeHint::with_exact)
    }
}

/// HTTP/3 beside the TCP listener at `addr` (the same port number), served on the loop's runtime
/// until `shutdown`: the serving task, and the `Alt-Svc` value TCP answers carry to announce it
/// (RFC 7838: "HTTP/3 on this host, this port, for a day").
pub(super) fn start<M, S>(
    addr: SocketAddr,
    tls: &TlsConfig,
    make: Arc<M>,
    limits: ServerLimits,
    gate: ConnectionGate,
    shutdown: Shutdown,
) -> anyhow::Result<(tokio::task::JoinHandle<()>, Option<HeaderValue>)>
where
    M: Fn() -> S + Send + Sync + 'static,
    S: Served,
{
    let config = crate::quic::server_config(tls, &limits)?;
    let endpoint = crate::quic::endpoint(crate::quic::bind_udp(addr)?, config)?;
    let serving = tokio::spawn(serve(endpoint, make, limits, gate, shutdown));
    Ok((serving, crate::quic::alt_svc(addr.port())))
}

/// Serves HTTP/3 on `endpoint` until `shutdown`, each connection with the service `make` gives
/// it, counted by `gate`; then drains (see the module's note). Runs on the loop's tokio runtime.
async fn serve<M, S>(
    endpoint: quinn::Endpoint,
    make: Arc<M>,
    limits: ServerLimits,
    gate: ConnectionGate,
    shutdown: Shutdown,
) where
    M: Fn() -> S + Send + Sync + 'static,
    S: Served,
{
    let stop = shutdown.clone().wait();
    tokio::pin!(stop);
    loop {
        let incoming = tokio::select! {
            incoming = endpoint.accept() => incoming,
            _ = &mut stop => break,
        };
        let Some(incoming) = incoming else { break };
        let Some(permit) = gate.try_enter() else {
            // Past the connection limit: refused at once, before any handshake.
            incoming.refuse();
            continue;
        };
        tokio::spawn(serve_connection(
            incoming,
            make.clone(),
            limits,
            shutdown.clone(),
            permit,
        ));
    }
    // The drain: no new connection; each open one sends its GOAWAY (its connection task sees the
    // shutdown) and is closed once its requests are answered; what is left when the drain ends is
    // closed here, and the endpoint waits (briefly) for the closes to be sent.
    endpoint.set_server_config(None);
    crate::drain(|| gate.open()).await;
    endpoint.close(H3_NO_ERROR.into(), b"server stopped");
    let _ = tokio::time::timeout(Duration::from_millis(500), endpoint.wait_idle()).await;
}

/// Serves one QUIC connection: the handshake (within the header read limit), then its requests,
/// each on a task of its own with a service `make` gives it, until the client closes, the
/// connection idles out, or the shutdown's GOAWAY has let its requests in flight finish.
async fn serve_connection<M, S>(
    incoming: quinn::Incoming,
    make: Arc<M>,
    limits: ServerLimits,
    shutdown: Shutdown,
    permit: ConnectionPermit,
) where
    M: Fn() -> S + Send + Sync + 'static,
    S: Served,
{
    let Ok(Ok(quic)) = tokio::time::timeout(limits.header_read_timeout, incoming).await else {
        // A handshake that failed or did not end in time: nothing to answer.
        return;
    };
    let built = h3::server::builder()
        .max_field_section_size(u64::from(limits.http2.max_header_list_bytes))
        .build::<_, Bytes>(h3_quinn::Connection::new(quic.clone()))
        .await;
    let Ok(mut conn) = built else { return };
    // (Never set: an HTTP/3 answer closes no connection; the GOAWAY drains it.)
    let draining = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = shutdown.wait();
    tokio::pin!(stop);
    // The requests in flight, so that a drained connection closes once they are answered rather
    // than when its client (or the idle timer) closes it.
    let mut requests = tokio::task::JoinSet::new();
    // The keep-alive limit, kept here as hyper keeps it on TCP: armed while no request is in
    // flight (QUIC's own idle timer counts packets, and a slow request sends none).
    let idle = tokio::time::sleep(limits.keep_alive_timeout);
    tokio::pin!(idle);
    loop {
        let accepted = tokio::select! {
            accepted = conn.accept() => accepted,
            Some(_) = requests.join_next(), if !requests.is_empty() => {
                if requests.is_empty() {
                    idle.as_mut().reset(tokio::time::Instant::now() + limits.keep_alive_timeout);
                }
                continue;
            }
            _ = &mut idle, if requests.is_empty() => {
                // Idle past the keep-alive limit: GOAWAY, then closed.
                let _ = conn.shutdown(0).await;
                break;
            }
            _ = &mut stop => {
                // GOAWAY: the requests already taken finish, no new one is taken (a stream the
                // client opened after the last one taken is refused by it, RFC 9114 §5.2).
                let _ = conn.shutdown(0).await;
                while requests.join_next().await.is_some() {}
                break;
            }
        };
        match accepted {
            Ok(Some(resolver)) => {
                let guard = Guard {
                    inner: make(),
                    limits,
                    draining: draining.clone(),
                    alt_svc: None,
                };
                requests.spawn(serve_request(resolver, guard));
            }
            Ok(None) => break,
            Err(e) => {
                tracing::debug!(error = %e, "QUIC connection ended with an error");
                break;
            }
        }
    }
    quic.close(H3_NO_ERROR.into(), b"");
    drop(permit);
}

/// One request: its head (within the header read limit), the runtime's answer through the
/// guard, and that answer written on the stream.
async fn serve_request<S: Served>(
    resolver: h3::server::RequestResolver<h3_quinn::Connection, Bytes>,
    guard: Guard<S>,
) {
    let limits = guard.limits;
    let resolved = tokio::time::timeout(limits.header_read_timeout, resolver.resolve_request());
    let Ok(Ok((req, stream))) = resolved.await else {
        return;
    };
    let (mut send, recv) = stream.split();
    let length = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let body = super::RequestBody::Quic(QuicBody {
        stream: recv,
        length,
        ended: false,
    });
    let req: Request<super::RequestBody> = req.map(|()| body);
    let resp = match guard.call(req).await {
        Ok(resp) => resp,
        Err(e) => {
            let e: BoxError = e.into();
            tracing::debug!(error = %e, "the service failed a request");
            send.stop_stream(h3::error::Code::H3_INTERNAL_ERROR);
            return;
        }
    };
    if let Err(e) = write_answer(&mut send, resp).await {
        tracing::debug!(error = %e, "an HTTP/3 answer was not written whole");
    }
}

/// Writes `resp` on the request's stream: the head (its length named as hyper names it over
/// HTTP/2, the connection-specific headers HTTP/3 forbids left out), the body's frames, the end.
async fn write_answer<B>(
    send: &mut h3::server::RequestStream<h3_quinn::SendStream<Bytes>, Bytes>,
    resp: Response<B>,
) -> Result<(), BoxError>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let (mut parts, body) = resp.into_parts();
    crate::quic::answer_head(&mut parts.headers, body.size_hint().exact());
    send.send_response(Response::from_parts(parts, ())).await?;
    let mut body = std::pin::pin!(body);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(Into::into)?;
        match frame.into_data() {
            Ok(data) => {
                if !data.is_empty() {
                    send.send_data(data).await?;
                }
            }
            Err(frame) => {
                if let Ok(trailers) = frame.into_trailers() {
                    send.send_trailers(trailers).await?;
                }
            }
        }
    }
    send.finish().await?;
    Ok(())
}
