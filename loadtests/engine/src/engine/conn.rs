//! One HTTP/1.1 client connection per task, built on hyper's low-level `client::conn::http1` (no
//! pool, no hidden retries), over a TCP stream that counts every byte it writes and reads, so
//! bandwidth is what crossed the wire: request and status lines, headers and bodies.
//!
//! The connection's driver (hyper's `Connection` future, which does the actual reading and writing)
//! is polled by the task that sends the requests, alongside each request, instead of being spawned
//! as a task of its own: that saves two task wake-ups per request (the request handed to the driver
//! task, the answer handed back) and keeps each connection's work on the task that waits for it.

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context as TaskContext, Poll};

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use http::header::{HeaderValue, CONNECTION, CONTENT_TYPE, HOST};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::scenario::RenderedRequest;

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

/// Bytes written and read on one connection.
#[derive(Debug, Default)]
pub(crate) struct Wire {
    sent: Cell<u64>,
    received: Cell<u64>,
}

impl Wire {
    fn snapshot(&self) -> (u64, u64) {
        (self.sent.get(), self.received.get())
    }
}

/// A TCP stream that adds what passes through it to a [`Wire`].
struct CountingStream {
    inner: TcpStream,
    wire: Rc<Wire>,
}

impl AsyncRead for CountingStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r {
            let n = (buf.filled().len() - before) as u64;
            self.wire.received.set(self.wire.received.get() + n);
        }
        r
    }
}

impl AsyncWrite for CountingStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r {
            self.wire.sent.set(self.wire.sent.get() + n as u64);
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = r {
            self.wire.sent.set(self.wire.sent.get() + n as u64);
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Why a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The TCP connection (or the HTTP handshake) could not be made.
    Connect,
    /// No full answer within the timeout.
    Timeout,
    /// The connection was reset or closed before the answer was complete.
    Reset,
    /// Anything else: a malformed answer, an unexpected status outside 4xx/5xx, a failed capture.
    Other,
}

/// hyper's side of a connection: the future that reads and writes the socket.
type Driver = hyper::client::conn::http1::Connection<TokioIo<CountingStream>, Full<Bytes>>;

/// One open connection.
pub(crate) struct Connection {
    sender: SendRequest<Full<Bytes>>,
    /// `None` once the connection has ended.
    driver: Option<Pin<Box<Driver>>>,
    wire: Rc<Wire>,
}

impl Connection {
    /// Runs `fut` to completion while driving the connection. If the connection ends first, the
    /// driver is dropped, which fails any request still waiting on it (hyper answers those with a
    /// "connection closed" error), so `fut` cannot wait forever.
    async fn drive<F: Future>(driver: &mut Option<Pin<Box<Driver>>>, fut: F) -> F::Output {
        let mut fut = std::pin::pin!(fut);
        std::future::poll_fn(|cx| {
            if let Poll::Ready(out) = fut.as_mut().poll(cx) {
                return Poll::Ready(out);
            }
            if let Some(d) = driver.as_mut() {
                if d.as_mut().poll(cx).is_ready() {
                    *driver = None;
                }
            }
            // The driver may just have delivered what `fut` waits for.
            fut.as_mut().poll(cx)
        })
        .await
    }

