//! The HTTP/1.1 suite's cases: RFC 9112's and RFC 9110's MUST-level requirements on a server, and
//! the request-smuggling classes (CL.TE, TE.CL, TE.TE obfuscations, duplicate and malformed
//! Content-Length, bare LF, obs-fold, invalid chunk sizes, overlong chunk extensions), each citing
//! its section. Written here from the RFCs (no public corpus is used).
//!
//! A case is a request's head and body with placeholders: `{path}` (the route under test),
//! `{method}` (the route's own method, so that a refusal is the case's and not a 405: `POST` on
//! the route that reads the body, `GET` on the one that does not),
//! `{smuggled}` (a whole second request, `GET {path}`, hidden where one reading of the framing puts
//! a body and another a request) and `{body_len}` (the body's length once its placeholders are
//! filled), `{smuggled_hex}` (the hidden request's length in hex, as a chunk size),
//! `{long_extension}` (1 MiB), `{long_query}` (8 KiB), and two that are not bytes: `{wait}` (send
//! what came before, then wait for the server's first answer) and `{half_close}` (shut the
//! client's sending half). A single server cannot show a smuggling attack (that takes two hops that disagree);
//! what it can show is the half that is its own: that it never answers the hidden request, and,
//! where the RFC says so, that it closes the connection after a request whose framing is
//! ambiguous, so no intermediary's reading can be answered on it.

use super::Expect::{self, *};

/// One case of the suite.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Case {
    /// Its id, `class/name`.
    pub(crate) id: &'static str,
    /// The section it checks (`RFC 9112 §6.1`).
    pub(crate) section: &'static str,
    /// What it sends, in words.
    pub(crate) what: &'static str,
    /// Whether it is one of the request-smuggling classes.
    pub(crate) smuggling: bool,
    /// The request head, each line ending in CRLF, the empty line excluded.
    pub(crate) head: &'static str,
    /// What follows the empty line.
    pub(crate) body: &'static str,
    /// What a conforming server does.
    pub(crate) expect: Expect,
}

const fn case(
    id: &'static str,
    section: &'static str,
    what: &'static str,
    head: &'static str,
    body: &'static str,
    expect: Expect,
) -> Case {
    Case {
        id,
        section,
        what,
        smuggling: false,
        head,
        body,
        expect,
    }
}

const fn smuggling(
    id: &'static str,
    section: &'static str,
    what: &'static str,
    head: &'static str,
    body: &'static str,
    expect: Expect,
) -> Case {
    Case {
        smuggling: true,
        ..case(id, section, what, head, body, expect)
    }
}

/// The hidden request of the smuggling cases (and the second of a pipelined pair).
pub(crate) const SMUGGLED: &str = "{method} {path} HTTP/1.1\r\nHost: localhost\r\n\r\n";

