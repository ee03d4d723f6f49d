//! The glue between an adapter and the kit's house rules ([`brigade_kit::rules`]), which run once
//! per request, before the kit is called: one function for every runtime on the `http` 1 types
//! (the hyper-based ones and xitca-web: [`admit`]), one macro for the two with HTTP types of their
//! own (actix-web and ntex: [`house_rules!`]).

#[cfg(any(feature = "hyper-loop", feature = "xitca"))]
use brigade_kit::limits::ServerLimits;
#[cfg(any(feature = "hyper-loop", feature = "xitca"))]
use brigade_kit::rules::{self, Admitted, Refused};

/// Defines the house rules' glue for a runtime with its own HTTP stack (actix-web, ntex), over its
/// own `HttpRequest`, `HttpResponse` and `ConnectionType` (in scope where it is used; `$http10`
/// and `$http2` are its `Version::HTTP_10` and `Version::HTTP_2`): `admit`, `closing`, `answer`,
/// `refusal` and `unmatched`. One macro because the two stacks' types are their own, their methods
/// the same. These runtimes run the rules in the handler their router chose (each of those runs
/// `admit` once), so a rule can never depend on the route.
#[allow(unused_macros)] // a build without actix-web and ntex
macro_rules! house_rules {
    ($http10:expr, $http2:expr) => {
        /// The kit's house rules ([`brigade_kit::rules`]) on a request.
        fn admit(req: &HttpRequest, limits: &ServerLimits) -> Result<Admitted, Refused> {
            let target = req.uri().path_and_query().map_or("", |p| p.as_str());
            let headers = || {
                req.headers()
                    .iter()
                    .map(|(k, v)| (k.as_str().as_bytes(), v.as_bytes()))
            };
            let version = rules::Version::of(req.version() <= $http10, req.version() >= $http2);
            rules::admit(limits, req.method().as_str(), target, version, headers)
        }

        /// `resp`, closing the connection after it when `close`.
        fn closing(mut resp: HttpResponse, close: bool) -> HttpResponse {
            if close {
                resp.head_mut().set_connection_type(ConnectionType::Close);
            }
            resp
        }

        /// The answer to a request the house rules admitted: `reply`, closing where the rules say.
        fn answer(reply: Reply, admitted: Admitted) -> HttpResponse {
            let close = admitted.closes_after(reply.status);
            closing(respond(reply), close)
        }

        /// The answer to a request the house rules refused.
        fn refusal(refused: Refused) -> HttpResponse {
            closing(respond(refused.error.to_reply()), refused.close)
        }

        /// The kit's 404 (or 405 naming the methods of `endpoint`, the one the router matched
        /// the path to) for a request no route takes, after the house rules.
        fn unmatched(
            app: &Arc<dyn AppHandle>,
            req: &HttpRequest,
            limits: &ServerLimits,
            endpoint: Option<usize>,
        ) -> HttpResponse {
            match admit(req, limits) {
                Err(refused) => refusal(refused),
                Ok(a) => answer(
                    app.unmatched(req.method().as_str(), req.path(), endpoint),
                    a,
                ),
            }
        }
    };
}

/// The house rules on an `http` 1 request, before its runtime routes it: its head limits and the
/// rules where runtimes differ; an admitted request whose path holds an escaped unreserved
/// character has its target rewritten unescaped, so that the runtime's router matches what every
/// runtime matches (`/he%61lth` is `/health`).
#[cfg(any(feature = "hyper-loop", feature = "xitca"))]
#[inline] // as the rules were, written out in each guard: the rules inline into it
pub(crate) fn admit<B>(
    limits: &ServerLimits,
    req: &mut http::Request<B>,
) -> Result<Admitted, Refused> {
    let target = req.uri().path_and_query().map_or("", |p| p.as_str());
    let headers = || {
        req.headers()
            .iter()
            .map(|(k, v)| (k.as_str().as_bytes(), v.as_bytes()))
    };
    let version = rules::Version::of(
        req.version() <= http::Version::HTTP_10,
        req.version() >= http::Version::HTTP_2,
    );
    let admitted = rules::admit(limits, req.method().as_str(), target, version, headers)?;
    if let Some(target) = admitted
        .path_escaped
        .then(|| rules::normalized_target(req.uri().path(), req.uri().query()))
        .flatten()
    {
        if let Ok(uri) = target.parse() {
            *req.uri_mut() = uri;
        }
    }
    Ok(admitted)
}
