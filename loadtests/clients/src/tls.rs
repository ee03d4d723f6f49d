//! TLS for the generator's connections, through rustls with the `ring` provider named explicitly
//! (never a process-wide default), and the two things a TLS run measures besides requests: the
//! bytes on the TCP socket and the handshakes.
//!
//! - Bytes: a TLS connection's socket is wrapped in `Counted`, which counts every byte the
//!   socket takes and gives (TLS records, handshakes and alerts included) into a `WireCounter`
//!   the connection keeps. Each request takes what was counted since the last request took, so
//!   the run's byte totals are what crossed the socket, as for plaintext HTTP/1.1. Plaintext
//!   HTTP/1.1 has no wrapper: it counts its own reads and writes, as before.
//! - Handshakes: a [`Handshake`] is timed from the moment the TCP connection is made (TCP connect
//!   excluded) until rustls reports the handshake complete, and sorted full or resumed by what
//!   rustls says ([`rustls::HandshakeKind`]; a full one after a HelloRetryRequest is full).
//!   Session resumption is rustls' in-memory client session cache (TLS 1.3 tickets, TLS 1.2 ids),
//!   one cache per generator thread so threads never share a lock; `resumption: false` disables
//!   it and every connection makes a full handshake.
//! - ALPN offers exactly one protocol (`http/1.1` for h1-tls, `h2` for h2-tls); a server that
//!   picks another, or none for h2, fails the connection (and a run's start, see [`probe`]).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ClientSessionMemoryCache, ClientSessionStore, Resumption};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::failure::{classify_io, Failure};
use crate::target::Target;
use brigade_records::protocol::{Protocol, TlsClient};

/// Sessions one generator thread's client cache keeps for resumption.
const SESSION_CACHE: usize = 1024;

/// The bytes a wrapped socket has carried and no request has taken yet.
#[derive(Debug, Default)]
pub(crate) struct WireCounter {
    sent: AtomicU64,
    received: AtomicU64,
}

impl WireCounter {
    /// Hands over what was carried since the last take, from running totals kept elsewhere
    /// (a QUIC connection's): `(sent, received)`; the counter keeps the totals it last saw.
    pub(crate) fn take_totals(&self, sent: u64, received: u64) -> (u64, u64) {
        (
            sent.saturating_sub(self.sent.swap(sent, Ordering::Relaxed)),
            received.saturating_sub(self.received.swap(received, Ordering::Relaxed)),
        )
    }

    /// Hands over what was counted since the last take: `(sent, received)`.
    pub(crate) fn take(&self) -> (u64, u64) {
        (
            self.sent.swap(0, Ordering::Relaxed),
            self.received.swap(0, Ordering::Relaxed),
        )
    }
}

/// A socket whose bytes are counted into a shared [`WireCounter`].
#[derive(Debug)]
pub(crate) struct Counted<S> {
    inner: S,
    counter: Arc<WireCounter>,
}

impl<S> Counted<S> {
    /// Wraps `inner`, counting into `counter`.
    pub(crate) fn new(inner: S, counter: Arc<WireCounter>) -> Counted<S> {
        Counted { inner, counter }
    }

    /// The counter it counts into.
    pub(crate) fn counter(&self) -> &WireCounter {
        &self.counter
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = (buf.filled().len() - before) as u64;
        self.counter.received.fetch_add(n, Ordering::Relaxed);
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            self.counter.sent.fetch_add(n as u64, Ordering::Relaxed);
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = polled {
            self.counter.sent.fetch_add(n as u64, Ordering::Relaxed);
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A TLS connection over a counted TCP socket.
pub(crate) type TlsWire = TlsStream<Counted<TcpStream>>;

/// Full or resumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandshakeKind {
    /// A full handshake (certificate sent and checked), with or without a HelloRetryRequest.
    Full,
    /// A resumed session.
    Resumed,
}

/// One completed TLS handshake.
#[derive(Debug, Clone, Copy)]
pub struct Handshake {
    /// Full or resumed.
    pub kind: HandshakeKind,
    /// From the TCP connection made to the handshake complete.
    pub took: Duration,
    /// The ALPN protocol the server chose.
    pub alpn: Option<&'static str>,
}

/// The TLS client settings of a run, checked once: the config every thread clones.
pub fn client_config(protocol: Protocol, settings: &TlsClient) -> Result<Arc<ClientConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("the ring provider supports no TLS version")?;
    let builder = if settings.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate { provider }))
    } else {
        builder.with_root_certificates(trusted_roots(settings)?)
    };
    let mut config = match (&settings.client_cert, &settings.client_key) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| anyhow!("--tls-client-cert {}: {e}", cert.display()))?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| anyhow!("--tls-client-key {}: {e}", key.display()))?;
            builder
                .with_client_auth_cert(chain, key)
                .context("the client certificate and key do not go together")?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => bail!("mutual TLS needs both --tls-client-cert and --tls-client-key"),
    };
    config.alpn_protocols = protocol
        .alpn()
        .map(|a| vec![a.to_vec()])
        .unwrap_or_default();
    config.resumption = resumption(settings.resumption);
    Ok(Arc::new(config))
}

