//! The incoming side of a connection: every frame the server sends, read into the state — HEADERS
//! and CONTINUATION through HPACK, DATA counted against the windows and given back, RST_STREAM,
//! GOAWAY, WINDOW_UPDATE, SETTINGS and PING answered as the protocol asks.

use super::*;
use crate::failure::Failure;
use crate::http2::frame::{self, Head};
use crate::http2::hpack;

/// The state of the incoming side.
pub(super) struct Inbound {
    /// HPACK's decoder: every header block goes through it, in order, to keep its table right.
    pub(super) decoder: hpack::Decoder,
    /// A header block waiting for its CONTINUATIONs: stream, END_STREAM, the bytes so far.
    pub(super) block: Option<(u32, bool, Vec<u8>)>,
    /// Bytes of DATA received on the connection and not yet given back with a WINDOW_UPDATE.
    pub(super) unreleased: u32,
}

impl Inbound {
    /// Handles one frame; `Err` for a connection error (the connection is closed).
    pub(super) fn on_frame(
        &mut self,
        st: &mut State,
        head: Head,
        payload: &[u8],
    ) -> Result<(), Failure> {
        if let Some((stream, ..)) = self.block {
            if head.kind != frame::CONTINUATION || head.stream != stream {
                return Err(Failure::Other);
            }
        }
        let stream_frame = matches!(
            head.kind,
            frame::DATA | frame::HEADERS | frame::RST_STREAM | frame::CONTINUATION
        );
        if stream_frame && head.stream == 0 {
            return Err(Failure::Other);
        }
        match head.kind {
            frame::DATA => self.on_data(st, head, payload),
            frame::HEADERS => {
                let fragment = frame::unpad(payload, head.flags, true).ok_or(Failure::Other)?;
                let end_stream = head.flags & frame::END_STREAM != 0;
                if head.flags & frame::END_HEADERS != 0 {
                    self.on_block(st, head.stream, end_stream, fragment)
                } else {
                    self.block = Some((head.stream, end_stream, fragment.to_vec()));
                    Ok(())
                }
            }
            frame::CONTINUATION => {
                let Some((stream, end_stream, mut bytes)) = self.block.take() else {
                    return Err(Failure::Other);
                };
                bytes.extend_from_slice(payload);
                if bytes.len() > MAX_BLOCK {
                    return Err(Failure::Other);
                }
                if head.flags & frame::END_HEADERS != 0 {
                    self.on_block(st, stream, end_stream, &bytes)
                } else {
                    self.block = Some((stream, end_stream, bytes));
                    Ok(())
                }
            }
            frame::RST_STREAM => on_reset(st, head, payload),
            frame::SETTINGS => on_settings(st, head, payload),
            frame::PUSH_PROMISE => Err(Failure::Other),
            frame::PING => {
                if head.stream != 0 || payload.len() != 8 {
                    return Err(Failure::Other);
                }
                if head.flags & frame::ACK == 0 {
                    frame::put_head(&mut st.out, 8, frame::PING, frame::ACK, 0);
                    st.out.extend_from_slice(payload);
                }
                Ok(())
            }
            frame::GOAWAY => on_goaway(st, head, payload),
            frame::WINDOW_UPDATE => on_window_update(st, head, payload),
            // Priorities mean nothing to a client; frame types it does not know are ignored.
            frame::PRIORITY => Ok(()),
            _ => Ok(()),
        }
    }

    /// A DATA frame: counted against both windows (released at once: the generator reads every
    /// answer whole), its bytes kept when the stream wants its body.
    pub(super) fn on_data(
        &mut self,
        st: &mut State,
        head: Head,
        payload: &[u8],
    ) -> Result<(), Failure> {
        let len = payload.len() as u32;
        self.unreleased += len;
        if self.unreleased >= CONNECTION_WINDOW / 2 {
            frame::put_window_update(&mut st.out, 0, self.unreleased);
            self.unreleased = 0;
        }
        let data = frame::unpad(payload, head.flags, false).ok_or(Failure::Other)?;
        let State { streams, out, .. } = st;
        // A stream already ended or given up: its late frames are dropped.
        let Some(slot) = streams
            .iter_mut()
            .find(|s| s.id == head.stream && s.end.is_none())
        else {
            return Ok(());
        };
        if slot.status.is_none() {
            return Err(Failure::Other);
        }
        if let Some(body) = &mut slot.body {
            body.extend_from_slice(data);
        }
        if head.flags & frame::END_STREAM != 0 {
            finish(out, slot, Ok(()));
        } else {
            slot.unreleased += len;
            if slot.unreleased >= STREAM_WINDOW / 2 {
                frame::put_window_update(out, slot.id, slot.unreleased);
                slot.unreleased = 0;
            }
        }
        Ok(())
    }

