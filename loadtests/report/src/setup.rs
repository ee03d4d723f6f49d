//! The setup section every report carries, whatever it measured: the machine, the versions, then
//! labelled lines (threads and CPUs, settings, how runs were arranged) and the command line. The
//! comparison builds one from its [`super::Report`] ([`super::Report::setup`]), a study builds one
//! for its [`super::study::StudyReport`]; both are rendered here, once, so a reader finds the same
//! section in the same words in every `report.md` and `report.html`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::Versions;
use brigade_records::result::Machine;

/// What ran where, with what: the setup section of a report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Setup {
    /// The machine it ran on.
    pub machine: Machine,
    /// Versions of Brigade, the compiler and the measured crates.
    pub versions: Versions,
    /// Labelled lines after the machine and versions, in order (`Threads`, `CPUs`, `Settings`, ...).
    pub lines: Vec<SetupLine>,
    /// The command line as given.
    pub command_line: String,
}

/// One phase of a comparison and the time it took (`server starts`: 412 s over 96 starts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseTime {
    /// The phase, in words.
    pub phase: String,
    /// Seconds it took in all.
    pub seconds: f64,
    /// How many times it ran.
    pub count: u32,
}

/// `server starts 6 min 52 s (96×, 30%), …; the rest 12 s` of a run of `wall_s` seconds.
pub fn phases_words(phases: &[PhaseTime], wall_s: f64) -> String {
    let share = |s: f64| {
        if wall_s > 0.0 {
            format!(", {:.0}%", 100.0 * s / wall_s)
        } else {
            String::new()
        }
    };
    let mut words: Vec<String> = phases
        .iter()
        .map(|p| {
            format!(
                "{} {} ({}×{})",
                p.phase,
                crate::render::duration_words(p.seconds),
                p.count,
                share(p.seconds)
            )
        })
        .collect();
    // The budget's rounds are counted in the side-by-side phases too: not in the sum.
    let counted: f64 = phases
        .iter()
        .filter(|p| !p.phase.starts_with("of these"))
        .map(|p| p.seconds)
        .sum();
    if wall_s > counted {
        words.push(format!(
            "the rest (reports, between phases) {}",
            crate::render::duration_words(wall_s - counted)
        ));
    }
    words.join("; ")
}

/// One labelled line of the setup section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetupLine {
    /// What the line is about (`Threads`).
    pub label: String,
    /// The line itself.
    pub text: String,
}

impl Setup {
    /// Adds a labelled line.
    pub fn line(&mut self, label: impl Into<String>, text: impl Into<String>) -> &mut Setup {
        self.lines.push(SetupLine {
            label: label.into(),
            text: text.into(),
        });
        self
    }

    fn machine_text(&self) -> String {
        let m = &self.machine;
        format!(
            "{} — {} ({} cores), {} MiB, {}",
            m.hostname, m.cpu, m.cores, m.memory_mib, m.os
        )
    }

