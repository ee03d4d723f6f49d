//! One HTTP/1.1 client connection per task, written for the generator's hot path: a request goes
//! out as bytes encoded once (a request with no template holes is encoded once per run, see
//! [`encode`]) in one write on tokio's `TcpStream`, and the answer is read into a buffer the
//! connection keeps, its head parsed with `httparse` ([`head`]) and its body framed by its length,
//! its chunks ([`chunked`]) or the connection's end. Nothing is allocated per request unless the
//! caller keeps the body (to capture values from it), and nothing is copied but what the socket
//! hands over. Every byte written and read is counted, so bandwidth is what crossed the wire:
//! request and status lines, headers and bodies.
//!
//! The same connection runs over TLS ([`tls`]) for `h1-tls`: the stream is an enum of a plain
//! socket and a TLS one, so the plaintext path pays one match per read and write and nothing
//! else; under TLS the bytes are counted below rustls, on the socket, so TLS records count.
//! HTTP/2 (`h2c`, `h2-tls`) is in [`http2`], HTTP/3 (`h3`, over QUIC) in [`http3`], on the same
//! shared-connection machinery.
//!
//! Hyper's client did the same work with more machinery (a request and a response object per
//! exchange, a dispatcher between them, header maps): on `GET /bench/hello` that cost about a
//! quarter more generator CPU per request than wrk (`scripts/bench-generator.sh`), so every light
//! route became generator-bound sooner. The answers' semantics it handled are kept and tested
//! (`tests/suite/generator.rs`): content-length, chunked and close-delimited bodies, interim 1xx
//! answers, `connection: close` from either side, HTTP/1.0 answers, timeouts and resets.

mod chunked;
mod encode;
mod failure;
mod head;
pub(crate) mod http2;
pub(crate) mod http3;
mod target;
pub(crate) mod tls;

use std::io;

use anyhow::Result;
use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::protocol::Protocol;
use tls::{Handshake, TlsWire};

use chunked::Chunked;
pub(crate) use encode::encode;
pub(crate) use failure::{classify_io, Failure};
use head::Framing;
pub(crate) use target::{resolve_targets, Target};

/// Bytes a connection's read buffer grows by when it runs short; one read takes at most this.
const READ_CHUNK: usize = 64 * 1024;

/// How a generator thread opens connections: the protocol, and for TLS the thread's connector
/// (its own session cache).
#[derive(Clone)]
pub(crate) struct Dialer {
    /// The run's protocol.
    pub(crate) protocol: Protocol,
    pub(crate) tls: Option<TlsConnector>,
    /// `h3`: the thread's QUIC client (None for the TCP protocols, or when the run's TLS client
    /// cannot speak QUIC, which the run's start reports).
    pub(crate) quic: Option<http3::QuicDialer>,
}

impl std::fmt::Debug for Dialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dialer")
            .field("protocol", &self.protocol)
            .finish()
    }
}

impl Dialer {
    /// Plaintext HTTP/1.1.
    pub(crate) fn plain() -> Dialer {
        Dialer {
            protocol: Protocol::H1,
            tls: None,
            quic: None,
        }
    }

    /// A dialer for `protocol`; `tls` (the run's checked config, needed by TLS protocols) is
    /// cloned with a session cache of this dialer's own when `resume`.
    pub(crate) fn new(
        protocol: Protocol,
        tls: Option<&rustls::ClientConfig>,
        resume: bool,
    ) -> Dialer {
        let quic = tls
            .filter(|_| protocol.quic())
            .and_then(|c| http3::QuicDialer::new(c, resume).ok());
        Dialer {
            protocol,
            tls: tls
                .filter(|_| protocol.tls() && !protocol.quic())
                .map(|c| tls::thread_connector(c, resume)),
            quic,
        }
    }

    /// Ends what the dialer opened that outlives its tasks: its QUIC connections (see
    /// [`http3::QuicDialer::close`]); nothing for TCP, whose sockets close when dropped.
    pub(crate) async fn close(&self) {
        if let Some(quic) = &self.quic {
            quic.close().await;
        }
    }