    /// A whole header block: decoded (always, for the decoder's table), its `:status` given to
    /// the stream; an interim (1xx) answer is passed over, a second block is trailers.
    pub(super) fn on_block(
        &mut self,
        st: &mut State,
        stream: u32,
        end_stream: bool,
        block: &[u8],
    ) -> Result<(), Failure> {
        let mut status = None;
        let mut malformed = false;
        self.decoder
            .decode(block, |name, value| {
                if name == b":status" {
                    status = frame::status(value);
                    malformed |= status.is_none();
                }
            })
            .map_err(|_| Failure::Other)?;
        let State { streams, out, .. } = st;
        let Some(slot) = streams
            .iter_mut()
            .find(|s| s.id == stream && s.end.is_none())
        else {
            return Ok(());
        };
        if malformed {
            return Err(Failure::Other);
        }
        if slot.status.is_none() {
            match status {
                None => return Err(Failure::Other),
                Some(s) if (100..200).contains(&s) => {
                    return if end_stream {
                        Err(Failure::Other)
                    } else {
                        Ok(())
                    };
                }
                Some(s) => slot.status = Some(s),
            }
        }
        if end_stream {
            finish(out, slot, Ok(()));
        }
        Ok(())
    }
}

/// A RST_STREAM frame: its stream fails as reset, the connection stays.
pub(super) fn on_reset(st: &mut State, head: Head, payload: &[u8]) -> Result<(), Failure> {
    if payload.len() != 4 {
        return Err(Failure::Other);
    }
    let State { streams, out, .. } = st;
    if let Some(slot) = streams.iter_mut().find(|s| s.id == head.stream) {
        if slot.end.is_none() {
            let reset = StreamError {
                failure: Failure::Reset,
                keeps_connection: true,
            };
            finish(out, slot, Err(reset));
        }
    }
    Ok(())
}

/// A GOAWAY frame: the streams above its last id fail as reset, and no new stream starts here.
pub(super) fn on_goaway(st: &mut State, head: Head, payload: &[u8]) -> Result<(), Failure> {
    if head.stream != 0 || payload.len() < 8 {
        return Err(Failure::Other);
    }
    let last = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & 0x7fff_ffff;
    st.going_away = true;
    let State { streams, out, .. } = st;
    for slot in streams
        .iter_mut()
        .filter(|s| s.id > last && s.end.is_none())
    {
        finish(out, slot, Err(StreamError::broken(Failure::Reset)));
    }
    st.wake_waiting();
    Ok(())
}

/// A WINDOW_UPDATE frame: the connection's or a stream's send window grows, and what waited on it
/// goes out.
pub(super) fn on_window_update(st: &mut State, head: Head, payload: &[u8]) -> Result<(), Failure> {
    if payload.len() != 4 {
        return Err(Failure::Other);
    }
    let increment = i64::from(
        u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & 0x7fff_ffff,
    );
    if increment == 0 {
        return Err(Failure::Other);
    }
    let window = if head.stream == 0 {
        Some(&mut st.window)
    } else {
        st.slot(head.stream).map(|s| &mut s.window)
    };
    if let Some(window) = window {
        *window += increment;
        if *window > frame::MAX_WINDOW {
            return Err(Failure::Other);
        }
        st.pump();
    }
    Ok(())
}

/// A SETTINGS frame: the server's limits taken, and acknowledged.
pub(super) fn on_settings(st: &mut State, head: Head, payload: &[u8]) -> Result<(), Failure> {
    if head.stream != 0 {
        return Err(Failure::Other);
    }
    if head.flags & frame::ACK != 0 {
        return if payload.is_empty() {
            Ok(())
        } else {
            Err(Failure::Other)
        };
    }
    if !payload.len().is_multiple_of(6) {
        return Err(Failure::Other);
    }
    if !st.settings_seen {
        st.settings_seen = true;
        // Until the server says otherwise, streams are unlimited (RFC 9113 §6.5.2).
        st.max_streams = usize::MAX;
    }
    for setting in payload.chunks_exact(6) {
        let id = u16::from_be_bytes([setting[0], setting[1]]);
        let value = u32::from_be_bytes([setting[2], setting[3], setting[4], setting[5]]);
        match id {
            frame::SETTINGS_MAX_CONCURRENT_STREAMS => {
                st.max_streams = usize::try_from(value).unwrap_or(usize::MAX);
            }
            frame::SETTINGS_INITIAL_WINDOW_SIZE => {
                let value = i64::from(value);
                if value > frame::MAX_WINDOW {
                    return Err(Failure::Other);
                }
                let delta = value - st.initial_window;
                st.initial_window = value;
                for slot in &mut st.streams {
                    slot.window += delta;
                }
            }
            frame::SETTINGS_MAX_FRAME_SIZE => {
                let value = value as usize;
                if !(frame::DEFAULT_MAX_FRAME..=0xff_ffff).contains(&value) {
                    return Err(Failure::Other);
                }
                st.max_frame = value;
            }
            // HEADER_TABLE_SIZE: the encoder uses no dynamic table, so any size suits it; the
            // rest (ENABLE_PUSH, MAX_HEADER_LIST_SIZE, unknown ones) asks nothing of a client.
            _ => {}
        }
    }
    frame::put_head(&mut st.out, 0, frame::SETTINGS, frame::ACK, 0);
    st.pump();
    st.wake_waiting();
    Ok(())
}