    /// Lets the driver notice what happened while nobody polled it (the server closing an idle
    /// connection); false if the connection cannot take a request any more.
    fn usable(&mut self) -> bool {
        if let Some(d) = self.driver.as_mut() {
            let waker = std::task::Waker::noop();
            let mut cx = TaskContext::from_waker(waker);
            if d.as_mut().poll(&mut cx).is_ready() {
                self.driver = None;
            }
        }
        self.driver.is_some() && !self.sender.is_closed()
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

/// Opens a connection and spawns its driver on the current (local) task set.
pub(crate) async fn connect(target: &Target) -> Result<Connection, Failure> {
    let tcp = TcpStream::connect(target.addr)
        .await
        .map_err(|_| Failure::Connect)?;
    let _ = tcp.set_nodelay(true);
    let wire = Rc::new(Wire::default());
    let io = TokioIo::new(CountingStream {
        inner: tcp,
        wire: wire.clone(),
    });
    let (sender, driver) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|_| Failure::Connect)?;
    Ok(Connection {
        sender,
        driver: Some(Box::pin(driver)),
        wire,
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

/// Sends `req` on the connection in `slot` (opening one if there is none or it was closed) and
/// reads the whole answer. Bytes written and read are added to `count`, even when the exchange
/// fails half way. The slot is emptied whenever the connection cannot be reused: after a failure,
/// or always when `keepalive` is off. Cancelling the future (a timeout) leaves the slot holding a
/// connection in an unknown state: the caller must empty it.
pub(crate) async fn exchange(
    slot: &mut Option<Connection>,
    target: &Target,
    req: &RenderedRequest,
    keepalive: bool,
    want_body: bool,
    count: &mut WireCount,
) -> Exchange {
    let fail = |f: Failure| Exchange {
        result: Err(f),
        body: None,
    };

    // A kept-alive connection the server has since closed is replaced silently, as any client would.
    if let Some(conn) = slot.as_mut() {
        if !conn.usable() {
            *slot = None;
        }
    }
    if slot.is_none() {
        match connect(target).await {
            Ok(c) => *slot = Some(c),
            Err(f) => return fail(f),
        }
    }
    let conn = slot.as_mut().expect("connected above");
    let wire = conn.wire.clone();
    let before = wire.snapshot();
    let Connection { sender, driver, .. } = conn;
    let result = Connection::drive(driver, async {
        if sender.ready().await.is_err() {
            return Err(Failure::Reset);
        }
        send(sender, target, req, keepalive, want_body).await
    })
    .await;
    let after = wire.snapshot();
    count.sent += after.0 - before.0;
    count.received += after.1 - before.1;
    match result {
        Ok((status, body)) => {
            if !keepalive {
                *slot = None;
            }
            Exchange {
                result: Ok(status),
                body,
            }
        }
        Err(f) => {
            *slot = None;
            fail(f)
        }
    }
}

async fn send(
    sender: &mut SendRequest<Full<Bytes>>,
    target: &Target,
    req: &RenderedRequest,
    keepalive: bool,
    want_body: bool,
) -> Result<(u16, Option<Bytes>), Failure> {
    let uri = if target.prefix.is_empty() {
        req.path.clone()
    } else {
        format!("{}{}", target.prefix, req.path)
    };
    let mut builder = http::Request::builder()
        .method(req.method.clone())
        .uri(uri)
        .header(HOST, target.host.clone());
    let mut has_content_type = false;
    for (name, value) in &req.headers {
        has_content_type |= name == CONTENT_TYPE;
        builder = builder.header(name, value);
    }
    if req.has_body && !has_content_type {
        builder = builder.header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    }
    if !keepalive {
        builder = builder.header(CONNECTION, HeaderValue::from_static("close"));
    }
    let request = builder
        .body(Full::new(req.body.clone()))
        .map_err(|_| Failure::Other)?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| classify(&e))?;
    let status = response.status().as_u16();
    let mut body = response.into_body();
    if want_body {
        let collected = body.collect().await.map_err(|e| classify(&e))?;
        Ok((status, Some(collected.to_bytes())))
    } else {
        // Read and drop: the bytes are counted on the wire, nothing is kept.
        while let Some(frame) = body.frame().await {
            frame.map_err(|e| classify(&e))?;
        }
        Ok((status, None))
    }
}

/// Sorts a hyper error into a failure kind.
pub(crate) fn classify(e: &hyper::Error) -> Failure {
    if e.is_parse() || e.is_parse_status() || e.is_parse_too_large() || e.is_user() {
        return Failure::Other;
    }
    if e.is_incomplete_message() || e.is_canceled() || e.is_closed() || e.is_body_write_aborted() {
        return Failure::Reset;
    }
    if e.is_timeout() {
        return Failure::Timeout;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<io::Error>() {
            return classify_io(io);
        }
        source = s.source();
    }
    Failure::Other
}

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