    /// Opens a TCP connection, no delay.
    pub(crate) async fn tcp(&self, target: &Target) -> Result<TcpStream, Failure> {
        let stream = TcpStream::connect(target.addr)
            .await
            .map_err(|_| Failure::Connect)?;
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }

    /// Opens a TCP connection and, for a TLS protocol, makes the TLS handshake over it (its bytes
    /// counted on the socket): the stream and the handshake.
    async fn wire(&self, target: &Target) -> Result<(Stream, Option<Handshake>), Failure> {
        let tcp = self.tcp(target).await?;
        match &self.tls {
            // Nothing more on plaintext: a connection per request (`--no-keepalive`) is the
            // generator's hardest path, every allocation here is paid per request.
            None => Ok((Stream::Plain(tcp), None)),
            Some(connector) => {
                let tcp = tls::Counted::new(tcp, std::sync::Arc::default());
                let (wire, handshake) = tls::handshake(connector, self.protocol, target, tcp)
                    .await
                    .map_err(|e| tls::classify_handshake(&e))?;
                Ok((Stream::Tls(Box::new(wire)), Some(handshake)))
            }
        }
    }
}

/// A connection's byte stream: a plain socket, or TLS over a counted one.
pub(crate) enum Stream {
    /// Plaintext: reads and writes counted by the connection.
    Plain(TcpStream),
    /// TLS: bytes counted on the socket, below rustls.
    Tls(Box<TlsWire>),
}

/// One open connection and its read buffer.
pub(crate) struct Connection {
    stream: Stream,
    /// What the last read brought; emptied before each answer is read.
    buf: Vec<u8>,
}

/// An answer read whole.
struct Answered {
    status: u16,
    body: Option<Bytes>,
    /// Whether the connection may carry the next request.
    reusable: bool,
}

