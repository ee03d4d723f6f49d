//! The restaurant's conformance suite (`brigade_services::conformance`: the kit's checks every
//! service passes, then its own) against every runtime × every store, over real sockets, each
//! combination on its own fresh in-process deployment (`brigade_serve::conformance_matrix!`).
//!
//! MongoDB runs when `MONGODB_URI` is set or a Docker engine is reachable (a `mongo:7` container);
//! otherwise its tests say loudly why they skip, and fail under `BRIGADE_REQUIRE_MONGO=1`.
//!
//! Also here: the generic crates hold no restaurant words ([`the_generic_crates_know_no_restaurant`]).

use brigade_serve::testing::Deployment;
use brigade_serve::Services;
use brigade_services::conformance;

fn restaurant() -> Services {
    Services::from(brigade_services::services())
}

async fn suite(d: Deployment) {
    conformance::run_suite(&d).await;
}

brigade_serve::conformance_matrix!(restaurant(), suite);

/// The folders that must know nothing about restaurants (relative to the workspace root).
const GENERIC_FOLDERS: &[&str] = &["runtimes", "services/kit", "services/serve"];

/// Words of the restaurant's domain ("table" and "order" have other meanings there).
const RESTAURANT_WORDS: &[&str] = &["waiter", "kitchen", "seat", "party_size", "dish"];

/// The code of a Rust source file, without comments, doc comments, `#[cfg(test)]` items and the
/// contents of string literals that sit in them: each remaining line with its number.
fn code_lines(source: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut skip_depth: Option<i64> = None; // inside a #[cfg(test)] item: its brace depth
    let mut pending_cfg_test = false;
    let mut in_block_comment = false;
    for (n, raw) in source.lines().enumerate() {
        let mut line = String::new();
        let mut chars = raw.chars().peekable();
        let mut in_string = false;
        while let Some(c) = chars.next() {
            if in_block_comment {
                if c == '*' && chars.peek() == Some(&'/') {
                    chars.next();
                    in_block_comment = false;
                }
                continue;
            }
            if in_string {
                line.push(c);
                if c == '\\' {
                    if let Some(next) = chars.next() {
                        line.push(next);
                    }
                } else if c == '"' {
                    in_string = false;
                }
                continue;
            }
            match c {
                '"' => {
                    in_string = true;
                    line.push(c);
                }
                '/' if chars.peek() == Some(&'/') => break,
                '/' if chars.peek() == Some(&'*') => {
                    chars.next();
                    in_block_comment = true;
                }
                _ => line.push(c),
            }
        }
        let trimmed = line.trim();
        if let Some(depth) = skip_depth.as_mut() {
            *depth += line.matches('{').count() as i64 - line.matches('}').count() as i64;
            if *depth <= 0 && (line.contains('}') || trimmed.ends_with(';')) {
                skip_depth = None;
            }
            continue;
        }
        if trimmed.starts_with("#[cfg(test)]") {
            pending_cfg_test = true;
            continue;
        }
        if pending_cfg_test && !trimmed.is_empty() && !trimmed.starts_with("#[") {
            pending_cfg_test = false;
            let depth = line.matches('{').count() as i64 - line.matches('}').count() as i64;
            if depth > 0 {
                skip_depth = Some(depth);
            }
            continue;
        }
        if !trimmed.is_empty() {
            out.push((n + 1, line));
        }
    }
    out
}

/// Every `.rs` file under `dir`, tests and benches left out.
fn rust_sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !matches!(name.as_str(), "tests" | "benches" | "target") {
                rust_sources(&path, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" {
            out.push(path);
        }
    }
}

/// Each restaurant word in the code of the `.rs` files under `folder`, as `path:line: word: code`.
fn restaurant_words_in(folder: &str) -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources = Vec::new();
    rust_sources(&root.join(folder), &mut sources);
    assert!(!sources.is_empty(), "no Rust sources under {folder}");
    let mut found = Vec::new();
    for path in sources {
        let source = std::fs::read_to_string(&path).unwrap();
        for (n, line) in code_lines(&source) {
            let lower = line.to_lowercase();
            for word in RESTAURANT_WORDS.iter().filter(|w| lower.contains(*w)) {
                found.push(format!("{}:{n}: {word}: {}", path.display(), line.trim()));
            }
        }
    }
    found
}

#[test]
fn the_generic_crates_know_no_restaurant() {
    let found: Vec<String> = GENERIC_FOLDERS
        .iter()
        .flat_map(|f| restaurant_words_in(f))
        .collect();
    assert!(
        found.is_empty(),
        "restaurant words in generic code:\n{}",
        found.join("\n")
    );
    // The search does see words where they belong.
    assert!(restaurant_words_in("services/restaurant/src").len() > 20);
}

