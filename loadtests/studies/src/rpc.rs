//! `brigade study rpc`: payload shapes, as an RMI / CORBA / SOAP comparison once measured them. One
//! interface, five operations — `sayHello`, send 100,000 bytes, get 100,000 bytes, send 5,000
//! strings, send 5,000 strings and get them back reversed — called by I client threads × J calls
//! each (the original: 1 × 10, then 5, 10 and 20 threads) on every runtime over loopback, and on
//! the **in-process** provider: the same handlers called through the application's route table
//! without a socket (the original's direct-call baseline, [`super::lab::inprocess`]).
//!
//! Per operation the report splits each provider's mean into the shared work (the in-process
//! figure: routing, body reading, JSON) and what the runtime and the socket add on top.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use brigade_records::result::{merge, LoadResult};
use bytes::Bytes;
use clap::Args;

use super::lab::calls::CallsMade;
use brigade_runtimes::inprocess::InProcess;

use super::lab::inprocess::{self, InprocOp, INPROC};
use super::lab::shapes::Shape;
use super::lab::{self, CellRun, LabArgs, StepRun, Window};
use super::Registry;
use brigade_report::study::{Axis, Better, Chart, Metric, Section, Series, StudyReport, Table};

/// The operations table's title.
pub const OPERATIONS_TABLE: &str = "Mean ms per operation";
/// The every-run table's title.
pub const RUNS_TABLE: &str = "Every run";

/// Arguments of `brigade study rpc`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:\n  brigade study rpc --quick\n  \
brigade study rpc --runtimes axum,actix --clients 1,5,10,20 --iterations 100")]
pub struct RpcArgs {
    /// Servers, CPUs, repeats (default 3, --quick 1) and where to write.
    #[command(flatten)]
    pub(crate) lab: LabArgs,
    /// Client threads, comma-separated [default: 1,5,10,20 (the original's); --quick: 1,5]
    #[arg(long, value_delimiter = ',')]
    pub(crate) clients: Vec<u32>,
    /// Calls per client thread [default: 10 (the original's)]
    #[arg(long)]
    pub(crate) iterations: Option<u64>,
    /// Bytes sent and got by the byte operations
    #[arg(long, default_value_t = 100_000)]
    pub(crate) bytes: usize,
    /// Strings sent (and got back reversed) by the string operations
    #[arg(long, default_value_t = 5_000)]
    pub(crate) strings: usize,
    /// Warm-up before each run's measured calls [default: 300ms; --quick: 100ms]
    #[arg(long, value_parser = humantime::parse_duration)]
    pub(crate) warmup: Option<Duration>,
    /// A CI-sized run (1 and 5 client threads, one repeat): well under a minute
    #[arg(long)]
    pub(crate) quick: bool,
}

/// The RPC study's settings.
#[derive(Debug, Clone)]
pub(crate) struct RpcSettings {
    /// Servers, CPUs, repeats.
    pub lab: lab::Lab,
    /// Client thread counts.
    pub clients: Vec<u32>,
    /// Calls per client thread.
    pub iterations: u64,
    /// The five operations.
    pub operations: Vec<Shape>,
    /// Warm-up per run.
    pub warmup: Duration,
}

impl RpcArgs {
    /// Resolves defaults (and `--quick`).
    pub(crate) fn settings(&self) -> Result<RpcSettings> {
        let lab = self
            .lab
            .lab("rpc", self.quick, if self.quick { 1 } else { 3 })?;
        let clients = if self.clients.is_empty() {
            if self.quick {
                vec![1, 5]
            } else {
                vec![1, 5, 10, 20]
            }
        } else {
            self.clients.clone()
        };
        if clients.contains(&0) {
            bail!("--clients must be at least 1");
        }
        let iterations = self.iterations.unwrap_or(10);
        if iterations == 0 {
            bail!("--iterations must be at least 1");
        }
        let warmup = self.warmup.unwrap_or(if self.quick {
            Duration::from_millis(100)
        } else {
            Duration::from_millis(300)
        });
        Ok(RpcSettings {
            lab,
            clients,
            iterations,
            operations: vec![
                Shape::hello(),
                Shape::send_bytes(self.bytes),
                Shape::get_bytes(self.bytes),
                Shape::send_strings(self.strings),
                Shape::reverse_strings(self.strings),
            ],
            warmup,
        })
    }
}

