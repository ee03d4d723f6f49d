//! The house rules: what a request gets where HTTP leaves a server the choice and the runtimes
//! choose differently, decided once here and applied by every adapter before routing
//! (docs/reliability.md, "One answer on every runtime"). Each rule follows RFC 9110/9112 where
//! they speak:
//!
//! - the head limits ([`ServerLimits::check_request_head`]): 431 past the count or the size;
//! - a request target that is not a path (origin-form), nor `*` on `OPTIONS`: 400, and the
//!   connection closes;
//! - a request target with bytes outside visible ASCII (raw UTF-8, controls) is invalid
//!   (RFC 9112 §3.2): 400, and the connection closes;
//! - a path whose percent-escapes decode to bytes that are not UTF-8: 400;
//! - `CONNECT` (no route is a tunnel): 405, and the connection closes;
//! - an HTTP/2 or HTTP/3 request with a connection-specific field (`Connection`, `Keep-Alive`,
//!   `Proxy-Connection`, `Transfer-Encoding`, `Upgrade`) or a `TE` other than `trailers`
//!   (RFC 9113 §8.2.2, RFC 9114 §4.2: malformed): 400 (HTTP/2's stacks refuse them first);
//! - an HTTP/1.1 request without exactly one `Host`, or any request whose `Host` is not
//!   `host[:port]` (RFC 9112 §3.2: "MUST respond with 400"; RFC 3986 §3.2.2): 400, and the
//!   connection closes;
//! - framing a server cannot trust (RFC 9112 §6.3): `Transfer-Encoding` beside `Content-Length`,
//!   more than one `Content-Length` (even equal ones), a `Content-Length` that is not digits, a
//!   `Transfer-Encoding` other than one `chunked`: 400, and the connection closes (these are the
//!   request-smuggling shapes);
//! - the connection closes after the answer when the client asked (`Connection: close`, a token
//!   list with `close`, HTTP/1.0 without `keep-alive`), when it asked for an `Upgrade` (which no
//!   Brigade service does: the request is answered as if it had not asked, RFC 9110 §7.8), and
//!   when a 404, 405 or 413 answers a request whose body may not have been read;
//! - a path with percent-escaped unreserved characters routes as the same path unescaped
//!   (RFC 3986 §6.2.2.2: `/he%61lth` is `/health`), on the runtimes whose router does not already.

use crate::http::ApiError;
use crate::limits::ServerLimits;

/// The HTTP version of a request, as far as the rules care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// HTTP/1.0 (and 0.9, where a parser lets one through).
    Http10,
    /// HTTP/1.1.
    Http11,
    /// HTTP/2: the authority is a pseudo-header, a connection is never closed for one request
    /// (connection-specific headers are refused by every HTTP/2 stack before the kit sees them).
    Http2,
}

impl Version {
    /// The kit's version of an `http` crate version (every runtime's types know these).
    pub fn of(is_http10_or_older: bool, is_http2_or_newer: bool) -> Version {
        if is_http2_or_newer {
            Version::Http2
        } else if is_http10_or_older {
            Version::Http10
        } else {
            Version::Http11
        }
    }
}

/// What the rules say of an admitted request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Admitted {
    /// The connection closes after the answer, whatever it is.
    pub close: bool,
    /// The request announced a body (a `Content-Length` over 0 or a `Transfer-Encoding`).
    pub has_body: bool,
    /// The path (before any `?`) holds a percent-escape: only such a target can change under
    /// [`normalized_target`], so an adapter asks it only then.
    pub path_escaped: bool,
}

impl Admitted {
    /// Whether the connection closes after an answer with `status`: as asked, or after a 404, 405
    /// or 413 to a request whose body the route may not have read.
    pub fn closes_after(&self, status: u16) -> bool {
        self.close || (self.has_body && matches!(status, 404 | 405 | 413))
    }
}

/// A refused request: the error to answer and whether the connection then closes.
#[derive(Debug, Clone)]
pub struct Refused {
    /// The answer.
    pub error: ApiError,
    /// Whether the connection closes after it.
    pub close: bool,
}

impl Refused {
    fn closing(error: ApiError) -> Refused {
        Refused { error, close: true }
    }
}

