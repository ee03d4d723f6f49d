//! The first phase of a comparison: the settings the flags resolved to ([`CompareSettings`]),
//! checked once and turned into the [`Plan`] every later phase reads — the scenarios loaded and
//! named, the CPUs split, the worker and generator thread counts fixed, the isolated runs ordered,
//! the side-by-side cells listed and the report's settings written down. Launching, measuring,
//! judging and rendering take the plan (or the part they need) and never go back to the flags;
//! `compare --plan` prints it as JSON and runs nothing.

use std::borrow::Cow;
use std::collections::BTreeMap;

use anyhow::{bail, Context};
use brigade_load::scenario::Scenario;
use brigade_load::Registry;

use brigade_meter::order::{plan, Planned};

use crate::settings::CompareSettings;
use crate::state::FreshState;
use brigade_meter::pin;
use brigade_meter::runcpu::CpuShape;
use brigade_records::cpus::CpuPlan;

/// How runs are ordered and servers kept, in words, for the report.
const INTERLEAVING: &str =
    "isolated runs: a fresh server per run; the runs of each cell (scenario × users × \
    preload) made back to back, one per runtime, the runtime order rotating by one from cell to \
    cell and on into the next repeat";

/// One comparison's checked plan.
pub(crate) struct Plan<'s> {
    /// The settings, with scenario files renamed to the names they declare.
    pub settings: Cow<'s, CompareSettings>,
    /// The scenarios, loaded, in the order of `settings.scenarios`.
    pub scenarios: Vec<Scenario>,
    /// The services every server announces, when known before the first one starts.
    pub services: Option<Vec<String>>,
    /// What the external servers said their stores are (empty: compare starts the servers).
    pub external_stores: Vec<String>,
    /// How every run's state is made fresh, in words.
    pub fresh_words: String,
    /// The CPU split between the servers and the generator.
    pub cpus: CpuPlan,
    /// `--workers` for every server.
    pub workers: u32,
    /// Generator threads.
    pub threads: u32,
    /// The isolated runs, in the order to make them (empty without isolated runs).
    pub runs: Vec<Planned>,
}

/// One side-by-side cell: indices into the plan's scenarios, with its preload and users.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SideCellPlan {
    /// Index into the scenarios.
    pub scenario: usize,
    /// Documents per collection preloaded.
    pub preload: u64,
    /// Closed-loop users (the connections of its open-loop levels).
    pub users: u32,
}

impl<'s> Plan<'s> {
    /// Checks `settings` and makes the plan: everything a typo or a missing server would fail is
    /// failed here, before the first server starts.
    pub(crate) fn check(settings: &'s CompareSettings) -> anyhow::Result<Self> {
        check_counts(settings)?;
        let scenarios = load_scenarios(&settings.scenarios, &settings.registry)?;
        // A scenario given as a file is reported under the name its file gives it, not its path.
        let settings = match scenario_labels(&settings.scenarios, &scenarios, &settings.registry) {
            Some(labels) => Cow::Owned(CompareSettings {
                scenarios: labels,
                ..settings.clone()
            }),
            None => Cow::Borrowed(settings),
        };
        // The services come from the server: from its `runtimes --json` now when it says, else
        // from the first server's announcements; a scenario naming another is refused either way.
        let services = settings.expected_services();
        if let Some(known) = &services {
            check_scenarios(&scenarios, known)?;
        }
        // Servers compare did not start: all of them ready and serving the runtime they are
        // listed under, and every scenario's services among theirs.
        let external_stores = crate::external::check_all(&settings.external)?;
        for external in &settings.external {
            check_scenarios(&scenarios, &external.services.names())?;
        }
        let fresh_words = if settings.external.is_empty() {
            FreshState::describe(&settings.store, &settings.preloads)
        } else {
            crate::external::STATE.to_owned()
        };
        let cpus = settings.cpus.plan(&pin::available_cpus())?;
        let workers = settings.workers.unwrap_or(cpus.server.len().max(1) as u32);
        let threads = settings
            .threads
            .unwrap_or(cpus.generator.len().max(1) as u32);
        let runs = if settings.isolated {
            plan(
                settings.runtimes.len(),
                settings.scenarios.len(),
                &settings.users,
                &settings.preloads,
                settings.repeat,
            )
        } else {
            Vec::new()
        };
        Ok(Plan {
            settings,
            scenarios,
            services,
            external_stores,
            fresh_words,
            cpus,
            workers,
            threads,
            runs,
        })
    }