/// Runs `brigade study rpc`: the study, the three reports, and the report on the terminal.
pub(crate) fn run_rpc(args: &RpcArgs, registry: &Registry) -> Result<()> {
    let settings = args.settings()?;
    let report = run(&settings, registry)?;
    super::show(&report, &settings.lab.out_dir);
    Ok(())
}

/// Runs the study and writes its reports; returns the report.
pub(crate) fn run(settings: &RpcSettings, registry: &Registry) -> Result<StudyReport> {
    let began = std::time::Instant::now();
    let started_at = brigade_meter::clock::now_rfc3339();
    let lab = &settings.lab;
    let scenarios = settings
        .operations
        .iter()
        .map(Shape::scenario)
        .collect::<Result<Vec<_>>>()?;
    let inproc = build_inproc(registry)?;
    println!(
        "brigade study rpc: {} operations × client threads {} × {} calls each, on {}{}; {} \
         repeat(s)",
        settings.operations.len(),
        lab::counts_text(&settings.clients),
        settings.iterations,
        lab.runtimes.join(", "),
        if inproc.is_some() {
            " and in process"
        } else {
            ""
        },
        lab.repeat
    );
    let (runs, servers) = lab.with_servers(|servers| {
        Ok(lab.run_cells(
            servers,
            (settings.operations.len(), &settings.clients),
            |op| settings.operations[op].name.clone(),
            |served, op, clients, repeat| {
                let config = lab.load_config(
                    served,
                    clients,
                    true,
                    Window::Requests {
                        count: clients as u64 * settings.iterations,
                        warmup: settings.warmup,
                    },
                );
                lab.measure(served, &scenarios[op], &config, repeat)
            },
            inproc
                .as_ref()
                .map(|app| |op, clients, repeat| inproc_run(settings, app, op, clients, repeat)),
        ))
    })?;
    let mut report = build(settings, &runs, inproc.is_some(), &servers, started_at);
    report.wall_s = began.elapsed().as_secs_f64();
    brigade_report::write_all(&report, &lab.out_dir)?;
    Ok(report)
}

/// The application registered for in-process calls, built on the memory store.
pub(crate) fn build_inproc(registry: &Registry) -> Result<Option<InProcess>> {
    let Some(registered) = &registry.inproc else {
        return Ok(None);
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("Failed to build a runtime")?;
    let app = runtime.block_on(inprocess::build(registered.service.as_ref()))?;
    Ok(Some(app))
}

/// The in-process provider's run of one cell.
fn inproc_run(
    settings: &RpcSettings,
    app: &InProcess,
    op: usize,
    clients: u32,
    repeat: u32,
) -> StepRun {
    let shape = settings.operations[op].clone();
    let lab = &settings.lab;
    let body = Bytes::from(shape.body.clone().unwrap_or_default());
    let call: InprocOp = Arc::new(move |app: InProcess| {
        let shape = shape.clone();
        let body = body.clone();
        Box::pin(async move {
            let sent = body.len() as u64;
            let content_type = shape.body.is_some().then_some(shape.content_type);
            let reply = app
                .call(shape.method, &shape.path, content_type, body)
                .await;
            if reply.status != shape.status {
                bail!(
                    "{} answered {} in process: {}",
                    shape.name,
                    reply.status,
                    String::from_utf8_lossy(&reply.body[..reply.body.len().min(200)])
                );
            }
            Ok((sent, reply.body.len() as u64))
        })
    });
    let made = CallsMade {
        target: "in process".to_owned(),
        operation: settings.operations[op].name.clone(),
        clients,
        warmup: settings.warmup,
        timeout: lab.timeout,
    };
    let outcome = inprocess::run_clients(
        app,
        &call,
        &made,
        settings.iterations,
        lab.workers,
        lab.cpus.server_mask(),
    );
    StepRun::in_process(outcome, repeat)
}

/// The repeats of one provider at one cell, merged into one result (counts and histograms added).
fn merged<'a>(runs: impl Iterator<Item = &'a CellRun>) -> Option<(LoadResult, usize)> {
    let mut flagged = 0;
    let results: Vec<LoadResult> = runs
        .filter_map(|r| {
            if !r.run.flag().is_empty() {
                flagged += 1;
            }
            r.run.result.clone()
        })
        .collect();
    merge(&results).ok().map(|m| (m, flagged))
}

