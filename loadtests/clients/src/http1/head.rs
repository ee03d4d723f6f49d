//! An answer's head, parsed with `httparse`: its status, and what frames its body (a length,
//! chunks, or the connection's end) and whether the connection may carry another request.

/// Most header lines read in an answer.
const MAX_HEADERS: usize = 100;

/// Longest answer head read, bytes.
pub(crate) const MAX_HEAD: usize = 64 * 1024;

/// How an answer's body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body (an answer to HEAD, 1xx, 204, 304).
    Empty,
    /// `content-length` bytes.
    Length(u64),
    /// `transfer-encoding: chunked`.
    Chunked,
    /// Everything until the server closes the connection.
    UntilClose,
}

/// What the head of an answer says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    /// Its length in bytes, blank line included.
    pub(crate) len: usize,
    /// The status.
    pub(crate) status: u16,
    /// How the body is delimited.
    pub(crate) framing: Framing,
    /// Whether the connection may carry another request after this answer.
    pub(crate) reusable: bool,
}

/// An answer's head that is not HTTP/1.x.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadHead;

/// Parses the head at the start of `buf`: `Ok(None)` while it is incomplete.
pub(crate) fn parse(buf: &[u8], head_request: bool) -> Result<Option<Head>, BadHead> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let len = match response.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => return Ok(None),
        _ => return Err(BadHead),
    };
    let status = response.code.ok_or(BadHead)?;
    let mut length = None;
    let mut chunked = false;
    let mut close = response.version == Some(0);
    for h in response.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let text = std::str::from_utf8(h.value).map_err(|_| BadHead)?.trim();
            let n: u64 = text.parse().map_err(|_| BadHead)?;
            if length.is_some_and(|m| m != n) {
                return Err(BadHead);
            }
            length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            // Chunked when it is the last coding applied.
            chunked = h
                .value
                .rsplit(|&b| b == b',')
                .next()
                .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if h.name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                if token.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if token.eq_ignore_ascii_case(b"keep-alive") && response.version == Some(0) {
                    close = false;
                }
            }
        }
    }
    let framing = if head_request || (100..200).contains(&status) || status == 204 || status == 304
    {
        Framing::Empty
    } else if chunked {
        Framing::Chunked
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        Framing::UntilClose
    };
    Ok(Some(Head {
        len,
        status,
        framing,
        reusable: !close && framing != Framing::UntilClose,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_say_their_framing_and_whether_the_connection_stays() {
        let h = |text: &str| parse(text.as_bytes(), false).unwrap().unwrap();
        let ok = h("HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello");
        assert_eq!(
            (ok.status, ok.framing, ok.reusable, ok.len),
            (200, Framing::Length(13), true, 39)
        );
        let chunked = h("HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, Chunked\r\n\r\n");
        assert_eq!(chunked.framing, Framing::Chunked);
        let close = h("HTTP/1.1 503 x\r\ncontent-length: 0\r\nConnection: close\r\n\r\n");
        assert_eq!((close.status, close.reusable), (503, false));
        let old = h("HTTP/1.0 200 OK\r\ncontent-length: 1\r\n\r\n");
        assert!(!old.reusable);
        let old_kept = h("HTTP/1.0 200 OK\r\ncontent-length: 1\r\nconnection: keep-alive\r\n\r\n");
        assert!(old_kept.reusable);
        let until_close = h("HTTP/1.1 200 OK\r\n\r\n");
        assert_eq!(
            (until_close.framing, until_close.reusable),
            (Framing::UntilClose, false)
        );
        assert_eq!(h("HTTP/1.1 204 No Content\r\n\r\n").framing, Framing::Empty);
        assert_eq!(
            parse(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n", true)
                .unwrap()
                .unwrap()
                .framing,
            Framing::Empty
        );
        assert_eq!(parse(b"HTTP/1.1 200 OK\r\ncontent-le", false), Ok(None));
        assert_eq!(parse(b"SSH-2.0-OpenSSH\r\n\r\n", false), Err(BadHead));
        assert_eq!(
            parse(b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n", false),
            Err(BadHead)
        );
    }
}
