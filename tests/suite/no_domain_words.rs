//! The generic crates know no restaurant: no restaurant word (waiter, kitchen, seat, party_size,
//! dish) in the code and data of the runtime adapters, the kit, the serve entry point and the load
//! tester outside comments, docs and tests. "table" and "order" are left alone: they have other
//! meanings there (a results table, the order of runs).

use std::path::{Path, PathBuf};

/// The folders checked, from the workspace root.
const FOLDERS: &[&str] = &[
    "runtimes",
    "services/kit",
    "launch",
    "loadtests/clients",
    "loadtests/load",
    "loadtests/slo",
    "loadtests/compare",
    "loadtests/studies",
];

/// The restaurant's words.
const WORDS: &[&str] = &["waiter", "kitchen", "seat", "party_size", "dish"];

/// The workspace root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` and `.toml` file under `dir`, leaving out test folders and build output.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !matches!(name.as_str(), "tests" | "target" | ".git") {
                files(&path, out);
            }
        } else if (name.ends_with(".rs") && name != "tests.rs") || name.ends_with(".toml") {
            out.push(path);
        }
    }
}

/// Where a line's code ends: at a comment that is not inside a string (`//` for Rust, `#` for
/// TOML).
fn code_part<'a>(line: &'a str, comment: &str) -> &'a str {
    let bytes = line.as_bytes();
    let (mut in_string, mut quote, mut i) = (false, b'"', 0);
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            if b == b'\\' {
                i += 1;
            } else if b == quote {
                in_string = false;
            }
        } else if b == b'"' || (comment == "#" && b == b'\'') {
            in_string = true;
            quote = b;
        } else if bytes[i..].starts_with(comment.as_bytes()) {
            return &line[..i];
        }
        i += 1;
    }
    line
}

/// The restaurant words in `text`'s code (for `.rs`: before any `#[cfg(test)]` module, outside
/// comments; for `.toml`: outside comments), as `line: word`.
fn findings(text: &str, rust: bool) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_block_comment = false;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if rust && trimmed.starts_with("#[cfg(test)]") {
            break;
        }
        if rust && in_block_comment {
            in_block_comment = !trimmed.contains("*/");
            continue;
        }
        if rust && trimmed.starts_with("/*") {
            in_block_comment = !trimmed.contains("*/");
            continue;
        }
        let code = code_part(line, if rust { "//" } else { "#" }).to_ascii_lowercase();
        for word in WORDS {
            if code.contains(word) {
                found.push(format!("{}: {word}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn the_generic_crates_hold_no_restaurant_word_outside_comments_docs_and_tests() {
    let root = root();
    let mut checked = 0;
    let mut found = Vec::new();
    for folder in FOLDERS {
        let mut list = Vec::new();
        files(&root.join(folder), &mut list);
        assert!(!list.is_empty(), "nothing found under {folder}");
        for path in list {
            let text = std::fs::read_to_string(&path).unwrap();
            let rust = path.extension().is_some_and(|e| e == "rs");
            for finding in findings(&text, rust) {
                found.push(format!(
                    "{}:{finding}",
                    path.strip_prefix(&root).unwrap().display()
                ));
            }
            checked += 1;
        }
    }
    assert!(checked > 20, "only {checked} files checked");
    assert!(found.is_empty(), "restaurant words:\n{}", found.join("\n"));
}

#[test]
fn the_check_sees_the_words_where_they_belong() {
    let mut list = Vec::new();
    files(&root().join("services/restaurant/src"), &mut list);
    let found: usize = list
        .iter()
        .map(|path| findings(&std::fs::read_to_string(path).unwrap(), true).len())
        .sum();
    assert!(
        found > 20,
        "only {found} restaurant words in the restaurant"
    );
}

#[test]
fn the_check_finds_words_in_code_and_skips_comments_and_test_modules() {
    let rust = r#"
//! A waiter in a module doc is fine.
/// So is a kitchen in a doc comment.
const URL: &str = "http://h:1/x"; // a dish in a trailing comment
/* a block comment about a seat */
fn a() -> &'static str { "Party_Size" }
let s = "// not a comment: waiter";
#[cfg(test)]
mod tests { const T: &str = "kitchen"; }
"#;
    assert_eq!(
        findings(rust, true),
        [
            "6: party_size: fn a() -> &'static str { \"Party_Size\" }",
            "7: waiter: let s = \"// not a comment: waiter\";"
        ]
    );
    let toml = "# a waiter here is fine\nname = \"dish # not a comment\"\n";
    assert_eq!(
        findings(toml, false),
        ["2: dish: name = \"dish # not a comment\""]
    );
}
