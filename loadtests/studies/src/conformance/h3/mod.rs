//! The HTTP/3 suite: RFC 9114's requirements on a server, written here (there is no h3spec on this
//! machine), each case citing its section. A case opens its own QUIC connection (quinn, ALPN `h3`,
//! the certificate not checked: the servers' are self-signed), writes what it writes by hand
//! ([`wire`]: the frames, the streams, the field sections), and reads what the server did: an
//! answer and its status, a reset of the request stream, or the connection closed and with which
//! error code. The cases of one run go out at once.

mod cases;
pub(crate) mod wire;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
pub(crate) use cases::{Route, CASES};

/// How long a case waits for the server's answer, reset or close.
const WAIT: Duration = Duration::from_secs(2);

/// Error codes (RFC 9114 §8.1).
pub(crate) const H3_STREAM_CREATION_ERROR: u64 = 0x103;
pub(crate) const H3_CLOSED_CRITICAL_STREAM: u64 = 0x104;
pub(crate) const H3_FRAME_UNEXPECTED: u64 = 0x105;
pub(crate) const H3_SETTINGS_ERROR: u64 = 0x109;
pub(crate) const H3_MISSING_SETTINGS: u64 = 0x10a;

/// What a conforming server does with a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expect {
    /// Answers the request with a status below 500 other than 400.
    Answered,
    /// Treats the request as malformed (§4.1.2): resets the stream, closes the connection with an
    /// error, or answers 4xx; never a success.
    Malformed,
    /// Closes the connection with this error code.
    ConnectionError(u64),
}

/// What a case sends.
#[derive(Debug, Clone, Default)]
pub(crate) struct Script {
    /// The client's control stream (its type included); None: the usual one (empty SETTINGS).
    pub(crate) control: Option<Vec<u8>>,
    /// Whether to close the control stream after writing it.
    pub(crate) finish_control: bool,
    /// Other unidirectional streams, each with its type.
    pub(crate) uni: Vec<Vec<u8>>,
    /// The request stream's bytes, if the case sends a request.
    pub(crate) request: Option<Vec<u8>>,
}

/// What the server did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Observed {
    pub(crate) status: Option<u16>,
    /// The request stream reset (or stopped) by the server, with its code.
    pub(crate) reset: Option<u64>,
    /// The connection closed by the server, with its application error code.
    pub(crate) closed: Option<u64>,
    /// The connection closed at the transport level (a QUIC error), in words.
    pub(crate) transport: Option<String>,
}

impl Observed {
    /// Whether this is what `expect` asks; else what happened, in words.
    pub(crate) fn judge(&self, expect: Expect) -> Result<(), String> {
        let ok = match expect {
            Expect::Answered => self.status.is_some_and(|s| s < 500 && s != 400),
            Expect::Malformed => match self.status {
                Some(s) => (400..500).contains(&s),
                None => self.reset.is_some() || self.closed.is_some() || self.transport.is_some(),
            },
            Expect::ConnectionError(code) => self.closed == Some(code),
        };
        if ok {
            Ok(())
        } else {
            Err(self.describe())
        }
    }

    fn describe(&self) -> String {
        let mut words = Vec::new();
        match self.status {
            Some(s) => words.push(format!("answered {s}")),
            None => words.push("no answer".to_owned()),
        }
        if let Some(code) = self.reset {
            words.push(format!("stream reset with {code:#x}"));
        }
        match (&self.closed, &self.transport) {
            (Some(code), _) => words.push(format!("connection closed with {code:#x}")),
            (None, Some(why)) => words.push(format!("connection lost: {why}")),
            (None, None) => words.push("connection left open".to_owned()),
        }
        words.join("; ")
    }
}

/// A case's outcome on one run.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub(crate) case: &'static cases::Case,
    pub(crate) failure: Option<String>,
}

/// Runs every case against the HTTP/3 server at `addr` (UDP), on `route`.
pub(crate) fn run(addr: SocketAddr, route: cases::Route<'_>) -> Result<Vec<Outcome>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let endpoint = endpoint()?;
        let tasks: Vec<_> = CASES
            .iter()
            .map(|case| {
                let (endpoint, script) = (endpoint.clone(), (case.script)(&route));
                tokio::spawn(async move { exchange(&endpoint, addr, script).await })
            })
            .collect();
        let mut out = Vec::new();
        for (case, task) in CASES.iter().zip(tasks) {
            let failure = match task.await {
                Ok(Ok(observed)) => observed.judge(case.expect).err(),
                Ok(Err(e)) => Some(format!("{e:#}")),
                Err(e) => Some(format!("the case's task failed: {e}")),
            };
            out.push(Outcome { case, failure });
        }
        endpoint.close(0x100u32.into(), b"");
        Ok(out)
    })
}

