//! What a client speaks to a target: the [`Protocol`] (HTTP/1.1 or HTTP/2, plaintext or over
//! TLS, or HTTP/3 over QUIC) and the [`TlsClient`] settings of the TLS ones (which certificates to
//! trust, a client certificate for mutual TLS, session resumption). The generator's run
//! configuration carries both and every result names the protocol; the connections themselves are
//! built in `http1` (and TLS, `tls`), `http2` and `http3`.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The wire protocol of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Protocol {
    /// Plaintext HTTP/1.1 on the generator's own connection (the default).
    #[default]
    #[serde(rename = "h1")]
    H1,
    /// Plaintext HTTP/2 by prior knowledge (no upgrade).
    #[serde(rename = "h2c")]
    H2c,
    /// HTTP/1.1 over TLS, ALPN offering only `http/1.1`.
    #[serde(rename = "h1-tls")]
    H1Tls,
    /// HTTP/2 over TLS, ALPN offering only `h2`.
    #[serde(rename = "h2-tls")]
    H2Tls,
    /// HTTP/3 over QUIC (UDP, TLS 1.3), ALPN offering only `h3`; no 0-RTT.
    #[serde(rename = "h3")]
    H3,
}

impl Protocol {
    /// Every protocol, in the order the CLI lists them.
    pub const ALL: [Protocol; 5] = [
        Protocol::H1,
        Protocol::H2c,
        Protocol::H1Tls,
        Protocol::H2Tls,
        Protocol::H3,
    ];

    /// Whether it runs over TLS (QUIC's TLS 1.3 included).
    pub fn tls(self) -> bool {
        matches!(self, Protocol::H1Tls | Protocol::H2Tls | Protocol::H3)
    }

    /// Whether it runs over QUIC (UDP) rather than TCP.
    pub fn quic(self) -> bool {
        self == Protocol::H3
    }

    /// Whether one connection carries many requests at once (HTTP/2's and HTTP/3's streams).
    pub fn multiplexed(self) -> bool {
        matches!(self, Protocol::H2c | Protocol::H2Tls | Protocol::H3)
    }

    /// Whether it speaks HTTP/2.
    pub fn http2(self) -> bool {
        matches!(self, Protocol::H2c | Protocol::H2Tls)
    }

    /// Its name on the command line and in results: `h1`, `h2c`, `h1-tls`, `h2-tls`, `h3`.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::H1 => "h1",
            Protocol::H2c => "h2c",
            Protocol::H1Tls => "h1-tls",
            Protocol::H2Tls => "h2-tls",
            Protocol::H3 => "h3",
        }
    }

    /// The requests in flight per connection a load of this protocol runs with: `streams` when
    /// multiplexed (HTTP/2, HTTP/3), 1 over HTTP/1.1.
    pub fn effective_streams(self, streams: u32) -> u32 {
        if self.multiplexed() {
            streams.max(1)
        } else {
            1
        }
    }

    /// In words for a report: `h2-tls, 4 stream(s) per connection`, `h1`.
    pub fn describe(self, streams: u32) -> String {
        if self.multiplexed() {
            format!(
                "{}, {} stream(s) per connection",
                self.name(),
                self.effective_streams(streams)
            )
        } else {
            self.name().to_owned()
        }
    }

    /// The one ALPN protocol a TLS protocol offers (`None` for plaintext).
    pub fn alpn(self) -> Option<&'static [u8]> {
        match self {
            Protocol::H1Tls => Some(b"http/1.1"),
            Protocol::H2Tls => Some(b"h2"),
            Protocol::H3 => Some(b"h3"),
            Protocol::H1 | Protocol::H2c => None,
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Protocol {
    type Err = String;

    fn from_str(text: &str) -> Result<Protocol, String> {
        Protocol::ALL
            .into_iter()
            .find(|p| p.name() == text.trim())
            .ok_or_else(|| format!("{text:?} is not a protocol (h1, h2c, h1-tls, h2-tls, h3)"))
    }
}

/// How the generator's TLS client checks the server and presents itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsClient {
    /// Accept any server certificate (for self-signed test servers); the handshake is still real.
    pub insecure: bool,
    /// Resume TLS sessions (tickets, rustls' in-memory client session cache; one cache per
    /// generator thread). Off: every connection makes a full handshake.
    pub resumption: bool,
    /// Trust the certificates in this PEM file instead of the built-in web roots (`webpki-roots`).
    pub ca: Option<PathBuf>,
    /// Mutual TLS: the client certificate chain (PEM) to present.
    pub client_cert: Option<PathBuf>,
    /// Mutual TLS: the client certificate's private key (PEM).
    pub client_key: Option<PathBuf>,
}

impl Default for TlsClient {
    fn default() -> Self {
        TlsClient {
            insecure: false,
            resumption: true,
            ca: None,
            client_cert: None,
            client_key: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_read_and_print_by_their_names() {
        for p in Protocol::ALL {
            assert_eq!(p.to_string().parse::<Protocol>(), Ok(p));
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{p}\""));
            assert_eq!(serde_json::from_str::<Protocol>(&json).unwrap(), p);
        }
        assert_eq!(Protocol::default(), Protocol::H1);
        assert!(Protocol::H2Tls.tls() && Protocol::H2Tls.http2());
        assert!(!Protocol::H2c.tls() && Protocol::H2c.http2());
        assert!(Protocol::H1Tls.tls() && !Protocol::H1Tls.http2());
        assert!(Protocol::H3.tls() && Protocol::H3.multiplexed() && !Protocol::H3.http2());
        assert!("h4".parse::<Protocol>().is_err());
    }
}
