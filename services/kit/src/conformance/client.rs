//! A small black-box HTTP client for conformance checks: keep-alive connections, a timeout per
//! request, and answers whose error bodies can be asserted in one call ([`Answer::expect`]). It
//! speaks any of the five protocols ([`Wire`]), so the same checks run over each (HTTP/3 through
//! [`super::http3`]).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

/// The protocol a test client speaks: the generator's five, by the same names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Wire {
    /// HTTP/1.1 in plaintext.
    #[default]
    H1,
    /// HTTP/2 in plaintext, by prior knowledge.
    H2c,
    /// HTTP/1.1 over TLS (ALPN `http/1.1`).
    H1Tls,
    /// HTTP/2 over TLS (ALPN `h2`).
    H2Tls,
    /// HTTP/3 over QUIC (ALPN `h3`), on the runtimes that offer it.
    H3,
}

impl Wire {
    /// All five, plaintext HTTP/1.1 first.
    pub const ALL: [Wire; 5] = [Wire::H1, Wire::H2c, Wire::H1Tls, Wire::H2Tls, Wire::H3];

    /// Its name (`h1`, `h2c`, `h1-tls`, `h2-tls`, `h3`).
    pub fn as_str(self) -> &'static str {
        match self {
            Wire::H1 => "h1",
            Wire::H2c => "h2c",
            Wire::H1Tls => "h1-tls",
            Wire::H2Tls => "h2-tls",
            Wire::H3 => "h3",
        }
    }

    /// Whether it runs over TLS (QUIC's included).
    pub fn tls(self) -> bool {
        matches!(self, Wire::H1Tls | Wire::H2Tls | Wire::H3)
    }

    /// Whether it is HTTP/2.
    pub fn http2(self) -> bool {
        matches!(self, Wire::H2c | Wire::H2Tls)
    }
}

/// How long [`TestClient::send`] waits for an answer before calling it a hang.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// A status and a JSON body (`Value::Null` when the body is not JSON).
#[derive(Debug, Clone)]
pub struct Answer {
    /// The status.
    pub status: u16,
    /// The `Content-Type`.
    pub content_type: String,
    /// The body, parsed as JSON if it is.
    pub json: Value,
    /// The raw body.
    pub body: Bytes,
}

impl Answer {
    /// Asserts the status and, for an error (4xx, 5xx), the JSON error body: a code, a message and
    /// the `application/json` content type.
    #[track_caller]
    pub fn expect(self, status: u16, what: &str) -> Answer {
        assert_eq!(
            self.status,
            status,
            "{what}: expected {status}, got {} {}",
            self.status,
            String::from_utf8_lossy(&self.body)
        );
        if status >= 400 {
            let code = self.json["error"]["code"].as_str().unwrap_or("");
            assert!(
                !code.is_empty(),
                "{what}: error without a JSON error body: {}",
                String::from_utf8_lossy(&self.body)
            );
            assert!(
                self.json["error"]["message"].is_string(),
                "{what}: error body lacks a message"
            );
            assert_eq!(
                self.content_type, "application/json",
                "{what}: error content type"
            );
        }
        self
    }

    /// Asserts the status, the JSON error body and its code (`not_found`, `conflict`, ...).
    #[track_caller]
    pub fn expect_error(self, status: u16, code: &str, what: &str) -> Answer {
        let a = self.expect(status, what);
        assert_eq!(a.code(), code, "{what}: error code in {}", a.json);
        a
    }

    /// Asserts the error message: the same words on every runtime.
    #[track_caller]
    pub fn expect_message(self, message: &str) -> Answer {
        assert_eq!(self.message(), message, "error message in {}", self.json);
        self
    }

    /// The error code of an error answer (empty if there is none).
    pub fn code(&self) -> &str {
        self.json["error"]["code"].as_str().unwrap_or("")
    }

    /// The error message of an error answer (empty if there is none).
    pub fn message(&self) -> &str {
        self.json["error"]["message"].as_str().unwrap_or("")
    }
}

