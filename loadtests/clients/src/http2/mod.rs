//! HTTP/2 for `h2c` (plaintext, by prior knowledge) and `h2-tls` (ALPN `h2`), by a client of the
//! generator's own (`conn`, `frame`, `hpack`) that does what the generator needs and no
//! more: open streams, send a request (its header block encoded once per request template), read
//! each answer whole, keep to the server's limits and windows, and say how a stream failed.
//!
//! Why by hand: the `h2` crate's client cost the generator 18.90 µs of CPU per request on `h2c`
//! where h2load needs 12.12 (`scripts/bench-generator.sh`, both paced at 20,000 requests/s), and
//! two thirds of its user time was in `h2` (a stream store behind a mutex, HPACK encoding of every
//! request, a `HeaderMap` built per answer, the connection task's polls) and most of the rest in
//! tokio's scheduling of the wake-ups between that task and the streams. Counted with callgrind
//! at 200 requests/s on 16 connections of 8 streams (instructions per request, the difference of
//! a 6 s and a 2 s run, the hyper server, `hello`): `h2c` 33,237 with `h2`, 13,040 with this
//! client (h2load 12,146); `h2-tls` 39,949 and 19,328 (h2load, on OpenSSL, 33,640). What is left
//! is mostly tokio's timer, I/O driver and scheduler, the same for HTTP/1.1. The command, against
//! `brigade serve --runtime hyper --service waiter --workers 1 --store memory --protocol h2c`:
//! `valgrind --tool=callgrind target/release/examples/load --target URL --scenario hello
//! --protocol h2c --rate 200 --connections 16 --streams 8 --threads 1 --warmup 0s --duration 6s`,
//! less the same run for 2 s, over the requests between them.
//!
//! - A connection is a driver task (spawned on the generator thread's current-thread runtime)
//!   that owns the socket and handles (`conn::Connection`) the stream loops hold; the driver
//!   ends when the last handle is dropped and no stream is open, or when the server closes. Its
//!   socket is wrapped in `Counted`, so bytes are what crossed the TCP socket (frames, HPACK,
//!   TLS records); each request takes what was counted since the last one took, so the totals
//!   are exact although frames of concurrent streams interleave.
//! - Streams: the handles a user's (or a paced connection's) stream loops hold ([`Http2Stream`])
//!   share one [`SharedConnection`] per service: `streams` loops, each a closed-loop user or a
//!   paced sender of its own, put up to `streams` requests in flight on one connection (fewer if
//!   the server's SETTINGS_MAX_CONCURRENT_STREAMS says so; the first stream waits for the
//!   server's SETTINGS). When it breaks, the first loop to notice opens the next one (the others
//!   wait for it and use it); after a GOAWAY new streams go on a new connection.
//! - Flow control: the client advertises a 1 MiB stream window and a 4 MiB connection window (the
//!   protocol's 64 KiB default would throttle big answers to a window per round trip) and gives
//!   received bytes back once half a window came; request bodies go out as the server's windows
//!   and frame size allow.
//! - Requests: `:authority` is the scenario's `host` header if it has one, else the URL's; the
//!   headers HTTP/2 forbids (`connection`, `keep-alive`, `proxy-connection`, `transfer-encoding`,
//!   `upgrade`, `te` other than `trailers`) are dropped. A request without template holes is built
//!   and encoded once per run. Its header block uses HPACK's stateless forms (static-table
//!   references and literals without indexing), so it is good on any connection; the price is
//!   bytes: about 19 more per request on `hello` than an encoder that indexes (h2, h2load).
//!   Without keep-alive every request gets its own connection.
//! - Errors: a RST_STREAM (REFUSED_STREAM included) is a reset and keeps the connection; a GOAWAY
//!   is a reset for the streams it left out; an I/O error as for HTTP/1.1; a protocol error
//!   (a malformed frame or header block) other, and the connection is closed.
//! - HTTP/3 ([`crate::http3`]) shares the connection sharing above through `Sender`.

mod conn;
mod frame;
mod hpack;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};

use crate::dialer::Dialer;
use crate::exchange::{Exchange, WireCount};
use crate::failure::Failure;
use crate::http3;
use crate::request::{Implied, Request};
use crate::target::Target;
use crate::tls::{self, Counted, Handshake, WireCounter};
use conn::StreamError;

/// The window each stream advertises: 1 MiB.
pub(crate) const STREAM_WINDOW: u32 = 1 << 20;
/// The window the whole connection advertises: 4 MiB.
pub(crate) const CONNECTION_WINDOW: u32 = 4 << 20;

