//! One HTTP/2 client connection: a driver task that owns the socket, and handles ([`Connection`])
//! that the stream loops open streams on and wait on.
//!
//! - The driver reads into one 64 KiB buffer, dispatches every whole frame in it under one lock
//!   of the connection's state, and writes everything the streams queued since its last write in
//!   one write (frames of many streams together); it sleeps only when the socket has nothing to
//!   read and nothing is queued, so a stream wakes it only then.
//! - A stream's request goes out as its header block (encoded once per request template,
//!   [`super::frame::put_field`]) and its body as DATA within the server's windows; its answer is
//!   kept in the stream's slot (the status, and the body when asked) and only that stream is
//!   woken, once, when the answer is whole.
//! - Received DATA is released as it arrives (the generator reads every answer whole): a
//!   WINDOW_UPDATE for the stream and for the connection once half their window was received.
//! - The state sits behind a `Mutex`, never contended (one generator thread drives the driver and
//!   its streams), so that a `Session` stays `Send` for callers on a multi-threaded runtime.

mod driver;
mod inbound;

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};

use super::frame;
use super::hpack;
use super::{CONNECTION_WINDOW, STREAM_WINDOW};
use crate::failure::Failure;
use driver::Driver;
use inbound::Inbound;

/// The read buffer starts this small (zeroed memory is paid per connection, and a connection per
/// request is a run's hardest path) ...
const READ_BUFFER_START: usize = 4 * 1024;
/// ... and grows, when a read fills it or a frame does not fit, up to room for a few frames of
/// the largest size the client accepts.
const READ_BUFFER_MAX: usize = 64 * 1024;
/// The HPACK table size the client allows the server's encoder (the protocol's default, so the
/// client's SETTINGS need not say it).
const HEADER_TABLE: usize = 4096;
/// The largest answer header block the client takes (HEADERS and its CONTINUATIONs).
const MAX_BLOCK: usize = 1 << 20;

/// Why a stream failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StreamError {
    pub(crate) failure: Failure,
    /// Whether the connection can still carry new streams (only the stream was reset).
    pub(crate) keeps_connection: bool,
}

impl StreamError {
    /// The connection is closed or going away.
    fn broken(failure: Failure) -> StreamError {
        StreamError {
            failure,
            keeps_connection: false,
        }
    }
}

/// A handle on an open connection; the driver ends when the last handle is dropped and no stream
/// is open.
pub(crate) struct Connection {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What the driver and the streams share.
struct State {
    /// Frames queued for the driver to write.
    out: Vec<u8>,
    /// The driver's waker, and whether it sleeps (nothing to read or write when it last looked).
    driver: Option<Waker>,
    driver_idle: bool,
    /// Open streams (sent, or answered but not yet taken).
    streams: Vec<Slot>,
    /// Streams waiting for the server to allow one more.
    waiting: Vec<Waker>,
    next_id: u32,
    /// The server's settings.
    settings_seen: bool,
    max_streams: usize,
    initial_window: i64,
    max_frame: usize,
    /// The connection's send window.
    window: i64,
    /// Set when the connection ended (the failure its open streams got).
    closed: Option<Failure>,
    /// A GOAWAY came: no new streams.
    going_away: bool,
    handles: usize,
}

/// One stream.
struct Slot {
    id: u32,
    status: Option<u16>,
    /// The body so far, when the caller wants it.
    body: Option<Vec<u8>>,
    /// Set when the stream ended.
    end: Option<Result<(), StreamError>>,
    waker: Option<Waker>,
    /// The stream's send window.
    window: i64,
    /// The request body and how much of it was sent, until all was.
    pending: Option<(Bytes, usize)>,
    /// Bytes received and not yet given back with a WINDOW_UPDATE.
    unreleased: u32,
}

impl State {
    /// Why the connection takes no new stream: closed, or going away.
    fn broken(&self) -> Option<StreamError> {
        match self.closed {
            Some(failure) => Some(StreamError::broken(failure)),
            None if self.going_away => Some(StreamError::broken(Failure::Reset)),
            None => None,
        }
    }

