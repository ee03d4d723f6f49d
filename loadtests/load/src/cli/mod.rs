//! The commands `brigade load` and `brigade merge` delegate to: the functions that run them and
//! print or write their results. A binary mounts [`LoadCommand`] and [`MergeArgs`] as subcommands
//! and hands [`run_load`] the [`Registry`] of the scenarios and default targets it knows. The
//! argument structs live in `args` and the value parsers in `parse` (re-exported here, where users
//! find them). With `--slo`, `brigade load` drives the capacity search (`brigade-slo`'s state
//! machine) against one running server, step by step ([`slo`]).

use anyhow::{bail, Context, Result};

pub use crate::args::{LoadArgs, MergeArgs};
pub use crate::parse::{
    parse_cpu_list, parse_duration, parse_percent, parse_rate, parse_targets, MAX_DURATION,
};

use crate::args::SloArgs;
use brigade_records::threshold;

use crate::engine;
use crate::registry::Registry;

mod slo;

/// `brigade load`: run one scenario against running services and report what it measured, or,
/// with `--slo`, search for the highest rate at which every SLO holds.
#[derive(Debug, Clone, clap::Args)]
pub struct LoadCommand {
    /// The generator's flags.
    #[command(flatten)]
    pub load: LoadArgs,
    /// Capacity at an SLO: with `--slo`, the rates are the search's own (`--rate` is refused);
    /// each step is a `--warmup` and a `--duration` window (default 2s) on `--connections`
    #[command(flatten)]
    pub slo: SloArgs,
}

/// Runs `brigade load` with the scenarios and default targets in `registry`: the SLO search when
/// `--slo` is given, else one run.
pub fn run_load(args: LoadCommand, registry: &Registry) -> Result<()> {
    if args.slo.slo.is_empty() || args.load.list_scenarios {
        return run_once(args.load, registry);
    }
    threshold::parse_all(&args.load.thresholds)?;
    let scenario = registry.load(&args.load.scenario)?;
    slo::run(&args, registry, &scenario)
}

/// One run: prints the table to stdout and writes `--json` if asked.
fn run_once(args: LoadArgs, registry: &Registry) -> Result<()> {
    if args.list_scenarios {
        for name in registry.names() {
            let s = registry.get(name)?;
            println!(
                "{name:<11} {} (services: {})",
                s.description(),
                s.services().join(", ")
            );
        }
        for (service, url) in registry.default_targets() {
            println!("target {service}={url}");
        }
        return Ok(());
    }
    let thresholds = threshold::parse_all(&args.thresholds)?;
    let scenario = registry.load(&args.scenario)?;
    let config = args.config(registry)?;
    if args.setup_only {
        let path = args.fixtures.as_ref().expect("clap requires --fixtures");
        let fixtures = engine::make_fixtures(&config, &scenario)?;
        fixtures.save(path)?;
        let counts: Vec<String> = fixtures
            .pools
            .iter()
            .map(|(name, values)| format!("{name} {}", values.len()))
            .collect();
        println!(
            "fixtures of {} written to {} ({}; {{{{seq}}}} used {})",
            scenario.name(),
            path.display(),
            if counts.is_empty() {
                "no pools".to_string()
            } else {
                counts.join(", ")
            },
            fixtures.seq_used
        );
        return Ok(());
    }
    if args.shard.is_some_and(|s| !s.is_whole()) && args.seed.is_none() {
        eprintln!(
            "note: a shard without --seed draws its own seed: give every shard one --seed so the merged run can be replayed"
        );
    }
    // A SIGTERM (a generator's pod deleted, `kill`) ends the run early instead of losing it: the
    // requests in flight are answered, and the result, marked interrupted, is written as usual.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGTERM, stop.clone())
        .context("Failed to install the SIGTERM handler")?;
    let plan = crate::shard::ShardPlan {
        shard: args.shard.unwrap_or_default(),
        start_at: args.start_at,
        // Shards on other machines start together or not at all.
        late_ok: std::time::Duration::ZERO,
        fixtures: args
            .fixtures
            .as_deref()
            .map(crate::shard::Fixtures::load)
            .transpose()?,
        attempt: args.attempt,
        stop: Some(stop),
    };
    let result = engine::run_shard(&config, &scenario, &plan)?;
    if let Some(why) = &result.interrupted {
        eprintln!("interrupted: {why}");
    }
    report(&result, args.json.as_deref(), &thresholds)?;
    match result.interrupted {
        Some(_) => {
            bail!("the run was interrupted: its result covers only what it measured until then")
        }
        None => Ok(()),
    }
}

/// Runs `brigade merge`: reads the results, merges them as concurrent parts of one run, prints
/// the table `brigade load` prints and writes `--json` if asked.
pub fn run_merge(args: MergeArgs) -> Result<()> {
    let thresholds = threshold::parse_all(&args.thresholds)?;
    let mut results = Vec::new();
    for path in &args.results {
        let text = brigade_records::files::read_text(
            path,
            brigade_records::files::MAX_REPORT_BYTES,
            "result",
        )?;
        let result: brigade_records::result::LoadResult = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a brigade load result", path.display()))?;
        results.push(result);
    }
    let merged = brigade_records::result::merge_shards(&results)?;
    for part in &merged.shards {
        let shard = part.shard.map_or("whole".to_string(), |s| s.to_string());
        let attempt = match (part.attempt, &part.interrupted) {
            (n, Some(why)) => format!(" attempt {} LOST, not counted ({why})", n.unwrap_or(1)),
            (Some(n), None) => format!(" attempt {n} (retried)"),
            (None, None) => String::new(),
        };
        println!(
            "part {shard:>5}{attempt} on {}: {} requests, window {:.3}..{:.3} s (UNIX), generator CPU {:.0}%",
            part.hostname,
            part.requests,
            part.window.start_unix_s,
            part.window.end_unix_s,
            part.generator_cpu_percent
        );
    }
    if let Some(w) = merged.window {
        let counted = || merged.shards.iter().filter(|p| p.interrupted.is_none());
        let overlap = counted()
            .map(|p| p.window.end_unix_s)
            .fold(f64::INFINITY, f64::min)
            - counted()
                .map(|p| p.window.start_unix_s)
                .fold(f64::NEG_INFINITY, f64::max);
        let span = w.end_unix_s - w.start_unix_s;
        println!(
            "common window {span:.3} s; the parts all ran together for {:.3} s",
            overlap.max(0.0)
        );
        if span > 0.0 && overlap < 0.9 * span {
            println!(
                "warning: the parts overlap for less than 90% of the common window: they did not start together (use --start-at) or some ended early, so the rates understate what they sent at once"
            );
        }
    }
    report(&merged, args.json.as_deref(), &thresholds)
}

/// Prints a result's table, writes it as JSON to `json` when asked, and checks `thresholds`
/// against its totals: an error names the ones that failed.
fn report(
    result: &brigade_records::result::LoadResult,
    json: Option<&std::path::Path>,
    thresholds: &[threshold::Threshold],
) -> Result<()> {
    print!("{}", crate::table::render(result));
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(result)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("Failed to write {}", path.display()))?;
        println!("result written to {}", path.display());
    }
    let checks = threshold::check_all(thresholds, &(&result.total).into());
    for check in &checks {
        let mark = if check.passed { "ok  " } else { "FAIL" };
        println!("threshold {mark} {}: {}", check.threshold, check.text);
    }
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| format!("{} ({})", c.threshold, c.text))
        .collect();
    if !failed.is_empty() {
        bail!(
            "{} of {} threshold(s) failed: {}",
            failed.len(),
            checks.len(),
            failed.join("; ")
        );
    }
    Ok(())
}
