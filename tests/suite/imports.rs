//! No import circle anywhere in the workspace: data flows one way between the files of a crate.
//!
//! Cargo already refuses a circle between crates; inside a crate nothing does, so this test reads
//! every library and binary source file of the workspace's members and draws an arrow from a file
//! to each file it names through a path — a `use crate::…`, `use super::…` or `use self::…` tree,
//! or such a path written inline — resolved to the deepest module file that path passes through.
//! A circle (two files that reach each other) fails the test with its files listed.
//!
//! What does not count: a `pub use` line (a facade re-exporting a child is structure, not use),
//! `mod x;` declarations and a parent naming its own child module by its bare name (`json::write`
//! in `report/mod.rs`: the tree's structure; a child reaching back up through `super::` or
//! `crate::` does count), comments (doc links name modules without using them), and the inline
//! `#[cfg(test)] mod tests` at the end of a file (test code may reach anywhere). A file is a node;
//! `lib.rs`, `main.rs` and `mod.rs` stand for their module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The workspace's member folders, as the root manifest lists them (relative to the root).
pub(crate) fn workspace_members() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest: toml::Value =
        toml::from_str(&std::fs::read_to_string(root.join("Cargo.toml")).unwrap()).unwrap();
    manifest["workspace"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_owned())
        .collect()
}

/// The workspace members' source folders, and the root crate's.
fn source_roots() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut roots: Vec<PathBuf> = workspace_members()
        .iter()
        .map(|m| root.join(m).join("src"))
        .collect();
    roots.push(root.join("src"));
    roots
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file under a crate's `src/`: `report/mod.rs` → `["report"]`,
/// `report/html.rs` → `["report", "html"]`, `lib.rs` → `[]`. A `bin/` file is a crate of its own
/// and gets `None`.
fn module_of(src: &Path, file: &Path) -> Option<Vec<String>> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    Some(parts)
}

