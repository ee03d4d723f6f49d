//! `brigade study inproc`: in process against loopback, as an RPC framework's in-process mode was
//! once measured. One and then two clients call the same typed operation — encode a request
//! object, send it, the handler decodes it and builds and encodes the answer, the client decodes
//! that: two serialisations and two deserialisations per call — in process through the
//! application's route table ([`super::lab::inprocess`]), and over loopback on every runtime with
//! one persistent connection per client (the generator's own client). The original found the
//! in-process mode only about 20% faster: serialisation, not the socket, dominated. The same for
//! `GET /bench/hello`, where there is nothing to serialise and the socket should dominate.
//!
//! Before anything is timed, every runtime's loopback answers are checked against the in-process
//! answers byte for byte (the typed operation, hello, a static body and the bad URL): the
//! in-process provider is the same handler, not a special path.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use brigade_load::engine::session::Session;
use brigade_load::scenario::{Pools, RequestSpec, Template};
use brigade_records::result::{merge, LoadResult};
use bytes::Bytes;
use clap::Args;

use super::lab::calls::{self, CallsMade, ClientTally, Span};
use brigade_runtimes::inprocess::InProcess;

use super::lab::inprocess::{self, InprocOp, INPROC};
use super::lab::shapes::Shape;
use super::lab::{self, CellRun, LabArgs, Served, StepRun};
use super::Registry;
use brigade_meter::isolated::sampled;
use brigade_report::study::{Axis, Better, Chart, Metric, Section, Series, StudyReport, Table};

/// The per-call table's title.
pub const CALLS_TABLE: &str = "ms per call";
/// The advantage table's title.
pub const ADVANTAGE_TABLE: &str = "In-process advantage";
/// The answers-checked table's title.
pub const ANSWERS_TABLE: &str = "Answers compared byte for byte";
/// The every-run table's title.
pub const RUNS_TABLE: &str = "Every run";

/// Arguments of `brigade study inproc`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:\n  brigade study inproc --quick\n  \
brigade study inproc --runtimes axum,hyper --calls 20000 --strings 1000")]
pub struct InprocArgs {
    /// Servers, CPUs, repeats (default 3, --quick 1) and where to write.
    #[command(flatten)]
    pub(crate) lab: LabArgs,
    /// Concurrent clients, comma-separated [default: 1,2 (the original's)]
    #[arg(long, value_delimiter = ',')]
    pub(crate) clients: Vec<u32>,
    /// Measured calls per client [default: 2000; --quick: 200]
    #[arg(long)]
    pub(crate) calls: Option<u64>,
    /// Strings in the typed operation's request object (answered reversed)
    #[arg(long, default_value_t = 100)]
    pub(crate) strings: usize,
    /// Warm-up calls' time per client before the measured ones [default: 200ms; --quick: 50ms]
    #[arg(long, value_parser = humantime::parse_duration)]
    pub(crate) warmup: Option<Duration>,
    /// A CI-sized run (200 calls per client, one repeat): seconds
    #[arg(long)]
    pub(crate) quick: bool,
}

/// The operations compared.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Operation {
    /// `POST /bench/strings/reverse`: encode the strings, decode the reversed answer.
    Typed {
        /// The request object.
        strings: Arc<Vec<String>>,
    },
    /// `GET /bench/hello`: nothing to encode, a short text to read.
    Hello,
}

impl Operation {
    /// Its name in tables.
    pub(crate) fn name(&self) -> String {
        match self {
            Operation::Typed { strings } => {
                format!("typed: reverse {} strings", strings.len())
            }
            Operation::Hello => "GET /bench/hello".to_owned(),
        }
    }

    /// The request shape it sends.
    pub(crate) fn shape(&self) -> Shape {
        match self {
            Operation::Typed { strings } => Shape::reverse_strings(strings.len()),
            Operation::Hello => Shape::hello(),
        }
    }

