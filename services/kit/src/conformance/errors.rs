//! The error answers every service gives whatever its domain, checked against its own route table:
//! an unknown path is a JSON 404, a known path with another method a JSON 405, a JSON route sent
//! something else a 415, malformed JSON a 400, JSON of the wrong shape a 422, a body over a route's
//! limit a 413 with the same message on every runtime — each with the `{"error": {"code",
//! "message"}}` body; and a `HEAD` on every `GET` route answers as the `GET` does, without a body.
//!
//! Routes are picked from the table, so the checks apply to any application: path parameters are
//! filled with [`PARAM`]. The body rules (415, 413) hold on every route with a body, parameters or
//! not, since the kit checks them before the handler runs; 400 and 422 are asked of the JSON routes
//! without parameters (a create route decodes its body before anything else), on the assumption that
//! such a route decodes into a typed value (JSON `true` is never one).

use std::collections::BTreeMap;

use bytes::Bytes;

use super::TestClient;
use crate::http::{pattern_segments, BodyKind, Method, RouteSpec, Segment};

/// What the checks put in a path parameter: a plain token no store holds.
pub const PARAM: &str = "conformance-no-such-id";

/// `pattern` with every `{name}` filled with [`PARAM`].
pub fn fill_params(pattern: &str) -> String {
    fill_params_with(pattern, PARAM)
}

/// `pattern` with every `{name}` filled with `value` (already percent-encoded).
pub fn fill_params_with(pattern: &str, value: &str) -> String {
    let mut path = String::new();
    for seg in pattern_segments(pattern) {
        path.push('/');
        path.push_str(match seg {
            Segment::Literal(s) => s,
            Segment::Param(_) => value,
        });
    }
    if path.is_empty() {
        path.push('/');
    }
    path
}

fn has_params(route: &RouteSpec) -> bool {
    route.path.contains('{')
}

/// Runs every check of this module against the service at `base` with `routes`.
pub async fn run(c: &TestClient, base: &str, routes: &[RouteSpec]) {
    unknown_paths_are_a_json_404(c, base).await;
    other_methods_on_a_known_path_are_a_json_405(c, base, routes).await;
    json_routes_refuse_other_content_types_with_415(c, base, routes).await;
    malformed_json_is_400_and_the_wrong_shape_422(c, base, routes).await;
    bodies_over_a_routes_limit_are_413(c, base, routes).await;
    head_answers_every_get_route_without_a_body(c, base, routes).await;
}

/// RFC 9110: every `GET` route answers `HEAD` with the status the `GET` gets, and no body — also
/// with a parameter holding an encoded line break (`%0A`), which some routers match no route for.
pub async fn head_answers_every_get_route_without_a_body(
    c: &TestClient,
    base: &str,
    routes: &[RouteSpec],
) {
    let mut checked = 0;
    for r in routes.iter().filter(|r| r.method == Method::Get) {
        let mut paths = vec![fill_params(r.path)];
        if has_params(r) {
            paths.push(fill_params_with(r.path, &format!("%0A{PARAM}")));
        }
        for path in paths {
            let url = format!("{base}{path}");
            let get = c.send("GET", &url, None, Bytes::new()).await;
            let head = c.send("HEAD", &url, None, Bytes::new()).await;
            assert_eq!(head.status, get.status, "HEAD {path} answers as GET does");
            assert!(
                head.body.is_empty(),
                "HEAD {path} has no body, got {} bytes",
                head.body.len()
            );
        }
        checked += 1;
    }
    assert!(checked > 0, "no GET route to ask HEAD of");
}

/// A path no route matches answers 404 `not_found`, for any method.
pub async fn unknown_paths_are_a_json_404(c: &TestClient, base: &str) {
    for method in ["GET", "POST", "DELETE"] {
        c.send(
            method,
            &format!("{base}/conformance/no/such/path"),
            None,
            Bytes::new(),
        )
        .await
        .expect_error(404, "not_found", &format!("{method} on an unknown path"));
    }
}