impl Connection {
    /// False if the server has closed the connection (or sent something unasked) while it was
    /// idle. Cheap: tokio knows the socket has nothing to read without asking the kernel.
    fn usable(&mut self) -> bool {
        let mut probe = [0u8; 1];
        match &mut self.stream {
            Stream::Plain(tcp) => {
                matches!(tcp.try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
            }
            // rustls may have records to take in while idle (TLS 1.3 session tickets) that carry
            // no data: poll it once, without waiting; only "nothing to read" is usable.
            Stream::Tls(tls) => {
                let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                let mut buf = tokio::io::ReadBuf::new(&mut probe);
                tokio::io::AsyncRead::poll_read(std::pin::Pin::new(&mut **tls), &mut cx, &mut buf)
                    .is_pending()
            }
        }
    }

    /// Adds the bytes a TLS connection's socket carried since the last call to `count` (a plain
    /// connection counts as it goes).
    pub(crate) fn take_count(&self, count: &mut WireCount) {
        if let Stream::Tls(tls) = &self.stream {
            let (sent, received) = tls.get_ref().0.counter().take();
            count.sent += sent;
            count.received += received;
        }
    }

    /// Reads what the socket has into the buffer: the count, 0 at the connection's end.
    async fn read_some(&mut self, count: &mut WireCount) -> Result<usize, Failure> {
        if self.buf.capacity() - self.buf.len() < READ_CHUNK / 4 {
            self.buf.reserve(READ_CHUNK);
        }
        match &mut self.stream {
            Stream::Plain(tcp) => match tcp.read_buf(&mut self.buf).await {
                Ok(n) => {
                    count.received += n as u64;
                    Ok(n)
                }
                Err(e) => Err(classify_io(&e)),
            },
            Stream::Tls(tls) => tls
                .read_buf(&mut self.buf)
                .await
                .map_err(|e| classify_io(&e)),
        }
    }

    /// Reads more of an answer; the connection's end is a reset (the answer is incomplete).
    async fn fill(&mut self, count: &mut WireCount) -> Result<usize, Failure> {
        match self.read_some(count).await? {
            0 => Err(Failure::Reset),
            n => Ok(n),
        }
    }

    /// Writes `request` and reads its whole answer.
    // Why longer than a screen: this is every HTTP/1.1 request's path (write, read the head, read
    // the body by its framing); each part split into an async helper would add an await per
    // request, and the framings read best side by side.
    async fn round_trip(
        &mut self,
        request: &[u8],
        head_request: bool,
        want_body: bool,
        count: &mut WireCount,
    ) -> Result<Answered, Failure> {
        match &mut self.stream {
            Stream::Plain(tcp) => {
                let mut written = 0;
                while written < request.len() {
                    match tcp.write(&request[written..]).await {
                        Ok(0) => return Err(Failure::Reset),
                        Ok(n) => {
                            written += n;
                            count.sent += n as u64;
                        }
                        Err(e) => return Err(classify_io(&e)),
                    }
                }
            }
            // rustls takes the whole request into its buffer; flush sends its records.
            Stream::Tls(tls) => {
                tls.write_all(request).await.map_err(|e| classify_io(&e))?;
                tls.flush().await.map_err(|e| classify_io(&e))?;
            }
        }

        self.buf.clear();
        let head = loop {
            match head::parse(&self.buf, head_request) {
                Err(_) => return Err(Failure::Other),
                // An interim answer (100 Continue, 103 Early Hints): the real one follows.
                Ok(Some(h)) if (100..200).contains(&h.status) && h.status != 101 => {
                    self.buf.drain(..h.len);
                }
                Ok(Some(h)) => break h,
                Ok(None) => {
                    self.fill(count).await?;
                }
            }
        };
        let mut body = want_body.then(Vec::new);
        let mut reusable = head.reusable && head.status != 101;
        let after_head = self.buf.len() - head.len;
        match head.framing {
            Framing::Empty => reusable &= after_head == 0,
            Framing::Length(n) => {
                let first = after_head.min(usize::try_from(n).unwrap_or(usize::MAX));
                if let Some(body) = body.as_mut() {
                    body.extend_from_slice(&self.buf[head.len..head.len + first]);
                }
                let mut have = after_head as u64;
                while have < n {
                    self.buf.clear();
                    let got = self.fill(count).await?;
                    let keep = got.min(usize::try_from(n - have).unwrap_or(usize::MAX));
                    if let Some(body) = body.as_mut() {
                        body.extend_from_slice(&self.buf[..keep]);
                    }
                    have += got as u64;
                }
                // More than the answer: the connection is out of step, do not reuse it.
                reusable &= have == n;
            }
            Framing::Chunked => {
                let mut decoder = Chunked::new();
                let mut start = head.len;
                loop {
                    let used = decoder
                        .feed(&self.buf[start..], body.as_mut())
                        .map_err(|_| Failure::Other)?;
                    if decoder.done() {
                        reusable &= start + used == self.buf.len();
                        break;
                    }
                    self.buf.clear();
                    start = 0;
                    self.fill(count).await?;
                }
            }
            Framing::UntilClose => {
                if let Some(body) = body.as_mut() {
                    body.extend_from_slice(&self.buf[head.len..]);
                }
                loop {
                    self.buf.clear();
                    if self.read_some(count).await? == 0 {
                        break;
                    }
                    if let Some(body) = body.as_mut() {
                        body.extend_from_slice(&self.buf);
                    }
                }
                reusable = false;
            }
        }
        Ok(Answered {
            status: head.status,
            body: body.map(Bytes::from),
            reusable,
        })
    }
}

/// What one request/answer exchange gave.
#[derive(Debug)]
pub(crate) struct Exchange {
    /// The status, or why there is none.
    pub(crate) result: Result<u16, Failure>,
    /// The body, when asked for and answered.
    pub(crate) body: Option<Bytes>,
    /// The TLS handshake this exchange made, when it opened a TLS connection.
    pub(crate) handshake: Option<Handshake>,
}

impl Exchange {
    /// An exchange that failed, with the handshake it made, if any.
    pub(crate) fn failed(failure: Failure, handshake: Option<Handshake>) -> Exchange {
        Exchange {
            result: Err(failure),
            body: None,
            handshake,
        }
    }
}

/// Opens a connection (HTTP/1.1, plain or TLS as `dialer` says) and the handshake it made.
pub(crate) async fn connect(
    dialer: &Dialer,
    target: &Target,
) -> Result<(Connection, Option<Handshake>), Failure> {
    let (stream, handshake) = dialer.wire(target).await?;
    Ok((
        Connection {
            stream,
            buf: Vec::with_capacity(READ_CHUNK / 4),
        },
        handshake,
    ))
}

/// Empties a slot whose connection is in an unknown state (a timeout cancelled its exchange),
/// first adding the bytes its TLS socket carried to `count`.
pub(crate) fn abandon(slot: &mut Option<Connection>, count: &mut WireCount) {
    if let Some(conn) = slot.take() {
        conn.take_count(count);
    }
}

/// The bytes counted on a connection slot so far; a counter pair survives reconnects via `carry`.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct WireCount {
    /// Bytes written.
    pub(crate) sent: u64,
    /// Bytes read.
    pub(crate) received: u64,
}