/// An open HTTP/2 connection (or HTTP/3, [`crate::http3`]): a handle to send on and the counter
/// of its socket.
#[derive(Clone)]
struct Http2Conn {
    /// Which connection of its [`SharedConnection`] this is.
    generation: u64,
    send: Sender,
    counter: Arc<WireCounter>,
}

/// What a connection sends requests with.
#[derive(Clone)]
enum Sender {
    /// HTTP/2: a handle on the connection's driver ([`conn`]).
    Http2(conn::Connection),
    /// HTTP/3: the `h3` crate's handle and the QUIC connection under it.
    Http3(http3::SendRequest, quinn::Connection),
}

impl Http2Conn {
    /// What its socket carried since the last take: `(sent, received)`.
    fn take(&self) -> (u64, u64) {
        match &self.send {
            Sender::Http2(_) => self.counter.take(),
            Sender::Http3(_, quic) => {
                let stats = quic.stats();
                self.counter
                    .take_totals(stats.udp_tx.bytes, stats.udp_rx.bytes)
            }
        }
    }
}

/// Why an exchange on a multiplexed connection failed.
enum MuxError {
    Http2(StreamError),
    Http3(h3::error::StreamError),
}

impl MuxError {
    fn failure(&self) -> Failure {
        match self {
            MuxError::Http2(e) => e.failure,
            MuxError::Http3(e) => http3::classify(e),
        }
    }

    /// Whether only the stream failed, the connection still usable.
    fn keeps_connection(&self) -> bool {
        match self {
            MuxError::Http2(e) => e.keeps_connection,
            MuxError::Http3(e) => http3::keeps_connection(e),
        }
    }
}

/// How an attempt on a connection ended when it gave no answer.
enum Attempt {
    /// Before the request was sent: the connection was closed (or is going away).
    NotSent(Failure),
    /// After.
    Failed(MuxError),
}

/// The HTTP/2 connection the streams of one user (or paced connection) share for one service.
#[derive(Default)]
pub struct SharedConnection {
    current: tokio::sync::Mutex<Option<Http2Conn>>,
    generations: AtomicU64,
}

/// One stream loop's handle on its [`SharedConnection`].
pub struct Http2Stream {
    shared: Arc<SharedConnection>,
    cached: Option<Http2Conn>,
}

impl Http2Stream {
    /// A handle on `shared` (nothing is connected until the first request).
    pub fn new(shared: Arc<SharedConnection>) -> Http2Stream {
        Http2Stream {
            shared,
            cached: None,
        }
    }

    /// Makes sure this handle has a connection: the shared one, or a new one it opens (and
    /// shares when `keepalive`). Returns the handshake, if it made one.
    async fn acquire(
        &mut self,
        dialer: &Dialer,
        target: &Target,
        keepalive: bool,
    ) -> Result<Option<Handshake>, Failure> {
        if self.cached.is_some() {
            return Ok(None);
        }
        // Opening is boxed: its future (TCP, TLS and HTTP/2 handshakes) is kilobytes, and inlined it
        // would make every exchange's future as big, copied at every request though rarely used.
        if !keepalive {
            let (conn, handshake) = Box::pin(open(dialer, target, 0)).await?;
            self.cached = Some(conn);
            return Ok(handshake);
        }
        let mut current = self.shared.current.lock().await;
        if let Some(conn) = current.as_ref() {
            self.cached = Some(conn.clone());
            return Ok(None);
        }
        let generation = self.shared.generations.fetch_add(1, Ordering::Relaxed);
        let (conn, handshake) = Box::pin(open(dialer, target, generation)).await?;
        *current = Some(conn.clone());
        self.cached = Some(conn);
        Ok(handshake)
    }

    /// Drops this handle's connection, and the shared one if it is the same (it is broken).
    async fn retire(&mut self) {
        if let Some(conn) = self.cached.take() {
            let mut current = self.shared.current.lock().await;
            if current
                .as_ref()
                .is_some_and(|c| c.generation == conn.generation)
            {
                *current = None;
            }
        }
    }

    /// Adds the bytes counted on this handle's connection since the last take to `count`.
    fn take_count(&self, count: &mut WireCount) {
        if let Some(conn) = &self.cached {
            let (sent, received) = conn.take();
            count.sent += sent;
            count.received += received;
        }
    }