/// For every path pattern, a method none of its routes answers is 405 `method_not_allowed`.
pub async fn other_methods_on_a_known_path_are_a_json_405(
    c: &TestClient,
    base: &str,
    routes: &[RouteSpec],
) {
    let mut by_path: BTreeMap<&str, Vec<Method>> = BTreeMap::new();
    for r in routes {
        by_path.entry(r.path).or_default().push(r.method);
    }
    let all = [
        Method::Get,
        Method::Post,
        Method::Put,
        Method::Patch,
        Method::Delete,
    ];
    let mut checked = 0;
    for (path, methods) in &by_path {
        let Some(other) = all.iter().find(|m| !methods.contains(m)) else {
            continue;
        };
        c.send(
            other.as_str(),
            &format!("{base}{}", fill_params(path)),
            Some("application/json"),
            "{}",
        )
        .await
        .expect_error(405, "method_not_allowed", &format!("{other} {path}"));
        checked += 1;
    }
    assert!(checked > 0, "no path pattern leaves a method to try");
}

/// Every JSON route answers 415 `unsupported_media_type` to a text body and to a body without a
/// content type.
pub async fn json_routes_refuse_other_content_types_with_415(
    c: &TestClient,
    base: &str,
    routes: &[RouteSpec],
) {
    for r in routes.iter().filter(|r| r.body == BodyKind::Json) {
        let url = format!("{base}{}", fill_params(r.path));
        let what = format!("{} {}", r.method, r.path);
        for ct in [Some("text/plain"), None] {
            c.send(r.method.as_str(), &url, ct, "{}")
                .await
                .expect_error(
                    415,
                    "unsupported_media_type",
                    &format!("{what} with content type {ct:?}"),
                );
        }
    }
}

/// Every JSON route without path parameters answers 400 `bad_request` to malformed or empty JSON,
/// and 422 `unprocessable` to JSON of the wrong shape.
pub async fn malformed_json_is_400_and_the_wrong_shape_422(
    c: &TestClient,
    base: &str,
    routes: &[RouteSpec],
) {
    let json = Some("application/json");
    for r in routes
        .iter()
        .filter(|r| r.body == BodyKind::Json && !has_params(r))
    {
        let url = format!("{base}{}", r.path);
        let what = format!("{} {}", r.method, r.path);
        for body in ["", "not json", "]"] {
            c.send(r.method.as_str(), &url, json, body)
                .await
                .expect_error(400, "bad_request", &format!("{what} with {body:?}"));
        }
        c.send(r.method.as_str(), &url, json, "true")
            .await
            .expect_error(422, "unprocessable", &format!("{what} with `true`"));
    }
}

/// For each distinct body limit among the routes that read a body, one such route answers 413
/// `payload_too_large` to a body one byte over it.
pub async fn bodies_over_a_routes_limit_are_413(c: &TestClient, base: &str, routes: &[RouteSpec]) {
    let mut by_limit: BTreeMap<usize, &RouteSpec> = BTreeMap::new();
    for r in routes.iter().filter(|r| r.body != BodyKind::Empty) {
        let slot = by_limit.entry(r.limit).or_insert(r);
        if has_params(slot) && !has_params(r) {
            *slot = r;
        }
    }
    for (limit, r) in by_limit {
        let ct = match r.body {
            BodyKind::Json => "application/json",
            _ => "application/octet-stream",
        };
        let body = vec![b' '; limit + 1];
        c.send(
            r.method.as_str(),
            &format!("{base}{}", fill_params(r.path)),
            Some(ct),
            body,
        )
        .await
        .expect_error(
            413,
            "payload_too_large",
            &format!("{} {} with {} bytes", r.method, r.path, limit + 1),
        )
        .expect_message(&format!("body larger than {limit} bytes"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_filled_with_a_plain_token() {
        assert_eq!(fill_params("/a/{id}/b"), format!("/a/{PARAM}/b"));
        assert_eq!(fill_params("/a"), "/a");
        assert_eq!(fill_params("/"), "/");
    }
}