/// A client endpoint speaking `h3` that takes any certificate.
fn endpoint() -> Result<quinn::Endpoint> {
    let tls = brigade_records::protocol::TlsClient {
        insecure: true,
        ..Default::default()
    };
    let config =
        brigade_clients::tls::client_config(brigade_records::protocol::Protocol::H3, &tls)?;
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from((*config).clone())
        .map_err(|e| anyhow::anyhow!("the TLS client cannot speak QUIC: {e}"))?;
    let mut endpoint = quinn::Endpoint::client((std::net::Ipv4Addr::LOCALHOST, 0).into())?;
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    Ok(endpoint)
}

/// One case on a connection of its own.
async fn exchange(
    endpoint: &quinn::Endpoint,
    addr: SocketAddr,
    script: Script,
) -> Result<Observed> {
    let connection = tokio::time::timeout(WAIT * 2, endpoint.connect(addr, "localhost")?)
        .await
        .context("no QUIC handshake")?
        .context("the QUIC handshake failed")?;
    let mut observed = Observed::default();
    let mut control = connection.open_uni().await?;
    let usual = {
        let mut bytes = Vec::new();
        wire::varint(wire::CONTROL_STREAM, &mut bytes);
        bytes.extend(wire::frame(wire::SETTINGS, &[]));
        bytes
    };
    control
        .write_all(script.control.as_deref().unwrap_or(&usual))
        .await?;
    if script.finish_control {
        control.finish()?;
    }
    for bytes in &script.uni {
        let mut stream = connection.open_uni().await?;
        stream.write_all(bytes).await?;
        let _ = stream.finish();
    }
    if let Some(request) = &script.request {
        let (mut send, mut recv) = connection.open_bi().await?;
        // The server may reset or stop the stream before all is written: what it did is read below.
        let _ = send.write_all(request).await;
        let _ = send.finish();
        match tokio::time::timeout(WAIT, recv.read_to_end(1 << 20)).await {
            Ok(Ok(bytes)) => {
                observed.status = wire::frames(&bytes)
                    .into_iter()
                    .find(|(kind, _)| *kind == wire::HEADERS)
                    .and_then(|(_, section)| wire::status(section));
            }
            Ok(Err(quinn::ReadToEndError::Read(quinn::ReadError::Reset(code)))) => {
                observed.reset = Some(code.into_inner());
            }
            Ok(Err(_)) | Err(_) => {}
        }
    }
    // A connection error comes after (or instead of) the request's end: waited for briefly where
    // the request was answered, the whole wait where it was not.
    let wait = if observed.status.is_some() {
        WAIT / 4
    } else {
        WAIT
    };
    if let Ok(reason) = tokio::time::timeout(wait, connection.closed()).await {
        match reason {
            quinn::ConnectionError::ApplicationClosed(close) => {
                observed.closed = Some(close.error_code.into_inner());
            }
            quinn::ConnectionError::LocallyClosed => {}
            other => observed.transport = Some(other.to_string()),
        }
    }
    connection.close(0x100u32.into(), b"");
    Ok(observed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suite_has_the_cases_it_promises_each_citing_a_section() {
        assert!(CASES.len() >= 20, "{} cases", CASES.len());
        let mut ids: Vec<&str> = CASES.iter().map(|c| c.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), CASES.len(), "ids are unique");
        for c in CASES {
            assert!(
                c.section.starts_with("RFC 9114 §"),
                "{}: {}",
                c.id,
                c.section
            );
            let script = (c.script)(&cases::Route {
                path: "/x",
                method: "GET",
            });
            assert!(
                script.request.is_some() || matches!(c.expect, Expect::ConnectionError(_)),
                "{}",
                c.id
            );
        }
    }

    #[test]
    fn judging_follows_each_expectation() {
        let seen = |status, reset, closed| Observed {
            status,
            reset,
            closed,
            transport: None,
        };
        assert!(seen(Some(200), None, None).judge(Expect::Answered).is_ok());
        assert!(seen(Some(400), None, None).judge(Expect::Answered).is_err());
        assert!(seen(None, Some(0x10e), None)
            .judge(Expect::Malformed)
            .is_ok());
        assert!(seen(Some(400), None, None).judge(Expect::Malformed).is_ok());
        assert!(seen(Some(200), None, None)
            .judge(Expect::Malformed)
            .is_err());
        assert!(
            seen(None, None, None).judge(Expect::Malformed).is_err(),
            "silence is no refusal"
        );
        let wrong = seen(None, None, Some(0x101))
            .judge(Expect::ConnectionError(0x105))
            .unwrap_err();
        assert_eq!(wrong, "no answer; connection closed with 0x101");
    }
}
