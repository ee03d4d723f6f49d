//! HTTP/3 for xitca-web through its own stack (`--protocol h3`): xitca-server accepts QUIC
//! connections from xitca-io's `QuicListener` on the endpoint every h3 stack here shares
//! ([`crate::quic`]: the TCP listener's port number, the kit's TLS with ALPN `h3`, 0-RTT off, the
//! streams, windows and idle backstop as transport parameters, 4 MiB UDP buffers, GSO), and serves
//! each with xitca-http's own h3 dispatcher (`HttpServiceBuilder::h3`: the `h3` crate over
//! `h3-quinn`) on its `workers` workers, in front of the same xitca-web `App` and guard as over
//! HTTP/1.1 and HTTP/2 (the kit's head limits: a JSON 431). TLS on TCP keeps serving beside it, its
//! answers carrying `Alt-Svc` (the xitca module's `Draining`).
//!
//! What the kit adds around xitca-http's dispatcher, which takes a connection and answers its
//! requests until the client closes it ([`Connections`]):
//! - the connection gate, one count with TCP's: a QUIC connection past it is refused before its
//!   handshake;
//! - the keep-alive limit: a connection with no request running (its answer's body still being
//!   written counts as running) for the smaller of the keep-alive and head limits is closed
//!   (`H3_NO_ERROR`), as xitca's own keep-alive timer on TCP. The dispatcher's wait for the
//!   handshake and for a request's head have no timer of their own, so this is also what bounds a
//!   stalled handshake, and a stalled head on a connection with nothing else running;
//! - the drain: from the shutdown on, no new connection, and each open one closed as soon as its
//!   last request is answered (at once when idle); whatever is left is closed when the drain ends.
//!   xitca-http's dispatcher has no GOAWAY to send: a request a client sends as its connection
//!   closes is lost with it, where the shared loop's GOAWAY would have told the client first.
//!
//! What xitca-http's h3 dispatcher cannot be told (docs/reliability.md, "HTTP/3"): h3's
//! `max_field_section_size` (it builds the connection with h3's defaults: no limit before the
//! guard's), a head timer per request, and a GOAWAY.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use brigade_kit::limits::{ConnectionGate, ServerLimits};
use bytes::Bytes;
use xitca_http::HttpServiceBuilder;
use xitca_io::net::{QuicListener, QuicStream};
use xitca_server::net::IntoListener;
use xitca_web::body::{Body, Frame, RequestBody, SizeHint};
use xitca_web::http::{Request, RequestExt, Response, WebRequest};
use xitca_web::service::ready::ReadyService;
use xitca_web::service::{Service, ServiceExt};

use crate::quic::H3_NO_ERROR;
use crate::{Shutdown, TlsConfig};

/// xitca-web's HTTP/3 stack ([`crate::Runtime::h3_stack`]): xitca-http's dispatcher, `h3` over
/// `h3-quinn`, on quinn; what the dispatcher cannot be told (the module's doc).
pub(crate) const H3_STACK: crate::runtime::H3Stack = crate::runtime::H3Stack {
    crates: &["xitca-http", "h3", "h3-quinn", "quinn"],
    unset: &[
        "the header section's size (the guard's 431 still holds)",
        "a head timer per request",
        "a GOAWAY on the drain",
    ],
};

/// Adds HTTP/3 to `server`: `quic`'s connections, each served by xitca-http's h3 dispatcher
/// behind `connections`, in front of `factory`'s application; and the drain's hold on it.
pub(crate) fn listen<F, S, B>(
    server: xitca_server::Builder,
    quic: Quic,
    factory: F,
    connections: Connections,
) -> (xitca_server::Builder, QuicDrain)
where
    F: Service<Response = S> + Send + Sync + 'static,
    F::Error: std::fmt::Debug + 'static,
    S: ReadyService + Service<WebRequest, Response = Response<B>, Error = Infallible> + 'static,
    B: Body<Data = Bytes> + 'static,
    B::Error: std::fmt::Debug,
{
    let service = factory
        .enclosed(Requests)
        .enclosed(HttpServiceBuilder::h3())
        .enclosed(connections);
    let drain = QuicDrain(quic.endpoint.clone());
    (server.listen("brigade-h3", quic, service), drain)
}

