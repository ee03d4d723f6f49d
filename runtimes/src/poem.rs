//! poem: each endpoint becomes an [`EndpointMethods`] at its path on poem's `Route` (the pattern in
//! poem's own `:name` syntax): it picks the route for the method (the kit's JSON 405 naming the
//! endpoint's methods when none is the request's) and runs its [`RouteEndpoint`], which reads the
//! body through the kit's reader under the endpoint's limit (the kit takes the path parameters
//! from the raw path). What the `Route` refuses (poem's `NotFoundError`) becomes the kit's JSON 404. The route is served as poem's server serves it, a hyper `service_fn` per request, by the
//! shared loop ([`crate::hyper_loop`]) with the kit's limits set on hyper's builder.

use std::convert::Infallible;
use std::sync::Arc;

use brigade_kit::http::{pattern_segments, Segment};
use brigade_kit::limits::{read_body_draining, ServerLimits};
use brigade_kit::{AppHandle, Method, Reply};
use bytes::Bytes;
use http_body_util::BodyExt as _;
use poem::http::{header, uri::Scheme, StatusCode};
use poem::{Addr, Endpoint, IntoEndpoint, Response, Route};

use crate::{Mount, Runtime, Shutdown};

/// The registry's entry.
pub(crate) const RUNTIME: Runtime = Runtime {
    name: "poem",
    crates: &["poem", "hyper"],
    threading: "tokio multi-thread runtime, N workers per service",
    engine: crate::TOKIO_EPOLL,
    variant_of: None,
    h3: Ok(crate::hyper_loop::H3_STACK),
    serve_one: serve,
    hello,
    control,
    memory: Some(memory),
};

/// A poem endpoint as a hyper service, each request turned into poem's own as poem's server does
/// (a macro: the service's type is a closure's).
macro_rules! as_service {
    ($ep:expr, $addr:expr) => {{
        let ep = Arc::new($ep.into_endpoint());
        let addr = $addr;
        hyper::service::service_fn(move |req: http::Request<crate::hyper_loop::RequestBody>| {
            let (ep, addr) = (ep.clone(), addr.clone());
            async move {
                // As poem's `From<(http::Request<Incoming>, ..)>` does, for the loop's body type.
                let (parts, body) = req.into_parts();
                let parts = poem::RequestParts::from((
                    parts,
                    poem::web::LocalAddr(addr.clone()),
                    poem::web::RemoteAddr(addr),
                    poem::http::uri::Scheme::HTTP,
                ));
                let body = poem::Body::from(body.map_err(std::io::Error::other).boxed());
                let req = poem::Request::from_parts(parts, body);
                Ok::<_, Infallible>(ep.get_response(req).await.into())
            }
        })
    }};
}

