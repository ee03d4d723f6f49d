//! The QUIC endpoint every HTTP/3 stack here stands on (`--protocol h3`): the shared loop's
//! (`hyper_loop::quic`, h3 + h3-quinn) and xitca-web's own (`xitca/h3.rs`, xitca-http's h3
//! dispatcher). One UDP socket per service on the TCP listener's port number, its buffers asked at
//! [`UDP_BUFFER`]; the kit's TLS configuration with ALPN `h3` and no early data (0-RTT off: a
//! replayed request cannot repeat a write); the kit's limits as QUIC transport parameters (the
//! HTTP/2 stream limit as concurrent bidirectional streams, the HTTP/2 windows as the stream and
//! connection receive windows, an idle timeout as a backstop); quinn's segmentation offload (GSO).
//! What each stack does over it (head limits, keep-alive, drain) is its own module's.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use brigade_kit::limits::ServerLimits;
use http::{header, HeaderMap, HeaderValue};

use crate::TlsConfig;

/// The size asked of the UDP socket's receive and send buffers: a burst of 1,200-byte datagrams
/// from many connections must not overflow the receive queue between two reads.
pub(crate) const UDP_BUFFER: usize = 4 << 20;

/// `H3_NO_ERROR` (RFC 9114 §8.1): how a drained connection is closed.
pub(crate) const H3_NO_ERROR: u32 = 0x100;

/// The QUIC endpoint's configuration from the kit's TLS (ALPN `h3`, no early data) and limits.
pub(crate) fn server_config(
    tls: &TlsConfig,
    limits: &ServerLimits,
) -> anyhow::Result<quinn::ServerConfig> {
    let mut tls = (**tls).clone();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    // 0-RTT off: quinn takes early data only when this is u32::MAX.
    tls.max_early_data_size = 0;
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
        .map_err(|e| anyhow::anyhow!("the TLS configuration cannot serve QUIC: {e}"))?;
    let h2 = &limits.http2;
    let mut transport = quinn::TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(h2.max_concurrent_streams.into())
        .stream_receive_window(h2.initial_stream_window.into())
        .receive_window(h2.initial_connection_window.into())
        .max_idle_timeout(Some(quinn::IdleTimeout::try_from(idle_backstop(limits))?))
        .enable_segmentation_offload(true);
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(Arc::new(transport));
    // No address-validation tokens (NEW_TOKEN) for a client's next connection: what quinn does
    // without its `bloom` feature, which xitca-io's quinn (default features) turns on for every
    // stack in the build; pinned here so that a build with or without xitca serves QUIC alike.
    let mut tokens = quinn::ValidationTokenConfig::default();
    tokens.sent(0).log(Arc::new(quinn::NoneTokenLog));
    config.validation_token_config(tokens);
    Ok(config)
}

/// QUIC's idle timeout: no packet at all for this long and the connection is gone (a peer gone
/// silently, which no FIN tells of). Twice the longest of the kit's timers, so that it never
/// cuts a request a timer is still timing (a stalled body gets its 408 first); the keep-alive
/// limit between requests is kept by each stack's connection loop.
fn idle_backstop(limits: &ServerLimits) -> Duration {
    let longest = limits
        .header_read_timeout
        .max(limits.keep_alive_timeout)
        .max(limits.body_read_timeout);
    longest * 2
}

/// A UDP socket bound to `addr` with its buffers sized ([`UDP_BUFFER`]).
pub(crate) fn bind_udp(addr: SocketAddr) -> anyhow::Result<std::net::UdpSocket> {
    use anyhow::Context as _;
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    // Asked, not promised: the kernel caps each at its `*mem_max` (the sizes it gave are logged).
    let _ = socket.set_recv_buffer_size(UDP_BUFFER);
    let _ = socket.set_send_buffer_size(UDP_BUFFER);
    socket
        .bind(&addr.into())
        .with_context(|| format!("Failed to bind UDP {addr} for QUIC"))?;
    socket.set_nonblocking(true)?;
    tracing::debug!(
        %addr,
        recv_buffer = socket.recv_buffer_size().unwrap_or(0),
        send_buffer = socket.send_buffer_size().unwrap_or(0),
        "QUIC socket bound"
    );
    Ok(socket.into())
}

/// The QUIC endpoint on `socket` ([`bind_udp`]) under `config` ([`server_config`]). Its driver
/// (the socket's reads and writes) is spawned on the tokio runtime this is called on.
pub(crate) fn endpoint(
    socket: std::net::UdpSocket,
    config: quinn::ServerConfig,
) -> std::io::Result<quinn::Endpoint> {
    quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(config),
        socket,
        Arc::new(quinn::TokioRuntime),
    )
}

/// The `Alt-Svc` value answers over TCP carry to announce HTTP/3 on `port` (RFC 7838: "HTTP/3 on
/// this host, this port, for a day").
pub(crate) fn alt_svc(port: u16) -> Option<HeaderValue> {
    HeaderValue::try_from(format!("h3=\":{port}\"; ma=86400")).ok()
}

/// An answer's head as HTTP/3 sends it: its length named (`length`, the body's exact size where
/// known) as hyper names it over HTTP/2, and the connection-specific headers HTTP/3 forbids
/// (RFC 9114 §4.2) left out.
pub(crate) fn answer_head(headers: &mut HeaderMap, length: Option<u64>) {
    headers.remove(header::CONNECTION);
    headers.remove(header::TRANSFER_ENCODING);
    if let Some(n) = length {
        headers
            .entry(header::CONTENT_LENGTH)
            .or_insert_with(|| HeaderValue::from(n));
    }
}
