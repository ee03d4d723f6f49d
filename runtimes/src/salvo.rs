//! salvo: each endpoint becomes a salvo `Router` (`Router::with_path(..)` in salvo's own `{name}`
//! syntax) with one method child per route, its goal a [`Handler`] that reads the body through the
//! kit's reader under the endpoint's limit and hands the kit the route and the raw path (the kit
//! takes the path parameters from it); the endpoint's own goal answers the JSON 405 of a method it
//! does not take, a last `{**rest}` router the JSON 404 of what no endpoint took. The
//! `Service` is served as hyper service by the shared loop ([`crate::hyper_loop`]), as salvo's
//! own `Server` serves it, with the kit's limits set on hyper's builder. Over HTTP/3 the loop's
//! QUIC half serves it too: salvo's own `quinn` feature is `salvo-http3`, which re-exports the same
//! `h3` and `h3-quinn`; its per-connection loop takes salvo's handler with nothing in front of it,
//! so the kit's guard would run after salvo's routing, and it holds no per-request head timer,
//! keep-alive limit or close once drained (docs/reliability.md, "HTTP/3").

use std::sync::Arc;

use brigade_kit::limits::{read_body_draining, ServerLimits};
use brigade_kit::{AppHandle, Method, Reply};
use bytes::Bytes;
use http::header;
use http_body_util::BodyDataStream;
use hyper::body::Body as _;
use salvo_core::http::{Request as SalvoRequest, Response as SalvoResponse, StatusCode};
use salvo_core::{Depot, FlowCtrl, Handler, Router, Service};

use crate::{Mount, Runtime, Shutdown};

/// The registry's entry.
pub(crate) const RUNTIME: Runtime = Runtime {
    name: "salvo",
    crates: &["salvo_core", "hyper"],
    threading: "tokio multi-thread runtime, N workers per service",
    engine: crate::TOKIO_EPOLL,
    variant_of: None,
    h3: Ok(crate::hyper_loop::H3_STACK),
    serve_one: serve,
    hello,
    control,
    memory: Some(memory),
};

/// One salvo connection handler per connection, as salvo's own `Server` makes them, with `addr`
/// for both of the connection's addresses (a macro: salvo does not export the handler's type).
macro_rules! handlers {
    ($service:expr, $addr:expr) => {{
        let (service, addr): (Service, std::net::SocketAddr) = ($service, $addr);
        move || {
            service.hyper_handler(
                addr.into(),
                addr.into(),
                salvo_core::http::uri::Scheme::HTTP,
                None,
                salvo_core::ConnCtrl::new(),
                None,
            )
        }
    }};
}

/// The shared loop's request body as salvo's: hyper's as salvo takes it from its own server, the
/// HTTP/3 stream's as a boxed body.
impl From<crate::hyper_loop::RequestBody> for salvo_core::http::ReqBody {
    fn from(body: crate::hyper_loop::RequestBody) -> salvo_core::http::ReqBody {
        match body {
            crate::hyper_loop::RequestBody::Http(incoming) => incoming.into(),
            quic => salvo_core::http::ReqBody::Boxed {
                inner: Box::pin(quic),
                fuse_config: None,
            },
        }
    }
}

/// The one place a [`Reply`] becomes a salvo response.
fn respond(reply: Reply, res: &mut SalvoResponse) {
    res.status_code(
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
    );
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        crate::head::content_type_value(reply.content_type),
    );
    res.body(reply.body);
}

/// One route of the table, as a salvo goal. salvo's router skips empty segments (`/waiters/`,
/// `//health` reach `/waiters` and `/health`): such a path does not fit its endpoint, and gets the
/// kit's 404 before any body is read, as on every other runtime (whose routers never take it).
struct RouteGoal {
    app: Arc<dyn AppHandle>,
    endpoint: usize,
    route: usize,
    limit: usize,
    limits: ServerLimits,
}

#[salvo_core::async_trait]
impl Handler for RouteGoal {
    async fn handle(
        &self,
        req: &mut SalvoRequest,
        _depot: &mut Depot,
        res: &mut SalvoResponse,
        _ctrl: &mut FlowCtrl,
    ) {
        let (app, route) = (&self.app, self.route);
        if !app.endpoints()[self.endpoint].fits(req.uri().path()) {
            return respond(
                app.unmatched(req.method().as_str(), req.uri().path(), None),
                res,
            );
        }
        let body = req.take_body();
        let body = if body.is_end_stream() {
            Bytes::new() // no body (a GET): nothing to read
        } else {
            // Exact when the request announced a Content-Length.
            let length = body.size_hint().exact();
            let data = BodyDataStream::new(body);
            match read_body_draining(data, length, self.limit, self.limits.body_read_timeout).await
            {
                Ok(b) => b,
                Err(e) => return respond(app.refused(route, e), res),
            }
        };
        let request =
            crate::head::raw_request(req.uri().path(), req.uri().query(), req.headers(), body);
        respond(app.call(route, request).await, res);
    }
}

/// What no route took: the kit's JSON 405 naming the methods of the endpoint the path matched
/// (the endpoint's own goal, reached when none of its methods is the request's), else its 404.
struct Unmatched(Arc<dyn AppHandle>, Option<usize>);

