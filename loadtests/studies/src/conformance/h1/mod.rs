//! The HTTP/1.1 suite ([`cases::CASES`]): each case's bytes on a fresh plaintext connection, every
//! answer read back until the server closes or falls silent, and the answers judged against what
//! the case's section asks ([`Expect`]). The cases of one run go out at once, one thread each, so a
//! run takes about one silence ([`SILENCE`]) however many cases there are.

pub(crate) mod cases;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use cases::{Case, CASES, SMUGGLED};

/// How long the server may stay silent before its answers are taken as all it will send.
pub(crate) const SILENCE: Duration = Duration::from_millis(1500);
/// The longest a case may take in all (a server that trickles is cut off here).
const CASE_LIMIT: Duration = Duration::from_secs(8);
/// The most of the answers read (a case needs the heads, not the bodies).
const MAX_READ: usize = 1 << 20;

/// What a conforming server does with a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expect {
    /// Answers with a status that is neither 400 nor a 5xx (501 and 505 allowed).
    Answered,
    /// Answers 400 (a MUST in the section cited), and answers nothing after it.
    Status400,
    /// Refuses: a 4xx, 501 or 505, or a close with no answer; never a success, never a hang, and
    /// nothing after it.
    Reject,
    /// As [`Expect::Reject`] for a body's framing; on a route that does not read the body, an
    /// answer followed by the close passes too (the server answered before the body, then gave
    /// up the connection whose framing it could not trust).
    RejectBody,
    /// Answers or refuses, but never a 500-class error nor a hang.
    AnsweredOrRejected,
    /// Either [`Expect::Answered`] or [`Expect::Status400`].
    AnsweredOrStatus400,
    /// At most one answer, then the server closes the connection.
    Close,
    /// At most one answer: the hidden request is never answered.
    Single,
    /// This many answers, or fewer followed by the close (a server may close a connection rather
    /// than read a body it did not need, RFC 9112 §9.6), none of them a 400 or a 500-class error.
    Count(usize),
    /// As [`Expect::Count`], the first answer to a `HEAD` (so without content).
    CountAfterHead(usize),
    /// At least one answer, none a 500-class error.
    AtLeastOne,
    /// No success: a 4xx, or a close with no answer; on a route that does not read the body, an
    /// answer followed by the close passes too.
    NoSuccess,
    /// A `100 Continue` or the final status before the body is sent, then a final answer.
    Continue,
}

/// What the server did with a case's bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Observed {
    /// The final statuses, in order (interim 1xx left out).
    pub(crate) statuses: Vec<u16>,
    /// Whether a `100 Continue` came.
    pub(crate) continued: bool,
    /// Whether the server answered (interim or final) before the body was sent (`{wait}`).
    pub(crate) early: bool,
    /// Whether the server closed the connection.
    pub(crate) closed: bool,
}

impl Observed {
    /// Whether this is what `expect` asks on a route that reads the body (`reads`) or not; else
    /// what was wrong, in words.
    pub(crate) fn judge(&self, expect: Expect, reads: bool) -> Result<(), String> {
        let s = &self.statuses;
        let first = s.first().copied();
        let error = |c: u16| c == 500 || (c > 501 && c != 505 && c < 600);
        let refusal = |c: u16| (400..500).contains(&c) || c == 501 || c == 505;
        let answered = |c: u16| c != 400 && !error(c);
        // On a route that answers before reading the body: one answer, then the close.
        let answered_then_closed = !reads && s.len() == 1 && self.closed && !error(s[0]);
        let all_or_closed =
            |n: usize| s.len() == n || (!s.is_empty() && s.len() < n && self.closed);
        let ok = match expect {
            Expect::Answered => first.is_some_and(answered),
            Expect::Status400 => first == Some(400) && s.len() == 1,
            Expect::Reject => s.len() <= 1 && first.map_or(self.closed, refusal),
            Expect::RejectBody => {
                (s.len() <= 1 && first.map_or(self.closed, refusal)) || answered_then_closed
            }
            Expect::AnsweredOrRejected => {
                !s.iter().any(|&c| error(c)) && (first.is_some() || self.closed)
            }
            Expect::AnsweredOrStatus400 => {
                first.is_some_and(|c| c == 400 || answered(c)) && s.len() == 1
            }
            Expect::Close => s.len() <= 1 && self.closed,
            Expect::Single => s.len() <= 1,
            Expect::Count(n) | Expect::CountAfterHead(n) => {
                all_or_closed(n) && s.iter().all(|&c| answered(c))
            }
            Expect::AtLeastOne => first.is_some() && !s.iter().any(|&c| error(c)),
            Expect::NoSuccess => {
                !s.iter().any(|c| (200..400).contains(c)) && (first.is_some() || self.closed)
            }
            Expect::Continue => self.early && first.is_some_and(|c| !error(c)),
        };
        if ok {
            Ok(())
        } else {
            Err(self.describe())
        }
    }

