//! The client services use to call each other: pooled keep-alive HTTP/1.1 connections, a connect
//! timeout and a whole-request timeout, so a peer that is down or slow costs at most the timeout and
//! becomes a 503 (cannot be reached) or a 502 (answered something unusable), never a hang. The
//! timeout is never more than what is left of the current request's own budget
//! ([`crate::deadline`]), and the call tells the peer how long it waits (`x-brigade-budget-ms`), so
//! timeouts do not stack from service to service. Every call carries the W3C `traceparent` of the
//! request it is made for, and, when the service is built with metrics, is timed and counted.
//! A peer at an `https://` URL is called over TLS (HTTP/1.1 by ALPN) with the client configuration
//! the service was given ([`crate::tls::ServerTls::peer_config`]: a server on TLS trusts its own
//! certificate's chain, the way services behind one certificate call each other).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;

use crate::deadline;
use crate::http::ApiError;
use crate::limits::{ServeProtocol, ServerLimits};
use crate::observe::{trace, Metrics, Stopwatch};

/// The largest answer body read from a peer: a bigger one is a 502, not a process that keeps
/// allocating (the services' answers are a few KiB; a list page at its limit, well under a MiB).
pub const MAX_PEER_BODY_BYTES: usize = 16 * 1024 * 1024;

/// Timeouts for calls to peers.
#[derive(Debug, Clone, Copy)]
pub struct PeerTimeouts {
    /// How long to wait for a TCP connection.
    pub connect: Duration,
    /// How long a whole request may take, connection included.
    pub request: Duration,
}

impl Default for PeerTimeouts {
    fn default() -> Self {
        PeerTimeouts {
            connect: Duration::from_millis(500),
            request: Duration::from_secs(2),
        }
    }
}

/// A peer's answer.
#[derive(Debug, Clone)]
pub struct PeerReply {
    /// The status.
    pub status: u16,
    /// The body.
    pub body: Bytes,
}

/// Named peers (`waiter` → `http://127.0.0.1:8081`) and a pooled client to reach them.
#[derive(Clone)]
pub struct PeerClient {
    client: Client<HttpsConnector<HttpConnector>, Empty<Bytes>>,
    peers: HashMap<String, String>,
    timeouts: PeerTimeouts,
    metrics: Option<Arc<Metrics>>,
}

/// How a service speaks to its peers: what its own server speaks, so services behind the same
/// flags reach each other (`serve --protocol h2c` calls its peers by h2c, a TLS server over TLS).
#[derive(Debug, Clone, Default)]
pub struct PeerTransport {
    /// TLS for `https://` peers ([`crate::tls::ServerTls::peer_config`]).
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// HTTP/2 (by prior knowledge on `http://`, by ALPN on `https://`) instead of HTTP/1.1.
    pub http2: bool,
}

impl PeerTransport {
    /// How the services of a server under `limits` (with `tls`, its TLS) call their peers: over
    /// TLS trusting its certificate's chain when it serves TLS, by h2c when it serves h2c only.
    pub fn of_server(
        limits: &ServerLimits,
        tls: Option<&crate::tls::ServerTls>,
    ) -> Result<PeerTransport, crate::tls::TlsError> {
        Ok(PeerTransport {
            tls: tls.map(|t| t.peer_config()).transpose()?,
            http2: !limits.tls.on() && limits.protocol == ServeProtocol::H2c,
        })
    }
}

impl std::fmt::Debug for PeerClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerClient")
            .field("peers", &self.peers)
            .field("timeouts", &self.timeouts)
            .finish()
    }
}

impl PeerClient {
    /// A client for `peers` (name → base URL), over plaintext HTTP/1.1.
    pub fn new(peers: HashMap<String, String>, timeouts: PeerTimeouts) -> PeerClient {
        PeerClient::over(peers, timeouts, &PeerTransport::default())
    }

