//! What a server binary says about itself before it is started: `BIN runtimes --json` (its
//! runtimes, stores and the services `--service all` serves), or the older text form of `brigade
//! runtimes` (one line per runtime, then `stores: ...`; no services), and `BIN --version`.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// What `BIN runtimes --json` prints.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// The runtimes compiled in, in the binary's order.
    pub runtimes: Vec<RuntimeInfo>,
    /// The store kinds compiled in.
    #[serde(default)]
    pub stores: Vec<String>,
    /// The services `serve --service all` starts, in port order (empty: not said).
    #[serde(default)]
    pub services: Vec<String>,
}

/// One runtime, as the binary describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeInfo {
    /// Its name (`--runtime NAME`).
    pub name: String,
    /// The runtime crate's version.
    #[serde(default)]
    pub version: String,
    /// How it uses threads.
    #[serde(default)]
    pub threading: String,
    /// The I/O engine its sockets run on (`tokio (epoll)`, or io_uring); empty where the binary
    /// does not say.
    #[serde(default)]
    pub engine: String,
    /// The runtime whose adapter this one is, on another I/O engine (`ntex` for `ntex-uring`).
    #[serde(default)]
    pub variant_of: Option<String>,
    /// The stack that serves `--protocol h3` on it; None where it offers no h3 (or the binary
    /// does not say).
    #[serde(default)]
    pub h3: Option<String>,
}

impl RuntimeInfo {
    /// A line for the report: `axum 0.8.4 — one multi-threaded tokio runtime`.
    pub fn describe(&self) -> String {
        let mut line = self.name.clone();
        if !self.version.is_empty() {
            line = format!("{line} {}", self.version);
        }
        if !self.threading.is_empty() {
            line = format!("{line} — {}", self.threading);
        }
        if !self.engine.is_empty() {
            line = format!("{line}; I/O: {}", self.engine);
        }
        line
    }

    /// [`Self::describe`] for a comparison over `protocol`: over h3, with the stack that served it.
    pub fn describe_over(&self, protocol: brigade_records::protocol::Protocol) -> String {
        match (&self.h3, protocol.quic()) {
            (Some(stack), true) => format!("{}; HTTP/3: {stack}", self.describe()),
            _ => self.describe(),
        }
    }
}

impl ServerInfo {
    /// Whether the runtime named `runtime` serves `protocol`: every protocol but h3, and h3 where
    /// the binary names the stack that serves it.
    pub fn offers(&self, runtime: &str, protocol: brigade_records::protocol::Protocol) -> bool {
        !protocol.quic()
            || self
                .runtimes
                .iter()
                .any(|r| r.name == runtime && r.h3.is_some())
    }

    /// Asks `binary`: `runtimes --json` first, the text form if the binary does not take `--json`.
    pub fn ask(binary: &Path) -> Result<ServerInfo> {
        let json = Command::new(binary)
            .args(["runtimes", "--json"])
            .output()
            .with_context(|| format!("Failed to run {} runtimes --json", binary.display()))?;
        if json.status.success() {
            if let Ok(info) = ServerInfo::parse_json(&String::from_utf8_lossy(&json.stdout)) {
                return Ok(info);
            }
        }
        let text = Command::new(binary)
            .arg("runtimes")
            .output()
            .with_context(|| format!("Failed to run {} runtimes", binary.display()))?;
        if !text.status.success() {
            bail!(
                "{} runtimes failed: {}",
                binary.display(),
                String::from_utf8_lossy(&text.stderr).trim()
            );
        }
        Ok(ServerInfo::parse_text(&String::from_utf8_lossy(
            &text.stdout,
        )))
    }

    /// Parses the `--json` form.
    pub fn parse_json(text: &str) -> Result<ServerInfo> {
        let info: ServerInfo =
            serde_json::from_str(text.trim()).context("not the JSON of `runtimes --json`")?;
        if info.runtimes.iter().any(|r| r.name.is_empty()) {
            bail!("a runtime without a name in `runtimes --json`");
        }
        Ok(info)
    }

