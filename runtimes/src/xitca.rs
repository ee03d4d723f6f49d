//! xitca-web: each endpoint becomes a route of xitca-web's own `App` router (xitca-router, the
//! table's `{name}` patterns as they are), its service one [`EndpointService`] that picks the route
//! for the request's method (a `HEAD` takes the `GET` route) and reads the body through the kit's
//! reader under the endpoint's limit (the kit takes the path parameters from the raw path). A [`Guard`]
//! around the router applies the kit's house rules and head limits first, and turns what the router
//! refuses into the kit's JSON 404 or 405. xitca-web's `Route` is typed by its method count, fixed
//! at compile time, so the table's methods are matched in the endpoint's service instead (the same
//! linear match xitca's `Route` does).
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
//! beside TLS (`HttpServiceBuilder::h3`, [`crate::xitca_h3`]), its TCP answers carrying `Alt-Svc`.
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
use std::os::fd::{AsFd, BorrowedFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use brigade_kit::limits::{
    read_body_draining_here, ConnectionGate, ServeProtocol, ServerLimits, RUNTIME_MAX_HEADERS,
    RUNTIME_MAX_HEADER_BYTES,
};
use brigade_kit::rules::{self, Admitted, Refused};
use brigade_kit::{AppHandle, Method, Reply};
use bytes::Bytes;
use xitca_http::config::{HttpServiceConfig, DEFAULT_WRITE_BUF_LIMIT};
use xitca_http::util::service::router::{PathGen, RouteGen, RouterMapErr};
use xitca_http::HttpServiceBuilder;
use xitca_io::net::Stream;
use xitca_server::net::{IntoListener, Listen};
use xitca_web::body::{Body, Frame, RequestBody, ResponseBody};
use xitca_web::http::{
    header, HeaderValue, Request, RequestExt, Response, StatusCode, Uri, Version, WebResponse,
};
use xitca_web::service::ready::ReadyService;
use xitca_web::service::{Service, ServiceExt};
use xitca_web::{App, WebContext};

use crate::idle::{Conn, Held};
use crate::{Mount, Runtime, Shutdown, GRACE};

/// The registry's entry.
pub(crate) const RUNTIME: Runtime = Runtime {
    name: "xitca",
    crates: &["xitca-web", "xitca-http"],
    threading: "xitca-server, N single-threaded tokio workers per service (the listener's \
                readiness on one more thread)",
    engine: crate::TOKIO_EPOLL,
    variant_of: None,
    h3: Ok(crate::xitca_h3::H3_STACK),
    serve_one: serve,
    hello,
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

/// The one place a [`Reply`] becomes a xitca response, in the request's own allocations (xitca-web's
/// `as_response`: the request is spent). The answer to a `HEAD` carries the length the `GET`'s body
/// has, and no body; a 204 carries neither (RFC 9110 §8.6).
fn respond(ctx: &mut WebContext<'_>, reply: Reply) -> WebResponse {
    let head = ctx.req().method() == xitca_web::http::Method::HEAD;
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let length = reply.body.len();
    let body = if head || status == StatusCode::NO_CONTENT {
        ResponseBody::none()
    } else {
        ResponseBody::bytes(reply.body)
    };
    let mut res = ctx.as_response(body);
    *res.status_mut() = status;
    let headers = res.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        crate::content_type_value(reply.content_type),
    );
    if head {
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    }
    res
}

/// `res`, closing its HTTP/1.1 connection after it (xitca-http closes once the answer is written,
/// and writes its own `connection: close` line beside this one unless the client asked for the
/// close: two equal lines of a list header, RFC 9110 §5.3; over HTTP/2 it drops the header).
fn closing(mut res: WebResponse, close: bool) -> WebResponse {
    if close {
        res.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    res
}

/// The kit's method of a request method, a `HEAD` as `GET` (RFC 9110: HEAD for every GET route).
fn method(m: &xitca_web::http::Method) -> Option<Method> {
    use xitca_web::http::Method as M;
    Some(match *m {
        M::GET | M::HEAD => Method::Get,
        M::POST => Method::Post,
        M::PUT => Method::Put,
        M::PATCH => Method::Patch,
        M::DELETE => Method::Delete,
        _ => return None,
    })
}

/// One endpoint of the table, as the route xitca-web's router matches: built once per worker.
struct EndpointRoute {
    app: Arc<dyn AppHandle>,
    endpoint: usize,
    limits: ServerLimits,
}

impl PathGen for EndpointRoute {}

impl RouteGen for EndpointRoute {
    type Route<R> = RouterMapErr<R>;

    fn route_gen<R>(route: R) -> RouterMapErr<R> {
        RouterMapErr(route)
    }
}

impl Service for EndpointRoute {
    type Response = EndpointService;
    type Error = Infallible;

    async fn call(&self, _: ()) -> Result<EndpointService, Infallible> {
        let limit = self
            .limits
            .body_limit(self.app.endpoints()[self.endpoint].limit);
        Ok(EndpointService {
            app: self.app.clone(),
            endpoint: self.endpoint,
            limit,
            limits: self.limits,
        })
    }
}

/// One endpoint's service: the route for the method, the body, the call.
struct EndpointService {
    app: Arc<dyn AppHandle>,
    endpoint: usize,
    limit: usize,
    limits: ServerLimits,
}

impl<'r> Service<WebContext<'r>> for EndpointService {
    type Response = WebResponse;
    type Error = Infallible;

    async fn call(&self, mut ctx: WebContext<'r>) -> Result<WebResponse, Infallible> {
        let app = &self.app;
        let req = ctx.req();
        let endpoint = &app.endpoints()[self.endpoint];
        let Some(route) = method(req.method()).and_then(|m| endpoint.route_for(m)) else {
            let reply = app.unmatched(req.method().as_str(), req.uri().path());
            return Ok(respond(&mut ctx, reply));
        };
        let head = Head::read(req.headers());
        let length = head
            .length
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        // RFC 9112: an HTTP/1.1 request with neither a length nor a transfer coding has no body
        // (xitca-http hands an `Upgrade` request the rest of the connection as its body); an
        // HTTP/2 one has none when its stream ended with its head.
        let bodiless = if req.version() < Version::HTTP_2 {
            length == Some(0) || (length.is_none() && !head.coded)
        } else {
            ctx.body().is_end_stream()
        };
        let (content_type, traceparent, budget) = (
            text(head.content_type),
            text(head.traceparent),
            text(head.budget),
        );
        let body = if bodiless {
            Bytes::new()
        } else {
            // xitca's body is not `Send` (it shares the connection with its dispatcher), so a
            // refused one is drained here, before the 413: the client, still sending, then reads
            // the answer. Boxed: the reader's state would otherwise weigh on every request's
            // future, moved whole into xitca-web's boxed route call.
            let body = Chunks(std::mem::take(ctx.body_get_mut()));
            let timeout = self.limits.body_read_timeout;
            match Box::pin(read_body_draining_here(body, length, self.limit, timeout)).await {
                Ok(b) => b,
                Err(e) => return Ok(respond(&mut ctx, app.refused(route, e))),
            }
        };
        let uri = ctx.req().uri();
        // The path as it came (xitca-router's parameters are its raw segments too): the kit
        // takes the parameters from it.
        let request = brigade_kit::Request {
            path: uri.path().to_owned(),
            params: Vec::new(),
            query: uri.query().map(str::to_owned),
            content_type,
            body,
            traceparent,
            budget,
        };
        let reply = app.call(route, request).await;
        Ok(respond(&mut ctx, reply))
    }
}

/// What the kit reads of a request's headers, taken in one walk over them: a lookup by name
/// hashes the name, and five lookups cost more than one walk over a request's few headers.
#[derive(Default)]
struct Head<'a> {
    content_type: Option<&'a HeaderValue>,
    length: Option<&'a HeaderValue>,
    /// A `Transfer-Encoding` came (the house rules have refused any but one `chunked`).
    coded: bool,
    traceparent: Option<&'a HeaderValue>,
    budget: Option<&'a HeaderValue>,
}

impl<'a> Head<'a> {
    /// The first value of each (as a lookup by name gives it).
    fn read(headers: &'a header::HeaderMap) -> Head<'a> {
        let mut head = Head::default();
        for (name, value) in headers {
            let slot = if name == header::CONTENT_TYPE {
                &mut head.content_type
            } else if name == header::CONTENT_LENGTH {
                &mut head.length
            } else if name == header::TRANSFER_ENCODING {
                head.coded = true;
                continue;
            } else if name == crate::TRACEPARENT {
                &mut head.traceparent
            } else if name == crate::BUDGET {
                &mut head.budget
            } else {
                continue;
            };
            slot.get_or_insert(value);
        }
        head
    }
}

/// A header's value as text, if present and ASCII.
fn text(value: Option<&HeaderValue>) -> Option<String> {
    value.and_then(|v| v.to_str().ok()).map(str::to_owned)
}

/// A request body's data frames as a stream (trailers are skipped), for the kit's reader.
struct Chunks(RequestBody);

impl futures::Stream for Chunks {
    type Item = Result<Bytes, xitca_web::error::BodyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            return Poll::Ready(match ready!(Pin::new(&mut self.0).poll_frame(cx)) {
                Some(Ok(Frame::Data(bytes))) => Some(Ok(bytes)),
                Some(Ok(Frame::Trailers(_))) => continue,
                Some(Err(e)) => Some(Err(e)),
                None => None,
            });
        }
    }
}

