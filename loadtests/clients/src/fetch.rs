//! One `GET` over any of the generator's protocols, for a caller that is not a load run: readiness and
//! `/health` probes of a server that speaks HTTP/2 only (h2c answers no HTTP/1.1) or TLS. It uses
//! the same connection code as a load run, so a probe and a load run speak exactly the same protocol
//! to a server: a probe that passes means the run can connect.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use bytes::Bytes;

use crate::dialer::Dialer;
use crate::exchange::{Exchange, WireCount};
use crate::failure::Failure;
use crate::http1::{encode, exchange};
use crate::http2::{self, Http2Stream};
use crate::request::Request;
use crate::target::Target;
use crate::tls;
use brigade_records::protocol::{Protocol, TlsClient};

/// `GET {base}{path}` over `protocol` (its TLS client as `tls` says; a new connection, closed
/// after): the status and the body, within `timeout` all told. Blocking: it builds a
/// current-thread runtime of its own.
pub fn get(
    base: &str,
    path: &str,
    protocol: Protocol,
    tls: &TlsClient,
    timeout: Duration,
) -> Result<(u16, Bytes)> {
    let target = Target::parse(base)?;
    if target.https != protocol.tls() {
        bail!(
            "{base}: --protocol {protocol} needs an {} URL",
            scheme(protocol)
        );
    }
    let config = protocol
        .tls()
        .then(|| tls::client_config(protocol, tls))
        .transpose()?;
    let dialer = Dialer::new(protocol, config.as_deref(), false);
    let req = Request {
        method: http::Method::GET,
        path: path.to_owned(),
        headers: Vec::new(),
        body: Bytes::new(),
        has_body: false,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("Failed to build the probe's runtime")?;
    let exchanged = runtime.block_on(async {
        let exchanged = tokio::time::timeout(timeout, one_exchange(&dialer, &target, &req)).await;
        dialer.close().await;
        exchanged
    });
    let ex = match exchanged {
        Ok(ex) => ex?,
        Err(_) => Exchange::failed(Failure::Timeout, None),
    };
    match ex.result {
        Ok(status) => Ok((status, ex.body.unwrap_or_default())),
        Err(failure) => bail!("GET {base}{path} over {protocol}: {failure:?}"),
    }
}

/// The scheme a protocol's URLs have.
fn scheme(protocol: Protocol) -> &'static str {
    if protocol.tls() {
        "https://"
    } else {
        "http://"
    }
}

/// `req` on a fresh connection, not kept alive.
async fn one_exchange(dialer: &Dialer, target: &Target, req: &Request) -> Result<Exchange> {
    let mut count = WireCount::default();
    if dialer.protocol.multiplexed() {
        let request = http2::build(target, req, dialer.protocol.tls())?;
        let mut stream = Http2Stream::new(Default::default());
        return Ok(http2::exchange(
            &mut stream,
            dialer,
            target,
            &request,
            &req.body,
            false,
            true,
            &mut count,
        )
        .await);
    }
    let mut wire = Vec::new();
    encode(&mut wire, target, req, false);
    let mut slot = None;
    Ok(exchange(
        &mut slot, dialer, target, &wire, false, false, true, &mut count,
    )
    .await)
}
