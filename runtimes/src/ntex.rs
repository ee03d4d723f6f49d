//! ntex: each endpoint becomes an ntex `web::resource` with one route per method (a `GET` route
//! answers `HEAD` too) and a JSON 405 default service, on ntex's own `App` router; the body stream
//! comes through ntex's `Payload` extractor into the kit's reader under the endpoint's limit.
//!
//! ntex has its own HTTP stack, like actix-web, so it applies the kit's [`ServerLimits`] itself: the
//! HTTP/1.1-only service (`HttpService::h1`, no HTTP/2 upgrade, as on every runtime), its head
//! timer at the head limit (`set_headers_read_rate` with no extension, so a slow head is closed when
//! the limit passes, however it dribbles), its keep-alive timer at the keep-alive limit, actix-web's
//! fixed 96 headers and 128 KiB head buffer as its own backstops; the kit checks the head's count
//! and size itself in every handler, and the connection limit is the kit's gate, applied to each
//! accepted connection before ntex's HTTP service sees it ([`Gate`]): past it the socket is closed at
//! once. ntex's timers count whole seconds, so a limit is rounded up to the next second.
//!
//! Protocols through ntex's own support: `HttpService::h1` for h1, `HttpService::h2` for h2c, and
//! `HttpService::new(..).rustls(..)` under TLS with the kit's rustls configuration (ntex sets the
//! ALPN list `h2, http/1.1` itself) and its handshake timeout at the head limit; the gate stands
//! in front of the TLS handshake. Every HTTP/2 setting of the kit is set on ntex-h2's
//! configuration. `--protocol auto` on plaintext is refused at start: ntex's HTTP service tells
//! HTTP/2 from HTTP/1.1 only by ALPN, so on one plaintext port it would answer h2c with nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use brigade_kit::limits::{
    read_body_draining_here, ConnectionGate, ServeProtocol, ServerLimits, RUNTIME_MAX_HEADERS,
    RUNTIME_MAX_HEADER_BYTES,
};
use brigade_kit::rules::{self, Admitted, Refused};
use brigade_kit::{ApiError, AppHandle, Method, RawRequest, Reply};
use futures::StreamExt;
use ntex::http::h2::Http2ServiceConfig;
use ntex::http::header::{self, HeaderValue};
use ntex::http::{ConnectionType, HttpService, HttpServiceConfig, StatusCode};
use ntex::io::Io;
use ntex::rt::{DefaultRuntime, Runner};
use ntex::service::{
    chain_factory, IntoServiceFactory, Middleware, Service, ServiceCtx, ServiceFactory,
};
use ntex::time::Seconds;
use ntex::tls::TlsConfig;
use ntex::web::{self, App, HttpRequest, HttpResponse};

use crate::hello::HELLO_TYPE;
use crate::{Mount, Runtime, Shutdown, GRACE};

/// The registry's entry.
pub(crate) const RUNTIME: Runtime = Runtime {
    name: "ntex",
    crates: &["ntex"],
    threading: "ntex server, N single-threaded workers per service",
    engine: crate::TOKIO_EPOLL,
    variant_of: None,
    h3: Err("ntex has no HTTP/3 server"),
    serve_one: serve,
    hello,
    control,
    memory: None,
};

content_type_values!(HeaderValue);

/// The W3C trace context header, parsed once (a lookup by `&str` parses the name on every request).
const TRACEPARENT: header::HeaderName = header::HeaderName::from_static("traceparent");
/// The caller's budget header ([`brigade_kit::deadline::BUDGET_HEADER`]).
const BUDGET: header::HeaderName =
    header::HeaderName::from_static(brigade_kit::deadline::BUDGET_HEADER);

/// The one place a [`Reply`] becomes an ntex response.
fn respond(reply: Reply) -> HttpResponse {
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    HttpResponse::build(status)
        .header(header::CONTENT_TYPE, content_type_value(reply.content_type))
        .body(Vec::from(reply.body))
}

fn method(m: Method) -> ntex::http::Method {
    match m {
        Method::Get => ntex::http::Method::GET,
        Method::Post => ntex::http::Method::POST,
        Method::Put => ntex::http::Method::PUT,
        Method::Patch => ntex::http::Method::PATCH,
        Method::Delete => ntex::http::Method::DELETE,
    }
}

