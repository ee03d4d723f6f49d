//! warp: each endpoint becomes a chain of warp path filters (`warp::path(..)`, `warp::path::param`)
//! ending in `path::end()`, then method, query, content type and the body stream; endpoints are
//! combined with `or`, and a final filter answers the JSON 404.

use std::sync::Arc;

use brigade_kit::http::{pattern_segments, Endpoint, Segment};
use brigade_kit::{ApiError, AppHandle, Method, Reply, Request};
use bytes::{Buf, Bytes, BytesMut};
use futures::{Stream, StreamExt};
use warp::filters::BoxedFilter;
use warp::http::{header, Response, StatusCode};
use warp::hyper::body::Bytes as WarpBytes;
use warp::Filter;

use crate::{run_on_tokio, Mount, Shutdown};

type Reply_ = Response<WarpBytes>;

/// The one place a [`Reply`] becomes a warp response.
fn respond(reply: Reply) -> Reply_ {
    let mut resp = Response::new(reply.body);
    *resp.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(reply.content_type),
    );
    resp
}

/// Reads a body stream up to `limit` bytes; more is a 413.
async fn collect_limited(
    mut body: impl Stream<Item = Result<impl Buf, warp::Error>> + Unpin,
    limit: usize,
) -> Result<Bytes, ApiError> {
    let mut out = BytesMut::new();
    while let Some(chunk) = body.next().await {
        let mut chunk =
            chunk.map_err(|e| ApiError::bad_request(format!("reading the body: {e}")))?;
        if out.len() + chunk.remaining() > limit {
            return Err(ApiError::too_large(limit));
        }
        while chunk.has_remaining() {
            let part = chunk.chunk();
            out.extend_from_slice(part);
            let n = part.len();
            chunk.advance(n);
        }
    }
    Ok(out.freeze())
}

fn path_filter(pattern: &'static str) -> BoxedFilter<(Vec<String>,)> {
    let mut f = warp::any().map(Vec::new).boxed();
    for seg in pattern_segments(pattern) {
        f = match seg {
            Segment::Literal(lit) => f.and(warp::path(lit)).boxed(),
            Segment::Param(_) => f
                .and(warp::path::param::<String>())
                .map(|mut v: Vec<String>, p: String| {
                    v.push(p);
                    v
                })
                .boxed(),
        };
    }
    f.and(warp::path::end()).boxed()
}

fn endpoint_filter(app: Arc<dyn AppHandle>, e: Endpoint) -> BoxedFilter<(Reply_,)> {
    let query = warp::query::raw()
        .map(Some)
        .or(warp::any().map(|| None))
        .unify();
    path_filter(e.path)
        .and(warp::method())
        .and(query)
        .and(warp::header::optional::<String>("content-type"))
        .and(warp::body::stream())
        .then(
            move |values: Vec<String>,
                  method: warp::http::Method,
                  query: Option<String>,
                  ct: Option<String>,
                  body| {
                let app = app.clone();
                let e = e.clone();
                async move {
                    let Some(route) = Method::parse(method.as_str()).and_then(|m| e.route_for(m))
                    else {
                        return respond(e.method_not_allowed(method.as_str()).to_reply());
                    };
                    let body = match collect_limited(Box::pin(body), e.limit).await {
                        Ok(b) => b,
                        Err(err) => return respond(err.to_reply()),
                    };
                    let request = Request {
                        params: e.name_params(values),
                        query,
                        content_type: ct,
                        body,
                    };
                    respond(app.call(route, request).await)
                }
            },
        )
        .boxed()
}

/// The warp filter for `app`: every endpoint, then the JSON 404.
pub(crate) fn filter(app: Arc<dyn AppHandle>) -> BoxedFilter<(Reply_,)> {
    let not_found = warp::method().and(warp::path::full()).map(
        |m: warp::http::Method, p: warp::path::FullPath| {
            respond(ApiError::no_route(m.as_str(), p.as_str()).to_reply())
        },
    );
    let mut all = not_found.boxed();
    for e in app.endpoints().iter().rev() {
        all = endpoint_filter(app.clone(), e.clone())
            .or(all)
            .unify()
            .boxed();
    }
    all
}

pub(crate) fn serve(mount: Mount, workers: usize, shutdown: Shutdown) -> anyhow::Result<()> {
    run_filter(filter(mount.app), mount.listener, workers, shutdown)
}

/// Serves any warp filter with Brigade's threading and shutdown (the baseline uses it too).
pub(crate) fn run_filter<F>(
    routes: F,
    listener: std::net::TcpListener,
    workers: usize,
    shutdown: Shutdown,
) -> anyhow::Result<()>
where
    F: Filter + Clone + Send + Sync + 'static,
    F::Extract: warp::Reply,
{
    run_on_tokio(workers, shutdown.clone(), async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        warp::serve(routes)
            .incoming(listener)
            .graceful(shutdown.wait())
            .run()
            .await;
        Ok(())
    })
}