/// A connector for one generator thread: `base` with a session cache of its own.
pub(crate) fn thread_connector(base: &ClientConfig, resume: bool) -> TlsConnector {
    TlsConnector::from(thread_config(base, resume))
}

/// `base` with a session cache of its own (one generator thread's).
pub(crate) fn thread_config(base: &ClientConfig, resume: bool) -> Arc<ClientConfig> {
    let mut config = base.clone();
    config.resumption = resumption(resume);
    Arc::new(config)
}

/// A thread's session cache that counts the TLS 1.3 tickets taken from it: a client takes one
/// when it offers to resume a session, in the call that starts its handshake (for QUIC, quinn's
/// `connect`), so a count read before and after that call says whether that connection offered.
#[derive(Debug)]
pub(crate) struct Offers {
    inner: ClientSessionMemoryCache,
    taken: AtomicU64,
}

impl Offers {
    /// Tickets taken so far.
    pub(crate) fn taken(&self) -> u64 {
        self.taken.load(Ordering::Relaxed)
    }
}

impl ClientSessionStore for Offers {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: rustls::NamedGroup) {
        self.inner.set_kx_hint(server_name, group);
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<rustls::NamedGroup> {
        self.inner.kx_hint(server_name)
    }

    fn set_tls12_session(
        &self,
        server_name: ServerName<'static>,
        value: rustls::client::Tls12ClientSessionValue,
    ) {
        self.inner.set_tls12_session(server_name, value);
    }

    fn tls12_session(
        &self,
        server_name: &ServerName<'_>,
    ) -> Option<rustls::client::Tls12ClientSessionValue> {
        self.inner.tls12_session(server_name)
    }

    fn remove_tls12_session(&self, server_name: &ServerName<'static>) {
        self.inner.remove_tls12_session(server_name);
    }

    fn insert_tls13_ticket(
        &self,
        server_name: ServerName<'static>,
        value: rustls::client::Tls13ClientSessionValue,
    ) {
        self.inner.insert_tls13_ticket(server_name, value);
    }

    fn take_tls13_ticket(
        &self,
        server_name: &ServerName<'static>,
    ) -> Option<rustls::client::Tls13ClientSessionValue> {
        let ticket = self.inner.take_tls13_ticket(server_name);
        if ticket.is_some() {
            self.taken.fetch_add(1, Ordering::Relaxed);
        }
        ticket
    }
}

/// `base` with a session cache of its own (one generator thread's) that counts the tickets taken
/// from it, when `resume` (`None`: no resumption).
pub(crate) fn offering_config(
    base: &ClientConfig,
    resume: bool,
) -> (Arc<ClientConfig>, Option<Arc<Offers>>) {
    if !resume {
        return (thread_config(base, false), None);
    }
    let offers = Arc::new(Offers {
        inner: ClientSessionMemoryCache::new(SESSION_CACHE),
        taken: AtomicU64::new(0),
    });
    let mut config = base.clone();
    config.resumption = Resumption::store(offers.clone());
    (Arc::new(config), Some(offers))
}

fn resumption(on: bool) -> Resumption {
    if on {
        Resumption::in_memory_sessions(SESSION_CACHE)
    } else {
        Resumption::disabled()
    }
}

/// The web's roots, or the `ca` file's certificates in their place.
fn trusted_roots(settings: &TlsClient) -> Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    match &settings.ca {
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| anyhow!("--tls-ca {}: {e}", path.display()))?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                bail!("--tls-ca {}: no certificate in it", path.display());
            }
        }
    }
    Ok(roots)
}

