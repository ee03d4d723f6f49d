//! HTTP/2 frames as bytes (RFC 9113 §4, §6): the nine-byte header read off a buffer, the frames
//! the client sends written into its output buffer, and a request's header block encoded with
//! HPACK's stateless forms (RFC 7541 §6.1, §6.2.2: static-table references and literals without
//! indexing, no Huffman), so one block can be encoded once per request template and sent on any
//! connection, whatever its encoder table holds. Answers are decoded in [`super::hpack`].

/// What every connection starts with (RFC 9113 §3.4).
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// A frame header's length.
pub(crate) const HEADER_LEN: usize = 9;
/// The frame size every endpoint must accept, and the most the client accepts (it never asks
/// for more).
pub(crate) const DEFAULT_MAX_FRAME: usize = 16_384;
/// The largest flow-control window (RFC 9113 §6.9.1).
pub(crate) const MAX_WINDOW: i64 = (1 << 31) - 1;

/// Frame types.
pub(crate) const DATA: u8 = 0x0;
pub(crate) const HEADERS: u8 = 0x1;
pub(crate) const PRIORITY: u8 = 0x2;
pub(crate) const RST_STREAM: u8 = 0x3;
pub(crate) const SETTINGS: u8 = 0x4;
pub(crate) const PUSH_PROMISE: u8 = 0x5;
pub(crate) const PING: u8 = 0x6;
pub(crate) const GOAWAY: u8 = 0x7;
pub(crate) const WINDOW_UPDATE: u8 = 0x8;
pub(crate) const CONTINUATION: u8 = 0x9;

/// Flags.
pub(crate) const END_STREAM: u8 = 0x1;
pub(crate) const ACK: u8 = 0x1;
pub(crate) const END_HEADERS: u8 = 0x4;
pub(crate) const PADDED: u8 = 0x8;
pub(crate) const PRIORITY_FLAG: u8 = 0x20;

/// Settings identifiers.
pub(crate) const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub(crate) const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub(crate) const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub(crate) const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;

/// The RST_STREAM code the client cancels a stream with.
pub(crate) const CANCEL: u32 = 0x8;

/// A frame's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    /// The payload's length.
    pub(crate) len: usize,
    pub(crate) kind: u8,
    pub(crate) flags: u8,
    pub(crate) stream: u32,
}

impl Head {
    /// The header at the start of `buf`, if it holds one.
    pub(crate) fn parse(buf: &[u8]) -> Option<Head> {
        let b = buf.get(..HEADER_LEN)?;
        Some(Head {
            len: (usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        })
    }
}

/// Appends a frame header to `out`.
pub(crate) fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = len as u32;
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// Appends the client's opening: the preface, its SETTINGS (no push, `stream_window` a stream)
/// and a WINDOW_UPDATE raising the connection's window from 64 KiB to `connection_window`.
pub(crate) fn put_opening(out: &mut Vec<u8>, stream_window: u32, connection_window: u32) {
    out.extend_from_slice(PREFACE);
    put_head(out, 12, SETTINGS, 0, 0);
    out.extend_from_slice(&SETTINGS_ENABLE_PUSH.to_be_bytes());
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&SETTINGS_INITIAL_WINDOW_SIZE.to_be_bytes());
    out.extend_from_slice(&stream_window.to_be_bytes());
    put_window_update(out, 0, connection_window - 65_535);
}

/// Appends a WINDOW_UPDATE.
pub(crate) fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

