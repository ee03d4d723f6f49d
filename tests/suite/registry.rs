//! The runtime registry is the one list of runtimes, and the store registry the one list of store
//! backends: every suite covers what they list, every module has its feature lines, and no other
//! file of the repository lists runtimes or stores by hand.
//!
//! `runtimes/build.rs` derives the runtime registry from `runtimes/src/*.rs` and the crate's feature
//! lines, `services/kit/build.rs` the store registry from `services/kit/src/store/` and the kit's;
//! these tests keep the rest of the repository from growing its own lists again.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn for_each_runtime_covers_exactly_the_compiled_runtimes() {
    let mut covered: Vec<&str> = Vec::new();
    macro_rules! push {
        ($runtime:ident, $name:literal, $into:ident) => {
            $into.push($name);
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
            // Build outputs (`target`, and the `target-*` folders .gitignore keeps out), data,
            // vendored tools, the docs, and the generated overlays.
            let skipped = matches!(name, "docs" | ".git" | ".ferretdb" | "node_modules")
                || name.starts_with("target")
                || path.ends_with("deploy/k8s/overlays");
            if !skipped {
                walk(&path, out);
            }
        } else if is_checked(&path) {
            out.push(path);
        }
    }
}

/// The registry names a line of code names as words. `_` parts words too, so a name in an
/// identifier counts (`request_axum`); no runtime or store name has one.
fn names_in<'a>(line: &str, names: &[&'a str]) -> Vec<&'a str> {
    let words: Vec<&str> = line.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    names
        .iter()
        .copied()
        .filter(|n| words.contains(n))
        .collect()
}

/// Every line of code outside `own` (the registry's modules) that names three of `names` or
/// more, as `file:line: text`.
fn hand_lists(names: &[&str], own: &[PathBuf]) -> Vec<String> {
    let mut files = Vec::new();
    walk(&root(), &mut files);
    let mut lists = Vec::new();
    for file in files
        .iter()
        .filter(|f| !own.iter().any(|o| f.starts_with(o)))
    {
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
    lists
}

#[test]
fn no_file_outside_the_registry_lists_runtimes_by_hand() {
    let names = brigade_runtimes::KNOWN;
    let modules: Vec<PathBuf> = names
        .iter()
        .flat_map(|n| {
            let n = n.replace('-', "_");
            [
                root().join(format!("runtimes/src/{n}.rs")),
                root().join(format!("runtimes/src/{n}")),
            ]
        })
        .collect();
    let lists = hand_lists(names, &modules);
    assert!(
        lists.is_empty(),
        "runtime names listed by hand (derive them from the registry: \
         brigade_runtimes::names(), for_each_runtime!, or `brigade runtimes --json`):\n{}",
        lists.join("\n")
    );
}

/// Every store backend the kit has a module for, compiled in or not.
fn store_names() -> Vec<&'static str> {
    brigade_kit::store::StoreKind::KNOWN
        .iter()
        .map(|k| k.as_str())
        .collect()
}

#[test]
fn for_each_store_covers_exactly_the_compiled_stores() {
    let mut covered: Vec<&str> = Vec::new();
    macro_rules! push {
        ($store:ident, $kind:ident, $case:ident, $into:ident) => {
            $into.push(stringify!($store));
            assert_eq!(
                brigade_kit::store::StoreKind::$kind.as_str(),
                stringify!($store)
            );
        };
    }
    brigade_kit::for_each_store!(push!(covered));
    assert_eq!(covered, brigade_kit::store::names());
    // Built with every feature (as the tests are), every backend of the registry is compiled in.
    assert_eq!(covered, store_names());
    assert!(covered.len() >= 2, "{covered:?}");
}

#[test]
fn every_store_feature_is_forwarded_by_every_crate_that_serves() {
    let kit: toml::Table = std::fs::read_to_string(root().join("services/kit/Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let kit_features = kit["features"].as_table().expect("[features]");
    // A backend without a feature line of its own is always compiled in (memory).
    let featured: Vec<&str> = store_names()
        .into_iter()
        .filter(|n| kit_features.contains_key(*n))
        .collect();
    assert!(!featured.is_empty());
    let forwarding = [
        ("launch/Cargo.toml", "brigade-kit/"),
        ("Cargo.toml", "brigade-launch/"),
        ("examples/bookmarks/Cargo.toml", "brigade-launch/"),
    ];
    for (manifest, prefix) in forwarding {
        let text = std::fs::read_to_string(root().join(manifest)).unwrap();
        let table: toml::Table = text.parse().unwrap();
        let features = table["features"].as_table().expect("[features]");
        for name in &featured {
            let feature = features
                .get(*name)
                .and_then(|f| f.as_array())
                .unwrap_or_else(|| panic!("{manifest}: no feature {name}"));
            let forwarded = format!("{prefix}{name}");
            assert!(
                feature
                    .iter()
                    .any(|v| v.as_str() == Some(forwarded.as_str())),
                "{manifest}: feature {name} does not forward to {forwarded} ({feature:?})"
            );
        }
    }
}

#[test]
fn no_file_outside_the_registry_lists_stores_by_hand() {
    let names = store_names();
    let store = root().join("services/kit/src/store");
    let modules: Vec<PathBuf> = names
        .iter()
        .flat_map(|n| [store.join(format!("{n}.rs")), store.join(n)])
        .collect();
    let lists = hand_lists(&names, &modules);
    assert!(
        lists.is_empty(),
        "store names listed by hand (derive them from the registry: \
         brigade_kit::store::names(), StoreKind::compiled(), for_each_store!, or the `stores` of \
         `brigade runtimes --json`):\n{}",
        lists.join("\n")
    );
}

#[test]
fn the_request_fuzz_targets_are_the_runtimes_with_an_in_memory_server() {
    let text = std::fs::read_to_string(root().join("fuzz/Cargo.toml")).unwrap();
    let table: toml::Table = text.parse().unwrap();
    let mut targets: Vec<String> = table["bin"]
        .as_array()
        .expect("[[bin]]")
        .iter()
        .filter_map(|b| b["name"].as_str())
        .filter_map(|n| n.strip_prefix("request_"))
        .map(str::to_owned)
        .collect();
    targets.sort();
    let mut in_memory: Vec<String> = brigade_runtimes::RUNTIMES
        .iter()
        .filter(|r| r.has_memory_server())
        .map(|r| r.name.to_owned())
        .collect();
    in_memory.sort();
    assert_eq!(
        targets, in_memory,
        "fuzz/Cargo.toml's request_<runtime> targets (scripts/fuzz.sh reads them) are not the \
         runtimes with an in-memory server"
    );
}
