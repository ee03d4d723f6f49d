//! One comparison's report: what it measured ([`Measurements`]), what the judge derived
//! ([`Judged`]), both joined once into a [`Report`] with its notes; the versions and threads it ran
//! with.

use std::collections::BTreeMap;

use brigade_records::cpus::CpuPlan;
use brigade_records::result::Machine;
use serde::{Deserialize, Serialize};

use crate::settings::runs_words;
use crate::thresholds::RunCheck;
use crate::verdict::count;
use crate::{baseline, comparison, notes, setup};
use crate::{load_words, rule_words, side_words};
use crate::{CellVerdict, Row, RunRecord, ScenarioVerdict, ServerRecord, Settings, StateSetup};

/// Everything one comparison measured and decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// When the comparison started (RFC 3339, UTC).
    pub started_at: String,
    /// Wall-clock seconds the whole comparison took.
    pub wall_s: f64,
    /// The machine it ran on.
    pub machine: Machine,
    /// Versions of Brigade, the compiler and the measured crates.
    pub versions: Versions,
    /// How threads and CPUs were set up.
    pub threads: ThreadSetup,
    /// The settings it ran with.
    pub settings: Settings,
    /// How every run's store state was made fresh, and the preloaded data prepared for it.
    #[serde(default)]
    pub state: StateSetup,
    /// Each server process started (one per runtime, or one per runtime and round).
    pub servers: Vec<ServerRecord>,
    /// Every load run, in the order run.
    pub runs: Vec<RunRecord>,
    /// The table: medians per scenario, user count and runtime.
    pub rows: Vec<Row>,
    /// The verdict per scenario and user count.
    pub cells: Vec<CellVerdict>,
    /// The verdict per scenario.
    pub scenarios: Vec<ScenarioVerdict>,
    /// Every side-by-side level of every cell, window by window.
    #[serde(default)]
    pub side_by_side: Vec<brigade_records::side::SideCell>,
    /// Every judged comparison (best runtime of a cell against each other), one shape for every
    /// measure.
    #[serde(default)]
    pub comparisons: Vec<comparison::Comparison>,
    /// Every runtime measured under two labels in a side-by-side level (`hyper` / `hyper#2`,
    /// `axum` / `axum#loopback`), judged against each other.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<comparison::Comparison>,
    /// Caveats a reader should know (machine size, shared CPUs, failures).
    pub notes: Vec<String>,
    /// Every `--threshold` checked against every run (empty without thresholds).
    #[serde(default)]
    pub threshold_checks: Vec<RunCheck>,
    /// Every cell against a saved report (`--baseline`), if one was given.
    #[serde(default)]
    pub baseline: Option<baseline::Baseline>,
    /// Every `--slo` search: per runtime, scenario, user count and preload, the capacity, its
    /// bracket, its stall probe and the latency–rate curve (several independent searches each).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slo_searches: Vec<brigade_slo::SloSearch>,
    /// Where the comparison's time went, phase by phase (reports written before it have none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<setup::PhaseTime>,
    /// What the last conformance study found for these runtimes (read, not measured here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correctness: Option<crate::correctness::Correctness>,
}

/// What a comparison measured, and how: every part of its report but the judged ones.
#[derive(Debug, Clone)]
pub struct Measurements {
    /// When the comparison started (RFC 3339, UTC).
    pub started_at: String,
    /// Wall-clock seconds the whole comparison took.
    pub wall_s: f64,
    /// The machine it ran on.
    pub machine: Machine,
    /// Versions of Brigade, the compiler and the measured crates.
    pub versions: Versions,
    /// How threads and CPUs were set up.
    pub threads: ThreadSetup,
    /// The settings it ran with.
    pub settings: Settings,
    /// How every run's store state was made fresh.
    pub state: StateSetup,
    /// Each server process started.
    pub servers: Vec<ServerRecord>,
    /// Every load run, in the order run.
    pub runs: Vec<RunRecord>,
    /// Every side-by-side level of every cell.
    pub side_by_side: Vec<brigade_records::side::SideCell>,
    /// Every `--slo` search.
    pub slo_searches: Vec<brigade_slo::SloSearch>,
    /// Where the comparison's time went, phase by phase.
    pub phases: Vec<setup::PhaseTime>,
}