    /// Empties the handle after a cancelled exchange (a timeout), its bytes added to `count`;
    /// the connection stays shared (h2 resets the cancelled stream).
    pub fn abandon(&mut self, count: &mut WireCount) {
        self.take_count(count);
        self.cached = None;
    }
}

/// Opens a connection: TCP, TLS when the dialer has it, the HTTP/2 preface and settings, and the
/// spawned task that drives it.
async fn open(
    dialer: &Dialer,
    target: &Target,
    generation: u64,
) -> Result<(Http2Conn, Option<Handshake>), Failure> {
    let counter = Arc::new(WireCounter::default());
    if dialer.protocol.quic() {
        let quic = dialer.quic.as_ref().ok_or(Failure::Connect)?;
        let (send, conn, handshake) = http3::open(quic, target).await?;
        let conn = Http2Conn {
            generation,
            send: Sender::Http3(send, conn),
            counter,
        };
        return Ok((conn, Some(handshake)));
    }
    let tcp = Counted::new(dialer.tcp(target).await?, counter.clone());
    let (send, handshake) = match &dialer.tls {
        None => (conn::start(tcp), None),
        Some(connector) => {
            let (wire, handshake) = tls::handshake(connector, dialer.protocol, target, tcp)
                .await
                .map_err(|e| tls::classify_handshake(&e))?;
            (conn::start(wire), Some(handshake))
        }
    };
    Ok((
        Http2Conn {
            generation,
            send: Sender::Http2(send),
            counter,
        },
        handshake,
    ))
}

/// Sends `request` with `body` on `stream`'s connection (opening one if it has none, replacing
/// a broken one once) and reads the whole answer, releasing flow-control capacity as it reads;
/// the body is kept when `want_body`. Bytes are added to `count`. Cancelling the future (a
/// timeout) resets the stream; the caller must then [`Http2Stream::abandon`] the handle.
#[allow(clippy::too_many_arguments)]
pub async fn exchange(
    stream: &mut Http2Stream,
    dialer: &Dialer,
    target: &Target,
    request: &Http2Request,
    body: &Bytes,
    keepalive: bool,
    want_body: bool,
    count: &mut WireCount,
) -> Exchange {
    let mut handshake = None;
    let mut retried = false;
    let answered = loop {
        match stream.acquire(dialer, target, keepalive).await {
            Ok(made) => handshake = handshake.or(made),
            Err(f) => return Exchange::failed(f, handshake),
        }
        let conn = stream.cached.as_mut().expect("acquired above");
        let answered = match &mut conn.send {
            // An error before the stream was opened: the connection was closed or is going away.
            Sender::Http2(send) => match send.round_trip(&request.block, body, want_body).await {
                Ok(answer) => Ok(answer),
                Err((e, true)) => Err(Attempt::Failed(MuxError::Http2(e))),
                Err((e, false)) => Err(Attempt::NotSent(e.failure)),
            },
            // Nothing sent yet: a connection already closed is not ready.
            Sender::Http3(send, quic) => match quic.close_reason() {
                None => http3::round_trip(send, &request.request, body, want_body)
                    .await
                    .map_err(|e| Attempt::Failed(MuxError::Http3(e))),
                Some(_) => Err(Attempt::NotSent(Failure::Reset)),
            },
        };
        match answered {
            Ok(answer) => break Ok(answer),
            Err(Attempt::Failed(e)) => break Err(e),
            // A kept connection the server has since closed is replaced once, silently.
            Err(Attempt::NotSent(failure)) => {
                stream.take_count(count);
                stream.retire().await;
                if retried || !keepalive {
                    return Exchange::failed(failure, handshake);
                }
                retried = true;
            }
        }
    };
    stream.take_count(count);
    if !keepalive {
        stream.cached = None;
    }
    match answered {
        Ok((status, body)) => Exchange {
            result: Ok(status),
            body,
            handshake,
        },
        Err(e) => {
            let failure = e.failure();
            // A reset stream leaves the connection usable; anything else ends it.
            if !e.keeps_connection() {
                stream.retire().await;
            }
            Exchange::failed(failure, handshake)
        }
    }
}

/// Whether HTTP/2 forbids sending header `name` with `value` (RFC 9113 §8.2.2).
fn connection_specific(name: &HeaderName, value: &HeaderValue) -> bool {
    name == header::CONNECTION
        || name == header::TRANSFER_ENCODING
        || name == header::UPGRADE
        || name == "keep-alive"
        || name == "proxy-connection"
        || (name == header::TE && value != "trailers")
}

