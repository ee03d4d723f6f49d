//! What a run readies before its threads start: the requests that need no rendering, encoded
//! once; the TLS client, checked by one handshake per target; and the scenario's setup steps, sent
//! one after the other to make the fixtures.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use brigade_clients::{http1, http2, http3, tls, Dialer, Target};

use super::session;
use super::worker::Shared;
use super::LoadConfig;
use crate::scenario::{Pools, Scenario};

/// Each request's bytes encoded once for HTTP/1.1, or its HTTP/2 request built once, when its
/// templates have no holes (by request index; `None` where it must be rendered per send).
#[allow(clippy::type_complexity)]
pub(super) fn prepare_requests(
    config: &LoadConfig,
    scenario: &Scenario,
    targets: &[Target],
) -> (
    Vec<Option<Vec<u8>>>,
    Vec<Option<(http2::Http2Request, bytes::Bytes)>>,
) {
    let literal = scenario
        .requests()
        .iter()
        .map(|spec| (spec, spec.literal()));
    if config.protocol.multiplexed() {
        let built = literal
            .map(|(spec, req)| {
                let req = req?;
                let built = http2::build(&targets[spec.service], &req, config.protocol.tls());
                built.ok().map(|b| (b, req.body))
            })
            .collect();
        (vec![None; scenario.requests().len()], built)
    } else {
        let encoded = literal
            .map(|(spec, req)| {
                req.map(|req| {
                    let mut bytes = Vec::new();
                    http1::encode(&mut bytes, &targets[spec.service], &req, config.keepalive);
                    bytes
                })
            })
            .collect();
        (encoded, vec![None; scenario.requests().len()])
    }
}

/// For a TLS protocol: the run's checked TLS client config, after one handshake with each
/// target succeeded (or found it not listening). `None` for plaintext.
pub(super) fn check_tls(
    config: &LoadConfig,
    targets: &[Target],
) -> Result<Option<Arc<rustls::ClientConfig>>> {
    if !config.protocol.tls() {
        return Ok(None);
    }
    let tls = tls::client_config(config.protocol, &config.tls)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("Failed to build the TLS check's runtime")?;
    for target in targets {
        if target.server_name.is_none() {
            tls::server_name(target)?;
        }
        if config.protocol.quic() {
            runtime.block_on(http3::probe(&tls, target))?;
        } else {
            runtime.block_on(tls::probe(&tls, config.protocol, target))?;
        }
    }
    Ok(Some(tls))
}

/// Sends the scenario's setup steps, one after the other, and returns the pools they filled.
pub(super) fn run_setup(shared: &Shared) -> Result<Pools> {
    send_setup(
        &shared.scenario,
        shared.targets.clone(),
        &shared.dialer(),
        shared.timeout,
        &shared.seq,
        shared.seed,
    )
}

/// Sends `scenario`'s setup steps on one session, `{{seq}}` from `seq`, and returns the pools.
pub(super) fn send_setup(
    scenario: &Scenario,
    targets: Vec<Target>,
    dialer: &Dialer,
    timeout: Duration,
    seq: &AtomicU64,
    seed: u64,
) -> Result<Pools> {
    if scenario.setup().is_empty() {
        return Ok(scenario.empty_pools());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("Failed to build the setup runtime")?;
    let mut session = session::Session::with_targets(scenario, targets, timeout, seq, Some(seed))
        .dialing(dialer.clone());
    let fixtures = runtime.block_on(session.fixtures());
    runtime.block_on(dialer.close());
    fixtures
}