/// What judging a comparison's measurements gave: the parts of its report the judge derives.
#[derive(Debug, Clone, Default)]
pub struct Judged {
    /// The table: medians per scenario, user count and runtime.
    pub rows: Vec<Row>,
    /// The verdict per scenario and user count.
    pub cells: Vec<CellVerdict>,
    /// The verdict per scenario.
    pub scenarios: Vec<ScenarioVerdict>,
    /// Every judged comparison.
    pub comparisons: Vec<comparison::Comparison>,
    /// Every runtime measured under two labels, and every I/O-engine variant beside its sibling.
    pub pairs: Vec<comparison::Comparison>,
    /// Every `--threshold` checked against every run.
    pub threshold_checks: Vec<RunCheck>,
}

impl Report {
    /// The report of `measured` as `judged` it, its notes derived from both; no baseline.
    pub fn new(measured: Measurements, judged: Judged) -> Report {
        let report = Report {
            started_at: measured.started_at,
            wall_s: measured.wall_s,
            machine: measured.machine,
            versions: measured.versions,
            threads: measured.threads,
            settings: measured.settings,
            state: measured.state,
            servers: measured.servers,
            runs: measured.runs,
            rows: judged.rows,
            cells: judged.cells,
            scenarios: judged.scenarios,
            side_by_side: measured.side_by_side,
            comparisons: judged.comparisons,
            pairs: judged.pairs,
            notes: Vec::new(),
            threshold_checks: judged.threshold_checks,
            baseline: None,
            slo_searches: measured.slo_searches,
            phases: measured.phases,
            correctness: None,
        };
        Report {
            notes: notes::of(&report),
            ..report
        }
    }

    /// What this report measured, without what was judged of it (for `--rejudge`).
    pub fn into_measurements(self) -> Measurements {
        Measurements {
            started_at: self.started_at,
            wall_s: self.wall_s,
            machine: self.machine,
            versions: self.versions,
            threads: self.threads,
            settings: self.settings,
            state: self.state,
            servers: self.servers,
            runs: self.runs,
            side_by_side: self.side_by_side,
            slo_searches: self.slo_searches,
            phases: self.phases,
        }
    }

    /// This report with what a conformance study found for its runtimes, or without.
    pub fn with_correctness(self, correctness: Option<crate::correctness::Correctness>) -> Report {
        Report {
            correctness,
            ..self
        }
    }

    /// This report set against a saved one (`--baseline`), or against none.
    pub fn with_baseline(self, baseline: Option<baseline::Baseline>) -> Report {
        Report { baseline, ..self }
    }
}

/// Versions of what was measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Versions {
    /// Brigade's version (of the comparing binary).
    pub brigade: String,
    /// The server binary that was started.
    pub server_binary: String,
    /// What that binary says for `--version`, if anything.
    pub server_binary_version: Option<String>,
    /// The compiler Brigade was built with.
    pub rustc: String,
    /// Crate name → version(s) from the build's lock file.
    pub crates: BTreeMap<String, String>,
    /// Runtime → how the server binary describes it (`runtimes --json`).
    #[serde(default)]
    pub runtimes: BTreeMap<String, String>,
}

/// How CPUs and threads were set up; equal for every runtime.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadSetup {
    /// The CPU split between servers and generator.
    pub cpus: CpuPlan,
    /// `--workers` handed to every runtime.
    pub server_workers: u32,
    /// The worker count each runtime printed when it started (runtime → workers).
    pub workers_reported: BTreeMap<String, Option<u32>>,
    /// The server limits each runtime printed when it started (runtime → limits in words).
    #[serde(default)]
    pub limits_reported: BTreeMap<String, Option<String>>,
    /// Generator threads (one single-threaded tokio runtime each).
    pub generator_threads: u32,
}

impl Report {
    /// Where each runtime's server CPU and memory came from, when not from `/proc` (servers
    /// compare did not start), once per runtime and source.
    pub fn figure_sources(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for server in &self.servers {
            if let Some(source) = &server.source {
                let entry = (server.runtime.clone(), source.clone());
                if !out.contains(&entry) {
                    out.push(entry);
                }
            }
        }
        out
    }

    /// The comparison's setup section (machine, versions, threads, CPUs, settings, command line).
    pub fn setup(&self) -> setup::Setup {
        let t = &self.threads;
        let s = &self.settings;
        let mut out = setup::Setup {
            machine: self.machine.clone(),
            versions: self.versions.clone(),
            lines: Vec::new(),
            command_line: s.command_line.clone(),
        };
        out.line("Threads", self.threads_words())
            .line(
                "CPUs",
                format!(
                    "server {} / generator {}{}",
                    brigade_records::cpus::list(&t.cpus.server),
                    brigade_records::cpus::list(&t.cpus.generator),
                    if t.cpus.pinned {
                        ""
                    } else {
                        " (shared, not pinned)"
                    }
                ),
            )
            .line("Settings", self.settings_words())
            .line(
                "Interleaving",
                match &s.slo {
                    Some(slo) if s.repeat == 0 => slo.interleaving.clone(),
                    _ => s.interleaving.clone(),
                },
            );
        self.server_lines(&mut out);
        self.recorded_lines(&mut out);
        out
    }

