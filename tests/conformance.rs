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
