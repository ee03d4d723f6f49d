//! One HTTP/1.1 client connection per task, written for the generator's hot path: a request goes
//! out as bytes encoded once (a request with no template holes is encoded once per run, see
//! [`encode`]) in one write on tokio's `TcpStream`, and the answer is read into a buffer the
//! connection keeps, its head parsed with `httparse` (`head`) and its body framed by its length,
//! its chunks (`chunked`) or the connection's end. Nothing is allocated per request unless the
//! caller keeps the body (to capture values from it), and nothing is copied but what the socket
//! hands over. Every byte written and read is counted, so bandwidth is what crossed the wire:
//! request and status lines, headers and bodies.
//!
//! The same connection runs over TLS ([`crate::tls`]) for `h1-tls`: the stream is an enum of a plain
//! socket and a TLS one, so the plaintext path pays one match per read and write and nothing
//! else; under TLS the bytes are counted below rustls, on the socket, so TLS records count.
//! HTTP/2 (`h2c`, `h2-tls`) is in [`crate::http2`], HTTP/3 (`h3`, over QUIC) in [`crate::http3`],
//! on the same shared-connection machinery.
//!
//! Hyper's client did the same work with more machinery (a request and a response object per
//! exchange, a dispatcher between them, header maps): on `GET /bench/hello` that cost about a
//! quarter more generator CPU per request than wrk (`scripts/bench-generator.sh`), so every light
//! route became generator-bound sooner. The answers' semantics it handled are kept and tested
//! (`loadtests/load/tests/suite/generator.rs`): content-length, chunked and close-delimited bodies, interim 1xx
//! answers, `connection: close` from either side, HTTP/1.0 answers, timeouts and resets.

mod chunked;
mod encode;
mod head;

use std::io;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::dialer::{Dialer, Stream};
use crate::exchange::{Exchange, WireCount};
use crate::failure::{classify_io, Failure};
use crate::target::Target;
use crate::tls::Handshake;
use chunked::Chunked;
pub use encode::encode;
use head::{Framing, Head};

/// Bytes a connection's read buffer grows by when it runs short; one read takes at most this.
const READ_CHUNK: usize = 64 * 1024;

/// One open connection and its read buffer.
pub struct Connection {
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

    /// Writes `request` and reads its whole answer: the head, then the body by its framing.
    // Every HTTP/1.1 request takes this path; the helpers it awaits are inlined into its future,
    // so the split costs no allocation per request.
    async fn round_trip(
        &mut self,
        request: &[u8],
        head_request: bool,
        want_body: bool,
        count: &mut WireCount,
    ) -> Result<Answered, Failure> {
        self.send(request, count).await?;
        self.buf.clear();
        let head = self.read_head(head_request, count).await?;
        let mut body = want_body.then(Vec::new);
        let mut reusable = head.reusable && head.status != 101;
        match head.framing {
            Framing::Empty => reusable &= self.buf.len() == head.len,
            Framing::Length(n) => {
                reusable &= self.read_length(head.len, n, body.as_mut(), count).await?;
            }
            Framing::Chunked => {
                reusable &= self.read_chunked(head.len, body.as_mut(), count).await?;
            }
            Framing::UntilClose => {
                self.read_until_close(head.len, body.as_mut(), count)
                    .await?;
                reusable = false;
            }
        }
        Ok(Answered {
            status: head.status,
            body: body.map(Bytes::from),
            reusable,
        })
    }

    /// Writes all of `request`.
    async fn send(&mut self, request: &[u8], count: &mut WireCount) -> Result<(), Failure> {
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
        Ok(())
    }

    /// Reads up to the end of the answer's head (into the buffer, from its start), passing over
    /// interim answers.
    async fn read_head(
        &mut self,
        head_request: bool,
        count: &mut WireCount,
    ) -> Result<Head, Failure> {
        loop {
            match head::parse(&self.buf, head_request) {
                Err(_) => return Err(Failure::Other),
                // An interim answer (100 Continue, 103 Early Hints): the real one follows.
                Ok(Some(h)) if (100..200).contains(&h.status) && h.status != 101 => {
                    self.buf.drain(..h.len);
                }
                Ok(Some(h)) => return Ok(h),
                Ok(None) => {
                    self.fill(count).await?;
                }
            }
        }
    }

    /// Reads a body of `n` bytes that starts at `start` in the buffer: whether the answer ended
    /// where the connection's bytes did (more means it is out of step, not to be reused).
    async fn read_length(
        &mut self,
        start: usize,
        n: u64,
        mut body: Option<&mut Vec<u8>>,
        count: &mut WireCount,
    ) -> Result<bool, Failure> {
        let after_head = self.buf.len() - start;
        let first = after_head.min(usize::try_from(n).unwrap_or(usize::MAX));
        if let Some(body) = body.as_mut() {
            body.extend_from_slice(&self.buf[start..start + first]);
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
        Ok(have == n)
    }

    /// Reads a chunked body that starts at `start` in the buffer: whether the answer ended where
    /// the connection's bytes did.
    async fn read_chunked(
        &mut self,
        mut start: usize,
        mut body: Option<&mut Vec<u8>>,
        count: &mut WireCount,
    ) -> Result<bool, Failure> {
        let mut decoder = Chunked::new();
        loop {
            let used = decoder
                .feed(&self.buf[start..], body.as_deref_mut())
                .map_err(|_| Failure::Other)?;
            if decoder.done() {
                return Ok(start + used == self.buf.len());
            }
            self.buf.clear();
            start = 0;
            self.fill(count).await?;
        }
    }

    /// Reads a body that ends with the connection, starting at `start` in the buffer.
    async fn read_until_close(
        &mut self,
        start: usize,
        mut body: Option<&mut Vec<u8>>,
        count: &mut WireCount,
    ) -> Result<(), Failure> {
        if let Some(body) = body.as_mut() {
            body.extend_from_slice(&self.buf[start..]);
        }
        loop {
            self.buf.clear();
            if self.read_some(count).await? == 0 {
                return Ok(());
            }
            if let Some(body) = body.as_mut() {
                body.extend_from_slice(&self.buf);
            }
        }
    }
}

/// Opens a connection (HTTP/1.1, plain or TLS as `dialer` says) and the handshake it made.
pub async fn connect(
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
pub fn abandon(slot: &mut Option<Connection>, count: &mut WireCount) {
    if let Some(conn) = slot.take() {
        conn.take_count(count);
    }
}

/// Sends `request` (the bytes [`encode`] made) on the connection in `slot` (opening one if there is
/// none or the server closed it) and reads the whole answer (`head_request`: an answer to HEAD,
/// which has no body); the body is kept when `want_body`. Bytes written and read are added to
/// `count`, even when the exchange fails half way. The slot is emptied whenever the connection
/// cannot be reused: after a failure, after an answer that ends it, or always when `keepalive` is
/// off. Cancelling the future (a timeout) leaves the slot holding a connection in an unknown state:
/// the caller must empty it.
#[allow(clippy::too_many_arguments)]
pub async fn exchange(
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