    /// Serialises the request object (`None`: no body).
    pub(crate) fn encode(&self) -> Result<Option<String>> {
        match self {
            Operation::Typed { strings } => Ok(Some(
                serde_json::to_string(strings.as_ref()).context("encoding the request object")?,
            )),
            Operation::Hello => Ok(None),
        }
    }

    /// Deserialises the answer and checks it.
    pub(crate) fn decode(&self, body: &[u8]) -> Result<()> {
        match self {
            Operation::Typed { strings } => {
                let answer: Vec<String> =
                    serde_json::from_slice(body).context("decoding the answer object")?;
                if answer.len() != strings.len() || answer.first() != strings.last() {
                    bail!("the answer is not the strings reversed");
                }
            }
            Operation::Hello => {
                if std::str::from_utf8(body).map_or(true, str::is_empty) {
                    bail!("hello answered no text");
                }
            }
        }
        Ok(())
    }
}

/// The study's settings.
#[derive(Debug, Clone)]
pub(crate) struct InprocSettings {
    /// Servers, CPUs, repeats.
    pub lab: lab::Lab,
    /// Client counts.
    pub clients: Vec<u32>,
    /// Measured calls per client.
    pub calls: u64,
    /// The operations.
    pub operations: Vec<Operation>,
    /// Warm-up per client and run.
    pub warmup: Duration,
}

impl InprocArgs {
    /// Resolves defaults (and `--quick`).
    pub(crate) fn settings(&self) -> Result<InprocSettings> {
        let lab = self
            .lab
            .lab("inproc", self.quick, if self.quick { 1 } else { 3 })?;
        let clients = if self.clients.is_empty() {
            vec![1, 2]
        } else {
            self.clients.clone()
        };
        if clients.contains(&0) {
            bail!("--clients must be at least 1");
        }
        let calls = self.calls.unwrap_or(if self.quick { 200 } else { 2000 });
        if calls == 0 {
            bail!("--calls must be at least 1");
        }
        let strings = (0..self.strings).map(|i| format!("s{i:09}")).collect();
        Ok(InprocSettings {
            lab,
            clients,
            calls,
            operations: vec![
                Operation::Typed {
                    strings: Arc::new(strings),
                },
                Operation::Hello,
            ],
            warmup: self
                .warmup
                .unwrap_or(Duration::from_millis(if self.quick { 50 } else { 200 })),
        })
    }
}

/// Answers compared for one runtime.
#[derive(Debug, Clone)]
struct Compared {
    runtime: String,
    request: String,
    status: u16,
    bytes: usize,
}

/// Runs `brigade study inproc`: the study, the three reports, and the report on the terminal.
pub(crate) fn run_inproc(args: &InprocArgs, registry: &Registry) -> Result<()> {
    let settings = args.settings()?;
    let report = run(&settings, registry)?;
    super::show(&report, &settings.lab.out_dir);
    Ok(())
}

/// Runs the study and writes its reports; returns the report.
pub(crate) fn run(settings: &InprocSettings, registry: &Registry) -> Result<StudyReport> {
    let began = Instant::now();
    let started_at = brigade_meter::clock::now_rfc3339();
    let lab = &settings.lab;
    let app = super::rpc::build_inproc(registry)?.context(
        "study inproc needs the application in this process: this binary registers none (a \
         binary registers a kit service as study::Registry::inproc)",
    )?;
    let app_name = registry.inproc.as_ref().map_or("", |a| a.name);
    println!(
        "brigade study inproc: {} in process and over loopback on {}; clients {}; {} calls per \
         client; {} repeat(s)",
        settings
            .operations
            .iter()
            .map(Operation::name)
            .collect::<Vec<_>>()
            .join(" and "),
        lab.runtimes.join(", "),
        lab::counts_text(&settings.clients),
        settings.calls,
        lab.repeat
    );
    let ((runs, compared), servers) = lab.with_servers(|servers| {
        let mut compared = Vec::new();
        for served in servers {
            compared.extend(compare_answers(settings, &app, served)?);
        }
        println!(
            "Answers: {} loopback answers equal the in-process ones byte for byte",
            compared.len()
        );
        let runs = lab.run_cells(
            servers,
            (settings.operations.len(), &settings.clients),
            |op| settings.operations[op].name(),
            |served, op, clients, repeat| socket_run(settings, served, op, clients, repeat),
            Some(|op, clients, repeat| inproc_run(settings, &app, op, clients, repeat)),
        );
        Ok((runs, compared))
    })?;
    let mut report = build(settings, app_name, &runs, &compared, &servers, started_at);
    report.wall_s = began.elapsed().as_secs_f64();
    brigade_report::write_all(&report, &lab.out_dir)?;
    Ok(report)
}