/// The kit's house rules around the router: builds a [`Guarded`] router once per worker.
#[derive(Clone)]
struct Guard {
    app: Arc<dyn AppHandle>,
    limits: ServerLimits,
}

impl<S, E> Service<Result<S, E>> for Guard {
    type Response = Guarded<S>;
    type Error = E;

    async fn call(&self, router: Result<S, E>) -> Result<Guarded<S>, E> {
        router.map(|router| Guarded {
            router,
            app: self.app.clone(),
            limits: self.limits,
        })
    }
}

/// The router behind the kit's house rules ([`brigade_kit::rules`]: the head limits, the rules
/// where runtimes differ, `Connection: close` where they say so), with the kit's JSON 404 and 405
/// for what the router does not take.
struct Guarded<S> {
    router: S,
    app: Arc<dyn AppHandle>,
    limits: ServerLimits,
}

impl<S> Guarded<S> {
    /// The kit's house rules on a request.
    fn admit(&self, req: &Request<RequestExt<()>>) -> Result<Admitted, Refused> {
        let target = req.uri().path_and_query().map_or("", |p| p.as_str());
        let headers = || {
            req.headers()
                .iter()
                .map(|(k, v)| (k.as_str().as_bytes(), v.as_bytes()))
        };
        let version = rules::Version::of(
            req.version() <= Version::HTTP_10,
            req.version() >= Version::HTTP_2,
        );
        rules::admit(
            &self.limits,
            req.method().as_str(),
            target,
            version,
            headers,
        )
    }
}