/// The QUIC side of a server: its UDP socket, bound at start (so that a taken port fails the
/// start), and its endpoint once xitca-server has made it a listener.
pub(crate) struct Quic {
    socket: std::net::UdpSocket,
    config: quinn::ServerConfig,
    endpoint: Arc<OnceLock<quinn::Endpoint>>,
}

impl Quic {
    /// QUIC on the UDP port of `addr` (the TLS listener's), under the kit's TLS and limits.
    pub(crate) fn bind(
        addr: SocketAddr,
        tls: &TlsConfig,
        limits: &ServerLimits,
    ) -> anyhow::Result<Quic> {
        Ok(Quic {
            config: crate::quic::server_config(tls, limits)?,
            socket: crate::quic::bind_udp(addr)?,
            endpoint: Arc::default(),
        })
    }

    /// QUIC on `socket` (bound already) under `config` as it is: the control's
    /// ([`crate::control`]).
    pub(crate) fn on(socket: std::net::UdpSocket, config: quinn::ServerConfig) -> Quic {
        Quic {
            socket,
            config,
            endpoint: Arc::default(),
        }
    }
}

impl IntoListener for Quic {
    type Listener = QuicListener;

    /// The endpoint, made on xitca-server's listener runtime (its driver, the socket's reads and
    /// writes, runs there; the connections' work on the workers).
    fn into_listener(self) -> std::io::Result<QuicListener> {
        let endpoint = crate::quic::endpoint(self.socket, self.config)?;
        let _ = self.endpoint.set(endpoint.clone());
        Ok(QuicListener::new(endpoint))
    }
}

/// The drain's hold on the QUIC endpoint.
#[derive(Clone)]
pub(crate) struct QuicDrain(Arc<OnceLock<quinn::Endpoint>>);

impl QuicDrain {
    /// No new connection from now on (the open ones close as [`Connections`] says).
    pub(crate) fn refuse_new(&self) {
        if let Some(endpoint) = self.0.get() {
            endpoint.set_server_config(None);
        }
    }

    /// Closes what is left (`H3_NO_ERROR`) and waits, briefly, for the closes to be sent; the
    /// workers' accept loops then end.
    pub(crate) async fn close(&self) {
        if let Some(endpoint) = self.0.get() {
            endpoint.close(H3_NO_ERROR.into(), b"server stopped");
            let _ = tokio::time::timeout(Duration::from_millis(500), endpoint.wait_idle()).await;
        }
    }
}

/// One QUIC connection's requests running (an answer's body still being written included), told
/// to [`Connections`] as they start and end.
struct Activity {
    /// The count, and a wake-up for whoever waits on its change.
    running: tokio::sync::watch::Sender<usize>,
}

impl Default for Activity {
    fn default() -> Self {
        Activity {
            running: tokio::sync::watch::Sender::new(0),
        }
    }
}

/// One running request on an [`Activity`], for as long as it lives.
struct Running(Rc<Activity>);

impl Activity {
    fn start(self: &Rc<Self>) -> Running {
        self.running.send_modify(|n| *n += 1);
        Running(self.clone())
    }