/// Applies the rules to a request head: its method, its target as received (path and query, or
/// empty where there is none: an authority-form target),
/// its version and its headers (names in any case; `headers` is asked twice).
pub fn admit<'a, H>(
    limits: &ServerLimits,
    method: &str,
    target: &str,
    version: Version,
    headers: impl Fn() -> H,
) -> Result<Admitted, Refused>
where
    H: Iterator<Item = (&'a [u8], &'a [u8])>,
{
    limits
        .check_request_head(method, target, headers())
        .map_err(|error| Refused {
            error,
            close: false,
        })?;
    let path_escaped = check_target(method, target)?;
    let head = HeadFacts::read(headers());
    head.check_host_and_framing(version)?;
    if version == Version::Http2 {
        if head.connection_specific || !head.te_ok {
            // HTTP/2's stacks refuse these before the kit sees them; HTTP/3's (the h3 crate) do not.
            return Err(Refused {
                error: ApiError::bad_request(
                    "a connection-specific field (Connection, Keep-Alive, Proxy-Connection, \
                     Transfer-Encoding, Upgrade) or a TE other than trailers makes an HTTP/2 or \
                     HTTP/3 request malformed (RFC 9113 §8.2.2, RFC 9114 §4.2)",
                ),
                close: false,
            });
        }
        // No connection closes for one stream's sake: the answer ends the stream, not the
        // connection (a `Connection` header cannot even be sent, RFC 9113 §8.2.2).
        // (Nor after a 404/405/413 to a body: HTTP/2 frames each stream's body, so an unread one
        // cannot be taken for the next request.)
        return Ok(Admitted {
            path_escaped,
            ..Admitted::default()
        });
    }
    Ok(Admitted {
        close: head.close || (version == Version::Http10 && !head.keep_alive),
        has_body: head.has_length_body || head.codings > 0,
        path_escaped,
    })
}

/// The method and target rules: no tunnels, an origin-form target (or `*` for OPTIONS) of visible
/// ASCII, whose path is UTF-8 once percent-decoded. Says whether the path holds an escape.
#[inline]
fn check_target(method: &str, target: &str) -> Result<bool, Refused> {
    if method == "CONNECT" {
        return Err(Refused::closing(ApiError::method_not_allowed(
            "CONNECT: no route here is a tunnel",
        )));
    }
    if !(target.starts_with('/') || (target == "*" && method == "OPTIONS")) {
        return Err(Refused::closing(ApiError::bad_request(
            "the request target is not a path (RFC 9112 §3.2: origin-form, or * for OPTIONS)",
        )));
    }
    // One pass on every request: visible ASCII throughout, and whether the path (before any `?`)
    // holds an escape. A path without one is ASCII, so UTF-8 as it is: only an escaped path is
    // decoded to check it.
    let (mut in_path, mut escaped) = (true, false);
    for b in target.bytes() {
        if !(0x21..0x7f).contains(&b) {
            return Err(Refused::closing(ApiError::bad_request(
                "the request target holds bytes outside visible ASCII (RFC 9112 §3.2)",
            )));
        }
        in_path &= b != b'?';
        escaped |= in_path && b == b'%';
    }
    let path = target.split_once('?').map_or(target, |(p, _)| p);
    if escaped
        && percent_encoding::percent_decode_str(path)
            .decode_utf8()
            .is_err()
    {
        return Err(Refused {
            error: ApiError::bad_request("the path is not UTF-8 once percent-decoded"),
            close: false,
        });
    }
    Ok(escaped)
}

/// What the rules need from the headers, counted in one pass.
#[derive(Debug, Clone, Copy)]
struct HeadFacts {
    hosts: u32,
    lengths: u32,
    length_ok: bool,
    has_length_body: bool,
    host_ok: bool,
    connection_specific: bool,
    te_ok: bool,
    codings: u32,
    coding_ok: bool,
    close: bool,
    keep_alive: bool,
}

