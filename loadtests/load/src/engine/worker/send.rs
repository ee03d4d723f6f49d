//! One request of a generator thread, from choosing it to counting it: the request drawn and
//! rendered (or taken encoded), sent over HTTP/1.1 or HTTP/2 (HTTP/3) within its deadline, its
//! answer judged against the scenario's `expect` and captures, and the outcome recorded in the
//! thread's statistics.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use brigade_clients::http1::{abandon, encode, exchange};
use brigade_clients::http2;
use brigade_clients::{Exchange, Failure, WireCount};

use super::*;
use crate::scenario::RenderContext;

/// A task's request timeout. A fresh `tokio::time::timeout` per request would insert into and
/// remove from the timer wheel every time; this keeps one timer per task armed at some earlier
/// request's limit, which is never later than the current one's. When it fires before the current
/// request's limit it is re-armed at that limit, so the timer is touched about once per timeout
/// period instead of once per request, and a request still times out exactly at its limit.
pub(crate) struct Deadline {
    sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
    timeout: Duration,
}

impl Deadline {
    pub(crate) fn new(timeout: Duration) -> Deadline {
        Deadline {
            sleep: Box::pin(tokio::time::sleep(timeout)),
            timeout,
        }
    }

    /// Runs `fut` until it completes (`Some`) or `timeout` has passed since `start` (`None`).
    pub(crate) async fn run<F: Future>(&mut self, start: Instant, fut: F) -> Option<F::Output> {
        let limit = start + self.timeout;
        let mut fut = std::pin::pin!(fut);
        std::future::poll_fn(|cx| {
            if let std::task::Poll::Ready(out) = fut.as_mut().poll(cx) {
                return std::task::Poll::Ready(Some(out));
            }
            loop {
                match self.sleep.as_mut().poll(cx) {
                    std::task::Poll::Pending => return std::task::Poll::Pending,
                    std::task::Poll::Ready(()) if Instant::now() >= limit => {
                        return std::task::Poll::Ready(None)
                    }
                    std::task::Poll::Ready(()) => self.sleep.as_mut().reset(limit.into()),
                }
            }
        })
        .await
    }
}

/// What answered a request, as a server counts it: its status (`None`: nothing answered), and
/// whether the request has a latency (answered or timed out; a refused connection has none).
pub(super) struct Answer {
    pub(super) status: Option<u16>,
    pub(super) timed: bool,
}

/// How one request ended, from the scenario's point of view.
pub(super) enum Verdict {
    Ok,
    Failed(ErrorKind),
}

#[derive(Clone, Copy)]
pub(super) enum ErrorKind {
    Connect,
    Timeout,
    Reset,
    Status4xx,
    Status5xx,
    Other,
}

impl From<Failure> for ErrorKind {
    fn from(f: Failure) -> ErrorKind {
        match f {
            Failure::Connect => ErrorKind::Connect,
            Failure::Timeout => ErrorKind::Timeout,
            Failure::Reset => ErrorKind::Reset,
            Failure::Other => ErrorKind::Other,
        }
    }
}

impl Local {
    pub(super) fn choose(&self, rng: &mut fastrand::Rng) -> Option<usize> {
        let pools = self.pools.borrow();
        self.shared.scenario.choose(rng, &pools)
    }

    /// Sends request `i` and judges the answer. Returns the verdict, the bytes on the wire and
    /// whether the request has a latency (answered or timed out; a refused connection has none);
    /// a TLS handshake it made is counted (when `measured`).
    pub(super) async fn send(
        &self,
        client: &mut Client,
        start: Instant,
        i: usize,
        measured: bool,
    ) -> (Verdict, WireCount, Answer) {
        let (ex, count) = if self.shared.protocol.multiplexed() {
            self.exchange_http2(client, start, i).await
        } else {
            self.exchange_http1(client, start, i).await
        };
        if let (true, Some(handshake)) = (measured, ex.handshake) {
            self.handshakes.borrow_mut().record(&handshake);
        }
        let (verdict, answer) = self.judge(i, ex);
        (verdict, count, answer)
    }

    /// Renders request `i` when it was not prepared once for the run (None if it cannot be).
    pub(super) fn render(
        &self,
        rng: &mut fastrand::Rng,
        i: usize,
    ) -> Option<brigade_clients::Request> {
        let shared = &self.shared;
        shared.scenario.requests()[i]
            .render(&mut RenderContext {
                rng,
                pools: &mut self.pools.borrow_mut(),
                seq: &shared.seq,
                spacing: shared.spacing,
            })
            .ok()
    }

    /// Request `i` over HTTP/2, within the deadline from `start`.
    pub(super) async fn exchange_http2(
        &self,
        client: &mut Client,
        start: Instant,
        i: usize,
    ) -> (Exchange, WireCount) {
        let shared = &self.shared;
        let spec = &shared.scenario.requests()[i];
        let target = &shared.targets[spec.service];
        let mut count = WireCount::default();
        let built;
        let (request, body) = match &shared.prebuilt[i] {
            Some((request, body)) => (request, body),
            None => {
                let Some(rendered) = self.render(&mut client.rng, i) else {
                    return (Exchange::failed(Failure::Other, None), count);
                };
                match http2::build(target, &rendered, shared.protocol.tls()) {
                    Ok(request) => built = (request, rendered.body),
                    Err(_) => return (Exchange::failed(Failure::Other, None), count),
                }
                (&built.0, &built.1)
            }
        };
        let stream = &mut client.http2[spec.service];
        let exchanged = client
            .deadline
            .run(
                start,
                http2::exchange(
                    stream,
                    &self.dialer,
                    target,
                    request,
                    body,
                    shared.keepalive,
                    spec.captures_anything(),
                    &mut count,
                ),
            )
            .await;
        match exchanged {
            Some(ex) => (ex, count),
            None => {
                stream.abandon(&mut count);
                (Exchange::failed(Failure::Timeout, None), count)
            }
        }
    }