    fn wake_driver(&mut self) {
        if self.driver_idle {
            self.driver_idle = false;
            if let Some(waker) = &self.driver {
                waker.wake_by_ref();
            }
        }
    }

    fn wake_waiting(&mut self) {
        for waker in self.waiting.drain(..) {
            waker.wake();
        }
    }

    fn slot(&mut self, id: u32) -> Option<&mut Slot> {
        self.streams.iter_mut().find(|s| s.id == id)
    }

    /// Sends what request bodies the windows allow.
    fn pump(&mut self) {
        let State {
            streams,
            out,
            window,
            max_frame,
            ..
        } = self;
        for slot in streams.iter_mut() {
            let Some((body, sent)) = &mut slot.pending else {
                continue;
            };
            loop {
                let left = body.len() - *sent;
                let n = left
                    .min(*max_frame)
                    .min(usize::try_from(*window).unwrap_or(0))
                    .min(usize::try_from(slot.window).unwrap_or(0));
                if n == 0 {
                    break;
                }
                let end = n == left;
                frame::put_data(out, slot.id, &body[*sent..*sent + n], end);
                *sent += n;
                *window -= n as i64;
                slot.window -= n as i64;
                if end {
                    slot.pending = None;
                    break;
                }
            }
        }
    }

    /// Ends every open stream with `failure`: the connection is gone.
    fn close(&mut self, failure: Failure) {
        self.closed.get_or_insert(failure);
        for slot in &mut self.streams {
            if slot.end.is_none() {
                finish(&mut self.out, slot, Err(StreamError::broken(failure)));
            }
        }
        self.wake_waiting();
    }
}

/// Ends `slot` with `result` and wakes its stream. An answer complete before the request's body
/// was sent ends the request with a RST_STREAM (RFC 9113 §8.1).
fn finish(out: &mut Vec<u8>, slot: &mut Slot, result: Result<(), StreamError>) {
    if result.is_ok() && slot.pending.is_some() {
        frame::put_reset(out, slot.id, frame::CANCEL);
    }
    slot.pending = None;
    slot.end = Some(result);
    if let Some(waker) = slot.waker.take() {
        waker.wake();
    }
}

impl Clone for Connection {
    fn clone(&self) -> Connection {
        self.shared.lock().handles += 1;
        Connection {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        st.handles -= 1;
        if st.handles == 0 {
            st.wake_driver();
        }
    }
}

/// Starts a connection on `io` (TCP, or TLS with ALPN `h2`): queues the preface and the client's
/// settings and spawns the driver. The first stream waits for the server's SETTINGS.
pub(crate) fn start<S>(io: S) -> Connection
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut out = Vec::with_capacity(1024);
    frame::put_opening(&mut out, STREAM_WINDOW, CONNECTION_WINDOW);
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            out,
            driver: None,
            driver_idle: false,
            streams: Vec::new(),
            waiting: Vec::new(),
            next_id: 1,
            settings_seen: false,
            max_streams: usize::MAX,
            initial_window: 65_535,
            max_frame: frame::DEFAULT_MAX_FRAME,
            window: 65_535,
            closed: None,
            going_away: false,
            handles: 1,
        }),
    });
    let mut driver = Driver {
        shared: shared.clone(),
        io,
        rbuf: vec![0; READ_BUFFER_START],
        start: 0,
        end: 0,
        wbuf: Vec::with_capacity(1024),
        wpos: 0,
        unflushed: false,
        inbound: Inbound {
            decoder: hpack::Decoder::new(HEADER_TABLE),
            block: None,
            unreleased: 0,
        },
    };
    tokio::spawn(async move {
        let failure = poll_fn(|cx| driver.poll_drive(cx))
            .await
            .err()
            .unwrap_or(Failure::Reset);
        driver.shared.lock().close(failure);
    });
    Connection { shared }
}

