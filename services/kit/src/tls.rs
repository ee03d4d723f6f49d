//! TLS for every runtime, built once here: one rustls version (0.23), one crypto provider (ring,
//! named explicitly, never a process-wide default), the same certificate, protocol versions and
//! ALPN list on every runtime, so a comparison over TLS compares runtimes and not TLS set-ups.
//!
//! Why ring: it builds with a C compiler alone (aws-lc-rs, rustls' default, needs CMake on some
//! targets), the MongoDB driver already brings it, and both runtimes with their own stacks
//! (actix-web, ntex) take a rustls `ServerConfig` as it is. Why ECDSA P-256 by default: it is what
//! a self-signed certificate from `rcgen` is, what most public certificates for services are
//! today, and its signatures cost a fraction of RSA-2048's, so a handshake measures the runtime
//! and not the key.
//!
//! The ALPN list under TLS is `h2, http/1.1` on every runtime: actix-web and ntex put those two
//! there themselves, whatever a configuration says, so the kit does the same for the others; a
//! client picks by what it offers (the generator's `h1-tls` offers only `http/1.1`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::ServerConfig;
use serde::{Deserialize, Serialize};

/// The ALPN protocols a TLS server offers, in order of preference (the same on every runtime).
pub const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// The crypto provider every TLS server and client in Brigade uses.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Where a server's certificate comes from, and whether it asks clients for theirs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsSettings {
    /// The certificate chain (PEM) and its private key (PEM); with `self_signed`, neither.
    pub cert_and_key: Option<(PathBuf, PathBuf)>,
    /// Make an ECDSA P-256 certificate for `localhost` and `127.0.0.1` at start.
    pub self_signed: bool,
    /// Mutual TLS: clients must present a certificate signed by a CA in this PEM file.
    pub client_ca: Option<PathBuf>,
}

/// What a report says of a server's TLS (the settings' summary, copied with the limits).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TlsMode {
    /// Plaintext.
    #[default]
    Off,
    /// A certificate made at start (ECDSA P-256, self-signed).
    SelfSigned,
    /// A certificate from files.
    Files,
    /// A certificate made at start, clients' certificates required.
    SelfSignedMutual,
    /// A certificate from files, clients' certificates required.
    FilesMutual,
}

impl TlsMode {
    /// Whether connections are TLS.
    pub fn on(self) -> bool {
        self != TlsMode::Off
    }
}

/// A TLS setting that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("TLS: {0}")]
pub struct TlsError(String);

fn fail(what: impl std::fmt::Display) -> TlsError {
    TlsError(what.to_string())
}

impl TlsSettings {
    /// Whether any TLS is asked for.
    pub fn enabled(&self) -> bool {
        self.self_signed || self.cert_and_key.is_some()
    }

    /// The summary reports carry.
    pub fn mode(&self) -> TlsMode {
        match (self.enabled(), self.self_signed, self.client_ca.is_some()) {
            (false, _, _) => TlsMode::Off,
            (true, true, false) => TlsMode::SelfSigned,
            (true, true, true) => TlsMode::SelfSignedMutual,
            (true, false, false) => TlsMode::Files,
            (true, false, true) => TlsMode::FilesMutual,
        }
    }