/// The one place a [`Reply`] becomes a poem response.
fn respond(reply: Reply) -> Response {
    Response::builder()
        .status(StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(
            header::CONTENT_TYPE,
            crate::head::content_type_value(reply.content_type),
        )
        .body(reply.body)
}

/// One route of the table, as a poem endpoint.
struct RouteEndpoint {
    app: Arc<dyn AppHandle>,
    route: usize,
    limit: usize,
    limits: ServerLimits,
}

impl Endpoint for RouteEndpoint {
    type Output = Response;

    async fn call(&self, mut req: poem::Request) -> poem::Result<Response> {
        let (app, route) = (&self.app, self.route);
        let body = req.take_body();
        let body = if body.is_empty() {
            Bytes::new() // no body (a GET): nothing to read
        } else {
            let length = crate::head::content_length(req.headers());
            let data = body.into_bytes_stream();
            match read_body_draining(data, length, self.limit, self.limits.body_read_timeout).await
            {
                Ok(b) => b,
                Err(e) => return Ok(respond(app.refused(route, e))),
            }
        };
        let request =
            crate::head::raw_request(req.uri().path(), req.uri().query(), req.headers(), body);
        Ok(respond(app.call(route, request).await))
    }
}

/// One endpoint of the table at its path on poem's `Route`: its routes, one per method. (poem's
/// own `RouteMethod` answers the methods it lacks with an error that does not say which endpoint
/// refused them.)
struct EndpointMethods {
    app: Arc<dyn AppHandle>,
    endpoint: usize,
    routes: Vec<(poem::http::Method, RouteEndpoint)>,
}

impl Endpoint for EndpointMethods {
    type Output = Response;

    async fn call(&self, req: poem::Request) -> poem::Result<Response> {
        match self.routes.iter().find(|(m, _)| m == req.method()) {
            Some((_, route)) => route.call(req).await,
            None => {
                let (method, path) = (req.method().as_str(), req.uri().path());
                Ok(respond(self.app.unmatched(
                    method,
                    path,
                    Some(self.endpoint),
                )))
            }
        }
    }
}

/// `pattern` (`/tables/{id}`) in poem's syntax (`/tables/:id`).
fn poem_path(pattern: &str) -> String {
    let mut path = String::new();
    for segment in pattern_segments(pattern) {
        path.push('/');
        match segment {
            Segment::Literal(lit) => path.push_str(lit),
            Segment::Param(name) => {
                path.push(':');
                path.push_str(name);
            }
        }
    }
    if path.is_empty() {
        path.push('/');
    }
    path
}

/// The route table on poem's `Route`; what it refuses answered by the kit.
struct App {
    route: Route,
    app: Arc<dyn AppHandle>,
}

impl Endpoint for App {
    type Output = Response;

    async fn call(&self, req: poem::Request) -> poem::Result<Response> {
        let (method, path) = (req.method().clone(), req.uri().path().to_owned());
        match self.route.call(req).await {
            Ok(resp) => Ok(resp),
            // The route's own refusal (no path; the endpoints answer their 405s): the kit's 404.
            Err(_) => Ok(respond(self.app.unmatched(method.as_str(), &path, None))),
        }
    }
}

fn app(app: Arc<dyn AppHandle>, limits: &ServerLimits) -> App {
    let mut route = Route::new();
    for (endpoint, e) in app.endpoints().iter().enumerate() {
        let mut routes = Vec::with_capacity(e.methods.len());
        for &(method, r) in &e.methods {
            let ep = RouteEndpoint {
                app: app.clone(),
                route: r,
                limit: limits.body_limit(e.limit),
                limits: *limits,
            };
            let m = match method {
                Method::Get => poem::http::Method::GET,
                Method::Post => poem::http::Method::POST,
                Method::Put => poem::http::Method::PUT,
                Method::Patch => poem::http::Method::PATCH,
                Method::Delete => poem::http::Method::DELETE,
            };
            routes.push((m, ep));
        }
        let methods = EndpointMethods {
            app: app.clone(),
            endpoint,
            routes,
        };
        route = route.at(poem_path(e.path), methods);
    }
    App { route, app }
}

fn serve(
    mount: Mount,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    run_endpoint(
        app(mount.app, limits),
        mount.listener,
        workers,
        limits,
        shutdown,
    )
}

/// Serves any poem endpoint with Brigade's hyper loop, limits, threading and shutdown (the
/// hand-written hello uses it too), each request turned into poem's own as poem's server does. Brigade reads
/// neither of the connection's addresses, so the listener's stands in for both.
fn run_endpoint<E: IntoEndpoint>(
    ep: E,
    listener: crate::Listener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()>
where
    E::Endpoint: 'static,
{
    let service = as_service!(ep, Addr::SocketAddr(listener.socket.local_addr()?));
    crate::hyper_loop::serve(move || service.clone(), listener, workers, limits, shutdown)
}

/// The request path over in-memory connections (fuzzing).
fn memory(app: Arc<dyn AppHandle>, limits: &ServerLimits) -> crate::MemoryServer {
    let addr = Addr::SocketAddr(std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
    let service = as_service!(self::app(app, limits), addr);
    crate::hyper_loop::memory_server(move || service.clone(), limits)
}

/// The hand-written hello ([`crate::hello`]): one `#[handler]` at one path.
fn hello(
    listener: crate::Listener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    #[poem::handler]
    fn hello() -> &'static str {
        crate::hello::HELLO
    }
    let route = Route::new().at("/bench/hello", poem::get(hello));
    run_endpoint(route, listener, workers, limits, shutdown)
}

/// The kit's TLS in front of poem's `TcpAcceptor`, each handshake on its own task, off the accept
/// loop, as poem's own TLS acceptors leave it to the connection's task. (poem's `rustls` feature
/// builds its configuration from PEM on aws-lc-rs, so it can take neither the kit's configuration
/// nor its ring provider.)
struct KitTlsAcceptor {
    local_addr: Vec<poem::web::LocalAddr>,
    handshaken: tokio::sync::mpsc::UnboundedReceiver<(
        tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
        poem::web::RemoteAddr,
    )>,
}

impl KitTlsAcceptor {
    fn new(mut tcp: poem::listener::TcpAcceptor, config: Arc<rustls::ServerConfig>) -> Self {
        use poem::listener::Acceptor as _;
        let (local_addr, tls) = (tcp.local_addr(), tokio_rustls::TlsAcceptor::from(config));
        let (done, handshaken) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _, remote, _)) = tcp.accept().await else {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue; // out of descriptors, say: wait for some to close
                };
                let (tls, done) = (tls.clone(), done.clone());
                tokio::spawn(async move {
                    if let Ok(stream) = tls.accept(stream).await {
                        let _ = done.send((stream, remote));
                    }
                });
            }
        });
        Self {
            local_addr,
            handshaken,
        }
    }
}

