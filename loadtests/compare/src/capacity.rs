//! `brigade compare --slo`: every runtime's capacity at the SLOs — the highest open-loop rate at
//! which every SLO holds over a measured window — found by the search of [`brigade_slo`],
//! per scenario, user count (the connections sending the schedule) and preload.
//!
//! Every step is a run as the isolated runs make them: a fresh server on the run's fresh state,
//! alone on the server CPUs, loaded for `--warmup` and then measured for `--duration` while
//! `/proc` is sampled ([`crate::measure`]). So a step never finds what an earlier one wrote, and
//! the data a step grows is the same for every runtime at that rate. The runtimes' searches go
//! step by step in rounds, the order rotating by one each round ([`brigade_slo::interleave`]),
//! so that drift on a shared machine lands on all of them alike. Against `--external` servers the
//! steps load the same servers, as the isolated runs do.

use std::io::Write as _;
use std::time::Instant;

use brigade_load::scenario::Scenario;
use brigade_slo::{self as slo, Measured, Search, SloSearch};

use crate::measure::{Bench, Served};
use crate::settings::SloPlan;
use brigade_meter::order::Planned;
use brigade_report::{self as report, RunRecord};

/// How each step's server is made and the steps ordered, in words, for the report.
pub(crate) const INTERLEAVING: &str =
    "a fresh server per step on the same fresh state as every isolated run (so no step finds what \
     an earlier one wrote), alone on the server CPUs; the runtimes' searches step in rounds, one \
     step each, the order rotating by one from round to round";

/// How the steps' servers are made against `--external` servers, in words.
pub(crate) const EXTERNAL_INTERLEAVING: &str =
    "the same external servers for every step (compare did not start them); the runtimes' \
     searches step in rounds, one step each, the order rotating by one from round to round";

/// How `settings`' steps are made and ordered, in words.
fn steps_words(settings: &crate::settings::CompareSettings) -> &'static str {
    if settings.external.is_empty() {
        INTERLEAVING
    } else {
        EXTERNAL_INTERLEAVING
    }
}

/// What the searches found, and the first server of each runtime (its workers and limits for the
/// report's setup).
pub(crate) struct Searched {
    /// One search per runtime × scenario × users × preload.
    pub searches: Vec<SloSearch>,
    /// The first server each runtime started, with what it said.
    pub served: Vec<Served>,
    /// Runs made (steps and closed-loop probes), for numbering the next runs' logs.
    pub runs: usize,
}

/// What a step's run measured, as the search reads it.
fn measured(record: &RunRecord, rate: f64) -> Measured {
    match &record.result {
        Some(result) => Measured {
            // Saturated generator CPUs are the generator's doing unless other processes took
            // them: a contended step counts, marked, and its latency shows what it cost.
            generator_bound: record
                .generator_bound
                .clone()
                .filter(|_| record.contended.is_none()),
            server_cpu_us_per_request: record.server_cpu_us_per_request(),
            contended: record.contended.clone(),
            ..Measured::from_result(rate, result)
        },
        None => Measured::failed(
            rate,
            record
                .error
                .clone()
                .unwrap_or_else(|| "no result".to_owned()),
        ),
    }
}

/// Every cell's searches, interleaved across runtimes; `runs` are the isolated runs already made
/// (their rates start the searches when there is no `--slo-start`), `first_index` numbers the
/// steps' logs after them.
pub(crate) fn search_all(
    bench: &Bench<'_>,
    plan: &SloPlan,
    scenarios: &[Scenario],
    runs: &[RunRecord],
    first_index: usize,
) -> Searched {
    let settings = bench.settings;
    let mut out = Searched {
        searches: Vec::new(),
        served: Vec::new(),
        runs: 0,
    };
    let mut cell = 0usize;
    for (s, (scenario, label)) in scenarios.iter().zip(&settings.scenarios).enumerate() {
        for &preload in &settings.preloads {
            for &users in &settings.users {
                let at = Cell {
                    scenario: s,
                    label,
                    users,
                    preload,
                    rotation: cell,
                };
                let found = search_cell(bench, plan, scenario, &at, runs, first_index, &mut out);
                out.searches.extend(found);
                cell += 1;
            }
        }
    }
    out
}

/// Where a cell lies.
struct Cell<'a> {
    scenario: usize,
    label: &'a str,
    users: u32,
    preload: u64,
    rotation: usize,
}