impl HeadFacts {
    /// Counts the Host, Content-Length, Transfer-Encoding, Connection and Upgrade headers.
    #[inline]
    fn read<'a>(headers: impl Iterator<Item = (&'a [u8], &'a [u8])>) -> HeadFacts {
        let mut f = HeadFacts {
            hosts: 0,
            lengths: 0,
            length_ok: true,
            has_length_body: false,
            host_ok: true,
            connection_specific: false,
            te_ok: true,
            codings: 0,
            coding_ok: true,
            close: false,
            keep_alive: false,
        };
        // On every request, so nothing is allocated: names compared without case, values trimmed
        // as bytes (all five are ASCII tokens or digits when well-formed).
        for (name, value) in headers {
            let value = value.trim_ascii();
            let is = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
            if is("host") {
                f.hosts += 1;
                f.host_ok &= valid_host(value);
            } else if is("content-length") {
                f.lengths += 1;
                f.length_ok &= !value.is_empty() && value.iter().all(u8::is_ascii_digit);
                f.has_length_body |= value.iter().any(|b| *b != b'0');
            } else if is("transfer-encoding") {
                f.connection_specific = true;
                f.codings += 1;
                f.coding_ok &= value.eq_ignore_ascii_case(b"chunked");
            } else if is("connection") {
                f.connection_specific = true;
                for token in value.split(|b| *b == b',').map(<[u8]>::trim_ascii) {
                    f.close |= token.eq_ignore_ascii_case(b"close");
                    f.keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
                }
            } else if is("upgrade") {
                f.connection_specific = true;
                f.close = true;
            } else if is("keep-alive") || is("proxy-connection") {
                f.connection_specific = true;
            } else if is("te") {
                f.te_ok &= value.eq_ignore_ascii_case(b"trailers");
            }
        }
        f
    }

    /// One Host on HTTP/1.1, and a body length that can be trusted.
    #[inline]
    fn check_host_and_framing(&self, version: Version) -> Result<(), Refused> {
        let HeadFacts {
            hosts,
            lengths,
            codings,
            ..
        } = *self;
        if version == Version::Http11 && hosts != 1 {
            // (HTTP/2 carries the authority as `:authority`, which no runtime shows as a header.)
            return Err(Refused::closing(ApiError::bad_request(format!(
                "an HTTP/1.1 request carries exactly one Host header, not {hosts} (RFC 9112 §3.2)"
            ))));
        }
        if version != Version::Http2 && !self.host_ok {
            return Err(Refused::closing(ApiError::bad_request(
                "a Host that is not host[:port] (RFC 9112 §3.2, RFC 3986 §3.2.2)",
            )));
        }
        let framing = if codings > 0 && lengths > 0 {
            Some("Transfer-Encoding beside Content-Length")
        } else if lengths > 1 {
            Some("more than one Content-Length")
        } else if !self.length_ok {
            Some("a Content-Length that is not a number")
        } else if codings > 1 || !self.coding_ok {
            Some("a Transfer-Encoding other than one chunked")
        } else {
            None
        };
        if let Some(what) = framing {
            return Err(Refused::closing(ApiError::bad_request(format!(
                "{what}: the body's length cannot be trusted (RFC 9112 §6.3)"
            ))));
        }
        Ok(())
    }
}

/// Whether a `Host` value is `uri-host [ ":" port ]` (RFC 9110 §7.2, RFC 3986 §3.2.2): an IP
/// literal in brackets, or a reg-name (unreserved, sub-delims, percent-escapes; an IPv4 address is
/// one), then an optional port of digits. Empty is valid (a target without an authority).
fn valid_host(value: &[u8]) -> bool {
    let (host, rest) = if value.first() == Some(&b'[') {
        let Some(end) = value.iter().position(|b| *b == b']') else {
            return false;
        };
        let inside = &value[1..end];
        let literal = |b: &u8| b.is_ascii_alphanumeric() || b":.-_~!$&'()*+,;=".contains(b);
        if inside.is_empty() || !inside.iter().all(literal) {
            return false;
        }
        (&value[..0], &value[end + 1..])
    } else {
        match value.iter().rposition(|b| *b == b':') {
            Some(at) => (&value[..at], &value[at..]),
            None => (value, &value[..0]),
        }
    };
    let reg_name = |b: &u8| b.is_ascii_alphanumeric() || b"-._~%!$&'()*+,;=".contains(b);
    let port_ok = match rest.split_first() {
        None => true,
        Some((b':', digits)) => digits.iter().all(u8::is_ascii_digit),
        Some(_) => false,
    };
    host.iter().all(reg_name) && port_ok
}

