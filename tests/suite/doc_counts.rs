//! The counts the docs state are the workspace's: docs/architecture.md's library crates, runtimes,
//! stores and routes (against the root manifest's members, the runtime registry, the store registry
//! and the restaurant's route tables), and docs/embedding.md's line counts of the second user's
//! files.

use std::path::Path;

/// The number docs/architecture.md puts before `what` in bold (`**9 library crates**`).
fn stated(what: &str) -> usize {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .unwrap();
    let marker = format!(" {what}**");
    let end = doc
        .find(&marker)
        .unwrap_or_else(|| panic!("docs/architecture.md states no count of {what}"));
    let start = doc[..end].rfind("**").unwrap() + 2;
    doc[start..end]
        .parse()
        .unwrap_or_else(|_| panic!("{what}: {:?} is not a number", &doc[start..end]))
}

#[test]
fn the_architecture_doc_counts_the_library_crates_of_the_workspace() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let libraries = crate::imports::workspace_members()
        .into_iter()
        // An example is a user of the kit, not one of its crates.
        .filter(|m| !m.starts_with("examples/"))
        .filter(|m| root.join(m).join("src/lib.rs").exists())
        .count();
    assert_eq!(stated("library crates"), libraries);
}

#[test]
fn the_architecture_doc_counts_every_runtime_and_store_of_the_registries() {
    assert_eq!(stated("runtimes"), brigade_runtimes::KNOWN.len());
    assert_eq!(stated("stores"), brigade_kit::store::StoreKind::KNOWN.len());
}

#[test]
fn the_architecture_doc_counts_the_restaurant_routes() {
    let routes: usize = brigade_restaurant::ServiceName::ALL
        .iter()
        .map(|service| service.routes().routes().len())
        .sum();
    assert_eq!(stated("routes"), routes);
}

#[test]
fn the_embedding_doc_counts_the_code_lines_of_the_second_user() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/embedding.md")).unwrap();
    let mut checked = 0;
    // Rows of its table: | `src/lib.rs` | 162 | what |, counted as the header says: non-blank
    // lines that are not comments.
    for row in doc.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (Some(file), Ok(stated)) = (
            cells[1].strip_prefix('`').and_then(|c| c.strip_suffix('`')),
            cells[2].parse::<usize>(),
        ) else {
            continue;
        };
        let path = root.join("examples/bookmarks").join(file);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let counted = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("//"))
            .count();
        assert_eq!(
            counted, stated,
            "docs/embedding.md says {file} has {stated} lines"
        );
        checked += 1;
    }
    assert!(
        checked >= 6,
        "only {checked} rows of docs/embedding.md's file table were read"
    );
}
