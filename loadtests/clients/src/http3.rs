//! HTTP/3 for `h3`: QUIC through quinn (rustls on ring, the run's TLS client with ALPN `h3`, no
//! 0-RTT) and the `h3` crate over it (`h3-quinn`). A connection is used exactly as an HTTP/2 one
//! ([`crate::http2`]): the stream loops of a user (or paced connection) share it, each request is
//! a stream, and a broken connection is replaced by the first loop that notices.
//!
//! - Sockets: one UDP socket per generator thread (and address family), its buffers asked at
//!   `UDP_BUFFER`, every QUIC connection of the thread on it (quinn tells them apart by
//!   connection id), made on the first dial, inside the thread's runtime; quinn's segmentation
//!   offload where the kernel has it.
//! - Bytes: what crossed the UDP socket for the connection (quinn's per-connection counts of UDP
//!   payload: QUIC headers, TLS, frames, HTTP/3 and QPACK), taken per request as for TCP.
//! - Handshakes: timed from the first packet to the handshake's end, full or resumed (TLS 1.3
//!   session tickets from the thread's cache; 0-RTT off). quinn does not say whether the server
//!   took a ticket, so a handshake counts as resumed when the client offered one (taken from the
//!   cache in quinn's `connect`, see `crate::tls::Offers`); a server refuses one only when it no
//!   longer knows the key that made it (a restart), and the server's CPU per handshake shows which.
//! - Windows: 1 MiB a stream, 4 MiB a connection, as the HTTP/2 client advertises.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use anyhow::{bail, Result};
use bytes::{Buf, Bytes};

use crate::failure::{classify_io, Failure};
use crate::target::Target;
use crate::tls::{Handshake, HandshakeKind, Offers};

/// The window each stream advertises: 1 MiB, as HTTP/2's (`http2::STREAM_WINDOW`, a test holds them
/// equal; `http2` imports this module, so it is not imported back).
pub(crate) const STREAM_WINDOW: u32 = 1 << 20;
/// The window the whole connection advertises: 4 MiB, as HTTP/2's.
pub(crate) const CONNECTION_WINDOW: u32 = 4 << 20;

/// The size asked of a generator thread's UDP socket buffers: a burst of answers from many
/// connections must not overflow the receive queue between two reads.
pub(crate) const UDP_BUFFER: usize = 4 << 20;

/// The request handle of one HTTP/3 connection.
pub type SendRequest = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// How a generator thread opens QUIC connections: the client configuration and its socket.
#[derive(Clone)]
pub(crate) struct QuicDialer {
    config: quinn::ClientConfig,
    /// The thread's session cache, counting its tickets taken (`None`: no resumption).
    offers: Option<Arc<Offers>>,
    /// The thread's endpoints (IPv4, IPv6), bound on first use.
    endpoints: Arc<[OnceLock<quinn::Endpoint>; 2]>,
}

impl QuicDialer {
    /// A dialer on `base` (the run's checked config, ALPN `h3`) with a session cache of its own
    /// when `resume`, or why QUIC cannot use it.
    pub(crate) fn new(base: &rustls::ClientConfig, resume: bool) -> Result<QuicDialer> {
        let (tls, offers) = crate::tls::offering_config(base, resume);
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
            .map_err(|e| anyhow::anyhow!("the TLS client cannot speak QUIC: {e}"))?;
        let mut transport = quinn::TransportConfig::default();
        transport
            .stream_receive_window(STREAM_WINDOW.into())
            .receive_window(CONNECTION_WINDOW.into())
            // A handshake nobody answers fails within this (quinn's default is 30 s).
            .max_idle_timeout(Some(quinn::IdleTimeout::from(quinn::VarInt::from_u32(
                10_000,
            ))))
            .enable_segmentation_offload(true);
        let mut config = quinn::ClientConfig::new(Arc::new(crypto));
        config.transport_config(Arc::new(transport));
        Ok(QuicDialer {
            config,
            offers,
            endpoints: Arc::default(),
        })
    }

    /// The thread's endpoint for `to`'s address family, bound now if it is not yet.
    fn endpoint(&self, to: SocketAddr) -> std::io::Result<&quinn::Endpoint> {
        let slot = &self.endpoints[usize::from(to.is_ipv6())];
        if let Some(endpoint) = slot.get() {
            return Ok(endpoint);
        }
        let endpoint = client_endpoint(to)?;
        Ok(slot.get_or_init(|| endpoint))
    }
}

impl QuicDialer {
    /// Closes every connection of this dialer's endpoints (`H3_NO_ERROR`) and waits, briefly,
    /// for the closes to go out: a QUIC server learns of a client gone only this way (no FIN), so
    /// a run that ends without it leaves the server's connections open until they idle out.
    pub(crate) async fn close(&self) {
        for endpoint in self.endpoints.iter().filter_map(OnceLock::get) {
            endpoint.close(0x100u32.into(), b"");
            let wait = std::time::Duration::from_secs(1);
            let _ = tokio::time::timeout(wait, endpoint.wait_idle()).await;
        }
    }
}

/// A client endpoint on a fresh UDP socket of `to`'s family, its buffers sized.
fn client_endpoint(to: SocketAddr) -> std::io::Result<quinn::Endpoint> {
    use socket2::{Domain, Protocol, Socket, Type};
    let any: SocketAddr = if to.is_ipv6() {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    };
    let socket = Socket::new(Domain::for_address(any), Type::DGRAM, Some(Protocol::UDP))?;
    // Asked, not promised: the kernel caps each at its `*mem_max`.
    let _ = socket.set_recv_buffer_size(UDP_BUFFER);
    let _ = socket.set_send_buffer_size(UDP_BUFFER);
    socket.bind(&any.into())?;
    socket.set_nonblocking(true)?;
    quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        None,
        socket.into(),
        Arc::new(quinn::TokioRuntime),
    )
}