impl Connection {
    /// Opens a stream for the request `block` (HPACK) with `body`, once the server allows one more
    /// stream: its id. Dropping the exchange after this must [`Connection::cancel`] the stream.
    pub(crate) fn poll_open(
        &self,
        cx: &mut Context<'_>,
        block: &[u8],
        body: &Bytes,
        want_body: bool,
    ) -> Poll<Result<u32, StreamError>> {
        let mut st = self.shared.lock();
        if let Some(e) = st.broken() {
            return Poll::Ready(Err(e));
        }
        if !st.settings_seen || st.streams.len() >= st.max_streams {
            st.waiting.push(cx.waker().clone());
            return Poll::Pending;
        }
        let id = st.next_id;
        if id > 0x7fff_ffff {
            st.going_away = true;
            return Poll::Ready(Err(StreamError::broken(Failure::Reset)));
        }
        st.next_id += 2;
        let max_frame = st.max_frame;
        frame::put_headers(&mut st.out, id, block, body.is_empty(), max_frame);
        let window = st.initial_window;
        st.streams.push(Slot {
            id,
            status: None,
            body: want_body.then(Vec::new),
            end: None,
            waker: None,
            window,
            pending: (!body.is_empty()).then(|| (body.clone(), 0)),
            unreleased: 0,
        });
        if !body.is_empty() {
            st.pump();
        }
        st.wake_driver();
        Poll::Ready(Ok(id))
    }

    /// Stream `id`'s answer, once whole: the status and, when asked, the body.
    pub(crate) fn poll_answer(
        &self,
        cx: &mut Context<'_>,
        id: u32,
    ) -> Poll<Result<(u16, Option<Bytes>), StreamError>> {
        let mut st = self.shared.lock();
        let Some(i) = st.streams.iter().position(|s| s.id == id) else {
            return Poll::Ready(Err(StreamError::broken(Failure::Reset)));
        };
        let slot = &mut st.streams[i];
        if slot.end.is_none() {
            if !slot.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                slot.waker = Some(cx.waker().clone());
            }
            return Poll::Pending;
        }
        let slot = st.streams.swap_remove(i);
        st.wake_waiting();
        // The driver ends once no handle and no stream is left.
        if st.handles == 0 {
            st.wake_driver();
        }
        Poll::Ready(match slot.end {
            Some(Ok(())) => Ok((slot.status.unwrap_or_default(), slot.body.map(Bytes::from))),
            Some(Err(e)) => Err(e),
            None => unreachable!("checked above"),
        })
    }

    /// Gives stream `id` up (its exchange was dropped): a RST_STREAM(CANCEL) if it is still open,
    /// and its slot freed. Frames that still come for it are dropped (their DATA released).
    pub(crate) fn cancel(&self, id: u32) {
        let mut st = self.shared.lock();
        let Some(i) = st.streams.iter().position(|s| s.id == id) else {
            return;
        };
        let slot = st.streams.swap_remove(i);
        st.wake_waiting();
        if slot.end.is_none() && st.closed.is_none() {
            frame::put_reset(&mut st.out, id, frame::CANCEL);
            st.wake_driver();
        } else if st.handles == 0 {
            st.wake_driver();
        }
    }

    /// Sends a request and reads its whole answer; dropping the future cancels the stream.
    /// Errors before the stream is open come back as `Err((error, false))`.
    pub(crate) async fn round_trip(
        &self,
        block: &[u8],
        body: &Bytes,
        want_body: bool,
    ) -> Result<(u16, Option<Bytes>), (StreamError, bool)> {
        let id = poll_fn(|cx| self.poll_open(cx, block, body, want_body))
            .await
            .map_err(|e| (e, false))?;
        let mut guard = CancelOnDrop {
            conn: self,
            id,
            armed: true,
        };
        let answer = poll_fn(|cx| self.poll_answer(cx, id)).await;
        guard.armed = false;
        answer.map_err(|e| (e, true))
    }
}

