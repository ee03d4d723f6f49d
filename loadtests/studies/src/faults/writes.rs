//! The `crash` fault's write log: writers that create resources through the application's
//! [`WriteProbe`] and log every write answered 2xx (its id and the body sent), and the check after
//! the restart that each one is there with the fields it was written with.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use super::WriteProbe;

/// Every write answered 2xx: its id and the body sent. Cloning shares the log.
#[derive(Debug, Clone, Default)]
pub(super) struct WriteLog(Arc<Mutex<Vec<(String, Value)>>>);

/// What the writers did.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Written {
    /// Writes answered 2xx (and logged).
    pub(super) acknowledged: u64,
    /// Writes that failed (no answer, or not 2xx).
    pub(super) failed: u64,
}

/// What the check after the restart found.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Checked {
    /// Logged writes looked for.
    pub(super) checked: u64,
    /// Found with every field as written.
    pub(super) intact: u64,
    /// Not found.
    pub(super) missing: u64,
    /// Found with a field changed.
    pub(super) changed: u64,
}

fn client() -> Client<HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build_http()
}

/// `users` writers creating resources at `base` for `duration`, on a thread of their own.
pub(super) fn write_until(
    base: &str,
    probe: WriteProbe,
    users: u32,
    duration: Duration,
    log: WriteLog,
) -> std::thread::JoinHandle<Written> {
    let url = format!("{base}{}", probe.create);
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return Written::default();
        };
        rt.block_on(async move {
            let end = Instant::now() + duration;
            let client = client();
            let next = Arc::new(std::sync::atomic::AtomicU64::new(0));
            let writers = (0..users.max(1)).map(|_| {
                let (client, url, log, next) =
                    (client.clone(), url.clone(), log.clone(), next.clone());
                async move {
                    let mut w = Written::default();
                    while Instant::now() < end {
                        let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let body = probe.body.replace("{n}", &n.to_string());
                        match create(&client, &url, &body, probe.id_pointer).await {
                            Some(id) => {
                                w.acknowledged += 1;
                                let sent = serde_json::from_str(&body).unwrap_or(Value::Null);
                                if let Ok(mut log) = log.0.lock() {
                                    log.push((id, sent));
                                }
                            }
                            None => {
                                w.failed += 1;
                                // The server is down: do not spin.
                                tokio::time::sleep(Duration::from_millis(20)).await;
                            }
                        }
                    }
                    w
                }
            });
            futures::future::join_all(writers)
                .await
                .into_iter()
                .fold(Written::default(), |a, w| Written {
                    acknowledged: a.acknowledged + w.acknowledged,
                    failed: a.failed + w.failed,
                })
        })
    })
}

/// POSTs `body`; the created id when the answer is 2xx.
async fn create(
    client: &Client<HttpConnector, Full<Bytes>>,
    url: &str,
    body: &str,
    id_pointer: &str,
) -> Option<String> {
    let req = hyper::Request::post(url)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_owned())))
        .ok()?;
    let resp = tokio::time::timeout(Duration::from_secs(5), client.request(req))
        .await
        .ok()?
        .ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let bytes = resp.into_body().collect().await.ok()?.to_bytes();
    let json: Value = serde_json::from_slice(&bytes).ok()?;
    json.pointer(id_pointer)?.as_str().map(str::to_owned)
}

/// Looks for every logged write at `base`: found, and with every field it was written with.
pub(super) fn check(base: &str, probe: WriteProbe, log: &WriteLog) -> Result<Checked> {
    let writes = log.0.lock().map(|l| l.clone()).unwrap_or_default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let client = client();
        let mut c = Checked::default();
        for (id, sent) in &writes {
            c.checked += 1;
            let url = format!("{base}{}", probe.read.replace("{id}", id));
            let req = hyper::Request::get(&url).body(Full::new(Bytes::new()))?;
            let resp = tokio::time::timeout(Duration::from_secs(10), client.request(req))
                .await
                .context("a read timed out")?
                .with_context(|| format!("reading {url}"))?;
            if resp.status() == hyper::StatusCode::NOT_FOUND {
                c.missing += 1;
                continue;
            }
            let bytes = resp.into_body().collect().await?.to_bytes();
            let stored: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let same = sent
                .as_object()
                .is_some_and(|fields| fields.iter().all(|(k, v)| stored.get(k) == Some(v)));
            if same {
                c.intact += 1;
            } else {
                c.changed += 1;
            }
        }
        Ok(c)
    })
}
