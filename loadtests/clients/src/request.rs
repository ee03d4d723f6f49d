//! A request as every client sends it: method, path, the caller's headers and a body. The clients
//! add what the wire needs (`host`, `content-type`, `content-length`; HTTP/2's pseudo-headers).

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::Method;

/// A request ready to go on the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The method.
    pub method: http::Method,
    /// Path and query, relative to the target's base URL.
    pub path: String,
    /// The caller's headers (the clients add `host`, `content-type` and `content-length`).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The body (empty when the request has none).
    pub body: Bytes,
    /// Whether the request has a body.
    pub has_body: bool,
}

/// The headers a request carries that its caller does not write, on either HTTP version.
pub(crate) struct Implied {
    /// JSON, for a body whose headers name no type.
    pub(crate) content_type: Option<&'static str>,
    /// The body's length always; an empty one where the method carries a body (some servers
    /// answer a POST without a length with 411).
    pub(crate) length: Option<usize>,
}

impl Implied {
    /// What `req` implies, `has_content_type` telling whether its headers name a type.
    pub(crate) fn of(req: &Request, has_content_type: bool) -> Implied {
        let carries_body = [Method::POST, Method::PUT, Method::PATCH].contains(&req.method);
        Implied {
            content_type: (req.has_body && !has_content_type).then_some("application/json"),
            length: (req.has_body || carries_body).then_some(req.body.len()),
        }
    }
}