    /// What came back, in words: `answers 200, 200; left open`.
    pub(crate) fn describe(&self) -> String {
        let answers = if self.statuses.is_empty() {
            "no answer".to_owned()
        } else {
            let codes: Vec<String> = self.statuses.iter().map(u16::to_string).collect();
            format!("answers {}", codes.join(", "))
        };
        let end = if self.closed { "closed" } else { "left open" };
        let continued = if self.continued { "; 100 Continue" } else { "" };
        format!("{answers}{continued}; {end}")
    }
}

/// A case's outcome on one run.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    /// The case.
    pub(crate) case: &'static Case,
    /// None when it passed; else what the server did.
    pub(crate) failure: Option<String>,
}

/// Runs every case against `addr`, the route under test being `path` (one that reads the body
/// with `reads`), all at once.
pub(crate) fn run(addr: SocketAddr, path: &str, reads: bool) -> Vec<Outcome> {
    let picked: Vec<&'static Case> = CASES.iter().collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = picked
            .iter()
            .map(|case| {
                let bytes = fill(case, if reads { "POST" } else { "GET" }, path);
                scope.spawn(move || exchange(addr, &bytes, case.expect))
            })
            .collect();
        picked
            .iter()
            .zip(handles)
            .map(|(case, h)| {
                let observed = h
                    .join()
                    .unwrap_or_else(|_| Err("the case's thread panicked".to_owned()));
                let failure = match observed {
                    Ok(o) => o.judge(case.expect, reads).err(),
                    Err(e) => Some(e),
                };
                Outcome { case, failure }
            })
            .collect()
    })
}

/// A part of a case's request: bytes to send, or a pause for the server's first answer, or the
/// client's half-close.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Bytes(Vec<u8>),
    Wait,
    HalfClose,
}

/// A case's request with its placeholders filled, in parts.
fn fill(case: &Case, method: &str, path: &str) -> Vec<Part> {
    let smuggled = SMUGGLED.replace("{method}", method).replace("{path}", path);
    let body = case
        .body
        .replace("{smuggled_hex}", &format!("{:x}", smuggled.len()))
        .replace("{smuggled}", &smuggled);
    // The long fillers only where a case asks for them: `fill` runs for every case of every run.
    let body = if body.contains("{long_extension}") {
        body.replace("{long_extension}", &"a".repeat(1 << 20))
    } else {
        body
    };
    let length = body.replace("{wait}", "").replace("{half_close}", "").len();
    let mut head = case
        .head
        .replace("{method}", method)
        .replace("{path}", path)
        .replace("{body_len}", &length.to_string());
    if head.contains("{long_query}") {
        head = head.replace("{long_query}", &format!("q={}", "a".repeat(8190)));
    }
    let whole = format!("{head}\r\n{body}");
    let mut parts = Vec::new();
    let mut rest = whole.as_str();
    while let Some(at) = rest.find('{') {
        let (marker, part) = if rest[at..].starts_with("{wait}") {
            ("{wait}", Part::Wait)
        } else if rest[at..].starts_with("{half_close}") {
            ("{half_close}", Part::HalfClose)
        } else {
            break;
        };
        parts.push(Part::Bytes(rest.as_bytes()[..at].to_vec()));
        parts.push(part);
        rest = &rest[at + marker.len()..];
    }
    parts.push(Part::Bytes(rest.as_bytes().to_vec()));
    parts
}

