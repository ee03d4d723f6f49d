//! Why a request failed, in the kinds a result counts (connect, timeout, reset, other), and how an
//! I/O error sorts into them.

use std::io;

/// Why a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The TCP connection could not be made.
    Connect,
    /// No full answer within the timeout.
    Timeout,
    /// The connection was reset or closed before the answer was complete.
    Reset,
    /// Anything else: a malformed answer, an unexpected status outside 4xx/5xx, a failed capture.
    Other,
}

/// Sorts an I/O error into a failure kind.
pub(crate) fn classify_io(e: &io::Error) -> Failure {
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
