//! How connections are opened: a [`Dialer`] holds a run's protocol and, per thread, its TLS
//! connector (with its own session cache) or its QUIC client; it opens the TCP connection (no
//! delay) and makes the TLS handshake over a socket that counts its bytes, so every protocol's
//! connection starts the same way.

use anyhow::Result;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::failure::Failure;
use crate::http3;
use crate::target::Target;
use crate::tls::{self, Handshake, TlsWire};
use brigade_records::protocol::Protocol;

/// How a thread opens connections: the protocol, and for TLS the thread's connector (its own
/// session cache).
#[derive(Clone)]
pub struct Dialer {
    /// The run's protocol.
    pub protocol: Protocol,
    /// TLS over TCP: the thread's connector.
    pub(crate) tls: Option<TlsConnector>,
    /// `h3`: the thread's QUIC client (None for the TCP protocols, or when the run's TLS client
    /// cannot speak QUIC, which the run's start reports).
    pub(crate) quic: Option<http3::QuicDialer>,
}

impl std::fmt::Debug for Dialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dialer")
            .field("protocol", &self.protocol)
            .finish()
    }
}

impl Dialer {
    /// Plaintext HTTP/1.1.
    pub fn plain() -> Dialer {
        Dialer {
            protocol: Protocol::H1,
            tls: None,
            quic: None,
        }
    }

    /// A dialer for `protocol`; `tls` (the run's checked config, needed by TLS protocols) is
    /// cloned with a session cache of this dialer's own when `resume`.
    pub fn new(protocol: Protocol, tls: Option<&rustls::ClientConfig>, resume: bool) -> Dialer {
        let quic = tls
            .filter(|_| protocol.quic())
            .and_then(|c| http3::QuicDialer::new(c, resume).ok());
        Dialer {
            protocol,
            tls: tls
                .filter(|_| protocol.tls() && !protocol.quic())
                .map(|c| tls::thread_connector(c, resume)),
            quic,
        }
    }

    /// Ends what the dialer opened that outlives its tasks: its QUIC connections (see
    /// `http3::QuicDialer::close`); nothing for TCP, whose sockets close when dropped.
    pub async fn close(&self) {
        if let Some(quic) = &self.quic {
            quic.close().await;
        }
    }

    /// Opens a TCP connection, no delay.
    pub async fn tcp(&self, target: &Target) -> Result<TcpStream, Failure> {
        let stream = TcpStream::connect(target.addr)
            .await
            .map_err(|_| Failure::Connect)?;
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }

    /// Opens a TCP connection and, for a TLS protocol, makes the TLS handshake over it (its bytes
    /// counted on the socket): the stream and the handshake.
    pub(crate) async fn wire(
        &self,
        target: &Target,
    ) -> Result<(Stream, Option<Handshake>), Failure> {
        let tcp = self.tcp(target).await?;
        match &self.tls {
            // Nothing more on plaintext: a connection per request (`--no-keepalive`) is the
            // generator's hardest path, every allocation here is paid per request.
            None => Ok((Stream::Plain(tcp), None)),
            Some(connector) => {
                let tcp = tls::Counted::new(tcp, std::sync::Arc::default());
                let (wire, handshake) = tls::handshake(connector, self.protocol, target, tcp)
                    .await
                    .map_err(|e| tls::classify_handshake(&e))?;
                Ok((Stream::Tls(Box::new(wire)), Some(handshake)))
            }
        }
    }
}

/// A connection's byte stream: a plain socket, or TLS over a counted one.
pub(crate) enum Stream {
    /// Plaintext: reads and writes counted by the connection.
    Plain(TcpStream),
    /// TLS: bytes counted on the socket, below rustls.
    Tls(Box<TlsWire>),
}
