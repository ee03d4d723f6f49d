//! A small HTTP/1.1 server for the generator's tests: it runs on its own thread and runtime, listens
//! on 127.0.0.1 (a free port), and answers with whatever the test's async handler says. With
//! [`ServerOptions`] it also speaks HTTP/2 (hyper-util's auto builder: HTTP/1.1 or HTTP/2 by
//! prior knowledge) and TLS (a self-signed ECDSA P-256 certificate made by rcgen, the ALPN
//! protocols the test chooses), and counts connections and requests in flight per connection.

#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::sync::Notify;

/// A request as the handler sees it.
#[derive(Debug, Clone)]
pub struct Req {
    pub method: String,
    pub path: String,
    pub body: Bytes,
    /// `HTTP/1.1` or `HTTP/2.0`.
    pub version: String,
}

/// What the handler answers.
#[derive(Debug, Clone)]
pub enum Answer {
    /// A status and a body.
    Reply(u16, String),
    /// Close the connection without answering.
    Hangup,
}

type Handler = Arc<dyn Fn(Req) -> Pin<Box<dyn Future<Output = Answer> + Send>> + Send + Sync>;

/// A running test server.
pub struct TestServer {
    pub addr: SocketAddr,
    /// Whether it speaks TLS.
    pub tls: bool,
    /// Connections accepted so far.
    pub connections: Arc<AtomicU64>,
    /// The most requests one connection had in flight at once.
    pub max_in_flight: Arc<AtomicU64>,
    /// The PEM of the CA that issued its certificate (with [`ServerOptions::issued_by_ca`]).
    pub ca_pem: Option<String>,
    /// A client certificate and its key (PEM) the CA issued, for mutual TLS.
    pub client_pem: Option<(String, String)>,
}

impl TestServer {
    /// `http://127.0.0.1:PORT`, or `https://` for a TLS server.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }
}

/// How a test server speaks.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// HTTP/1.1 and HTTP/2 (by prior knowledge or ALPN) instead of HTTP/1.1 alone.
    pub http2: bool,
    /// TLS with a self-signed certificate, choosing among these ALPN protocols.
    pub tls_alpn: Option<Vec<&'static str>>,
    /// TLS: a certificate issued by a test CA (see [`TestServer::ca_pem`]) instead of a
    /// self-signed one.
    pub issued_by_ca: bool,
    /// TLS: require a client certificate issued by the test CA (mutual TLS; implies
    /// `issued_by_ca`).
    pub client_auth: bool,
    /// HTTP/2 alone, with these limits (instead of HTTP/1.1 and HTTP/2 with hyper's defaults).
    pub http2_limits: Option<Http2Limits>,
}

/// The limits an HTTP/2 test server sets, for the client to keep to.
#[derive(Debug, Clone, Copy)]
pub struct Http2Limits {
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub max_streams: u32,
    /// The window each stream advertises (SETTINGS_INITIAL_WINDOW_SIZE).
    pub stream_window: u32,
    /// A GOAWAY (hyper's graceful shutdown) once a connection has taken this many requests.
    pub goaway_after: Option<u64>,
}

impl ServerOptions {
    /// HTTP/1.1 and HTTP/2, plaintext or (with `tls`) over TLS offering both by ALPN.
    pub fn both(tls: bool) -> ServerOptions {
        ServerOptions {
            http2: true,
            tls_alpn: tls.then(|| vec!["h2", "http/1.1"]),
            issued_by_ca: false,
            client_auth: false,
            http2_limits: None,
        }
    }
}

/// Starts a server; it lives until the test process ends.
pub fn serve<F, Fut>(handler: F) -> TestServer
where
    F: Fn(Req) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Answer> + Send + 'static,
{
    serve_with(ServerOptions::default(), handler)
}

/// A TLS server's certificates: its own, and when issued by a test CA, the CA and a client
/// certificate the CA issued (for mutual TLS).
struct Pki {
    cert: rustls::pki_types::CertificateDer<'static>,
    key: rustls::pki_types::PrivateKeyDer<'static>,
    ca: Option<rustls::pki_types::CertificateDer<'static>>,
    ca_pem: Option<String>,
    client_pem: Option<(String, String)>,
}

fn pkcs8(key: &rcgen::KeyPair) -> rustls::pki_types::PrivateKeyDer<'static> {
    rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into())
}

