//! The dispatch of runtimes that bring no router of their own (hyper, and the in-process provider):
//! the application's matcher (the `matchit` router axum also uses) finds the endpoint, the method
//! picks its route, and what neither takes is the kit's JSON 404 or 405 (`AppHandle::unmatched`,
//! counted in the metrics like every runtime's).

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

/// The route for `method` on `path`, or the reply to a request no route takes. A `HEAD` takes the
/// `GET` route (RFC 9110); the runtime leaves the body out of the answer.
pub(crate) fn route<'a>(
    app: &'a dyn AppHandle,
    method: &str,
    path: &str,
) -> Result<Routed<'a>, Reply> {
    let Ok(found) = app.matcher().at(path) else {
        return Err(app.unmatched(method, path));
    };
    let endpoint = &app.endpoints()[*found.value];
    let as_method = if method == "HEAD" { "GET" } else { method };
    let Some(route) = Method::parse(as_method).and_then(|m| endpoint.route_for(m)) else {
        return Err(app.unmatched(method, path));
    };
    Ok(Routed { endpoint, route })
}
