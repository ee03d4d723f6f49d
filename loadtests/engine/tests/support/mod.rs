//! A small HTTP/1.1 server for the generator's tests: it runs on its own thread and runtime, listens
//! on 127.0.0.1 (a free port), and answers with whatever the test's async handler says.

#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;

/// A request as the handler sees it.
#[derive(Debug, Clone)]
pub struct Req {
    pub method: String,
    pub path: String,
    pub body: Bytes,
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
}

impl TestServer {
    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// Starts a server; it lives until the test process ends.
pub fn serve<F, Fut>(handler: F) -> TestServer
where
    F: Fn(Req) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Answer> + Send + 'static,
{
    let handler: Handler = Arc::new(move |r| Box::pin(handler(r)));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
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
                let handler = handler.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let handler = handler.clone();
                        async move {
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
                            match handler(Req { method, path, body }).await {
                                Answer::Reply(status, body) => Ok(hyper::Response::builder()
                                    .status(status)
                                    .body(Full::new(Bytes::from(body)))
                                    .unwrap()),
                                Answer::Hangup => Err(std::io::Error::other("hang up")),
                            }
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
    });
    TestServer { addr }
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