    /// Request `i` over HTTP/1.1 (plain or TLS), within the deadline from `start`.
    pub(super) async fn exchange_http1(
        &self,
        client: &mut Client,
        start: Instant,
        i: usize,
    ) -> (Exchange, WireCount) {
        let shared = &self.shared;
        let spec = &shared.scenario.requests()[i];
        let target = &shared.targets[spec.service];
        let mut count = WireCount::default();
        let Client {
            conns,
            deadline,
            rng,
            scratch,
            ..
        } = client;
        let request: &[u8] = match &shared.encoded[i] {
            Some(bytes) => bytes,
            None => {
                let Some(rendered) = self.render(rng, i) else {
                    return (Exchange::failed(Failure::Other, None), count);
                };
                encode(scratch, target, &rendered, shared.keepalive);
                scratch.as_slice()
            }
        };
        let slot = &mut conns[spec.service];
        let want_body = spec.captures_anything();
        let ex = match deadline
            .run(
                start,
                exchange(
                    slot,
                    &self.dialer,
                    target,
                    request,
                    spec.method == http::Method::HEAD,
                    shared.keepalive,
                    want_body,
                    &mut count,
                ),
            )
            .await
        {
            Some(ex) => ex,
            None => {
                // The connection is mid-request: it cannot be reused.
                abandon(slot, &mut count);
                Exchange::failed(Failure::Timeout, None)
            }
        };
        (ex, count)
    }

    /// The verdict on request `i`'s exchange, its status and whether it has a latency. A 2xx
    /// answer's captures go into the pools.
    pub(super) fn judge(&self, i: usize, ex: Exchange) -> (Verdict, Answer) {
        let spec = &self.shared.scenario.requests()[i];
        let want_body = spec.captures_anything();
        let status = ex.result.as_ref().ok().copied();
        let verdict = match ex.result {
            Ok(status) if spec.expects(status) => {
                if (200..300).contains(&status) && want_body {
                    let body = ex.body.unwrap_or_default();
                    match spec.capture(&body, &mut self.pools.borrow_mut()) {
                        Ok(()) => Verdict::Ok,
                        Err(_) => Verdict::Failed(ErrorKind::Other),
                    }
                } else {
                    Verdict::Ok
                }
            }
            Ok(status) if (400..500).contains(&status) => Verdict::Failed(ErrorKind::Status4xx),
            Ok(status) if (500..600).contains(&status) => Verdict::Failed(ErrorKind::Status5xx),
            Ok(_) => Verdict::Failed(ErrorKind::Other),
            Err(f) => Verdict::Failed(f.into()),
        };
        let timed = matches!(ex.result, Ok(_) | Err(Failure::Timeout));
        (verdict, Answer { status, timed })
    }

    /// Counts one request: always for the progress bar, in the statistics when `measured`.
    /// Counts a request that could not be made because no route could be chosen (every one needs
    /// an id from an empty pool): an `other` error with no latency.
    pub(super) fn record_unroutable(&self, measured: bool) {
        let failed = Verdict::Failed(ErrorKind::Other);
        self.record(None, measured, &failed, WireCount::default(), None, None);
    }

    /// Counts one request; a warm-up request (not `measured`) only by its answer's status class.
    pub(super) fn record(
        &self,
        route: Option<usize>,
        measured: bool,
        verdict: &Verdict,
        count: WireCount,
        latency: Option<Duration>,
        status: Option<u16>,
    ) {
        self.progress.done.fetch_add(1, Ordering::Relaxed);
        if matches!(verdict, Verdict::Failed(_)) {
            self.progress.errors.fetch_add(1, Ordering::Relaxed);
        }
        let class = crate::engine::stats::status_class(status);
        if !measured {
            self.stats.borrow_mut()[route.unwrap_or(0)].warmup[class] += 1;
            return;
        }
        let at = Instant::now().saturating_duration_since(self.shared.measure_start());
        let failed = matches!(verdict, Verdict::Failed(_));
        self.seconds.borrow_mut().record(at, failed, latency);
        let mut stats = self.stats.borrow_mut();
        // A request that could not even be formed has no route: count it against the first one.
        let r = &mut stats[route.unwrap_or(0)];
        r.requests += 1;
        r.statuses[class] += 1;
        r.bytes_sent += count.sent;
        r.bytes_received += count.received;
        match verdict {
            Verdict::Ok => r.ok += 1,
            Verdict::Failed(kind) => {
                let e = &mut r.errors;
                match kind {
                    ErrorKind::Connect => e.connect += 1,
                    ErrorKind::Timeout => e.timeout += 1,
                    ErrorKind::Reset => e.reset += 1,
                    ErrorKind::Status4xx => e.status_4xx += 1,
                    ErrorKind::Status5xx => e.status_5xx += 1,
                    ErrorKind::Other => e.other += 1,
                }
            }
        }
        if let Some(l) = latency {
            r.latency.record(l);
        }
    }
}