/// Every case, in the order the report lists them.
pub(crate) const CASES: &[Case] = &[
    // --- Request smuggling: Content-Length and Transfer-Encoding together (RFC 9112 §6.1, §6.3).
    smuggling(
        "smuggling/cl-te", "RFC 9112 §6.1",
        "Content-Length covering a chunked body and a hidden request: Transfer-Encoding wins, and the connection MUST be closed after the answer",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {body_len}\r\nTransfer-Encoding: chunked\r\n",
        "0\r\n\r\n{smuggled}", Close,
    ),
    smuggling(
        "smuggling/te-cl", "RFC 9112 §6.1",
        "Transfer-Encoding: chunked with a short Content-Length; the hidden request inside the chunk",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n",
        "{smuggled_hex}\r\n{smuggled}\r\n0\r\n\r\n", Close,
    ),
    smuggling(
        "smuggling/te-xchunked", "RFC 9112 §6.1",
        "Transfer-Encoding: xchunked (unknown coding) with Content-Length",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {body_len}\r\nTransfer-Encoding: xchunked\r\n",
        "0\r\n\r\n{smuggled}", Close,
    ),
    smuggling(
        "smuggling/te-chunked-not-final", "RFC 9112 §6.1",
        "Transfer-Encoding: chunked, identity (chunked not the final coding): 400 and close",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {body_len}\r\nTransfer-Encoding: chunked, identity\r\n",
        "0\r\n\r\n{smuggled}", Close,
    ),
    smuggling(
        "smuggling/te-identity-chunked", "RFC 9112 §6.1",
        "Transfer-Encoding: identity, chunked with Content-Length",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {body_len}\r\nTransfer-Encoding: identity, chunked\r\n",
        "0\r\n\r\n{smuggled}", Close,
    ),
    smuggling(
        "smuggling/te-uppercase", "RFC 9112 §6.1; RFC 9110 §10.1.4",
        "Transfer-Encoding: CHUNKED (codings are case-insensitive) with Content-Length",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {body_len}\r\nTransfer-Encoding: CHUNKED\r\n",
        "0\r\n\r\n{smuggled}", Close,
    ),
    smuggling(
        "smuggling/te-tab", "RFC 9112 §6.1; RFC 9110 §5.6.3",
        "Transfer-Encoding:<TAB>chunked (OWS) with Content-Length",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {body_len}\r\nTransfer-Encoding:\tchunked\r\n",
        "0\r\n\r\n{smuggled}", Close,
    ),
    smuggling(
        "smuggling/te-space-before-colon", "RFC 9112 §5.1",
        "`Transfer-Encoding : chunked` (whitespace before the colon): MUST be rejected with 400",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {body_len}\r\nTransfer-Encoding : chunked\r\n",
        "0\r\n\r\n{smuggled}", Status400,
    ),
    smuggling(
        "smuggling/te-twice", "RFC 9112 §6.1",
        "two Transfer-Encoding lines, chunked then identity, with Content-Length",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {body_len}\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n",
        "0\r\n\r\n{smuggled}", Close,
    ),
    smuggling(
        "smuggling/te-chunked-chunked", "RFC 9112 §6.1",
        "Transfer-Encoding: chunked, chunked (chunked applied twice) with Content-Length",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {body_len}\r\nTransfer-Encoding: chunked, chunked\r\n",
        "0\r\n\r\n{smuggled}", Close,
    ),
    smuggling(
        "smuggling/te-quoted", "RFC 9112 §6.1",
        "Transfer-Encoding: \"chunked\" (quoted: not a coding) with Content-Length",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {body_len}\r\nTransfer-Encoding: \"chunked\"\r\n",
        "0\r\n\r\n{smuggled}", Close,
    ),
    smuggling(
        "smuggling/te-vertical-tab", "RFC 9112 §6.1; RFC 9110 §5.5",
        "Transfer-Encoding: <VT>chunked with Content-Length",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {body_len}\r\nTransfer-Encoding: \x0bchunked\r\n",
        "0\r\n\r\n{smuggled}", Close,
    ),
    smuggling(
        "smuggling/te-obs-fold", "RFC 9112 §5.2, §6.1",
        "Transfer-Encoding folded onto a second line (obs-fold) with Content-Length",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {body_len}\r\nTransfer-Encoding:\r\n chunked\r\n",
        "0\r\n\r\n{smuggled}", Close,
    ),
    smuggling(
        "smuggling/te-leading-space-line", "RFC 9112 §2.2",
        "a whitespace-preceded ` Transfer-Encoding: chunked` first field line: rejected, or consumed unprocessed (Content-Length frames the body)",
        "POST {path} HTTP/1.1\r\n Transfer-Encoding: chunked\r\nHost: localhost\r\nContent-Length: {body_len}\r\n",
        "0\r\n\r\n{smuggled}", Single,
    ),
    smuggling(
        "smuggling/te-http10", "RFC 9112 §6.1",
        "an HTTP/1.0 request with Transfer-Encoding and Content-Length: framing faulty, connection closed",
        "POST {path} HTTP/1.0\r\nHost: localhost\r\nContent-Length: {body_len}\r\nTransfer-Encoding: chunked\r\n",
        "0\r\n\r\n{smuggled}", Close,
    ),
    // --- Request smuggling: Content-Length alone (RFC 9112 §6.3; RFC 9110 §8.6).
    smuggling(
        "smuggling/cl-duplicate-differing", "RFC 9112 §6.3; RFC 9110 §8.6",
        "two Content-Length lines that differ (0 and the body's length): 400 and close",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nContent-Length: {body_len}\r\n",
        "{smuggled}", Status400,
    ),
    smuggling(
        "smuggling/cl-list-differing", "RFC 9112 §6.3; RFC 9110 §8.6",
        "Content-Length: 0, N (a list that differs): 400 and close",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0, {body_len}\r\n",
        "{smuggled}", Status400,
    ),
    smuggling(
        "smuggling/cl-plus", "RFC 9112 §6.3; RFC 9110 §8.6",
        "Content-Length: +N (not 1*DIGIT): 400 and close",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: +{body_len}\r\n",
        "{smuggled}", Status400,
    ),
    smuggling(
        "smuggling/cl-negative", "RFC 9112 §6.3",
        "Content-Length: -1: 400 and close",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: -1\r\n",
        "{smuggled}", Status400,
    ),
    smuggling(
        "smuggling/cl-hex", "RFC 9112 §6.3",
        "Content-Length: 0x10: 400 and close",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0x10\r\n",
        "{smuggled}", Status400,
    ),
    smuggling(
        "smuggling/cl-trailing-garbage", "RFC 9112 §6.3",
        "Content-Length: 0a (a digit then a letter): 400 and close",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0a\r\n",
        "{smuggled}", Status400,
    ),
    smuggling(
        "smuggling/cl-overflow", "RFC 9112 §6.3",
        "Content-Length: 99999999999999999999999 (past 64 bits): 400 and close",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 99999999999999999999999\r\n",
        "{smuggled}", Status400,
    ),
    smuggling(
        "smuggling/cl-space-before-colon", "RFC 9112 §5.1",
        "`Content-Length : 0` (whitespace before the colon): MUST be rejected with 400",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length : 0\r\n",
        "{smuggled}", Status400,
    ),
    smuggling(
        "smuggling/cl-obs-fold", "RFC 9112 §5.2",
        "Content-Length folded onto a second line (obs-fold): 400, or the fold read as a space",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length:\r\n {body_len}\r\n",
        "{smuggled}", Single,
    ),
    // --- Request smuggling: chunked framing (RFC 9112 §7.1).
    smuggling(
        "smuggling/chunk-size-bare-lf", "RFC 9112 §7.1, §2.2",
        "a chunk-size line ended by a bare LF (chunk lines end in CRLF)",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n",
        "5\nhello\r\n0\r\n\r\n", RejectBody,
    ),
    smuggling(
        "smuggling/chunk-data-bare-lf", "RFC 9112 §7.1",
        "chunk data ended by a bare LF instead of CRLF",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n",
        "5\r\nhello\n0\r\n\r\n", RejectBody,
    ),
    smuggling(
        "smuggling/chunk-size-0x", "RFC 9112 §7.1",
        "chunk size 0x5 (chunk-size is 1*HEXDIG)",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n",
        "0x5\r\nhello\r\n0\r\n\r\n", RejectBody,
    ),
    smuggling(
        "smuggling/chunk-size-negative", "RFC 9112 §7.1",
        "chunk size -1",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n",
        "-1\r\nhello\r\n0\r\n\r\n", RejectBody,
    ),
    smuggling(
        "smuggling/chunk-size-overflow", "RFC 9112 §7.1",
        "chunk size 1ffffffffffffffff5 (past 64 bits; a wrapping parser reads 5)",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n",
        "1ffffffffffffffff5\r\nhello\r\n0\r\n\r\n", RejectBody,
    ),
    smuggling(
        "smuggling/chunk-size-empty", "RFC 9112 §7.1",
        "an empty chunk-size line",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n",
        "\r\nhello\r\n0\r\n\r\n", RejectBody,
    ),
    smuggling(
        "smuggling/chunk-data-overrun", "RFC 9112 §7.1",
        "chunk data longer than its size (no CRLF where the size ends it)",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n",
        "3\r\nhello\r\n0\r\n\r\n", RejectBody,
    ),
    smuggling(
        "smuggling/chunk-extension-overlong", "RFC 9112 §7.1.1",
        "a 1 MiB chunk extension (a server ought to limit them and answer 4xx)",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n",
        "5;x={long_extension}\r\nhello\r\n0\r\n\r\n", RejectBody,
    ),
    smuggling(
        "smuggling/trailer-content-length", "RFC 9110 §6.5.1; RFC 9112 §7.1.2",
        "a Content-Length in the trailer section (never framing), then a pipelined request: both answered",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n",
        "5\r\nhello\r\n0\r\nContent-Length: 50\r\n\r\n{smuggled}", Count(2),
    ),
    // --- Host (RFC 9112 §3.2).
    case("host/missing", "RFC 9112 §3.2",
        "an HTTP/1.1 request without Host: 400",
        "{method} {path} HTTP/1.1\r\n", "", Status400),
    case("host/twice", "RFC 9112 §3.2",
        "two Host lines: 400",
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nHost: example.com\r\n", "", Status400),
    case("host/invalid-space", "RFC 9112 §3.2; RFC 9110 §7.2",
        "Host: local host (not a uri-host): 400",
        "{method} {path} HTTP/1.1\r\nHost: local host\r\n", "", Status400),
    case("host/invalid-userinfo", "RFC 9112 §3.2; RFC 9110 §7.2",
        "Host: user@localhost (userinfo is not part of Host): 400",
        "{method} {path} HTTP/1.1\r\nHost: user@localhost\r\n", "", Status400),
    case("host/invalid-bracket", "RFC 9112 §3.2; RFC 3986 §3.2.2",
        "Host: [::1 (an unclosed IP literal): 400",
        "{method} {path} HTTP/1.1\r\nHost: [::1\r\n", "", Status400),
    case("host/http10-missing", "RFC 9112 §3.2",
        "an HTTP/1.0 GET without Host is answered",
        "GET {path} HTTP/1.0\r\n", "", Answered),
    case("host/with-port", "RFC 9110 §7.2",
        "Host: localhost:8080 is answered",
        "{method} {path} HTTP/1.1\r\nHost: localhost:8080\r\n", "", Answered),
    case("host/ipv6-literal", "RFC 9110 §7.2; RFC 3986 §3.2.2",
        "Host: [::1]:80 is answered",
        "{method} {path} HTTP/1.1\r\nHost: [::1]:80\r\n", "", Answered),
    case("host/empty-value", "RFC 9110 §7.2",
        "an empty Host (allowed when the target URI has no authority) is answered",
        "{method} {path} HTTP/1.1\r\nHost:\r\n", "", Answered),
    // --- Request targets (RFC 9112 §3.2).
    case("target/absolute-form", "RFC 9112 §3.2.2",
        "GET http://localhost{path}: a server MUST accept the absolute form",
        "GET http://localhost{path} HTTP/1.1\r\nHost: localhost\r\n", "", Answered),
    case("target/absolute-form-other-host", "RFC 9112 §3.2.2",
        "the absolute form with a Host that differs (Host is ignored): answered",
        "GET http://localhost{path} HTTP/1.1\r\nHost: other.example\r\n", "", Answered),
    case("target/asterisk-options", "RFC 9112 §3.2.4",
        "OPTIONS * is answered",
        "OPTIONS * HTTP/1.1\r\nHost: localhost\r\n", "", Answered),
    case("target/asterisk-get", "RFC 9112 §3.2.4",
        "GET * (the asterisk form only for OPTIONS): rejected",
        "GET * HTTP/1.1\r\nHost: localhost\r\n", "", Reject),
    case("target/space-in-target", "RFC 9112 §3",
        "a target with a space in it (an invalid request-line): rejected",
        "{method} {path} x HTTP/1.1\r\nHost: localhost\r\n", "", Reject),
    case("target/no-target", "RFC 9112 §3",
        "a request-line without a target: rejected",
        "GET HTTP/1.1\r\nHost: localhost\r\n", "", Reject),
    case("target/fragment", "RFC 9112 §3.2; RFC 9110 §4.2.4",
        "a target with a #fragment (not part of request-target): rejected or the fragment ignored",
        "{method} {path}#frag HTTP/1.1\r\nHost: localhost\r\n", "", AnsweredOrRejected),
    case("target/long-uri", "RFC 9112 §3",
        "an 8 KiB target: answered (414 allowed)",
        "{method} {path}?{long_query} HTTP/1.1\r\nHost: localhost\r\n", "", Answered),
    // --- HTTP versions (RFC 9112 §2.3; RFC 9110 §2.5, §15.6.6).
    case("version/http10", "RFC 9110 §2.5",
        "an HTTP/1.0 request is answered, then the connection closed (no keep-alive asked)",
        "{method} {path} HTTP/1.0\r\nHost: localhost\r\n", "", Close),
    case("version/http10-keep-alive", "RFC 9112 §9.3",
        "two HTTP/1.0 requests with Connection: keep-alive on one connection: both answered or the second refused by a close",
        "{method} {path} HTTP/1.0\r\nHost: localhost\r\nConnection: keep-alive\r\n", "{method} {path} HTTP/1.0\r\nHost: localhost\r\nConnection: keep-alive\r\n\r\n", AtLeastOne),
    case("version/http12", "RFC 9110 §2.5",
        "HTTP/1.2 (a higher minor version; a SHOULD: processed as 1.1): answered or refused, never a 500",
        "{method} {path} HTTP/1.2\r\nHost: localhost\r\n", "", AnsweredOrRejected),
    case("version/http2-text", "RFC 9110 §15.6.6",
        "HTTP/2.0 in a text request-line: 505 or rejected",
        "{method} {path} HTTP/2.0\r\nHost: localhost\r\n", "", Reject),
    case("version/http3-text", "RFC 9110 §15.6.6",
        "HTTP/3.0 in a text request-line: 505 or rejected",
        "{method} {path} HTTP/3.0\r\nHost: localhost\r\n", "", Reject),
    case("version/lowercase", "RFC 9112 §2.3",
        "http/1.1 (HTTP-name is case-sensitive): rejected",
        "{method} {path} http/1.1\r\nHost: localhost\r\n", "", Reject),
    case("version/two-digit-minor", "RFC 9112 §2.3",
        "HTTP/1.10 (one digit each): rejected",
        "{method} {path} HTTP/1.10\r\nHost: localhost\r\n", "", Reject),
    case("version/missing", "RFC 9112 §3",
        "a request-line without a version (HTTP/0.9): rejected",
        "{method} {path}\r\nHost: localhost\r\n", "", Reject),
    // --- Field syntax (RFC 9112 §5; RFC 9110 §5).
    case("fields/space-before-colon", "RFC 9112 §5.1",
        "`Accept : */*` (whitespace before the colon): 400",
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nAccept : */*\r\n", "", Status400),
    case("fields/invalid-name", "RFC 9110 §5.1",
        "a field name with a `(` (not a token): rejected",
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nBad(Name: x\r\n", "", Reject),
    case("fields/empty-name", "RFC 9110 §5.1",
        "a field line with no name (`: x`): rejected",
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\n: x\r\n", "", Reject),
    case("fields/no-colon", "RFC 9112 §5",
        "a field line without a colon: rejected",
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nNoColonHere\r\n", "", Reject),
    case("fields/obs-fold", "RFC 9112 §5.2",
        "an obs-fold in a field value: 400, or the fold read as a space",
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nX-Folded: a\r\n b\r\n", "", AnsweredOrStatus400),
    case("fields/nul-in-value", "RFC 9110 §5.5",
        "a NUL in a field value: rejected, or replaced with SP",
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nX-Nul: a\0b\r\n", "", AnsweredOrRejected),
    case("fields/bare-cr-in-value", "RFC 9112 §2.2",
        "a bare CR in a field value: rejected, or replaced with SP",
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nX-Cr: a\rb\r\n", "", AnsweredOrRejected),
    case("fields/bare-lf-lines", "RFC 9112 §2.2",
        "a head whose lines end in bare LF (a recipient MAY accept them)",
        "{method} {path} HTTP/1.1\nHost: localhost\n", "", AnsweredOrRejected),
    case("fields/case-insensitive-names", "RFC 9110 §5.1",
        "field names in odd case (hOsT, cOnTeNt-LeNgTh) are the same fields: the body read, the next request answered",
        "POST {path} HTTP/1.1\r\nhOsT: localhost\r\ncOnTeNt-LeNgTh: 5\r\n", "hello{smuggled}", Count(2)),
    case("fields/ows-around-value", "RFC 9112 §5.1",
        "Content-Length with spaces and tabs around its value is valid",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: \t5 \t\r\n", "hello{smuggled}", Count(2)),
    case("fields/cl-identical-list", "RFC 9110 §8.6",
        "Content-Length: 5, 5 (identical values) may be accepted as 5, or rejected",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5, 5\r\n", "hello", AnsweredOrStatus400),
    // --- Message bodies (RFC 9112 §6, §7).
    case("body/content-length", "RFC 9112 §6.2",
        "a body framed by Content-Length, then a pipelined request: both answered",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n", "hello{smuggled}", Count(2)),
    case("body/chunked", "RFC 9112 §7.1",
        "a chunked body, then a pipelined request: both answered",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\n\r\n{smuggled}", Count(2)),
    case("body/chunked-uppercase-hex", "RFC 9112 §7.1",
        "chunk size in upper-case hex (A)",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n", "A\r\n0123456789\r\n0\r\n\r\n{smuggled}", Count(2)),
    case("body/chunked-leading-zeros", "RFC 9112 §7.1",
        "chunk size with leading zeros (0005)",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n", "0005\r\nhello\r\n0\r\n\r\n{smuggled}", Count(2)),
    case("body/chunk-extensions", "RFC 9112 §7.1.1",
        "chunk extensions, which a recipient MUST ignore",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n", "5;name=value;flag\r\nhello\r\n0;last\r\n\r\n{smuggled}", Count(2)),
    case("body/chunked-trailer", "RFC 9112 §7.1.2",
        "a trailer field after the last chunk",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\nX-Checksum: 1\r\n\r\n{smuggled}", Count(2)),
    case("body/get-with-body", "RFC 9110 §9.3.1",
        "a GET with a body framed by Content-Length: the body skipped, the next request answered",
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n", "hello{smuggled}", Count(2)),
    case("body/zero-length", "RFC 9112 §6.2",
        "Content-Length: 0, then a pipelined request",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n", "{smuggled}", Count(2)),
    case("body/unknown-coding", "RFC 9112 §6.1",
        "Transfer-Encoding: gzip alone (chunked not final, no length): 400 or 501, then close",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip\r\n", "hello", Close),
    case("body/truncated", "RFC 9112 §8",
        "a body shorter than its Content-Length, then the client's half-close: no 2xx",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n", "hello{half_close}", NoSuccess),
    // --- Connections (RFC 9112 §9).
    case("connection/pipelined", "RFC 9112 §9.3.2",
        "three pipelined requests answered in order",
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\n", "{smuggled}{smuggled}", Count(3)),
    case("connection/close", "RFC 9112 §9.6",
        "Connection: close: the server closes after the answer (a pipelined request after it unanswered)",
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n", "{smuggled}", Close),
    // --- Expect (RFC 9110 §10.1.1).
    case("expect/100-continue", "RFC 9110 §10.1.1",
        "Expect: 100-continue: a 100 or the final status before the body is sent",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nExpect: 100-continue\r\n", "{wait}hello", Continue),
    case("expect/100-continue-no-body", "RFC 9110 §10.1.1",
        "Expect: 100-continue on a request without content is answered",
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\n", "", Answered),
    case("expect/unknown", "RFC 9110 §10.1.1",
        "Expect: 101-fancy (an unknown expectation): 417, or ignored",
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nExpect: 101-fancy\r\n", "", Answered),
    case("expect/100-continue-case", "RFC 9110 §10.1.1",
        "Expect: 100-Continue (case-insensitive): a 100 or the final status before the body",
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nExpect: 100-Continue\r\n", "{wait}hello", Continue),
    // --- Methods (RFC 9110 §9).
    case("method/unknown", "RFC 9110 §9.1",
        "an unknown method (BREW) is answered (501 or 405), never a 500",
        "BREW {path} HTTP/1.1\r\nHost: localhost\r\n", "", Answered),
    case("method/lowercase", "RFC 9110 §9.1",
        "`get` (methods are case-sensitive: not GET) is answered, never a 500",
        "get {path} HTTP/1.1\r\nHost: localhost\r\n", "", AnsweredOrRejected),
    case("method/head", "RFC 9110 §9.3.2",
        "HEAD then GET pipelined: the HEAD answer has no content, both answered",
        "HEAD {path} HTTP/1.1\r\nHost: localhost\r\n", "{smuggled}", CountAfterHead(2)),
    case("method/options", "RFC 9110 §9.3.7",
        "OPTIONS on the route is answered",
        "OPTIONS {path} HTTP/1.1\r\nHost: localhost\r\n", "", Answered),
    case("method/invalid-token", "RFC 9110 §9.1",
        "a method with a `(` (not a token): rejected",
        "GE(T {path} HTTP/1.1\r\nHost: localhost\r\n", "", Reject),
];