    /// The CPU split as the verdicts see it.
    pub(crate) fn shape(&self) -> CpuShape {
        CpuShape {
            generator_cpus: self.cpus.generator.len(),
            server_cpus: self.cpus.server.len(),
            pinned: self.cpus.pinned,
        }
    }

    /// The side-by-side cells, in the order they run: scenario, preload, users (none when side by
    /// side is off).
    pub(crate) fn side_cells(&self) -> Vec<SideCellPlan> {
        let settings = &self.settings;
        if !settings.side.enabled {
            return Vec::new();
        }
        let mut cells = Vec::new();
        for scenario in 0..self.scenarios.len() {
            for &preload in &settings.preloads {
                for &users in &settings.users {
                    cells.push(SideCellPlan {
                        scenario,
                        preload,
                        users,
                    });
                }
            }
        }
        cells
    }

    /// Whether to count instructions per request under callgrind (`--instructions`, servers
    /// compare starts).
    pub(crate) fn counts_instructions(&self) -> bool {
        self.settings.side.instructions && self.settings.external.is_empty()
    }

    /// `--slo`: the SLOs to search capacity under, if asked.
    pub(crate) fn slo(&self) -> Option<&crate::settings::SloPlan> {
        self.settings.slo.as_ref()
    }

    /// Refuses the comparison when a scenario talks to a service the first server announced it
    /// does not serve.
    pub(crate) fn check_services(&self, services: &[String]) -> anyhow::Result<()> {
        check_scenarios(&self.scenarios, services)
    }

    /// How threads are set up, before any server said what it started with.
    pub(crate) fn thread_setup(&self) -> brigade_report::ThreadSetup {
        brigade_report::ThreadSetup {
            cpus: self.cpus.clone(),
            server_workers: self.workers,
            workers_reported: BTreeMap::new(),
            limits_reported: BTreeMap::new(),
            generator_threads: self.threads,
        }
    }

    /// The report's settings section, with the services the servers announced (or were known to).
    pub(crate) fn report_settings(
        &self,
        services: Option<Vec<String>>,
    ) -> brigade_report::Settings {
        let settings = &self.settings;
        let external = !settings.external.is_empty();
        brigade_report::Settings {
            runtimes: settings.runtimes.clone(),
            store: if !external || self.external_stores.is_empty() {
                settings.store.clone()
            } else {
                self.external_stores.join(", ")
            },
            scenarios: settings.scenarios.clone(),
            users: settings.users.clone(),
            preloads: settings.preloads.clone(),
            duration_s: settings.duration.as_secs_f64(),
            warmup_s: settings.warmup.as_secs_f64(),
            repeat: if settings.isolated {
                settings.repeat
            } else {
                0
            },
            rule: settings.rule,
            side_by_side: self.side_setup(),
            handicaps: settings.handicaps.clone(),
            engine_variants: self.engine_variants(),
            timeout_ms: settings.timeout.as_millis() as u64,
            quick: settings.quick,
            interleaving: if external {
                INTERLEAVING.replacen(
                    "a fresh server per run",
                    "the same servers for every run (--external)",
                    1,
                )
            } else {
                INTERLEAVING.to_owned()
            },
            command_line: settings.command_line.clone(),
            services: services.unwrap_or_default(),
            server_command: if external {
                crate::external::server_words(&settings.external, &self.external_stores)
            } else {
                settings.launch.describe()
            },
            keepalive: settings.keepalive,
            protocol: settings.wire.protocol,
            streams: settings.wire.effective_streams(),
            rate: settings.rate,
            seed: Some(settings.seed),
            thresholds: settings
                .thresholds
                .iter()
                .map(ToString::to_string)
                .collect(),
            external,
            slo: crate::capacity::setup(settings),
            setup_notes: settings
                .setup_notes
                .iter()
                .map(|(label, text)| brigade_report::setup::SetupLine {
                    label: label.clone(),
                    text: text.clone(),
                })
                .collect(),
        }
    }

