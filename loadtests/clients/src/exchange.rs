//! What one request/answer exchange gives, on any protocol, and the bytes a connection carried.

use bytes::Bytes;

use crate::failure::Failure;
use crate::tls::Handshake;

/// What one request/answer exchange gave.
#[derive(Debug)]
pub struct Exchange {
    /// The status, or why there is none.
    pub result: Result<u16, Failure>,
    /// The body, when asked for and answered.
    pub body: Option<Bytes>,
    /// The TLS handshake this exchange made, when it opened a TLS connection.
    pub handshake: Option<Handshake>,
}

impl Exchange {
    /// An exchange that failed, with the handshake it made, if any.
    pub fn failed(failure: Failure, handshake: Option<Handshake>) -> Exchange {
        Exchange {
            result: Err(failure),
            body: None,
            handshake,
        }
    }
}

/// The bytes counted on a connection slot so far; a counter pair survives reconnects via `carry`.
#[derive(Debug, Default, Clone, Copy)]
pub struct WireCount {
    /// Bytes written.
    pub sent: u64,
    /// Bytes read.
    pub received: u64,
}
