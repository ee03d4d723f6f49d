//! Responsiveness under load: one extra client that asks `GET /health` once every 100 ms while a
//! step runs, on its own keep-alive connection (the generator's own client), from the generator's
//! CPUs. Its p99 says whether the server still answers a newcomer promptly while it serves the
//! benchmark (the original found one server "completely unusable" that still served the load).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use brigade_load::engine::session::Session;
use brigade_records::histogram::LatencyHistogram;

use crate::lab::shapes::Shape;
use brigade_meter::pin;

/// How often the probe asks.
pub(crate) const PROBE_EVERY: Duration = Duration::from_millis(100);

/// What the probe saw over a step's measured window.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ProbeResult {
    /// Probes answered 200.
    pub answered: u64,
    /// Probes that failed (no answer within the timeout, another status, a reset).
    pub failed: u64,
    /// Median latency of the answered probes, ms.
    pub p50_ms: f64,
    /// 99th percentile of the answered probes, ms.
    pub p99_ms: f64,
    /// The slowest answered probe, ms.
    pub max_ms: f64,
}

/// A probe running on its own thread until [`Probe::finish`].
#[derive(Debug)]
pub(crate) struct Probe {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Result<ProbeResult>>,
}

impl Probe {
    /// Starts probing `url` every [`PROBE_EVERY`], counting the probes started after `skip` (the
    /// step's warm-up); each may take `timeout`; pinned to `cpus` when given.
    pub(crate) fn start(
        url: &str,
        skip: Duration,
        timeout: Duration,
        cpus: Option<Vec<usize>>,
    ) -> Result<Probe> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let targets = BTreeMap::from([("*".to_owned(), url.to_owned())]);
        let handle = std::thread::Builder::new()
            .name("brigade-probe".into())
            .spawn(move || {
                if let Some(cpus) = &cpus {
                    pin::pin_current_thread(cpus)?;
                }
                probe(&targets, skip, timeout, &flag)
            })
            .context("Failed to start the probe thread")?;
        Ok(Probe { stop, handle })
    }

    /// Stops probing and returns what it saw.
    pub(crate) fn finish(self) -> Result<ProbeResult> {
        self.stop.store(true, Ordering::Release);
        self.handle
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the probe panicked")))
    }
}

fn probe(
    targets: &BTreeMap<String, String>,
    skip: Duration,
    timeout: Duration,
    stop: &AtomicBool,
) -> Result<ProbeResult> {
    let scenario = Shape::health().scenario()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("Failed to build the probe's runtime")?;
    let seq = AtomicU64::new(0);
    let mut session = Session::new(&scenario, targets, timeout, &seq)?;
    let spec = &scenario.requests()[0];
    let mut pools = scenario.empty_pools();
    let began = Instant::now();
    let mut histogram = LatencyHistogram::new();
    let mut failed = 0;
    runtime.block_on(async {
        let mut next = began;
        while !stop.load(Ordering::Acquire) {
            let counted = next.duration_since(began) >= skip;
            match session.send(spec, &mut pools).await {
                Ok(answer) if counted => histogram.record(answer.elapsed),
                Ok(_) => {}
                Err(_) if counted => failed += 1,
                Err(_) => {}
            }
            next += PROBE_EVERY;
            let now = Instant::now();
            if next > now {
                tokio::time::sleep(next - now).await;
            } else {
                // A probe slower than the period: the next one goes at once, on the schedule.
                next = now;
            }
        }
    });
    Ok(ProbeResult {
        answered: histogram.len(),
        failed,
        p50_ms: histogram.quantile_ms(0.5),
        p99_ms: histogram.quantile_ms(0.99),
        max_ms: histogram.latency().max_ms,
    })
}