/// The server name (SNI, and the name the certificate must carry) of `target`: its URL's host.
pub fn server_name(target: &Target) -> Result<ServerName<'static>> {
    ServerName::try_from(target.hostname.clone()).map_err(|_| {
        anyhow!(
            "{}: {:?} is not a TLS server name",
            target.url,
            target.hostname
        )
    })
}

/// Makes a TLS connection over `tcp`, checks the ALPN choice against `protocol`, and times it.
pub(crate) async fn handshake(
    connector: &TlsConnector,
    protocol: Protocol,
    target: &Target,
    tcp: Counted<TcpStream>,
) -> io::Result<(TlsWire, Handshake)> {
    let start = Instant::now();
    let name = target
        .server_name
        .clone()
        .ok_or_else(|| io::Error::other("no TLS server name"))?;
    let tls = connector.connect(name, tcp).await?;
    let took = start.elapsed();
    let (_, conn) = tls.get_ref();
    let kind = match conn.handshake_kind() {
        Some(rustls::HandshakeKind::Resumed) => HandshakeKind::Resumed,
        _ => HandshakeKind::Full,
    };
    let alpn = match (conn.alpn_protocol(), protocol) {
        (Some(b"h2"), Protocol::H2Tls) => Some("h2"),
        (Some(b"http/1.1"), Protocol::H1Tls) => Some("http/1.1"),
        // A server that ignores ALPN speaks HTTP/1.1.
        (None, Protocol::H1Tls) => None,
        (chosen, _) => {
            return Err(io::Error::other(AlpnMismatch {
                chosen: chosen.map(|c| String::from_utf8_lossy(c).into_owned()),
                protocol,
            }))
        }
    };
    Ok((tls, Handshake { kind, took, alpn }))
}

/// The server chose an application protocol the run does not speak.
#[derive(Debug)]
struct AlpnMismatch {
    chosen: Option<String>,
    protocol: Protocol,
}

impl std::fmt::Display for AlpnMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let offered = String::from_utf8_lossy(self.protocol.alpn().unwrap_or_default());
        match &self.chosen {
            Some(chosen) => write!(
                f,
                "the server chose ALPN protocol {chosen:?}, but --protocol {} offers only {offered:?}",
                self.protocol
            ),
            None => write!(
                f,
                "the server chose no ALPN protocol, but --protocol {} needs {offered:?}",
                self.protocol
            ),
        }
    }
}

impl std::error::Error for AlpnMismatch {}

/// Sorts a failed TLS connection: every TLS failure (a certificate refused, an alert, a wrong
/// ALPN choice) counts as a connect error; a reset or timeout as such.
pub(crate) fn classify_handshake(e: &io::Error) -> Failure {
    match classify_io(e) {
        Failure::Reset | Failure::Timeout => classify_io(e),
        _ => Failure::Connect,
    }
}

/// Makes one TLS connection to `target` before a run starts, so that what would make every
/// connection fail (a certificate not trusted, no protocol in common) stops the run at once
/// with the reason instead of filling it with connect errors. A target that does not accept TCP
/// connections is left to the run (it counts connect errors, as for plaintext).
pub async fn probe(config: &ClientConfig, protocol: Protocol, target: &Target) -> Result<()> {
    let Ok(tcp) = TcpStream::connect(target.addr).await else {
        return Ok(());
    };
    // A cache of its own: the probe's session is not resumed by the run.
    let connector = thread_connector(config, false);
    let tcp = Counted::new(tcp, Arc::default());
    match tokio::time::timeout(
        Duration::from_secs(10),
        handshake(&connector, protocol, target, tcp),
    )
    .await
    {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => {
            let text = e.to_string();
            let hint = if text.contains("certificate") || text.contains("Certificate") {
                " (a self-signed server needs --tls-insecure, or --tls-ca with its certificate)"
            } else if text.contains("NoApplicationProtocol") {
                " (the server speaks none of the ALPN protocols offered: try the other TLS protocol)"
            } else {
                ""
            };
            bail!(
                "{}: the TLS handshake for --protocol {protocol} failed: {e}{hint}",
                target.url
            )
        }
        Err(_) => bail!("{}: the TLS handshake took over 10 s", target.url),
    }
}

/// A verifier that accepts any certificate but still checks the handshake's signatures (made
/// with the certificate's key), so an insecure run does the same cryptography as a secure one.
#[derive(Debug)]
struct AnyCertificate {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