/// The request target (`path` and its `query`) with the path's percent-escaped unreserved
/// characters unescaped, if it has any ([`normalize_path`]): `/he%61lth?x` routes as `/health?x`
/// on every runtime, whether its router unescapes or not.
pub fn normalized_target(path: &str, query: Option<&str>) -> Option<String> {
    let path = normalize_path(path)?;
    Some(match query {
        Some(q) => format!("{path}?{q}"),
        None => path,
    })
}

/// The path with its percent-escaped unreserved characters unescaped (RFC 3986 §6.2.2.2), if it
/// has any; escapes of anything else are kept as they are.
pub fn normalize_path(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    let unreserved = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~');
    let escaped_at = |i: usize| -> Option<u8> {
        let hex = bytes.get(i + 1..i + 3)?;
        u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
    };
    let mut out: Option<String> = None;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            if let Some(b) = escaped_at(i).filter(|b| unreserved(*b)) {
                out.get_or_insert_with(|| path[..i].to_owned())
                    .push(b as char);
                i += 3;
                continue;
            }
        }
        if let Some(o) = out.as_mut() {
            o.push(bytes[i] as char);
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(
        method: &str,
        target: &str,
        v: Version,
        headers: &[(&str, &str)],
    ) -> Result<Admitted, Refused> {
        let h = || headers.iter().map(|(k, v)| (k.as_bytes(), v.as_bytes()));
        admit(&ServerLimits::default(), method, target, v, h)
    }

    #[test]
    fn an_ordinary_request_is_admitted_and_kept_alive() {
        let a = check("GET", "/health", Version::Http11, &[("Host", "h")]).unwrap();
        assert_eq!(a, Admitted::default());
        assert!(!a.closes_after(200) && !a.closes_after(404));
    }

    #[test]
    fn a_host_that_is_not_host_and_port_is_refused_and_closes() {
        for good in [
            "h",
            "localhost:8080",
            "127.0.0.1",
            "[::1]:80",
            "[::1]",
            "",
            "h:",
            "a-b.c_d~e",
            "h:99999",
        ] {
            for v in [Version::Http11, Version::Http10] {
                assert!(
                    check("GET", "/health", v, &[("Host", good)]).is_ok(),
                    "{good:?}"
                );
            }
        }
        for bad in [
            "local host",
            "user@localhost",
            "[::1",
            "a/b",
            "h:8o",
            "[::1]x",
            "[]",
            "h:1:2:x",
        ] {
            let r = check("GET", "/health", Version::Http11, &[("Host", bad)]).unwrap_err();
            assert_eq!(r.error.code.status(), 400, "{bad:?}");
            assert!(r.close, "{bad:?}");
        }
    }

    #[test]
    fn a_connection_specific_field_makes_an_http2_or_http3_request_malformed() {
        for field in [
            ("Connection", "keep-alive"),
            ("Keep-Alive", "timeout=5"),
            ("Proxy-Connection", "close"),
            ("Transfer-Encoding", "chunked"),
            ("Upgrade", "websocket"),
            ("TE", "gzip"),
        ] {
            let r = check("GET", "/health", Version::Http2, &[field]).unwrap_err();
            assert_eq!(r.error.code.status(), 400, "{field:?}");
            assert!(!r.close, "a stream's refusal closes no connection");
        }
        assert!(check("GET", "/health", Version::Http2, &[("te", "Trailers")]).is_ok());
        // On HTTP/1.1 they are ordinary (Connection: keep-alive, TE: gzip).
        let h = [("Host", "h"), ("Connection", "keep-alive"), ("TE", "gzip")];
        assert!(check("GET", "/health", Version::Http11, &h).is_ok());
    }

    #[test]
    fn http2_needs_no_host_and_never_closes_for_one_stream() {
        let a = check(
            "POST",
            "/nowhere",
            Version::Http2,
            &[("content-length", "3")],
        )
        .unwrap();
        assert!(!a.closes_after(404) && !a.closes_after(413));
        let refused = check("GET", "nowhere", Version::Http2, &[]).unwrap_err();
        assert_eq!(refused.error.to_reply().status, 400);
    }

    #[test]
    fn http11_needs_exactly_one_host() {
        for hosts in [&[][..], &[("Host", "a"), ("host", "b")][..]] {
            let r = check("GET", "/", Version::Http11, hosts).unwrap_err();
            assert_eq!((r.error.code.status(), r.close), (400, true));
        }
        assert!(check("GET", "/", Version::Http10, &[]).is_ok());
    }

    #[test]
    fn untrustworthy_framing_is_refused_and_closes() {
        for headers in [
            &[
                ("Host", "h"),
                ("Content-Length", "5"),
                ("Transfer-Encoding", "chunked"),
            ][..],
            &[
                ("Host", "h"),
                ("Content-Length", "5"),
                ("Content-Length", "5"),
            ][..],
            &[("Host", "h"), ("Content-Length", "+5")][..],
            &[("Host", "h"), ("Transfer-Encoding", "gzip, chunked")][..],
            &[
                ("Host", "h"),
                ("Transfer-Encoding", "chunked"),
                ("Transfer-Encoding", "chunked"),
            ][..],
        ] {
            let r = check("POST", "/x", Version::Http11, headers).unwrap_err();
            assert_eq!((r.error.code.status(), r.close), (400, true), "{headers:?}");
        }
        let a = check(
            "POST",
            "/x",
            Version::Http11,
            &[("Host", "h"), ("Transfer-Encoding", "Chunked")],
        )
        .unwrap();
        assert!(a.has_body && a.closes_after(405) && !a.closes_after(422));
    }

    #[test]
    fn targets_outside_ascii_or_not_utf8_once_decoded_are_400() {
        let r = check("GET", "/w/é", Version::Http11, &[("Host", "h")]).unwrap_err();
        assert_eq!((r.error.code.status(), r.close), (400, true));
        let r = check("GET", "/w/%FF%FE", Version::Http11, &[("Host", "h")]).unwrap_err();
        assert_eq!((r.error.code.status(), r.close), (400, false));
        assert!(check("GET", "/w/%C3%A9?q=%FF", Version::Http11, &[("Host", "h")]).is_ok());
        // Only the path's escapes are decoded: one in the query alone is not checked, one in the
        // path is wherever the query starts, and a raw byte is refused in either.
        assert!(check("GET", "/w?q=%FF", Version::Http11, &[("Host", "h")]).is_ok());
        let r = check("GET", "/w/a%FFb?q=1", Version::Http11, &[("Host", "h")]).unwrap_err();
        assert_eq!((r.error.code.status(), r.close), (400, false));
        let r = check("GET", "/w?q=\x01", Version::Http11, &[("Host", "h")]).unwrap_err();
        assert_eq!((r.error.code.status(), r.close), (400, true));
    }

    #[test]
    fn the_client_asking_or_an_upgrade_closes_after_the_answer() {
        for (v, headers) in [
            (
                Version::Http11,
                &[("Host", "h"), ("Connection", "foo, Close")][..],
            ),
            (
                Version::Http11,
                &[("Host", "h"), ("Upgrade", "websocket")][..],
            ),
            (Version::Http10, &[][..]),
        ] {
            assert!(check("GET", "/", v, headers).unwrap().close, "{headers:?}");
        }
        assert!(
            !check("GET", "/", Version::Http10, &[("Connection", "keep-alive")])
                .unwrap()
                .close
        );
    }

    #[test]
    fn escaped_unreserved_characters_are_unescaped_and_nothing_else() {
        assert_eq!(normalize_path("/he%61lth").as_deref(), Some("/health"));
        assert_eq!(normalize_path("/a%7E%2Fb%2e").as_deref(), Some("/a~%2Fb."));
        assert_eq!(normalize_path("/plain"), None);
        assert_eq!(normalize_path("/bad%zz%4"), None);
        assert_eq!(
            normalized_target("/he%61lth", Some("x=%61")).as_deref(),
            Some("/health?x=%61")
        );
        assert_eq!(normalized_target("/h%7E", None).as_deref(), Some("/h~"));
        assert_eq!(normalized_target("/plain", Some("q")), None);
        // Admission says which targets can change, so that only those are asked.
        let admitted = |t| check("GET", t, Version::Http11, &[("Host", "h")]).unwrap();
        assert!(admitted("/he%61lth").path_escaped);
        assert!(!admitted("/health?x=%61").path_escaped);
    }
}
