//! The `brigade` binary as a process: acknowledged writes survive SIGKILL on the embedded store, and
//! SIGTERM finishes the request in flight, then exits 0 — on every runtime.
//!
//! Neither test assumes how fast the machine is: each waits for the event it needs (so many writes
//! acknowledged, the server's `100 Continue` for a request it is reading, its log line saying the
//! shutdown began) instead of sleeping and hoping it happened.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use brigade_kit::announce::Announcement;
use brigade_kit::conformance::TestClient;
use serde_json::json;

/// A `brigade serve` child, the URLs it announced, and its log lines when asked for.
struct Server {
    child: Child,
    urls: Vec<(String, String)>,
    log: Option<mpsc::Receiver<String>>,
}

impl Server {
    fn start(runtime: &str, service: &str, data_dir: &std::path::Path) -> Server {
        Server::spawn(runtime, service, data_dir, false)
    }

    /// Starts the server logging at `info` and passes its log lines on to [`Server::wait_for_log`].
    fn start_logging(runtime: &str, service: &str, data_dir: &std::path::Path) -> Server {
        Server::spawn(runtime, service, data_dir, true)
    }

    fn spawn(runtime: &str, service: &str, data_dir: &std::path::Path, logging: bool) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_brigade"))
            .args([
                "serve",
                "--runtime",
                runtime,
                "--service",
                service,
                "--listen",
                "127.0.0.1:0",
                "--workers",
                "2",
            ])
            .arg("--data-dir")
            .arg(data_dir)
            .env("RUST_LOG", if logging { "info" } else { "warn" })
            .stdout(Stdio::piped())
            .stderr(if logging {
                Stdio::piped()
            } else {
                Stdio::inherit()
            })
            .spawn()
            .expect("brigade starts");
        let log = child.stderr.take().map(|stderr| {
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    eprintln!("{line}");
                    let _ = tx.send(line);
                }
            });
            rx
        });
        let expected = if service == "all" { 3 } else { 1 };
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut urls = Vec::new();
        while urls.len() < expected {
            let line = lines.next().expect("a listening line").unwrap();
            if let Some(Announcement::Listening(l)) = Announcement::parse(&line) {
                urls.push((l.service, l.url));
            }
        }
        Server { child, urls, log }
    }

    /// Waits for a log line containing `text`; panics after `limit` (a server that never says it).
    fn wait_for_log(&self, text: &str, limit: Duration) {
        let log = self.log.as_ref().expect("started with start_logging");
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match log.recv_timeout(left) {
                Ok(line) if line.contains(text) => return,
                Ok(_) => {}
                Err(e) => panic!("no log line with {text:?} within {limit:?}: {e}"),
            }
        }
    }

    fn url(&self, service: &str) -> String {
        self.urls
            .iter()
            .find(|(s, _)| s == service)
            .map(|(_, u)| u.clone())
            .unwrap()
    }

    fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig}");
    }

    fn wait(&mut self, limit: Duration) -> std::process::ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                started.elapsed() < limit,
                "the server did not exit within {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Concurrent writers in the SIGKILL test: enough that the embedded store's commit groups hold
/// several writes each.
const WRITERS: u32 = 32;

/// Writes acknowledged before the SIGKILL: the kill lands once this many are in, with the writers
/// still writing, however fast or slow the machine.
const ACKED_BEFORE_KILL: usize = 200;

fn every_runtime() -> Vec<&'static str> {
    brigade_runtimes::names()
}