impl<'r, S> Service<WebContext<'r>> for Guarded<S>
where
    S: for<'r2> Service<WebContext<'r2>, Response = WebResponse, Error = xitca_web::error::Error>,
{
    type Response = WebResponse;
    type Error = Infallible;

    async fn call(&self, mut ctx: WebContext<'r>) -> Result<WebResponse, Infallible> {
        let admitted = match self.admit(ctx.req()) {
            Ok(a) => a,
            Err(refused) => {
                let res = respond(&mut ctx, refused.error.to_reply());
                return Ok(closing(res, refused.close));
            }
        };
        // (xitca-router matches the raw path.)
        let uri = ctx.req().uri();
        if let Some(target) = admitted
            .path_escaped
            .then(|| rules::normalized_target(uri.path(), uri.query()))
            .flatten()
        {
            if let Ok(uri) = target.parse::<Uri>() {
                *ctx.req_mut().uri_mut() = uri;
            }
        }
        let res = match self.router.call(ctx.reborrow()).await {
            Ok(res) => res,
            // No endpoint's pattern took the path (the endpoints pick their methods themselves).
            Err(_) => {
                let req = ctx.req();
                let reply = self.app.unmatched(req.method().as_str(), req.uri().path());
                respond(&mut ctx, reply)
            }
        };
        let close = admitted.closes_after(res.status().as_u16());
        Ok(closing(res, close))
    }
}

impl<S> ReadyService for Guarded<S> {
    type Ready = ();

    async fn ready(&self) {}
}

/// The xitca-web `App` for `app` under `limits`: one route per endpoint, behind the guard.
pub(crate) fn app(
    app: Arc<dyn AppHandle>,
    limits: &ServerLimits,
) -> impl Service<
    Response = impl ReadyService
                   + Service<
        xitca_web::http::WebRequest,
        Response = Response<impl Body<Data = Bytes, Error: std::fmt::Debug> + 'static>,
        Error = Infallible,
    >,
    Error = impl std::fmt::Debug,