/// Fresh ECDSA P-256 certificates for 127.0.0.1: self-signed, or issued by a new test CA.
fn pki(by_ca: bool) -> Pki {
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    if !by_ca {
        return Pki {
            cert: params.self_signed(&key).unwrap().der().clone(),
            key: pkcs8(&key),
            ca: None,
            ca_pem: None,
            client_pem: None,
        };
    }
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = rcgen::CertifiedIssuer::self_signed(ca, rcgen::KeyPair::generate().unwrap()).unwrap();
    let client_key = rcgen::KeyPair::generate().unwrap();
    let client = rcgen::CertificateParams::new(vec!["client.test".to_string()])
        .unwrap()
        .signed_by(&client_key, &ca)
        .unwrap();
    Pki {
        cert: params.signed_by(&key, &ca).unwrap().der().clone(),
        key: pkcs8(&key),
        ca: Some(ca.der().clone()),
        ca_pem: Some(ca.pem()),
        client_pem: Some((client.pem(), client_key.serialize_pem())),
    }
}

/// A rustls server config with fresh certificates ([`pki`]) and these ALPN protocols; with
/// `client_auth`, it requires a client certificate issued by its CA.
fn tls_acceptor(alpn: &[&str], pki: Pki, client_auth: bool) -> tokio_rustls::TlsAcceptor {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = if client_auth {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(pki.ca.clone().unwrap()).unwrap();
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap();
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let mut config = builder.with_single_cert(vec![pki.cert], pki.key).unwrap();
    config.alpn_protocols = alpn.iter().map(|a| a.as_bytes().to_vec()).collect();
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

/// Starts a server speaking as `options` say; it lives until the test process ends.
pub fn serve_with<F, Fut>(options: ServerOptions, handler: F) -> TestServer
where
    F: Fn(Req) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Answer> + Send + 'static,
{
    let handler: Handler = Arc::new(move |r| Box::pin(handler(r)));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let (acceptor, ca_pem, client_pem) = match options.tls_alpn.as_deref() {
        Some(alpn) => {
            let pki = pki(options.issued_by_ca || options.client_auth);
            let (ca_pem, client_pem) = (pki.ca_pem.clone(), pki.client_pem.clone());
            let acceptor = tls_acceptor(alpn, pki, options.client_auth);
            (Some(acceptor), ca_pem, client_pem)
        }
        None => (None, None, None),
    };
    let server = TestServer {
        addr,
        tls: acceptor.is_some(),
        connections: Arc::default(),
        max_in_flight: Arc::default(),
        ca_pem,
        client_pem,
    };
    let (connections, max_in_flight) = (server.connections.clone(), server.max_in_flight.clone());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                connections.fetch_add(1, Ordering::Relaxed);
                let handler = handler.clone();
                let (acceptor, max_in_flight) = (acceptor.clone(), max_in_flight.clone());
                let (http2, limits) = (options.http2, options.http2_limits);
                tokio::spawn(async move {
                    let in_flight = Arc::new(AtomicU64::new(0));
                    let (served, goaway) = (Arc::new(AtomicU64::new(0)), Arc::new(Notify::new()));
                    let http2 = Http2Serving {
                        http2,
                        limits,
                        goaway: goaway.clone(),
                    };
                    let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let handler = handler.clone();
                        let (in_flight, max_in_flight) = (in_flight.clone(), max_in_flight.clone());
                        let n = served.fetch_add(1, Ordering::SeqCst) + 1;
                        if limits.and_then(|l| l.goaway_after) == Some(n) {
                            goaway.notify_one();
                        }
                        async move {
                            let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                            max_in_flight.fetch_max(now, Ordering::SeqCst);
                            let version = format!("{:?}", req.version());
                            let method = req.method().to_string();
                            let path = req
                                .uri()
                                .path_and_query()
                                .map(|p| p.to_string())
                                .unwrap_or_default();
                            let body = req
                                .into_body()
                                .collect()
                                .await
                                .map(|c| c.to_bytes())
                                .unwrap_or_default();
                            let answer = handler(Req {
                                method,
                                path,
                                body,
                                version,
                            })
                            .await;
                            in_flight.fetch_sub(1, Ordering::SeqCst);
                            match answer {
                                Answer::Reply(status, body) => Ok(hyper::Response::builder()
                                    .status(status)
                                    .body(Full::new(Bytes::from(body)))
                                    .unwrap()),
                                Answer::Hangup => Err(std::io::Error::other("hang up")),
                            }
                        }
                    });
                    match acceptor {
                        Some(acceptor) => {
                            let Ok(tls) = acceptor.accept(stream).await else {
                                return;
                            };
                            serve_connection(TokioIo::new(tls), svc, http2).await;
                        }
                        None => serve_connection(TokioIo::new(stream), svc, http2).await,
                    }
                });
            }
        });
    });
    server
}