impl poem::listener::Acceptor for KitTlsAcceptor {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;

    fn local_addr(&self) -> Vec<poem::web::LocalAddr> {
        self.local_addr.clone()
    }

    async fn accept(
        &mut self,
    ) -> std::io::Result<(
        Self::Io,
        poem::web::LocalAddr,
        poem::web::RemoteAddr,
        Scheme,
    )> {
        let ended = || std::io::Error::other("the TLS accept loop ended");
        let (io, remote) = self.handshaken.recv().await.ok_or_else(ended)?;
        let local = self.local_addr.first().cloned().ok_or_else(ended)?;
        Ok((io, local, remote, Scheme::HTTPS))
    }
}

/// The control server ([`crate::control`]): two `#[handler]`s on poem's `Route` (the echo at its
/// path, reading the body with poem's `Bytes` extractor, which sets no limit; every other path at
/// `/` and `/*rest`), served by poem's own `Server` on a `TcpAcceptor` from the listener
/// (hyper-util's auto builder at poem's settings: HTTP/1.1 and h2c by prior knowledge), under TLS
/// on [`KitTlsAcceptor`] around it. No idle timeout (poem's default). One tokio worker.
fn control(c: crate::control::Control) -> anyhow::Result<()> {
    use crate::control::{echo_answer, CONTROL_BODY, ECHO_PATH};
    use poem::listener::TcpAcceptor;

    #[poem::handler]
    fn echo(body: Bytes) -> String {
        echo_answer(body.len())
    }
    #[poem::handler]
    fn other() -> &'static str {
        CONTROL_BODY // the body left unread
    }
    let route = Route::new()
        .at(ECHO_PATH, echo)
        .at("/", other)
        .at("/*rest", other);
    crate::control::on_one_worker(c, |c| async move {
        let tcp = TcpAcceptor::from_std(c.listener)?;
        match c.tls {
            None => poem::Server::new_with_acceptor(tcp).run(route).await?,
            Some(config) => {
                let tls = KitTlsAcceptor::new(tcp, config);
                poem::Server::new_with_acceptor(tls).run(route).await?
            }
        }
        Ok(())
    })
}
