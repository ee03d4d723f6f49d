//! The server limits every runtime applies alike ([`ServerLimits`]), and the shared code that
//! enforces the ones a runtime does not enforce the same way itself: the request head's size and
//! count ([`ServerLimits::check_head`]), the body's size and read time ([`read_body`]), and the
//! connection limit ([`ConnectionGate`]).
//!
//! A comparison between runtimes that run under different rules is not a comparison: actix-web's
//! own defaults (keep-alive 5 s, request head 5 s, 96 headers, a 128 KiB head buffer) differ from
//! hyper's (no head timer unless one is set, 100 headers, a ~400 KiB buffer), and a server without a
//! head timer lets a client that trickles its headers hold a connection forever (slowloris). So the
//! limits live here, once, with defaults at or under actix-web's hard-coded ones (which it cannot
//! raise), and each adapter sets its runtime's own knobs from them (`runtimes/`, see
//! `docs/reliability.md` for what each runtime does itself).

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};

use crate::tls::TlsMode;
use crate::ApiError;

/// The limits a server runs under, the same on every runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerLimits {
    /// How long a client has to send a complete request head, from the moment the server waits
    /// for one (a new connection; on the hyper-based runtimes also between requests).
    pub header_read_timeout: Duration,
    /// How long an idle keep-alive connection is kept between requests.
    pub keep_alive_timeout: Duration,
    /// How long a client has to send a whole request body once its head is in.
    pub body_read_timeout: Duration,
    /// The most bytes a request head may take (request line and headers).
    pub max_header_bytes: usize,
    /// The most headers a request may carry.
    pub max_headers: usize,
    /// The largest body any route accepts; caps each route's own limit.
    pub max_body_bytes: usize,
    /// The most connections open at once, per service; past it a new one is closed at once.
    pub max_connections: usize,
    /// The protocols spoken on the plaintext listener (under TLS, ALPN chooses).
    #[serde(default)]
    pub protocol: ServeProtocol,
    /// Whether connections are TLS, and how the certificate came.
    #[serde(default)]
    pub tls: TlsMode,
    /// The HTTP/2 settings, where HTTP/2 is spoken.
    #[serde(default)]
    pub http2: Http2Settings,
}

/// The protocols a server speaks on a plaintext listener.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServeProtocol {
    /// HTTP/1.1 only (the default: every comparison before TLS and HTTP/2 was this).
    #[default]
    H1,
    /// HTTP/2 only, by prior knowledge (no upgrade from HTTP/1.1).
    H2c,
    /// HTTP/1.1 and HTTP/2 by prior knowledge on one port, told apart by the connection's first
    /// bytes; under TLS, the ALPN list ([`crate::tls::ALPN`]) chooses.
    Auto,
    /// HTTP/3 over QUIC (UDP, TLS 1.3, ALPN `h3`) on the listener's port number, beside the TLS
    /// listener on TCP (ALPN h2 then http/1.1, as `auto` under TLS), so a client without QUIC and
    /// the services' peer calls still reach it. Needs TLS; 0-RTT is off (a replayed request could
    /// repeat a write). Only the runtimes that offer it serve it; the others refuse it at start.
    H3,
}

impl ServeProtocol {
    /// Every protocol setting, as `--protocol` names them.
    pub const ALL: [ServeProtocol; 4] = [
        ServeProtocol::H1,
        ServeProtocol::H2c,
        ServeProtocol::Auto,
        ServeProtocol::H3,
    ];

    /// Its name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ServeProtocol::H1 => "h1",
            ServeProtocol::H2c => "h2c",
            ServeProtocol::Auto => "auto",
            ServeProtocol::H3 => "h3",
        }
    }
}

impl fmt::Display for ServeProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ServeProtocol {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        ServeProtocol::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| format!("{s:?} is not a protocol: h1, h2c, auto or h3"))
    }
}

/// The HTTP/2 settings every runtime that lets them be set is given (SETTINGS frame values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Http2Settings {
    /// Streams a client may have open at once on one connection.
    pub max_concurrent_streams: u32,
    /// The flow-control window each stream starts with, bytes.
    pub initial_stream_window: u32,
    /// The connection's flow-control window, bytes.
    pub initial_connection_window: u32,
    /// The largest header list (decoded) a request may send: a backstop at actix-web's head
    /// buffer, as on HTTP/1.1 (the kit's own head limits answer a JSON 431 below it).
    pub max_header_list_bytes: u32,
}