/// Sends every checked request to `served` and to the in-process application, and fails unless
/// each pair of answers has the same status and the same body, byte for byte.
fn compare_answers(
    settings: &InprocSettings,
    app: &InProcess,
    served: &Served,
) -> Result<Vec<Compared>> {
    let mut shapes: Vec<Shape> = settings.operations.iter().map(Operation::shape).collect();
    shapes.push(Shape::static_body(256));
    shapes.push(Shape::unknown_path());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("Failed to build a runtime")?;
    let mut out = Vec::new();
    for shape in shapes {
        let scenario = shape.scenario()?;
        let seq = AtomicU64::new(0);
        let targets = served.targets();
        let mut session = Session::new(&scenario, &targets, settings.lab.timeout, &seq)?;
        let mut pools = scenario.empty_pools();
        let (socket, local) = runtime.block_on(async {
            let socket = session
                .send(&scenario.requests()[0], &mut pools)
                .await
                .with_context(|| format!("{}: {} over loopback", served.runtime, shape.name))?;
            let body = Bytes::from(shape.body.clone().unwrap_or_default());
            let content_type = shape.body.is_some().then_some(shape.content_type);
            let local = app
                .call(shape.method, &shape.path, content_type, body)
                .await;
            anyhow::Ok((socket, local))
        })?;
        if socket.status != local.status || socket.body != local.body {
            bail!(
                "{}: {} answered {} over loopback ({} bytes: {}) but {} in process ({} bytes: \
                 {}); the in-process provider must be the same handler",
                served.runtime,
                shape.name,
                socket.status,
                socket.body.len(),
                String::from_utf8_lossy(&socket.body[..socket.body.len().min(120)]),
                local.status,
                local.body.len(),
                String::from_utf8_lossy(&local.body[..local.body.len().min(120)])
            );
        }
        out.push(Compared {
            runtime: served.runtime.clone(),
            request: format!("{} {}", shape.method, shape.path),
            status: socket.status,
            bytes: socket.body.len(),
        });
    }
    Ok(out)
}

/// The loopback run of one cell: `clients` threads, each with its own keep-alive connection,
/// each call encoding its request, sending it and decoding the answer; `/proc` sampled around it.
fn socket_run(
    settings: &InprocSettings,
    served: &Served,
    op: usize,
    clients: u32,
    repeat: u32,
) -> StepRun {
    let lab = &settings.lab;
    let operation = &settings.operations[op];
    let made = CallsMade {
        target: served.url.clone(),
        operation: operation.name(),
        clients,
        warmup: settings.warmup,
        timeout: lab.timeout,
    };
    let sampled = sampled(served.process.pid(), &lab.cpus, lab.shape, || {
        socket_clients(settings, served, operation, &made)
    });
    StepRun::from_sampled(&served.runtime, repeat, sampled)
}

