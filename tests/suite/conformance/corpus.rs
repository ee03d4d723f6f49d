//! The differential corpus: raw HTTP/1.x requests a hostile or merely unusual client sends —
//! malformed request lines, headers and bodies, smuggling patterns, pipelining, HTTP/1.0, odd
//! encodings and the server limits ±1 — each with how many answers it can get (a pipelined case
//! more than one). Built in code so that the limit cases follow the limits the test serves under.

/// One raw request (or several, pipelined) and how many answers the client reads for it.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    /// What the case is, unique in the corpus.
    pub(crate) name: String,
    /// The bytes written to a fresh connection.
    pub(crate) bytes: Vec<u8>,
    /// How many final answers the client waits for (more than one for a pipelined case).
    pub(crate) answers: usize,
    /// Which answers are to a `HEAD` (no body follows their head).
    pub(crate) heads: Vec<usize>,
}

/// The limits the corpus probes at ±1; the test serves with exactly these.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The most headers a request may carry.
    pub(crate) max_headers: usize,
    /// The most bytes a request head may take.
    pub(crate) max_header_bytes: usize,
    /// The largest body any route accepts.
    pub(crate) max_body_bytes: usize,
}

struct Builder {
    cases: Vec<Case>,
}

impl Builder {
    fn raw(&mut self, name: &str, bytes: impl Into<Vec<u8>>) {
        self.add(name, bytes.into(), 1, vec![]);
    }

    fn add(&mut self, name: &str, bytes: Vec<u8>, answers: usize, heads: Vec<usize>) {
        assert!(
            self.cases.iter().all(|c| c.name != name),
            "corpus: {name} twice"
        );
        self.cases.push(Case {
            name: name.to_owned(),
            bytes,
            answers,
            heads,
        });
    }

    /// `METHOD target HTTP/1.1` with a Host and `extra` header lines, no body.
    fn get(&mut self, name: &str, method: &str, target: &str, extra: &str) {
        self.raw(
            name,
            format!("{method} {target} HTTP/1.1\r\nHost: h\r\n{extra}\r\n"),
        );
    }

    /// A request with `headers` (each line ending in CRLF) and `body` after the blank line.
    fn with_body(&mut self, name: &str, head: &str, headers: &str, body: &[u8]) {
        let mut bytes = format!("{head}\r\n{headers}\r\n").into_bytes();
        bytes.extend_from_slice(body);
        self.raw(name, bytes);
    }