/// Opens a QUIC connection to `target` and HTTP/3 over it (its driver spawned on the thread's
/// runtime): the request handle, the connection (for its byte counts and state) and the handshake.
pub(crate) async fn open(
    dialer: &QuicDialer,
    target: &Target,
) -> Result<(SendRequest, quinn::Connection, Handshake), Failure> {
    let endpoint = dialer.endpoint(target.addr).map_err(|e| classify_io(&e))?;
    let taken = || dialer.offers.as_ref().map_or(0, |o| o.taken());
    let before = taken();
    let start = Instant::now();
    let connecting = endpoint
        .connect_with(dialer.config.clone(), target.addr, &target.hostname)
        .map_err(|_| Failure::Connect)?;
    let offered = taken() > before;
    let quic = connecting.await.map_err(|e| classify_connection(&e))?;
    let took = start.elapsed();
    let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(quic.clone()))
        .await
        .map_err(|_| Failure::Connect)?;
    tokio::spawn(async move {
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    let handshake = Handshake {
        kind: if offered {
            HandshakeKind::Resumed
        } else {
            HandshakeKind::Full
        },
        took,
        alpn: Some("h3"),
    };
    Ok((send, quic, handshake))
}

/// One request and its whole answer on an open connection: the status and, when asked, the body.
pub(crate) async fn round_trip(
    send: &mut SendRequest,
    request: &http::Request<()>,
    body: &Bytes,
    want_body: bool,
) -> Result<(u16, Option<Bytes>), h3::error::StreamError> {
    let mut stream = send.send_request(request.clone()).await?;
    // A server may answer before the request's end and stop reading (STOP_SENDING, RFC 9114
    // §4.1.1: an early 413, a 404 that reads no body): the answer counts, not the send.
    let sent = if body.is_empty() {
        stream.finish().await
    } else {
        match stream.send_data(body.clone()).await {
            Ok(()) => stream.finish().await,
            Err(e) => Err(e),
        }
    };
    let response = match stream.recv_response().await {
        Ok(response) => response,
        Err(e) => return Err(sent.err().unwrap_or(e)),
    };
    let status = response.status().as_u16();
    let mut kept = want_body.then(Vec::new);
    while let Some(mut chunk) = stream.recv_data().await? {
        if let Some(kept) = kept.as_mut() {
            while chunk.has_remaining() {
                let part = chunk.chunk();
                kept.extend_from_slice(part);
                let n = part.len();
                chunk.advance(n);
            }
        }
    }
    Ok((status, kept.map(Bytes::from)))
}

/// Sorts a failed HTTP/3 exchange: a lost connection (closed, idled out, or going away) or a
/// reset stream is a reset, anything else (a protocol error, a head too big) other. (h3's error
/// variants are non-exhaustive: matched by kind, their contents unread.)
pub(crate) fn classify(e: &h3::error::StreamError) -> Failure {
    use h3::error::StreamError;
    match e {
        StreamError::ConnectionError { .. }
        | StreamError::RemoteTerminate { .. }
        | StreamError::RemoteClosing { .. } => Failure::Reset,
        _ => Failure::Other,
    }
}

/// Whether the connection is still usable after `e` (only its stream failed).
pub(crate) fn keeps_connection(e: &h3::error::StreamError) -> bool {
    !matches!(
        e,
        h3::error::StreamError::ConnectionError { .. }
            | h3::error::StreamError::RemoteClosing { .. }
    )
}

/// Sorts a failed QUIC connect: a timed-out handshake (nothing answered) or a refused one is a
/// connect error, as a TCP connect refused is.
fn classify_connection(e: &quinn::ConnectionError) -> Failure {
    match e {
        quinn::ConnectionError::Reset => Failure::Reset,
        _ => Failure::Connect,
    }
}

/// How long the probe waits for a QUIC handshake.
const PROBE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Makes one QUIC connection to `target` before a run starts, so that what would make every
/// connection fail (a certificate not trusted, no `h3` in common, nothing serving QUIC there)
/// stops the run at once with the reason.
pub async fn probe(tls: &rustls::ClientConfig, target: &Target) -> Result<()> {
    let dialer = QuicDialer::new(tls, false)?;
    let endpoint = dialer.endpoint(target.addr)?;
    let connecting = endpoint.connect_with(dialer.config.clone(), target.addr, &target.hostname)?;
    let done = tokio::time::timeout(PROBE_WAIT, connecting).await;
    let result = match done {
        Ok(Ok(quic)) => {
            quic.close(0u32.into(), b"");
            Ok(())
        }
        // UDP has no refused connection: silence is all a server without QUIC gives.
        Ok(Err(quinn::ConnectionError::TimedOut)) | Err(_) => bail!(
            "{}: nothing answered QUIC on UDP port {} within {PROBE_WAIT:?} (is the server \
             serving --protocol h3? actix-web and ntex offer no h3)",
            target.url,
            target.addr.port()
        ),
        Ok(Err(e)) => {
            let text = e.to_string();
            let hint = if text.contains("certificate") || text.contains("Certificate") {
                " (a self-signed server needs --tls-insecure, or --tls-ca with its certificate)"
            } else if text.contains("application protocol") || text.contains("0x178") {
                " (the server speaks QUIC but not h3)"
            } else {
                ""
            };
            bail!(
                "{}: the QUIC handshake for --protocol h3 failed: {e}{hint}",
                target.url
            )
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), endpoint.wait_idle()).await;
    result
}