fn socket_clients(
    settings: &InprocSettings,
    served: &Served,
    operation: &Operation,
    made: &CallsMade,
) -> Result<LoadResult> {
    let scenario = operation.shape().scenario()?;
    let targets: BTreeMap<String, String> = served.targets();
    let start = Barrier::new(made.clients as usize);
    let cpus = settings.lab.cpus.generator_mask();
    let outcomes: Vec<Result<(ClientTally, Span)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..made.clients)
            .map(|_| {
                let (scenario, targets, start) = (&scenario, &targets, &start);
                scope.spawn(move || {
                    if let Some(cpus) = cpus {
                        brigade_meter::pin::pin_current_thread(cpus)?;
                    }
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .context("Failed to build a client's runtime")?;
                    let seq = AtomicU64::new(0);
                    let mut session = Session::new(scenario, targets, made.timeout, &seq)?;
                    let mut pools = scenario.empty_pools();
                    let mut spec = scenario.requests()[0].clone();
                    start.wait();
                    runtime.block_on(async {
                        let until = Instant::now() + made.warmup;
                        while Instant::now() < until {
                            one_call(&mut session, &mut pools, &mut spec, operation).await?;
                        }
                        let mut tally = ClientTally::default();
                        let first = Instant::now();
                        for _ in 0..settings.calls {
                            let started = Instant::now();
                            let (sent, received) =
                                one_call(&mut session, &mut pools, &mut spec, operation).await?;
                            tally.record(started.elapsed(), sent, received);
                        }
                        let span = Span {
                            first,
                            last: Instant::now(),
                        };
                        anyhow::Ok((tally, span))
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a client panicked")))
            })
            .collect()
    });
    let outcomes = outcomes.into_iter().collect::<Result<Vec<_>>>()?;
    let span = Span::cover(outcomes.iter().map(|(_, s)| *s)).context("no client ran")?;
    let tallies: Vec<ClientTally> = outcomes.into_iter().map(|(t, _)| t).collect();
    Ok(calls::result(made, &tallies, span.elapsed()))
}

/// One loopback call: encode the request object, send it, decode the answer; answers the body
/// bytes sent and received.
async fn one_call(
    session: &mut Session<'_>,
    pools: &mut Pools,
    spec: &mut RequestSpec,
    operation: &Operation,
) -> Result<(u64, u64)> {
    let body = operation.encode()?;
    let sent = body.as_ref().map_or(0, |b| b.len() as u64);
    spec.body = body.as_deref().map(Template::literal);
    let answer = session.send(spec, pools).await?;
    operation.decode(&answer.body)?;
    Ok((sent, answer.body.len() as u64))
}

/// The in-process run of one cell: the same encode, call and decode, without the socket.
fn inproc_run(
    settings: &InprocSettings,
    app: &InProcess,
    op: usize,
    clients: u32,
    repeat: u32,
) -> StepRun {
    let lab = &settings.lab;
    let operation = settings.operations[op].clone();
    let shape = operation.shape();
    let call: InprocOp = Arc::new(move |app: InProcess| {
        let (operation, shape) = (operation.clone(), shape.clone());
        Box::pin(async move {
            let body = operation.encode()?;
            let sent = body.as_ref().map_or(0, |b| b.len() as u64);
            let content_type = body.is_some().then_some(shape.content_type);
            let reply = app
                .call(
                    shape.method,
                    &shape.path,
                    content_type,
                    body.map(Bytes::from).unwrap_or_default(),
                )
                .await;
            if reply.status != shape.status {
                bail!("{} answered {} in process", shape.name, reply.status);
            }
            operation.decode(&reply.body)?;
            Ok((sent, reply.body.len() as u64))
        })
    });
    let made = CallsMade {
        target: "in process".to_owned(),
        operation: settings.operations[op].name(),
        clients,
        warmup: settings.warmup,
        timeout: lab.timeout,
    };
    let outcome = inprocess::run_clients(
        app,
        &call,
        &made,
        settings.calls,
        clients,
        lab.cpus.generator_mask(),
    );
    StepRun::in_process(outcome, repeat)
}

fn build(
    settings: &InprocSettings,
    app_name: &str,
    runs: &[CellRun],
    compared: &[Compared],
    servers: &[(String, String)],
    started_at: String,
) -> StudyReport {
    let lab = &settings.lab;
    StudyReport {
        study: "inproc".to_owned(),
        title: "Brigade in-process against loopback".to_owned(),
        summary: format!(
            "A typed operation (two serialisations, two deserialisations per call) and GET \
             /bench/hello by {} client(s), in process through the route table and over loopback \
             on {}.",
            lab::counts_text(&settings.clients),
            lab.runtimes.join(", ")
        ),
        started_at,
        wall_s: 0.0,
        setup: lab.setup(servers, setup_text(settings, app_name)),
        notes: notes(settings, app_name, runs, compared),
        sections: vec![
            per_call_section(settings, runs),
            answers_section(compared),
            every_run_section(settings, runs),
        ],
    }
}

/// The study's own line in the setup section: operations, clients, calls and the application.
fn setup_text(settings: &InprocSettings, app_name: &str) -> String {
    format!(
        "operations {}; clients {}; {} measured calls per client after {} ms of warm-up \
         calls; in-process application {app_name}",
        settings
            .operations
            .iter()
            .map(Operation::name)
            .collect::<Vec<_>>()
            .join(", "),
        lab::counts_text(&settings.clients),
        settings.calls,
        settings.warmup.as_millis()
    )
}

/// How the calls were made on both paths, that the answers were equal, and the flagged runs.
fn notes(
    settings: &InprocSettings,
    app_name: &str,
    runs: &[CellRun],
    compared: &[Compared],
) -> Vec<String> {
    let mut notes = vec![
        format!(
            "Every call encodes its request object and decodes the answer on both paths; the \
             in-process provider is {app_name}'s route table called in this process (matched, \
             its body rules applied, the handler run), its clients tasks on {} thread(s) on the \
             generator's CPUs; the loopback clients are threads on the generator's CPUs, one \
             keep-alive connection each.",
            settings.clients.iter().max().copied().unwrap_or(1)
        ),
        format!(
            "{} loopback answers were compared with the in-process answers and found equal, \
             status and body byte for byte.",
            compared.len()
        ),
        "Bytes in the every-run table are body bytes (the calls are timed one by one, not \
         counted on the wire)."
            .to_owned(),
    ];
    notes.extend(lab::flag_notes(runs.iter().map(|r| {
        (
            format!(
                "{} at {} client(s)",
                settings.operations[r.operation].name(),
                r.clients
            ),
            &r.run,
        )
    })));
    notes
}

/// The repeats of one provider at one operation and client count, merged into one result.
fn merged(runs: &[CellRun], op: usize, clients: u32, provider: &str) -> Option<LoadResult> {
    let results: Vec<LoadResult> = runs
        .iter()
        .filter(|r| r.operation == op && r.clients == clients && r.provider == provider)
        .filter_map(|r| r.run.result.clone())
        .collect();
    merge(&results).ok()
}

/// ms per call by every provider, the in-process advantage, and a chart per operation.
fn per_call_section(settings: &InprocSettings, runs: &[CellRun]) -> Section {
    let (per_call, charts) = per_call_table(settings, runs);
    Section {
        title: "Per call".to_owned(),
        text: vec![
            "Mean, p50 and p99 ms per call over every repeat's calls together. The \
             in-process advantage is how much less time a call takes in process, in \
             percent of the loopback call."
                .to_owned(),
        ],
        tables: vec![per_call, advantage_table(settings, runs)],
        charts,
    }
}

/// ms per call per operation, clients and provider (in process first), and for each operation
/// a chart of the mean against clients.
fn per_call_table(settings: &InprocSettings, runs: &[CellRun]) -> (Table, Vec<Chart>) {
    let mut providers = vec![INPROC.to_owned()];
    providers.extend(settings.lab.runtimes.iter().cloned());
    let mut per_call = Table::new(
        CALLS_TABLE,
        &["operation", "clients", "provider"],
        vec![
            Metric::new("calls", "", Better::Neither, 0),
            Metric::new("mean", "ms", Better::Lower, 4),
            Metric::new("p50", "ms", Better::Lower, 4),
            Metric::new("p99", "ms", Better::Lower, 4),
            Metric::new("calls/s", "", Better::Higher, 0),
        ],
    );
    let mut charts = Vec::new();
    for (op, operation) in settings.operations.iter().enumerate() {
        let mut series = Vec::new();
        for provider in &providers {
            let mut points = Vec::new();
            for &clients in &settings.clients {
                let dims = vec![operation.name(), clients.to_string(), provider.clone()];
                match merged(runs, op, clients, provider) {
                    Some(m) => {
                        let t = &m.total;
                        points.push((clients as f64, t.latency.mean_ms));
                        per_call.push(
                            dims,
                            vec![
                                Some(t.requests as f64),
                                Some(t.latency.mean_ms),
                                Some(t.latency.p50_ms),
                                Some(t.latency.p99_ms),
                                Some(t.hits_per_s),
                            ],
                        );
                    }
                    None => per_call.push(dims, vec![None; 5]),
                }
            }
            series.push(Series {
                name: provider.clone(),
                points,
            });
        }
        charts.push(Chart {
            title: format!("{}: mean ms per call against clients", operation.name()),
            x: Axis::linear("clients"),
            y: Axis::log("mean ms per call"),
            series,
        });
    }
    (per_call, charts)
}

/// Each runtime's loopback mean beside the in-process one, and how much less the latter is.
fn advantage_table(settings: &InprocSettings, runs: &[CellRun]) -> Table {
    let mut advantage = Table::new(
        ADVANTAGE_TABLE,
        &["operation", "clients", "runtime"],
        vec![
            Metric::new("loopback", "ms", Better::Lower, 4),
            Metric::new("in process", "ms", Better::Lower, 4),
            Metric::new("in-process advantage", "%", Better::Neither, 0),
        ],
    );
    for (op, operation) in settings.operations.iter().enumerate() {
        for &clients in &settings.clients {
            let local = merged(runs, op, clients, INPROC).map(|m| m.total.latency.mean_ms);
            for runtime in &settings.lab.runtimes {
                let socket = merged(runs, op, clients, runtime).map(|m| m.total.latency.mean_ms);
                advantage.push(
                    vec![operation.name(), clients.to_string(), runtime.clone()],
                    vec![
                        socket,
                        local,
                        socket
                            .zip(local)
                            .filter(|(s, _)| *s > 0.0)
                            .map(|(s, l)| (s - l) / s * 100.0),
                    ],
                );
            }
        }
    }
    advantage
}

/// The requests answered once over loopback and once in process, found equal.
fn answers_section(compared: &[Compared]) -> Section {
    let mut answers = Table::new(
        ANSWERS_TABLE,
        &["runtime", "request"],
        vec![
            Metric::new("status", "", Better::Neither, 0),
            Metric::new("body", "bytes", Better::Neither, 0),
        ],
    );
    for c in compared {
        answers.push(
            vec![c.runtime.clone(), c.request.clone()],
            vec![Some(c.status as f64), Some(c.bytes as f64)],
        );
    }
    Section {
        title: "The same handler".to_owned(),
        text: vec![
            "Each request below was sent once over loopback and once in process before \
             anything was timed; the two answers had the same status and body."
                .to_owned(),
        ],
        tables: vec![answers],
        charts: Vec::new(),
    }
}

/// One row per run.
fn every_run_section(settings: &InprocSettings, runs: &[CellRun]) -> Section {
    let mut every = Table::new(
        RUNS_TABLE,
        &["operation", "clients", "provider", "repeat", "flag"],
        lab::run_metrics(),
    );
    for r in runs {
        every.push(
            vec![
                settings.operations[r.operation].name(),
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
            "One row per run; loopback runs are flagged generator-bound or contended by \
             compare's rules."
                .to_owned(),
        ],
        tables: vec![every],
        charts: Vec::new(),
    }
}
