//! The dispatch of runtimes that bring no router of their own (hyper, warp as Brigade mounts it,
//! the in-process provider, and ntex for the paths its router cannot match): the application's
//! matcher (the `matchit` router axum also uses) is their router, asked once; the endpoint it
//! finds and the request's method pick the route, and what neither takes is the kit's JSON 404 or
//! 405 ([`AppHandle::unmatched`], told which endpoint matched).

use brigade_kit::http::Endpoint;
use brigade_kit::{AppHandle, Method, Reply};

/// A request's route in the table: its endpoint and its route index (the kit takes the path
/// parameters from the path itself).
pub(crate) struct Routed<'a> {
    /// The endpoint the path matched.
    pub(crate) endpoint: &'a Endpoint,
    /// The route of the endpoint for the request's method.
    pub(crate) route: usize,
}

/// The route for `method` on `path`, or the reply to a request no route takes.
pub(crate) fn route<'a>(
    app: &'a dyn AppHandle,
    method: &str,
    path: &str,
) -> Result<Routed<'a>, Reply> {
    let Ok(found) = app.matcher().at(path) else {
        return Err(app.unmatched(method, path, None));
    };
    let index = *found.value;
    let endpoint = &app.endpoints()[index];
    match route_for(endpoint, method) {
        Some(route) => Ok(Routed { endpoint, route }),
        None => Err(app.unmatched(method, path, Some(index))),
    }
}

/// The route of `endpoint` for `method`, if it has one. A `HEAD` takes the `GET` route (RFC 9110);
/// the runtime leaves the body out of the answer.
pub(crate) fn route_for(endpoint: &Endpoint, method: &str) -> Option<usize> {
    let as_method = if method == "HEAD" { "GET" } else { method };
    Method::parse(as_method).and_then(|m| endpoint.route_for(m))
}
