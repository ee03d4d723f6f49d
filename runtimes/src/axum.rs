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
                Err(e) => return respond(ApiError::bad_request(e.body_text()).to_reply()),
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
                            return respond(ApiError::too_large(limit).to_reply());
                        }
                        return respond(
                            ApiError::bad_request(format!("reading the body: {e}")).to_reply(),
                        );
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
    let for_405 = app.clone();
    router
        .method_not_allowed_fallback(move |method: HttpMethod, uri: Uri| async move {
            let e = for_405
                .matcher()
                .at(uri.path())
                .ok()
                .map(|m| for_405.endpoints()[*m.value].clone());
            match e {
                Some(e) => respond(e.method_not_allowed(method.as_str()).to_reply()),
                None => respond(
                    ApiError::method_not_allowed(format!("{method} is not allowed")).to_reply(),
                ),
            }
        })
        .fallback(|req: AxumRequest<Body>| async move {
            respond(ApiError::no_route(req.method().as_str(), req.uri().path()).to_reply())
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