/// How a connection speaks HTTP/2.
struct Http2Serving {
    /// HTTP/1.1 and HTTP/2, or HTTP/1.1 alone.
    http2: bool,
    /// HTTP/2 alone with these limits.
    limits: Option<Http2Limits>,
    /// Told when the connection is to go away.
    goaway: Arc<Notify>,
}

/// Serves one connection: HTTP/1.1 alone, HTTP/1.1 and HTTP/2, or HTTP/2 alone with limits.
async fn serve_connection<I, S>(io: I, svc: S, http2: Http2Serving)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    S: hyper::service::Service<
            hyper::Request<hyper::body::Incoming>,
            Response = hyper::Response<Full<Bytes>>,
            Error = std::io::Error,
        > + Send
        + 'static,
    S::Future: Send + 'static,
{
    if let Some(limits) = http2.limits {
        let mut builder =
            hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new());
        builder
            .max_concurrent_streams(limits.max_streams)
            .initial_stream_window_size(limits.stream_window);
        let conn = builder.serve_connection(io, svc);
        tokio::pin!(conn);
        tokio::select! {
            _ = conn.as_mut() => return,
            () = http2.goaway.notified() => conn.as_mut().graceful_shutdown(),
        }
        let _ = conn.await;
    } else if http2.http2 {
        let _ = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new())
            .serve_connection(io, svc)
            .await;
    } else {
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(io, svc)
            .await;
    }
}

/// A server answering every request with 200 `Hello, World!`.
pub fn hello() -> TestServer {
    serve(|_| async { Answer::Reply(200, "Hello, World!".into()) })
}

/// A local URL nobody listens on.
pub fn dead_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}")
}

/// A server writing raw bytes, for answers hyper's server would not give (chunks split anywhere,
/// bodies ended by closing, interim answers, HTTP/1.0, closing a kept-alive connection unasked).
pub struct RawServer {
    pub addr: SocketAddr,
    /// Connections accepted so far.
    pub accepted: Arc<std::sync::atomic::AtomicU64>,
}

impl RawServer {
    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// What a raw server writes for one request: pieces written one by one (a millisecond apart, so
/// the client reads them in separate reads), and whether it closes the connection right after.
pub struct RawAnswer {
    pub pieces: Vec<Vec<u8>>,
    pub close: bool,
}

/// Starts a raw server: one thread per connection, blocking I/O; `answer` gets each request's path.
pub fn serve_raw<F>(answer: F) -> RawServer
where
    F: Fn(&str) -> RawAnswer + Send + Sync + 'static,
{
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicU64, Ordering};
    let answer = Arc::new(answer);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicU64::new(0));
    let counter = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            counter.fetch_add(1, Ordering::Relaxed);
            let answer = answer.clone();
            std::thread::spawn(move || {
                let _ = stream.set_nodelay(true);
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    // One request: its head, then its content-length body.
                    let head_end = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        match stream.read(&mut chunk) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |v| v.trim().parse().unwrap());
                    while buf.len() < head_end + length {
                        match stream.read(&mut chunk) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let path = head.split(' ').nth(1).unwrap_or("/").to_owned();
                    let asked_close = head.contains("connection: close");
                    buf.drain(..head_end + length);
                    let reply = answer(&path);
                    for (i, piece) in reply.pieces.iter().enumerate() {
                        if i > 0 {
                            std::thread::sleep(std::time::Duration::from_millis(1));
                        }
                        if stream.write_all(piece).is_err() {
                            return;
                        }
                    }
                    if reply.close || asked_close {
                        return;
                    }
                }
            });
        }
    });
    RawServer { addr, accepted }
}