/// A header's value as text, if present and ASCII.
fn text(req: &HttpRequest, name: impl header::AsName) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

house_rules!(ntex::http::Version::HTTP_10, ntex::http::Version::HTTP_2);

/// The body of `req` through the kit's reader, `limit` bytes at most.
async fn body(
    req: &HttpRequest,
    payload: web::types::Payload,
    limit: usize,
    limits: &ServerLimits,
) -> Result<bytes::Bytes, ApiError> {
    let length = text(req, header::CONTENT_LENGTH).and_then(|v| v.parse::<u64>().ok());
    // (Over HTTP/2 the payload says where the body ends.)
    let http1 = req.version() < ntex::http::Version::HTTP_2;
    let coded = req.headers().contains_key(header::TRANSFER_ENCODING);
    if crate::head::bodiless(length, http1 && !coded) {
        return Ok(bytes::Bytes::new()); // no body (a GET): nothing to read
    }
    // ntex's chunks are its own `Bytes`; the kit's reader takes the `bytes` crate's. A refused
    // body is drained before the 413: ntex's dispatcher would read an unread body as the next
    // request.
    let chunks = payload.map(|chunk| chunk.map(|b| bytes::Bytes::copy_from_slice(&b)));
    read_body_draining_here(chunks, length, limit, limits.body_read_timeout).await
}

/// Runs route `route` on `req`, which the house rules admitted: the body under `limit`, the call.
async fn call_route(
    app: &Arc<dyn AppHandle>,
    route: usize,
    limit: usize,
    req: &HttpRequest,
    payload: web::types::Payload,
    limits: &ServerLimits,
    admitted: Admitted,
) -> HttpResponse {
    let body = match body(req, payload, limit, limits).await {
        Ok(b) => b,
        Err(e) => return answer(app.refused(route, e), admitted),
    };
    let request = RawRequest {
        path: req.uri().path().to_string(),
        query: Some(req.query_string().to_string()).filter(|q| !q.is_empty()),
        content_type: text(req, header::CONTENT_TYPE),
        traceparent: text(req, TRACEPARENT),
        budget: text(req, BUDGET),
        body,
    };
    answer(app.call(route, request).await, admitted)
}

/// Endpoint `endpoint` as an ntex resource: one route per method, each running the house rules
/// once, then [`call_route`]; the JSON 405 for the rest.
fn resource(
    app: &Arc<dyn AppHandle>,
    endpoint: usize,
    limits: ServerLimits,
) -> web::Resource<web::DefaultError> {
    let e = &app.endpoints()[endpoint];
    let mut res = web::resource(e.path);
    let limit = limits.body_limit(e.limit);
    for &(m, route) in &e.methods {
        let app = app.clone();
        let handler = move |req: HttpRequest, payload: web::types::Payload| {
            let app = app.clone();
            async move {
                match admit(&req, &limits) {
                    Ok(a) => call_route(&app, route, limit, &req, payload, &limits, a).await,
                    Err(r) => closing(respond(app.refused(route, r.error)), r.close),
                }
            }
        };
        if m == Method::Get {
            // RFC 9110: HEAD for every GET route; ntex sends the head without the body.
            res = res.route(web::head().to(handler.clone()));
        }
        res = res.route(web::method(method(m)).to(handler));
    }
    let app = app.clone();
    res.default_service(web::to(move |req: HttpRequest| {
        let response = unmatched(&app, &req, &limits, Some(endpoint));
        async move { response }
    }))
}

/// The ntex `App` for `app` under `limits`: its resources and the JSON 404.
fn configure(
    app: Arc<dyn AppHandle>,
    limits: &ServerLimits,
) -> impl Fn(&mut web::ServiceConfig) + Clone + Send + 'static {
    let limits = *limits;
    move |cfg: &mut web::ServiceConfig| {
        for i in 0..app.endpoints().len() {
            cfg.service(resource(&app, i, limits));
        }
    }
}

fn serve(
    mount: Mount,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    serve_on(DefaultRuntime, mount, workers, limits, shutdown)
}