/// One cell: every runtime's start rate, then `--slo-searches` rounds, each a probe of the
/// machine's own stalls and then every runtime's search, interleaved, on fresh servers per step.
fn search_cell(
    bench: &Bench<'_>,
    plan: &SloPlan,
    scenario: &Scenario,
    at: &Cell<'_>,
    runs: &[RunRecord],
    first_index: usize,
    out: &mut Searched,
) -> Vec<SloSearch> {
    let settings = bench.settings;
    let runtimes = &settings.runtimes;
    let mut run = |runtime: usize, rate: Option<f64>, progress: String| -> RunRecord {
        let planned = Planned {
            repeat: 0,
            runtime,
            scenario: at.scenario,
            users: at.users,
            preload: at.preload,
            rate,
        };
        let (record, served) = bench.run(first_index + out.runs, &planned, scenario, &progress);
        out.runs += 1;
        if let Some(served) = served {
            if !out
                .served
                .iter()
                .any(|s| s.record.runtime == served.record.runtime)
            {
                out.served.push(served);
            }
        }
        let _ = std::io::stdout().flush();
        record
    };
    let head = |r: usize| format!("[slo] {} {} {} users", runtimes[r], at.label, at.users);
    let mut starts = Vec::new();
    for k in 0..runtimes.len() {
        let r = (k + at.rotation) % runtimes.len();
        let (start, from) = start_rate(plan, runs, &runtimes[r], at, || {
            run(r, None, format!("{}: closed-loop probe", head(r)))
        });
        starts.push((r, start, from));
    }
    starts.sort_by_key(|(r, _, _)| *r);
    (0..plan.args.slo_searches)
        .flat_map(|round| search_round(bench, plan, at, &starts, round, &mut run))
        .collect()
}

/// Round `round` of a cell: the stall probe, then every runtime's search from its start rate,
/// interleaved (`run` makes one step's run) — or none, each refused, when the probe says so.
fn search_round(
    bench: &Bench<'_>,
    plan: &SloPlan,
    at: &Cell<'_>,
    starts: &[(usize, f64, String)],
    round: u32,
    run: &mut dyn FnMut(usize, Option<f64>, String) -> RunRecord,
) -> Vec<SloSearch> {
    let runtimes = &bench.settings.runtimes;
    let probe = probe_stalls(bench, plan);
    let mut spent: Vec<f64> = vec![0.0; runtimes.len()];
    let outcomes: Vec<slo::SearchOutcome> = match &probe.refused {
        Some(why) => starts
            .iter()
            .map(|(_, start, _)| slo::SearchOutcome::refused(&plan.slos, *start, why))
            .collect(),
        None => {
            let mut searches = new_searches(plan, starts);
            slo::interleave(&mut searches, |i, rate, stage| {
                let clock = Instant::now();
                let record = run(
                    i,
                    Some(rate),
                    format!(
                        "[slo] {} {} {} users, search {}: {} at {}",
                        runtimes[i],
                        at.label,
                        at.users,
                        round + 1,
                        stage.as_str(),
                        slo::rate_words(rate)
                    ),
                );
                spent[i] += clock.elapsed().as_secs_f64();
                measured(&record, rate)
            });
            searches.into_iter().map(Search::into_outcome).collect()
        }
    };
    let found = Round {
        number: round,
        probe: &probe,
        spent: &spent,
    };
    search_records(bench, plan, at, outcomes, starts, &found)
}

/// The machine's own stalls on the server and generator CPUs, probed before a round of searches
/// (nothing probed with `--slo-probe 0`).
fn probe_stalls(bench: &Bench<'_>, plan: &SloPlan) -> slo::stalls::StallProbe {
    if plan.args.slo_probe.is_zero() {
        return slo::stalls::StallProbe::default();
    }
    let sides = if bench.cpus.server.is_empty() && bench.cpus.generator.is_empty() {
        vec![brigade_load::stalls::whole_machine()]
    } else {
        vec![
            ("server".to_owned(), bench.cpus.server.clone()),
            ("generator".to_owned(), bench.cpus.generator.clone()),
        ]
    };
    let probe = brigade_load::stalls::probe(&sides, plan.args.slo_probe, &plan.slos);
    println!("[slo] {}", probe.sentence());
    if let Some(why) = &probe.refused {
        println!("[slo] {why}");
    }
    probe
}

