//! The `brigade` binary as a process: acknowledged writes survive SIGKILL on the embedded store, and
//! SIGTERM finishes the request in flight, then exits 0 — on every runtime.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use brigade_services::conformance::TestClient;
use serde_json::json;

/// A `brigade serve` child and the URLs it printed.
struct Server {
    child: Child,
    urls: Vec<(String, String)>,
}

impl Server {
    fn start(runtime: &str, service: &str, data_dir: &std::path::Path) -> Server {
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
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("brigade starts");
        let expected = if service == "all" { 3 } else { 1 };
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut urls = Vec::new();
        while urls.len() < expected {
            let line = lines.next().expect("a listening line").unwrap();
            let field = |k: &str| {
                line.split(' ')
                    .find_map(|w| w.strip_prefix(k))
                    .map(str::to_string)
            };
            if let (Some(s), Some(u)) = (field("service="), field("url=")) {
                urls.push((s, u));
            }
        }
        Server { child, urls }
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
            let stop_at = Instant::now() + Duration::from_millis(600);
            let writers: Vec<_> = (0..WRITERS)
                .map(|w| {
                    let (c, waiter, tables) = (c.clone(), waiter.clone(), tables.clone());
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
                            let Ok(a) = tokio::time::timeout(
                                Duration::from_secs(3),
                                c.try_post(&url, body),
                            )
                            .await
                            else {
                                break;
                            };
                            match a {
                                Some(a) if a.status == 201 => acked.push((
                                    url.clone(),
                                    a.json["id"].as_str().unwrap().to_string(),
                                )),
                                Some(a) => panic!("unexpected {} {}", a.status, a.json),
                                None => break, // the server is gone
                            }
                            if Instant::now() > stop_at + Duration::from_secs(5) {
                                break;
                            }
                        }
                        acked
                    })
                })
                .collect();
            tokio::time::sleep_until(stop_at.into()).await;
            server.child.kill().unwrap(); // SIGKILL: no flush, no shutdown
            let mut all = Vec::new();
            for w in writers {
                all.extend(w.await.unwrap());
            }
            all
        });
        server.wait(Duration::from_secs(5));
        assert!(
            acked.len() > 10,
            "{runtime}: only {} writes were acknowledged before the kill",
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

#[test]
fn sigterm_finishes_the_request_in_flight_then_exits_0() {
    for runtime in every_runtime() {
        let dir = tempfile::tempdir().unwrap();
        let mut server = Server::start(runtime, "waiter", dir.path());
        let addr = server
            .url("waiter")
            .trim_start_matches("http://")
            .to_string();
        let mut conn = TcpStream::connect(&addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let body = vec![b'x'; 100_000];
        write!(conn, "POST /bench/bytes HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len()).unwrap();
        conn.write_all(&body[..50_000]).unwrap();
        std::thread::sleep(Duration::from_millis(300)); // the request is being read
        server.signal("-TERM");
        std::thread::sleep(Duration::from_millis(300));
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
