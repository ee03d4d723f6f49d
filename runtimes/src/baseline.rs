//! Hand-written minimal hello servers, one per runtime, in each runtime's plainest idiom: the
//! baseline against which `docs/overhead.md` measures the cost of Brigade's route table. They run
//! with exactly the adapters' threading, listener, limits and shutdown (the adapters' `run_*`
//! functions, under the kit's default [`ServerLimits`]), so the only difference measured is the
//! request path.

use brigade_kit::limits::ServerLimits;

use crate::Shutdown;

/// The body every baseline answers on `GET /bench/hello`, the same as Brigade's.
pub const HELLO: &str = brigade_kit::standard::HELLO;
const TEXT: &str = "text/plain; charset=utf-8";

/// Serves the hand-written hello of runtime `name` on `listener` until `shutdown`. Blocks.
pub fn serve_hello(
    name: &str,
    listener: std::net::TcpListener,
    workers: usize,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let workers = workers.max(1);
    let limits = &ServerLimits::default();
    match name {
        #[cfg(feature = "axum")]
        "axum" => {
            use axum::routing::get;
            let router = axum::Router::new().route(
                "/bench/hello",
                get(|| async { ([(axum::http::header::CONTENT_TYPE, TEXT)], HELLO) }),
            );
            crate::axum::run_router(router, listener, workers, limits, shutdown)
        }
        #[cfg(feature = "actix")]
        "actix" => {
            use actix_web::{web, HttpResponse};
            let routes = |cfg: &mut web::ServiceConfig| {
                cfg.route(
                    "/bench/hello",
                    web::get().to(|| async { HttpResponse::Ok().content_type(TEXT).body(HELLO) }),
                );
            };
            crate::actix::run_config(routes, listener, workers, limits, shutdown)
        }
        #[cfg(feature = "hyper")]
        "hyper" => {
            use bytes::Bytes;
            use http_body_util::Full;
            let hello = |req: http::Request<hyper::body::Incoming>| async move {
                let mut resp = http::Response::new(Full::new(Bytes::from_static(HELLO.as_bytes())));
                if req.uri().path() != "/bench/hello" {
                    *resp.status_mut() = http::StatusCode::NOT_FOUND;
                }
                resp.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    http::HeaderValue::from_static(TEXT),
                );
                Ok::<_, std::convert::Infallible>(resp)
            };
            crate::hyper::run_service(hello, listener, workers, limits, shutdown)
        }
        #[cfg(feature = "warp")]
        "warp" => {
            use warp::Filter;
            let routes = warp::path!("bench" / "hello")
                .and(warp::get())
                .map(|| warp::reply::with_header(HELLO, "content-type", TEXT));
            let service = crate::warp::as_service!(routes);
            crate::http1::serve_http1(service, listener, workers, limits, shutdown)
        }
        other => anyhow::bail!("no baseline for runtime {other:?} in this binary"),
    }
}
