//! hyper: no framework. hyper 1's own connection (HTTP/1.1 or HTTP/2) per accepted socket (the shared
//! [`crate::hyper_loop`] loop), the application's own matcher (the `matchit` router axum also uses) for
//! routing, and the kit's body reader under the endpoint's limit.

use std::convert::Infallible;
use std::sync::Arc;

use brigade_kit::limits::{read_body_draining, ServerLimits};
use brigade_kit::{AppHandle, Reply};
use bytes::Bytes;
use http::{header, Response, StatusCode};
use http_body_util::{BodyDataStream, BodyExt as _, Full};
use hyper::body::Body;
use hyper::service::service_fn;

use crate::hello::HELLO_TYPE;
use crate::hyper_loop::RequestBody;
use crate::{Mount, Runtime, Shutdown};

/// The registry's entry.
pub(crate) const RUNTIME: Runtime = Runtime {
    name: "hyper",
    crates: &["hyper"],
    threading: "tokio multi-thread runtime, N workers per service",
    engine: crate::TOKIO_EPOLL,
    variant_of: None,
    h3: Ok(crate::hyper_loop::H3_STACK),
    serve_one: serve,
    hello,
    control,
    memory: Some(memory),
};

/// The one place a [`Reply`] becomes a hyper response.
fn respond(reply: Reply) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(reply.body));
    *resp.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        crate::head::content_type_value(reply.content_type),
    );
    resp
}

async fn handle(
    app: Arc<dyn AppHandle>,
    limits: ServerLimits,
    req: http::Request<RequestBody>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = req.into_parts();
    let routed = match crate::dispatch::route(&*app, parts.method.as_str(), parts.uri.path()) {
        Ok(r) => r,
        Err(reply) => return Ok(respond(reply)),
    };
    let route = routed.route;
    let body = if body.is_end_stream() {
        Bytes::new() // no body (a GET): nothing to collect
    } else {
        // hyper's size hint is exact when the request announced a Content-Length.
        let length = body.size_hint().exact();
        let limit = limits.body_limit(routed.endpoint.limit);
        let data = BodyDataStream::new(body);
        match read_body_draining(data, length, limit, limits.body_read_timeout).await {
            Ok(b) => b,
            Err(e) => return Ok(respond(app.refused(route, e))),
        }
    };
    let request =
        crate::head::raw_request(parts.uri.path(), parts.uri.query(), &parts.headers, body);
    Ok(respond(app.call(route, request).await))
}

pub(crate) fn serve(
    mount: Mount,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let (app, copied) = (mount.app, *limits);
    run_service(
        move |req| handle(app.clone(), copied, req),
        mount.listener,
        workers,
        limits,
        shutdown,
    )
}

/// Serves any hyper handler with Brigade's accept loop, limits, threading and shutdown (the
/// hand-written hello uses it too).
pub(crate) fn run_service<H, F>(
    handler: H,
    listener: crate::Listener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()>
where
    H: Fn(http::Request<RequestBody>) -> F + Clone + Send + Sync + 'static,
    F: std::future::Future<Output = Result<Response<Full<Bytes>>, Infallible>> + Send + 'static,
{
    let service = service_fn(handler);
    crate::hyper_loop::serve(move || service.clone(), listener, workers, limits, shutdown)
}

/// The hand-written hello ([`crate::hello`]): a `service_fn` that checks the path.
fn hello(
    listener: crate::Listener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let hello = |req: http::Request<RequestBody>| async move {
        let mut resp = Response::new(Full::new(Bytes::from_static(
            crate::hello::HELLO.as_bytes(),
        )));
        if req.uri().path() != "/bench/hello" {
            *resp.status_mut() = StatusCode::NOT_FOUND;
        }
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            http::HeaderValue::from_static(HELLO_TYPE),
        );
        Ok::<_, Infallible>(resp)
    };
    run_service(hello, listener, workers, limits, shutdown)
}

/// The request path over in-memory connections (fuzzing).
fn memory(app: Arc<dyn AppHandle>, limits: &ServerLimits) -> crate::MemoryServer {
    let copied = *limits;
    let service = service_fn(move |req| handle(app.clone(), copied, req));
    crate::hyper_loop::memory_server(move || service.clone(), limits)
}

/// The control server ([`crate::control`]): hyper's own connection per accepted socket through
/// hyper-util's auto builder and its plain `serve_connection` (HTTP/1.1, and HTTP/2 by prior
/// knowledge or by ALPN under TLS: [`crate::control::serve_hyper_util`]), a `service_fn` that
/// checks the path, every setting at hyper's defaults, one tokio worker.
fn control(c: crate::control::Control) -> anyhow::Result<()> {
    let service = service_fn(|req: http::Request<hyper::body::Incoming>| async move {
        let body = if req.uri().path() == crate::control::ECHO_PATH {
            let read = req.into_body().collect().await?.to_bytes();
            crate::control::echo_answer(read.len())
        } else {
            crate::control::CONTROL_BODY.to_owned() // the body left unread
        };
        let mut resp = Response::new(Full::new(Bytes::from(body)));
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/plain"),
        );
        Ok::<_, hyper::Error>(resp)
    });
    crate::control::on_one_worker(c, |c| crate::control::serve_hyper_util(c, service, false))
}
