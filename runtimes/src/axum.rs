//! axum: each endpoint becomes a `MethodRouter` on axum's `Router`; the kit takes the path
//! parameters from the raw path, and the body streams through the kit's reader under the
//! endpoint's limit. The router is served as a service by the shared hyper loop
//! ([`crate::hyper_loop`]), not `axum::serve`, which exposes no hyper builder to set limits on.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::Request as AxumRequest;
use axum::http::{header, Method as HttpMethod, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter};
use axum::Router;
use brigade_kit::limits::{read_body_draining, ServerLimits};
use brigade_kit::{AppHandle, Method, Reply};
use hyper_util::service::TowerToHyperService;

use crate::hello::HELLO_TYPE;
use crate::{Mount, Runtime, Shutdown};

/// The registry's entry.
pub(crate) const RUNTIME: Runtime = Runtime {
    name: "axum",
    crates: &["axum", "hyper"],
    threading: "tokio multi-thread runtime, N workers per service",
    engine: crate::TOKIO_EPOLL,
    variant_of: None,
    h3: Ok(crate::hyper_loop::H3_STACK),
    serve_one: serve,
    hello,
    control,
    memory: Some(memory),
};

/// The one place a [`Reply`] becomes an axum response.
fn respond(reply: Reply) -> Response {
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(
            header::CONTENT_TYPE,
            crate::head::content_type_value(reply.content_type),
        )],
        reply.body,
    )
        .into_response()
}

fn filter(m: Method) -> MethodFilter {
    match m {
        Method::Get => MethodFilter::GET,
        Method::Post => MethodFilter::POST,
        Method::Put => MethodFilter::PUT,
        Method::Patch => MethodFilter::PATCH,
        Method::Delete => MethodFilter::DELETE,
    }
}

/// Endpoint `endpoint`'s routes, one per method, and its JSON 405 for the others.
fn endpoint_router(
    app: &Arc<dyn AppHandle>,
    endpoint: usize,
    limits: &ServerLimits,
) -> MethodRouter {
    let e = &app.endpoints()[endpoint];
    let mut router = MethodRouter::new();
    for &(method, route) in &e.methods {
        let (app, limit, timeout) = (
            app.clone(),
            limits.body_limit(e.limit),
            limits.body_read_timeout,
        );
        let handler = move |req: AxumRequest| async move {
            let (parts, body) = req.into_parts();
            let body = if hyper::body::Body::is_end_stream(&body) {
                Bytes::new() // no body (a GET): nothing to read
            } else {
                // Exact when the request announced a Content-Length.
                let length = hyper::body::Body::size_hint(&body).exact();
                match read_body_draining(body.into_data_stream(), length, limit, timeout).await {
                    Ok(b) => b,
                    Err(e) => return respond(app.refused(route, e)),
                }
            };
            let request =
                crate::head::raw_request(parts.uri.path(), parts.uri.query(), &parts.headers, body);
            respond(app.call(route, request).await)
        };
        router = router.on(filter(method), handler);
    }
    let app = app.clone();
    router.fallback(move |method: HttpMethod, uri: Uri| async move {
        respond(app.unmatched(method.as_str(), uri.path(), Some(endpoint)))
    })
}

/// The axum `Router` for `app` under `limits`: its endpoints, each with its JSON 405, and the
/// JSON 404.
pub(crate) fn router(app: Arc<dyn AppHandle>, limits: &ServerLimits) -> Router {
    let mut router = Router::new();
    for (endpoint, e) in app.endpoints().iter().enumerate() {
        router = router.route(e.path, endpoint_router(&app, endpoint, limits));
    }
    router.fallback(move |req: AxumRequest<Body>| async move {
        respond(app.unmatched(req.method().as_str(), req.uri().path(), None))
    })
}

pub(crate) fn serve(
    mount: Mount,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    run_router(
        router(mount.app, limits),
        mount.listener,
        workers,
        limits,
        shutdown,
    )
}

/// Serves any axum `Router` with Brigade's hyper loop, limits, threading and shutdown (the
/// hand-written hello uses it too).
pub(crate) fn run_router(
    router: Router,
    listener: crate::Listener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let service = TowerToHyperService::new(router);
    crate::hyper_loop::serve(move || service.clone(), listener, workers, limits, shutdown)
}

/// The hand-written hello ([`crate::hello`]): one route, axum's plainest idiom.
fn hello(
    listener: crate::Listener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    use axum::routing::get;
    let router = Router::new().route(
        "/bench/hello",
        get(|| async { ([(header::CONTENT_TYPE, HELLO_TYPE)], crate::hello::HELLO) }),
    );
    run_router(router, listener, workers, limits, shutdown)
}

/// The request path over in-memory connections (fuzzing).
fn memory(app: Arc<dyn AppHandle>, limits: &ServerLimits) -> crate::MemoryServer {
    let service = TowerToHyperService::new(router(app, limits));
    crate::hyper_loop::memory_server(move || service.clone(), limits)
}

/// The control server ([`crate::control`]): a `Router` with the two routes, the echo reading the
/// body with axum's `Bytes` extractor (under axum's default body limit, 2 MiB), on one tokio
/// worker. Plaintext: `axum::serve` (hyper-util's auto builder, HTTP/1.1 and h2c by prior knowledge
/// with the `http1` and `http2` features). `axum::serve` takes no TLS, so under TLS the router is
/// served as axum's `low-level-rustls` example does: hyper-util's auto builder on a tokio-rustls
/// stream, with upgrades, the router through `TowerToHyperService`
/// ([`crate::control::serve_hyper_util`]). Everything else is at axum's and hyper's defaults.
fn control(c: crate::control::Control) -> anyhow::Result<()> {
    use crate::control::{echo_answer, CONTROL_BODY, ECHO_PATH};
    let router = Router::new()
        .route(
            ECHO_PATH,
            axum::routing::any(|body: Bytes| async move { echo_answer(body.len()) }),
        )
        .fallback(|| async { CONTROL_BODY }); // no extractor: the body left unread
    crate::control::on_one_worker(c, |c| async move {
        if c.tls.is_some() {
            let service = TowerToHyperService::new(router);
            return crate::control::serve_hyper_util(c, service, true).await;
        }
        let listener = tokio::net::TcpListener::from_std(c.listener)?;
        axum::serve(listener, router).await?;
        Ok(())
    })
}
