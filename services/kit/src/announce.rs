//! What a server built on the kit tells whoever started it, on stdout, one JSON object per line:
//! the contract between a server binary and `brigade compare`, a test or a script.
//!
//! - once each service is bound, an [`Announcement::Listening`]:
//!   `{"brigade":"listening","service":"bookmarks","url":"http://127.0.0.1:8090","runtime":"axum","store":"embedded","workers":2}`
//!   and, from servers that say, `"limits":"HTTP/1.1; header read 5 s; ..."` (the server limits in
//!   words, [`crate::limits::ServerLimits`]; `serve` adds its deadlines after them,
//!   [`crate::deadline::Deadlines`]);
//! - before those, for each collection `--preload N` filled, an [`Announcement::Preloaded`]:
//!   `{"brigade":"preloaded","service":..,"collection":..,"documents":N,"existing":N,"seconds":F}`;
//! - `runtimes --json` prints one [`RuntimesListing`]:
//!   `{"runtimes":[{"name":"axum","version":"...","threading":"..."}],"stores":[...],"services":[...]}`.
//!
//! Nothing else goes to stdout (logs go to stderr), so a reader can take every line that parses.
//! A reader ignores fields it does not know, so fields can be added without breaking it.

use serde::{Deserialize, Serialize};

/// One line a server prints on stdout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "brigade", rename_all = "snake_case")]
pub enum Announcement {
    /// A service is bound and about to serve.
    Listening(Listening),
    /// A collection was filled by `--preload` (printed before the service's `listening` line).
    Preloaded(Preloaded),
}

/// A service is bound: where to reach it and how it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listening {
    /// The service's name.
    pub service: String,
    /// Its base URL, as a client on this machine reaches it (`http://127.0.0.1:PORT`).
    pub url: String,
    /// The runtime serving it.
    pub runtime: String,
    /// Its store (`memory`, `embedded`, `mongo`).
    pub store: String,
    /// Its worker threads.
    pub workers: usize,
    /// The server limits it runs under, in words ([`crate::limits::ServerLimits`]'s one line);
    /// left out by servers that do not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<String>,
}

/// What `--preload` did to one collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Preloaded {
    /// The service.
    pub service: String,
    /// The collection.
    pub collection: String,
    /// Documents written.
    pub documents: u64,
    /// Documents it held already (when not 0, none were written).
    pub existing: u64,
    /// Seconds the fill took.
    pub seconds: f64,
}

impl Announcement {
    /// The announcement as its one line of JSON (no newline).
    pub fn line(&self) -> String {
        // A derived Serialize of plain strings and numbers cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads a stdout line; `None` unless it is an announcement (other lines are not).
    pub fn parse(line: &str) -> Option<Announcement> {
        let line = line.trim();
        if !line.starts_with('{') {
            return None;
        }
        serde_json::from_str(line).ok()
    }
}

/// `runtimes --json`: what a server binary can serve with and what it serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimesListing {
    /// The runtimes compiled in, the default (first) first.
    pub runtimes: Vec<RuntimeInfo>,
    /// The stores compiled in (`memory`, `embedded`, `mongo`).
    pub stores: Vec<String>,
    /// The services it serves, in the order `--service all` binds them (consecutive ports).
    pub services: Vec<String>,
}

/// One runtime compiled into a server binary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeInfo {
    /// Its name on the command line.
    pub name: String,
    /// The crate and version it is.
    pub version: String,
    /// How it uses threads.
    pub threading: String,
    /// The I/O engine its sockets run on (`tokio (epoll)`, or io_uring); absent from older
    /// binaries' listings.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub engine: String,
    /// The runtime whose adapter this one is, on another I/O engine (`ntex` for `ntex-uring`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant_of: Option<String>,
    /// The stack that serves `--protocol h3` on it (`h3 0.0.8 + h3-quinn 0.0.10 on quinn
    /// 0.11.12`); absent where it offers no h3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h3: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listening_line_is_exactly_the_documented_json() {
        let a = Announcement::Listening(Listening {
            service: "bookmarks".into(),
            url: "http://127.0.0.1:8090".into(),
            runtime: "axum".into(),
            store: "embedded".into(),
            workers: 2,
            limits: None,
        });
        let line = a.line();
        assert_eq!(
            line,
            r#"{"brigade":"listening","service":"bookmarks","url":"http://127.0.0.1:8090","runtime":"axum","store":"embedded","workers":2}"#
        );
        assert_eq!(Announcement::parse(&line), Some(a));
    }

    #[test]
    fn a_preloaded_line_round_trips_and_other_lines_are_not_announcements() {
        let a = Announcement::Preloaded(Preloaded {
            service: "s".into(),
            collection: "c".into(),
            documents: 200,
            existing: 0,
            seconds: 0.125,
        });
        assert_eq!(
            a.line(),
            r#"{"brigade":"preloaded","service":"s","collection":"c","documents":200,"existing":0,"seconds":0.125}"#
        );
        assert_eq!(Announcement::parse(&format!("  {}\n", a.line())), Some(a));
        for other in [
            "listening service=waiter url=http://127.0.0.1:1",
            "{\"brigade\":\"shouting\"}",
            "{\"service\":\"s\"}",
            "",
        ] {
            assert_eq!(Announcement::parse(other), None, "{other}");
        }
        // Fields a reader does not know are ignored.
        let newer = r#"{"brigade":"listening","service":"s","url":"u","runtime":"r","store":"memory","workers":1,"pid":7}"#;
        assert!(matches!(
            Announcement::parse(newer),
            Some(Announcement::Listening(_))
        ));
    }

    #[test]
    fn a_runtimes_listing_is_the_documented_json() {
        let l = RuntimesListing {
            runtimes: vec![RuntimeInfo {
                name: "axum".into(),
                version: "axum 0.8".into(),
                threading: "tokio".into(),
                engine: "tokio (epoll)".into(),
                variant_of: None,
                h3: None,
            }],
            stores: vec!["memory".into()],
            services: vec!["bookmarks".into()],
        };
        assert_eq!(
            serde_json::to_string(&l).unwrap(),
            r#"{"runtimes":[{"name":"axum","version":"axum 0.8","threading":"tokio","engine":"tokio (epoll)"}],"stores":["memory"],"services":["bookmarks"]}"#
        );
    }
}