/// Sends a case's parts on a fresh connection and reads every answer until the server closes or
/// stays silent for [`SILENCE`].
fn exchange(addr: SocketAddr, parts: &[Part], expect: Expect) -> Result<Observed, String> {
    let began = Instant::now();
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(3))
        .map_err(|e| format!("could not connect: {e}"))?;
    let _ = stream.set_nodelay(true);
    let mut got = Vec::new();
    let mut closed = false;
    let mut early = false;
    for part in parts {
        match part {
            // A write the server cut short (it answered and closed) is not the case's failure:
            // what it answered is read below.
            Part::Bytes(b) => {
                let _ = stream.write_all(b);
            }
            Part::HalfClose => {
                let _ = stream.shutdown(Shutdown::Write);
            }
            Part::Wait => {
                closed = read_until_silent(&mut stream, &mut got, SILENCE, began, true);
                early = !got.is_empty();
            }
        }
    }
    if !closed {
        closed = read_until_silent(&mut stream, &mut got, SILENCE, began, false);
    }
    let (statuses, continued) = parse_answers(&got, matches!(expect, Expect::CountAfterHead(_)));
    Ok(Observed {
        statuses,
        continued,
        early,
        closed,
    })
}

/// Reads into `got` until the server closes (true), stays silent for `silence`, or the case's
/// time is up; with `first`, returns as soon as anything has come.
fn read_until_silent(
    stream: &mut TcpStream,
    got: &mut Vec<u8>,
    silence: Duration,
    began: Instant,
    first: bool,
) -> bool {
    let mut buf = [0u8; 16 * 1024];
    let _ = stream.set_read_timeout(Some(silence));
    loop {
        if began.elapsed() > CASE_LIMIT || got.len() > MAX_READ {
            return false;
        }
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if first {
                    return false;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false
            }
            // A reset is the server closing (after an answer, or instead of one).
            Err(_) => return true,
        }
    }
}

/// The final statuses of the answers in `bytes`, in order, and whether a `100 Continue` came;
/// `head_first`: the first answer is to a `HEAD` (no content whatever its framing says).
fn parse_answers(bytes: &[u8], head_first: bool) -> (Vec<u16>, bool) {
    let (mut statuses, mut continued, mut at) = (Vec::new(), false, 0);
    while at < bytes.len() {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut response = httparse::Response::new(&mut headers);
        let Ok(httparse::Status::Complete(len)) = response.parse(&bytes[at..]) else {
            break;
        };
        let code = response.code.unwrap_or(0);
        at += len;
        if (100..200).contains(&code) {
            continued |= code == 100;
            continue;
        }
        let header = |name: &str| {
            response
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
        };
        let no_content = (head_first && statuses.is_empty()) || code == 204 || code == 304;
        statuses.push(code);
        if no_content {
            continue;
        }
        if header("transfer-encoding").is_some_and(|t| t.ends_with("chunked")) {
            match skip_chunked(&bytes[at..]) {
                Some(n) => at += n,
                None => break,
            }
        } else if let Some(n) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
            at += n;
        } else {
            break; // delimited by the close: nothing after it
        }
    }
    (statuses, continued)
}

