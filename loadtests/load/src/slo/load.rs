//! `brigade load --slo`: the SLO search against any running server (one compare did not start,
//! a container, a service not on the kit). Every step loads the same server in turn: it is not
//! restarted, so a scenario that writes finds the data earlier steps left.

use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::{Measured, Search, SloSearch, Stage, GENERATOR_SATURATED};
use crate::args::LoadArgs;
use crate::engine::{self, LoadConfig};
use crate::registry::Registry;
use crate::result::LoadResult;
use crate::scenario::Scenario;

/// Each step's measured window unless `--duration` says.
const STEP_WINDOW: std::time::Duration = std::time::Duration::from_secs(2);

/// What a step's run measured, as the search reads it: generator-bound when its threads were
/// saturated (the server's side is not sampled here).
pub fn measured(offered_per_s: f64, result: &LoadResult) -> Measured {
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

/// Runs the search `args` asks for and prints the capacity and the curve.
pub fn run(args: &LoadArgs, registry: &Registry, scenario: &Scenario) -> Result<()> {
    refuse_flags(args)?;
    let slo = args.slo.slos()?;
    let began = Instant::now();
    let mut closed = args.config(registry)?;
    closed.duration = Some(args.duration.unwrap_or(STEP_WINDOW));
    closed.progress = false;
    // The same seed for every step, so every step sends the same request stream.
    closed.seed = Some(args.seed.unwrap_or_else(|| fastrand::u64(..)));
    let connections = args
        .connections
        .or(args.users)
        .unwrap_or(closed.connections);
    let (start, start_from) = start_rate(args, &closed, connections, scenario)?;
    let settings = args.slo.settings(start)?;
    println!(
        "SLO search at {}: from {} on {connections} connections, {} s windows, bracket to {}%, \
         {} confirmation(s) of {} windows",
        args.slo.slo.join(", "),
        super::rate_words(start),
        closed.duration.unwrap_or(STEP_WINDOW).as_secs_f64(),
        args.slo.slo_precision,
        settings.repeats,
        settings.confirm_windows
    );
    let mut searches = vec![Search::new(slo, settings)];
    let mut last: Option<LoadResult> = None;
    let mut error = None;
    super::interleave(&mut searches, |_, rate, stage| {
        let config = LoadConfig {
            users: None,
            rate: Some(rate),
            connections,
            ..closed.clone()
        };
        match engine::run(&config, scenario) {
            Ok(result) => {
                let m = measured(rate, &result);
                print_step(rate, stage, &m);
                last = Some(result);
                m
            }
            Err(err) => {
                error = Some(format!("{err:#}"));
                Measured::failed(rate, format!("{err:#}"))
            }
        }
    });
    let search = searches.pop().expect("one search");
    let mut record = SloSearch {
        runtime: "target".to_owned(),
        scenario: scenario.name().to_owned(),
        users: connections,
        preload: 0,
        outcome: search.into_outcome(),
        start_from,
        fresh: "the same server for every step (brigade load does not start servers)".to_owned(),
        seconds: began.elapsed().as_secs_f64(),
        ..SloSearch::default()
    };
    record.size(None, args.slo.slo_target_rate);
    println!("{}", record.sentence());
    if let Some(path) = &args.json {
        write_json(path, last.as_ref(), &record)?;
    }
    if let Some(err) = error {
        bail!("a step failed: {err}");
    }
    Ok(())
}

/// Refuses the flags a search sets itself or cannot honour.
fn refuse_flags(args: &LoadArgs) -> Result<()> {
    if args.rate.is_some() {
        bail!("--slo sets the rates itself: drop --rate (the search starts from --slo-start)");
    }
    if args.shard.is_some() || args.setup_only || args.start_at.is_some() {
        bail!("--slo runs the whole search from this generator: drop --shard, --start-at and --setup-only");
    }
    if args.requests.is_some() {
        bail!("--slo measures every step for --duration: drop --requests");
    }
    Ok(())
}

/// The search's first rate and where it came from: `--slo-start`, or half of what a closed-loop
/// probe on `connections` completed.
fn start_rate(
    args: &LoadArgs,
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

/// Writes the last step's result (an empty object without one) with the search under `search`.
fn write_json(path: &std::path::Path, last: Option<&LoadResult>, record: &SloSearch) -> Result<()> {
    let mut value = match last {
        Some(result) => serde_json::to_value(result)?,
        None => serde_json::json!({}),
    };
    value["search"] = serde_json::to_value(record)?;
    std::fs::write(path, serde_json::to_string_pretty(&value)? + "\n")
        .with_context(|| format!("Failed to write {}", path.display()))?;
    println!("result and search written to {}", path.display());
    Ok(())
}

/// One line per step.
fn print_step(rate: f64, stage: Stage, m: &Measured) {
    let l = &m.figures.latency;
    println!(
        "  {:<8} {:>12} offered, {:>10.0}/s done, p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, {} errors{}",
        stage.as_str(),
        super::rate_words(rate),
        m.achieved_per_s,
        l.p50_ms,
        l.p99_ms,
        l.p999_ms,
        m.figures.errors,
        m.generator_bound
            .as_deref()
            .map(|w| format!(" — generator-bound: {w}"))
            .unwrap_or_default()
    );
}