/// Serves the mount on `runner`'s I/O engine (ntex's default here; io_uring in
/// [`crate::ntex_uring`]).
pub(crate) fn serve_on(
    runner: impl Runner,
    mount: Mount,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let app = mount.app;
    let routes = configure(app.clone(), limits);
    let copied = *limits;
    // What no resource took: ntex's router matches no path segment holding a decoded line break
    // (`%0A`), which the table's own matcher does, so the request goes through the dispatch hyper
    // uses ([`crate::dispatch`]) and gets the answer every other runtime gives; the rest is the
    // kit's JSON 404 or 405. The house rules run here once, as in a resource's handler.
    let not_found = move |req: HttpRequest, payload: web::types::Payload| {
        let app = app.clone();
        async move {
            let admitted = match admit(&req, &copied) {
                Ok(a) => a,
                Err(refused) => return refusal(refused),
            };
            match crate::dispatch::route(&*app, req.method().as_str(), req.path()) {
                Ok(r) => {
                    let limit = copied.body_limit(r.endpoint.limit);
                    call_route(&app, r.route, limit, &req, payload, &copied, admitted).await
                }
                Err(reply) => answer(reply, admitted),
            }
        }
    };
    run_app(
        runner,
        move || {
            App::new()
                .configure(routes.clone())
                .default_service(web::to(not_found.clone()))
        },
        mount.listener,
        workers,
        limits,
        shutdown,
    )
}

/// The kit's connection gate in front of ntex's HTTP service: a connection past the limit is closed
/// before any byte of it is read; an admitted one holds its permit until it ends.
#[derive(Clone)]
struct Gate(ConnectionGate);

/// A service behind the [`Gate`].
struct Gated<S> {
    inner: S,
    gate: ConnectionGate,
}

impl<S, C> Middleware<S, C> for Gate {
    type Service = Gated<S>;

    fn create(&self, inner: S, _: C) -> Gated<S> {
        Gated {
            inner,
            gate: self.0.clone(),
        }
    }
}

impl<S: Service<Io, Response = ()>> Service<Io> for Gated<S> {
    type Response = ();
    type Error = S::Error;

    async fn ready(&self, ctx: ServiceCtx<'_, Self>) -> Result<(), S::Error> {
        ctx.ready(&self.inner).await
    }

    async fn call(&self, io: Io, ctx: ServiceCtx<'_, Self>) -> Result<(), S::Error> {
        let Some(permit) = self.gate.try_enter() else {
            // Past the connection limit: closed at once, before any byte is read.
            io.terminate();
            return Ok(());
        };
        let served = ctx.call(&self.inner, io).await;
        drop(permit);
        served
    }

    async fn shutdown(&self) {
        self.inner.shutdown().await;
    }
}

/// Whole seconds, rounded up (ntex's timers count seconds).
fn seconds(d: std::time::Duration) -> Seconds {
    let whole = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    Seconds(u16::try_from(whole.max(1)).unwrap_or(u16::MAX))
}

/// ntex's HTTP knobs from the kit's limits.
fn http_config(limits: &ServerLimits) -> HttpServiceConfig {
    let head = seconds(limits.header_read_timeout);
    HttpServiceConfig::new()
        .set_keepalive_timeout(seconds(limits.keep_alive_timeout))
        .set_headers_read_rate(head, head, 256)
        .set_max_headers(RUNTIME_MAX_HEADERS)
        .set_max_buf_size(RUNTIME_MAX_HEADER_BYTES)
}

/// ntex-h2's knobs from the kit's HTTP/2 settings.
fn http2_config(limits: &ServerLimits) -> Http2ServiceConfig {
    let h2 = &limits.http2;
    // The windows are at most 2^31 - 1 (checked by `ServerLimits::validate`).
    let window = |w: u32| i32::try_from(w).unwrap_or(i32::MAX);
    Http2ServiceConfig::new()
        .set_max_concurrent_streams(h2.max_concurrent_streams)
        .set_initial_window_size(window(h2.initial_stream_window))
        .set_initial_connection_window_size(window(h2.initial_connection_window))
        .set_max_header_list_size(h2.max_header_list_bytes)
}

