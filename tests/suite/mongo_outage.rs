//! The database goes away mid-way and comes back: the `brigade` binary serving the waiter on
//! `--store mongo` must answer 503 (promptly, not hang) while FerretDB is down and recover by itself,
//! with the acknowledged data intact, once FerretDB is restarted on the same data and port.
//!
//! Needs a FerretDB binary: `bash scripts/ferretdb.sh build` (cached under `.ferretdb/`) or
//! `FERRETDB_BIN`. Without one the test skips loudly; under `BRIGADE_REQUIRE_MONGO=1` it fails.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use brigade_kit::announce::Announcement;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};

/// The store timeout the service runs with; a request that needs the database answers within it.
const STORE_TIMEOUT: Duration = Duration::from_millis(1000);
/// Slack on top of the timeout for process scheduling on a busy machine.
const SLACK: Duration = Duration::from_secs(3);

/// A child process killed when dropped, so a failing test leaves nothing running.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The FerretDB binary to run, or why there is none.
fn ferretdb_binary() -> Result<PathBuf, String> {
    if let Ok(bin) = std::env::var("FERRETDB_BIN") {
        let bin = PathBuf::from(bin);
        return if bin.is_file() {
            Ok(bin)
        } else {
            Err(format!("FERRETDB_BIN={} is not a file", bin.display()))
        };
    }
    let cached = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".ferretdb")
        .join("ferretdb-v1.24.2");
    if cached.is_file() {
        Ok(cached)
    } else {
        Err(
            "no FerretDB binary (run `bash scripts/ferretdb.sh build` or set FERRETDB_BIN)"
                .to_string(),
        )
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_ferretdb(bin: &Path, dir: &Path, port: u16) -> Running {
    let child = Command::new(bin)
        .arg("--handler=sqlite")
        .arg(format!(
            "--sqlite-url=file:{}/?_pragma=synchronous(full)",
            dir.display()
        ))
        .arg(format!("--listen-addr=127.0.0.1:{port}"))
        .args([
            "--telemetry=disable",
            "--state-dir=-",
            "--debug-addr=-",
            "--log-level=ERROR",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting FerretDB {}: {e}", bin.display()));
    let running = Running(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "FerretDB did not listen on port {port} within 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    running
}

/// Starts `brigade serve --service waiter --store mongo` and returns it with its base URL.
fn start_waiter(mongodb_uri: &str) -> (Running, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_brigade"))
        .args([
            "serve",
            "--service",
            "waiter",
            "--store",
            "mongo",
            "--listen",
            "127.0.0.1:0",
            "--workers",
            "2",
        ])
        .args(["--mongodb-uri", mongodb_uri])
        .args(["--store-timeout-ms", &STORE_TIMEOUT.as_millis().to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting brigade");
    let stdout = child.stdout.take().unwrap();
    let running = Running(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(Announcement::Listening(l)) = Announcement::parse(&line) {
                let _ = tx.send(l.url);
            }
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("brigade announced no listening service");
    (running, url)
}

struct Http(Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>);

impl Http {
    fn new() -> Http {
        Http(Client::builder(TokioExecutor::new()).build_http())
    }

    /// Sends a request; the answer's status, its JSON body (or null), and how long it took.
    async fn send(&self, method: &str, url: &str, body: Option<Value>) -> (u16, Value, Duration) {
        let mut req = hyper::Request::builder().method(method).uri(url);
        if body.is_some() {
            req = req.header("content-type", "application/json");
        }
        let bytes = body.map(|b| Bytes::from(b.to_string())).unwrap_or_default();
        let started = Instant::now();
        let call = async {
            let resp = self
                .0
                .request(req.body(Full::new(bytes)).unwrap())
                .await
                .expect("the service answers");
            let status = resp.status().as_u16();
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
        };
        // Far beyond the store timeout: only a hang gets here.
        let (status, json) = tokio::time::timeout(Duration::from_secs(30), call)
            .await
            .unwrap_or_else(|_| panic!("{method} {url} hung for 30 s"));
        (status, json, started.elapsed())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mongo_outage_answers_503_then_recovers_without_a_restart() {
    let ferretdb = match ferretdb_binary() {
        Ok(bin) => bin,
        Err(why) => {
            brigade_kit::skip::skip_mongo(&format!("the MongoDB outage test: {why}"));
            return;
        }
    };
    let data = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut db = Some(start_ferretdb(&ferretdb, data.path(), port));
    let (_waiter, base) = start_waiter(&format!("mongodb://127.0.0.1:{port}/brigade_outage"));
    let http = Http::new();

    let (status, _, _) = http.send("GET", &format!("{base}/ready"), None).await;
    assert_eq!(status, 200, "ready while the database is up");
    let (status, ada, _) = http
        .send(
            "POST",
            &format!("{base}/waiters"),
            Some(json!({"name": "Ada", "shift": "morning"})),
        )
        .await;
    assert_eq!(status, 201, "{ada}");
    let id = ada["id"].as_str().expect("a waiter id").to_string();

    // The database dies (SIGKILL: no goodbye to its clients).
    drop(db.take());

    let (status, body, took) = http.send("GET", &format!("{base}/ready"), None).await;
    assert_eq!(status, 503, "not ready while the database is down: {body}");
    assert!(took < STORE_TIMEOUT + SLACK, "/ready took {took:?}");
    let (status, body, took) = http
        .send(
            "POST",
            &format!("{base}/waiters"),
            Some(json!({"name": "Bo", "shift": "night"})),
        )
        .await;
    assert_eq!(status, 503, "a write needing the database: {body}");
    assert_eq!(body["error"]["code"], json!("unavailable"), "{body}");
    assert!(took < STORE_TIMEOUT + SLACK, "POST /waiters took {took:?}");
    eprintln!("database down: POST /waiters answered 503 in {took:?}");
    let (status, body, took) = http
        .send("GET", &format!("{base}/waiters/{id}"), None)
        .await;
    assert_eq!(status, 503, "a read needing the database: {body}");
    assert!(
        took < STORE_TIMEOUT + SLACK,
        "GET /waiters/{{id}} took {took:?}"
    );
    // Still serving what needs no database.
    let (status, _, _) = http.send("GET", &format!("{base}/health"), None).await;
    assert_eq!(status, 200, "health does not depend on the database");

    // The database comes back on the same data and port; the service must notice by itself.
    db = Some(start_ferretdb(&ferretdb, data.path(), port));
    let restarted = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, _, _) = http.send("GET", &format!("{base}/ready"), None).await;
        if status == 200 {
            eprintln!("database back: ready again after {:?}", restarted.elapsed());
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still not ready 30 s after the database came back"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (status, back, _) = http
        .send("GET", &format!("{base}/waiters/{id}"), None)
        .await;
    assert_eq!(
        (status, &back["name"]),
        (200, &json!("Ada")),
        "the acknowledged waiter survived: {back}"
    );
    let (status, bo, _) = http
        .send(
            "POST",
            &format!("{base}/waiters"),
            Some(json!({"name": "Bo", "shift": "night"})),
        )
        .await;
    assert_eq!(status, 201, "writes work again: {bo}");
    let (status, list, _) = http.send("GET", &format!("{base}/waiters"), None).await;
    assert_eq!((status, &list["total"]), (200, &json!(2)), "{list}");
    drop(db);
}
