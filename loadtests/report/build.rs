//! Records, at build time, the versions of the crates a comparison depends on beside the runtimes
//! (tokio, the stores) from the workspace's `Cargo.lock` (the nearest one above this crate), so every report
//! can say what exactly was measured. Outside a workspace (no lock file found) the list is simply
//! empty. The compiler's version comes from `brigade-load`'s build.

use std::path::PathBuf;

/// The crates whose versions a report prints beside the runtimes' own version lines (which the
/// runtimes' registry derives from the same lock file).
const WATCHED: [&str; 7] = [
    "tokio",
    "redb",
    "mongodb",
    "hdrhistogram",
    "serde_json",
    "rustls",
    "h2",
];

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let lock = manifest
        .ancestors()
        .map(|dir| dir.join("Cargo.lock"))
        .find(|lock| lock.exists())
        .unwrap_or_else(|| manifest.join("Cargo.lock"));
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={}", lock.display());

    let mut found: Vec<(String, Vec<String>)> = Vec::new();
    if let Ok(text) = std::fs::read_to_string(&lock) {
        let mut name: Option<String> = None;
        for line in text.lines() {
            if line.trim() == "[[package]]" {
                name = None;
            } else if let Some(value) = line.strip_prefix("name = ") {
                name = Some(value.trim_matches('"').to_owned());
            } else if let Some(value) = line.strip_prefix("version = ") {
                if let Some(n) = name.take().filter(|n| WATCHED.contains(&n.as_str())) {
                    let version = value.trim_matches('"').to_owned();
                    match found.iter_mut().find(|(k, _)| *k == n) {
                        Some((_, versions)) => versions.push(version),
                        None => found.push((n, vec![version])),
                    }
                }
            }
        }
    }
    found.sort();
    let list: Vec<String> = found
        .into_iter()
        .map(|(name, versions)| format!("{name}={}", versions.join("/")))
        .collect();
    println!("cargo:rustc-env=BRIGADE_CRATE_VERSIONS={}", list.join(","));
}