    /// The setup's threads: the servers' workers (or that they are the servers' own) and the
    /// generator's threads.
    fn threads_words(&self) -> String {
        let t = &self.threads;
        let reported = t
            .workers_reported
            .iter()
            .map(|(rt, w)| format!("{rt} {}", w.map_or("?".to_owned(), |w| w.to_string())))
            .collect::<Vec<_>>()
            .join(", ");
        let servers = if self.settings.external {
            "the servers' own (started outside compare, which set neither their workers nor their \
             CPUs)"
                .to_owned()
        } else {
            format!(
                "every runtime `--workers {}` (as printed: {reported})",
                t.server_workers
            )
        };
        format!(
            "{servers}; generator {} thread(s); {}",
            t.generator_threads, t.cpus.note
        )
    }

    /// The setup's settings: what ran, how often, under which rule and load.
    fn settings_words(&self) -> String {
        let s = &self.settings;
        format!(
            "scenarios {}; {} {}; preload {}; {}; request timeout {} ms; {}; {}{}{}",
            s.scenarios.join(", "),
            match s.rate {
                Some(_) => "connections",
                None => "users",
            },
            s.users
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            s.preloads
                .iter()
                .map(|&n| count(n))
                .collect::<Vec<_>>()
                .join(", "),
            runs_words(s),
            s.timeout_ms,
            rule_words(&s.rule),
            load_words(s),
            s.seed
                .map(|seed| format!("; generator seed {seed} (every run)"))
                .unwrap_or_default(),
            if s.quick { "; --quick" } else { "" }
        )
    }

    /// The setup's lines on the servers, each when it applies: side by side, calibration, limits,
    /// how they started.
    fn server_lines(&self, out: &mut setup::Setup) {
        let s = &self.settings;
        if let Some(side) = &s.side_by_side {
            out.line("Side by side", side_words(side));
        }
        if !s.handicaps.is_empty() {
            out.line(
                "Calibration",
                s.handicaps
                    .iter()
                    .map(|(r, us)| format!("{r} --handicap-us {us}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
        }
        if !self.threads.limits_reported.is_empty() {
            out.line(
                "Server limits",
                setup::limits_text(&self.threads.limits_reported),
            );
        }
        if !s.services.is_empty() || !s.server_command.is_empty() {
            out.line(
                "Server",
                format!(
                    "services {} (as the server announced them); started as `{}`",
                    if s.services.is_empty() {
                        "?".to_owned()
                    } else {
                        s.services.join(", ")
                    },
                    s.server_command
                ),
            );
        }
    }

    /// The setup's lines recorded along the run: fresh state, the user's notes, where figures
    /// came from, the prepared data folders.
    fn recorded_lines(&self, out: &mut setup::Setup) {
        if !self.phases.is_empty() {
            out.line(
                "Where the time went",
                setup::phases_words(&self.phases, self.wall_s),
            );
        }
        if !self.state.how.is_empty() {
            out.line("Fresh state", self.state.how.clone());
        }
        for note in &self.settings.setup_notes {
            out.line(note.label.clone(), note.text.clone());
        }
        for (runtime, source) in self.figure_sources() {
            out.line(format!("Server figures, {runtime}"), source);
        }
        for p in &self.state.prepared {
            out.line(
                format!("Prepared data folder, preload {}", count(p.preload)),
                format!(
                    "filled in {:.2} s (server ready after {:.2} s), {:.1} MiB, {}",
                    p.fill_s,
                    p.startup_s,
                    p.bytes as f64 / (1024.0 * 1024.0),
                    p.stop.as_ref().map_or("?".to_owned(), ToString::to_string)
                ),
            );
        }
    }
}

/// `10 users` or `10 users, preload 1,000`.
pub fn cell_name(report: &Report, cell: &CellVerdict) -> String {
    if preload_varies(report) {
        format!("{} users, preload {}", cell.users, count(cell.preload))
    } else {
        format!("{} users", cell.users)
    }
}

/// Whether the report's cells differ by preload (then every cell names its own).
pub fn preload_varies(report: &Report) -> bool {
    report.settings.preloads.iter().any(|&n| n != 0)
}