    /// The side-by-side settings as the report records them (None when side by side is off).
    fn side_setup(&self) -> Option<brigade_report::SideSetup> {
        let side = &self.settings.side;
        side.enabled.then(|| brigade_report::SideSetup {
            levels: side.levels.clone(),
            rates: side.rates.clone(),
            rounds: side.rounds,
            windows: side.windows,
            window_s: side.window_s,
            warmup_s: side.warmup.as_secs_f64(),
            count_s: side.count_s,
            budget_s: side.budget.as_secs_f64(),
        })
    }

    /// Every compared runtime that is an I/O-engine variant of another compared one, with that
    /// sibling (`ntex-uring` → `ntex`).
    fn engine_variants(&self) -> std::collections::BTreeMap<String, String> {
        let settings = &self.settings;
        settings
            .server_info
            .runtimes
            .iter()
            .filter(|r| settings.runtimes.contains(&r.name))
            .filter_map(|r| {
                let sibling = r.variant_of.as_ref()?;
                settings
                    .runtimes
                    .contains(sibling)
                    .then(|| (r.name.clone(), sibling.clone()))
            })
            .collect()
    }

    /// Says on the terminal what is about to run, and for about how long.
    pub(crate) fn announce(&self) {
        let settings = &self.settings;
        if settings.external.iter().any(|e| e.cgroups.is_empty()) {
            println!(
                "Side by side: skipped — an external runtime without --external-cgroup has no CPU \
                 counter fine enough for 1-second windows (its /metrics count 10 ms ticks)"
            );
        }
        let estimate = settings.estimate_s() as u64;
        let (min, s) = (estimate / 60, estimate % 60);
        if settings.isolated || settings.slo.is_none() {
            println!(
                "brigade compare: {} runtimes × {} scenarios × {} user counts × {} preload(s) × \
                 {} repeat(s) = {} runs of {} s (+{} s warm-up), each on a fresh server; about \
                 {min} min {s} s",
                settings.runtimes.len(),
                settings.scenarios.len(),
                settings.users.len(),
                settings.preloads.len(),
                settings.repeat,
                settings.run_count(),
                settings.duration.as_secs_f64(),
                settings.warmup.as_secs_f64(),
            );
        } else {
            println!(
                "brigade compare --slo: {} runtimes × {} scenarios × {} user counts × {} \
                 preload(s), {} independent search(es) each; about {min} min {s} s",
                settings.runtimes.len(),
                settings.scenarios.len(),
                settings.users.len(),
                settings.preloads.len(),
                settings.slo.as_ref().map_or(1, |slo| slo.args.slo_searches),
            );
        }
        if let Some(slo) = &settings.slo {
            println!(
                "SLO search at {}: every runtime × scenario × users × preload, {} independent \
                 search(es) each; steps of {} sub-windows of {} s (+{} s warm-up) on a fresh \
                 server each, a rate pooled up to {} sub-windows, bracket to {}%",
                slo.args.slo.join(", "),
                slo.args.slo_searches,
                slo.args.slo_windows,
                settings.duration.as_secs_f64(),
                settings.warmup.as_secs_f64(),
                slo.args.slo_max_windows,
                slo.args.slo_precision
            );
        }
        println!(
            "CPUs: {}; every runtime --workers {}; generator {} thread(s)",
            self.cpus.note, self.workers, self.threads
        );
        println!("Fresh state: {}", self.fresh_words);
        println!("Reports and server logs: {}", settings.out_dir.display());
    }

