//! The sweep's TLS handshake steps: what a new TLS connection costs each runtime. A keep-alive
//! load hides the handshake (one per connection, then thousands of requests on it), so these
//! steps open a new connection for every request (`GET /bench/hello`, the smallest answer there
//! is), over `h1-tls` on servers started with `--tls-self-signed`, and over QUIC (`h3`, on servers
//! started with `--protocol h3`) on the runtimes that offer it: every request is one handshake,
//! and the server's CPU per request is its CPU per handshake (plus one tiny answer, the same in
//! both steps). Made twice per protocol: with session resumption off (every handshake full:
//! certificate, signature, key exchange) and on (a session ticket or id accepted after each
//! generator thread's first; QUIC's 0-RTT stays off, as the servers refuse early data). The
//! generator times every handshake from the TCP connection made (QUIC: the first packet sent) to
//! the handshake complete, full and resumed apart (`result::TlsResult`).

use anyhow::Result;
use brigade_meter::servers::runtime_of;
use brigade_records::protocol::Protocol;
use brigade_records::result::HandshakeResult;

use super::{SweepResults, SweepSettings};
use crate::lab::shapes::Shape;
use brigade_stats::median;

use crate::lab::{StepRun, Window};
use brigade_report::study::{Better, Metric, Section, Table};

/// The TLS handshakes table's title.
pub const HANDSHAKES_TABLE: &str = "TLS handshakes";

/// The protocols the handshake steps speak, in order: TLS on TCP, then QUIC.
pub(crate) const PROTOCOLS: [Protocol; 2] = [Protocol::H1Tls, Protocol::H3];

/// One handshake step: a new connection per request over h1-tls or h3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HandshakeStep {
    /// `h1-tls` or `h3`.
    pub protocol: Protocol,
    /// Whether the client resumes TLS sessions.
    pub resumption: bool,
    /// Concurrent clients.
    pub clients: u32,
}

impl HandshakeStep {
    /// `full` or `resumed`: the handshakes the step makes.
    pub(crate) fn kind(&self) -> &'static str {
        if self.resumption {
            "resumed"
        } else {
            "full"
        }
    }
}

/// The steps at `clients` clients for each of `protocols`: every handshake full, then resumed.
pub(crate) fn steps(clients: u32, protocols: &[Protocol]) -> Vec<HandshakeStep> {
    protocols
        .iter()
        .flat_map(|&protocol| {
            [false, true].map(|resumption| HandshakeStep {
                protocol,
                resumption,
                clients,
            })
        })
        .collect()
}

/// One handshake step's run on one runtime.
#[derive(Debug, Clone)]
pub(crate) struct HandshakeRun {
    /// Index into the handshake steps.
    pub step: usize,
    /// The generator's run (its result's `tls` holds the handshakes).
    pub run: StepRun,
}

impl HandshakeRun {
    /// The server's CPU per request of the run, µs: per handshake, since every request opened a
    /// connection of its own.
    pub(crate) fn cpu_us_per_handshake(&self) -> Option<f64> {
        let result = self.run.result.as_ref()?;
        let requests = result.total.requests;
        (requests > 0)
            .then(|| self.run.server_cpu_percent / 100.0 * result.elapsed_s * 1e6 / requests as f64)
    }
}

/// Makes the handshake steps on TLS servers of their own (after the plaintext sweep, whose
/// servers are stopped), one set of servers per protocol (h3's on the runtimes that offer it),
/// adding the runs to `results` and the servers' lines to `servers`.
pub(crate) fn run(
    settings: &SweepSettings,
    mut results: SweepResults,
    mut servers: ServerLines,
) -> Result<(SweepResults, ServerLines)> {
    for protocol in PROTOCOLS {
        let steps: Vec<usize> = (0..settings.handshakes.len())
            .filter(|&i| settings.handshakes[i].protocol == protocol)
            .collect();
        if steps.is_empty() {
            continue;
        }
        let mut lab = settings.lab.over(protocol);
        let info = lab.info.clone();
        lab.runtimes
            .retain(|runtime| info.offers(runtime_of(runtime), protocol));
        let (runs, tls_servers) = run_protocol(settings, &lab, &steps)?;
        results.handshakes.extend(runs);
        servers.extend(
            tls_servers
                .into_iter()
                .map(|(runtime, text)| (format!("{runtime}, {protocol}"), text)),
        );
    }
    Ok((results, servers))
}

/// Each server's label and its line for the report.
type ServerLines = Vec<(String, String)>;