/// Builds the HTTP/2 request for `req` to `target` (`https` scheme when `tls`): the URL's
/// prefix and the path, `:authority` from a `host` header or the URL, the other headers but the
/// connection-specific ones, and the body's type and length as HTTP/1.1 sends them.
pub fn build(target: &Target, req: &Request, tls: bool) -> Result<Http2Request> {
    let authority = req
        .headers
        .iter()
        .find(|(name, _)| name == header::HOST)
        .map_or(&target.host, |(_, value)| value);
    let uri = format!(
        "{}://{}{}{}",
        if tls { "https" } else { "http" },
        authority.to_str().context("the host header is not text")?,
        target.prefix,
        req.path
    );
    let mut builder = http::Request::builder().method(req.method.clone()).uri(uri);
    let mut has_content_type = false;
    for (name, value) in &req.headers {
        if name == header::HOST || connection_specific(name, value) {
            continue;
        }
        has_content_type |= name == header::CONTENT_TYPE;
        builder = builder.header(name, value);
    }
    let implied = Implied::of(req, has_content_type);
    if let Some(content_type) = implied.content_type {
        builder = builder.header(header::CONTENT_TYPE, content_type);
    }
    if let Some(length) = implied.length {
        builder = builder.header(header::CONTENT_LENGTH, length);
    }
    let request = builder
        .body(())
        .context("the request does not make an HTTP/2 request")?;
    let block = header_block(&request);
    Ok(Http2Request { request, block })
}

/// A request ready to send: as `http` has it (for HTTP/3) and as an HPACK header block (HTTP/2).
#[derive(Debug, Clone)]
pub struct Http2Request {
    request: http::Request<()>,
    block: Vec<u8>,
}

/// `request`'s pseudo-headers and headers as an HPACK block in stateless forms, good on any
/// connection ([`frame::put_field`]).
fn header_block(request: &http::Request<()>) -> Vec<u8> {
    let uri = request.uri();
    let mut block = Vec::with_capacity(64);
    let mut field = |name: &[u8], value: &[u8]| frame::put_field(&mut block, name, value);
    field(b":method", request.method().as_str().as_bytes());
    field(b":scheme", uri.scheme_str().unwrap_or("http").as_bytes());
    field(
        b":authority",
        uri.authority().map_or("", |a| a.as_str()).as_bytes(),
    );
    field(
        b":path",
        uri.path_and_query().map_or("/", |p| p.as_str()).as_bytes(),
    );
    for (name, value) in request.headers() {
        field(name.as_str().as_bytes(), value.as_bytes());
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    #[test]
    fn http3_advertises_the_windows_http2_does() {
        assert_eq!(super::http3::STREAM_WINDOW, STREAM_WINDOW);
        assert_eq!(super::http3::CONNECTION_WINDOW, CONNECTION_WINDOW);
    }

    #[test]
    fn an_http2_request_takes_its_authority_from_host_and_drops_connection_headers() {
        let target = Target::parse("http://127.0.0.1:9/api").unwrap();
        let req = Request {
            method: Method::POST,
            path: "/p?q=1".into(),
            headers: vec![
                (header::HOST, HeaderValue::from_static("example.test")),
                (header::CONNECTION, HeaderValue::from_static("keep-alive")),
                (header::TE, HeaderValue::from_static("gzip")),
                (
                    HeaderName::from_static("x-a"),
                    HeaderValue::from_static("1"),
                ),
            ],
            body: Bytes::from_static(b"[1]"),
            has_body: true,
        };
        let built = build(&target, &req, true).unwrap();
        assert_eq!(built.request.uri(), "https://example.test/api/p?q=1");
        let names: Vec<&str> = built.request.headers().keys().map(|k| k.as_str()).collect();
        assert_eq!(names, ["x-a", "content-type", "content-length"]);
        assert_eq!(built.request.headers()[header::CONTENT_LENGTH], "3");
        let fields = loona_hpack::Decoder::new().decode(&built.block).unwrap();
        let fields: Vec<(&[u8], &[u8])> = fields.iter().map(|(n, v)| (&n[..], &v[..])).collect();
        assert_eq!(
            fields,
            [
                (&b":method"[..], &b"POST"[..]),
                (b":scheme", b"https"),
                (b":authority", b"example.test"),
                (b":path", b"/api/p?q=1"),
                (b"x-a", b"1"),
                (b"content-type", b"application/json"),
                (b"content-length", b"3"),
            ]
        );
    }
}
