//! The `bookmarks` binary as a process, on every runtime it lists: `runtimes --json` names its
//! service, `serve --preload` fills the store and announces it, the announced URL answers, and
//! SIGTERM stops it with exit 0.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use brigade_kit::announce::{Announcement, RuntimesListing};
use brigade_launch::testing::TestClient;

const BIN: &str = env!("CARGO_BIN_EXE_bookmarks");

fn runtimes() -> RuntimesListing {
    let out = Command::new(BIN)
        .args(["runtimes", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).expect("runtimes --json is one JSON object")
}

#[test]
fn runtimes_json_names_the_bookmarks_service_and_every_store() {
    let listing = runtimes();
    assert_eq!(listing.services, ["bookmarks"]);
    assert_eq!(listing.stores, brigade_kit::store::names());
    let names: Vec<&str> = listing.runtimes.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, brigade_launch::runtimes::names());
}

#[test]
fn serve_preloads_announces_answers_and_stops_on_sigterm_on_every_runtime() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let c = TestClient::default();
    for runtime in runtimes().runtimes {
        let data = tempfile::tempdir().unwrap();
        let mut child = Command::new(BIN)
            .args([
                "serve",
                "--runtime",
                &runtime.name,
                "--listen",
                "127.0.0.1:0",
            ])
            .args(["--workers", "1", "--preload", "120", "--data-dir"])
            .arg(data.path())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut announced = Vec::new();
        while !matches!(announced.last(), Some(Announcement::Listening(_))) {
            let line = lines.next().expect("an announcement").unwrap();
            announced.push(Announcement::parse(&line).expect("only announcements on stdout"));
        }
        let [Announcement::Preloaded(p), Announcement::Listening(l)] = &announced[..] else {
            panic!("{}: {announced:?}", runtime.name);
        };
        assert_eq!(
            (p.collection.as_str(), p.documents, p.existing),
            ("bookmarks", 120, 0)
        );
        assert_eq!(
            (
                l.service.as_str(),
                l.runtime.as_str(),
                l.store.as_str(),
                l.workers
            ),
            ("bookmarks", runtime.name.as_str(), "embedded", 1)
        );
        let all = rt.block_on(c.get(&format!("{}/bookmarks?limit=1", l.url)));
        assert_eq!(all.expect(200, "list").json["total"], 120);
        let archived = rt.block_on(c.get(&format!("{}/bookmarks?archived=true&user=user3", l.url)));
        assert!(
            archived.expect(200, "filtered").json["total"]
                .as_u64()
                .unwrap()
                > 0
        );
        let ok = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
        let status = child.wait().unwrap();
        assert!(status.success(), "{}: {status}", runtime.name);
    }
}