#[test]
fn acknowledged_writes_survive_sigkill_on_the_embedded_store() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for runtime in every_runtime() {
        let dir = tempfile::tempdir().unwrap();
        let mut server = Server::start(runtime, "all", dir.path());
        let (waiter, tables) = (server.url("waiter"), server.url("tables"));
        let c = TestClient::default();
        let acked = rt.block_on(async {
            // 32 writers hammer two services, so that writes share commit groups (the embedded
            // store commits whatever queued during the previous fsync as one transaction); the
            // server is killed while groups are mid-flight.
            let count = Arc::new(AtomicUsize::new(0));
            let writers: Vec<_> = (0..WRITERS)
                .map(|w| {
                    let (c, waiter, tables) = (c.clone(), waiter.clone(), tables.clone());
                    let count = count.clone();
                    tokio::spawn(async move {
                        let mut acked = Vec::new();
                        for i in 0u32.. {
                            let (url, body) = if i % 2 == 0 {
                                (
                                    format!("{waiter}/waiters"),
                                    json!({"name": format!("w{w}-{i}"), "shift": "night"}),
                                )
                            } else {
                                (
                                    format!("{tables}/tables"),
                                    json!({"number": w * 1_000_000 + i, "seats": 2}),
                                )
                            };
                            match c.try_post(&url, body).await {
                                Some(a) if a.status == 201 => {
                                    acked.push((
                                        url.clone(),
                                        a.json["id"].as_str().unwrap().to_string(),
                                    ));
                                    count.fetch_add(1, Ordering::Relaxed);
                                }
                                Some(a) => panic!("unexpected {} {}", a.status, a.json),
                                None => break, // the server is gone
                            }
                        }
                        acked
                    })
                })
                .collect();
            // Only a server that stopped answering gets past this bound.
            let give_up = Instant::now() + Duration::from_secs(120);
            while count.load(Ordering::Relaxed) < ACKED_BEFORE_KILL {
                assert!(
                    Instant::now() < give_up,
                    "{runtime}: {} writes acknowledged in 120 s",
                    count.load(Ordering::Relaxed)
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            server.child.kill().unwrap(); // SIGKILL: no flush, no shutdown
            let mut all = Vec::new();
            for w in writers {
                all.extend(w.await.unwrap());
            }
            all
        });
        server.wait(Duration::from_secs(5));
        assert!(
            acked.len() >= ACKED_BEFORE_KILL,
            "{runtime}: only {} writes were acknowledged",
            acked.len()
        );

        let restarted = Server::start(runtime, "all", dir.path());
        let (new_waiter, new_tables) = (restarted.url("waiter"), restarted.url("tables"));
        rt.block_on(async {
            for (url, id) in &acked {
                let url = url
                    .replacen(&waiter, &new_waiter, 1)
                    .replacen(&tables, &new_tables, 1);
                let a = c.get(&format!("{url}/{id}")).await;
                assert_eq!(
                    a.status, 200,
                    "{runtime}: acknowledged write {url}/{id} was lost"
                );
            }
        });
        eprintln!(
            "{runtime}: all {} acknowledged writes survived SIGKILL",
            acked.len()
        );
    }
}

/// Reads an interim or final response head (up to the blank line) from `conn`.
fn read_head(conn: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = conn.read(&mut byte).expect("the server answers");
        assert_eq!(
            n,
            1,
            "the connection closed after {:?}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    String::from_utf8_lossy(&head).into_owned()
}

#[test]
fn sigterm_finishes_the_request_in_flight_then_exits_0() {
    for runtime in every_runtime() {
        let dir = tempfile::tempdir().unwrap();
        let mut server = Server::start_logging(runtime, "waiter", dir.path());
        let addr = server
            .url("waiter")
            .trim_start_matches("http://")
            .to_string();
        let mut conn = TcpStream::connect(&addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let body = vec![b'x'; 100_000];
        write!(conn, "POST /bench/bytes HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n", body.len()).unwrap();
        // The server asks for the body: it has read the head and is reading the request.
        let interim = read_head(&mut conn);
        assert!(
            interim.starts_with("HTTP/1.1 100"),
            "{runtime}: expected 100 Continue, got {interim}"
        );
        conn.write_all(&body[..50_000]).unwrap();
        server.signal("-TERM");
        // The shutdown has begun, with the request still arriving.
        server.wait_for_log("shutting down", Duration::from_secs(10));
        conn.write_all(&body[50_000..]).unwrap();
        let mut answer = String::new();
        conn.read_to_string(&mut answer).unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 200"),
            "{runtime}: in-flight request got: {answer}"
        );
        assert!(
            answer.contains("{\"length\":100000}"),
            "{runtime}: {answer}"
        );
        let status = server.wait(Duration::from_secs(15));
        assert!(status.success(), "{runtime}: exit status {status}");
        assert!(
            TcpStream::connect(&addr).is_err(),
            "{runtime}: still accepting after shutdown"
        );
    }
}