/// Every connection's configuration: the HTTP/1.1, HTTP/2 and TLS knobs from the kit's limits.
fn shared_config(limits: &ServerLimits) -> ntex::service::cfg::SharedCfgBuilder {
    ntex::SharedCfg::new("brigade")
        .add(http_config(limits))
        .add(http2_config(limits))
        .add(TlsConfig::new().set_handshake_timeout(seconds(limits.header_read_timeout)))
}

/// Serves the `App` that `make` builds (once per worker) with Brigade's threading, limits and
/// shutdown, every worker on `runner` (the hand-written hello uses it too).
fn run_app<F, A, S, B>(
    runner: impl Runner,
    make: F,
    listener: crate::Listener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()>
where
    F: Fn() -> A + Clone + Send + 'static,
    A: IntoServiceFactory<S, ntex::http::Request, ntex::SharedCfg>,
    S: ServiceFactory<ntex::http::Request, ntex::SharedCfg> + 'static,
    S::Error: ntex::http::ResponseError,
    S::InitError: std::fmt::Debug,
    S::Response: Into<ntex::http::Response<B>>,
    B: ntex::http::body::MessageBody + 'static,
{
    let limits = *limits;
    let gate = Gate(ConnectionGate::new(limits.max_connections));
    // Set once the server drains: every answer from then on closes its connection.
    let draining = Arc::new(AtomicBool::new(false));
    let set = draining.clone();
    // The listening socket itself (a second handle on it), to stop listening when the drain
    // begins: the runtime's own stop only stops accepting, and the kernel would go on completing
    // handshakes that no one answers.
    let listening = listener.socket.try_clone()?;
    let open = gate.clone();
    let config = move || shared_config(&limits);
    // The answers' last step: `Connection: close` on every answer once the drain begins.
    let answers = move || {
        let draining = draining.clone();
        chain_factory(make()).map(move |res: S::Response| {
            let mut res: ntex::http::Response<B> = res.into();
            if draining.load(Ordering::Relaxed) {
                res.head_mut().set_connection_type(ConnectionType::Close);
            }
            res
        })
    };
    ntex::rt::System::new("brigade-ntex", runner).block_on(async move {
        let builder = ntex::server::build()
            .workers(workers)
            .backlog(1024)
            .disable_signals()
            .shutdown_timeout(ntex::time::Millis::from(GRACE));
        // One `listen` per protocol, as each stack is its own type; the rest is the same.
        let (socket, gate) = (listener.socket, gate.clone());
        macro_rules! listen {
            ($stack:expr) => {
                builder.listen("brigade", socket, async move |r| {
                    r.config(config());
                    chain_factory($stack).apply(gate.clone())
                })
            };
        }
        let builder = match (listener.tls, limits.protocol) {
            (Some(tls), _) => listen!(HttpService::new(answers()).rustls((*tls).clone())),
            (None, ServeProtocol::H1) => listen!(HttpService::h1(answers())),
            (None, ServeProtocol::H2c) => listen!(HttpService::h2(answers())),
            // (`Runtime::check_protocol` refuses h3 before this; h3 without TLS never validates.)
            (None, ServeProtocol::H3) => anyhow::bail!(crate::H3_NOT_OFFERED),
            (None, ServeProtocol::Auto) => {
                anyhow::bail!(
                    "ntex cannot serve HTTP/1.1 and h2c on one plaintext port (its HTTP service \
                     tells HTTP/2 only by ALPN): use --protocol h1 or h2c, or TLS"
                )
            }
        };
        let server = builder?.run();
        let handle = server.clone();
        ntex::rt::spawn(async move {
            let left = crate::drain_listener(shutdown, listening, set, || open.0.open()).await;
            // Graceful only with a connection left (ntex's may wait out the grace: reliability.md).
            handle.stop(left).await;
        });
        server.await?;
        Ok(())
    })
}

/// The hand-written hello ([`crate::hello`]): one route, ntex's plainest idiom.
fn hello(
    listener: crate::Listener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    hello_on(DefaultRuntime, listener, workers, limits, shutdown)
}

/// The hand-written hello on `runner`'s I/O engine.
pub(crate) fn hello_on(
    runner: impl Runner,
    listener: crate::Listener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    run_app(
        runner,
        || {
            App::new().route(
                "/bench/hello",
                web::get().to(|| async {
                    HttpResponse::Ok()
                        .content_type(HELLO_TYPE)
                        .body(crate::hello::HELLO)
                }),
            )
        },
        listener,
        workers,
        limits,
        shutdown,
    )
}

/// The control server ([`crate::control`]) on ntex's default I/O engine.
fn control(c: crate::control::Control) -> anyhow::Result<()> {
    control_on(DefaultRuntime, c)
}

/// The control server on `runner`'s I/O engine: ntex's own server on one worker, every timeout,
/// limit and HTTP/2 setting at ntex's defaults. Under TLS, ntex-web's `HttpServer` with the kit's
/// rustls configuration (`listen_rustls`, which sets the ALPN list `h2, http/1.1` itself). On
/// plaintext ntex's own server has no way to serve HTTP/1.1 and h2c on one port (`HttpService`
/// tells HTTP/2 by ALPN only, `HttpServer::listen` serves HTTP/1.1 alone): the control serves
/// ntex's two plaintext services, `HttpService::h1` and `HttpService::h2`, each connection to the
/// one its first bytes ask for ([`opens_with_preface`]), the one piece of the control that is
/// Brigade's; a connection that tells nothing within a second (ntex's default client timeout)
/// goes to HTTP/1.1, whose own timers then close it as they would (else it would stay open).
pub(crate) fn control_on(runner: impl Runner, c: crate::control::Control) -> anyhow::Result<()> {
    use crate::control::{echo_answer, CONTROL_BODY, ECHO_PATH};
    use ntex::service::{fn_factory_with_config, fn_service};
    let app = || {
        App::new()
            .route(
                ECHO_PATH,
                web::to(|mut payload: web::types::Payload| async move {
                    let mut length = 0;
                    while let Some(chunk) = payload.next().await {
                        length += chunk?.len();
                    }
                    let answer = HttpResponse::Ok()
                        .content_type("text/plain")
                        .body(echo_answer(length));
                    Ok::<_, ntex::http::error::PayloadError>(answer)
                }),
            )
            .default_service(web::to(|| async {
                HttpResponse::Ok()
                    .content_type("text/plain")
                    .body(CONTROL_BODY)
            }))
    };
    ntex::rt::System::new("brigade-ntex-control", runner).block_on(async move {
        let server = match c.tls {
            Some(tls) => web::HttpServer::new(async move || app())
                .workers(1)
                .listen_rustls(c.listener, (*tls).clone())?
                .run(),
            None => ntex::server::build()
                .workers(1)
                .listen("control", c.listener, async move |_| {
                    fn_factory_with_config(async move |cfg: ntex::SharedCfg| {
                        let h1 = HttpService::h1(app()).pipeline(cfg.clone()).await?;
                        let h2 = HttpService::h2(app()).pipeline(cfg).await?;
                        Ok::<_, ()>(fn_service(async move |io: Io| {
                            match ntex::time::timeout(Seconds::ONE, opens_with_preface(&io)).await {
                                Ok(true) => h2.call(io).await,
                                _ => h1.call(io).await,
                            }
                        }))
                    })
                })?
                .run(),
        };
        server.await?;
        Ok(())
    })
}

/// Whether the connection opens with HTTP/2's connection preface (h2c by prior knowledge), read
/// only as far as it takes to tell (an HTTP/1.1 request differs from it by its second byte, or its
/// first); the bytes stay in ntex's read buffer for the service that takes the connection.
async fn opens_with_preface(io: &Io) -> bool {
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    loop {
        let (seen, differs) = io.with_read_buf(|buf| {
            let seen = buf.len().min(PREFACE.len());
            (seen, buf[..seen] != PREFACE[..seen])
        });
        if differs {
            return false;
        }
        if seen == PREFACE.len() {
            return true;
        }
        // Closed before it could tell: HTTP/1.1's dispatcher sees the end.
        if !matches!(io.read_ready().await, Ok(Some(()))) {
            return false;
        }
    }
}
