//! The conformance client's HTTP/3 ([`super::Wire::H3`]): QUIC through quinn (rustls on ring,
//! trusting what the client's TLS trusts, ALPN `h3`) and the `h3` crate over it, one kept
//! connection per server address, opened again when the server has closed it.
//!
//! The QUIC socket is bound on the first request, on the tokio runtime that sends it, and its
//! driver runs there: a client is used from one runtime (a suite's), as a deployment's is.

use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, OnceLock};

use bytes::{Buf, Bytes};

/// The request handle of one HTTP/3 connection.
type SendRequest = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// A kept HTTP/3 connection: its request handle and the QUIC connection under it.
type Kept = (SendRequest, quinn::Connection);

/// An HTTP/3 client for the checks.
#[derive(Clone)]
pub(crate) struct QuicClient {
    config: quinn::ClientConfig,
    endpoint: Arc<OnceLock<quinn::Endpoint>>,
    kept: Arc<tokio::sync::Mutex<HashMap<SocketAddr, Kept>>>,
}

impl QuicClient {
    /// A client trusting what `tls` trusts (no server at all without it).
    pub(crate) fn new(tls: Option<&Arc<rustls::ClientConfig>>) -> QuicClient {
        let mut tls = tls.map_or_else(crate::tls::refusing_client, |c| (**c).clone());
        tls.alpn_protocols = vec![b"h3".to_vec()];
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
            .expect("the ring provider's TLS 1.3 suites serve QUIC");
        QuicClient {
            config: quinn::ClientConfig::new(Arc::new(crypto)),
            endpoint: Arc::default(),
            kept: Arc::default(),
        }
    }

    /// Sends `req` (an absolute `https://` URI) and reads the whole answer: the status, the
    /// `Content-Type` and the body.
    pub(crate) async fn send(
        &self,
        req: http::Request<Bytes>,
    ) -> Result<(u16, String, Bytes), String> {
        let (mut parts, body) = req.into_parts();
        if !body.is_empty() {
            parts
                .headers
                .insert(http::header::CONTENT_LENGTH, body.len().into());
        }
        let head = http::Request::from_parts(parts, ());
        let mut send = self.connection(head.uri()).await?;
        let mut stream = send
            .send_request(head)
            .await
            .map_err(|e| format!("HTTP/3 request: {e}"))?;
        // A server may answer before the request's end and stop reading (STOP_SENDING, RFC 9114
        // §4.1.1: an early 413, a 404 that reads no body): the answer counts, not the send.
        let sent = if body.is_empty() {
            stream.finish().await
        } else {
            match stream.send_data(body).await {
                Ok(()) => stream.finish().await,
                Err(e) => Err(e),
            }
        };
        let resp = match stream.recv_response().await {
            Ok(resp) => resp,
            Err(e) => {
                let sent = sent
                    .err()
                    .map_or(String::new(), |s| format!(" (sending: {s})"));
                return Err(format!("HTTP/3 answer: {e}{sent}"));
            }
        };
        let content_type = resp
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let mut out = Vec::new();
        while let Some(mut chunk) = stream
            .recv_data()
            .await
            .map_err(|e| format!("HTTP/3 answer body: {e}"))?
        {
            while chunk.has_remaining() {
                let part = chunk.chunk();
                out.extend_from_slice(part);
                let n = part.len();
                chunk.advance(n);
            }
        }
        Ok((resp.status().as_u16(), content_type, Bytes::from(out)))
    }

    /// The kept connection to `uri`'s server, or a new one.
    async fn connection(&self, uri: &http::Uri) -> Result<SendRequest, String> {
        let host = uri.host().ok_or_else(|| format!("{uri}: no host"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = uri.port_u16().unwrap_or(443);
        let addr = (host, port)
            .to_socket_addrs()
            .map_err(|e| format!("{uri}: {e}"))?
            .next()
            .ok_or_else(|| format!("{uri}: no address"))?;
        let mut kept = self.kept.lock().await;
        if let Some((send, quic)) = kept.get(&addr) {
            if quic.close_reason().is_none() {
                return Ok(send.clone());
            }
        }
        let endpoint = match self.endpoint.get() {
            Some(e) => e,
            None => {
                let any: SocketAddr = if addr.is_ipv6() {
                    "[::]:0".parse().expect("an address")
                } else {
                    "0.0.0.0:0".parse().expect("an address")
                };
                let made = quinn::Endpoint::client(any).map_err(|e| format!("QUIC socket: {e}"))?;
                self.endpoint.get_or_init(|| made)
            }
        };
        let quic = endpoint
            .connect_with(self.config.clone(), addr, host)
            .map_err(|e| format!("QUIC connect to {addr}: {e}"))?
            .await
            .map_err(|e| format!("QUIC connect to {addr}: {e}"))?;
        let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(quic.clone()))
            .await
            .map_err(|e| format!("HTTP/3 connection to {addr}: {e}"))?;
        tokio::spawn(async move {
            let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        });
        kept.insert(addr, (send.clone(), quic));
        Ok(send)
    }
}