/// A small HTTP client for the checks: keep-alive, a timeout per request.
#[derive(Clone)]
pub struct TestClient {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    /// HTTP/3: the QUIC client every request goes through instead of `client`.
    quic: Option<super::http3::QuicClient>,
}

impl std::fmt::Debug for TestClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TestClient")
    }
}

impl Default for TestClient {
    /// A plaintext HTTP/1.1 client.
    fn default() -> Self {
        TestClient::speaking(Wire::H1, None)
    }
}

impl TestClient {
    /// A client that speaks `wire`; over TLS it trusts what `tls` trusts (a deployment's own
    /// certificate: [`crate::tls::ServerTls::peer_config`]), and with no `tls` no server at all.
    pub fn speaking(wire: Wire, tls: Option<Arc<rustls::ClientConfig>>) -> TestClient {
        let connector =
            crate::tls::https_connector(HttpConnector::new(), tls.as_ref(), wire.http2());
        let client = Client::builder(TokioExecutor::new())
            .http2_only(wire.http2())
            .build(connector);
        let quic = (wire == Wire::H3).then(|| super::http3::QuicClient::new(tls.as_ref()));
        TestClient { client, quic }
    }
}

impl TestClient {
    /// Sends any request; an error if the server cannot be reached or drops the connection.
    pub async fn try_send(
        &self,
        method: &str,
        url: &str,
        content_type: Option<&str>,
        body: impl Into<Bytes>,
    ) -> Result<Answer, String> {
        let mut req = hyper::Request::builder().method(method).uri(url);
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        if let Some(quic) = &self.quic {
            let req = req.body(body.into()).map_err(|e| e.to_string())?;
            let (status, content_type, body) = quic.send(req).await?;
            let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
            return Ok(Answer {
                status,
                content_type,
                json,
                body,
            });
        }
        let req = req
            .body(Full::new(body.into()))
            .map_err(|e| e.to_string())?;
        let resp = self
            .client
            .request(req)
            .await
            .map_err(|e| format!("{e:?}"))?;
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
        Ok(Answer {
            status,
            content_type,
            json,
            body,
        })
    }

    /// Sends any request; panics if there is no answer within [`ANSWER_TIMEOUT`] (a hang is a
    /// failure) or none at all.
    pub async fn send(
        &self,
        method: &str,
        url: &str,
        content_type: Option<&str>,
        body: impl Into<Bytes>,
    ) -> Answer {
        tokio::time::timeout(
            ANSWER_TIMEOUT,
            self.try_send(method, url, content_type, body),
        )
        .await
        .unwrap_or_else(|_| panic!("{method} {url}: no answer within {ANSWER_TIMEOUT:?}"))
        .unwrap_or_else(|e| panic!("{method} {url}: {e}"))
    }

    /// POSTs a JSON value; `None` when the server cannot be reached or drops the connection.
    pub async fn try_post(&self, url: &str, body: Value) -> Option<Answer> {
        self.try_send("POST", url, Some("application/json"), body.to_string())
            .await
            .ok()
    }

    /// GET.
    pub async fn get(&self, url: &str) -> Answer {
        self.send("GET", url, None, Bytes::new()).await
    }

    /// POST a JSON value.
    pub async fn post(&self, url: &str, body: Value) -> Answer {
        self.send("POST", url, Some("application/json"), body.to_string())
            .await
    }

    /// POST with no body and no content type (an action such as `/archive`).
    pub async fn post_empty(&self, url: &str) -> Answer {
        self.send("POST", url, None, Bytes::new()).await
    }

    /// PUT a JSON value.
    pub async fn put(&self, url: &str, body: Value) -> Answer {
        self.send("PUT", url, Some("application/json"), body.to_string())
            .await
    }

    /// DELETE.
    pub async fn delete(&self, url: &str) -> Answer {
        self.send("DELETE", url, None, Bytes::new()).await
    }
}
