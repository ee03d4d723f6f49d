//! The application xitca-web serves: one route of its router per endpoint, each one
//! [`EndpointService`] that picks the route for the method, reads the body and hands the kit the
//! raw request, behind the [`Guard`] that runs the house rules once per request first and answers
//! what the router does not take with the kit's 404.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use brigade_kit::limits::{read_body_draining_here, ServerLimits};
use brigade_kit::{AppHandle, Method, Reply};
use bytes::Bytes;
use xitca_http::util::service::router::{PathGen, RouteGen, RouterMapErr};
use xitca_web::body::{Body, Frame, RequestBody, ResponseBody};
use xitca_web::http::{header, HeaderValue, Response, StatusCode, Version, WebResponse};
use xitca_web::service::ready::ReadyService;
use xitca_web::service::Service;
use xitca_web::{App, WebContext};

/// The one place a [`Reply`] becomes a xitca response, in the request's own allocations (xitca-web's
/// `as_response`: the request is spent). The answer to a `HEAD` carries the length the `GET`'s body
/// has, and no body; a 204 carries neither (RFC 9110 §8.6).
fn respond(ctx: &mut WebContext<'_>, reply: Reply) -> WebResponse {
    let head = ctx.req().method() == xitca_web::http::Method::HEAD;
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let length = reply.body.len();
    let body = if head || status == StatusCode::NO_CONTENT {
        ResponseBody::none()
    } else {
        ResponseBody::bytes(reply.body)
    };
    let mut res = ctx.as_response(body);
    *res.status_mut() = status;
    let headers = res.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        crate::head::content_type_value(reply.content_type),
    );
    if head {
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    }
    res
}

/// `res`, closing its HTTP/1.1 connection after it (xitca-http closes once the answer is written,
/// and writes its own `connection: close` line beside this one unless the client asked for the
/// close: two equal lines of a list header, RFC 9110 §5.3; over HTTP/2 it drops the header).
fn closing(mut res: WebResponse, close: bool) -> WebResponse {
    if close {
        res.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    res
}

/// The kit's method of a request method, a `HEAD` as `GET` (RFC 9110: HEAD for every GET route).
fn method(m: &xitca_web::http::Method) -> Option<Method> {
    use xitca_web::http::Method as M;
    Some(match *m {
        M::GET | M::HEAD => Method::Get,
        M::POST => Method::Post,
        M::PUT => Method::Put,
        M::PATCH => Method::Patch,
        M::DELETE => Method::Delete,
        _ => return None,
    })
}

/// One endpoint of the table, as the route xitca-web's router matches: built once per worker.
struct EndpointRoute {
    app: Arc<dyn AppHandle>,
    endpoint: usize,
    limits: ServerLimits,
}

impl PathGen for EndpointRoute {}

impl RouteGen for EndpointRoute {
    type Route<R> = RouterMapErr<R>;

    fn route_gen<R>(route: R) -> RouterMapErr<R> {
        RouterMapErr(route)
    }
}

impl Service for EndpointRoute {
    type Response = EndpointService;
    type Error = Infallible;

    async fn call(&self, _: ()) -> Result<EndpointService, Infallible> {
        let limit = self
            .limits
            .body_limit(self.app.endpoints()[self.endpoint].limit);
        Ok(EndpointService {
            app: self.app.clone(),
            endpoint: self.endpoint,
            limit,
            limits: self.limits,
        })
    }
}

/// One endpoint's service: the route for the method, the body, the call.
struct EndpointService {
    app: Arc<dyn AppHandle>,
    endpoint: usize,
    limit: usize,
    limits: ServerLimits,
}

impl<'r> Service<WebContext<'r>> for EndpointService {
    type Response = WebResponse;
    type Error = Infallible;

    async fn call(&self, mut ctx: WebContext<'r>) -> Result<WebResponse, Infallible> {
        let app = &self.app;
        let req = ctx.req();
        let endpoint = &app.endpoints()[self.endpoint];
        let Some(route) = method(req.method()).and_then(|m| endpoint.route_for(m)) else {
            let reply = app.unmatched(req.method().as_str(), req.uri().path(), Some(self.endpoint));
            return Ok(respond(&mut ctx, reply));
        };
        let head = Head::read(req.headers());
        let length = head
            .length
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        // RFC 9112: an HTTP/1.1 request with neither a length nor a transfer coding has no body
        // (xitca-http hands an `Upgrade` request the rest of the connection as its body); an
        // HTTP/2 one has none when its stream ended with its head.
        let bodiless = if req.version() < Version::HTTP_2 {
            length == Some(0) || (length.is_none() && !head.coded)
        } else {
            ctx.body().is_end_stream()
        };
        let (content_type, traceparent, budget) = (
            text(head.content_type),
            text(head.traceparent),
            text(head.budget),
        );
        let body = if bodiless {
            Bytes::new()
        } else {
            // xitca's body is not `Send` (it shares the connection with its dispatcher), so a
            // refused one is drained here, before the 413: the client, still sending, then reads
            // the answer. Boxed: the reader's state would otherwise weigh on every request's
            // future, moved whole into xitca-web's boxed route call.
            let body = Chunks(std::mem::take(ctx.body_get_mut()));
            let timeout = self.limits.body_read_timeout;
            match Box::pin(read_body_draining_here(body, length, self.limit, timeout)).await {
                Ok(b) => b,
                Err(e) => return Ok(respond(&mut ctx, app.refused(route, e))),
            }
        };
        let uri = ctx.req().uri();
        // The path as it came (xitca-router's parameters are its raw segments too): the kit
        // takes the parameters from it.
        let request = brigade_kit::RawRequest {
            path: uri.path().to_owned(),
            query: uri.query().map(str::to_owned),
            content_type,
            body,
            traceparent,
            budget,
        };
        let reply = app.call(route, request).await;
        Ok(respond(&mut ctx, reply))
    }
}

/// What the kit reads of a request's headers, taken in one walk over them: a lookup by name
/// hashes the name, and five lookups cost more than one walk over a request's few headers.
#[derive(Default)]
struct Head<'a> {
    content_type: Option<&'a HeaderValue>,
    length: Option<&'a HeaderValue>,
    /// A `Transfer-Encoding` came (the house rules have refused any but one `chunked`).
    coded: bool,
    traceparent: Option<&'a HeaderValue>,
    budget: Option<&'a HeaderValue>,
}