    /// Returns when the connection should close: idle for `idle` before the shutdown; once the
    /// shutdown has begun, when its last request is answered (at once if idle) or the drain ends.
    async fn until_closed(&self, idle: Duration, shutdown: Shutdown) {
        let stop = shutdown.wait();
        tokio::pin!(stop);
        let mut running = self.running.subscribe();
        loop {
            // (The count read marks it seen: a change from here on wakes `changed`.)
            if *running.borrow_and_update() == 0 {
                tokio::select! {
                    _ = tokio::time::sleep(idle) => return,
                    _ = running.changed() => {}
                    _ = &mut stop => break,
                }
            } else {
                tokio::select! {
                    _ = running.changed() => {}
                    _ = &mut stop => break,
                }
            }
        }
        let until = tokio::time::Instant::now() + crate::DRAIN;
        while *running.borrow_and_update() > 0 {
            tokio::select! {
                _ = running.changed() => {}
                _ = tokio::time::sleep_until(until) => return,
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.running.send_modify(|n| *n -= 1);
    }
}

tokio::task_local! {
    /// The QUIC connection a request came on (set around each connection's dispatcher, which
    /// answers its requests inside the connection's own task).
    static ACTIVITY: Rc<Activity>;
}

/// The kit's gate, keep-alive limit and drain around xitca-http's h3 dispatcher (see the module's
/// note): builds a [`ConnectionsService`] once per worker.
#[derive(Clone)]
pub(crate) struct Connections {
    gate: ConnectionGate,
    idle: Duration,
    shutdown: Shutdown,
}

impl Connections {
    /// Connections counted by `gate` (TCP's), under `limits`, drained from `shutdown` on.
    pub(crate) fn new(gate: ConnectionGate, limits: &ServerLimits, shutdown: Shutdown) -> Self {
        Connections {
            gate,
            idle: limits.keep_alive_timeout.min(limits.header_read_timeout),
            shutdown,
        }
    }
}

impl<S, E> Service<Result<S, E>> for Connections {
    type Response = ConnectionsService<S>;
    type Error = E;

    async fn call(&self, service: Result<S, E>) -> Result<ConnectionsService<S>, E> {
        service.map(|service| ConnectionsService {
            service,
            connections: self.clone(),
        })
    }
}

/// xitca-http's h3 service behind [`Connections`].
pub(crate) struct ConnectionsService<S> {
    service: S,
    connections: Connections,
}

impl<S> Service<(QuicStream, SocketAddr)> for ConnectionsService<S>
where
    S: Service<(QuicStream, SocketAddr), Response = ()>,
{
    type Response = ();
    type Error = S::Error;

    async fn call(&self, io: (QuicStream, SocketAddr)) -> Result<(), S::Error> {
        let Connections {
            gate,
            idle,
            shutdown,
        } = &self.connections;
        let Some(permit) = gate.try_enter() else {
            // Past the connection limit: refused (quinn refuses a dropped incoming connection)
            // before its handshake.
            drop(io);
            return Ok(());
        };
        let activity = Rc::new(Activity::default());
        let served = tokio::select! {
            served = ACTIVITY.scope(activity.clone(), self.service.call(io)) => served,
            // The dispatcher, dropped, closes its connection (`H3_NO_ERROR`).
            _ = activity.until_closed(*idle, shutdown.clone()) => Ok(()),
        };
        drop(permit);
        served
    }
}

impl<S: ReadyService> ReadyService for ConnectionsService<S> {
    type Ready = S::Ready;

    async fn ready(&self) -> S::Ready {
        self.service.ready().await
    }
}

/// xitca-http's h3 dispatcher hands its own body type; xitca-web's `App` takes the one all of
/// xitca-http's protocols share: [`Requests`] puts the one into the other, counts each request
/// as running on its connection until its answer is written, and gives the answer its HTTP/3
/// head ([`crate::quic::answer_head`]).
#[derive(Clone)]
pub(crate) struct Requests;

impl<S, E> Service<Result<S, E>> for Requests {
    type Response = RequestsService<S>;
    type Error = E;

    async fn call(&self, service: Result<S, E>) -> Result<RequestsService<S>, E> {
        service.map(RequestsService)
    }
}

/// A service behind [`Requests`].
pub(crate) struct RequestsService<S>(S);

impl<S, B> Service<Request<RequestExt<xitca_http::h3::RequestBody>>> for RequestsService<S>
where
    S: Service<Request<RequestExt<RequestBody>>, Response = Response<B>>,
    B: Body<Data = Bytes>,
{
    type Response = Response<Answer<B>>;
    type Error = S::Error;

    async fn call(
        &self,
        req: Request<RequestExt<xitca_http::h3::RequestBody>>,
    ) -> Result<Self::Response, S::Error> {
        let running = ACTIVITY.try_with(Activity::start).ok();
        let res = self
            .0
            .call(req.map(|ext| ext.map_body(RequestBody::from)))
            .await?;
        let (mut parts, body) = res.into_parts();
        let length = match body.size_hint() {
            SizeHint::Exact(n) => Some(n),
            _ => None,
        };
        crate::quic::answer_head(&mut parts.headers, length);
        Ok(Response::from_parts(
            parts,
            Answer {
                body,
                _running: running,
            },
        ))
    }
}

impl<S: ReadyService> ReadyService for RequestsService<S> {
    type Ready = S::Ready;

    async fn ready(&self) -> S::Ready {
        self.0.ready().await
    }
}

pin_project_lite::pin_project! {
    /// An answer's body over HTTP/3, its request counted as running until the dispatcher, having
    /// written it, drops it.
    pub(crate) struct Answer<B> {
        #[pin]
        body: B,
        _running: Option<Running>,
    }
}

impl<B: Body> Body for Answer<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        self.project().body.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
