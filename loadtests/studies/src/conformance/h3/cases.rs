//! The HTTP/3 suite's cases, from RFC 9114: ordinary requests a server must answer (with frames
//! and streams it must ignore among them), malformed requests it must refuse (§4.1.2, §4.2, §4.3),
//! and frames or streams that are connection errors with a named code (§6.2, §7.2).

use super::wire::{self, field_section, frame, varint};
use super::{
    Expect, Script, H3_CLOSED_CRITICAL_STREAM, H3_FRAME_UNEXPECTED, H3_MISSING_SETTINGS,
    H3_SETTINGS_ERROR, H3_STREAM_CREATION_ERROR,
};

/// One case of the suite.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Case {
    pub(crate) id: &'static str,
    pub(crate) section: &'static str,
    pub(crate) what: &'static str,
    /// What it sends, given the route ([`Route`]: its path and its own method).
    pub(crate) script: fn(&Route) -> Script,
    pub(crate) expect: Expect,
}

/// The route under test: its path, and the method it answers (so that a refusal is the case's
/// and not a 405).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route<'a> {
    pub(crate) path: &'a str,
    pub(crate) method: &'a str,
}

/// A request's pseudo-header fields: `method` on `path` over https.
fn pseudo<'a>(method: &'a str, path: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        (":method", method),
        (":scheme", "https"),
        (":authority", "localhost"),
        (":path", path),
    ]
}

/// A request stream's bytes: a HEADERS frame of `fields`, then `body` as one DATA frame, then a
/// trailer section of `trailers`.
fn request(fields: &[(&str, &str)], body: &[u8], trailers: &[(&str, &str)]) -> Vec<u8> {
    let mut out = frame(wire::HEADERS, &field_section(fields));
    if !body.is_empty() {
        out.extend(frame(wire::DATA, body));
    }
    if !trailers.is_empty() {
        out.extend(frame(wire::HEADERS, &field_section(trailers)));
    }
    out
}

/// A case that sends one request stream.
fn sends(bytes: Vec<u8>) -> Script {
    Script {
        request: Some(bytes),
        ..Script::default()
    }
}

/// The route's request with `extra` fields after the pseudo-header fields.
fn get_with(route: &Route, extra: &[(&str, &str)]) -> Script {
    let mut fields = pseudo(route.method, route.path);
    fields.extend_from_slice(extra);
    sends(request(&fields, b"", &[]))
}

/// A request whose fields are exactly `fields` (`{path}` and `{method}` in a value become the
/// route's).
fn exactly(route: &Route, fields: &[(&str, &str)]) -> Script {
    let filled: Vec<(&str, String)> = fields
        .iter()
        .map(|(n, v)| {
            let v = v
                .replace("{path}", route.path)
                .replace("{method}", route.method);
            (*n, v)
        })
        .collect();
    let borrowed: Vec<(&str, &str)> = filled.iter().map(|(n, v)| (*n, v.as_str())).collect();
    sends(request(&borrowed, b"", &[]))
}

/// A control stream: its type, then `frames`.
fn control(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    varint(wire::CONTROL_STREAM, &mut out);
    for f in frames {
        out.extend_from_slice(f);
    }
    out
}

/// A case that sends only a control stream of `frames` (no request).
fn control_only(frames: &[Vec<u8>]) -> Script {
    Script {
        control: Some(control(frames)),
        ..Script::default()
    }
}

/// The route's ordinary request after `before` on the request stream.
fn get_after(route: &Route, before: Vec<u8>) -> Script {
    let mut bytes = before;
    bytes.extend(request(&pseudo(route.method, route.path), b"", &[]));
    sends(bytes)
}

/// A case that sends `frame_bytes` on the request stream after the route's request's HEADERS.
fn after_headers(route: &Route, frame_bytes: Vec<u8>) -> Script {
    let mut bytes = frame(
        wire::HEADERS,
        &field_section(&pseudo(route.method, route.path)),
    );
    bytes.extend(frame_bytes);
    sends(bytes)
}

/// An empty SETTINGS frame.
fn empty_settings() -> Vec<u8> {
    frame(wire::SETTINGS, &[])
}