/// Appends a RST_STREAM.
pub(crate) fn put_reset(out: &mut Vec<u8>, stream: u32, code: u32) {
    put_head(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

/// Appends a header block as a HEADERS frame and as many CONTINUATION frames as `max_frame`
/// needs; END_STREAM when `end_stream` (a request without a body).
pub(crate) fn put_headers(
    out: &mut Vec<u8>,
    stream: u32,
    block: &[u8],
    end_stream: bool,
    max_frame: usize,
) {
    let mut chunks = block.chunks(max_frame.max(1));
    let first = chunks.next().unwrap_or_default();
    let last = first.len() == block.len();
    let flags = if end_stream { END_STREAM } else { 0 } | if last { END_HEADERS } else { 0 };
    put_head(out, first.len(), HEADERS, flags, stream);
    out.extend_from_slice(first);
    let mut sent = first.len();
    for chunk in chunks {
        sent += chunk.len();
        let flags = if sent == block.len() { END_HEADERS } else { 0 };
        put_head(out, chunk.len(), CONTINUATION, flags, stream);
        out.extend_from_slice(chunk);
    }
}

/// Appends a DATA frame.
pub(crate) fn put_data(out: &mut Vec<u8>, stream: u32, data: &[u8], end_stream: bool) {
    put_head(
        out,
        data.len(),
        DATA,
        if end_stream { END_STREAM } else { 0 },
        stream,
    );
    out.extend_from_slice(data);
}

/// The payload of a frame with `flags` without its padding (PADDED) and, for HEADERS, its
/// priority fields (PRIORITY); None when the padding does not fit.
pub(crate) fn unpad(payload: &[u8], flags: u8, priority: bool) -> Option<&[u8]> {
    let mut body = payload;
    let mut pad = 0;
    if flags & PADDED != 0 {
        pad = usize::from(*body.first()?);
        body = &body[1..];
    }
    if priority && flags & PRIORITY_FLAG != 0 {
        body = body.get(5..)?;
    }
    body.get(..body.len().checked_sub(pad)?)
}

/// HPACK's static table (RFC 7541 Appendix A): the names, index 1 first, and the values of the
/// entries that have one.
pub(crate) const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// Appends an HPACK integer with an `prefix`-bit prefix, `first` holding the bits above it.
pub(super) fn put_int(out: &mut Vec<u8>, first: u8, prefix: u8, mut value: usize) {
    let max = (1usize << prefix) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}

/// Appends an HPACK string literal, not Huffman-coded.
fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_int(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// Appends one header field in a stateless form: the static entry when it matches name and
/// value, else a literal without indexing, its name by static index when the table has it.
pub(crate) fn put_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    let mut name_index = 0;
    for (i, (n, v)) in STATIC.iter().enumerate() {
        if n.as_bytes() == name {
            if v.as_bytes() == value {
                put_int(out, 0x80, 7, i + 1);
                return;
            }
            if name_index == 0 {
                name_index = i + 1;
            }
        }
    }
    put_int(out, 0x00, 4, name_index);
    if name_index == 0 {
        put_str(out, name);
    }
    put_str(out, value);
}

/// The status in a `:status` value.
pub(crate) fn status(value: &[u8]) -> Option<u16> {
    match value {
        [a, b, c] if value.iter().all(u8::is_ascii_digit) => {
            Some(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_header_reads_back_as_written() {
        let mut out = Vec::new();
        put_head(&mut out, 70_000, DATA, END_STREAM | PADDED, 0x7fff_fffd);
        assert_eq!(
            Head::parse(&out),
            Some(Head {
                len: 70_000,
                kind: DATA,
                flags: END_STREAM | PADDED,
                stream: 0x7fff_fffd
            })
        );
        assert_eq!(Head::parse(&out[..8]), None);
    }

    #[test]
    fn fields_encode_statelessly_and_decode_with_loona_hpack() {
        let fields: [(&[u8], &[u8]); 6] = [
            (b":method", b"GET"),
            (b":method", b"PUT"),
            (b":path", b"/api/x?y=1"),
            (b"content-length", b"3"),
            (b"x-custom", b"v"),
            (b"long", &[b'a'; 300]),
        ];
        let mut block = Vec::new();
        for (n, v) in fields {
            put_field(&mut block, n, v);
        }
        // GET is static entry 2; PUT takes :method's name (2) as a literal without indexing.
        assert_eq!(block[0], 0x82);
        assert_eq!(block[1], 0x02);
        let decoded = loona_hpack::Decoder::new().decode(&block).unwrap();
        let expected: Vec<(Vec<u8>, Vec<u8>)> = fields
            .iter()
            .map(|(n, v)| (n.to_vec(), v.to_vec()))
            .collect();
        assert_eq!(decoded, expected);
    }

    #[test]
    fn a_long_block_goes_out_as_headers_and_continuations() {
        let block: Vec<u8> = (0..40u8).collect();
        let mut out = Vec::new();
        put_headers(&mut out, 3, &block, true, 16);
        let first = Head::parse(&out).unwrap();
        assert_eq!(
            (first.kind, first.flags, first.len),
            (HEADERS, END_STREAM, 16)
        );
        let second = Head::parse(&out[25..]).unwrap();
        assert_eq!(
            (second.kind, second.flags, second.len),
            (CONTINUATION, 0, 16)
        );
        let third = Head::parse(&out[50..]).unwrap();
        assert_eq!(
            (third.kind, third.flags, third.len),
            (CONTINUATION, END_HEADERS, 8)
        );
        assert_eq!(out.len(), 3 * HEADER_LEN + 40);
        let mut short = Vec::new();
        put_headers(&mut short, 1, &block, false, 100);
        assert_eq!(Head::parse(&short).unwrap().flags, END_HEADERS);
    }

    #[test]
    fn padding_and_priority_are_stripped() {
        assert_eq!(unpad(b"abc", 0, true), Some(&b"abc"[..]));
        assert_eq!(unpad(b"\x02abcXX", PADDED, false), Some(&b"abc"[..]));
        assert_eq!(
            unpad(b"\x01\0\0\0\x01\x10abcX", PADDED | PRIORITY_FLAG, true),
            Some(&b"abc"[..])
        );
        assert_eq!(unpad(b"\x09abc", PADDED, false), None);
        assert_eq!(unpad(b"", PADDED, false), None);
    }

    #[test]
    fn statuses_are_three_digits() {
        assert_eq!(status(b"200"), Some(200));
        assert_eq!(status(b"103"), Some(103));
        assert_eq!(status(b"20"), None);
        assert_eq!(status(b"2x0"), None);
    }
}
