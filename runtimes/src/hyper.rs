//! hyper: no framework. hyper 1's HTTP/1.1 connection per accepted socket, the application's own
//! matcher (the `matchit` router axum also uses) for routing, and `http_body_util::Limited` for bodies.

use std::convert::Infallible;
use std::sync::Arc;

use brigade_kit::{ApiError, AppHandle, Method, Reply};
use bytes::Bytes;
use http::{header, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;

use crate::{run_on_tokio, Mount, Shutdown};

/// The one place a [`Reply`] becomes a hyper response.
fn respond(reply: Reply) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(reply.body));
    *resp.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        crate::content_type_value(reply.content_type),
    );
    resp
}

async fn handle(
    app: Arc<dyn AppHandle>,
    req: http::Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path();
    let Ok(found) = app.matcher().at(path) else {
        return Ok(respond(app.unmatched(parts.method.as_str(), path)));
    };
    let endpoint = &app.endpoints()[*found.value];
    let Some(route) = Method::parse(parts.method.as_str()).and_then(|m| endpoint.route_for(m))
    else {
        return Ok(respond(app.unmatched(parts.method.as_str(), path)));
    };
    let params = found
        .params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let body = if hyper::body::Body::is_end_stream(&body) {
        Bytes::new() // no body (a GET): nothing to collect
    } else {
        match Limited::new(body, endpoint.limit).collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                return Ok(respond(
                    app.refused(route, ApiError::too_large(endpoint.limit)),
                ))
            }
            Err(e) => {
                return Ok(respond(app.refused(
                    route,
                    ApiError::bad_request(format!("reading the body: {e}")),
                )))
            }
        }
    };
    let request = crate::request_from(&parts, params, body);
    Ok(respond(app.call(route, request).await))
}

pub(crate) fn serve(mount: Mount, workers: usize, shutdown: Shutdown) -> anyhow::Result<()> {
    let app = mount.app;
    run_service(
        move |req| handle(app.clone(), req),
        mount.listener,
        workers,
        shutdown,
    )
}

/// Serves any hyper handler with Brigade's accept loop, threading and shutdown (the baseline uses
/// it too).
pub(crate) fn run_service<H, F>(
    handler: H,
    listener: std::net::TcpListener,
    workers: usize,
    shutdown: Shutdown,
) -> anyhow::Result<()>
where
    H: Fn(http::Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: std::future::Future<Output = Result<Response<Full<Bytes>>, Infallible>> + Send + 'static,
{
    run_on_tokio(workers, shutdown.clone(), async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let graceful = GracefulShutdown::new();
        let stop = shutdown.wait();
        tokio::pin!(stop);
        loop {
            let (stream, _) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        continue;
                    }
                },
                _ = &mut stop => break,
            };
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service_fn(handler.clone()));
            let conn = graceful.watch(conn);
            tokio::spawn(async move {
                if let Err(e) = conn.await {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
            });
        }
        drop(listener);
        graceful.shutdown().await;
        Ok(())
    })
}