    /// `POST path` with a JSON content type and a Content-Length that matches `body`.
    fn post_json(&mut self, name: &str, path: &str, body: &str) {
        self.with_body(
            name,
            &format!("POST {path} HTTP/1.1"),
            &format!(
                "Host: h\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ),
            body.as_bytes(),
        );
    }
}

/// A valid waiter's JSON.
const WAITER: &str = r#"{"name":"Ana","shift":"night"}"#;

/// The whole corpus.
pub(crate) fn corpus(limits: Limits) -> Vec<Case> {
    let mut b = Builder { cases: Vec::new() };
    request_lines(&mut b);
    targets(&mut b);
    headers(&mut b, limits);
    content_types(&mut b);
    framing(&mut b);
    smuggling(&mut b);
    bodies(&mut b, limits);
    pipelining(&mut b);
    versions(&mut b);
    not_http(&mut b);
    b.cases
}

fn request_lines(b: &mut Builder) {
    b.get("plain GET", "GET", "/health", "");
    b.get("GET a list", "GET", "/waiters", "");
    b.get("HEAD", "HEAD", "/health", "");
    b.cases.last_mut().unwrap().heads = vec![0];
    b.get("HEAD on a list", "HEAD", "/waiters?limit=2", "");
    b.cases.last_mut().unwrap().heads = vec![0];
    b.get("lowercase method", "get", "/health", "");
    b.get("unknown method", "FOO", "/health", "");
    b.get("unknown method on an unknown path", "BREW", "/no/such", "");
    b.get("a long method", &"X".repeat(64), "/health", "");
    b.get("OPTIONS on a route", "OPTIONS", "/health", "");
    b.get("TRACE", "TRACE", "/health", "");
    b.get("PATCH on a GET route", "PATCH", "/health", "");
    b.get("DELETE on a list", "DELETE", "/waiters", "");
    b.get("PUT on a list", "PUT", "/waiters", "Content-Length: 0\r\n");
    b.get("OPTIONS *", "OPTIONS", "*", "");
    b.get("GET *", "GET", "*", "");
    b.get("CONNECT authority-form", "CONNECT", "h:443", "");
    b.get("absolute-form", "GET", "http://h/health", "");
    b.get(
        "absolute-form, another host",
        "GET",
        "http://other.example/health",
        "",
    );
    b.get(
        "absolute-form with a query",
        "GET",
        "http://h/waiters?limit=1",
        "",
    );
    b.raw("no version", "GET /health\r\nHost: h\r\n\r\n");
    b.raw("HTTP/0.9 line", "GET /health\r\n\r\n");
    b.raw("two spaces", "GET  /health HTTP/1.1\r\nHost: h\r\n\r\n");
    b.raw("tab separator", "GET\t/health\tHTTP/1.1\r\nHost: h\r\n\r\n");
    b.raw("trailing space", "GET /health HTTP/1.1 \r\nHost: h\r\n\r\n");
    b.raw(
        "lowercase version",
        "GET /health http/1.1\r\nHost: h\r\n\r\n",
    );
    b.raw("bare LF line ends", "GET /health HTTP/1.1\nHost: h\n\n");
    b.raw("bare CR line ends", "GET /health HTTP/1.1\rHost: h\r\r");
    b.raw(
        "an empty line first",
        "\r\nGET /health HTTP/1.1\r\nHost: h\r\n\r\n",
    );
    b.raw("a space first", " GET /health HTTP/1.1\r\nHost: h\r\n\r\n");
    b.raw("no target", "GET HTTP/1.1\r\nHost: h\r\n\r\n");
    b.raw("only a method", "GET\r\n\r\n");
    b.raw(
        "a NUL in the method",
        "GE\0T /health HTTP/1.1\r\nHost: h\r\n\r\n",
    );
}

fn targets(b: &mut Builder) {
    for (name, target) in [
        ("no leading slash", "health"),
        ("a trailing slash", "/waiters/"),
        ("a trailing slash on health", "/health/"),
        ("two trailing slashes", "/waiters//"),
        ("a double slash first", "//health"),
        ("a double slash inside", "/bench//hello"),
        ("uppercase path", "/HEALTH"),
        ("dot segment", "/./health"),
        ("dot-dot segment", "/bench/../health"),
        ("encoded dot-dot", "/bench/%2e%2e/health"),
        ("encoded letter", "/he%61lth"),
        ("encoded slash", "/bench%2Fhello"),
        ("a lone percent", "/waiters/%"),
        ("bad percent escape", "/waiters/%zz"),
        ("encoded NUL id", "/waiters/%00"),
        ("encoded LF id", "/waiters/%0A"),
        ("encoded CRLF id", "/waiters/%0D%0Aa"),
        ("encoded space id", "/waiters/a%20b"),
        ("encoded UTF-8 id", "/waiters/%C3%A9"),
        ("invalid UTF-8 escape id", "/waiters/%FF%FE"),
        ("raw UTF-8 id", "/waiters/é"),
        ("raw byte 0xFF", "/waiters/\u{FF}"),
        ("an unknown id", "/waiters/nobody"),
        ("a 24-hex id", "/waiters/0123456789abcdef01234567"),
        ("a long id", &format!("/waiters/{}", "a".repeat(1000))),
        ("an operator id", "/waiters/$where"),
        ("an object-shaped id", "/waiters/%7B%22$gt%22:%22%22%7D"),
        ("a fragment", "/health#top"),
        ("an empty query", "/waiters?"),
        ("a query of ampersands", "/waiters?&&&"),
        ("limit=abc", "/waiters?limit=abc"),
        ("limit=0", "/waiters?limit=0"),
        ("limit=500", "/waiters?limit=500"),
        ("limit=501", "/waiters?limit=501"),
        ("limit=-1", "/waiters?limit=-1"),
        ("limit past u64", "/waiters?limit=18446744073709551616"),
        ("offset=huge", "/waiters?offset=99999999999"),
        ("two limits", "/waiters?limit=1&limit=2"),
        ("an unknown parameter", "/waiters?colour=red"),
        ("a bad shift", "/waiters?shift=dawn"),
        ("a good shift", "/waiters?shift=night"),
        ("an encoded query", "/waiters?shift=%6Eight"),
        ("a bad query escape", "/waiters?shift=%zz"),
        ("a query without =", "/waiters?shift"),
        ("a query with a raw UTF-8 value", "/waiters?shift=é"),
        ("bytes/0", "/bench/bytes/0"),
        ("bytes/1", "/bench/bytes/1"),
        ("bytes/-1", "/bench/bytes/-1"),
        ("bytes/abc", "/bench/bytes/abc"),
        ("bytes past u64", "/bench/bytes/18446744073709551616"),
        ("bytes/16 MiB", "/bench/bytes/16777216"),
        ("bytes/16 MiB + 1", "/bench/bytes/16777217"),
        ("static/255", "/bench/static/255"),
        ("static/256", "/bench/static/256"),
        ("static/524288", "/bench/static/524288"),
        ("static/524289", "/bench/static/524289"),
        ("static/abc", "/bench/static/abc"),
        ("hello", "/bench/hello"),
        // A human-readable path parameter: the kit decodes each once, the same on every runtime.
        ("a name", "/bench/hello/Ada"),
        ("an encoded UTF-8 name", "/bench/hello/Zo%C3%AB"),
        ("an encoded slash in a name", "/bench/hello/AC%2FDC"),
        ("a plus in a name", "/bench/hello/C++"),
        ("an encoded plus in a name", "/bench/hello/C%2B%2B"),
        ("an encoded percent in a name", "/bench/hello/100%25"),
        ("an encoded space in a name", "/bench/hello/Ada%20Lovelace"),
        ("a bad escape in a name", "/bench/hello/a%zz"),
        ("a name not UTF-8", "/bench/hello/%C3"),
        ("an encoded slash id", "/waiters/a%2Fb"),
        ("an encoded plus id", "/waiters/a%2Bb"),
        ("hello with a query", "/bench/hello?x=1"),
        ("an unknown bench path", "/bench/nothing"),
        ("openapi", "/openapi.json"),
        ("ready", "/ready"),
    ] {
        b.get(name, "GET", target, "");
    }
    b.get("DELETE an unknown id", "DELETE", "/waiters/nobody", "");
    b.get("a long path", "GET", &format!("/{}", "p".repeat(2000)), "");
}

fn headers(b: &mut Builder, limits: Limits) {
    b.raw("HTTP/1.1 without Host", "GET /health HTTP/1.1\r\n\r\n");
    b.raw(
        "HTTP/1.1 without Host, absolute-form",
        "GET http://h/health HTTP/1.1\r\n\r\n",
    );
    b.raw("HTTP/1.0 without Host", "GET /health HTTP/1.0\r\n\r\n");
    b.raw(
        "two Host headers",
        "GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    );
    b.raw("an empty Host", "GET /health HTTP/1.1\r\nHost:\r\n\r\n");
    b.raw(
        "a Host with a space",
        "GET /health HTTP/1.1\r\nHost: a b\r\n\r\n",
    );
    b.raw(
        "a Host with a slash",
        "GET /health HTTP/1.1\r\nHost: a/b\r\n\r\n",
    );
    b.raw(
        "a Host with a port",
        "GET /health HTTP/1.1\r\nHost: h:8081\r\n\r\n",
    );
    b.raw(
        "a Host with a bad port",
        "GET /health HTTP/1.1\r\nHost: h:99999\r\n\r\n",
    );
    b.raw(
        "a header without a colon",
        "GET /health HTTP/1.1\r\nHost: h\r\nBroken\r\n\r\n",
    );
    b.raw(
        "a space before the colon",
        "GET /health HTTP/1.1\r\nHost: h\r\nX-A : b\r\n\r\n",
    );
    b.raw(
        "an obs-fold",
        "GET /health HTTP/1.1\r\nHost: h\r\nX-A: b\r\n c\r\n\r\n",
    );
    b.raw(
        "an empty header name",
        "GET /health HTTP/1.1\r\nHost: h\r\n: v\r\n\r\n",
    );
    b.raw(
        "a header name with a space",
        "GET /health HTTP/1.1\r\nHost: h\r\nX A: v\r\n\r\n",
    );
    b.raw(
        "a header name with a non-token",
        "GET /health HTTP/1.1\r\nHost: h\r\nX(A): v\r\n\r\n",
    );
    b.raw(
        "a header name in UTF-8",
        "GET /health HTTP/1.1\r\nHost: h\r\nX-é: v\r\n\r\n",
    );
    b.raw(
        "an empty header value",
        "GET /health HTTP/1.1\r\nHost: h\r\nX-A:\r\n\r\n",
    );
    let non_ascii: &[(&str, &str)] = &[
        ("traceparent", "/health"),
        ("traceparent", "/waiters"),
        ("user-agent", "/waiters"),
        ("x-custom", "/waiters/nobody"),
        ("accept", "/bench/hello"),
    ];
    for (header, path) in non_ascii {
        let mut bytes = format!("GET {path} HTTP/1.1\r\nHost: h\r\n{header}: ").into_bytes();
        bytes.extend_from_slice(b"caf\xc3\xa9 \xff\xfe\r\n\r\n");
        b.raw(&format!("a non-ASCII {header} on GET {path}"), bytes);
    }
    let mut bytes = b"POST /waiters HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nX-Note: \xe2\x82\xac\r\n".to_vec();
    bytes.extend_from_slice(format!("Content-Length: {}\r\n\r\n{WAITER}", WAITER.len()).as_bytes());
    b.raw("a non-ASCII header on a POST", bytes);
    b.raw(
        "a NUL in a header value",
        "GET /health HTTP/1.1\r\nHost: h\r\nX-A: a\0b\r\n\r\n",
    );
    b.raw(
        "a bare CR in a header value",
        "GET /health HTTP/1.1\r\nHost: h\r\nX-A: a\rb\r\n\r\n",
    );
    b.raw(
        "a DEL in a header value",
        "GET /health HTTP/1.1\r\nHost: h\r\nX-A: a\x7fb\r\n\r\n",
    );
    b.raw(
        "a tab in a header value",
        "GET /health HTTP/1.1\r\nHost: h\r\nX-A: a\tb\r\n\r\n",
    );
    for (name, value) in [
        (
            "a valid traceparent",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ),
        ("a malformed traceparent", "zz-not-a-trace"),
        (
            "an all-zero traceparent",
            "00-00000000000000000000000000000000-0000000000000000-01",
        ),
        (
            "an overlong traceparent",
            &format!("00-{}-b7ad6b7169203331-01", "a".repeat(200)),
        ),
    ] {
        b.get(
            name,
            "GET",
            "/waiters",
            &format!("traceparent: {value}\r\n"),
        );
    }
    for (name, extra) in [
        ("Connection: close", "Connection: close\r\n"),
        ("Connection: CLOSE", "Connection: CLOSE\r\n"),
        ("Connection: keep-alive", "Connection: keep-alive\r\n"),
        ("Connection: a token list with close", "Connection: foo, close\r\n"),
        ("Connection: an unknown token", "Connection: frobnicate\r\n"),
        ("a websocket Upgrade", "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"),
        ("an h2c Upgrade", "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n"),
        ("an Upgrade without Connection", "Upgrade: websocket\r\n"),
        ("Accept-Encoding gzip", "Accept-Encoding: gzip, br\r\n"),
        ("a Range", "Range: bytes=0-10\r\n"),
        ("If-None-Match", "If-None-Match: \"x\"\r\n"),
        ("Expect 100-continue without a body", "Expect: 100-continue\r\n"),
        ("an unknown Expect without a body", "Expect: teapot\r\n"),
        ("Content-Length 0 on a GET", "Content-Length: 0\r\n"),
        ("a big cookie", &format!("Cookie: {}\r\n", "c".repeat(1000))),
        ("Max-Forwards 0", "Max-Forwards: 0\r\n"),
        ("a Forwarded header", "Forwarded: for=192.0.2.60;proto=http\r\n"),
    ] {
        b.get(name, "GET", "/health", extra);
    }
    // The header count at the limit and one past it (Host counts as one).
    for (name, count) in [
        ("headers at the limit", limits.max_headers),
        ("headers one past the limit", limits.max_headers + 1),
    ] {
        let extra: String = (1..count).map(|i| format!("X-H{i}: v\r\n")).collect();
        b.get(name, "GET", "/health", &extra);
    }
    // The head's size at the limit ±1: one header's value fills the head to the byte.
    let fixed = "GET /health HTTP/1.1\r\nHost: h\r\nX-Fill: \r\n\r\n".len();
    for (name, size) in [
        (
            "a head one under the size limit",
            limits.max_header_bytes - 1,
        ),
        ("a head at the size limit", limits.max_header_bytes),
        (
            "a head one past the size limit",
            limits.max_header_bytes + 1,
        ),
        (
            "a head far past the size limit",
            limits.max_header_bytes * 4,
        ),
    ] {
        let fill = "f".repeat(size - fixed);
        b.get(name, "GET", "/health", &format!("X-Fill: {fill}\r\n"));
    }
}

fn content_types(b: &mut Builder) {
    for (name, content_type) in [
        ("a JSON body", Some("application/json")),
        (
            "JSON with a charset",
            Some("application/json; charset=utf-8"),
        ),
        ("JSON in capitals", Some("APPLICATION/JSON")),
        (
            "JSON with spaces around ;",
            Some("application/json ; charset=utf-8"),
        ),
        ("JSON with a trailing ;", Some("application/json;")),
        ("a JSON suffix type", Some("application/problem+json")),
        ("application/jsonx", Some("application/jsonx")),
        ("text/plain", Some("text/plain")),
        ("a form", Some("application/x-www-form-urlencoded")),
        ("an empty content type", Some("")),
        ("a content type of spaces", Some("   ")),
        ("no content type", None),
    ] {
        let header = content_type.map_or(String::new(), |t| format!("Content-Type: {t}\r\n"));
        b.with_body(
            &format!("POST {name}"),
            "POST /waiters HTTP/1.1",
            &format!("Host: h\r\n{header}Content-Length: {}\r\n", WAITER.len()),
            WAITER.as_bytes(),
        );
    }
    b.with_body(
        "POST two content types",
        "POST /waiters HTTP/1.1",
        &format!(
            "Host: h\r\nContent-Type: text/plain\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            WAITER.len()
        ),
        WAITER.as_bytes(),
    );
    let mut bytes = format!(
        "POST /waiters HTTP/1.1\r\nHost: h\r\nContent-Length: {}\r\nContent-Type: application/json; x=",
        WAITER.len()
    )
    .into_bytes();
    bytes.extend_from_slice(b"\xc3\xa9\r\n\r\n");
    bytes.extend_from_slice(WAITER.as_bytes());
    b.raw("POST a non-ASCII content type", bytes);
    b.with_body(
        "POST bytes as octets",
        "POST /bench/bytes HTTP/1.1",
        "Host: h\r\nContent-Type: application/octet-stream\r\nContent-Length: 5\r\n",
        b"abcde",
    );
    b.with_body(
        "POST bytes without a content type",
        "POST /bench/bytes HTTP/1.1",
        "Host: h\r\nContent-Length: 5\r\n",
        b"abcde",
    );
    b.with_body(
        "POST strings as text",
        "POST /bench/strings HTTP/1.1",
        "Host: h\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n",
        b"[\"a\"]",
    );
}

fn framing(b: &mut Builder) {
    let head = "POST /waiters HTTP/1.1";
    let json = "Host: h\r\nContent-Type: application/json\r\n";
    let w = WAITER.as_bytes();
    let n = w.len();
    for (name, length) in [
        ("Content-Length with a plus", format!("+{n}")),
        ("Content-Length negative", "-1".to_owned()),
        ("Content-Length not a number", "abc".to_owned()),
        ("Content-Length empty", String::new()),
        ("Content-Length hex", format!("0x{n:x}")),
        ("Content-Length past u64", "18446744073709551616".to_owned()),
        ("Content-Length as a list", format!("{n}, {n}")),
        ("Content-Length with leading zeros", format!("000{n}")),
        (
            "Content-Length with a space inside",
            format!("{} {}", n / 10, n % 10),
        ),
    ] {
        b.with_body(
            &format!("POST {name}"),
            head,
            &format!("{json}Content-Length: {length}\r\n"),
            w,
        );
    }
    b.with_body(
        "POST two equal Content-Lengths",
        head,
        &format!("{json}Content-Length: {n}\r\nContent-Length: {n}\r\n"),
        w,
    );
    b.with_body(
        "POST two different Content-Lengths",
        head,
        &format!("{json}Content-Length: {n}\r\nContent-Length: {}\r\n", n + 1),
        w,
    );
    b.with_body(
        "POST a short body (Content-Length one more)",
        head,
        &format!("{json}Content-Length: {}\r\n", n + 1),
        w,
    );
    b.with_body("POST without a length", head, json, w);
    b.with_body(
        "POST Content-Length 0",
        head,
        &format!("{json}Content-Length: 0\r\n"),
        b"",
    );
    let chunked = |body: &str| format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len());
    for (name, te, body) in [
        ("chunked", "chunked", chunked(WAITER)),
        ("chunked in capitals", "CHUNKED", chunked(WAITER)),
        (
            "chunked in two chunks",
            "chunked",
            format!(
                "5\r\n{}\r\n{:x}\r\n{}\r\n0\r\n\r\n",
                &WAITER[..5],
                n - 5,
                &WAITER[5..]
            ),
        ),
        (
            "chunked with an extension",
            "chunked",
            format!("{n:x};name=value\r\n{WAITER}\r\n0\r\n\r\n"),
        ),
        (
            "chunked with a trailer",
            "chunked",
            format!("{n:x}\r\n{WAITER}\r\n0\r\nX-Trailer: t\r\n\r\n"),
        ),
        (
            "chunked with an uppercase size",
            "chunked",
            format!("{n:X}\r\n{WAITER}\r\n0\r\n\r\n"),
        ),
        (
            "chunked with a zero-padded size",
            "chunked",
            format!("000{n:x}\r\n{WAITER}\r\n0\r\n\r\n"),
        ),
        (
            "chunked with an overflowing size",
            "chunked",
            format!("1{}\r\n{WAITER}\r\n0\r\n\r\n", "0".repeat(20)),
        ),
        (
            "chunked with a negative size",
            "chunked",
            format!("-{n:x}\r\n{WAITER}\r\n0\r\n\r\n"),
        ),
        (
            "chunked with a bad size",
            "chunked",
            format!("zz\r\n{WAITER}\r\n0\r\n\r\n"),
        ),
        (
            "chunked without the CRLF after data",
            "chunked",
            format!("{n:x}\r\n{WAITER}0\r\n\r\n"),
        ),
        (
            "chunked with a bare LF",
            "chunked",
            format!("{n:x}\n{WAITER}\n0\n\n"),
        ),
        (
            "chunked without the last chunk",
            "chunked",
            format!("{n:x}\r\n{WAITER}\r\n"),
        ),
        (
            "chunked, size larger than the data",
            "chunked",
            format!("{:x}\r\n{WAITER}\r\n0\r\n\r\n", n + 10),
        ),
        ("chunked, empty", "chunked", "0\r\n\r\n".to_owned()),
        ("gzip, chunked", "gzip, chunked", chunked(WAITER)),
        ("chunked, chunked", "chunked, chunked", chunked(WAITER)),
        ("chunked, gzip (not last)", "chunked, gzip", chunked(WAITER)),
        ("an unknown coding", "frobnicate", chunked(WAITER)),
        ("identity", "identity", chunked(WAITER)),
        ("xchunked", "xchunked", chunked(WAITER)),
        ("an empty Transfer-Encoding", "", chunked(WAITER)),
    ] {
        b.with_body(
            &format!("POST Transfer-Encoding {name}"),
            head,
            &format!("{json}Transfer-Encoding: {te}\r\n"),
            body.as_bytes(),
        );
    }
    b.with_body(
        "POST two Transfer-Encoding headers",
        head,
        &format!("{json}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"),
        chunked(WAITER).as_bytes(),
    );
    b.with_body(
        "POST Transfer-Encoding on HTTP/1.0",
        "POST /waiters HTTP/1.0",
        &format!("{json}Transfer-Encoding: chunked\r\n"),
        chunked(WAITER).as_bytes(),
    );
    b.with_body(
        "GET with a Content-Length body",
        "GET /health HTTP/1.1",
        "Host: h\r\nContent-Length: 5\r\n",
        b"hello",
    );
    b.with_body(
        "GET with a chunked body",
        "GET /health HTTP/1.1",
        "Host: h\r\nTransfer-Encoding: chunked\r\n",
        b"5\r\nhello\r\n0\r\n\r\n",
    );
    b.with_body(
        "DELETE with a body",
        "DELETE /waiters/nobody HTTP/1.1",
        "Host: h\r\nContent-Length: 2\r\nContent-Type: application/json\r\n",
        b"{}",
    );
    b.with_body(
        "POST Expect 100-continue with a body",
        head,
        &format!("{json}Expect: 100-continue\r\nContent-Length: {n}\r\n"),
        w,
    );
    b.with_body(
        "POST an unknown Expect with a body",
        head,
        &format!("{json}Expect: teapot\r\nContent-Length: {n}\r\n"),
        w,
    );
    b.with_body(
        "POST Expect 100-continue in capitals",
        head,
        &format!("{json}Expect: 100-Continue\r\nContent-Length: {n}\r\n"),
        w,
    );
}

/// Request smuggling shapes (CL.TE, TE.CL, TE.TE): a second request hides in the first one's body.
/// The corpus asks for two answers; a server that frames as RFC 9112 says gives one, or closes.
fn smuggling(b: &mut Builder) {
    let hidden = "GET /bench/hello HTTP/1.1\r\nHost: h\r\n\r\n";
    let cl_te = format!("0\r\n\r\n{hidden}");
    for (name, headers) in [
        (
            "CL.TE",
            format!(
                "Content-Length: {}\r\nTransfer-Encoding: chunked\r\n",
                cl_te.len()
            ),
        ),
        (
            "TE.CL",
            format!(
                "Transfer-Encoding: chunked\r\nContent-Length: {}\r\n",
                cl_te.len()
            ),
        ),
        (
            "TE with a space before the colon",
            format!(
                "Transfer-Encoding : chunked\r\nContent-Length: {}\r\n",
                cl_te.len()
            ),
        ),
        (
            "TE with a tab value",
            format!(
                "Transfer-Encoding:\tchunked\r\nContent-Length: {}\r\n",
                cl_te.len()
            ),
        ),
        (
            "TE obfuscated by a second header",
            format!(
                "Transfer-Encoding: chunked\r\nTransfer-encoding: x\r\nContent-Length: {}\r\n",
                cl_te.len()
            ),
        ),
        (
            "TE with an obs-fold",
            format!(
                "Transfer-Encoding:\r\n chunked\r\nContent-Length: {}\r\n",
                cl_te.len()
            ),
        ),
    ] {
        let bytes = format!(
            "POST /bench/bytes HTTP/1.1\r\nHost: h\r\nContent-Type: application/octet-stream\r\n{headers}\r\n{cl_te}"
        );
        b.add(&format!("smuggling {name}"), bytes.into_bytes(), 2, vec![]);
    }
    let te_cl_body = format!("{:x}\r\n{hidden}\r\n0\r\n\r\n", hidden.len());
    let bytes = format!(
        "POST /bench/bytes HTTP/1.1\r\nHost: h\r\nContent-Type: application/octet-stream\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n{te_cl_body}"
    );
    b.add(
        "smuggling TE.CL, short length",
        bytes.into_bytes(),
        2,
        vec![],
    );
    let bytes = format!(
        "POST /bench/bytes HTTP/1.1\r\nHost: h\r\nContent-Type: application/octet-stream\r\nContent-Length: 0\r\nContent-Length: {}\r\n\r\n{hidden}",
        hidden.len()
    );
    b.add("smuggling CL.CL", bytes.into_bytes(), 2, vec![]);
    let bytes = format!(
        "GET /health HTTP/1.1\r\nHost: h\r\nContent-Length: {}\r\n\r\n{hidden}",
        hidden.len()
    );
    b.add(
        "smuggling a request in a GET's body",
        bytes.into_bytes(),
        2,
        vec![],
    );
}

fn bodies(b: &mut Builder, limits: Limits) {
    for (name, body) in [
        ("JSON not closed", r#"{"name":"Ana""#.to_owned()),
        ("JSON with trailing text", format!("{WAITER}xyz")),
        (
            "JSON with a trailing second value",
            format!("{WAITER}{WAITER}"),
        ),
        ("JSON with a BOM", format!("\u{feff}{WAITER}")),
        ("JSON an array", "[1,2]".to_owned()),
        ("JSON null", "null".to_owned()),
        ("JSON a string", "\"x\"".to_owned()),
        ("JSON empty object", "{}".to_owned()),
        ("JSON a missing field", r#"{"name":"Ana"}"#.to_owned()),
        (
            "JSON a wrong type",
            r#"{"name":1,"shift":"night"}"#.to_owned(),
        ),
        (
            "JSON a bad shift",
            r#"{"name":"Ana","shift":"dawn"}"#.to_owned(),
        ),
        (
            "JSON an unknown field",
            r#"{"name":"Ana","shift":"night","x":1}"#.to_owned(),
        ),
        (
            "JSON duplicate keys",
            r#"{"name":"Ana","name":"Bo","shift":"night"}"#.to_owned(),
        ),
        (
            "JSON an empty name",
            r#"{"name":"","shift":"night"}"#.to_owned(),
        ),
        (
            "JSON a name of 100",
            format!(r#"{{"name":"{}","shift":"night"}}"#, "n".repeat(100)),
        ),
        (
            "JSON a name of 101",
            format!(r#"{{"name":"{}","shift":"night"}}"#, "n".repeat(101)),
        ),
        (
            "JSON a name of 100 two-byte chars",
            format!(r#"{{"name":"{}","shift":"night"}}"#, "é".repeat(100)),
        ),
        (
            "JSON a lone surrogate",
            r#"{"name":"\ud800","shift":"night"}"#.to_owned(),
        ),
        (
            "JSON a NUL escape",
            r#"{"name":"a\u0000b","shift":"night"}"#.to_owned(),
        ),
        (
            "JSON an operator value",
            r#"{"name":{"$gt":""},"shift":"night"}"#.to_owned(),
        ),
        (
            "JSON an operator key",
            r#"{"$where":"1","name":"Ana","shift":"night"}"#.to_owned(),
        ),
        (
            "JSON nested 1000 deep",
            format!("{}{}", "[".repeat(1000), "]".repeat(1000)),
        ),
        (
            "JSON a huge number",
            format!(
                r#"{{"name":"Ana","shift":"night","n":1{}}}"#,
                "0".repeat(400)
            ),
        ),
        (
            "JSON in Latin-1",
            "{\"name\":\"Ana\u{e9}\",\"shift\":\"night\"}".to_owned(),
        ),
    ] {
        b.post_json(&format!("POST {name}"), "/waiters", &body);
    }
    let mut invalid = br#"{"name":"Ana"#.to_vec();
    invalid.extend_from_slice(b"\xff\xfe\",\"shift\":\"night\"}");
    b.with_body(
        "POST JSON with invalid UTF-8",
        "POST /waiters HTTP/1.1",
        &format!(
            "Host: h\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            invalid.len()
        ),
        &invalid,
    );
    b.post_json(
        "PUT-shaped JSON on an unknown id",
        "/waiters/nobody",
        WAITER,
    );
    b.with_body(
        "PUT on an unknown id",
        "PUT /waiters/nobody HTTP/1.1",
        &format!(
            "Host: h\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            WAITER.len()
        ),
        WAITER.as_bytes(),
    );
    b.post_json(
        "strings reversed",
        "/bench/strings/reverse",
        r#"["a","b","c"]"#,
    );
    b.post_json("strings not strings", "/bench/strings/reverse", "[1,2]");
    b.post_json("strings an object", "/bench/strings", r#"{"a":1}"#);
    b.post_json("strings empty", "/bench/strings", "[]");
    // The body limit ±1 on the bench bytes route (its own limit is larger; the server's caps it).
    for (name, size) in [
        ("a body at the limit", limits.max_body_bytes),
        ("a body one past the limit", limits.max_body_bytes + 1),
    ] {
        b.with_body(
            &format!("POST {name}"),
            "POST /bench/bytes HTTP/1.1",
            &format!(
                "Host: h\r\nContent-Type: application/octet-stream\r\nContent-Length: {size}\r\n"
            ),
            &vec![b'b'; size],
        );
        let chunk = vec![b'c'; size];
        let mut body = format!("{size:x}\r\n").into_bytes();
        body.extend_from_slice(&chunk);
        body.extend_from_slice(b"\r\n0\r\n\r\n");
        b.with_body(
            &format!("POST chunked, {name}"),
            "POST /bench/bytes HTTP/1.1",
            "Host: h\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n",
            &body,
        );
    }
    // A path no route takes as it came (a trailing slash: salvo's router takes it for
    // `/bench/bytes`) with a body past the limit: the path's 404 before any body is read.
    let size = limits.max_body_bytes + 1;
    b.with_body(
        "POST a body past the limit to a trailing slash",
        "POST /bench/bytes/ HTTP/1.1",
        &format!("Host: h\r\nContent-Type: application/octet-stream\r\nContent-Length: {size}\r\n"),
        &vec![b'b'; size],
    );
    b.with_body(
        "POST an announced body far past the limit",
        "POST /bench/bytes HTTP/1.1",
        &format!(
            "Host: h\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n",
            limits.max_body_bytes * 100
        ),
        b"",
    );
}

fn pipelining(b: &mut Builder) {
    let get = "GET /health HTTP/1.1\r\nHost: h\r\n\r\n";
    let hello = "GET /bench/hello HTTP/1.1\r\nHost: h\r\n\r\n";
    b.add(
        "two GETs pipelined",
        format!("{get}{hello}").into_bytes(),
        2,
        vec![],
    );
    b.add(
        "three GETs pipelined",
        format!("{get}{hello}{get}").into_bytes(),
        3,
        vec![],
    );
    let post = format!(
        "POST /waiters HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{WAITER}",
        WAITER.len()
    );
    b.add(
        "a POST then a GET pipelined",
        format!("{post}{get}").into_bytes(),
        2,
        vec![],
    );
    b.add(
        "a GET then a POST pipelined",
        format!("{get}{post}").into_bytes(),
        2,
        vec![],
    );
    let close = "GET /health HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
    b.add(
        "Connection: close then a GET pipelined",
        format!("{close}{get}").into_bytes(),
        2,
        vec![],
    );
    b.add(
        "a 404 then a GET pipelined",
        format!("GET /nothing HTTP/1.1\r\nHost: h\r\n\r\n{get}").into_bytes(),
        2,
        vec![],
    );
    b.add(
        "a 405 then a GET pipelined",
        format!("PATCH /health HTTP/1.1\r\nHost: h\r\n\r\n{get}").into_bytes(),
        2,
        vec![],
    );
    b.add(
        "a bad JSON POST then a GET pipelined",
        format!("POST /waiters HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 3\r\n\r\n{{x]{get}").into_bytes(),
        2,
        vec![],
    );
    b.add(
        "a HEAD then a GET pipelined",
        format!("HEAD /health HTTP/1.1\r\nHost: h\r\n\r\n{get}").into_bytes(),
        2,
        vec![0],
    );
    b.add(
        "a GET then garbage pipelined",
        format!("{get}GARBAGE\r\n\r\n").into_bytes(),
        2,
        vec![],
    );
    b.add(
        "a GET then a request without Host pipelined",
        format!("{get}GET /health HTTP/1.1\r\n\r\n").into_bytes(),
        2,
        vec![],
    );
    let ten: String = (0..10).map(|_| get).collect();
    b.add("ten GETs pipelined", ten.into_bytes(), 10, vec![]);
    b.add(
        "HTTP/1.0 keep-alive pipelined",
        "GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n".into(),
        2,
        vec![],
    );
    b.add(
        "HTTP/1.0 without keep-alive pipelined",
        "GET /health HTTP/1.0\r\n\r\nGET /health HTTP/1.0\r\n\r\n".into(),
        2,
        vec![],
    );
}

fn versions(b: &mut Builder) {
    b.raw("HTTP/1.0", "GET /health HTTP/1.0\r\nHost: h\r\n\r\n");
    b.raw(
        "HTTP/1.0 keep-alive",
        "GET /health HTTP/1.0\r\nHost: h\r\nConnection: keep-alive\r\n\r\n",
    );
    b.raw(
        "HTTP/1.0 POST",
        format!(
            "POST /waiters HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{WAITER}",
            WAITER.len()
        ),
    );
    b.raw("HTTP/1.0 404", "GET /nothing HTTP/1.0\r\n\r\n");
    b.raw("HTTP/1.2", "GET /health HTTP/1.2\r\nHost: h\r\n\r\n");
    b.raw("HTTP/1.9", "GET /health HTTP/1.9\r\nHost: h\r\n\r\n");
    b.raw("HTTP/2.0 line", "GET /health HTTP/2.0\r\nHost: h\r\n\r\n");
    b.raw("HTTP/3.0 line", "GET /health HTTP/3.0\r\nHost: h\r\n\r\n");
    b.raw(
        "HTTP/0.9 version",
        "GET /health HTTP/0.9\r\nHost: h\r\n\r\n",
    );
    b.raw("HTTP/10.0", "GET /health HTTP/10.0\r\nHost: h\r\n\r\n");
    b.raw("HTTP/1.1.1", "GET /health HTTP/1.1.1\r\nHost: h\r\n\r\n");
    b.raw("HTTPS/1.1", "GET /health HTTPS/1.1\r\nHost: h\r\n\r\n");
}

fn not_http(b: &mut Builder) {
    b.raw(
        "an HTTP/2 preface",
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00".to_vec(),
    );
    b.raw(
        "a TLS ClientHello",
        b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03".to_vec(),
    );
    b.raw("binary garbage", (0u8..=255).rev().collect::<Vec<u8>>());
    b.raw("a line of garbage", "HELLO THERE\r\n\r\n");
    b.raw("spaces only", "     \r\n\r\n");
    b.raw("an SSH banner", "SSH-2.0-OpenSSH_9.6\r\n");
    b.raw("a NUL byte line", b"\0\0\0\0\r\n\r\n".to_vec());
    b.raw(
        "a response instead of a request",
        "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
    );
}