fn build(
    settings: &RpcSettings,
    runs: &[CellRun],
    with_inproc: bool,
    servers: &[(String, String)],
    started_at: String,
) -> StudyReport {
    let lab = &settings.lab;
    StudyReport {
        study: "rpc".to_owned(),
        title: "Brigade RPC payload study".to_owned(),
        summary: format!(
            "Five operations of one interface (sayHello; send and get bytes; send strings; send \
             strings and get them reversed) by {} client thread(s), on {}{}.",
            lab::counts_text(&settings.clients),
            lab.runtimes.join(", "),
            if with_inproc {
                " over loopback and in process through the route table"
            } else {
                " over loopback"
            }
        ),
        started_at,
        wall_s: 0.0,
        setup: lab.setup(servers, setup_text(settings)),
        notes: notes(settings, runs, with_inproc),
        sections: vec![
            operations_section(settings, runs, with_inproc),
            every_run_section(settings, runs),
        ],
    }
}

/// The study's own line in the setup section: operations, client threads and calls.
fn setup_text(settings: &RpcSettings) -> String {
    let names: Vec<&str> = settings
        .operations
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    format!(
        "operations {}; client threads {}; {} calls per client thread after {} ms warm-up",
        names.join(", "),
        lab::counts_text(&settings.clients),
        settings.iterations,
        settings.warmup.as_millis()
    )
}

/// What the latencies measure, how shared work is split off, and the flagged runs.
fn notes(settings: &RpcSettings, runs: &[CellRun], with_inproc: bool) -> Vec<String> {
    let mut notes = vec![
        "Latency per call from the client's side: over loopback from the request's first byte \
         written to the answer's last byte read (the generator's own client, one keep-alive \
         connection per client thread); in process from the call to the reply."
            .to_owned(),
        "Shared work is the in-process mean at the same operation and client threads: routing, \
         reading the body, the handler and its JSON. Runtime + socket is a provider's mean minus \
         it; shared work share is the in-process mean in percent of the provider's."
            .to_owned(),
        format!(
            "In process, the calls run on the server's CPUs ({}) in a runtime of --workers \
             threads, as the handlers would in a server. A call there never waits for a socket, \
             so it runs to its end once started: with more client threads than threads, the \
             in-process calls take turns between calls, while over loopback the wait for the \
             server's CPU is inside each call. Compare calls/s across providers at more than \
             one client thread.",
            brigade_records::cpus::list(&settings.lab.cpus.server)
        ),
    ];
    if !with_inproc {
        notes.push(
            "This binary registers no application for in-process calls: no in-process provider, \
             no split of the time."
                .to_owned(),
        );
    }
    if settings.iterations < 100 {
        notes.push(format!(
            "{} calls per client thread (the original's count): p99 of so few calls is close to \
             the maximum; --iterations gives steadier tails, --repeat more runs per cell.",
            settings.iterations
        ));
    }
    notes.extend(lab::flag_notes(runs.iter().map(|r| {
        (
            format!(
                "{} at {} client(s)",
                settings.operations[r.operation].name, r.clients
            ),
            &r.run,
        )
    })));
    notes
}

/// Mean ms per operation, client threads and provider, with a chart per operation.
fn operations_section(settings: &RpcSettings, runs: &[CellRun], with_inproc: bool) -> Section {
    let (operations, charts) = operations_table(settings, runs, with_inproc);
    Section {
        title: "Per operation".to_owned(),
        text: vec![
            "Mean, p50 and p99 ms per call over every repeat's calls together (their \
             histograms merged), per operation, client threads and provider."
                .to_owned(),
        ],
        tables: vec![operations],
        charts,
    }
}

