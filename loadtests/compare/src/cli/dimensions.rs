//! The comparisons of several stores (`--stores`) or protocols (`--protocols`): one whole
//! comparison per store or protocol and a report across them; `--plan`'s plans.

use brigade_load::Registry;
use brigade_meter::wire::Wire;
use brigade_records::protocol::Protocol;

use super::settings::default_out;
use super::*;
use crate::settings::CompareSettings;

/// What serves `store`, in words (the MongoDB server asked for its name, where the binary can).
pub(super) fn store_server(store: &str, args: &CompareArgs) -> String {
    match store {
        "memory" => "in each service's process, nothing kept".to_owned(),
        "embedded" => "redb, one file per service on the local disk".to_owned(),
        "mongo" => match (args.describe_mongo, args.mongodb_uri.as_deref()) {
            (None, _) => "MongoDB (this build cannot ask which)".to_owned(),
            (Some(_), None) => "MongoDB (no URI given)".to_owned(),
            (Some(describe), Some(uri)) => describe(uri).unwrap_or_else(|e| {
                format!("a MongoDB server that did not say what it is ({e:#})")
            }),
        },
        other => other.to_owned(),
    }
}

impl CompareArgs {
    /// `--stores`: the arguments of each store's whole comparison, its reports under `out`.
    fn per_store(&self, out: &std::path::Path) -> Vec<(String, CompareArgs)> {
        self.stores
            .iter()
            .map(|store| {
                let one = CompareArgs {
                    store: store.clone(),
                    stores: Vec::new(),
                    out: Some(crate::stores::folder(out, store)),
                    ..self.clone()
                };
                (store.clone(), one)
            })
            .collect()
    }

    /// Several `--protocols`: the arguments of each protocol's whole comparison (each protocol
    /// once), its reports under `out`.
    fn per_protocol(&self, out: &std::path::Path) -> Vec<(Protocol, CompareArgs)> {
        let mut seen = std::collections::HashSet::new();
        self.protocols
            .iter()
            .filter(|p| seen.insert(**p))
            .map(|&protocol| {
                let one = CompareArgs {
                    protocols: vec![protocol],
                    out: Some(crate::protocols::folder(out, protocol)),
                    ..self.clone()
                };
                (protocol, one)
            })
            .collect()
    }
}

/// `compare --stores`: a whole comparison per store, then the stores report over them.
pub(super) fn run_stores(args: &CompareArgs, registry: &Registry) -> anyhow::Result<()> {
    let began = std::time::Instant::now();
    let started_at = brigade_meter::clock::now_rfc3339();
    let out = args.out.clone().unwrap_or_else(default_out);
    let mut settings_by_store = Vec::new();
    for (store, one) in args.per_store(&out) {
        // Every store's settings checked before the first run: a typo should cost nothing.
        settings_by_store.push((store, one.settings(registry)?));
    }
    let mut runs = Vec::new();
    for (i, (store, settings)) in settings_by_store.iter().enumerate() {
        let report = run_one(settings, "store", store, (i, settings_by_store.len()))?;
        let run = crate::stores::StoreRun {
            store: store.clone(),
            server: store_server(store, args),
            folder: format!("store-{store}"),
        };
        runs.push((run, report));
    }
    let mut setup = dimension_setup(&settings_by_store[0].1);
    setup.line(
        "Stores",
        runs.iter()
            .map(|(r, _)| format!("{} ({}; its report in {}/)", r.store, r.server, r.folder))
            .collect::<Vec<_>>()
            .join("; "),
    );
    let report = crate::stores::report(&runs, setup, started_at, began.elapsed().as_secs_f64());
    write_dimension_report(&report, &out, "store")
}