    /// A client for `peers` (name → base URL): `http://` peers over plaintext, `https://` ones over
    /// TLS with the transport's configuration (without one, an `https://` peer cannot be called:
    /// a 503), HTTP/2 by prior knowledge or ALPN when the transport says so.
    pub fn over(
        peers: HashMap<String, String>,
        timeouts: PeerTimeouts,
        transport: &PeerTransport,
    ) -> PeerClient {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(timeouts.connect));
        let connector =
            crate::tls::https_connector(connector, transport.tls.as_ref(), transport.http2);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(256)
            .http2_only(transport.http2)
            .build(connector);
        let peers = peers
            .into_iter()
            .map(|(k, v)| (k, v.trim_end_matches('/').to_string()))
            .collect();
        PeerClient {
            client,
            peers,
            timeouts,
            metrics: None,
        }
    }

    /// The same client, its calls timed and counted in `metrics`.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> PeerClient {
        self.metrics = Some(metrics);
        self
    }

    /// The base URL of peer `name`, if configured.
    pub fn base(&self, name: &str) -> Option<&str> {
        self.peers.get(name).map(String::as_str)
    }

    /// `GET {peer}{path}`, with the current request's `traceparent` and the time the call waits
    /// (`x-brigade-budget-ms`: the request timeout, or less when the current request has less
    /// left). A peer that cannot be reached in time is 503; a broken answer is 502.
    pub async fn get(&self, peer: &str, path: &str) -> Result<PeerReply, ApiError> {
        let base = self
            .base(peer)
            .ok_or_else(|| ApiError::internal(format!("peer {peer} is not configured")))?;
        let uri: hyper::Uri = format!("{base}{path}")
            .parse()
            .map_err(|e| ApiError::internal(format!("peer {peer} URL: {e}")))?;
        let wait = deadline::bounded(self.timeouts.request);
        let mut request = hyper::Request::get(uri).header(
            deadline::BUDGET_HEADER,
            deadline::budget_for_peer(wait).as_millis().to_string(),
        );
        if let Some(t) = trace::current() {
            request = request.header("traceparent", t.child_header());
        }
        let request = request
            .body(Empty::new())
            .map_err(|e| ApiError::internal(format!("peer {peer} request: {e}")))?;
        let started = Stopwatch::start();
        let result = if wait.is_zero() {
            Err(ApiError::unavailable(format!(
                "no time left to ask the {peer} service: the request's budget is spent"
            )))
        } else {
            self.send(peer, request, wait).await
        };
        if let Some(m) = &self.metrics {
            let outcome = result.as_ref().map(|r| r.status).map_err(|e| e.code);
            m.peer_call(peer, started.elapsed(), outcome);
        }
        if let Err(e) = &result {
            let trace_id = trace::current().map(|t| t.to_string()).unwrap_or_default();
            tracing::warn!(peer, path, %trace_id, error = %e, "peer call failed");
        }
        result
    }

    async fn send(
        &self,
        peer: &str,
        request: hyper::Request<Empty<Bytes>>,
        wait: Duration,
    ) -> Result<PeerReply, ApiError> {
        let call = async {
            let resp = self.client.request(request).await.map_err(|e| {
                if e.is_connect() {
                    ApiError::unavailable(format!("{peer} service cannot be reached"))
                } else {
                    ApiError::bad_gateway(format!("{peer} service failed: {e}"))
                }
            })?;
            let status = resp.status().as_u16();
            let body = Limited::new(resp.into_body(), MAX_PEER_BODY_BYTES)
                .collect()
                .await
                .map_err(|e| {
                    if e.is::<http_body_util::LengthLimitError>() {
                        ApiError::bad_gateway(format!(
                            "{peer} service answered more than {MAX_PEER_BODY_BYTES} bytes"
                        ))
                    } else {
                        ApiError::bad_gateway(format!("{peer} service broke off its answer: {e}"))
                    }
                })?
                .to_bytes();
            Ok(PeerReply { status, body })
        };
        match tokio::time::timeout(wait, call).await {
            Ok(r) => r,
            Err(_) => Err(ApiError::unavailable(format!(
                "{peer} service did not answer within {} ms",
                wait.as_millis()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A peer that answers every connection with `head` and then `body_bytes` zero bytes.
    async fn peer(head: String, body_bytes: usize) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let head = head.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = socket.read(&mut buf).await;
                    let _ = socket.write_all(head.as_bytes()).await;
                    let chunk = vec![0u8; 64 * 1024];
                    let mut left = body_bytes;
                    while left > 0 {
                        let n = left.min(chunk.len());
                        if socket.write_all(&chunk[..n]).await.is_err() {
                            return;
                        }
                        left -= n;
                    }
                });
            }
        });
        base
    }

    fn client(base: String) -> PeerClient {
        let peers = HashMap::from([("big".to_owned(), base)]);
        PeerClient::new(peers, PeerTimeouts::default())
    }

    #[tokio::test]
    async fn a_peer_answer_over_the_cap_is_a_502_and_one_under_it_is_read() {
        let too_big = MAX_PEER_BODY_BYTES + 1;
        let announced = peer(
            format!("HTTP/1.1 200 OK\r\nContent-Length: {too_big}\r\n\r\n"),
            too_big,
        )
        .await;
        let err = client(announced).get("big", "/x").await.unwrap_err();
        assert_eq!(err.code.status(), 502, "{err:?}");
        assert!(err.message.contains("more than"), "{err:?}");
        // Chunked, no length said: cut off as it passes the cap.
        let chunked = peer(
            format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{too_big:x}\r\n"),
            too_big,
        )
        .await;
        let err = client(chunked).get("big", "/x").await.unwrap_err();
        assert_eq!(err.code.status(), 502, "{err:?}");
        let fine = peer("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n".to_owned(), 5).await;
        let reply = client(fine).get("big", "/x").await.unwrap();
        assert_eq!((reply.status, reply.body.len()), (200, 5));
    }

    /// A peer that answers each request with its own head as the body.
    async fn echo_peer() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 8192];
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    let head = String::from_utf8_lossy(&buf[..n]).to_string();
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{head}",
                        head.len()
                    );
                    let _ = socket.write_all(answer.as_bytes()).await;
                });
            }
        });
        base
    }

    /// The budget the peer was told, in milliseconds.
    fn budget_sent(reply: &PeerReply) -> u64 {
        let head = String::from_utf8_lossy(&reply.body).to_lowercase();
        let line = head
            .lines()
            .find_map(|l| l.strip_prefix("x-brigade-budget-ms: "))
            .unwrap_or_else(|| panic!("no budget header in {head}"));
        line.trim().parse().unwrap()
    }

    #[tokio::test]
    async fn a_call_tells_the_peer_its_budget_and_never_waits_past_the_callers() {
        let peers = HashMap::from([("echo".to_owned(), echo_peer().await)]);
        let client = PeerClient::new(
            peers,
            PeerTimeouts {
                connect: Duration::from_millis(500),
                request: Duration::from_secs(2),
            },
        );
        // No budget of its own: the peer is told the call's timeout, less the margin.
        let reply = client.get("echo", "/x").await.unwrap();
        assert_eq!(budget_sent(&reply), 1950);
        // Inside a request with 300 ms left, the call waits and tells at most that.
        let reply = deadline::scope(Some(Duration::from_millis(300)), client.get("echo", "/x"))
            .await
            .unwrap();
        let told = budget_sent(&reply);
        assert!(told > 0 && told < 300, "{told}");
        // A spent budget is a 503 at once, without asking.
        let err = deadline::scope(Some(Duration::ZERO), client.get("echo", "/x"))
            .await
            .unwrap_err();
        assert_eq!(err.code.status(), 503, "{err:?}");
        assert!(err.message.contains("budget is spent"), "{err:?}");
    }
}