/// Sends `request` (the bytes [`encode`] made) on the connection in `slot` (opening one if there is
/// none or the server closed it) and reads the whole answer (`head_request`: an answer to HEAD,
/// which has no body); the body is kept when `want_body`. Bytes written and read are added to
/// `count`, even when the exchange fails half way. The slot is emptied whenever the connection
/// cannot be reused: after a failure, after an answer that ends it, or always when `keepalive` is
/// off. Cancelling the future (a timeout) leaves the slot holding a connection in an unknown state:
/// the caller must empty it.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn exchange(
    slot: &mut Option<Connection>,
    dialer: &Dialer,
    target: &Target,
    request: &[u8],
    head_request: bool,
    keepalive: bool,
    want_body: bool,
    count: &mut WireCount,
) -> Exchange {
    // A kept-alive connection the server has since closed is replaced silently, as any client would.
    if slot.as_mut().is_some_and(|conn| !conn.usable()) {
        abandon(slot, count);
    }
    let mut handshake = None;
    if slot.is_none() {
        // Boxed: connecting (TCP and a TLS handshake) is a future of kilobytes that, inlined, would
        // make every exchange's future as big, moved at every request on a kept connection.
        match Box::pin(connect(dialer, target)).await {
            Ok((c, made)) => {
                *slot = Some(c);
                handshake = made;
            }
            Err(f) => return Exchange::failed(f, None),
        }
    }
    let conn = slot.as_mut().expect("connected above");
    let answered = conn
        .round_trip(request, head_request, want_body, count)
        .await;
    conn.take_count(count);
    match answered {
        Ok(answered) => {
            if !keepalive || !answered.reusable {
                *slot = None;
            }
            Exchange {
                result: Ok(answered.status),
                body: answered.body,
                handshake,
            }
        }
        Err(f) => {
            *slot = None;
            Exchange::failed(f, handshake)
        }
    }
}

/// One answer read off `wire` the way a connection reads it: the head, then the body its framing
/// says (a length, chunks, or up to the end of `wire`). `Some((status, body bytes, bytes used))`
/// for a whole answer; None for one that is malformed or not whole yet. The generator's parser as a
/// function of bytes alone, for fuzzing.
pub fn read_answer(wire: &[u8], head_request: bool) -> Option<(u16, usize, usize)> {
    let h = head::parse(wire, head_request).ok()??;
    let rest = &wire[h.len..];
    match h.framing {
        head::Framing::Empty => Some((h.status, 0, h.len)),
        head::Framing::Length(n) => {
            let n = usize::try_from(n).ok().filter(|n| *n <= rest.len())?;
            Some((h.status, n, h.len + n))
        }
        head::Framing::UntilClose => Some((h.status, rest.len(), wire.len())),
        head::Framing::Chunked => {
            let mut decoder = chunked::Chunked::new();
            let mut body = Vec::new();
            let used = decoder.feed(rest, Some(&mut body)).ok()?;
            decoder
                .done()
                .then_some((h.status, body.len(), h.len + used))
        }
    }
}
