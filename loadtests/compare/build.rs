//! Records, at build time, the rustc version and the versions of the crates a comparison depends on
//! (the runtimes, tokio, the stores) from the workspace's `Cargo.lock`, so every report can say what
//! exactly was measured. Outside a workspace (no lock file found) the list is simply empty.

use std::path::PathBuf;

/// The crates whose versions a report prints.
const WATCHED: [&str; 9] = [
    "axum",
    "actix-web",
    "hyper",
    "warp",
    "tokio",
    "redb",
    "mongodb",
    "hdrhistogram",
    "serde_json",
];

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let lock = manifest.join("..").join("Cargo.lock");
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

    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("-V")
        .output()
        .ok()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .unwrap_or_default();
    println!("cargo:rustc-env=BRIGADE_RUSTC={version}");
}