/// The length of a chunked body at the start of `bytes` (trailers included), if it is whole.
fn skip_chunked(bytes: &[u8]) -> Option<usize> {
    let mut at = 0;
    loop {
        let line_end = bytes[at..].windows(2).position(|w| w == b"\r\n")? + at;
        let size_text = std::str::from_utf8(&bytes[at..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        at = line_end + 2;
        if size == 0 {
            // Trailers, then the empty line.
            loop {
                let end = bytes[at..].windows(2).position(|w| w == b"\r\n")? + at;
                let empty = end == at;
                at = end + 2;
                if empty {
                    return Some(at);
                }
            }
        }
        at += size + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suite_has_the_cases_it_promises_each_citing_a_section() {
        assert!(CASES.len() >= 60, "{} cases", CASES.len());
        let smuggling = CASES.iter().filter(|c| c.smuggling).count();
        assert!(smuggling >= 20, "{smuggling} smuggling cases");
        let mut ids: Vec<&str> = CASES.iter().map(|c| c.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), CASES.len(), "ids are unique");
        for c in CASES {
            assert!(c.section.starts_with("RFC "), "{}: {}", c.id, c.section);
            assert!(
                c.head.ends_with("\r\n") || c.head.ends_with('\n'),
                "{}",
                c.id
            );
        }
    }

    #[test]
    fn the_reliability_doc_states_the_suites_counts_and_the_http3_suites_too() {
        let doc = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reliability.md"),
        )
        .unwrap();
        let smuggling = CASES.iter().filter(|c| c.smuggling).count();
        for stated in [
            format!("**{} HTTP/1.1 cases**", CASES.len()),
            format!("**{smuggling} smuggling cases**"),
            format!("**{} HTTP/3 cases**", crate::conformance::h3::CASES.len()),
        ] {
            assert!(
                doc.contains(&stated),
                "docs/reliability.md does not say {stated}"
            );
        }
    }

    #[test]
    fn placeholders_are_filled_and_the_length_is_the_bodys() {
        let case = CASES.iter().find(|c| c.id == "smuggling/cl-te").unwrap();
        let parts = fill(case, "GET", "/x");
        let [Part::Bytes(bytes)] = parts.as_slice() else {
            panic!("{parts:?}")
        };
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(!text.contains('{'), "{text}");
        let body = "0\r\n\r\nGET /x HTTP/1.1\r\nHost: localhost\r\n\r\n";
        assert!(
            text.ends_with(&format!(
                "Content-Length: {}\r\nTransfer-Encoding: chunked\r\n\r\n{body}",
                body.len()
            )),
            "{text}"
        );
        let te_cl = CASES.iter().find(|c| c.id == "smuggling/te-cl").unwrap();
        let Part::Bytes(bytes) = &fill(te_cl, "GET", "/x")[0] else {
            panic!("bytes first")
        };
        let hidden = SMUGGLED.replace("{method}", "GET").replace("{path}", "/x");
        let chunk = format!("\r\n\r\n{:x}\r\n{hidden}\r\n0\r\n", hidden.len());
        assert!(String::from_utf8_lossy(bytes).contains(&chunk));
        let wait = CASES
            .iter()
            .find(|c| c.id == "expect/100-continue")
            .unwrap();
        let parts = fill(wait, "GET", "/x");
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[1], Part::Wait);
        assert_eq!(parts[2], Part::Bytes(b"hello".to_vec()));
    }

    #[test]
    fn answers_are_counted_through_their_framing() {
        let two = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nno\r\n0\r\n\r\n";
        assert_eq!(parse_answers(two, false), (vec![200, 404], true));
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(parse_answers(head, true).0, vec![200, 200]);
        assert_eq!(parse_answers(head, false).0, vec![200]);
    }

    #[test]
    fn judging_follows_each_expectation() {
        let seen = |statuses: &[u16], closed| Observed {
            statuses: statuses.to_vec(),
            closed,
            ..Observed::default()
        };
        assert!(seen(&[200], true).judge(Expect::Close, true).is_ok());
        assert!(seen(&[200], false).judge(Expect::Close, true).is_err());
        assert!(seen(&[200, 200], true).judge(Expect::Close, true).is_err());
        assert!(seen(&[], true).judge(Expect::Reject, true).is_ok());
        assert!(
            seen(&[], false).judge(Expect::Reject, true).is_err(),
            "a hang is no refusal"
        );
        assert!(seen(&[200], true).judge(Expect::Reject, true).is_err());
        assert!(seen(&[400], false).judge(Expect::Status400, true).is_ok());
        assert!(seen(&[404], false).judge(Expect::Status400, true).is_err());
        assert!(seen(&[405, 404], false)
            .judge(Expect::Count(2), true)
            .is_ok());
        assert!(seen(&[200, 400], false)
            .judge(Expect::Count(2), true)
            .is_err());
        assert!(seen(&[500], false)
            .judge(Expect::AnsweredOrRejected, true)
            .is_err());
        assert!(seen(&[501], false).judge(Expect::Answered, true).is_ok());
        assert!(
            seen(&[405], true).judge(Expect::Count(2), true).is_ok(),
            "closed instead"
        );
        assert!(seen(&[405], false).judge(Expect::Count(2), true).is_err());
        assert!(seen(&[200], true).judge(Expect::RejectBody, false).is_ok());
        assert!(seen(&[200], true).judge(Expect::RejectBody, true).is_err());
        assert!(seen(&[200], false)
            .judge(Expect::RejectBody, false)
            .is_err());
        let err = seen(&[200, 200], false)
            .judge(Expect::Single, true)
            .unwrap_err();
        assert_eq!(err, "answers 200, 200; left open");
    }
}