    /// Parses the text form: a line per runtime, `NAME VERSION — THREADING` (its first word a
    /// name), and `stores: a, b`.
    pub fn parse_text(text: &str) -> ServerInfo {
        let mut info = ServerInfo::default();
        for line in text.lines() {
            if let Some(stores) = line.trim().strip_prefix("stores:") {
                info.stores = stores
                    .split(',')
                    .map(|s| s.trim().to_owned())
                    .filter(|s| !s.is_empty())
                    .collect();
                continue;
            }
            let Some(name) = line.split_whitespace().next() else {
                continue;
            };
            let is_name = name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !is_name {
                continue;
            }
            let rest = line.trim()[name.len()..].trim();
            let (version, threading) = match rest.split_once('—') {
                Some((v, t)) => (v.trim(), t.trim()),
                None => (rest, ""),
            };
            let (threading, engine) = match threading.split_once("; I/O: ") {
                Some((t, e)) => (t.trim(), e.trim()),
                None => (threading, ""),
            };
            info.runtimes.push(RuntimeInfo {
                name: name.to_owned(),
                version: version.to_owned(),
                threading: threading.to_owned(),
                engine: engine.to_owned(),
                variant_of: None,
                h3: None,
            });
        }
        info
    }

    /// The runtimes' names.
    pub fn runtime_names(&self) -> Vec<String> {
        self.runtimes.iter().map(|r| r.name.clone()).collect()
    }

    /// The runtimes a `--runtimes` list asks for: as given; `all` for every runtime; none for
    /// every runtime but the variants (`ntex-uring` answers what its engine changes, asked by
    /// name beside its sibling, not who wins).
    pub fn pick_runtimes(&self, asked: &[String]) -> Vec<String> {
        match asked {
            [] => self
                .runtimes
                .iter()
                .filter(|r| r.variant_of.is_none())
                .map(|r| r.name.clone())
                .collect(),
            [all] if all == "all" => self.runtime_names(),
            _ => asked.to_vec(),
        }
    }
}

/// The binary's own `--version` line, if it prints one.
pub fn binary_version(binary: &Path) -> Option<String> {
    let output = Command::new(binary).arg("--version").output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_form_lists_runtimes_stores_and_services() {
        let text = r#"{"runtimes":[{"name":"axum","version":"0.8.4","threading":"one multi-threaded tokio runtime"},
            {"name":"hyper","version":"1.7.0","threading":"one current-thread runtime per worker"}],
            "stores":["memory","embedded"],"services":["links","tags"]}"#;
        let info = ServerInfo::parse_json(text).unwrap();
        assert_eq!(info.runtime_names(), ["axum", "hyper"]);
        assert_eq!(info.pick_runtimes(&[]), ["axum", "hyper"]);
        assert_eq!(info.stores, ["memory", "embedded"]);
        assert_eq!(info.services, ["links", "tags"]);
        assert_eq!(
            info.runtimes[0].describe(),
            "axum 0.8.4 — one multi-threaded tokio runtime"
        );
        // Services and stores are optional; a runtime needs its name.
        let lean = ServerInfo::parse_json(r#"{"runtimes":[{"name":"warp"}]}"#).unwrap();
        assert!(lean.services.is_empty());
        assert_eq!(lean.runtimes[0].describe(), "warp");
        assert!(ServerInfo::parse_json(r#"{"runtimes":[{"name":""}]}"#).is_err());
        assert!(ServerInfo::parse_json("axum 0.8 — x").is_err());
    }

    #[test]
    fn the_default_runtimes_leave_the_engine_variants_out() {
        let info = ServerInfo::parse_json(
            r#"{"runtimes":[{"name":"ntex"},{"name":"hyper"},{"name":"ntex-uring","variant_of":"ntex"}]}"#,
        )
        .unwrap();
        assert_eq!(info.pick_runtimes(&[]), ["ntex", "hyper"]);
        assert_eq!(
            info.pick_runtimes(&["all".to_owned()]),
            ["ntex", "hyper", "ntex-uring"]
        );
        let asked = ["ntex".to_owned(), "ntex-uring".to_owned()];
        assert_eq!(info.pick_runtimes(&asked), asked);
    }

    #[test]
    fn the_text_form_is_read_without_services() {
        let text = "axum   0.8.4 — one multi-threaded tokio runtime\n\
                    actix  4.11.0 — N single-threaded arbiters; I/O: io_uring\n\
                    stores: memory, mongo\n";
        let info = ServerInfo::parse_text(text);
        assert_eq!(info.runtime_names(), ["axum", "actix"]);
        assert_eq!(info.runtimes[1].version, "4.11.0");
        assert_eq!(info.runtimes[1].threading, "N single-threaded arbiters");
        assert_eq!(info.runtimes[1].engine, "io_uring");
        assert_eq!(info.runtimes[0].engine, "");
        assert_eq!(info.stores, ["memory", "mongo"]);
        assert!(info.services.is_empty());
    }
}
