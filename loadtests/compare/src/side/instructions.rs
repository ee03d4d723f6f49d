//! Instructions per request (`compare --instructions`): each runtime's server run under valgrind's
//! callgrind, answering the cell's scenario closed loop for a fixed number of requests, three times
//! (N, 2N, 3N requests after the same fixtures, with the same seed). Instructions counted are
//! deterministic for a fixed request; the difference between two counts cancels start-up, fixtures
//! and shutdown (the N2−N1 method of `scripts/overhead-callgrind.sh`). A scenario is a mix, so the
//! two differences (2N−N and 3N−2N) are two samples of it: their mean is the figure and their
//! spread is reported beside it.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context};
use brigade_load::engine::{self, LoadConfig};
use brigade_load::scenario::Scenario;

use crate::measure::Bench;
use brigade_meter::servers::{self, CommandTemplate, Launch, ServerSpec};

/// Requests in the first counted pass (the second and third answer twice and three times as many).
pub(crate) const REQUESTS: u64 = 1_000;

/// How long a server under callgrind (tens of times slower) may take to be ready.
const READY_UNDER_CALLGRIND: Duration = Duration::from_secs(120);

/// Instructions per request of one runtime on one scenario, and the spread of its two samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Counted {
    /// The mean of the two samples.
    pub per_request: f64,
    /// Their difference, percent of the mean.
    pub spread_pct: f64,
}

/// The launch that runs the server under callgrind, its counts written to `out`.
fn under_callgrind(
    launch: &Launch,
    store: &str,
    protocol: brigade_records::protocol::Protocol,
    out: &Path,
) -> anyhow::Result<Launch> {
    // Everything is collected, start-up included: it is the same in every pass and cancels in
    // the differences. (`scripts/overhead-callgrind.sh` toggles the metrics clock's calibration
    // off; with three services calibrating at once on several threads, toggles can end off.)
    let valgrind = format!(
        "valgrind --tool=callgrind --callgrind-out-file={}",
        shlex::try_quote(&out.display().to_string()).context("an odd output path")?
    );
    Ok(match launch {
        Launch::Binary(binary) => {
            let mongo = if store == "mongo" {
                " --mongodb-uri {mongodb_uri} --database-prefix {database_prefix} --drop-databases-on-exit"
            } else {
                ""
            };
            let wire: String = brigade_meter::servers::launch::serve_protocol_args(protocol)
                .iter()
                .map(|flag| format!(" {flag}"))
                .collect();
            Launch::Template {
                binary: binary.clone(),
                template: CommandTemplate::parse(&format!(
                    "{valgrind} {{binary}} serve --runtime {{runtime}} --service all --listen \
                     {{listen}} --store {{store}} --data-dir {{data_dir}} --workers {{workers}} \
                     --handicap-us {{handicap_us}}{mongo}{wire}"
                ))?,
            }
        }
        Launch::Template { binary, template } => Launch::Template {
            binary: binary.clone(),
            template: CommandTemplate::parse(&format!("{valgrind} {}", template.text()))?,
        },
    })
}

/// Reads the total instructions from a callgrind output file.
fn total(out: &Path) -> anyhow::Result<u64> {
    let text = std::fs::read_to_string(out)
        .with_context(|| format!("Failed to read {}", out.display()))?;
    text.lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
                .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        })
        .with_context(|| format!("{} has no summary line", out.display()))
}