#[test]
fn the_word_search_sees_code_and_strings_but_not_comments_or_tests() {
    let source = r#"
//! A module doc about a waiter.
/// A doc about the kitchen.
fn a() { let dish = "soup"; } // a trailing seat
/* a block about party_size */ fn b() {}
const S: &str = "a // not a comment: kitchen";
#[cfg(test)]
mod tests {
    fn waiter() {}
}
fn c() {}
"#;
    let lines: Vec<String> = code_lines(source).into_iter().map(|(_, l)| l).collect();
    assert_eq!(
        lines,
        [
            "fn a() { let dish = \"soup\"; } ",
            " fn b() {}",
            "const S: &str = \"a // not a comment: kitchen\";",
            "fn c() {}",
        ]
    );
}

/// The metric names and labels are the same on every runtime: the restaurant on each runtime
/// (memory store) answers the same requests — a create, a read, a 404, a seat that asks waiter, an
/// order that asks tables, a 405 and a path no route takes — and each service's `/metrics` then
/// lists the same series (names and labels; values and process figures aside).
#[test]
fn metric_names_and_labels_are_the_same_on_every_runtime() {
    use brigade_kit::conformance::observe::metric_series;
    use brigade_kit::conformance::{Deployment as _, TestClient};
    use brigade_serve::testing::StoreKind;
    use serde_json::json;

    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut seen: Vec<(String, std::collections::BTreeMap<String, Vec<String>>)> = Vec::new();
    for runtime in brigade_runtimes::names() {
        let d = Deployment::start(&restaurant(), runtime, StoreKind::Memory, None).unwrap();
        let series = rt.block_on(async {
            let c = TestClient::default();
            let (w, t, k) = (d.url("waiter"), d.url("tables"), d.url("kitchen"));
            let waiter = c
                .post(
                    &format!("{w}/waiters"),
                    json!({"name": "Ana", "shift": "night"}),
                )
                .await
                .expect(201, "waiter");
            let waiter_id = waiter.json["id"].as_str().unwrap().to_string();
            c.get(&format!("{w}/waiters/{waiter_id}"))
                .await
                .expect(200, "get");
            c.get(&format!("{w}/waiters/nobody"))
                .await
                .expect(404, "404");
            let table = c
                .post(&format!("{t}/tables"), json!({"number": 1, "seats": 4}))
                .await
                .expect(201, "table");
            let table_id = table.json["id"].as_str().unwrap().to_string();
            c.post(
                &format!("{t}/tables/{table_id}/seat"),
                json!({"party_size": 2, "waiter_id": waiter_id}),
            )
            .await
            .expect(200, "seat");
            c.post(
                &format!("{k}/orders"),
                json!({"table_id": table_id, "items": [{"dish": "soup", "qty": 1}]}),
            )
            .await
            .expect(201, "order");
            c.delete(&format!("{k}/orders")).await.expect(405, "405");
            c.get(&format!("{k}/no/such/path"))
                .await
                .expect(404, "unmatched");
            let mut by_service = std::collections::BTreeMap::new();
            for (name, base) in [("waiter", w), ("tables", t), ("kitchen", k)] {
                let m = c
                    .get(&format!("{base}/metrics"))
                    .await
                    .expect(200, "metrics");
                let text = String::from_utf8_lossy(&m.body).to_string();
                by_service.insert(
                    name.to_string(),
                    metric_series(&text).into_iter().collect::<Vec<_>>(),
                );
            }
            by_service
        });
        d.shutdown();
        seen.push((runtime.to_string(), series));
    }
    let (first, expected) = &seen[0];
    for service in ["waiter", "tables", "kitchen"] {
        let s = &expected[service];
        assert!(
            s.iter()
                .any(|l| l.starts_with("brigade_store_operation_duration_seconds_count")),
            "{service}: no store series"
        );
        if service != "waiter" {
            assert!(
                s.iter()
                    .any(|l| l.starts_with("brigade_peer_requests_total")),
                "{service}: no peer series"
            );
        }
    }
    for (runtime, series) in &seen[1..] {
        for (service, s) in series {
            let e = &expected[service];
            let missing: Vec<_> = e.iter().filter(|l| !s.contains(l)).collect();
            let extra: Vec<_> = s.iter().filter(|l| !e.contains(l)).collect();
            assert!(
                missing.is_empty() && extra.is_empty(),
                "{service} on {runtime} differs from {first}: missing {missing:#?}, extra {extra:#?}"
            );
        }
    }
}
