//! `brigade load --slo`'s run: the SLO search against any running server (one compare did not start,
//! a container, a service not on the kit). Every step loads the same server in turn: it is not
//! restarted, so a scenario that writes finds the data earlier steps left. `--slo-searches`
//! searches run one after another, each from the same start, after a probe of the machine's own
//! stalls; their capacities give the interval.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use brigade_records::result::{LoadResult, GENERATOR_SATURATED};
use brigade_records::threshold::Threshold;
use brigade_slo::stalls::StallProbe;
use brigade_slo::{
    rate_words, CapacitySummary, CurvePoint, Measured, Search, SearchOutcome, SloSearch, Stage,
};

use super::LoadCommand;
use crate::engine::{self, LoadConfig};
use crate::registry::Registry;
use crate::scenario::Scenario;
use crate::stalls;

/// Each sub-window's length unless `--duration` says.
const SUB_WINDOW: Duration = Duration::from_secs(1);

/// What a step's run measured, as the search reads it: generator-bound when its threads were
/// saturated (the server's side is not sampled here).
fn measured(offered_per_s: f64, result: &LoadResult) -> Measured {
    let threads = result.settings.threads.max(1);
    let busy = result.generator_cpu_percent / (100.0 * f64::from(threads));
    Measured {
        generator_bound: (busy >= GENERATOR_SATURATED).then(|| {
            format!(
                "the generator used {:.0}% of its {threads} thread(s)",
                result.generator_cpu_percent / f64::from(threads)
            )
        }),
        ..Measured::from_result(offered_per_s, result)
    }
}

/// Runs the searches `args` asks for and prints each capacity, their summary and the curves.
pub(super) fn run(args: &LoadCommand, registry: &Registry, scenario: &Scenario) -> Result<()> {
    refuse_flags(args)?;
    let slo = args.slo.slos()?;
    let mut closed = args.load.config(registry)?;
    let sub_window = args.load.duration.unwrap_or(SUB_WINDOW);
    closed.progress = false;
    // The same seed for every step, so every step sends the same request stream.
    closed.seed = Some(args.load.seed.unwrap_or_else(|| fastrand::u64(..)));
    let connections = args
        .load
        .connections
        .or(args.load.users)
        .unwrap_or(closed.connections);
    closed.duration = Some(sub_window);
    let (start, start_from) = start_rate(args, &closed, connections, scenario)?;
    let settings = args.slo.settings(start)?;
    closed.duration = Some(sub_window * settings.windows);
    closed.sub_window = Some(sub_window);
    println!(
        "SLO search at {}: {} search(es) from {} on {connections} connections, steps of {} \
         sub-windows of {} s, a rate pooled up to {} sub-windows, bracket to {}%",
        args.slo.slo.join(", "),
        args.slo.slo_searches,
        rate_words(start),
        settings.windows,
        sub_window.as_secs_f64(),
        settings.max_windows,
        args.slo.slo_precision,
    );
    let probe = probe_machine(args, &closed, &slo);
    let mut records = Vec::new();
    let mut last: Option<LoadResult> = None;
    let mut error = None;
    for n in 0..args.slo.slo_searches {
        let began = Instant::now();
        let outcome = match &probe.refused {
            Some(why) => SearchOutcome::refused(&slo, start, why),
            None => {
                let mut search = Search::new(slo.clone(), settings.clone());
                while let Some((rate, stage)) = search.next_step() {
                    let m = step(&closed, connections, scenario, rate, &mut last, &mut error);
                    search.record(&m);
                    if let Some(point) = search.outcome().curve.last() {
                        print_step(stage, &m, point);
                    }
                }
                search.into_outcome()
            }
        };
        let mut record = SloSearch {
            runtime: "target".to_owned(),
            scenario: scenario.name().to_owned(),
            users: connections,
            search: n,
            outcome,
            start_from: start_from.clone(),
            fresh: "the same server for every step (brigade load does not start servers)"
                .to_owned(),
            stall_probe: Some(probe.clone()),
            seconds: began.elapsed().as_secs_f64(),
            ..SloSearch::default()
        };
        record.size(None, args.slo.slo_target_rate);
        println!("{}", record.sentence());
        records.push(record);
    }
    let summary = CapacitySummary::of(&records.iter().collect::<Vec<_>>());
    println!("capacity over the searches: {}", summary.sentence());
    if let Some(path) = &args.load.json {
        write_json(path, last.as_ref(), &records, &summary)?;
    }
    if let Some(err) = error {
        bail!("a step failed: {err}");
    }
    Ok(())
}