/// Every runtime's search, from its start rate (`starts` in runtime order).
fn new_searches(plan: &SloPlan, starts: &[(usize, f64, String)]) -> Vec<Search> {
    starts
        .iter()
        .map(|(_, start, _)| {
            let settings = slo::SearchSettings {
                start_per_s: *start,
                ..plan.search.clone()
            };
            Search::new(plan.slos.clone(), settings)
        })
        .collect()
}

/// One round of searches: its number, the probe before it and the seconds each runtime took.
struct Round<'a> {
    number: u32,
    probe: &'a slo::stalls::StallProbe,
    spent: &'a [f64],
}

/// A round's finished searches as records, each sized and said: with where its start rate came
/// from, the probe before it and the seconds it took.
fn search_records(
    bench: &Bench<'_>,
    plan: &SloPlan,
    at: &Cell<'_>,
    outcomes: Vec<slo::SearchOutcome>,
    starts: &[(usize, f64, String)],
    round: &Round<'_>,
) -> Vec<SloSearch> {
    let settings = bench.settings;
    let server_cpus = settings
        .external
        .is_empty()
        .then_some(bench.cpus.server.len() as u32);
    let fresh = steps_words(settings).to_owned();
    let probed = !plan.args.slo_probe.is_zero();
    outcomes
        .into_iter()
        .zip(starts)
        .map(|(outcome, (r, _, from))| {
            let mut record = SloSearch {
                runtime: settings.runtimes[*r].clone(),
                scenario: at.label.to_owned(),
                users: at.users,
                preload: at.preload,
                search: round.number,
                outcome,
                start_from: from.clone(),
                fresh: fresh.clone(),
                stall_probe: probed.then(|| round.probe.clone()),
                seconds: round.spent[*r],
                ..SloSearch::default()
            };
            record.size(server_cpus, plan.args.slo_target_rate);
            println!("{}", record.sentence());
            record
        })
        .collect()
}

/// A search's first rate and where it came from: `--slo-start`; else half the successful hits/s
/// of the cell's isolated runs (`--slo-also-compare`); else half of what `probe` (a closed-loop
/// run at the cell's users) completed.
fn start_rate(
    plan: &SloPlan,
    runs: &[RunRecord],
    runtime: &str,
    at: &Cell<'_>,
    probe: impl FnOnce() -> RunRecord,
) -> (f64, String) {
    if let Some(rate) = plan.args.slo_start {
        return (rate, "given (--slo-start)".to_owned());
    }
    let isolated: Vec<f64> = runs
        .iter()
        .filter(|r| {
            r.runtime == runtime
                && r.scenario == at.label
                && r.users == at.users
                && r.preload == at.preload
        })
        .filter_map(RunRecord::ok_per_s)
        .collect();
    if !isolated.is_empty() {
        let rate = brigade_stats::median(&isolated);
        return (
            (rate / 2.0).max(1.0),
            format!(
                "half the {}/s of its isolated runs",
                brigade_report::verdict::figure(rate)
            ),
        );
    }
    let record = probe();
    match record.ok_per_s() {
        Some(rate) if rate > 0.0 => (
            (rate / 2.0).max(1.0),
            format!(
                "half the {}/s a closed-loop probe at {} users completed",
                brigade_report::verdict::figure(rate),
                at.users
            ),
        ),
        _ => (
            1.0,
            format!(
                "1/s: the closed-loop probe completed nothing ({})",
                record.error.as_deref().unwrap_or("no successful request")
            ),
        ),
    }
}

/// The report's record of how the searches were made.
pub(crate) fn setup(settings: &crate::settings::CompareSettings) -> Option<report::SloSetup> {
    let plan = settings.slo.as_ref()?;
    Some(report::SloSetup {
        slo: plan.args.slo.clone(),
        precision_pct: plan.args.slo_precision,
        windows: plan.args.slo_windows,
        max_windows: plan.args.slo_max_windows,
        searches: plan.args.slo_searches,
        start_per_s: plan.args.slo_start,
        target_rate_per_s: plan.args.slo_target_rate,
        window_s: settings.duration.as_secs_f64(),
        warmup_s: settings.warmup.as_secs_f64(),
        interleaving: steps_words(settings).to_owned(),
    })
}
