//! warp: the endpoints become nested warp path filters (`warp::path(..)`, `warp::path::param`,
//! `path::end()`), one branch per segment as a hand-written warp app nests them; method, query,
//! content type and the body stream are taken once after the path matched; a final filter answers
//! the JSON 404. The filter is served as a service by the shared HTTP/1.1 loop ([`crate::http1`]),
//! not `warp::serve`, which exposes no hyper builder to set limits on.

use std::sync::Arc;

use brigade_kit::http::{pattern_segments, Segment};
use brigade_kit::limits::{read_body_draining, ServerLimits};
use brigade_kit::{AppHandle, Method, Reply, Request};
use warp::filters::BoxedFilter;
use warp::http::{header, Response, StatusCode};
use warp::hyper::body::Bytes as WarpBytes;
use warp::Filter;

use crate::baseline::HELLO_TYPE;
use crate::{Mount, Runtime, Shutdown};

/// The registry's entry.
pub(crate) const RUNTIME: Runtime = Runtime {
    name: "warp",
    crates: &["warp", "hyper"],
    threading: "tokio multi-thread runtime, N workers per service",
    serve_one: serve,
    hello,
};

/// A warp filter as the service the shared HTTP/1.1 loop serves (a macro, not a function: the
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
        crate::content_type_value(reply.content_type),
    );
    resp
}

/// The endpoints as a tree of path segments, so that warp's filters nest the way a hand-written
/// warp app nests them (`path("tables").and(path::param().and(...))`) and a request tries only the
/// branches its first segments match.
#[derive(Default)]
struct Node {
    endpoint: Option<usize>,
    literals: Vec<(&'static str, Node)>,
    param: Option<Box<Node>>,
}

impl Node {
    fn insert(&mut self, segments: &[Segment<'static>], endpoint: usize) {
        match segments.split_first() {
            None => self.endpoint = Some(endpoint),
            Some((Segment::Literal(lit), rest)) => {
                let i = match self.literals.iter().position(|(l, _)| l == lit) {
                    Some(i) => i,
                    None => {
                        self.literals.push((lit, Node::default()));
                        self.literals.len() - 1
                    }
                };
                self.literals[i].1.insert(rest, endpoint);
            }
            Some((Segment::Param(_), rest)) => self
                .param
                .get_or_insert_with(Box::default)
                .insert(rest, endpoint),
        }
    }

    /// Matches the rest of the path: the parameter values (in order) and the endpoint's index.
    fn filter(self) -> BoxedFilter<(Vec<String>, usize)> {
        let mut branches: Vec<BoxedFilter<(Vec<String>, usize)>> = Vec::new();
        if let Some(e) = self.endpoint {
            branches.push(
                warp::path::end()
                    .map(move || (Vec::new(), e))
                    .untuple_one()
                    .boxed(),
            );
        }
        for (lit, child) in self.literals {
            branches.push(warp::path(lit).and(child.filter()).boxed());
        }
        if let Some(child) = self.param {
            let f = warp::path::param::<String>()
                .and(child.filter())
                .map(|p: String, mut values: Vec<String>, e: usize| {
                    values.insert(0, p);
                    (values, e)
                })
                .untuple_one();
            branches.push(f.boxed());
        }
        any_of(branches)
    }
}

/// `or` over `branches`, as a balanced tree: each boxed `or` costs a call and an allocation per
/// request, so a request passes log2(n) of them rather than n.
fn any_of(
    mut branches: Vec<BoxedFilter<(Vec<String>, usize)>>,
) -> BoxedFilter<(Vec<String>, usize)> {
    match branches.len() {
        0 => warp::any()
            .and_then(|| async { Err::<(Vec<String>, usize), _>(warp::reject::not_found()) })
            .untuple_one()
            .boxed(),
        1 => branches.pop().expect("one branch"),
        n => {
            let right = branches.split_off(n / 2);
            any_of(branches).or(any_of(right)).unify().boxed()
        }
    }
}

/// The warp filter for `app` under `limits`: the endpoint tree, then method, query, content type,
/// length and body once, and the JSON 404 when no path matches.
pub(crate) fn filter(app: Arc<dyn AppHandle>, limits: &ServerLimits) -> BoxedFilter<(Reply_,)> {
    let limits = *limits;
    let mut root = Node::default();
    for (i, e) in app.endpoints().iter().enumerate() {
        root.insert(&pattern_segments(e.path), i);
    }
    let for_404 = app.clone();
    let query = warp::query::raw()
        .map(Some)
        .or(warp::any().map(|| None))
        .unify();
    let routes = root
        .filter()
        .and(warp::method())
        .and(query)
        .and(warp::header::optional::<String>("content-type"))
        .and(warp::header::optional::<u64>("content-length"))
        .and(warp::header::optional::<String>("traceparent"))
        .and(warp::body::stream())
        .then(
            move |values: Vec<String>,
                  endpoint: usize,
                  method: warp::http::Method,
                  query: Option<String>,
                  ct: Option<String>,
                  length: Option<u64>,
                  traceparent: Option<String>,
                  body| {
                let app = app.clone();
                async move {
                    let e = &app.endpoints()[endpoint];
                    let Some(route) = Method::parse(method.as_str()).and_then(|m| e.route_for(m))
                    else {
                        return respond(app.unmatched(method.as_str(), e.path));
                    };
                    let limit = limits.body_limit(e.limit);
                    let body =
                        match read_body_draining(body, length, limit, limits.body_read_timeout)
                            .await
                        {
                            Ok(b) => b,
                            Err(err) => return respond(app.refused(route, err)),
                        };
                    let params = e.name_params(values);
                    let request = Request {
                        params,
                        query,
                        content_type: ct,
                        body,
                        traceparent,
                    };
                    respond(app.call(route, request).await)
                }
            },
        );
    let not_found = warp::method().and(warp::path::full()).map(
        move |m: warp::http::Method, p: warp::path::FullPath| {
            respond(for_404.unmatched(m.as_str(), p.as_str()))
        },
    );
    routes.or(not_found).unify().boxed()
}

pub(crate) fn serve(
    mount: Mount,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let service = as_service!(filter(mount.app, limits));
    crate::http1::serve_http1(service, mount.listener, workers, limits, shutdown)
}

/// The hand-written hello ([`crate::baseline`]): one `path!` filter, warp's plainest idiom.
fn hello(
    listener: std::net::TcpListener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let routes = warp::path!("bench" / "hello")
        .and(warp::get())
        .map(|| warp::reply::with_header(crate::baseline::HELLO, "content-type", HELLO_TYPE));
    crate::http1::serve_http1(as_service!(routes), listener, workers, limits, shutdown)
}