/// Every case, in the order the report lists them.
pub(crate) const CASES: &[Case] = &[
    // --- What a server must answer (§4.1), ignoring what it must ignore (§6.2.3, §7.2.4.1, §7.2.8, §9).
    Case {
        id: "request/get",
        section: "RFC 9114 §4.1",
        what: "an ordinary GET",
        script: |r| get_with(r, &[]),
        expect: Expect::Answered,
    },
    Case {
        id: "request/post-body",
        section: "RFC 9114 §4.1",
        what: "a request with content-length and one DATA frame",
        script: |r| {
            let mut fields = pseudo(r.method, r.path);
            fields.push(("content-length", "5"));
            sends(request(&fields, b"hello", &[]))
        },
        expect: Expect::Answered,
    },
    Case {
        id: "request/trailers",
        section: "RFC 9114 §4.1",
        what: "a request with a trailer section after its DATA",
        script: |r| sends(request(&pseudo(r.method, r.path), b"hello", &[("x-checksum", "1")])),
        expect: Expect::Answered,
    },
    Case {
        id: "request/reserved-frame",
        section: "RFC 9114 §7.2.8",
        what: "a reserved frame type before HEADERS, which a server MUST ignore",
        script: |r| get_after(r, frame(wire::RESERVED_FRAME, b"grease")),
        expect: Expect::Answered,
    },
    Case {
        id: "request/unknown-setting",
        section: "RFC 9114 §7.2.4.1",
        what: "a reserved setting identifier in SETTINGS, which a server MUST ignore",
        script: |r| Script {
            control: Some(control(&[frame(wire::SETTINGS, &wire::settings(&[(0x1f * 2 + 0x21, 7)]))])),
            ..get_with(r, &[])
        },
        expect: Expect::Answered,
    },
    Case {
        id: "request/reserved-stream",
        section: "RFC 9114 §6.2.3",
        what: "a unidirectional stream of a reserved type, which a server MUST ignore",
        script: |r| {
            let mut stream = Vec::new();
            varint(wire::RESERVED_STREAM, &mut stream);
            stream.extend_from_slice(b"grease");
            Script {
                uni: vec![stream],
                ..get_with(r, &[])
            }
        },
        expect: Expect::Answered,
    },
    Case {
        id: "request/unknown-stream",
        section: "RFC 9114 §6.2",
        what: "a unidirectional stream of an unknown type (0x54), which a server MUST NOT treat as an error",
        script: |r| {
            let mut stream = Vec::new();
            varint(0x54, &mut stream);
            stream.extend_from_slice(b"unknown");
            Script {
                uni: vec![stream],
                ..get_with(r, &[])
            }
        },
        expect: Expect::Answered,
    },
    Case {
        id: "request/lowercase-fields",
        section: "RFC 9114 §4.2",
        what: "an ordinary request with a regular field after the pseudo-header fields",
        script: |r| get_with(r, &[("accept", "*/*")]),
        expect: Expect::Answered,
    },
    // --- Malformed requests (§4.1.2: a stream error H3_MESSAGE_ERROR, or a 4xx first).
    Case {
        id: "malformed/missing-method",
        section: "RFC 9114 §4.3.1",
        what: "a request without :method",
        script: |r| exactly(r, &[(":scheme", "https"), (":authority", "localhost"), (":path", "{path}")]),
        expect: Expect::Malformed,
    },
    Case {
        id: "malformed/missing-path",
        section: "RFC 9114 §4.3.1",
        what: "a request without :path",
        script: |r| exactly(r, &[(":method", "{method}"), (":scheme", "https"), (":authority", "localhost")]),
        expect: Expect::Malformed,
    },
    Case {
        id: "malformed/empty-path",
        section: "RFC 9114 §4.3.1",
        what: "an empty :path on an https request",
        script: |r| exactly(r, &[(":method", "{method}"), (":scheme", "https"), (":authority", "localhost"), (":path", "")]),
        expect: Expect::Malformed,
    },
    Case {
        id: "malformed/missing-scheme",
        section: "RFC 9114 §4.3.1",
        what: "a request without :scheme",
        script: |r| exactly(r, &[(":method", "{method}"), (":authority", "localhost"), (":path", "{path}")]),
        expect: Expect::Malformed,
    },
    Case {
        id: "malformed/duplicate-method",
        section: "RFC 9114 §4.3.1",
        what: "two :method fields",
        script: |r| exactly(r, &[(":method", "{method}"), (":method", "{method}"), (":scheme", "https"), (":authority", "localhost"), (":path", "{path}")]),
        expect: Expect::Malformed,
    },
    Case {
        id: "malformed/uppercase-name",
        section: "RFC 9114 §4.2",
        what: "a field name with upper-case characters",
        script: |r| get_with(r, &[("X-Upper", "1")]),
        expect: Expect::Malformed,
    },
    Case {
        id: "malformed/connection-field",
        section: "RFC 9114 §4.2",
        what: "a connection-specific field (connection: keep-alive)",
        script: |r| get_with(r, &[("connection", "keep-alive")]),
        expect: Expect::Malformed,
    },
    Case {
        id: "malformed/transfer-encoding",
        section: "RFC 9114 §4.2",
        what: "a connection-specific field (transfer-encoding: chunked)",
        script: |r| get_with(r, &[("transfer-encoding", "chunked")]),
        expect: Expect::Malformed,
    },
    Case {
        id: "malformed/te-not-trailers",
        section: "RFC 9114 §4.2",
        what: "TE with a value other than trailers",
        script: |r| get_with(r, &[("te", "gzip")]),
        expect: Expect::Malformed,
    },
    Case {
        id: "malformed/pseudo-after-regular",
        section: "RFC 9114 §4.3",
        what: "a pseudo-header field after a regular field",
        script: |r| exactly(r, &[(":method", "{method}"), (":scheme", "https"), ("accept", "*/*"), (":authority", "localhost"), (":path", "{path}")]),
        expect: Expect::Malformed,
    },
    Case {
        id: "malformed/unknown-pseudo",
        section: "RFC 9114 §4.3",
        what: "an undefined pseudo-header field (:foo)",
        script: |r| get_with(r, &[(":foo", "bar")]),
        expect: Expect::Malformed,
    },
    Case {
        id: "malformed/status-in-request",
        section: "RFC 9114 §4.3",
        what: "a response pseudo-header field (:status) in a request",
        script: |r| get_with(r, &[(":status", "200")]),
        expect: Expect::Malformed,
    },
    Case {
        id: "malformed/content-length-mismatch",
        section: "RFC 9114 §4.1.2",
        what: "a content-length of 10 with 5 bytes of DATA",
        script: |r| {
            let mut fields = pseudo(r.method, r.path);
            fields.push(("content-length", "10"));
            sends(request(&fields, b"hello", &[]))
        },
        expect: Expect::Malformed,
    },
    Case {
        id: "malformed/pseudo-in-trailers",
        section: "RFC 9114 §4.3",
        what: "a pseudo-header field in a trailer section",
        script: |r| sends(request(&pseudo(r.method, r.path), b"hello", &[(":path", "/other")])),
        expect: Expect::Malformed,
    },
    Case {
        id: "malformed/connect-without-authority",
        section: "RFC 9114 §4.4",
        what: "CONNECT without :authority",
        script: |r| exactly(r, &[(":method", "CONNECT")]),
        expect: Expect::Malformed,
    },
    // --- Frames where they may not be (connection errors, §4.1, §7.2).
    Case {
        id: "frames/data-before-headers",
        section: "RFC 9114 §4.1",
        what: "a DATA frame before the request's HEADERS: H3_FRAME_UNEXPECTED",
        script: |r| get_after(r, frame(wire::DATA, b"early")),
        expect: Expect::ConnectionError(H3_FRAME_UNEXPECTED),
    },
    Case {
        id: "frames/push-promise-from-client",
        section: "RFC 9114 §7.2.5",
        what: "a PUSH_PROMISE from the client: H3_FRAME_UNEXPECTED",
        script: |r| after_headers(r, frame(wire::PUSH_PROMISE, &[0, 0, 0])),
        expect: Expect::ConnectionError(H3_FRAME_UNEXPECTED),
    },
    Case {
        id: "frames/settings-on-request",
        section: "RFC 9114 §7.2.4",
        what: "a SETTINGS frame on a request stream: H3_FRAME_UNEXPECTED",
        script: |r| after_headers(r, empty_settings()),
        expect: Expect::ConnectionError(H3_FRAME_UNEXPECTED),
    },
    Case {
        id: "frames/goaway-on-request",
        section: "RFC 9114 §7.2.6",
        what: "a GOAWAY frame on a request stream: H3_FRAME_UNEXPECTED",
        script: |r| after_headers(r, frame(wire::GOAWAY, &[0])),
        expect: Expect::ConnectionError(H3_FRAME_UNEXPECTED),
    },
    Case {
        id: "frames/max-push-id-on-request",
        section: "RFC 9114 §7.2.7",
        what: "a MAX_PUSH_ID frame on a request stream: H3_FRAME_UNEXPECTED",
        script: |r| after_headers(r, frame(wire::MAX_PUSH_ID, &[0])),
        expect: Expect::ConnectionError(H3_FRAME_UNEXPECTED),
    },
    Case {
        id: "frames/cancel-push-on-request",
        section: "RFC 9114 §7.2.3",
        what: "a CANCEL_PUSH frame on a request stream: H3_FRAME_UNEXPECTED",
        script: |r| after_headers(r, frame(wire::CANCEL_PUSH, &[0])),
        expect: Expect::ConnectionError(H3_FRAME_UNEXPECTED),
    },
    // --- The control stream (§6.2.1, §7.2.4).
    Case {
        id: "control/first-not-settings",
        section: "RFC 9114 §6.2.1",
        what: "a control stream whose first frame is not SETTINGS: H3_MISSING_SETTINGS",
        script: |_| control_only(&[frame(wire::GOAWAY, &[0])]),
        expect: Expect::ConnectionError(H3_MISSING_SETTINGS),
    },
    Case {
        id: "control/settings-twice",
        section: "RFC 9114 §7.2.4",
        what: "a second SETTINGS frame on the control stream: H3_FRAME_UNEXPECTED",
        script: |_| control_only(&[empty_settings(), empty_settings()]),
        expect: Expect::ConnectionError(H3_FRAME_UNEXPECTED),
    },
    Case {
        id: "control/data-frame",
        section: "RFC 9114 §7.2.1",
        what: "a DATA frame on the control stream: H3_FRAME_UNEXPECTED",
        script: |_| control_only(&[empty_settings(), frame(wire::DATA, b"x")]),
        expect: Expect::ConnectionError(H3_FRAME_UNEXPECTED),
    },
    Case {
        id: "control/headers-frame",
        section: "RFC 9114 §7.2.2",
        what: "a HEADERS frame on the control stream: H3_FRAME_UNEXPECTED",
        script: |r| {
            let headers = field_section(&pseudo(r.method, r.path));
            control_only(&[empty_settings(), frame(wire::HEADERS, &headers)])
        },
        expect: Expect::ConnectionError(H3_FRAME_UNEXPECTED),
    },
    Case {
        id: "control/http2-setting",
        section: "RFC 9114 §7.2.4.1",
        what: "an HTTP/2 setting (SETTINGS_MAX_FRAME_SIZE, 0x05) in SETTINGS: H3_SETTINGS_ERROR",
        script: |_| control_only(&[frame(wire::SETTINGS, &wire::settings(&[(0x05, 16_384)]))]),
        expect: Expect::ConnectionError(H3_SETTINGS_ERROR),
    },
    Case {
        id: "control/second-control-stream",
        section: "RFC 9114 §6.2.1",
        what: "a second control stream: H3_STREAM_CREATION_ERROR",
        script: |_| Script {
            uni: vec![control(&[empty_settings()])],
            ..Script::default()
        },
        expect: Expect::ConnectionError(H3_STREAM_CREATION_ERROR),
    },
    Case {
        id: "control/closed",
        section: "RFC 9114 §6.2.1",
        what: "the client's control stream closed: H3_CLOSED_CRITICAL_STREAM",
        script: |_| Script {
            finish_control: true,
            ..Script::default()
        },
        expect: Expect::ConnectionError(H3_CLOSED_CRITICAL_STREAM),
    },
    Case {
        id: "control/push-stream-from-client",
        section: "RFC 9114 §6.2.2",
        what: "a push stream opened by the client: H3_STREAM_CREATION_ERROR",
        script: |_| {
            let mut stream = Vec::new();
            varint(wire::PUSH_STREAM, &mut stream);
            varint(0, &mut stream);
            Script {
                uni: vec![stream],
                ..Script::default()
            }
        },
        expect: Expect::ConnectionError(H3_STREAM_CREATION_ERROR),
    },
];