/// The text of a file that counts: comments, `pub use` lines and the trailing test module gone.
fn counted_text(text: &str) -> String {
    let end = text.find("#[cfg(test)]\nmod tests").unwrap_or(text.len());
    let mut out = String::new();
    let mut in_pub_use = false;
    for line in text[..end].lines() {
        let code = line.split("//").next().unwrap_or("");
        let trimmed = code.trim_start();
        if trimmed.starts_with("pub use ") || trimmed.starts_with("pub(crate) use ") {
            in_pub_use = !trimmed.contains(';');
            continue;
        }
        if in_pub_use {
            in_pub_use = !trimmed.contains(';');
            continue;
        }
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Every path a file names: its `use` trees expanded, and inline `crate::`, `super::` and
/// `self::` paths.
fn named_paths(text: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut rest = text;
    while let Some(at) = find_word(rest, "use ") {
        let after = &rest[at + 4..];
        let end = after.find(';').unwrap_or(after.len());
        expand_use_tree(after[..end].trim(), &mut Vec::new(), &mut paths);
        rest = &after[end..];
    }
    // Inline paths; `resolve` keeps those through `crate::`, `super::` and `self::`.
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(found) = text[from..].find("::") {
        let sep = from + found;
        from = sep + 2;
        let start = text[..sep]
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        if start == sep
            || (start > 0 && b"$:".contains(&bytes[start - 1]))
            || bytes[start].is_ascii_uppercase()
        {
            continue;
        }
        let path: String = text[start..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        paths.push(
            path.split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
        );
        from = start + path.len();
    }
    paths
}

/// Where the next `use` statement starts: `word` first on its line, after indentation only.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = text[from..].find(word) {
        let at = from + found;
        let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
        if text[line_start..at].trim().is_empty() {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// Expands a `use` tree (`a::{b, c::{d, e}}`) into its paths.
fn expand_use_tree(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if tree.is_empty() {
        return;
    }
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim_end_matches("::").trim();
        let depth = prefix.len();
        prefix.extend(
            head.split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        );
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        for part in split_top_level(inner) {
            expand_use_tree(part, prefix, out);
        }
        prefix.truncate(depth);
        return;
    }
    let path = tree.split(" as ").next().unwrap_or(tree);
    let mut full = prefix.clone();
    full.extend(
        path.split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
    );
    out.push(full);
}

/// Splits on the commas outside braces.
fn split_top_level(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// The module a path names, resolved from `module` (the naming file's module) to the deepest
/// module of the crate it passes through; `None` for another crate's path.
fn resolve(
    path: &[String],
    module: &[String],
    modules: &BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    let mut at: Vec<String> = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("self") | Some("super") => module.to_vec(),
        _ => return None,
    };
    let mut rest = &path[1..];
    if path[0] == "super" {
        at.pop();
    }
    while rest.first().is_some_and(|p| p == "super") {
        at.pop();
        rest = &rest[1..];
    }
    Some(deepest(at, rest, modules))
}

/// The deepest module of the crate that `rest`, followed from the module `at`, passes through.
fn deepest(mut at: Vec<String>, rest: &[String], modules: &BTreeSet<Vec<String>>) -> Vec<String> {
    let mut best = at.clone();
    for part in rest {
        at.push(part.clone());
        if modules.contains(&at) {
            best = at.clone();
        } else {
            break;
        }
    }
    best
}

/// The circles (strongly connected components of more than one file) of a graph.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Kosaraju on a small graph: reach sets are cheap enough to compute directly.
    let reach = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(node) = stack.pop() {
            for next in graph.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|node| (node, reach(node))).collect();
    let mut done = BTreeSet::new();
    let mut found = Vec::new();
    for node in graph.keys() {
        if done.contains(node) || !reaches[node].contains(node) {
            continue;
        }
        let circle: Vec<String> = reaches[node]
            .iter()
            .filter(|other| reaches.get(other).is_some_and(|r| r.contains(node)))
            .cloned()
            .collect();
        done.extend(circle.iter().cloned());
        found.push(circle);
    }
    found
}

/// The file graph of one crate: file → files it names.
fn crate_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut by_module: BTreeMap<Vec<String>, PathBuf> = BTreeMap::new();
    for file in &files {
        if let Some(module) = module_of(src, file) {
            by_module.insert(module, file.clone());
        }
    }
    let modules: BTreeSet<Vec<String>> = by_module.keys().cloned().collect();
    let name = |file: &Path| file.display().to_string();
    let mut graph = BTreeMap::new();
    for (module, file) in &by_module {
        let text = counted_text(&std::fs::read_to_string(file).unwrap());
        let mut targets = BTreeSet::new();
        for path in named_paths(&text) {
            if let Some(target) = resolve(&path, module, &modules) {
                if &target != module {
                    targets.insert(name(&by_module[&target]));
                }
            }
        }
        graph.insert(name(file), targets);
    }
    graph
}

#[test]
fn no_file_of_any_workspace_crate_imports_a_file_that_imports_it_back() {
    let mut all = Vec::new();
    for src in source_roots() {
        let graph = crate_graph(&src);
        for circle in circles(&graph) {
            // The arrows inside the circle, so the message says which `use` to move.
            let arrows: Vec<String> = circle
                .iter()
                .flat_map(|from| {
                    graph[from]
                        .iter()
                        .filter(|to| circle.contains(to))
                        .map(move |to| format!("  {from} → {to}"))
                })
                .collect();
            all.push(format!("{}\n{}", circle.join(" ⇄ "), arrows.join("\n")));
        }
    }
    assert!(
        all.is_empty(),
        "{} import circle(s):\n{}",
        all.len(),
        all.join("\n")
    );
}

#[test]
fn the_circle_finder_sees_a_circle_through_use_trees_and_super() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("report")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod report;\npub mod judge;\n").unwrap();
    std::fs::write(
        src.join("report/mod.rs"),
        "mod html;\nmod json;\npub use html::render;\nuse crate::judge::{Comparison, other::{X}};\nfn w() { json::write(); }\n",
    )
    .unwrap();
    std::fs::write(
        src.join("report/html.rs"),
        "// crate::judge is named here only\n",
    )
    .unwrap();
    std::fs::write(src.join("report/json.rs"), "use super::Report;\n").unwrap();
    std::fs::write(src.join("judge.rs"), "fn f(r: &super::report::Report) {}\n").unwrap();
    std::fs::write(
        src.join("report/plain.rs"),
        "fn f() { let v = std::mem::take(x); }\n",
    )
    .unwrap();
    let graph = crate_graph(src);
    let found = circles(&graph);
    assert_eq!(found.len(), 1, "{graph:?}");
    // judge ⇄ report through `crate::`, `super::` and a use tree; a parent naming its own child
    // (`json::write()` in report/mod.rs) is its structure, not counted.
    let mut names: Vec<&str> = found[0]
        .iter()
        .map(|f| f.rsplit_once(src.to_str().unwrap()).unwrap().1)
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["/judge.rs", "/report/mod.rs"]);
    // The facade's `pub use` and the comment draw no arrow.
    let html = graph
        .iter()
        .find(|(k, _)| k.ends_with("html.rs"))
        .map(|(_, v)| v)
        .unwrap();
    assert!(html.is_empty(), "{html:?}");
}
