//! warp: one filter chain takes what a route needs from the request (`warp::method()`,
//! `path::full()`, the raw query, the headers, `body::stream()`) and
//! hands it to the table's dispatch, the application's matcher as on hyper ([`crate::dispatch`]);
//! the body goes through the kit's reader under the endpoint's limit. The filter is served as a
//! service by the shared loop ([`crate::hyper_loop`]), not `warp::serve`, which exposes no hyper
//! builder to set limits on.
//!
//! Why not one warp path filter per endpoint, as a hand-written warp app nests them: warp's `or`
//! tries branches one after another, each boxed (a call and an allocation per branch tried), so a
//! table mounted that way cost 1.68× the instructions of warp's own hello (docs/overhead.md), a cost
//! a comparison would charge to warp rather than to Brigade's glue.

use std::sync::Arc;

use brigade_kit::limits::{read_body_draining, ServerLimits};
use brigade_kit::{AppHandle, Reply};
use warp::http::{header, Response, StatusCode};
use warp::hyper::body::Bytes as WarpBytes;
use warp::Filter;

use crate::hello::HELLO_TYPE;
use crate::{Mount, Runtime, Shutdown};

/// The registry's entry.
pub(crate) const RUNTIME: Runtime = Runtime {
    name: "warp",
    crates: &["warp", "hyper"],
    threading: "tokio multi-thread runtime, N workers per service",
    engine: crate::TOKIO_EPOLL,
    variant_of: None,
    h3: Ok(crate::hyper_loop::H3_STACK),
    serve_one: serve,
    hello,
    control,
    memory: Some(memory),
};

/// A warp filter as the service the shared hyper loop serves (a macro, not a function: the
/// bound warp puts on a filter's error names a trait it does not export). The hello uses it too.
macro_rules! as_service {
    ($filter:expr) => {
        hyper_util::service::TowerToHyperService::new(warp::service($filter))
    };
}

type Reply_ = Response<WarpBytes>;

/// The one place a [`Reply`] becomes a warp response.
fn respond(reply: Reply) -> Reply_ {
    let mut resp = Response::new(reply.body);
    *resp.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        crate::head::content_type_value(reply.content_type),
    );
    resp
}

/// The warp filter for `app` under `limits`: the request's parts, then the table's dispatch.
fn filter(
    app: Arc<dyn AppHandle>,
    limits: &ServerLimits,
) -> impl Filter<Extract = (Reply_,), Error = warp::Rejection> + Clone + Send + Sync + 'static {
    let limits = *limits;
    let query = warp::query::raw()
        .map(Some)
        .or(warp::any().map(|| None))
        .unify();
    warp::method()
        .and(warp::path::full())
        .and(query)
        .and(warp::header::headers_cloned())
        .and(warp::body::stream())
        .then(
            move |method: warp::http::Method,
                  path: warp::path::FullPath,
                  query: Option<String>,
                  headers: warp::http::HeaderMap,
                  body| {
                let app = app.clone();
                async move {
                    let routed = match crate::dispatch::route(&*app, method.as_str(), path.as_str())
                    {
                        Ok(r) => r,
                        Err(reply) => return respond(reply),
                    };
                    let route = routed.route;
                    let length = crate::head::content_length(&headers);
                    // warp shows neither the version nor the body's end, so one poll tells
                    // whether anything frames a body (hyper's body for an HTTP/1.1 request with
                    // neither a length nor a coding is empty).
                    let (body, ended) = first_look(body).await;
                    let body = if crate::head::bodiless(length, ended) {
                        WarpBytes::new() // no body (a GET): nothing to read
                    } else {
                        let limit = limits.body_limit(routed.endpoint.limit);
                        match read_body_draining(body, length, limit, limits.body_read_timeout)
                            .await
                        {
                            Ok(b) => b,
                            Err(err) => return respond(app.refused(route, err)),
                        }
                    };
                    let request =
                        crate::head::raw_request(path.as_str(), query.as_deref(), &headers, body);
                    respond(app.call(route, request).await)
                }
            },
        )
}

pub(crate) fn serve(
    mount: Mount,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let service = as_service!(filter(mount.app, limits));
    crate::hyper_loop::serve(
        move || service.clone(),
        mount.listener,
        workers,
        limits,
        shutdown,
    )
}

/// The hand-written hello ([`crate::hello`]): one `path!` filter, warp's plainest idiom.
fn hello(
    listener: crate::Listener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let routes = warp::path!("bench" / "hello")
        .and(warp::get())
        .map(|| warp::reply::with_header(crate::hello::HELLO, "content-type", HELLO_TYPE));
    let service = as_service!(routes);
    crate::hyper_loop::serve(move || service, listener, workers, limits, shutdown)
}

/// The request path over in-memory connections (fuzzing).
fn memory(app: Arc<dyn AppHandle>, limits: &ServerLimits) -> crate::MemoryServer {
    let service = as_service!(filter(app, limits));
    crate::hyper_loop::memory_server(move || service.clone(), limits)
}

/// Passes requests whose path is [`crate::control::ECHO_PATH`] (`echo`) or any other (`!echo`),
/// so a failed body read on the echo is warp's rejection, not the other route's answer.
fn on_echo(echo: bool) -> impl Filter<Extract = (), Error = warp::Rejection> + Clone {
    warp::path::full()
        .and_then(move |path: warp::path::FullPath| async move {
            if (path.as_str() == crate::control::ECHO_PATH) == echo {
                Ok(())
            } else {
                Err(warp::reject::not_found())
            }
        })
        .untuple_one()
}

/// `body`, and whether it ended at the first look (one poll, no data before its end).
async fn first_look<S: futures::Stream + Unpin>(body: S) -> (futures::stream::Peekable<S>, bool) {
    let mut body = futures::StreamExt::peekable(body);
    let first = futures::poll!(std::pin::Pin::new(&mut body).peek());
    let ended = matches!(first, std::task::Poll::Ready(None));
    (body, ended)
}

/// The control server ([`crate::control`]): two filters, the echo reading the body with
/// `warp::body::bytes()` (warp sets no body limit unless asked), on one tokio worker. Plaintext:
/// `warp::serve(..).incoming(listener).run()`, warp's own loop (hyper-util's auto builder with
/// upgrades; warp asks hyper-util's `http2` feature, so h2c by prior knowledge is served). warp
/// 0.4 has no TLS (its `tls` feature is gone), so under TLS the filter is served as
/// `warp::service`, as warp's own loop serves it, on hyper-util's auto builder over a tokio-rustls
/// stream ([`crate::control::serve_hyper_util`]). Everything else is at warp's and hyper's
/// defaults.
fn control(c: crate::control::Control) -> anyhow::Result<()> {
    use crate::control::{echo_answer, CONTROL_BODY};
    let echo = on_echo(true)
        .and(warp::body::bytes())
        .map(|body: WarpBytes| echo_answer(body.len()));
    let other = on_echo(false).map(|| CONTROL_BODY); // the body left unread
    let routes = echo.or(other);
    crate::control::on_one_worker(c, |c| async move {
        if c.tls.is_some() {
            return crate::control::serve_hyper_util(c, as_service!(routes), true).await;
        }
        let listener = tokio::net::TcpListener::from_std(c.listener)?;
        warp::serve(routes).incoming(listener).run().await;
        Ok(())
    })
}