impl Default for Http2Settings {
    /// actix-web's windows (1 MiB a stream, 2 MiB a connection, which it lets be set) and hyper's
    /// stream count (200); actix-web cannot set the stream count or the header list (docs/
    /// reliability.md).
    fn default() -> Http2Settings {
        Http2Settings {
            max_concurrent_streams: 200,
            initial_stream_window: 1024 * 1024,
            initial_connection_window: 2 * 1024 * 1024,
            max_header_list_bytes: RUNTIME_MAX_HEADER_BYTES as u32,
        }
    }
}

/// actix-web's hard-coded ceiling on headers per request: the kit's limit stays at or under it.
pub const RUNTIME_MAX_HEADERS: usize = 96;
/// actix-web's hard-coded ceiling on a request head's buffer: the kit's limit stays at or under it.
pub const RUNTIME_MAX_HEADER_BYTES: usize = 128 * 1024;

impl Default for ServerLimits {
    fn default() -> ServerLimits {
        ServerLimits {
            header_read_timeout: Duration::from_secs(5),
            keep_alive_timeout: Duration::from_secs(5),
            body_read_timeout: Duration::from_secs(10),
            max_header_bytes: 32 * 1024,
            max_headers: 64,
            max_body_bytes: crate::http::BENCH_BODY_LIMIT,
            max_connections: 16_384,
            protocol: ServeProtocol::H1,
            tls: TlsMode::Off,
            http2: Http2Settings::default(),
        }
    }
}

/// A limit set that cannot be applied alike on every runtime.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("server limits: {0}")]
pub struct LimitsError(String);

impl ServerLimits {
    /// Checks that every runtime can apply these limits the same way.
    pub fn validate(&self) -> Result<(), LimitsError> {
        let zero = [
            ("header read timeout", self.header_read_timeout.is_zero()),
            ("keep-alive timeout", self.keep_alive_timeout.is_zero()),
            ("body read timeout", self.body_read_timeout.is_zero()),
            ("max headers", self.max_headers == 0),
            ("max header bytes", self.max_header_bytes == 0),
            ("max body bytes", self.max_body_bytes == 0),
            ("max connections", self.max_connections == 0),
            (
                "HTTP/2 max concurrent streams",
                self.http2.max_concurrent_streams == 0,
            ),
            (
                "HTTP/2 initial stream window",
                self.http2.initial_stream_window == 0,
            ),
        ];
        if let Some((name, _)) = zero.iter().find(|(_, z)| *z) {
            return Err(LimitsError(format!("{name} must be more than 0")));
        }
        if self.max_headers > RUNTIME_MAX_HEADERS {
            return Err(LimitsError(format!(
                "max headers {} is over actix-web's fixed {RUNTIME_MAX_HEADERS}",
                self.max_headers
            )));
        }
        if self.max_header_bytes > RUNTIME_MAX_HEADER_BYTES {
            return Err(LimitsError(format!(
                "max header bytes {} is over actix-web's fixed {RUNTIME_MAX_HEADER_BYTES}",
                self.max_header_bytes
            )));
        }
        // RFC 9113 §6.5.2: a window over 2^31 - 1 is a protocol error.
        let window_max = (1u32 << 31) - 1;
        if self.http2.initial_stream_window > window_max
            || self.http2.initial_connection_window > window_max
        {
            return Err(LimitsError(format!(
                "an HTTP/2 window is at most {window_max} bytes (RFC 9113 §6.5.2)"
            )));
        }
        if self.protocol == ServeProtocol::H3 && !self.tls.on() {
            return Err(LimitsError(
                "h3 runs over QUIC, which is always TLS 1.3: add --tls-self-signed or \
                 --tls-cert/--tls-key"
                    .into(),
            ));
        }
        if (self.http2.initial_connection_window as usize) < 65_535 {
            return Err(LimitsError(
                "the HTTP/2 connection window is at least 65535 bytes (RFC 9113 §6.9.2)".into(),
            ));
        }
        Ok(())
    }

