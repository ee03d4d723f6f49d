//! actix-web: each endpoint becomes an actix `Resource` with one `Route` per method (a `GET` route
//! answers `HEAD` too; actix-web leaves the body out) and a 405 default service; the body stream
//! comes through actix's `Payload` extractor into the kit's reader under the endpoint's limit.
//!
//! Limits: actix-web's own knobs are set from the [`ServerLimits`] (`client_request_timeout` for
//! the head, `keep_alive` for idle connections; it keeps its 1 s disconnect timeout and its fixed
//! 96 headers and 128 KiB head buffer, which the kit's limits stay under); the kit checks the head's
//! count and size itself in every handler, and the connection limit is the kit's gate, applied as
//! each connection opens (`on_connect`): past it the socket is shut at once.
//!
//! Protocols through actix-web's own support: HTTP/1.1 (`listen`), HTTP/1.1 and h2c on one port
//! (`listen_auto_h2c`, also for `--protocol h2c`: actix-web has no HTTP/2-only plaintext listener,
//! so there it answers HTTP/1.1 too), and TLS with the kit's rustls configuration
//! (`listen_rustls_0_23`, ALPN `h2, http/1.1`, its handshake timeout at the head limit). Of the
//! HTTP/2 settings actix-web lets the two windows be set; its stream count (h2's default, no limit
//! but the client's) and header list (h2's 16 MiB) are its own; its TLS gate runs after the
//! handshake (`on_connect` sees the connection then).

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use actix_web::dev::Service as _;

use actix_web::http::{header, ConnectionType};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use brigade_kit::http::Endpoint;
use brigade_kit::limits::{read_body, ConnectionGate, ServeProtocol, ServerLimits};
use brigade_kit::rules::{self, Admitted, Refused};
use brigade_kit::{ApiError, AppHandle, Method, RawRequest, Reply};

use crate::hello::HELLO_TYPE;
use crate::idle::{Conn, Held};
use crate::{Mount, Runtime, Shutdown, GRACE};

/// The registry's entry.
pub(crate) const RUNTIME: Runtime = Runtime {
    name: "actix",
    crates: &["actix-web"],
    threading: "actix-web HttpServer, N single-threaded workers per service",
    engine: crate::TOKIO_EPOLL,
    variant_of: None,
    h3: Err("actix-web has no HTTP/3 server"),
    serve_one: serve,
    hello,
    control,
    memory: None,
};

content_type_values!(header::HeaderValue);

/// The W3C trace context header, parsed once (a lookup by `&str` parses the name on every request).
const TRACEPARENT: header::HeaderName = header::HeaderName::from_static("traceparent");
/// The caller's budget header ([`brigade_kit::deadline::BUDGET_HEADER`]).
const BUDGET: header::HeaderName =
    header::HeaderName::from_static(brigade_kit::deadline::BUDGET_HEADER);

/// The one place a [`Reply`] becomes an actix response.
fn respond(reply: Reply) -> HttpResponse {
    let status = actix_web::http::StatusCode::from_u16(reply.status)
        .unwrap_or(actix_web::http::StatusCode::INTERNAL_SERVER_ERROR);
    HttpResponse::build(status)
        .insert_header((header::CONTENT_TYPE, content_type_value(reply.content_type)))
        .body(reply.body)
}

fn method(m: Method) -> actix_web::http::Method {
    match m {
        Method::Get => actix_web::http::Method::GET,
        Method::Post => actix_web::http::Method::POST,
        Method::Put => actix_web::http::Method::PUT,
        Method::Patch => actix_web::http::Method::PATCH,
        Method::Delete => actix_web::http::Method::DELETE,
    }
}

house_rules!(
    actix_web::http::Version::HTTP_10,
    actix_web::http::Version::HTTP_2
);

/// A header's value as text, if present and ASCII.
fn text(req: &HttpRequest, name: header::HeaderName) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// The body of `req` through the kit's reader, `limit` bytes at most.
async fn body(
    req: &HttpRequest,
    payload: web::Payload,
    limit: usize,
    limits: &ServerLimits,
) -> Result<Bytes, ApiError> {
    let length = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    // (actix hands an `Upgrade` request the rest of the connection as its payload; over HTTP/2
    // the payload says where the body ends.)
    let http1 = req.version() < actix_web::http::Version::HTTP_2;
    let coded = req.headers().contains_key(header::TRANSFER_ENCODING);
    if crate::head::bodiless(length, http1 && !coded) {
        return Ok(Bytes::new()); // no body (a GET): nothing to read
    }
    read_body(payload, length, limit, limits.body_read_timeout).await
}