/// The steps `steps` (indexes into the settings' handshake steps, one protocol's) on `lab`'s
/// servers.
fn run_protocol(
    settings: &SweepSettings,
    lab: &crate::lab::Lab,
    steps: &[usize],
) -> Result<(Vec<HandshakeRun>, ServerLines)> {
    let scenario = Shape::hello().scenario()?;
    lab.with_servers(|served| {
        let order = lab.order(steps.len());
        let mut runs = Vec::new();
        for (i, planned) in order.iter().enumerate() {
            let index = steps[planned.scenario];
            let step = settings.handshakes[index];
            let server = &served[planned.runtime];
            let mut config = lab.load_config(
                server,
                step.clients,
                false,
                Window::Time {
                    duration: settings.duration,
                    warmup: settings.warmup,
                },
            );
            config.tls.resumption = step.resumption;
            let run = lab.measure(server, &scenario, &config, planned.repeat);
            let what = format!(
                "{} {} handshakes, {} client(s)",
                step.kind(),
                step.protocol,
                step.clients
            );
            run.print(&format!("[{}/{}]", i + 1, order.len()), &what);
            runs.push(HandshakeRun { step: index, run });
        }
        Ok(runs)
    })
}

/// Medians over the repeats of one runtime's runs of one step.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Figures {
    per_s: f64,
    full: f64,
    resumed: f64,
    p50_ms: Option<f64>,
    p99_ms: Option<f64>,
    cpu_us: Option<f64>,
}

/// The figures of `runs` (one runtime, one step), of the handshakes the step makes.
fn figures(runs: &[&HandshakeRun], resumption: bool) -> Option<Figures> {
    let tls: Vec<(&HandshakeRun, &brigade_records::result::TlsResult)> = runs
        .iter()
        .filter_map(|r| Some((*r, r.run.result.as_ref()?.tls.as_ref()?)))
        .collect();
    if tls.is_empty() {
        return None;
    }
    let of = |f: &dyn Fn(&brigade_records::result::TlsResult) -> f64| {
        median(&tls.iter().map(|(_, t)| f(t)).collect::<Vec<_>>())
    };
    let kind = |t: &brigade_records::result::TlsResult| -> HandshakeResult {
        if resumption {
            t.resumed.clone()
        } else {
            t.full.clone()
        }
    };
    let counted = tls.iter().any(|(_, t)| kind(t).count > 0);
    let cpus: Vec<f64> = tls
        .iter()
        .filter_map(|(r, _)| r.cpu_us_per_handshake())
        .collect();
    Some(Figures {
        per_s: of(&|t| t.handshakes_per_s),
        full: of(&|t| t.full.count as f64),
        resumed: of(&|t| t.resumed.count as f64),
        p50_ms: counted.then(|| of(&|t| kind(t).p50_ms)),
        p99_ms: counted.then(|| of(&|t| kind(t).p99_ms)),
        cpu_us: (!cpus.is_empty()).then(|| median(&cpus)),
    })
}

/// Every runtime's figures for every step, in the sweep's runtime order.
fn all_figures(
    settings: &SweepSettings,
    results: &SweepResults,
) -> Vec<(String, HandshakeStep, Figures)> {
    let mut out = Vec::new();
    for runtime in &settings.lab.runtimes {
        for (i, step) in settings.handshakes.iter().enumerate() {
            let runs: Vec<&HandshakeRun> = results
                .handshakes
                .iter()
                .filter(|r| r.step == i && &r.run.runtime == runtime)
                .collect();
            if let Some(f) = figures(&runs, step.resumption) {
                out.push((runtime.clone(), *step, f));
            }
        }
    }
    out
}

/// The handshakes table: per runtime and resumption, handshakes/s, the counts of each kind, the
/// p50/p99 of the kind the step makes, and the server's CPU per handshake.
fn table(all: &[(String, HandshakeStep, Figures)]) -> Table {
    let mut table = Table::new(
        HANDSHAKES_TABLE,
        &["runtime", "protocol", "resumption", "clients"],
        vec![
            Metric::new("handshakes/s", "", Better::Higher, 0),
            Metric::new("full handshakes", "", Better::Neither, 0),
            Metric::new("resumed handshakes", "", Better::Neither, 0),
            Metric::new("handshake p50", "ms", Better::Lower, 3),
            Metric::new("handshake p99", "ms", Better::Lower, 3),
            Metric::new("server CPU per handshake", "µs", Better::Lower, 1),
        ],
    );
    for (runtime, step, f) in all {
        table.push(
            vec![
                runtime.clone(),
                step.protocol.to_string(),
                if step.resumption { "on" } else { "off" }.to_owned(),
                step.clients.to_string(),
            ],
            vec![
                Some(f.per_s),
                Some(f.full),
                Some(f.resumed),
                f.p50_ms,
                f.p99_ms,
                f.cpu_us,
            ],
        );
    }
    table
}