#[salvo_core::async_trait]
impl Handler for Unmatched {
    async fn handle(
        &self,
        req: &mut SalvoRequest,
        _depot: &mut Depot,
        res: &mut SalvoResponse,
        _ctrl: &mut FlowCtrl,
    ) {
        respond(
            self.0
                .unmatched(req.method().as_str(), req.uri().path(), self.1),
            res,
        );
    }
}

/// The salvo `Service` for `app` under `limits`: one router per endpoint, then the JSON fallback.
fn service(app: Arc<dyn AppHandle>, limits: &ServerLimits) -> Service {
    let mut root = Router::new();
    for (endpoint, e) in app.endpoints().iter().enumerate() {
        let mut router = Router::with_path(e.path.trim_start_matches('/'));
        for &(method, route) in &e.methods {
            let goal = RouteGoal {
                app: app.clone(),
                endpoint,
                route,
                limit: limits.body_limit(e.limit),
                limits: *limits,
            };
            router = match method {
                Method::Get => router.get(goal),
                Method::Post => router.post(goal),
                Method::Put => router.put(goal),
                Method::Patch => router.patch(goal),
                Method::Delete => router.delete(goal),
            };
        }
        root = root.push(router.goal(Unmatched(app.clone(), Some(endpoint))));
    }
    root = root
        .push(Router::with_path("{**rest}").goal(Unmatched(app.clone(), None)))
        .goal(Unmatched(app, None));
    Service::new(root)
}

fn serve(
    mount: Mount,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    run_service(
        service(mount.app, limits),
        mount.listener,
        workers,
        limits,
        shutdown,
    )
}

/// Serves a salvo `Service` with Brigade's hyper loop, limits, threading and shutdown (the
/// hand-written hello uses it too), one salvo connection handler per connection as salvo's own `Server` makes
/// them. Brigade reads neither of the connection's addresses, so the listener's stands in for both.
fn run_service(
    service: Service,
    listener: crate::Listener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let make = handlers!(service, listener.socket.local_addr()?);
    crate::hyper_loop::serve(make, listener, workers, limits, shutdown)
}

/// The request path over in-memory connections (fuzzing).
fn memory(app: Arc<dyn AppHandle>, limits: &ServerLimits) -> crate::MemoryServer {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    crate::hyper_loop::memory_server(handlers!(service(app, limits), addr), limits)
}

/// The hand-written hello ([`crate::hello`]): one `#[handler]` on one router.
fn hello(
    listener: crate::Listener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    #[salvo_core::handler]
    async fn hello() -> &'static str {
        crate::hello::HELLO
    }
    let router = Router::with_path("bench/hello").get(hello);
    run_service(Service::new(router), listener, workers, limits, shutdown)
}

/// The listener salvo's `RustlsListener` wraps, already bound (the control is handed its socket).
struct Bound(salvo_core::conn::tcp::TcpAcceptor);

impl salvo_core::Listener for Bound {
    type Acceptor = salvo_core::conn::tcp::TcpAcceptor;

    async fn try_bind(self) -> salvo_core::Result<Self::Acceptor> {
        Ok(self.0)
    }
}

/// The kit's rustls configuration as the one configuration of salvo's `RustlsListener`.
struct KitTls(Arc<rustls::ServerConfig>);

impl salvo_core::conn::IntoConfigStream<rustls::ServerConfig> for KitTls {
    type Stream = futures::stream::Once<std::future::Ready<rustls::ServerConfig>>;

    fn into_stream(self) -> Self::Stream {
        futures::stream::once(std::future::ready((*self.0).clone()))
    }
}

/// The control server ([`crate::control`]): two `#[handler]`s on salvo `Router`s, the echo
/// reading the body with `Request::payload` (under salvo's default limit, 64 KiB), served by
/// salvo's own `Server` (its fuse at its default, hyper's builders at salvo's settings, HTTP/1.1
/// and HTTP/2 told apart by the preface: h2c with `http2-cleartext`) on a `TcpAcceptor` from the
/// listener, under TLS on salvo's `RustlsListener` around it with the kit's configuration. One
/// tokio worker.
fn control(c: crate::control::Control) -> anyhow::Result<()> {
    use crate::control::{echo_answer, CONTROL_BODY, ECHO_PATH};
    use salvo_core::conn::{rustls::RustlsListener, tcp::TcpAcceptor};
    use salvo_core::{Listener as _, Server};

    #[salvo_core::handler]
    async fn echo(req: &mut salvo_core::Request) -> Result<String, salvo_core::http::ParseError> {
        Ok(echo_answer(req.payload().await?.len()))
    }
    #[salvo_core::handler]
    async fn other() -> &'static str {
        CONTROL_BODY // the body left unread
    }
    let router = Router::new()
        .push(Router::with_path(ECHO_PATH.trim_start_matches('/')).goal(echo))
        .push(Router::with_path("{**rest}").goal(other))
        .goal(other);
    let service = Service::new(router);
    crate::control::on_one_worker(c, |c| async move {
        let acceptor = TcpAcceptor::try_from(tokio::net::TcpListener::from_std(c.listener)?)?;
        match c.tls {
            None => Server::new(acceptor).serve(service).await,
            Some(config) => {
                let tls = RustlsListener::new(KitTls(config), Bound(acceptor));
                Server::new(tls.try_bind().await?).serve(service).await
            }
        }
        Ok(())
    })
}
