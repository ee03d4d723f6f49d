//! A request as the bytes that go on the wire: request line, `host`, the caller's headers, the
//! body's `content-type` and `content-length`, `connection: close` when connections are not kept,
//! and the body. A request whose templates have no holes is encoded once per run and sent as is.

use http::header::CONTENT_TYPE;

use crate::request::{Implied, Request};
use crate::target::Target;

/// Encodes `req` for `target` into `out` (cleared first).
pub fn encode(out: &mut Vec<u8>, target: &Target, req: &Request, keepalive: bool) {
    out.clear();
    out.reserve(128 + req.body.len());
    out.extend_from_slice(req.method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.prefix.as_bytes());
    out.extend_from_slice(req.path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    out.extend_from_slice(target.host.as_bytes());
    out.extend_from_slice(b"\r\n");
    let mut has_content_type = false;
    for (name, value) in &req.headers {
        has_content_type |= name == CONTENT_TYPE;
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let implied = Implied::of(req, has_content_type);
    if let Some(content_type) = implied.content_type {
        out.extend_from_slice(b"content-type: ");
        out.extend_from_slice(content_type.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if let Some(length) = implied.length {
        out.extend_from_slice(b"content-length: ");
        out.extend_from_slice(length.to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !keepalive {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&req.body);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http::header::{HeaderName, HeaderValue};
    use http::Method;

    #[test]
    fn a_request_is_written_as_http_1_1_with_its_length_and_type() {
        let target = Target::parse("http://127.0.0.1:9/api/").unwrap();
        let get = Request {
            method: Method::GET,
            path: "/x?y=1".into(),
            headers: vec![(
                HeaderName::from_static("x-a"),
                HeaderValue::from_static("1"),
            )],
            body: Bytes::new(),
            has_body: false,
        };
        let mut out = Vec::new();
        encode(&mut out, &target, &get, true);
        assert_eq!(
            out,
            b"GET /api/x?y=1 HTTP/1.1\r\nhost: 127.0.0.1:9\r\nx-a: 1\r\n\r\n"
        );
        let post = Request {
            method: Method::POST,
            path: "/p".into(),
            headers: Vec::new(),
            body: Bytes::from_static(b"[1]"),
            has_body: true,
        };
        encode(&mut out, &target, &post, false);
        assert_eq!(
            out,
            &b"POST /api/p HTTP/1.1\r\nhost: 127.0.0.1:9\r\ncontent-type: application/json\r\n\
               content-length: 3\r\nconnection: close\r\n\r\n[1]"[..]
        );
        let empty = Request {
            body: Bytes::new(),
            has_body: false,
            ..post
        };
        encode(&mut out, &target, &empty, true);
        assert!(out.ends_with(b"content-length: 0\r\n\r\n"));
    }
}