/// One pass: a fresh server under callgrind answering `requests` closed-loop requests after the
/// fixtures; its total instructions.
fn pass(
    bench: &Bench<'_>,
    scenario: &Scenario,
    label: &str,
    users: u32,
    requests: u64,
    dir: &Path,
) -> anyhow::Result<u64> {
    let settings = bench.settings;
    let name = format!("{}-{requests}", label.replace('#', "-"));
    let out = dir.join(format!("{name}.callgrind"));
    let data = tempfile::Builder::new()
        .prefix("brigade-callgrind-")
        .tempdir()
        .context("Failed to create a data folder")?;
    let spec = ServerSpec {
        launch: under_callgrind(
            &settings.launch,
            &settings.store,
            settings.wire.protocol,
            &out,
        )?,
        runtime: brigade_meter::servers::runtime_of(label).to_owned(),
        data_dir: data.path().to_path_buf(),
        preload: 0,
        database_prefix: (settings.store == "mongo")
            .then(|| format!("cg{}_{requests}_", std::process::id())),
        log_path: dir.join(format!("{name}.log")),
        handicap_us: settings.handicaps.get(label).copied().unwrap_or(0.0),
        ..bench.server_template()
    };
    let server = servers::start_on_free_ports(&spec, &[], READY_UNDER_CALLGRIND)
        .with_context(|| format!("{label} under callgrind did not start"))?;
    let targets = server
        .announced()
        .targets(scenario.label(), &scenario.services())?;
    let config = settings.wire.apply(LoadConfig {
        targets,
        users: Some(users),
        rate: None,
        connections: users,
        duration: None,
        requests: Some(requests),
        warmup: Duration::ZERO,
        keepalive: settings.keepalive,
        threads: 1,
        timeout: Duration::from_secs(60),
        think: Duration::ZERO,
        cpus: bench.cpus.generator_mask().map(<[usize]>::to_vec),
        progress: false,
        seed: Some(settings.seed),
        ..LoadConfig::default()
    });
    let result = engine::run(&config, scenario);
    let stop = server.stop(Duration::from_secs(60));
    let result = result?;
    if result.total.requests != requests {
        bail!(
            "{label} under callgrind answered {} of {requests} requests",
            result.total.requests
        );
    }
    if !matches!(stop, brigade_records::stop::StopOutcome::Graceful { .. }) {
        bail!("{label} under callgrind did not stop cleanly ({stop}): no counts");
    }
    total(&out)
}

/// Instructions per request of `label` on `scenario` with `users` users.
pub(crate) fn count(
    bench: &Bench<'_>,
    scenario: &Scenario,
    label: &str,
    users: u32,
) -> anyhow::Result<Counted> {
    let dir = bench.settings.out_dir.join("logs").join("callgrind");
    std::fs::create_dir_all(&dir).with_context(|| format!("Failed to create {}", dir.display()))?;
    let n = REQUESTS;
    let one = pass(bench, scenario, label, users, n, &dir)?;
    let two = pass(bench, scenario, label, users, 2 * n, &dir)?;
    let three = pass(bench, scenario, label, users, 3 * n, &dir)?;
    Ok(from_totals([one, two, three], n))
}

/// The figure from three totals at N, 2N and 3N requests.
fn from_totals(totals: [u64; 3], n: u64) -> Counted {
    let first = totals[1].saturating_sub(totals[0]) as f64 / n as f64;
    let second = totals[2].saturating_sub(totals[1]) as f64 / n as f64;
    let mean = (first + second) / 2.0;
    Counted {
        per_request: mean,
        spread_pct: if mean > 0.0 {
            (first - second).abs() / mean * 100.0
        } else {
            0.0
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_differences_give_the_figure_and_their_spread() {
        let c = from_totals([1_000_000, 1_100_000, 1_210_000], 1_000);
        assert!((c.per_request - 105.0).abs() < 1e-9);
        assert!((c.spread_pct - 10.0 / 105.0 * 100.0).abs() < 1e-9);
    }

    #[test]
    fn callgrind_totals_are_read_from_the_summary_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.cg");
        std::fs::write(&path, "version: 1\nevents: Ir\nsummary: 123456\n").unwrap();
        assert_eq!(total(&path).unwrap(), 123_456);
        std::fs::write(&path, "events: Ir\n").unwrap();
        assert!(total(&path).is_err());
    }

    #[test]
    fn the_standard_flags_run_under_callgrind_with_their_placeholders() {
        let launch = under_callgrind(
            &Launch::Binary("/bin/brigade".into()),
            "embedded",
            brigade_records::protocol::Protocol::H1,
            Path::new("/tmp/a b.cg"),
        )
        .unwrap();
        let Launch::Template { template, .. } = &launch else {
            panic!("a template")
        };
        assert!(template.text().starts_with("valgrind --tool=callgrind"));
        assert!(template.uses("listen") && template.uses("handicap_us"));
        assert!(template.text().contains("'/tmp/a b.cg'"));
    }
}
