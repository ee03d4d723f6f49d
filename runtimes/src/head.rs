//! What adapters read of a request head and write on an answer's: the kit's raw request from an
//! `http` 1 head (every runtime on those types), the header names the kit reads, parsed once, and
//! the reply's `Content-Type` values pre-validated.

/// Defines `fn content_type_value(&'static str) -> $value`: the `Content-Type` header value of a
/// reply, the kit's usual types pre-validated at compile time (a `from_static` at run time re-checks
/// every byte on every request). One macro because actix-web's header type is not `http` 1's.
#[allow(unused_macros)] // a build without a runtime
macro_rules! content_type_values {
    ($vis:vis $value:ty) => {
        $vis fn content_type_value(ct: &'static str) -> $value {
            use brigade_kit::http::content_type::{JSON, OCTETS, TEXT};
            const JSON_V: $value = <$value>::from_static(JSON);
            const TEXT_V: $value = <$value>::from_static(TEXT);
            const OCTETS_V: $value = <$value>::from_static(OCTETS);
            match ct {
                JSON => JSON_V,
                TEXT => TEXT_V,
                OCTETS => OCTETS_V,
                other => <$value>::from_static(other),
            }
        }
    };
}

#[cfg(any(feature = "hyper-loop", feature = "xitca"))]
content_type_values!(pub(crate) http::HeaderValue);

/// The kit's raw request from an `http` 1 request's raw path (the kit takes the path parameters
/// from it), query, headers and body (every hyper-based runtime uses these types).
#[cfg(feature = "hyper-loop")]
pub(crate) fn raw_request(
    path: &str,
    query: Option<&str>,
    headers: &http::HeaderMap,
    body: bytes::Bytes,
) -> brigade_kit::RawRequest {
    brigade_kit::RawRequest {
        path: path.to_string(),
        query: query.map(str::to_string),
        content_type: header_text(headers, &http::header::CONTENT_TYPE),
        body,
        traceparent: header_text(headers, &TRACEPARENT),
        budget: header_text(headers, &BUDGET),
    }
}

/// The caller's budget header ([`brigade_kit::deadline::BUDGET_HEADER`]), parsed once (every
/// runtime on `http` 1's types: the hyper-based ones and xitca-web).
#[cfg(any(feature = "hyper-loop", feature = "xitca"))]
pub(crate) const BUDGET: http::HeaderName =
    http::HeaderName::from_static(brigade_kit::deadline::BUDGET_HEADER);

/// The W3C trace context header, parsed once (a lookup by `&str` parses the name on every request).
#[cfg(any(feature = "hyper-loop", feature = "xitca"))]
pub(crate) const TRACEPARENT: http::HeaderName = http::HeaderName::from_static("traceparent");

/// A header's value as text, if present and ASCII.
#[cfg(feature = "hyper-loop")]
pub(crate) fn header_text(headers: &http::HeaderMap, name: &http::HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Whether a request has no body to read: its `Content-Length` is 0, or it announced none and
/// nothing else frames one (`unframed`): on HTTP/1.1, no transfer coding (RFC 9112 §6.3); on
/// HTTP/2 and HTTP/3, which frame a body with no length, a stream that ended with its head.
#[allow(dead_code)] // the runtimes that cannot ask their body whether it ended (actix, ntex, warp)
pub(crate) fn bodiless(length: Option<u64>, unframed: bool) -> bool {
    length == Some(0) || (length.is_none() && unframed)
}

/// The `Content-Length` a request announced, if any and well-formed.
#[cfg(feature = "hyper-loop")]
#[allow(dead_code)] // the runtimes whose body type gives no size hint (poem, warp) read it
pub(crate) fn content_length(headers: &http::HeaderMap) -> Option<u64> {
    headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}