/// Cancels a stream whose exchange is dropped before its answer was taken.
struct CancelOnDrop<'a> {
    conn: &'a Connection,
    id: u32,
    /// Cleared once the answer was taken.
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.conn.cancel(self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    //! Frames in, frames out: a connection on an in-memory pipe, the test playing the server.

    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, ReadBuf};

    use super::*;
    use crate::http2::frame::Head;

    /// The server's end of the pipe.
    struct Peer {
        io: DuplexStream,
        buf: Vec<u8>,
    }

    impl Peer {
        /// A connection and the server's end of its pipe, the preface and the client's opening
        /// checked, the server's `settings` sent and acknowledged.
        async fn connect(settings: &[(u16, u32)]) -> (Connection, Peer) {
            let (client, server) = tokio::io::duplex(1 << 20);
            let conn = start(client);
            let mut peer = Peer {
                io: server,
                buf: Vec::new(),
            };
            peer.fill_to(frame::PREFACE.len()).await;
            assert_eq!(&peer.buf[..frame::PREFACE.len()], frame::PREFACE);
            peer.buf.drain(..frame::PREFACE.len());
            let (head, payload) = peer.frame().await;
            assert_eq!((head.kind, head.flags), (frame::SETTINGS, 0));
            assert_eq!(payload, [0, 2, 0, 0, 0, 0, 0, 4, 0, 0x10, 0, 0]);
            let (head, payload) = peer.frame().await;
            assert_eq!((head.kind, head.stream), (frame::WINDOW_UPDATE, 0));
            assert_eq!(
                u32::from_be_bytes(payload.try_into().unwrap()),
                CONNECTION_WINDOW - 65_535
            );
            peer.settings(settings).await;
            (conn, peer)
        }

        async fn fill_to(&mut self, len: usize) {
            while self.buf.len() < len {
                let mut chunk = [0; 4096];
                let n = tokio::time::timeout(Duration::from_secs(30), self.io.read(&mut chunk))
                    .await
                    .expect("the client sends")
                    .unwrap();
                assert_ne!(n, 0, "the client closed the connection");
                self.buf.extend_from_slice(&chunk[..n]);
            }
        }

        /// The next frame the client sent.
        async fn frame(&mut self) -> (Head, Vec<u8>) {
            self.fill_to(frame::HEADER_LEN).await;
            let head = Head::parse(&self.buf).unwrap();
            self.fill_to(frame::HEADER_LEN + head.len).await;
            let payload = self.buf[frame::HEADER_LEN..frame::HEADER_LEN + head.len].to_vec();
            self.buf.drain(..frame::HEADER_LEN + head.len);
            (head, payload)
        }

        async fn send(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
            let mut out = Vec::new();
            frame::put_head(&mut out, payload.len(), kind, flags, stream);
            out.extend_from_slice(payload);
            self.io.write_all(&out).await.unwrap();
        }

        /// Sends SETTINGS and reads the client's acknowledgement.
        async fn settings(&mut self, settings: &[(u16, u32)]) {
            let mut payload = Vec::new();
            for (id, value) in settings {
                payload.extend_from_slice(&id.to_be_bytes());
                payload.extend_from_slice(&value.to_be_bytes());
            }
            self.send(frame::SETTINGS, 0, 0, &payload).await;
            let (head, _) = self.frame().await;
            assert_eq!((head.kind, head.flags), (frame::SETTINGS, frame::ACK));
        }

        /// Reads a request's HEADERS: its stream and flags.
        async fn request(&mut self) -> (u32, u8) {
            let (head, _) = self.frame().await;
            assert_eq!(head.kind, frame::HEADERS);
            (head.stream, head.flags)
        }

        async fn answer(&mut self, stream: u32, status: &str, end_stream: bool) {
            let block = answer_block(status);
            let flags = frame::END_HEADERS | if end_stream { frame::END_STREAM } else { 0 };
            self.send(frame::HEADERS, flags, stream, &block).await;
        }
    }

    fn answer_block(status: &str) -> Vec<u8> {
        let mut block = Vec::new();
        frame::put_field(&mut block, b":status", status.as_bytes());
        frame::put_field(&mut block, b"content-type", b"text/plain");
        block
    }

    fn request() -> Vec<u8> {
        let mut block = Vec::new();
        frame::put_field(&mut block, b":method", b"GET");
        block
    }

    /// A GET (with `body`) on `conn`.
    async fn get(
        conn: &Connection,
        body: &[u8],
        want_body: bool,
    ) -> Result<(u16, Option<Bytes>), (StreamError, bool)> {
        conn.round_trip(&request(), &Bytes::copy_from_slice(body), want_body)
            .await
    }

    fn reset() -> StreamError {
        StreamError {
            failure: Failure::Reset,
            keeps_connection: true,
        }
    }

    #[tokio::test]
    async fn an_answer_comes_back_whole_and_pings_are_answered() {
        let (conn, mut peer) = Peer::connect(&[]).await;
        let server = async {
            let (stream, flags) = peer.request().await;
            assert_eq!(flags, frame::END_HEADERS | frame::END_STREAM);
            peer.send(frame::PING, 0, 0, b"12345678").await;
            let (head, payload) = peer.frame().await;
            assert_eq!(
                (head.kind, head.flags, &payload[..]),
                (frame::PING, frame::ACK, &b"12345678"[..])
            );
            peer.answer(stream, "200", false).await;
            peer.send(frame::DATA, 0, stream, b"hel").await;
            peer.send(frame::DATA, frame::END_STREAM, stream, b"lo")
                .await;
        };
        let (answer, ()) = tokio::join!(get(&conn, b"", true), server);
        assert_eq!(answer.unwrap(), (200, Some(Bytes::from_static(b"hello"))));
    }

    #[tokio::test]
    async fn continuations_padding_interim_answers_and_trailers_are_read() {
        let (conn, mut peer) = Peer::connect(&[(frame::SETTINGS_MAX_FRAME_SIZE, 20_000)]).await;
        let server = async {
            let (stream, _) = peer.request().await;
            peer.answer(stream, "103", false).await;
            // A padded HEADERS with priority fields, its block split over a CONTINUATION.
            let block = answer_block("201");
            let mut first = vec![2, 0, 0, 0, 0, 7];
            first.extend_from_slice(&block[..3]);
            first.extend_from_slice(&[0, 0]);
            peer.send(
                frame::HEADERS,
                frame::PADDED | frame::PRIORITY_FLAG,
                stream,
                &first,
            )
            .await;
            peer.send(frame::CONTINUATION, frame::END_HEADERS, stream, &block[3..])
                .await;
            peer.send(frame::DATA, frame::PADDED, stream, b"\x03bodyXXX")
                .await;
            peer.send(frame::PRIORITY, 0, stream, &[0, 0, 0, 0, 9])
                .await;
            let trailers = answer_block("200");
            let flags = frame::END_HEADERS | frame::END_STREAM;
            peer.send(frame::HEADERS, flags, stream, &trailers).await;
        };
        let (answer, ()) = tokio::join!(get(&conn, b"", true), server);
        assert_eq!(answer.unwrap(), (201, Some(Bytes::from_static(b"body"))));
    }

    #[tokio::test]
    async fn request_bodies_wait_for_the_servers_windows() {
        let (conn, mut peer) = Peer::connect(&[(frame::SETTINGS_INITIAL_WINDOW_SIZE, 10)]).await;
        let body = vec![b'x'; 25];
        let server = async {
            let (stream, flags) = peer.request().await;
            assert_eq!(flags, frame::END_HEADERS);
            let (head, payload) = peer.frame().await;
            assert_eq!((head.kind, head.flags, payload.len()), (frame::DATA, 0, 10));
            peer.send(frame::WINDOW_UPDATE, 0, stream, &8u32.to_be_bytes())
                .await;
            let (head, payload) = peer.frame().await;
            assert_eq!((head.kind, head.flags, payload.len()), (frame::DATA, 0, 8));
            // A larger initial window grows the open stream's by the difference.
            peer.settings(&[(frame::SETTINGS_INITIAL_WINDOW_SIZE, 17)])
                .await;
            let (head, payload) = peer.frame().await;
            assert_eq!(
                (head.kind, head.flags, payload.len()),
                (frame::DATA, frame::END_STREAM, 7)
            );
            peer.answer(stream, "204", true).await;
        };
        let (answer, ()) = tokio::join!(get(&conn, &body, false), server);
        assert_eq!(answer.unwrap(), (204, None));
    }

    #[tokio::test]
    async fn received_data_is_given_back_in_batches() {
        let (conn, mut peer) = Peer::connect(&[]).await;
        let server = async {
            let (stream, _) = peer.request().await;
            peer.answer(stream, "200", false).await;
            let chunk = vec![0; frame::DEFAULT_MAX_FRAME];
            for _ in 0..STREAM_WINDOW as usize / 2 / chunk.len() {
                peer.send(frame::DATA, 0, stream, &chunk).await;
            }
            let (head, payload) = peer.frame().await;
            assert_eq!((head.kind, head.stream), (frame::WINDOW_UPDATE, stream));
            assert_eq!(
                u32::from_be_bytes(payload.try_into().unwrap()),
                STREAM_WINDOW / 2
            );
            peer.send(frame::DATA, frame::END_STREAM, stream, b"").await;
        };
        let (answer, ()) = tokio::join!(get(&conn, b"", false), server);
        assert_eq!(answer.unwrap(), (200, None));
    }

    #[tokio::test]
    async fn a_dropped_exchange_resets_its_stream_and_its_late_data_is_still_given_back() {
        let (conn, mut peer) = Peer::connect(&[(frame::SETTINGS_MAX_CONCURRENT_STREAMS, 1)]).await;
        let block = request();
        let body = Bytes::new();
        let mut exchange = Box::pin(conn.round_trip(&block, &body, false));
        let stream = tokio::select! {
            _ = &mut exchange => panic!("no answer was sent"),
            (stream, _) = peer.request() => stream,
        };
        drop(exchange);
        let (head, payload) = peer.frame().await;
        assert_eq!((head.kind, head.stream), (frame::RST_STREAM, stream));
        assert_eq!(payload, frame::CANCEL.to_be_bytes());
        // Frames already on their way are dropped, their bytes given back to the connection.
        peer.answer(stream, "200", false).await;
        let chunk = vec![0; frame::DEFAULT_MAX_FRAME];
        for _ in 0..CONNECTION_WINDOW as usize / 2 / chunk.len() {
            peer.send(frame::DATA, 0, stream, &chunk).await;
        }
        let (head, payload) = peer.frame().await;
        assert_eq!((head.kind, head.stream), (frame::WINDOW_UPDATE, 0));
        assert_eq!(
            u32::from_be_bytes(payload.try_into().unwrap()),
            CONNECTION_WINDOW / 2
        );
        // The stream's slot is free: the only stream the server allows opens.
        let server = async {
            let (next, _) = peer.request().await;
            assert_eq!(next, stream + 2);
            peer.answer(next, "200", true).await;
        };
        let (answer, ()) = tokio::join!(conn.round_trip(&block, &body, false), server);
        assert_eq!(answer.unwrap(), (200, None));
    }

    #[tokio::test]
    async fn a_reset_fails_its_stream_alone_and_goaway_fails_the_streams_above_its_last() {
        let (conn, mut peer) = Peer::connect(&[]).await;
        let block = request();
        let body = Bytes::new();
        let server = async {
            let (first, _) = peer.request().await;
            let (second, _) = peer.request().await;
            let (third, _) = peer.request().await;
            peer.send(frame::RST_STREAM, 0, first, &7u32.to_be_bytes())
                .await;
            let mut goaway = second.to_be_bytes().to_vec();
            goaway.extend_from_slice(&0u32.to_be_bytes());
            peer.send(frame::GOAWAY, 0, 0, &goaway).await;
            peer.answer(second, "200", true).await;
            let _ = third;
        };
        let (a, b, c, ()) = tokio::join!(
            conn.round_trip(&block, &body, false),
            conn.round_trip(&block, &body, false),
            conn.round_trip(&block, &body, false),
            server
        );
        assert_eq!(a, Err((reset(), true)));
        assert_eq!(b.unwrap(), (200, None));
        assert_eq!(c, Err((StreamError::broken(Failure::Reset), true)));
        // No new stream on a connection going away.
        let d = conn.round_trip(&block, &body, false).await;
        assert_eq!(d, Err((StreamError::broken(Failure::Reset), false)));
    }

    #[tokio::test]
    async fn a_protocol_error_or_the_servers_close_fails_the_connection() {
        let (conn, mut peer) = Peer::connect(&[]).await;
        let server = async {
            let (stream, _) = peer.request().await;
            peer.send(frame::DATA, 0, stream, b"before any headers")
                .await;
        };
        let (answer, ()) = tokio::join!(get(&conn, b"", false), server);
        assert_eq!(answer, Err((StreamError::broken(Failure::Other), true)));

        let (conn, mut peer) = Peer::connect(&[]).await;
        let server = async {
            peer.request().await;
            drop(peer);
        };
        let (answer, ()) = tokio::join!(get(&conn, b"", false), server);
        assert_eq!(answer, Err((StreamError::broken(Failure::Reset), true)));
        let again = get(&conn, b"", false).await;
        assert_eq!(again, Err((StreamError::broken(Failure::Reset), false)));
    }

    /// A pipe whose flush, when told, waits a moment (as a TLS flush that meets a full socket):
    /// pending until a timer, standing for the socket's readiness, wakes the driver.
    struct SlowFlush {
        io: DuplexStream,
        wait_next: Arc<std::sync::atomic::AtomicBool>,
        blocked: Arc<std::sync::atomic::AtomicBool>,
    }

    impl AsyncRead for SlowFlush {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.io).poll_read(cx, buf)
        }
    }

    impl AsyncWrite for SlowFlush {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            Pin::new(&mut self.io).poll_write(cx, buf)
        }

        fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            use std::sync::atomic::Ordering::SeqCst;
            if self.wait_next.swap(false, SeqCst) {
                self.blocked.store(true, SeqCst);
                let (blocked, waker) = (self.blocked.clone(), cx.waker().clone());
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    blocked.store(false, SeqCst);
                    waker.wake();
                });
            }
            if self.blocked.load(SeqCst) {
                return Poll::Pending;
            }
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.io).poll_shutdown(cx)
        }
    }

    #[tokio::test]
    async fn a_flush_that_waits_does_not_leave_the_next_request_unsent() {
        let (client, server) = tokio::io::duplex(1 << 20);
        let wait_next = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let conn = start(SlowFlush {
            io: client,
            wait_next: wait_next.clone(),
            blocked: Arc::default(),
        });
        let mut peer = Peer {
            io: server,
            buf: Vec::new(),
        };
        peer.fill_to(frame::PREFACE.len()).await;
        peer.buf.drain(..frame::PREFACE.len());
        peer.frame().await;
        peer.frame().await;
        peer.settings(&[]).await;
        // A cancelled stream's RST_STREAM is the last write before a quiet connection, and its
        // flush waits: the request after it must still go out.
        let mut cancelled = Box::pin(get(&conn, b"", false));
        tokio::select! {
            _ = &mut cancelled => panic!("no answer was sent"),
            _ = peer.request() => {}
        }
        wait_next.store(true, std::sync::atomic::Ordering::SeqCst);
        drop(cancelled);
        let (head, _) = peer.frame().await;
        assert_eq!(head.kind, frame::RST_STREAM);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let server = async {
            let (stream, _) = peer.request().await;
            peer.answer(stream, "200", true).await;
        };
        let exchange = async { tokio::join!(get(&conn, b"", false), server).0 };
        let answer = tokio::time::timeout(Duration::from_secs(10), exchange)
            .await
            .expect("the request went out");
        assert_eq!(answer.unwrap(), (200, None));
    }

    #[test]
    fn an_exchange_can_be_sent_between_threads() {
        fn send<T: Send>(_: &T) {}
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _guard = runtime.enter();
        let conn = start(tokio::io::duplex(64).0);
        send(&conn.round_trip(b"", &Bytes::new(), false));
    }
}