/// The sentence the table makes: per protocol and runtime, a full handshake's CPU against a
/// resumed one's.
fn sentence(all: &[(String, HandshakeStep, Figures)]) -> String {
    let cpu = |runtime: &str, protocol: Protocol, resumption: bool| {
        all.iter()
            .find(|(r, s, _)| r == runtime && s.protocol == protocol && s.resumption == resumption)
            .and_then(|(_, _, f)| f.cpu_us)
    };
    let mut runtimes: Vec<&str> = all.iter().map(|(r, _, _)| r.as_str()).collect();
    runtimes.dedup();
    let per_protocol: Vec<String> = PROTOCOLS
        .iter()
        .filter_map(|&protocol| {
            let parts: Vec<String> = runtimes
                .iter()
                .filter_map(|&runtime| {
                    let full = cpu(runtime, protocol, false)?;
                    let resumed = cpu(runtime, protocol, true)?;
                    Some(format!(
                        "{runtime} {full:.0} µs full, {resumed:.0} µs resumed ({:.1}×)",
                        full / resumed.max(1e-9)
                    ))
                })
                .collect();
            (!parts.is_empty()).then(|| format!("over {protocol}: {}", parts.join("; ")))
        })
        .collect();
    if per_protocol.is_empty() {
        return "No runtime has both a full and a resumed handshake step measured.".to_owned();
    }
    format!(
        "Server CPU per new connection (one request each), {}.",
        per_protocol.join(". And ")
    )
}

/// The sweep report's TLS handshakes section (`None` without handshake steps).
pub(crate) fn section(settings: &SweepSettings, results: &SweepResults) -> Option<Section> {
    if settings.handshakes.is_empty() {
        return None;
    }
    let all = all_figures(settings, results);
    let protocols: Vec<String> = PROTOCOLS
        .iter()
        .filter(|p| settings.handshakes.iter().any(|s| s.protocol == **p))
        .map(|p| p.to_string())
        .collect();
    Some(Section {
        title: "TLS handshakes".to_owned(),
        text: vec![
            format!(
                "GET /bench/hello with a new connection per request over {}, on servers \
                 started with --tls-self-signed (h3: --protocol h3, on the runtimes that offer \
                 it): every request is one TLS handshake, so the server's CPU per request is its \
                 CPU per handshake. Session resumption off makes every handshake full; on, each \
                 generator thread's connections after its first resume (a QUIC handshake counts as \
                 resumed when the client offered a session ticket; 0-RTT stays off). Handshake latency is from the \
                 TCP connection made (QUIC: the first packet) to the handshake complete, of the \
                 kind the step makes.",
                protocols.join(" and ")
            ),
            sentence(&all),
        ],
        tables: vec![table(&all)],
        charts: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(cpu: f64) -> Figures {
        Figures {
            per_s: 1000.0,
            full: 10.0,
            resumed: 0.0,
            p50_ms: Some(1.0),
            p99_ms: Some(2.0),
            cpu_us: Some(cpu),
        }
    }

    #[test]
    fn the_sentence_sets_a_full_handshake_against_a_resumed_one_from_the_table() {
        let all_steps = steps(4, &PROTOCOLS);
        assert_eq!(all_steps.len(), 4);
        let [full, resumed, quic_full, quic_resumed] = [0, 1, 2, 3].map(|i| all_steps[i]);
        assert_eq!((full.kind(), resumed.kind()), ("full", "resumed"));
        assert_eq!((full.protocol, quic_resumed.protocol), PROTOCOLS.into());
        let all = vec![
            ("axum".to_owned(), full, figures(300.0)),
            ("axum".to_owned(), resumed, figures(100.0)),
            ("axum".to_owned(), quic_full, figures(400.0)),
            ("axum".to_owned(), quic_resumed, figures(200.0)),
        ];
        let t = table(&all);
        let at = [
            ("runtime", "axum"),
            ("protocol", "h1-tls"),
            ("resumption", "off"),
        ];
        assert_eq!(t.value(&at, "server CPU per handshake"), Some(300.0));
        let at = [
            ("runtime", "axum"),
            ("protocol", "h3"),
            ("resumption", "on"),
        ];
        assert_eq!(t.value(&at, "server CPU per handshake"), Some(200.0));
        let text = sentence(&all);
        assert!(
            text.contains("over h1-tls: axum 300 µs full, 100 µs resumed (3.0×)"),
            "{text}"
        );
        assert!(
            text.contains("over h3: axum 400 µs full, 200 µs resumed (2.0×)"),
            "{text}"
        );
    }
}