/// `compare --protocols` with several: a whole comparison per protocol, then the protocols
/// report over them.
pub(super) fn run_protocols(args: &CompareArgs, registry: &Registry) -> anyhow::Result<()> {
    let began = std::time::Instant::now();
    let started_at = brigade_meter::clock::now_rfc3339();
    let out = args.out.clone().unwrap_or_else(default_out);
    let mut settings_by_protocol = Vec::new();
    for (protocol, one) in args.per_protocol(&out) {
        // Every protocol's settings checked before the first run: a typo should cost nothing.
        settings_by_protocol.push((protocol, one.settings(registry)?));
    }
    let mut runs = Vec::new();
    for (i, (protocol, settings)) in settings_by_protocol.iter().enumerate() {
        let report = run_one(
            settings,
            "protocol",
            protocol.name(),
            (i, settings_by_protocol.len()),
        )?;
        runs.push((crate::protocols::run_of(*protocol), report));
    }
    let first = &settings_by_protocol[0].1;
    let mut setup = dimension_setup(first);
    setup.line("Store", first.store.clone()).line(
        "Protocols",
        runs.iter()
            .map(|(r, report)| {
                format!(
                    "{} ({}; its report in {}/)",
                    r.protocol,
                    serve_words(r.protocol, report.settings.streams),
                    r.folder
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
    );
    let report = crate::protocols::report(&runs, setup, started_at, began.elapsed().as_secs_f64());
    write_dimension_report(&report, &out, "protocol")
}

/// How a protocol's servers were started and loaded, in words.
fn serve_words(protocol: Protocol, streams: u32) -> String {
    let flags = brigade_meter::servers::launch::serve_protocol_args(protocol).join(" ");
    let serve = if flags.is_empty() {
        "servers with the standard flags".to_owned()
    } else {
        format!("servers with `{flags}`")
    };
    format!(
        "{serve}, loads over {}",
        Wire::new(protocol, streams).describe()
    )
}

/// One comparison of a dimension (`store`, `protocol`), `i` of `n`, with its summary printed.
fn run_one(
    settings: &CompareSettings,
    dimension: &str,
    value: &str,
    (i, n): (usize, usize),
) -> anyhow::Result<brigade_report::Report> {
    println!("\n== {dimension} {} of {n}: {value} ==", i + 1);
    let report = crate::run(settings)?;
    println!("\n{}", markdown::summary(&report));
    Ok(report)
}

/// The setup section of a report over a dimension: what every comparison shared.
fn dimension_setup(first: &CompareSettings) -> brigade_report::setup::Setup {
    let mut setup = brigade_report::setup::Setup {
        machine: brigade_load::machine::describe(),
        versions: brigade_report::setup::build_versions(),
        lines: Vec::new(),
        command_line: first.command_line.clone(),
    };
    setup
        .line("Runtimes", first.runtimes.join(", "))
        .line("Scenarios", first.scenarios.join(", "))
        .line(
            "Users",
            first
                .users
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        );
    setup
}

/// Writes a dimension's report at `out` and says where.
fn write_dimension_report(
    report: &brigade_report::study::StudyReport,
    out: &std::path::Path,
    dimension: &str,
) -> anyhow::Result<()> {
    brigade_report::write_all(report, out)?;
    println!("\n{}", report.summary);
    println!(
        "Reports: {} (report.md, report.json, report.html; one folder per {dimension})",
        out.display()
    );
    Ok(())
}

/// `compare --plan`: every comparison's checked plan as JSON, nothing run.
pub(super) fn print_plans(args: &CompareArgs, registry: &Registry) -> anyhow::Result<()> {
    let out = args.out.clone().unwrap_or_else(default_out);
    let ones: Vec<CompareArgs> = if !args.stores.is_empty() {
        args.per_store(&out)
            .into_iter()
            .map(|(_, one)| one)
            .collect()
    } else if args.protocols.len() > 1 {
        args.per_protocol(&out)
            .into_iter()
            .map(|(_, one)| one)
            .collect()
    } else {
        vec![args.clone()]
    };
    let mut plans = Vec::new();
    for one in &ones {
        let settings = one.settings(registry)?;
        plans.push(crate::plan::Plan::check(&settings)?.to_json());
    }
    let json = if plans.len() == 1 {
        plans.remove(0)
    } else {
        serde_json::json!({ "comparisons": plans })
    };
    println!("{}", serde_json::to_string_pretty(&json)?);
    Ok(())
}
