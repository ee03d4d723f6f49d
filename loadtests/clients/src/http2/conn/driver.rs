//! The connection's driver task: it owns the socket, reads into one buffer and hands every whole
//! frame in it to the incoming side under one lock of the state, and writes what the streams
//! queued since its last write in one write.

use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::*;
use crate::failure::{classify_io, Failure};
use crate::http2::frame::{self, Head};

/// The driver: the socket, its buffers, and what only incoming frames need.
pub(super) struct Driver<S> {
    pub(super) shared: Arc<Shared>,
    pub(super) io: S,
    pub(super) rbuf: Vec<u8>,
    /// The unread bytes are `rbuf[start..end]`.
    pub(super) start: usize,
    pub(super) end: usize,
    /// Frames being written, from `wpos` on.
    pub(super) wbuf: Vec<u8>,
    pub(super) wpos: usize,
    pub(super) unflushed: bool,
    pub(super) inbound: Inbound,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Driver<S> {
    /// Reads, dispatches and writes until the socket would block: `Ready(Ok)` once no handle and
    /// no stream is left, `Ready(Err)` when the connection fails.
    pub(super) fn poll_drive(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Failure>> {
        loop {
            let mut busy = false;
            if self.poll_fill(cx)?.is_ready() {
                busy = true;
                self.dispatch()?;
            }
            if self.wpos == self.wbuf.len() {
                self.wbuf.clear();
                self.wpos = 0;
                let mut st = self.shared.lock();
                std::mem::swap(&mut st.out, &mut self.wbuf);
                if self.wbuf.is_empty() && !busy && !self.unflushed {
                    if st.handles == 0 && st.streams.is_empty() {
                        return Poll::Ready(Ok(()));
                    }
                    st.driver_idle = true;
                    if !st.driver.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        st.driver = Some(cx.waker().clone());
                    }
                    return Poll::Pending;
                }
            }
            while self.wpos < self.wbuf.len() {
                match Pin::new(&mut self.io).poll_write(cx, &self.wbuf[self.wpos..]) {
                    Poll::Ready(Ok(0)) => return Poll::Ready(Err(Failure::Reset)),
                    Poll::Ready(Ok(n)) => {
                        self.wpos += n;
                        self.unflushed = true;
                        busy = true;
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(classify_io(&e))),
                    Poll::Pending => break,
                }
            }
            if self.unflushed && self.wpos == self.wbuf.len() {
                match Pin::new(&mut self.io).poll_flush(cx) {
                    // Progress: go round once more, so that the driver sleeps only through the
                    // idle branch above, where the streams know to wake it.
                    Poll::Ready(Ok(())) => {
                        self.unflushed = false;
                        busy = true;
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(classify_io(&e))),
                    Poll::Pending => {}
                }
            }
            if !busy {
                // A write or flush waits on the socket, which wakes the driver.
                return Poll::Pending;
            }
        }
    }

    /// Reads what the socket has: `Ready` when it brought bytes; the connection's end is a reset.
    pub(super) fn poll_fill(&mut self, cx: &mut Context<'_>) -> Result<Poll<()>, Failure> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        // The frame the unread bytes begin (whole ones were dispatched): it must fit.
        let need = Head::parse(&self.rbuf[self.start..self.end])
            .map_or(frame::HEADER_LEN, |head| frame::HEADER_LEN + head.len);
        if self.end == self.rbuf.len() || self.start + need > self.rbuf.len() {
            self.rbuf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if self.end == self.rbuf.len() || need > self.rbuf.len() {
                let len = (self.rbuf.len() * 2).max(need).min(READ_BUFFER_MAX);
                self.rbuf.resize(len, 0);
            }
        }
        let mut buf = ReadBuf::new(&mut self.rbuf[self.end..]);
        match Pin::new(&mut self.io).poll_read(cx, &mut buf) {
            Poll::Ready(Ok(())) => match buf.filled().len() {
                0 => Err(Failure::Reset),
                n => {
                    self.end += n;
                    Ok(Poll::Ready(()))
                }
            },
            Poll::Ready(Err(e)) => Err(classify_io(&e)),
            Poll::Pending => Ok(Poll::Pending),
        }
    }

    /// Handles every whole frame in the read buffer.
    pub(super) fn dispatch(&mut self) -> Result<(), Failure> {
        let mut st = self.shared.lock();
        let mut pos = self.start;
        while let Some(head) = Head::parse(&self.rbuf[pos..self.end]) {
            if head.len > frame::DEFAULT_MAX_FRAME {
                return Err(Failure::Other);
            }
            let next = pos + frame::HEADER_LEN + head.len;
            if next > self.end {
                break;
            }
            let payload = &self.rbuf[pos + frame::HEADER_LEN..next];
            self.inbound.on_frame(&mut st, head, payload)?;
            pos = next;
        }
        self.start = pos;
        Ok(())
    }
}