> + Send
       + Sync
       + 'static {
    let mut routes = App::new();
    for (endpoint, e) in app.endpoints().iter().enumerate() {
        let route = EndpointRoute {
            app: app.clone(),
            endpoint,
            limits: *limits,
        };
        routes = routes.at(e.path, route);
    }
    routes
        .enclosed(Guard {
            app,
            limits: *limits,
        })
        .finish()
}

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
    /// endpoint's: [`crate::xitca_h3`] holds those).
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
    // `--protocol h3`: QUIC on the same port number, beside TLS on TCP ([`crate::xitca_h3`]),
    // bound before anything starts, one connection count for both.
    let quic = match (&listener.tls, limits.protocol) {
        (Some(tls), ServeProtocol::H3) => Some(crate::xitca_h3::Quic::bind(addr, tls, &limits)?),
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
                crate::xitca_h3::Connections::new(gate.gate.clone(), &limits, shutdown.clone());
            let (server, drain) = crate::xitca_h3::listen(server, quic, make(), connections);
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
/// last, [`crate::xitca_h3`]) until `open()` is 0 or the drain ends, then what is left of QUIC's
/// is closed; the caller then closes the idle TCP ones and stops the server (the rest within the
/// grace).
async fn drain(
    shutdown: Shutdown,
    listening: std::net::TcpListener,
    draining: Arc<AtomicBool>,
    quic: Option<crate::xitca_h3::QuicDrain>,
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

/// Socket pairs handed to a memory server's worker, as accepted connections.
struct Pairs(
    tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<std::os::unix::net::UnixStream>>,
);

impl IntoListener for Pairs {
    type Listener = Pairs;

    fn into_listener(self) -> std::io::Result<Pairs> {
        Ok(self)
    }
}

impl Listen for Pairs {
    async fn accept(&self) -> std::io::Result<Stream> {
        // No sender left: the memory server is gone, and so is its accept loop.
        let stream = self.0.lock().await.recv().await;
        let stream = stream.ok_or(std::io::ErrorKind::BrokenPipe)?;
        let addr = stream.peer_addr()?;
        Ok(Stream::Unix(stream, addr))
    }
}

/// What a memory server holds of its xitca server: the way in and the stop.
struct MemoryConnections {
    pairs: Option<tokio::sync::mpsc::UnboundedSender<std::os::unix::net::UnixStream>>,
    handle: xitca_server::ServerHandle,
}

impl Drop for MemoryConnections {
    fn drop(&mut self) {
        // The worker's accept loop ends with its last sender, then the server stops.
        self.pairs.take();
        self.handle.stop(false);
    }
}

/// The request path over in-memory connections (fuzzing): the same xitca server, HTTP/1.1 service,
/// guard and limits as on a socket, on one worker. xitca-http reads only its own stream types
/// (its connection services and dispatchers take no other I/O), so each in-memory connection is
/// bridged to one end of a Unix socket pair, a kernel buffer without a network, whose other end
/// the server accepts as it accepts a Unix socket.
fn memory(app: Arc<dyn AppHandle>, limits: &ServerLimits) -> crate::MemoryServer {
    let (pairs, accepted) = tokio::sync::mpsc::unbounded_channel();
    let gate = Gate::new(limits);
    let factory = self::app(app, limits)
        .enclosed(HttpServiceBuilder::with_config(config(limits)))
        .enclosed(gate);
    let mut server = xitca_server::Builder::new()
        .worker_threads(1)
        .server_threads(1)
        .disable_signal()
        .listen(
            "brigade-memory",
            Pairs(tokio::sync::Mutex::new(accepted)),
            factory,
        )
        .build();
    let handle = server.handle().expect("the memory server starts");
    std::thread::Builder::new()
        .name("brigade-xitca-memory".into())
        .spawn(move || server.wait())
        .expect("a thread for the memory server");
    let connections = MemoryConnections {
        pairs: Some(pairs),
        handle,
    };
    crate::MemoryServer {
        serve: Box::new(move |mut io| {
            let pair = std::os::unix::net::UnixStream::pair().and_then(|(ours, theirs)| {
                theirs.set_nonblocking(true)?;
                ours.set_nonblocking(true)?;
                Ok((ours, theirs))
            });
            let ours = pair.ok().and_then(|(ours, theirs)| {
                let sent = connections.pairs.as_ref()?.send(theirs);
                sent.is_ok().then_some(ours)
            });
            Box::pin(async move {
                let Some(ours) = ours else { return };
                let Ok(mut ours) = tokio::net::UnixStream::from_std(ours) else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut io, &mut ours).await;
            })
        }),
    }
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
