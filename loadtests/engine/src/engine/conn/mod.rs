//! One HTTP/1.1 client connection per task, written for the generator's hot path: a request goes
//! out as bytes encoded once (a request with no template holes is encoded once per run, see
//! [`encode`]) in one write on tokio's `TcpStream`, and the answer is read into a buffer the
//! connection keeps, its head parsed with `httparse` ([`head`]) and its body framed by its length,
//! its chunks ([`chunked`]) or the connection's end. Nothing is allocated per request unless the
//! caller keeps the body (to capture values from it), and nothing is copied but what the socket
//! hands over. Every byte written and read is counted, so bandwidth is what crossed the wire:
//! request and status lines, headers and bodies.
//!
//! Hyper's client did the same work with more machinery (a request and a response object per
//! exchange, a dispatcher between them, header maps): on `GET /bench/hello` that cost about a
//! quarter more generator CPU per request than wrk (`scripts/bench-generator.sh`), so every light
//! route became generator-bound sooner. The answers' semantics it handled are kept and tested
//! (`tests/generator.rs`): content-length, chunked and close-delimited bodies, interim 1xx
//! answers, `connection: close` from either side, HTTP/1.0 answers, timeouts and resets.

mod chunked;
mod encode;
mod head;

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use http::header::HeaderValue;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use chunked::Chunked;
pub(crate) use encode::encode;
use head::Framing;

/// Bytes a connection's read buffer grows by when it runs short; one read takes at most this.
const READ_CHUNK: usize = 64 * 1024;

/// Where one service of a scenario is reached.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The URL as given.
    pub(crate) url: String,
    /// The resolved address (resolved once, before the run).
    pub(crate) addr: SocketAddr,
    /// The `host` header.
    pub(crate) host: HeaderValue,
    /// A path prefix from the URL (`http://h:1/api` → `/api`), empty for none.
    pub(crate) prefix: String,
}

impl Target {
    /// Parses and resolves `http://host:port[/prefix]`.
    pub(crate) fn parse(url: &str) -> Result<Target> {
        let uri: http::Uri = url
            .parse()
            .with_context(|| format!("{url:?} is not a URL"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some(other) => bail!("{url}: only http:// targets are supported, not {other}://"),
            None => bail!("{url}: the URL needs a scheme (http://host:port)"),
        }
        let authority = uri.authority().ok_or_else(|| anyhow!("{url}: no host"))?;
        let port = authority.port_u16().unwrap_or(80);
        let addr = (
            authority
                .host()
                .trim_start_matches('[')
                .trim_end_matches(']'),
            port,
        )
            .to_socket_addrs()
            .with_context(|| format!("Failed to resolve {url}"))?
            .next()
            .ok_or_else(|| anyhow!("{url}: the host resolves to no address"))?;
        let prefix = uri.path().trim_end_matches('/').to_string();
        Ok(Target {
            url: url.to_string(),
            addr,
            host: HeaderValue::from_str(authority.as_str())?,
            prefix,
        })
    }
}

/// Why a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The TCP connection could not be made.
    Connect,
    /// No full answer within the timeout.
    Timeout,
    /// The connection was reset or closed before the answer was complete.
    Reset,
    /// Anything else: a malformed answer, an unexpected status outside 4xx/5xx, a failed capture.
    Other,
}

/// One open connection and its read buffer.
pub(crate) struct Connection {
    stream: TcpStream,
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
        matches!(self.stream.try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }

    /// Reads what the socket has into the buffer: the count, 0 at the connection's end.
    async fn read_some(&mut self, count: &mut WireCount) -> Result<usize, Failure> {
        if self.buf.capacity() - self.buf.len() < READ_CHUNK / 4 {
            self.buf.reserve(READ_CHUNK);
        }
        match self.stream.read_buf(&mut self.buf).await {
            Ok(n) => {
                count.received += n as u64;
                Ok(n)
            }
            Err(e) => Err(classify_io(&e)),
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
    async fn round_trip(
        &mut self,
        request: &[u8],
        head_request: bool,
        want_body: bool,
        count: &mut WireCount,
    ) -> Result<Answered, Failure> {
        let mut written = 0;
        while written < request.len() {
            match self.stream.write(&request[written..]).await {
                Ok(0) => return Err(Failure::Reset),
                Ok(n) => {
                    written += n;
                    count.sent += n as u64;
                }
                Err(e) => return Err(classify_io(&e)),
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
}

/// Opens a connection.
pub(crate) async fn connect(target: &Target) -> Result<Connection, Failure> {
    let stream = TcpStream::connect(target.addr)
        .await
        .map_err(|_| Failure::Connect)?;
    let _ = stream.set_nodelay(true);
    Ok(Connection {
        stream,
        buf: Vec::with_capacity(READ_CHUNK / 4),
    })
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
pub(crate) async fn exchange(
    slot: &mut Option<Connection>,
    target: &Target,
    request: &[u8],
    head_request: bool,
    keepalive: bool,
    want_body: bool,
    count: &mut WireCount,
) -> Exchange {
    let fail = |f: Failure| Exchange {
        result: Err(f),
        body: None,
    };
    // A kept-alive connection the server has since closed is replaced silently, as any client would.
    if slot.as_mut().is_some_and(|conn| !conn.usable()) {
        *slot = None;
    }
    if slot.is_none() {
        match connect(target).await {
            Ok(c) => *slot = Some(c),
            Err(f) => return fail(f),
        }
    }
    let conn = slot.as_mut().expect("connected above");
    match conn
        .round_trip(request, head_request, want_body, count)
        .await
    {
        Ok(answered) => {
            if !keepalive || !answered.reusable {
                *slot = None;
            }
            Exchange {
                result: Ok(answered.status),
                body: answered.body,
            }
        }
        Err(f) => {
            *slot = None;
            fail(f)
        }
    }
}

/// Sorts an I/O error into a failure kind.
fn classify_io(e: &io::Error) -> Failure {
    use io::ErrorKind::*;
    match e.kind() {
        ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof | NotConnected => {
            Failure::Reset
        }
        TimedOut => Failure::Timeout,
        ConnectionRefused => Failure::Connect,
        _ => Failure::Other,
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