    /// The plan as `compare --plan` prints it: the report's settings, the threads, every
    /// isolated run and side-by-side cell by name, and the time it expects.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        let settings = &self.settings;
        let label = |i: usize| settings.scenarios[i].clone();
        let runs: Vec<serde_json::Value> = self
            .runs
            .iter()
            .map(|run| {
                serde_json::json!({
                    "repeat": run.repeat + 1,
                    "runtime": settings.runtimes[run.runtime],
                    "scenario": label(run.scenario),
                    "users": run.users,
                    "preload": run.preload,
                })
            })
            .collect();
        let cells: Vec<serde_json::Value> = self
            .side_cells()
            .iter()
            .map(|cell| {
                serde_json::json!({
                    "scenario": label(cell.scenario),
                    "preload": cell.preload,
                    "users": cell.users,
                })
            })
            .collect();
        serde_json::json!({
            "settings": self.report_settings(self.services.clone()),
            "threads": self.thread_setup(),
            "fresh_state": self.fresh_words,
            "out_dir": settings.out_dir,
            "baselines": settings.baselines,
            "isolated_runs": runs,
            "side_by_side_cells": cells,
            "instructions": settings.side.instructions && settings.external.is_empty(),
            "estimate_s": settings.estimate_s().round(),
        })
    }
}

/// Refuses settings with nothing to compare.
fn check_counts(settings: &CompareSettings) -> anyhow::Result<()> {
    if settings.runtimes.is_empty()
        || settings.scenarios.is_empty()
        || settings.users.is_empty()
        || settings.preloads.is_empty()
    {
        bail!("nothing to compare: give at least one runtime, scenario, user count and preload");
    }
    if settings.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    Ok(())
}

/// Loads every scenario by name or file.
fn load_scenarios(names: &[String], registry: &Registry) -> anyhow::Result<Vec<Scenario>> {
    names
        .iter()
        .map(|name| {
            registry
                .load(name)
                .with_context(|| format!("Failed to load scenario {name:?}"))
        })
        .collect()
}

/// The names the report gives the scenarios asked for by `args`: a registered name stays, a file
/// becomes the `name` it declares (unless two would share a name); `None` when nothing changes.
fn scenario_labels(
    args: &[String],
    scenarios: &[Scenario],
    registry: &Registry,
) -> Option<Vec<String>> {
    let labels: Vec<String> = args
        .iter()
        .zip(scenarios)
        .map(|(arg, scenario)| match registry.toml(arg) {
            Some(_) => arg.clone(),
            None => scenario.name().to_owned(),
        })
        .collect();
    let distinct: std::collections::BTreeSet<&String> = labels.iter().collect();
    (labels != args && distinct.len() == labels.len()).then_some(labels)
}

/// Refuses the comparison when a scenario talks to a service the server does not announce.
fn check_scenarios(scenarios: &[Scenario], services: &[String]) -> anyhow::Result<()> {
    for scenario in scenarios {
        brigade_meter::servers::announce::refuse_unknown(
            services,
            scenario.label(),
            &scenario.services(),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &std::path::Path, stem: &str, name: &str) -> String {
        let path = dir.join(format!("{stem}.toml"));
        std::fs::write(
            &path,
            format!("name = \"{name}\"\n[[request]]\npath = \"/\"\n"),
        )
        .unwrap();
        path.to_string_lossy().into_owned()
    }

    #[test]
    fn a_scenario_file_is_reported_under_its_declared_name_unless_two_would_clash() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::new();
        let load = |args: &[String]| -> Vec<Scenario> {
            args.iter().map(|a| registry.load(a).unwrap()).collect()
        };
        let args = vec!["hello".to_owned(), file(dir.path(), "a", "mine")];
        assert_eq!(
            scenario_labels(&args, &load(&args), &registry),
            Some(vec!["hello".to_owned(), "mine".to_owned()])
        );
        // Registered names alone: nothing to change.
        let args = vec!["hello".to_owned()];
        assert_eq!(scenario_labels(&args, &load(&args), &registry), None);
        // Two files declaring one name keep their paths, so their rows stay apart.
        let args = vec![file(dir.path(), "b", "same"), file(dir.path(), "c", "same")];
        assert_eq!(scenario_labels(&args, &load(&args), &registry), None);
    }
}