    /// These limits on a server whose TLS is `tls`: under TLS the protocol is `auto`, as ALPN
    /// chooses between h2 and http/1.1 on every runtime (`h3` stays: it adds QUIC beside that).
    pub fn under_tls(mut self, tls: TlsMode) -> ServerLimits {
        self.tls = tls;
        if tls.on() && self.protocol != ServeProtocol::H3 {
            self.protocol = ServeProtocol::Auto;
        }
        self
    }

    /// The body limit of a route that accepts `route_limit` bytes: the smaller of the two.
    pub fn body_limit(&self, route_limit: usize) -> usize {
        route_limit.min(self.max_body_bytes)
    }

    /// Refuses a request head with more than [`Self::max_headers`] headers or more than
    /// [`Self::max_header_bytes`] bytes (431, `header_fields_too_large`).
    pub fn check_head(&self, headers: usize, bytes: usize) -> Result<(), ApiError> {
        if headers > self.max_headers {
            return Err(ApiError::header_fields_too_large(format!(
                "more than {} headers",
                self.max_headers
            )));
        }
        if bytes > self.max_header_bytes {
            return Err(ApiError::header_fields_too_large(format!(
                "request head larger than {} bytes",
                self.max_header_bytes
            )));
        }
        Ok(())
    }

    /// [`Self::check_head`] on a request head given as its parts, the headers counted and
    /// measured ([`head_bytes`]) in one pass: what every adapter that checks heads itself calls.
    pub fn check_request_head<'a>(
        &self,
        method: &str,
        target: &str,
        headers: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    ) -> Result<(), ApiError> {
        let mut count = 0;
        let bytes = head_bytes(method, target, headers.inspect(|_| count += 1));
        self.check_head(count, bytes)
    }
}

/// The size of a request head as sent: the request line and each `name: value` line with its CRLF.
pub fn head_bytes<'a>(
    method: &str,
    target: &str,
    headers: impl Iterator<Item = (&'a [u8], &'a [u8])>,
) -> usize {
    // "GET /path HTTP/1.1\r\n" and the final "\r\n".
    let line = method.len() + 1 + target.len() + 1 + 8 + 2 + 2;
    headers.fold(line, |n, (k, v)| n + k.len() + 2 + v.len() + 2)
}

impl fmt::Display for ServerLimits {
    /// One line for start-up logs and reports.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_protocols(f)?;
        write!(
            f,
            "; header read {}; keep-alive {}; body read {}; at most {} headers and {} \
             header bytes; body at most {} bytes (routes' own limits under it); at most {} \
             connections per service, more closed at once",
            secs(self.header_read_timeout),
            secs(self.keep_alive_timeout),
            secs(self.body_read_timeout),
            self.max_headers,
            self.max_header_bytes,
            self.max_body_bytes,
            self.max_connections
        )
    }
}

impl ServerLimits {
    /// The protocol part of the one line: what is spoken, TLS, and the HTTP/2 settings.
    fn write_protocols(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h2 = &self.http2;
        let http2 = format!(
            "HTTP/2: at most {} streams a connection, windows {} a stream and {} a connection, \
             header list at most {} bytes",
            h2.max_concurrent_streams,
            h2.initial_stream_window,
            h2.initial_connection_window,
            h2.max_header_list_bytes
        );
        if self.tls.on() {
            let cert = match self.tls {
                TlsMode::Files | TlsMode::FilesMutual => "certificate from files",
                _ => "self-signed ECDSA P-256 certificate",
            };
            let mutual = if matches!(self.tls, TlsMode::SelfSignedMutual | TlsMode::FilesMutual) {
                ", client certificates required"
            } else {
                ""
            };
            write!(
                f,
                "TLS 1.3/1.2 (rustls, ring), {cert}{mutual}, ALPN h2 then http/1.1; \
                 handshake within the header read limit; {http2}"
            )?;
            if self.protocol == ServeProtocol::H3 {
                // The same settings, as QUIC transport parameters (docs/reliability.md).
                write!(
                    f,
                    "; HTTP/3 over QUIC on the same port (UDP, TLS 1.3, ALPN h3, 0-RTT off): \
                     at most {} streams a connection, windows {} a stream and {} a connection, \
                     header section at most {} bytes, keep-alive as on TCP, handshake within \
                     the header read limit",
                    h2.max_concurrent_streams,
                    h2.initial_stream_window,
                    h2.initial_connection_window,
                    h2.max_header_list_bytes,
                )?;
            }
            return Ok(());
        }
        match self.protocol {
            ServeProtocol::H1 => f.write_str("HTTP/1.1"),
            ServeProtocol::H2c => write!(f, "h2c (HTTP/2 by prior knowledge); {http2}"),
            ServeProtocol::Auto => write!(f, "HTTP/1.1 and h2c on one port; {http2}"),
            // (Refused by `validate`: QUIC is always TLS.)
            ServeProtocol::H3 => f.write_str("h3 without TLS (refused)"),
        }
    }
}

