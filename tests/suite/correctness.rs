//! Correctness beside cost. Every runtime's control server (`brigade serve-control`, the
//! conformance study's control, its own minimal server with no kit layer): both routes answer over
//! each protocol it serves — HTTP/1.1 and h2c on one plaintext port, HTTP/1.1 and h2 by ALPN under
//! TLS, and HTTP/3 on the same port number where the runtime offers h3 — and HTTP/3 asked of a
//! runtime without it is refused before anything is announced. `compare --conformance` runs the
//! quick conformance study once the comparison is measured and shows it in the report.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use brigade_kit::announce::Announcement;
use brigade_records::protocol::{Protocol, TlsClient};
use brigade_runtimes::control::{CONTROL_BODY, ECHO_PATH};

/// A `brigade serve-control` child and the URL it announced, killed when dropped.
struct Control {
    child: Child,
    url: String,
}

impl Control {
    /// Starts `runtime`'s control with `extra` arguments: the control, or what it said on failing.
    fn start(runtime: &str, extra: &[&str]) -> Result<Control, String> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_brigade"))
            .args([
                "serve-control",
                "--runtime",
                runtime,
                "--listen",
                "127.0.0.1:0",
            ])
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("brigade starts");
        let line = BufReader::new(child.stdout.take().unwrap())
            .lines()
            .next()
            .and_then(Result::ok);
        match line.as_deref().and_then(Announcement::parse) {
            Some(Announcement::Listening(l)) => Ok(Control { child, url: l.url }),
            _ => {
                let _ = child.wait();
                let mut said = String::new();
                let _ = child.stderr.take().unwrap().read_to_string(&mut said);
                Err(said)
            }
        }
    }

    /// `GET path` over `protocol`: the status and the body.
    fn get(&self, path: &str, protocol: Protocol) -> (u16, String) {
        let tls = TlsClient {
            insecure: true,
            ..TlsClient::default()
        };
        let (status, body) =
            brigade_clients::fetch::get(&self.url, path, protocol, &tls, Duration::from_secs(20))
                .unwrap_or_else(|e| panic!("{} {path} over {protocol}: {e:#}", self.url));
        (status, String::from_utf8_lossy(&body).into_owned())
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `POST` of `body` to [`ECHO_PATH`] over plaintext HTTP/1.1, closing: the answer's body.
fn posted(url: &str, body: &str) -> String {
    let addr = url.trim_start_matches("http://");
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        conn,
        "POST {ECHO_PATH} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    answer
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn every_control_answers_both_routes_over_each_protocol_it_serves() {
    for runtime in brigade_runtimes::names() {
        let offers_h3 = brigade_runtimes::find(runtime)
            .and_then(|r| r.h3_stack())
            .is_some();
        let plain = Control::start(runtime, &[]).unwrap();
        assert_eq!(posted(&plain.url, "twelve bytes"), "12", "{runtime}");
        for protocol in [Protocol::H1, Protocol::H2c] {
            assert_eq!(
                plain.get("/hello", protocol),
                (200, CONTROL_BODY.to_owned()),
                "{runtime} {protocol}"
            );
            assert_eq!(plain.get(ECHO_PATH, protocol), (200, "0".to_owned()));
        }
        drop(plain);

        let extra: &[&str] = if offers_h3 {
            &["--tls-self-signed", "--h3"]
        } else {
            &["--tls-self-signed"]
        };
        let tls = Control::start(runtime, extra).unwrap();
        let mut protocols = vec![Protocol::H1Tls, Protocol::H2Tls];
        if offers_h3 {
            protocols.push(Protocol::H3);
        }
        for protocol in protocols {
            assert_eq!(
                tls.get("/hello", protocol),
                (200, CONTROL_BODY.to_owned()),
                "{runtime} {protocol}"
            );
            assert_eq!(tls.get(ECHO_PATH, protocol), (200, "0".to_owned()));
        }
        if !offers_h3 {
            let said = Control::start(runtime, &["--tls-self-signed", "--h3"])
                .map(|_| "it started")
                .unwrap_err();
            assert!(
                said.contains(brigade_runtimes::H3_NOT_OFFERED),
                "{runtime}: {said}"
            );
        }
    }
}

#[test]
fn compare_with_conformance_runs_the_quick_study_and_shows_it_beside_the_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("compare");
    let output = Command::new(env!("CARGO_BIN_EXE_brigade"))
        .args(["compare", "--runtimes", "hyper", "--scenarios", "hello"])
        .args(["--users", "1", "--repeat", "1", "--duration", "300ms"])
        .args(["--warmup", "0s", "--store", "memory", "--no-progress"])
        .arg("--conformance")
        .arg("--out")
        .arg(&out)
        .output()
        .expect("brigade runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("conformance: "), "{stdout}");
    let study = out.join("conformance").join("report.json");
    assert!(
        study.is_file(),
        "the study's report is in the comparison's folder"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let correctness = &report["correctness"];
    assert_eq!(correctness["source"], study.display().to_string());
    let rows = correctness["rows"].as_array().unwrap();
    // HTTP/1.1 and HTTP/3 run wherever the binary runs (h2spec's two suites where it is installed),
    // each case on two routes, and nothing fails through Brigade alone or without a control.
    for suite in ["HTTP/1.1", "HTTP/3"] {
        let row = rows
            .iter()
            .find(|r| r["runtime"] == "hyper" && r["suite"] == suite)
            .unwrap_or_else(|| panic!("a {suite} row in {rows:?}"));
        assert!(row["cases"].as_u64().unwrap() >= 2 * 20, "{row}");
        assert_eq!(row["brigades"], 0, "{row}");
        assert_eq!(row["unclassified"], 0, "{row}");
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let section = md.split("## Correctness").nth(1).expect("the section");
    assert!(section.contains("conformance/report.json"), "{section}");
    assert!(section.contains("| hyper | HTTP/3 |"), "{section}");
}
