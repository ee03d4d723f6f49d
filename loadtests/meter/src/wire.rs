//! The protocol a measurement speaks, at both ends of the wire: the serve flags that make a
//! server speak it ([`crate::servers::launch::serve_protocol_args`]) and the generator settings
//! that make every load of the measurement speak it ([`Wire::apply`]). Compare's isolated runs,
//! side-by-side windows and fixtures all take their [`LoadConfig`] through [`Wire::apply`], so a
//! comparison cannot measure one protocol in one place and another elsewhere.

use brigade_load::engine::LoadConfig;
use brigade_records::protocol::{Protocol, TlsClient};
use serde::{Deserialize, Serialize};

/// What a measurement's loads speak: the protocol, and HTTP/2's (or HTTP/3's) requests in flight per connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wire {
    /// The protocol (`h1` plaintext HTTP/1.1 by default).
    pub protocol: Protocol,
    /// HTTP/2: requests in flight per connection (`--streams`); HTTP/1.1 ignores it.
    pub streams: u32,
}

impl Default for Wire {
    fn default() -> Self {
        Wire {
            protocol: Protocol::H1,
            streams: 1,
        }
    }
}

impl Wire {
    /// `protocol` with `streams` requests in flight per HTTP/2 connection.
    pub fn new(protocol: Protocol, streams: u32) -> Wire {
        Wire { protocol, streams }
    }

    /// The streams a load of this protocol runs with: `streams` over HTTP/2, 1 over HTTP/1.1.
    pub fn effective_streams(&self) -> u32 {
        self.protocol.effective_streams(self.streams)
    }

    /// `config` speaking this protocol: its protocol and streams set, and over TLS the server's
    /// self-signed certificate accepted (compare's servers make their own, `--tls-self-signed`;
    /// the handshake is still real). Sessions are resumed, as a browser resumes them.
    pub fn apply(&self, config: LoadConfig) -> LoadConfig {
        LoadConfig {
            protocol: self.protocol,
            streams: self.effective_streams(),
            tls: TlsClient {
                insecure: self.protocol.tls(),
                ..config.tls.clone()
            },
            ..config
        }
    }

    /// In words for a report: `h2-tls, 4 streams per connection`, `h1`.
    pub fn describe(&self) -> String {
        self.protocol.describe(self.streams)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_load_speaks_the_protocol_and_trusts_the_self_signed_server_only_over_tls() {
        for protocol in Protocol::ALL {
            let config = Wire::new(protocol, 8).apply(LoadConfig::default());
            assert_eq!(config.protocol, protocol);
            assert_eq!(config.tls.insecure, protocol.tls(), "{protocol}");
            assert!(config.tls.resumption, "{protocol}: sessions resumed");
            let streams = if protocol.multiplexed() { 8 } else { 1 };
            assert_eq!(config.streams, streams, "{protocol}");
        }
        let plain = Wire::default().apply(LoadConfig::default());
        assert_eq!(plain, LoadConfig::default(), "h1 changes nothing");
    }

    #[test]
    fn a_wire_says_its_streams_only_where_it_has_them() {
        assert_eq!(
            Wire::new(Protocol::H2Tls, 4).describe(),
            "h2-tls, 4 stream(s) per connection"
        );
        assert_eq!(Wire::new(Protocol::H1Tls, 4).describe(), "h1-tls");
    }
}