    fn crates_text(&self) -> String {
        self.versions
            .crates
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The section as markdown: a `## Setup` heading and one bullet per line.
    pub fn markdown(&self) -> String {
        let v = &self.versions;
        let mut out = String::from("## Setup\n\n");
        let _ = writeln!(out, "- Machine: {}", self.machine_text());
        let crates = self.crates_text();
        let _ = writeln!(
            out,
            "- Versions: brigade {}, {}{}{}",
            v.brigade,
            v.rustc,
            if crates.is_empty() {
                String::new()
            } else {
                format!("; {crates}")
            },
            v.server_binary_version
                .as_ref()
                .map(|b| format!("; server binary: {b}"))
                .unwrap_or_default()
        );
        for line in v.runtimes.values() {
            let _ = writeln!(out, "- Runtime: {line}");
        }
        for line in &self.lines {
            let _ = writeln!(out, "- {}: {}", line.label, line.text);
        }
        let _ = writeln!(out, "- Command: `{}`\n", self.command_line);
        out
    }

    /// The section as HTML: an `<h2>` and a two-column table, one row per line.
    pub fn html(&self) -> String {
        let v = &self.versions;
        let mut out = String::from("<h2>Setup</h2>\n<table>\n");
        let mut row = |k: &str, text: &str| {
            let _ = writeln!(
                out,
                "<tr><th>{}</th><td>{}</td></tr>",
                super::render::esc(k),
                super::render::esc(text)
            );
        };
        row("machine", &self.machine_text());
        row("brigade", &format!("{} ({})", v.brigade, v.rustc));
        row("crates", &self.crates_text());
        for (runtime, description) in &v.runtimes {
            row(&format!("runtime {runtime}"), description);
        }
        if !v.server_binary.is_empty() {
            row(
                "server binary",
                &format!(
                    "{} {}",
                    v.server_binary,
                    v.server_binary_version.clone().unwrap_or_default()
                ),
            );
        }
        for line in &self.lines {
            row(&line.label, &line.text);
        }
        row("command", &self.command_line);
        out.push_str("</table>\n");
        out
    }
}

/// The server limits as the runtimes announced them: one line when every runtime said the same
/// (as Brigade's servers do), else one entry per runtime ("not said" for a server that did not).
pub fn limits_text(reported: &BTreeMap<String, Option<String>>) -> String {
    let said: Vec<Option<&str>> = reported.values().map(Option::as_deref).collect();
    match said.first() {
        Some(Some(first)) if said.iter().all(|l| *l == Some(*first)) => {
            format!("every runtime: {first}")
        }
        _ => reported
            .iter()
            .map(|(rt, l)| format!("{rt}: {}", l.as_deref().unwrap_or("not said")))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// The versions of this build: Brigade's, the compiler's and the measured crates' (from the lock
/// file at build time); the server binary and runtimes are left for the caller to fill.
pub fn build_versions() -> Versions {
    Versions {
        brigade: env!("CARGO_PKG_VERSION").to_owned(),
        rustc: brigade_records::result::rustc().to_owned(),
        crates: env!("BRIGADE_CRATE_VERSIONS")
            .split(',')
            .filter_map(|pair| pair.split_once('='))
            .map(|(name, version)| (name.to_owned(), version.to_owned()))
            .collect(),
        ..Versions::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Setup {
        let mut setup = Setup {
            machine: Machine {
                hostname: "box".into(),
                cpu: "Example CPU".into(),
                cores: 2,
                memory_mib: 24_000,
                os: "Linux".into(),
                ..Machine::default()
            },
            versions: build_versions(),
            lines: Vec::new(),
            command_line: "brigade study storage --quick".into(),
        };
        setup
            .line("Threads", "one client")
            .line("Settings", "a < b");
        setup
    }

    #[test]
    fn markdown_and_html_carry_every_line_in_order() {
        let setup = sample();
        let md = setup.markdown();
        assert!(md.starts_with("## Setup\n\n- Machine: box — Example CPU (2 cores)"));
        let threads = md.find("- Threads: one client").unwrap();
        let settings = md.find("- Settings: a < b").unwrap();
        assert!(threads < settings);
        assert!(md.contains("- Command: `brigade study storage --quick`"));
        let html = setup.html();
        assert!(html.contains("<tr><th>Threads</th><td>one client</td></tr>"));
        assert!(html.contains("a &lt; b"), "escaped: {html}");
        assert!(
            !html.contains("server binary"),
            "no server binary, no row for it"
        );
    }

    #[test]
    fn limits_are_one_line_when_equal_and_per_runtime_otherwise() {
        let same = BTreeMap::from([
            ("axum".to_owned(), Some("HTTP/1.1; x".to_owned())),
            ("warp".to_owned(), Some("HTTP/1.1; x".to_owned())),
        ]);
        assert_eq!(limits_text(&same), "every runtime: HTTP/1.1; x");
        let differ = BTreeMap::from([
            ("axum".to_owned(), Some("a".to_owned())),
            ("warp".to_owned(), None),
        ]);
        assert_eq!(limits_text(&differ), "axum: a; warp: not said");
    }

    #[test]
    fn build_versions_name_this_build() {
        let v = build_versions();
        assert_eq!(v.brigade, env!("CARGO_PKG_VERSION"));
        assert!(v.server_binary.is_empty());
    }
}
