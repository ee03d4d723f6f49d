//! What stands around the application on every connection: the drain's `Connection: close` and
//! the request's hold on its connection ([`Draining`]), the kit's connection gate ([`Gate`]), and
//! HTTP/2-only's body type put into the one the application takes ([`Http2Only`]).

use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use brigade_kit::limits::{ConnectionGate, ServerLimits};
use xitca_io::net::Stream;
use xitca_web::body::RequestBody;
use xitca_web::http::{header, HeaderValue, Request, RequestExt, Response, Version};
use xitca_web::service::ready::ReadyService;
use xitca_web::service::Service;

use crate::idle::{Conn, Held};

/// What every request over TCP needs: its connection marked busy while it runs (so that the
/// drain's end leaves it open, [`Held`]), `Connection: close` on its HTTP/1.1 answer once the
/// server drains, and under `--protocol h3` the `Alt-Svc` that announces HTTP/3 on every answer.
#[derive(Clone)]
pub(crate) struct Draining {
    /// Set once the server drains.
    pub(crate) draining: Arc<AtomicBool>,
    /// What every answer's `Alt-Svc` says, if anything.
    pub(crate) alt_svc: Option<HeaderValue>,
}

impl Draining {
    /// The layer for a server that announces no other protocol.
    #[cfg(feature = "xitca-uring")]
    pub(crate) fn without_alt_svc(draining: Arc<AtomicBool>) -> Draining {
        Draining {
            draining,
            alt_svc: None,
        }
    }
}

impl<S, E> Service<Result<S, E>> for Draining {
    type Response = DrainingService<S>;
    type Error = E;

    async fn call(&self, service: Result<S, E>) -> Result<DrainingService<S>, E> {
        service.map(|service| DrainingService {
            service,
            draining: self.clone(),
        })
    }
}

/// A service behind [`Draining`].
pub(crate) struct DrainingService<S> {
    service: S,
    draining: Draining,
}

impl<S, B, Req> Service<Request<Req>> for DrainingService<S>
where
    S: Service<Request<Req>, Response = Response<B>>,
{
    type Response = Response<B>;
    type Error = S::Error;

    async fn call(&self, req: Request<Req>) -> Result<Response<B>, S::Error> {
        let http1 = req.version() < Version::HTTP_2;
        // The request keeps its connection from the drain's close of idle connections.
        let busy = CONNECTION.try_with(Conn::busy).ok();
        let mut res = self.service.call(req).await?;
        drop(busy);
        if http1 && self.draining.draining.load(Ordering::Relaxed) {
            res.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        if let Some(alt_svc) = &self.draining.alt_svc {
            res.headers_mut().insert(header::ALT_SVC, alt_svc.clone());
        }
        Ok(res)
    }
}

impl<S: ReadyService> ReadyService for DrainingService<S> {
    type Ready = S::Ready;

    async fn ready(&self) -> S::Ready {
        self.service.ready().await
    }
}

/// The kit's connection gate in front of xitca-http's service (and its TLS handshake): a
/// connection past the limit is closed before any byte of it is read; an admitted one holds its
/// permit until it ends, and is [`Held`] so that the drain can close it when idle.
#[derive(Clone)]
pub(crate) struct Gate {
    pub(crate) gate: ConnectionGate,
    pub(crate) held: Held,
}

impl Gate {
    /// A gate at the limits' connection limit, holding no connection yet.
    pub(crate) fn new(limits: &ServerLimits) -> Gate {
        Gate {
            gate: ConnectionGate::new(limits.max_connections),
            held: Held::default(),
        }
    }
}

impl<S, E> Service<Result<S, E>> for Gate {
    type Response = Gated<S>;
    type Error = E;

    async fn call(&self, service: Result<S, E>) -> Result<Gated<S>, E> {
        service.map(|service| Gated {
            service,
            gate: self.clone(),
        })
    }
}

/// A connection service behind the [`Gate`].
pub(crate) struct Gated<S> {
    service: S,
    gate: Gate,
}

impl<S, Io> Service<Io> for Gated<S>
where
    S: Service<Io, Response = ()>,
    Io: Accepted,
{
    type Response = ();
    type Error = S::Error;

    async fn call(&self, io: Io) -> Result<(), S::Error> {
        let Some(permit) = self.gate.gate.try_enter() else {
            // Past the connection limit: closed at once, before any byte is read.
            drop(io);
            return Ok(());
        };
        // xitca-http answers a connection's requests inside the connection's own task: its
        // requests find their connection there ([`CONNECTION`]).
        let served = match io.socket().and_then(|socket| self.gate.held.track(socket)) {
            Some(conn) => {
                let served = CONNECTION.scope(conn.clone(), self.service.call(io)).await;
                conn.end();
                served
            }
            None => self.service.call(io).await,
        };
        drop(permit);
        served
    }
}

/// An accepted connection as xitca-server hands it to a connection service: its socket.
pub(crate) trait Accepted {
    /// The connection's socket, where it has one of its own (a QUIC connection shares its
    /// endpoint's: [`crate::xitca::h3`] holds those).
    fn socket(&self) -> Option<BorrowedFd<'_>>;
}

impl Accepted for Stream {
    fn socket(&self) -> Option<BorrowedFd<'_>> {
        match self {
            Stream::Tcp(tcp, _) => Some(tcp.as_fd()),
            Stream::Unix(unix, _) => Some(unix.as_fd()),
            Stream::Udp(..) => None,
        }
    }
}

impl Accepted for (xitca_io::net::TcpStream, std::net::SocketAddr) {
    fn socket(&self) -> Option<BorrowedFd<'_>> {
        Some(self.0.as_fd())
    }
}

tokio::task_local! {
    /// The connection a request came on (set around each connection's task).
    static CONNECTION: Arc<Conn>;
}

impl<S: ReadyService> ReadyService for Gated<S> {
    type Ready = S::Ready;

    async fn ready(&self) -> S::Ready {
        self.service.ready().await
    }
}

/// xitca-http's HTTP/2-only service hands its own body type; xitca-web's `App` takes the body type
/// all of xitca-http's protocols share: [`Http2Only`] puts the one into the other.
#[derive(Clone)]
pub(crate) struct Http2Only;

impl<S, E> Service<Result<S, E>> for Http2Only {
    type Response = Http2OnlyService<S>;
    type Error = E;

    async fn call(&self, service: Result<S, E>) -> Result<Http2OnlyService<S>, E> {
        service.map(Http2OnlyService)
    }
}

/// A service behind [`Http2Only`].
pub(crate) struct Http2OnlyService<S>(S);

impl<S> Service<Request<RequestExt<xitca_http::h2::RequestBody>>> for Http2OnlyService<S>
where
    S: Service<Request<RequestExt<RequestBody>>>,
{
    type Response = S::Response;
    type Error = S::Error;

    async fn call(
        &self,
        req: Request<RequestExt<xitca_http::h2::RequestBody>>,
    ) -> Result<S::Response, S::Error> {
        self.0
            .call(req.map(|ext| ext.map_body(RequestBody::H2)))
            .await
    }
}

impl<S: ReadyService> ReadyService for Http2OnlyService<S> {
    type Ready = S::Ready;

    async fn ready(&self) -> S::Ready {
        self.0.ready().await
    }
}