/// The per-operation table's figures: latencies, the in-process mean as shared work and the
/// rest, calls/s and flagged runs.
fn operations_metrics() -> Vec<Metric> {
    vec![
        Metric::new("calls", "", Better::Neither, 0),
        Metric::new("mean", "ms", Better::Lower, 3),
        Metric::new("p50", "ms", Better::Lower, 3),
        Metric::new("p99", "ms", Better::Lower, 3),
        Metric::new("shared work", "ms", Better::Neither, 3),
        Metric::new("runtime + socket", "ms", Better::Lower, 3),
        Metric::new("shared work share", "%", Better::Neither, 0),
        Metric::new("calls/s", "", Better::Higher, 0),
        Metric::new("flagged runs", "", Better::Lower, 0),
    ]
}

/// One row per operation, client threads and provider (the in-process provider last), and for
/// each operation a chart of the mean against client threads.
fn operations_table(
    settings: &RpcSettings,
    runs: &[CellRun],
    with_inproc: bool,
) -> (Table, Vec<Chart>) {
    let mut providers = settings.lab.runtimes.clone();
    if with_inproc {
        providers.push(INPROC.to_owned());
    }
    let mut operations = Table::new(
        OPERATIONS_TABLE,
        &["operation", "clients", "provider"],
        operations_metrics(),
    );
    let mut charts = Vec::new();
    for (op, shape) in settings.operations.iter().enumerate() {
        let mut series: Vec<Series> = providers
            .iter()
            .map(|p| Series {
                name: p.clone(),
                points: Vec::new(),
            })
            .collect();
        for &clients in &settings.clients {
            let at = |provider: &str| {
                merged(runs.iter().filter(|r| {
                    r.operation == op && r.clients == clients && r.provider == provider
                }))
            };
            let shared = if with_inproc {
                at(INPROC).map(|(m, _)| m.total.latency.mean_ms)
            } else {
                None
            };
            for (p, provider) in providers.iter().enumerate() {
                let dims = vec![shape.name.clone(), clients.to_string(), provider.clone()];
                let Some((m, flagged)) = at(provider) else {
                    operations.push(dims, vec![None; operations.metrics.len()]);
                    continue;
                };
                let mean = m.total.latency.mean_ms;
                series[p].points.push((clients as f64, mean));
                operations.push(
                    dims,
                    vec![
                        Some(m.total.requests as f64),
                        Some(mean),
                        Some(m.total.latency.p50_ms),
                        Some(m.total.latency.p99_ms),
                        shared,
                        shared.map(|s| mean - s),
                        shared.filter(|_| mean > 0.0).map(|s| s / mean * 100.0),
                        Some(m.total.hits_per_s),
                        Some(flagged as f64),
                    ],
                );
            }
        }
        charts.push(Chart {
            title: format!("{}: mean ms per call against client threads", shape.name),
            x: Axis::log("client threads"),
            y: Axis::log("mean ms per call"),
            series,
        });
    }
    (operations, charts)
}

/// One row per run.
fn every_run_section(settings: &RpcSettings, runs: &[CellRun]) -> Section {
    let mut every = Table::new(
        RUNS_TABLE,
        &["operation", "clients", "provider", "repeat", "flag"],
        lab::run_metrics(),
    );
    for r in runs {
        every.push(
            vec![
                settings.operations[r.operation].name.clone(),
                r.clients.to_string(),
                r.provider.clone(),
                (r.run.repeat + 1).to_string(),
                r.run.flag(),
            ],
            lab::run_values(&r.run),
        );
    }
    Section {
        title: "Every run".to_owned(),
        text: vec![
            "One row per run: what the generator counted (requests, measured seconds, \
             hits/s, bytes/s both ways, bytes received per request) and the CPU of the \
             server and the generator; the flag says when a run was generator-bound or \
             contended (compare's rules)."
                .to_owned(),
        ],
        tables: vec![every],
        charts: Vec::new(),
    }
}