/// One step: `rate` offered for the step's sub-windows.
fn step(
    closed: &LoadConfig,
    connections: u32,
    scenario: &Scenario,
    rate: f64,
    last: &mut Option<LoadResult>,
    error: &mut Option<String>,
) -> Measured {
    let config = LoadConfig {
        users: None,
        rate: Some(rate),
        connections,
        ..closed.clone()
    };
    match engine::run(&config, scenario) {
        Ok(result) => {
            let m = measured(rate, &result);
            *last = Some(result);
            m
        }
        Err(err) => {
            *error = Some(format!("{err:#}"));
            Measured::failed(rate, format!("{err:#}"))
        }
    }
}

/// The machine's own stalls before the searches: the generator's CPUs when pinned, else every
/// CPU (the server's are not known to `brigade load`).
fn probe_machine(args: &LoadCommand, closed: &LoadConfig, slo: &[Threshold]) -> StallProbe {
    let sides = match &closed.cpus {
        Some(cpus) => vec![("generator".to_owned(), cpus.clone())],
        None => vec![stalls::whole_machine()],
    };
    let probe = stalls::probe(&sides, args.slo.slo_probe, slo);
    if !args.slo.slo_probe.is_zero() {
        println!("{}", probe.sentence());
    }
    probe
}

/// Refuses the flags a search sets itself or cannot honour.
fn refuse_flags(args: &LoadCommand) -> Result<()> {
    if args.load.rate.is_some() {
        bail!("--slo sets the rates itself: drop --rate (the search starts from --slo-start)");
    }
    if args.load.shard.is_some() || args.load.setup_only || args.load.start_at.is_some() {
        bail!("--slo runs the whole search from this generator: drop --shard, --start-at and --setup-only");
    }
    if args.load.requests.is_some() {
        bail!("--slo measures every step for --duration: drop --requests");
    }
    Ok(())
}

/// The search's first rate and where it came from: `--slo-start`, or half of what a closed-loop
/// probe on `connections` completed.
fn start_rate(
    args: &LoadCommand,
    closed: &LoadConfig,
    connections: u32,
    scenario: &Scenario,
) -> Result<(f64, String)> {
    if let Some(rate) = args.slo.slo_start {
        return Ok((rate, "given (--slo-start)".to_owned()));
    }
    let probe = LoadConfig {
        users: Some(connections),
        rate: None,
        ..closed.clone()
    };
    let result = engine::run(&probe, scenario).context("the closed-loop probe failed")?;
    let rate = (result.total.hits_per_s / 2.0).max(1.0);
    Ok((
        rate,
        format!(
            "half of the {:.0}/s a closed-loop run at {connections} connections completed",
            result.total.hits_per_s
        ),
    ))
}

/// Writes the last step's result (an empty object without one) with the searches under `searches`
/// and their summary under `capacity`.
fn write_json(
    path: &std::path::Path,
    last: Option<&LoadResult>,
    records: &[SloSearch],
    summary: &CapacitySummary,
) -> Result<()> {
    let mut value = match last {
        Some(result) => serde_json::to_value(result)?,
        None => serde_json::json!({}),
    };
    value["searches"] = serde_json::to_value(records)?;
    value["capacity"] = serde_json::to_value(summary)?;
    std::fs::write(path, serde_json::to_string_pretty(&value)? + "\n")
        .with_context(|| format!("Failed to write {}", path.display()))?;
    println!("result and searches written to {}", path.display());
    Ok(())
}

/// One line per step: what it measured, and the rate's answer on everything pooled at it.
fn print_step(stage: Stage, m: &Measured, point: &CurvePoint) {
    let l = &m.figures.latency;
    println!(
        "  {:<8} {:>12} offered, {:>10.0}/s done, p99 {:.2} ms (pooled over {} sub-windows: {:.2} \
         ms), {} errors: {}{}{}",
        stage.as_str(),
        rate_words(m.offered_per_s),
        m.achieved_per_s,
        l.p99_ms,
        point.windows,
        point.pooled_p99_ms,
        m.figures.errors,
        point.answer.words(),
        point
            .why
            .as_deref()
            .map(|w| format!(" ({w})"))
            .unwrap_or_default(),
        m.generator_bound
            .as_deref()
            .map(|w| format!(" — generator-bound: {w}"))
            .unwrap_or_default()
    );
}
