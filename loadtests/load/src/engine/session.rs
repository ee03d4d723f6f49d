//! One client talking to a scenario's services one request at a time: a connection per service
//! (kept alive, reopened when the server closes it), each answer read whole and checked against the
//! request's `expect`, its captures taken into the caller's pools, and the exchange timed from the
//! first byte sent to the last byte read. The engine sends a scenario's `[[setup]]` steps with it
//! ([`Session::fixtures`]); a study that times single requests (the storage study's HTTP variant)
//! drives it request by request with [`Session::send`].
//!
//! It uses the generator's own connection code, so a study's HTTP figures come from the same client
//! as a load run's, and the run's protocol (HTTP/1.1 or HTTP/2, plain or TLS) for the setup steps. Its futures are not `Send` (a connection lives on one thread): run them on a
//! current-thread tokio runtime.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::Bytes;

use brigade_clients::http1::{abandon, encode, exchange, Connection};
use brigade_clients::http2::{self, Http2Stream};
use brigade_clients::{Dialer, Exchange, Failure, Target, WireCount};

use crate::scenario::{Pools, RenderContext, RequestSpec, Scenario};

/// A sequential client for one scenario's services.
pub struct Session<'a> {
    scenario: &'a Scenario,
    targets: Vec<Target>,
    conns: Vec<Option<Connection>>,
    /// HTTP/2: a connection per service.
    http2: Vec<Http2Stream>,
    dialer: Dialer,
    timeout: Duration,
    seq: &'a AtomicU64,
    rng: fastrand::Rng,
    scratch: Vec<u8>,
}

impl std::fmt::Debug for Session<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("scenario", &self.scenario.name())
            .field(
                "targets",
                &self.targets.iter().map(|t| &t.url).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// A request answered as expected.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The status.
    pub status: u16,
    /// The answer's body.
    pub body: Bytes,
    /// The path and query the request was sent to.
    pub path: String,
    /// The request's body as sent (empty when it had none).
    pub sent: Bytes,
    /// From sending the request to reading the last byte of the answer.
    pub elapsed: Duration,
}

impl<'a> Session<'a> {
    /// A session for `scenario` against `targets` (service → base URL; the key `"*"` serves any
    /// service not named); `seq` counts `{{seq}}`; each request may take `timeout`, connection
    /// included. Nothing is connected until the first request.
    pub fn new(
        scenario: &'a Scenario,
        targets: &BTreeMap<String, String>,
        timeout: Duration,
        seq: &'a AtomicU64,
    ) -> Result<Session<'a>> {
        let (targets, _) =
            super::targets::resolve_targets(scenario, targets, Dialer::plain().protocol)?;
        Ok(Session::with_targets(scenario, targets, timeout, seq, None))
    }

    /// Draws this session's random template values from `seed`: two sessions with one seed (and
    /// the same answers to capture from) send the same requests.
    pub fn seeded(mut self, seed: u64) -> Session<'a> {
        self.rng = fastrand::Rng::with_seed(seed);
        self
    }

    /// A session over targets already resolved (by the scenario's service index), its random
    /// draws from `seed` when there is one.
    pub(crate) fn with_targets(
        scenario: &'a Scenario,
        targets: Vec<Target>,
        timeout: Duration,
        seq: &'a AtomicU64,
        seed: Option<u64>,
    ) -> Session<'a> {
        Session {
            scenario,
            conns: (0..targets.len()).map(|_| None).collect(),
            http2: (0..targets.len())
                .map(|_| Http2Stream::new(Default::default()))
                .collect(),
            dialer: Dialer::plain(),
            targets,
            timeout,
            seq,
            rng: match seed {
                Some(seed) => fastrand::Rng::with_seed(seed),
                None => fastrand::Rng::new(),
            },
            scratch: Vec::new(),
        }
    }

    /// Speaks the protocol `dialer` dials (plaintext HTTP/1.1 by default).
    pub(crate) fn dialing(mut self, dialer: Dialer) -> Session<'a> {
        self.dialer = dialer;
        self
    }

    /// Sends every `[[setup]]` step of the scenario, `times` times each, one after the other, and
    /// returns the pools they filled.
    pub async fn fixtures(&mut self) -> Result<Pools> {
        let scenario = self.scenario;
        let mut pools = scenario.empty_pools();
        for (n, step) in scenario.setup().iter().enumerate() {
            for _ in 0..step.times {
                self.send(&step.request, &mut pools)
                    .await
                    .with_context(|| {
                        format!("setup step {} ({})", n + 1, step.describe(scenario))
                    })?;
            }
        }
        Ok(pools)
    }

    /// Renders `spec` from `pools`, sends it and reads the answer; an answer with a status the
    /// request does not expect, or no answer, is an error that says which. A 2xx answer's captures
    /// go into `pools`.
    pub async fn send(&mut self, spec: &RequestSpec, pools: &mut Pools) -> Result<Answer> {
        if !spec.formable(pools) {
            bail!("a pool it reads is empty (an earlier step created too few)");
        }
        let req = spec.render(&mut RenderContext {
            rng: &mut self.rng,
            pools,
            seq: self.seq,
            spacing: Default::default(),
        })?;
        let started = Instant::now();
        let ex = if self.dialer.protocol.multiplexed() {
            self.exchange_http2(spec.service, &req).await?
        } else {
            self.exchange_http1(spec.service, &req).await
        };
        let elapsed = started.elapsed();
        let target = &self.targets[spec.service];
        let body = ex.body.unwrap_or_default();
        match ex.result {
            Ok(status) if spec.expects(status) => {
                if (200..300).contains(&status) {
                    spec.capture(&body, pools)
                        .context("capturing from the answer")?;
                }
                Ok(Answer {
                    status,
                    body,
                    path: req.path,
                    sent: req.body,
                    elapsed,
                })
            }
            Ok(status) => {
                let text = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
                bail!("{} {} answered {status}: {text}", req.method, req.path)
            }
            Err(f) => bail!(
                "{f:?} error talking to {} (is the service running?)",
                target.url
            ),
        }
    }

    /// `req` to service `service` over HTTP/1.1, within the timeout.
    async fn exchange_http1(&mut self, service: usize, req: &brigade_clients::Request) -> Exchange {
        let target = &self.targets[service];
        let slot = &mut self.conns[service];
        encode(&mut self.scratch, target, req, true);
        let mut count = WireCount::default();
        let head_request = req.method == http::Method::HEAD;
        let exchanged = tokio::time::timeout(
            self.timeout,
            exchange(
                slot,
                &self.dialer,
                target,
                &self.scratch,
                head_request,
                true,
                true,
                &mut count,
            ),
        )
        .await;
        exchanged.unwrap_or_else(|_| {
            abandon(slot, &mut count);
            Exchange::failed(Failure::Timeout, None)
        })
    }

    /// `req` to service `service` over HTTP/2, within the timeout.
    async fn exchange_http2(
        &mut self,
        service: usize,
        req: &brigade_clients::Request,
    ) -> Result<Exchange> {
        let target = &self.targets[service];
        let request = http2::build(target, req, self.dialer.protocol.tls())?;
        let stream = &mut self.http2[service];
        let mut count = WireCount::default();
        let exchanged = tokio::time::timeout(
            self.timeout,
            http2::exchange(
                stream,
                &self.dialer,
                target,
                &request,
                &req.body,
                true,
                true,
                &mut count,
            ),
        )
        .await;
        Ok(exchanged.unwrap_or_else(|_| {
            stream.abandon(&mut count);
            Exchange::failed(Failure::Timeout, None)
        }))
    }
}
