//! An incremental decoder for `Transfer-Encoding: chunked` bodies: it is fed whatever the socket
//! gave, says how much of it belongs to the body, hands the payload on (when the caller keeps the
//! body), and knows when the last chunk and the trailers have passed.

/// Longest chunk-size line (size, extensions) or trailer line accepted.
const MAX_LINE: usize = 4096;

/// Where the decoder is in the chunked stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading the hex size; `digits` read so far.
    Size { digits: u8 },
    /// Past the size, in extensions, up to the line's end.
    Extension,
    /// Expecting the LF that ends the size line.
    SizeLf,
    /// Inside a chunk's payload; bytes left.
    Data(u64),
    /// Expecting the CR after a payload.
    DataCr,
    /// Expecting the LF after a payload.
    DataLf,
    /// At the start of a trailer line (or of the final empty line).
    TrailerStart,
    /// Inside a trailer line.
    Trailer,
    /// Expecting the LF of the final empty line.
    EndLf,
    /// The body is complete.
    Done,
}

/// A malformed chunked body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Malformed;

/// Decodes one chunked body.
#[derive(Debug, Clone)]
pub(crate) struct Chunked {
    state: State,
    size: u64,
    line: usize,
}

impl Default for Chunked {
    fn default() -> Self {
        Chunked::new()
    }
}

impl Chunked {
    /// A decoder at the start of a body.
    pub(crate) fn new() -> Chunked {
        Chunked {
            state: State::Size { digits: 0 },
            size: 0,
            line: 0,
        }
    }

    /// Whether the whole body (last chunk and trailers) has been read.
    pub(crate) fn done(&self) -> bool {
        self.state == State::Done
    }

    /// Consumes bytes from `input` until the body ends or the input does; returns how many bytes
    /// belonged to the body (the rest, if any, follows it). Payload bytes are appended to `keep`.
    pub(crate) fn feed(
        &mut self,
        input: &[u8],
        mut keep: Option<&mut Vec<u8>>,
    ) -> Result<usize, Malformed> {
        let mut i = 0;
        while i < input.len() {
            match self.state {
                State::Done => return Ok(i),
                State::Data(left) => {
                    let take = (input.len() - i).min(usize::try_from(left).unwrap_or(usize::MAX));
                    if let Some(keep) = keep.as_deref_mut() {
                        keep.extend_from_slice(&input[i..i + take]);
                    }
                    i += take;
                    let left = left - take as u64;
                    self.state = if left == 0 {
                        State::DataCr
                    } else {
                        State::Data(left)
                    };
                }
                _ => {
                    self.framing_byte(input[i])?;
                    i += 1;
                }
            }
        }
        Ok(i)
    }

    /// Reads one byte of the framing around the payload: a size line, the line ends, trailers.
    // Inlined: it runs once per framing byte of every chunked answer.
    #[inline]
    fn framing_byte(&mut self, b: u8) -> Result<(), Malformed> {
        match self.state {
            State::Size { digits } => match hex(b) {
                Some(d) => {
                    if digits >= 15 {
                        return Err(Malformed);
                    }
                    self.size = self.size * 16 + u64::from(d);
                    self.state = State::Size { digits: digits + 1 };
                }
                None if digits == 0 => return Err(Malformed),
                None => match b {
                    b'\r' => self.state = State::SizeLf,
                    b'\n' => self.end_size_line(),
                    b';' | b' ' | b'\t' => self.state = State::Extension,
                    _ => return Err(Malformed),
                },
            },
            State::Extension => {
                self.line += 1;
                if self.line > MAX_LINE {
                    return Err(Malformed);
                }
                match b {
                    b'\r' => self.state = State::SizeLf,
                    b'\n' => self.end_size_line(),
                    _ => {}
                }
            }
            State::SizeLf => {
                if b != b'\n' {
                    return Err(Malformed);
                }
                self.end_size_line();
            }
            State::DataCr => {
                self.state = match b {
                    b'\r' => State::DataLf,
                    b'\n' => State::Size { digits: 0 },
                    _ => return Err(Malformed),
                };
            }
            State::DataLf => {
                if b != b'\n' {
                    return Err(Malformed);
                }
                self.state = State::Size { digits: 0 };
            }
            State::TrailerStart => {
                self.line = 0;
                self.state = match b {
                    b'\r' => State::EndLf,
                    b'\n' => State::Done,
                    _ => State::Trailer,
                };
            }
            State::Trailer => {
                self.line += 1;
                if self.line > MAX_LINE {
                    return Err(Malformed);
                }
                if b == b'\n' {
                    self.state = State::TrailerStart;
                }
            }
            State::EndLf => {
                if b != b'\n' {
                    return Err(Malformed);
                }
                self.state = State::Done;
            }
            // `feed` handles the payload and the end itself and never calls this in them.
            State::Done | State::Data(_) => {}
        }
        Ok(())
    }

    /// The size line has ended: a payload follows, or, after the zero-size chunk, the trailers.
    fn end_size_line(&mut self) {
        self.line = 0;
        self.state = if self.size == 0 {
            State::TrailerStart
        } else {
            State::Data(self.size)
        };
        self.size = 0;
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(wire: &[u8], piece: usize) -> (Vec<u8>, usize, bool) {
        let mut d = Chunked::new();
        let mut body = Vec::new();
        let mut used = 0;
        for chunk in wire.chunks(piece) {
            used += d.feed(chunk, Some(&mut body)).unwrap();
            if d.done() {
                break;
            }
        }
        (body, used, d.done())
    }

    #[test]
    fn a_chunked_body_decodes_whatever_the_read_sizes() {
        let wire = b"5\r\nHello\r\n8;ext=1\r\n, World!\r\n0\r\nx-trailer: 1\r\n\r\nNEXT";
        for piece in 1..=wire.len() {
            let (body, used, done) = decode_in_pieces(wire, piece);
            assert!(done, "piece {piece}");
            assert_eq!(body, b"Hello, World!", "piece {piece}");
            assert_eq!(
                used,
                wire.len() - 4,
                "piece {piece}: the bytes after the body stay"
            );
        }
    }

    #[test]
    fn an_unfinished_or_malformed_body_is_told_apart() {
        let (_, _, done) = decode_in_pieces(b"5\r\nHel", 2);
        assert!(!done);
        assert_eq!(Chunked::new().feed(b"zz\r\n", None), Err(Malformed));
        assert_eq!(Chunked::new().feed(b"2\r\nabX", None), Err(Malformed));
        assert_eq!(
            Chunked::new().feed(b"ffffffffffffffffff\r\n", None),
            Err(Malformed)
        );
    }
}