/// Endpoint `endpoint` as an actix `Resource` at `path` (within its scope): one route per method,
/// each running the house rules once, then the body and the kit's call; the JSON 405 for the rest.
fn resource(
    app: &Arc<dyn AppHandle>,
    endpoint: usize,
    path: &str,
    limits: ServerLimits,
) -> actix_web::Resource {
    let e = &app.endpoints()[endpoint];
    let mut res = web::resource(path);
    let limit = limits.body_limit(e.limit);
    for &(m, route) in &e.methods {
        let app = app.clone();
        let handler = move |req: HttpRequest, payload: web::Payload| {
            let app = app.clone();
            async move {
                let admitted = match admit(&req, &limits) {
                    Ok(a) => a,
                    Err(r) => return closing(respond(app.refused(route, r.error)), r.close),
                };
                let body = match body(&req, payload, limit, &limits).await {
                    Ok(b) => b,
                    Err(e) => return answer(app.refused(route, e), admitted),
                };
                let request = RawRequest {
                    path: req.uri().path().to_string(),
                    query: Some(req.query_string().to_string()).filter(|q| !q.is_empty()),
                    content_type: text(&req, header::CONTENT_TYPE),
                    body,
                    traceparent: text(&req, TRACEPARENT),
                    budget: text(&req, BUDGET),
                };
                answer(app.call(route, request).await, admitted)
            }
        };
        if m == Method::Get {
            // RFC 9110: HEAD for every GET route; actix-web sends the head without the body.
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

/// The JSON 404 of a request no resource takes, after the kit's head limits.
fn not_found(
    app: &Arc<dyn AppHandle>,
) -> impl Fn(HttpRequest) -> std::future::Ready<HttpResponse> + Clone + 'static {
    let app = app.clone();
    move |req: HttpRequest| {
        let limits = req
            .app_data::<web::Data<ServerLimits>>()
            .map_or_else(ServerLimits::default, |l| *l.get_ref());
        std::future::ready(unmatched(&app, &req, &limits, None))
    }
}

/// Registers `app`'s endpoints and the JSON 404 on an actix service config: one `Scope` per first
/// path segment (`/waiters`, `/bench`, ...) holding its resources, as an actix app is usually laid
/// out, so a request is matched against its scope's few resources rather than all of them.
pub(crate) fn configure(
    app: Arc<dyn AppHandle>,
    limits: &ServerLimits,
) -> impl Fn(&mut web::ServiceConfig) + Clone + Send + 'static {
    let limits = *limits;
    move |cfg: &mut web::ServiceConfig| {
        cfg.app_data(web::Data::new(limits));
        let mut scopes: Vec<(&str, Vec<(usize, &Endpoint)>)> = Vec::new();
        for (i, e) in app.endpoints().iter().enumerate() {
            let first = e
                .path
                .trim_start_matches('/')
                .split('/')
                .next()
                .unwrap_or("");
            match scopes.iter_mut().find(|(f, _)| *f == first) {
                Some((_, group)) => group.push((i, e)),
                None => scopes.push((first, vec![(i, e)])),
            }
        }
        for (first, group) in scopes {
            let prefix = format!("/{first}");
            if first.starts_with('{') {
                for (i, e) in group {
                    cfg.service(resource(&app, i, e.path, limits));
                }
                continue;
            }
            let mut scope = web::scope(&prefix).default_service(web::to(not_found(&app)));
            for (i, e) in group {
                scope = scope.service(resource(&app, i, &e.path[prefix.len()..], limits));
            }
            cfg.service(scope);
        }
        cfg.default_service(web::to(not_found(&app)));
    }
}

pub(crate) fn serve(
    mount: Mount,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let routes = configure(mount.app, limits);
    run_config(routes, mount.listener, workers, limits, shutdown)
}

/// Serves any actix service configuration with Brigade's threading, limits and shutdown (the
/// hand-written hello uses it too).
pub(crate) fn run_config(
    routes: impl Fn(&mut web::ServiceConfig) + Clone + Send + 'static,
    listener: crate::Listener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let limits = *limits;
    let gate = ConnectionGate::new(limits.max_connections);
    // Set once the server drains: every answer from then on closes its connection.
    let draining = Arc::new(AtomicBool::new(false));
    let set = draining.clone();
    // The listening socket itself (a second handle on it), to stop listening when the drain
    // begins: the runtime's own stop only stops accepting, and the kernel would go on completing
    // handshakes that no one answers.
    let listening = listener.socket.try_clone()?;
    let open = gate.clone();
    let held = Held::default();
    let closer = held.clone();
    actix_web::rt::System::new().block_on(async move {
        let server = actix_web::HttpServer::new(move || {
            let draining = draining.clone();
            actix_web::App::new()
                .wrap_fn(move |req, srv| {
                    let close = draining.load(Ordering::Relaxed);
                    let busy = req.conn_data::<Arc<Conn>>().map(|c| c.busy());
                    let answer = srv.call(req);
                    async move {
                        let _busy = busy;
                        let mut res = answer.await?;
                        if close {
                            res.response_mut()
                                .head_mut()
                                .set_connection_type(ConnectionType::Close);
                        }
                        Ok(res)
                    }
                })
                .configure(routes.clone())
        })
        .workers(workers)
        .backlog(1024)
        .keep_alive(limits.keep_alive_timeout)
        .client_request_timeout(limits.header_read_timeout)
        // actix-web's own cap is per worker: the kit's gate below is the real limit.
        .max_connections(limits.max_connections)
        .on_connect(move |conn, extensions| on_connect(&gate, &held, conn, extensions))
        .h2_initial_window_size(limits.http2.initial_stream_window)
        .h2_initial_connection_window_size(limits.http2.initial_connection_window)
        .tls_handshake_timeout(limits.header_read_timeout)
        .disable_signals()
        .shutdown_timeout(GRACE.as_secs());
        let server = match (listener.tls, limits.protocol) {
            (Some(tls), _) => server.listen_rustls_0_23(listener.socket, (*tls).clone())?,
            (None, ServeProtocol::H1) => server.listen(listener.socket)?,
            (None, ServeProtocol::H2c | ServeProtocol::Auto) => {
                server.listen_auto_h2c(listener.socket)?
            }
            // (`Runtime::check_protocol` refuses h3 before this; h3 without TLS never validates.)
            (None, ServeProtocol::H3) => anyhow::bail!(crate::H3_NOT_OFFERED),
        }
        .run();
        let handle = server.handle();
        actix_web::rt::spawn(async move {
            // The listener closes at once, the connections still open close after their next
            // answer, then the rest within the grace.
            crate::drain_listener(shutdown, listening, set, || open.open()).await;
            closer.close_idle();
            handle.stop(true).await;
        });
        server.await?;
        Ok(())
    })
}

/// A new connection, at `on_connect`: admitted by the kit's gate (its permit and its tracking kept
/// in the connection's data, living as long as it), or, past the connection limit, shut at once
/// before any byte is read.
fn on_connect(
    gate: &ConnectionGate,
    held: &Held,
    conn: &dyn std::any::Any,
    extensions: &mut actix_web::dev::Extensions,
) {
    match gate.try_enter() {
        Some(permit) => {
            extensions.insert(permit);
            if let Some(c) = tcp_of(conn).and_then(|tcp| held.track(tcp.as_fd())) {
                extensions.insert(c);
            }
        }
        None => {
            if let Some(tcp) = tcp_of(conn) {
                let _ = socket2::SockRef::from(tcp).shutdown(std::net::Shutdown::Both);
            }
        }
    }
}

/// The TCP socket under a connection actix-web hands `on_connect`: plaintext or TLS.
fn tcp_of(conn: &dyn std::any::Any) -> Option<&actix_web::rt::net::TcpStream> {
    use actix_tls::accept::rustls_0_23::TlsStream;
    conn.downcast_ref::<actix_web::rt::net::TcpStream>()
        .or_else(|| {
            conn.downcast_ref::<TlsStream<actix_web::rt::net::TcpStream>>()
                .map(|tls| tls.get_ref().0)
        })
}

/// The hand-written hello ([`crate::hello`]): one route, actix-web's plainest idiom.
fn hello(
    listener: crate::Listener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let routes = |cfg: &mut web::ServiceConfig| {
        cfg.route(
            "/bench/hello",
            web::get().to(|| async {
                HttpResponse::Ok()
                    .content_type(HELLO_TYPE)
                    .body(crate::hello::HELLO)
            }),
        );
    };
    run_config(routes, listener, workers, limits, shutdown)
}

/// The control server ([`crate::control`]): actix-web's own `HttpServer` on one worker and actix's
/// own system, HTTP/1.1 and h2c by prior knowledge on the plaintext listener
/// (`listen_auto_h2c`), or the kit's rustls configuration under TLS (`listen_rustls_0_23`, which
/// puts its own ALPN `h2, http/1.1` in front of the kit's). Every timeout, limit and HTTP/2
/// setting is actix-web's default; the echo reads the payload stream itself, so actix-web's
/// 256 KiB default of its `Bytes` extractor does not apply.
fn control(c: crate::control::Control) -> anyhow::Result<()> {
    use crate::control::{echo_answer, CONTROL_BODY, ECHO_PATH};
    use futures::StreamExt;
    actix_web::rt::System::new().block_on(async move {
        let server = actix_web::HttpServer::new(|| {
            actix_web::App::new()
                .route(
                    ECHO_PATH,
                    web::to(|mut payload: web::Payload| async move {
                        let mut length = 0;
                        while let Some(chunk) = payload.next().await {
                            length += chunk?.len();
                        }
                        Ok::<_, actix_web::Error>(
                            HttpResponse::Ok()
                                .content_type("text/plain")
                                .body(echo_answer(length)),
                        )
                    }),
                )
                .default_service(web::to(|| async {
                    HttpResponse::Ok()
                        .content_type("text/plain")
                        .body(CONTROL_BODY)
                }))
        })
        .workers(1);
        let server = match c.tls {
            Some(tls) => server.listen_rustls_0_23(c.listener, (*tls).clone())?,
            None => server.listen_auto_h2c(c.listener)?,
        };
        server.run().await?;
        Ok(())
    })
}
