//! axum: each endpoint becomes a `MethodRouter` on axum's `Router`; path parameters come through
//! axum's `RawPathParams` extractor and the body through `axum::body::to_bytes` under the endpoint's
//! limit.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::rejection::RawPathParamsRejection;
use axum::extract::{RawPathParams, Request as AxumRequest};
use axum::http::{header, Method as HttpMethod, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter};
use axum::Router;
use brigade_kit::http::Endpoint;
use brigade_kit::{ApiError, AppHandle, Method, Reply};

use crate::{run_on_tokio, Mount, Shutdown};

/// The one place a [`Reply`] becomes an axum response.
fn respond(reply: Reply) -> Response {
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(
            header::CONTENT_TYPE,
            crate::content_type_value(reply.content_type),
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

fn endpoint_router(app: &Arc<dyn AppHandle>, e: &Endpoint) -> MethodRouter {
    let mut router = MethodRouter::new();
    for &(method, route) in &e.methods {
        let (app, limit) = (app.clone(), e.limit);
        let handler = move |params: Result<RawPathParams, RawPathParamsRejection>,
                            req: AxumRequest| async move {
            let params = match params {
                Ok(p) => p
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                Err(e) => return respond(app.refused(route, ApiError::bad_request(e.body_text()))),
            };
            let (parts, body) = req.into_parts();
            let body = if hyper::body::Body::is_end_stream(&body) {
                Bytes::new() // no body (a GET): nothing to read
            } else {
                match axum::body::to_bytes(body, limit).await {
                    Ok(b) => b,
                    Err(e) => {
                        let e = e.into_inner();
                        if e.downcast_ref::<http_body_util::LengthLimitError>()
                            .is_some()
                        {
                            return respond(app.refused(route, ApiError::too_large(limit)));
                        }
                        return respond(app.refused(
                            route,
                            ApiError::bad_request(format!("reading the body: {e}")),
                        ));
                    }
                }
            };
            let request = crate::request_from(&parts, params, body);
            respond(app.call(route, request).await)
        };
        router = router.on(filter(method), handler);
    }
    router
}

/// The axum `Router` for `app`: its endpoints, JSON 404 and 405 fallbacks.
pub(crate) fn router(app: Arc<dyn AppHandle>) -> Router {
    let mut router = Router::new();
    for e in app.endpoints() {
        router = router.route(e.path, endpoint_router(&app, e));
    }
    let (for_405, for_404) = (app.clone(), app);
    router
        .method_not_allowed_fallback(move |method: HttpMethod, uri: Uri| async move {
            respond(for_405.unmatched(method.as_str(), uri.path()))
        })
        .fallback(move |req: AxumRequest<Body>| async move {
            respond(for_404.unmatched(req.method().as_str(), req.uri().path()))
        })
}

pub(crate) fn serve(mount: Mount, workers: usize, shutdown: Shutdown) -> anyhow::Result<()> {
    run_router(router(mount.app), mount.listener, workers, shutdown)
}

/// Serves any axum `Router` with Brigade's threading and shutdown (the baseline uses it too).
pub(crate) fn run_router(
    router: Router,
    listener: std::net::TcpListener,
    workers: usize,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    run_on_tokio(workers, shutdown.clone(), async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        axum::serve(listener, router)
            .with_graceful_shutdown(shutdown.wait())
            .await?;
        Ok(())
    })
}