    /// The server's TLS, or None for plaintext: the rustls configuration every runtime serves
    /// with (TLS 1.3 and 1.2, the ring provider, [`ALPN`], session tickets and a session cache,
    /// so resumed handshakes are possible on every runtime), and what it was made from.
    pub fn load(&self) -> Result<Option<ServerTls>, TlsError> {
        if !self.enabled() {
            if self.client_ca.is_some() {
                return Err(fail(
                    "--tls-client-ca needs a server certificate (--tls-cert/--tls-key or --tls-self-signed)",
                ));
            }
            return Ok(None);
        }
        if self.self_signed && self.cert_and_key.is_some() {
            return Err(fail("--tls-self-signed or --tls-cert/--tls-key, not both"));
        }
        let (chain, key) = match &self.cert_and_key {
            Some((cert, key)) => (read_chain(cert)?, read_key(key)?),
            None => self_signed()?,
        };
        let builder = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(fail)?;
        let builder = match &self.client_ca {
            None => builder.with_no_client_auth(),
            Some(ca) => {
                let mut roots = rustls::RootCertStore::empty();
                for c in read_chain(ca)? {
                    roots.add(c).map_err(fail)?;
                }
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                        .build()
                        .map_err(fail)?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder
            .with_single_cert(chain.clone(), key.clone_key())
            .map_err(|e| fail(format!("the certificate and key do not go together: {e}")))?;
        config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
        config.ticketer = rustls::crypto::ring::Ticketer::new().map_err(fail)?;
        Ok(Some(ServerTls {
            config: Arc::new(config),
            chain,
            key,
            mutual: self.client_ca.is_some(),
        }))
    }
}

/// A server's TLS: the configuration its runtime serves with, and what it was made from.
#[derive(Debug)]
pub struct ServerTls {
    /// What every runtime serves with.
    pub config: Arc<ServerConfig>,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    mutual: bool,
}

impl ServerTls {
    /// The client configuration the server's services call their peers with: HTTP/1.1 by ALPN,
    /// trusting the certificates of the server's own chain (a self-signed certificate, or a chain
    /// given with its intermediates), presenting that chain as the client's under mutual TLS.
    pub fn peer_config(&self) -> Result<Arc<rustls::ClientConfig>, TlsError> {
        let mut roots = rustls::RootCertStore::empty();
        for c in &self.chain {
            // A certificate that is no usable anchor is skipped; the others still are.
            let _ = roots.add(c.clone());
        }
        let builder = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(fail)?
            .with_root_certificates(roots);
        let config = if self.mutual {
            builder
                .with_client_auth_cert(self.chain.clone(), self.key.clone_key())
                .map_err(fail)?
        } else {
            builder.with_no_client_auth()
        };
        // (The peer client's connector puts `http/1.1` in the ALPN list itself.)
        Ok(Arc::new(config))
    }
}

/// A client connector for `http://` and `https://` URLs over `http` (its timeouts set by the
/// caller): TLS with `tls` (without it, no server is trusted), ALPN offering only `h2` when
/// `http2`, else only `http/1.1`; `TCP_NODELAY` on. The peer client's and the conformance client's.
pub(crate) fn https_connector(
    mut http: HttpConnector,
    tls: Option<&Arc<rustls::ClientConfig>>,
    http2: bool,
) -> HttpsConnector<HttpConnector> {
    http.enforce_http(false);
    // HTTP/2 writes a request's HEADERS and DATA frames (and TLS its records) as they come: with
    // Nagle's algorithm on, the second small write waits for the server's delayed ACK, about 40 ms
    // a request with a body.
    http.set_nodelay(true);
    let tls = tls.map_or_else(refusing_client, |c| (**c).clone());
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http();
    if http2 {
        builder.enable_http2().wrap_connector(http)
    } else {
        builder.enable_http1().wrap_connector(http)
    }
}

/// A client configuration that trusts no server: what a peer client without TLS settings holds
/// (an `https://` peer then fails to connect, a 503, rather than being trusted blindly).
pub(crate) fn refusing_client() -> rustls::ClientConfig {
    rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth()
}

/// A certificate chain from a PEM file.
fn read_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let chain = CertificateDer::pem_file_iter(path)
        .map_err(|e| fail(format!("{}: {e}", path.display())))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(format!("{}: {e}", path.display())))?;
    if chain.is_empty() {
        return Err(fail(format!("{}: no certificate in it", path.display())));
    }
    Ok(chain)
}

/// A private key (PKCS#8, PKCS#1 or SEC1) from a PEM file.
fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| fail(format!("{}: {e}", path.display())))
}

/// A self-signed ECDSA P-256 certificate for the names a local client uses.
fn self_signed() -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let names = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
    let made = rcgen::generate_simple_self_signed(names).map_err(fail)?;
    let key = PrivateKeyDer::try_from(made.signing_key.serialize_der()).map_err(fail)?;
    Ok((vec![made.cert.der().clone()], key))
}

/// A self-signed certificate and its key as PEM text (for tests and for clients that must trust it).
pub fn self_signed_pem() -> Result<(String, String), TlsError> {
    let names = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
    let made = rcgen::generate_simple_self_signed(names).map_err(fail)?;
    Ok((made.cert.pem(), made.signing_key.serialize_pem()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plaintext_has_no_config_and_a_client_ca_alone_is_refused() {
        assert!(TlsSettings::default().load().unwrap().is_none());
        let only_ca = TlsSettings {
            client_ca: Some("ca.pem".into()),
            ..TlsSettings::default()
        };
        assert!(only_ca.load().is_err());
    }

    #[test]
    fn a_self_signed_server_offers_h2_then_http11_and_resumes_sessions() {
        let s = TlsSettings {
            self_signed: true,
            ..TlsSettings::default()
        };
        assert_eq!(s.mode(), TlsMode::SelfSigned);
        let config = s.load().unwrap().unwrap().config;
        assert_eq!(
            config.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        assert!(config.ticketer.enabled());
    }

    #[test]
    fn certificates_from_files_load_and_a_mismatched_key_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = self_signed_pem().unwrap();
        let (_, other_key) = self_signed_pem().unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let (c, k, o) = (
            write("c.pem", &cert),
            write("k.pem", &key),
            write("o.pem", &other_key),
        );
        let good = TlsSettings {
            cert_and_key: Some((c.clone(), k)),
            client_ca: Some(c.clone()),
            ..TlsSettings::default()
        };
        assert_eq!(good.mode(), TlsMode::FilesMutual);
        assert!(good.load().unwrap().is_some());
        let bad = TlsSettings {
            cert_and_key: Some((c, o)),
            ..TlsSettings::default()
        };
        let e = bad.load().unwrap_err().to_string();
        assert!(e.contains("do not go together"), "{e}");
    }
}
