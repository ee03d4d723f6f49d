//! The runtime registry is the one list of runtimes: every suite covers what it lists, every runtime
//! module has its feature lines, and no other file of the repository lists runtimes by hand.
//!
//! `runtimes/build.rs` derives the registry from `runtimes/src/*.rs` and the crate's feature lines;
//! these tests keep the rest of the repository from growing its own lists again.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn for_each_runtime_covers_exactly_the_compiled_runtimes() {
    let mut covered: Vec<&str> = Vec::new();
    macro_rules! push {
        ($runtime:ident, $into:ident) => {
            $into.push(stringify!($runtime));
        };
    }
    brigade_runtimes::for_each_runtime!(push!(covered));
    assert_eq!(covered, brigade_runtimes::names());
    // Built with every feature (as the tests are), every module of the registry is compiled in.
    assert_eq!(covered, brigade_runtimes::KNOWN);
    assert!(covered.len() >= 2, "{covered:?}");
}

#[test]
fn every_runtime_reports_the_versions_this_build_resolved() {
    for runtime in brigade_runtimes::RUNTIMES {
        let version = runtime.version();
        assert!(!version.contains("unknown"), "{}: {version}", runtime.name);
        assert!(
            version.chars().any(|c| c.is_ascii_digit()),
            "{}: {version}",
            runtime.name
        );
    }
}

#[test]
fn every_runtime_module_is_a_feature_forwarded_by_every_crate_that_serves() {
    let forwarding = [
        ("runtimes/Cargo.toml", ""),
        ("launch/Cargo.toml", "brigade-runtimes/"),
        ("Cargo.toml", "brigade-launch/"),
        ("examples/bookmarks/Cargo.toml", "brigade-launch/"),
    ];
    for (manifest, prefix) in forwarding {
        let text = std::fs::read_to_string(root().join(manifest)).unwrap();
        let table: toml::Table = text.parse().unwrap();
        let features = table["features"].as_table().expect("[features]");
        let default: Vec<&str> = features["default"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        for name in brigade_runtimes::KNOWN {
            let feature = features
                .get(*name)
                .and_then(|f| f.as_array())
                .unwrap_or_else(|| panic!("{manifest}: no feature {name}"));
            assert!(
                feature
                    .iter()
                    .filter_map(|v| v.as_str())
                    .any(|v| v.starts_with(prefix)),
                "{manifest}: feature {name} forwards to nothing ({feature:?})"
            );
            assert!(
                default.contains(name),
                "{manifest}: {name} is not in the default features"
            );
        }
    }
}

/// Files the walk reads: code, manifests, scripts and CI; the docs may list runtimes.
fn is_checked(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    matches!(ext, "rs" | "toml" | "sh" | "py" | "yml" | "yaml")
        || name == "Dockerfile"
        || name == "run"
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            // Build outputs, data, vendored tools, the docs, and the generated overlays.
            let skipped = matches!(
                name,
                "target" | "docs" | ".git" | ".ferretdb" | "node_modules"
            ) || path.ends_with("deploy/k8s/overlays");
            if !skipped {
                walk(&path, out);
            }
        } else if is_checked(&path) {
            out.push(path);
        }
    }
}

/// The runtime names a line of code names as words.
fn names_in<'a>(line: &str, names: &[&'a str]) -> Vec<&'a str> {
    let words: Vec<&str> = line
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    names
        .iter()
        .copied()
        .filter(|n| words.contains(n))
        .collect()
}

#[test]
fn no_file_outside_the_registry_lists_runtimes_by_hand() {
    let names = brigade_runtimes::KNOWN;
    let mut files = Vec::new();
    walk(&root(), &mut files);
    let modules: Vec<PathBuf> = names
        .iter()
        .map(|n| root().join(format!("runtimes/src/{n}.rs")))
        .collect();
    let mut lists = Vec::new();
    for file in files.iter().filter(|f| !modules.contains(f)) {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let manifest = file.file_name().is_some_and(|n| n == "Cargo.toml");
        let mut in_features = false;
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.starts_with('[') {
                in_features = t == "[features]";
            }
            // Comments are prose (docs), and the feature lines are where a runtime is declared.
            if t.starts_with("//") || t.starts_with('#') || (manifest && in_features) {
                continue;
            }
            // Three names on one line of code is a list; one or two is a choice of examples.
            let named = names_in(t, names);
            if named.len() >= 3 {
                let shown = file.strip_prefix(root()).unwrap_or(file);
                lists.push(format!("{}:{}: {t}", shown.display(), i + 1));
            }
        }
    }
    assert!(
        lists.is_empty(),
        "runtime names listed by hand (derive them from the registry: \
         brigade_runtimes::names(), for_each_runtime!, or `brigade runtimes --json`):\n{}",
        lists.join("\n")
    );
}