/// The 400 for a body that does not match its `Content-Length` of `n` (how: `went past`, `ended at
/// N bytes of`).
fn length_mismatch(how: &str, n: u64) -> ApiError {
    ApiError::bad_request(format!(
        "the body {how} the {n} bytes its content-length announced"
    ))
}

fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s} s")
    }
}

/// Reads a request body of at most `limit` bytes within `timeout`, the same way on every runtime:
/// a `Content-Length` over the limit is refused at once without reading (413), a body that grows
/// past it is refused when it does (413, the same message), one that does not finish in time is a
/// 408 (`request_timeout`), and a broken one a 400 — a body that does not match its
/// `Content-Length` too, longer or shorter (malformed: RFC 9110 §8.6, RFC 9114 §4.1.2; HTTP/1.1's
/// and HTTP/2's stacks hold the length themselves, the `h3` crate does not). The unread rest is
/// left in `body`.
pub async fn read_body<S, B, E>(
    body: S,
    content_length: Option<u64>,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, ApiError>
where
    S: Stream<Item = Result<B, E>>,
    B: Buf,
    E: fmt::Display,
{
    futures::pin_mut!(body);
    read_into(body, content_length, limit, timeout).await
}

/// [`read_body`], and when the body is refused for its size, the rest of it read and dropped in
/// the background (for at most `timeout`), so the client, still sending, reads the 413 instead of
/// a broken connection. actix-web does this itself; the hyper-based runtimes would close the
/// connection under the client's feet.
pub async fn read_body_draining<S, B, E>(
    body: S,
    content_length: Option<u64>,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, ApiError>
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: Buf,
    E: fmt::Display,
{
    let mut body = Box::pin(body);
    let read = read_into(body.as_mut(), content_length, limit, timeout).await;
    if matches!(&read, Err(e) if e.code == crate::ErrorCode::PayloadTooLarge) {
        tokio::spawn(async move {
            let drain = async { while body.next().await.is_some() {} };
            let _ = tokio::time::timeout(timeout, drain).await;
        });
    }
    read
}

/// How long a refused body may pause before [`read_body_draining_here`] stops reading the rest.
pub const DRAIN_PAUSE: Duration = Duration::from_millis(200);

/// [`read_body`], and when the body is refused for its size, the rest of it read and dropped
/// before the refusal is answered, for a body that cannot move to another task (ntex's payload is
/// not `Send`; [`read_body_draining`] drains in the background instead). The client, still
/// sending, then reads the 413 rather than a reset, and the connection is left at the next request.
/// It stops when the body ends, when the client pauses for [`DRAIN_PAUSE`] (one that sent only
/// the head is not kept waiting), or at `timeout`.
pub async fn read_body_draining_here<S, B, E>(
    body: S,
    content_length: Option<u64>,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, ApiError>
where
    S: Stream<Item = Result<B, E>>,
    B: Buf,
    E: fmt::Display,
{
    futures::pin_mut!(body);
    let read = read_into(body.as_mut(), content_length, limit, timeout).await;
    if matches!(&read, Err(e) if e.code == crate::ErrorCode::PayloadTooLarge) {
        let deadline = tokio::time::Instant::now() + timeout;
        let pause =
            || DRAIN_PAUSE.min(deadline.saturating_duration_since(tokio::time::Instant::now()));
        while let Ok(Some(Ok(_))) = tokio::time::timeout(pause(), body.next()).await {}
    }
    read
}

async fn read_into<S, B, E>(
    mut body: std::pin::Pin<&mut S>,
    content_length: Option<u64>,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, ApiError>
where
    S: Stream<Item = Result<B, E>> + ?Sized,
    B: Buf,
    E: fmt::Display,
{
    if content_length.is_some_and(|n| n > limit as u64) {
        return Err(ApiError::too_large(limit));
    }
    let collect = async move {
        let mut out = BytesMut::with_capacity(content_length.unwrap_or(0) as usize);
        while let Some(chunk) = body.next().await {
            let mut chunk =
                chunk.map_err(|e| ApiError::bad_request(format!("reading the body: {e}")))?;
            if out.len() + chunk.remaining() > limit {
                return Err(ApiError::too_large(limit));
            }
            if let Some(n) = content_length.filter(|n| (out.len() + chunk.remaining()) as u64 > *n)
            {
                return Err(length_mismatch("went past", n));
            }
            while chunk.has_remaining() {
                let part = chunk.chunk();
                let n = part.len();
                out.extend_from_slice(part);
                chunk.advance(n);
            }
        }
        match content_length {
            Some(n) if (out.len() as u64) < n => Err(length_mismatch(
                &format!("ended at {} bytes of", out.len()),
                n,
            )),
            _ => Ok(out.freeze()),
        }
    };
    match tokio::time::timeout(timeout, collect).await {
        Ok(read) => read,
        Err(_) => Err(ApiError::request_timeout(format!(
            "the body did not arrive within {}",
            secs(timeout)
        ))),
    }
}

/// Counts a service's open connections against [`ServerLimits::max_connections`]; shared by its
/// workers. Cloning shares the count.
#[derive(Debug, Clone)]
pub struct ConnectionGate {
    max: usize,
    open: Arc<AtomicUsize>,
}

/// One admitted connection; leaving the gate when dropped.
#[derive(Debug)]
pub struct ConnectionPermit(Arc<AtomicUsize>);

impl ConnectionGate {
    /// A gate admitting at most `max` connections at once.
    pub fn new(max: usize) -> ConnectionGate {
        ConnectionGate {
            max,
            open: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Admits one more connection, or `None` when `max` are open (the caller closes it at once).
    pub fn try_enter(&self) -> Option<ConnectionPermit> {
        let mut open = self.open.load(Ordering::Relaxed);
        loop {
            if open >= self.max {
                return None;
            }
            match self.open.compare_exchange_weak(
                open,
                open + 1,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(ConnectionPermit(self.open.clone())),
                Err(now) => open = now,
            }
        }
    }

    /// How many connections are open now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }
}

impl Drop for ConnectionPermit {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn defaults_stay_within_what_every_runtime_can_apply() {
        let d = ServerLimits::default();
        d.validate().unwrap();
        assert!(d.max_headers <= RUNTIME_MAX_HEADERS);
        assert!(d.max_header_bytes <= RUNTIME_MAX_HEADER_BYTES);
        assert_eq!(d.body_limit(1 << 20), 1 << 20);
        assert_eq!(d.body_limit(usize::MAX), crate::http::BENCH_BODY_LIMIT);
        let line = d.to_string();
        assert!(
            line.contains("header read 5 s") && line.contains("64 headers"),
            "{line}"
        );
        let over = ServerLimits {
            max_headers: 97,
            ..d
        };
        assert!(over.validate().is_err());
        let zero = ServerLimits {
            max_connections: 0,
            ..d
        };
        assert!(zero.validate().is_err());
    }

    #[test]
    fn heads_over_the_count_or_the_size_are_431() {
        let l = ServerLimits {
            max_headers: 2,
            max_header_bytes: 100,
            ..ServerLimits::default()
        };
        assert!(l.check_head(2, 100).is_ok());
        assert_eq!(
            l.check_head(3, 10).unwrap_err().code,
            ErrorCode::HeaderFieldsTooLarge
        );
        assert_eq!(l.check_head(1, 101).unwrap_err().to_reply().status, 431);
        let h: [(&[u8], &[u8]); 1] = [(b"host", b"a")];
        // "GET / HTTP/1.1\r\n" (16) + "host: a\r\n" (9) + "\r\n" (2)
        assert_eq!(head_bytes("GET", "/", h.into_iter()), 27);
        // The same checks from a head's parts: counted and measured in one pass.
        assert!(l.check_request_head("GET", "/", h.into_iter()).is_ok());
        let three: [(&[u8], &[u8]); 3] = [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")];
        assert_eq!(
            l.check_request_head("GET", "/", three.into_iter())
                .unwrap_err()
                .code,
            ErrorCode::HeaderFieldsTooLarge
        );
        let long = [(&b"x-long"[..], &[b'v'; 80][..])];
        assert!(l.check_request_head("GET", "/", long.into_iter()).is_err());
    }

    fn chunks(parts: &[&'static str]) -> impl Stream<Item = Result<Bytes, String>> {
        futures::stream::iter(
            parts
                .iter()
                .map(|p| Ok(Bytes::from_static(p.as_bytes())))
                .collect::<Vec<_>>(),
        )
    }

    #[tokio::test]
    async fn a_body_refused_for_its_size_is_read_to_its_end_before_the_refusal() {
        let t = Duration::from_secs(5);
        let read = std::sync::Arc::new(AtomicUsize::new(0));
        let counted = |parts| {
            let read = read.clone();
            chunks(parts).inspect(move |_| {
                read.fetch_add(1, Ordering::Relaxed);
            })
        };
        let refused = read_body_draining_here(counted(&["abcdef", "gh", "ij"]), None, 4, t).await;
        assert_eq!(refused.unwrap_err().code, crate::ErrorCode::PayloadTooLarge);
        assert_eq!(
            read.load(Ordering::Relaxed),
            3,
            "every chunk read, the refused one and the rest"
        );
        read.store(0, Ordering::Relaxed);
        let ok = read_body_draining_here(counted(&["ab", "cd"]), Some(4), 4, t).await;
        assert_eq!(&ok.unwrap()[..], b"abcd");
        assert_eq!(read.load(Ordering::Relaxed), 2);
    }

    #[tokio::test]
    async fn bodies_are_refused_by_length_by_size_and_by_time_alike() {
        let t = Duration::from_secs(5);
        let ok = read_body(chunks(&["ab", "cd"]), Some(4), 4, t)
            .await
            .unwrap();
        assert_eq!(&ok[..], b"abcd");
        // Announced over the limit: refused without reading a byte (the stream would fail).
        let never = futures::stream::iter(vec![Err::<Bytes, _>("read")]);
        let e = read_body(never, Some(5), 4, t).await.unwrap_err();
        assert_eq!(e, ApiError::too_large(4));
        // Chunked, growing past it: the same error.
        let e = read_body(chunks(&["abc", "de"]), None, 4, t)
            .await
            .unwrap_err();
        assert_eq!(e, ApiError::too_large(4));
        // Never finishing: 408 once the timeout passes.
        let stalled = futures::stream::pending::<Result<Bytes, String>>();
        let e = read_body(stalled, None, 4, Duration::from_millis(20))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::RequestTimeout);
        assert_eq!(e.to_reply().status, 408);
    }

    #[tokio::test]
    async fn a_body_that_does_not_match_its_content_length_is_a_400() {
        let t = Duration::from_secs(5);
        for (parts, announced, how) in [
            (&["hello"][..], 10, "ended at 5 bytes of the 10"),
            (&["abc", "def"][..], 4, "went past the 4"),
        ] {
            let e = read_body(chunks(parts), Some(announced), 64, t)
                .await
                .unwrap_err();
            assert_eq!(e.code, ErrorCode::BadRequest, "{e:?}");
            assert!(e.message.contains(how), "{}", e.message);
        }
    }

    #[test]
    fn the_gate_admits_up_to_its_limit_and_frees_a_place_on_drop() {
        let gate = ConnectionGate::new(2);
        let a = gate.try_enter().unwrap();
        let _b = gate.clone().try_enter().unwrap();
        assert!(gate.try_enter().is_none());
        assert_eq!(gate.open(), 2);
        drop(a);
        assert!(gate.try_enter().is_some());
    }
}