impl<'a> Head<'a> {
    /// The first value of each (as a lookup by name gives it).
    fn read(headers: &'a header::HeaderMap) -> Head<'a> {
        let mut head = Head::default();
        for (name, value) in headers {
            let slot = if name == header::CONTENT_TYPE {
                &mut head.content_type
            } else if name == header::CONTENT_LENGTH {
                &mut head.length
            } else if name == header::TRANSFER_ENCODING {
                head.coded = true;
                continue;
            } else if name == crate::head::TRACEPARENT {
                &mut head.traceparent
            } else if name == crate::head::BUDGET {
                &mut head.budget
            } else {
                continue;
            };
            slot.get_or_insert(value);
        }
        head
    }
}

/// A header's value as text, if present and ASCII.
fn text(value: Option<&HeaderValue>) -> Option<String> {
    value.and_then(|v| v.to_str().ok()).map(str::to_owned)
}

/// A request body's data frames as a stream (trailers are skipped), for the kit's reader.
struct Chunks(RequestBody);

impl futures::Stream for Chunks {
    type Item = Result<Bytes, xitca_web::error::BodyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            return Poll::Ready(match ready!(Pin::new(&mut self.0).poll_frame(cx)) {
                Some(Ok(Frame::Data(bytes))) => Some(Ok(bytes)),
                Some(Ok(Frame::Trailers(_))) => continue,
                Some(Err(e)) => Some(Err(e)),
                None => None,
            });
        }
    }
}

/// The kit's house rules around the router: builds a [`Guarded`] router once per worker.
#[derive(Clone)]
struct Guard {
    app: Arc<dyn AppHandle>,
    limits: ServerLimits,
}

impl<S, E> Service<Result<S, E>> for Guard {
    type Response = Guarded<S>;
    type Error = E;

    async fn call(&self, router: Result<S, E>) -> Result<Guarded<S>, E> {
        router.map(|router| Guarded {
            router,
            app: self.app.clone(),
            limits: self.limits,
        })
    }
}

/// The router behind the kit's house rules ([`brigade_kit::rules`]: the head limits, the rules
/// where runtimes differ, `Connection: close` where they say so), with the kit's JSON 404 and 405
/// for what the router does not take.
struct Guarded<S> {
    router: S,
    app: Arc<dyn AppHandle>,
    limits: ServerLimits,
}

impl<'r, S> Service<WebContext<'r>> for Guarded<S>
where
    S: for<'r2> Service<WebContext<'r2>, Response = WebResponse, Error = xitca_web::error::Error>,
{
    type Response = WebResponse;
    type Error = Infallible;

    async fn call(&self, mut ctx: WebContext<'r>) -> Result<WebResponse, Infallible> {
        // (xitca-router matches the raw path, unescaped where the rules unescape it.)
        let admitted = match crate::house::admit(&self.limits, ctx.req_mut()) {
            Ok(a) => a,
            Err(refused) => {
                let res = respond(&mut ctx, refused.error.to_reply());
                return Ok(closing(res, refused.close));
            }
        };
        let res = match self.router.call(ctx.reborrow()).await {
            Ok(res) => res,
            // No endpoint's pattern took the path (the endpoints pick their methods themselves).
            Err(_) => {
                let req = ctx.req();
                let reply = self
                    .app
                    .unmatched(req.method().as_str(), req.uri().path(), None);
                respond(&mut ctx, reply)
            }
        };
        let close = admitted.closes_after(res.status().as_u16());
        Ok(closing(res, close))
    }
}

impl<S> ReadyService for Guarded<S> {
    type Ready = ();

    async fn ready(&self) {}
}

/// The xitca-web `App` for `app` under `limits`: one route per endpoint, behind the guard.
pub(crate) fn app(
    app: Arc<dyn AppHandle>,
    limits: &ServerLimits,
) -> impl Service<
    Response = impl ReadyService
                   + Service<
        xitca_web::http::WebRequest,
        Response = Response<impl Body<Data = Bytes, Error: std::fmt::Debug> + 'static>,
        Error = Infallible,
    >,
    Error = impl std::fmt::Debug,
> + Send
       + Sync
       + 'static {
    let mut routes = App::new();
    for (endpoint, e) in app.endpoints().iter().enumerate() {
        let route = EndpointRoute {
            app: app.clone(),
            endpoint,
            limits: *limits,
        };
        routes = routes.at(e.path, route);
    }
    routes
        .enclosed(Guard {
            app,
            limits: *limits,
        })
        .finish()
}
