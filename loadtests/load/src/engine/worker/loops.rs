//! The request loops a generator thread runs: closed-loop users (each sends its next request when
//! the last is answered, plus the think time) and paced connections (each sends on the open-loop
//! schedule, latency from the intended send time); with HTTP/2 or HTTP/3, `streams` of them share
//! one connection per service.

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use brigade_clients::http2::SharedConnection;
use brigade_clients::WireCount;

use super::send::{ErrorKind, Verdict};
use super::*;

/// A closed-loop user: one connection per service, and `streams` request loops on it (one for
/// HTTP/1.1).
pub(super) async fn closed_user(local: Rc<Local>, number: u64) {
    let http2 = shared_connections(&local.shared);
    let streams = local.shared.streams;
    if streams == 1 {
        return closed_stream(local, number, 0, http2).await;
    }
    let loops: Vec<_> = (0..streams)
        .map(|s| tokio::task::spawn_local(closed_stream(local.clone(), number, s, http2.clone())))
        .collect();
    for l in loops {
        let _ = l.await;
    }
}

/// One request loop of a closed-loop user: sends, waits for the whole answer, thinks, sends
/// again.
pub(super) async fn closed_stream(
    local: Rc<Local>,
    number: u64,
    stream: u32,
    http2: Vec<Arc<SharedConnection>>,
) {
    let shared = local.shared.clone();
    let measure_start = shared.measure_start();
    let measure_end = shared.measure_end();
    let mut client = Client::new(&shared, number, stream, &http2);
    // The run starts at t0, just after every thread is ready: a request sent before it would be
    // neither warm-up nor measured.
    tokio::time::sleep_until(shared.t0().into()).await;
    // After a refused connection, wait a little before trying again rather than spinning.
    let mut backoff = Duration::ZERO;
    loop {
        if !backoff.is_zero() {
            tokio::time::sleep(backoff).await;
        }
        let now = Instant::now();
        if measure_end.is_some_and(|end| now >= end) || shared.stopping() {
            break;
        }
        let measured = now >= measure_start;
        if measured && !shared.claim() {
            break;
        }
        let Some(i) = local.choose(&mut client.rng) else {
            local.record_unroutable(measured);
            backoff = Duration::from_millis(10);
            continue;
        };
        let route = shared.scenario.requests()[i].route;
        let start = Instant::now();
        let (verdict, count, answer) = local.send(&mut client, start, i, measured).await;
        let latency = start.elapsed();
        backoff = match verdict {
            Verdict::Failed(ErrorKind::Connect) => Duration::from_millis(10),
            _ => Duration::ZERO,
        };
        local.record(
            Some(route),
            measured,
            &verdict,
            count,
            answer.timed.then_some(latency),
            answer.status,
        );
        if !shared.think.is_zero() {
            tokio::time::sleep(shared.think).await;
        }
    }
}

/// An open-loop connection: one connection per service, and a paced sender for each of its
/// streams' shares of the schedule (one for HTTP/1.1).
pub(super) async fn paced_connection(local: Rc<Local>, paces: Vec<Pace>) {
    let http2 = shared_connections(&local.shared);
    if let [pace] = paces[..] {
        return paced_stream(local, pace, http2).await;
    }
    let senders: Vec<_> = paces
        .into_iter()
        .map(|pace| tokio::task::spawn_local(paced_stream(local.clone(), pace, http2.clone())))
        .collect();
    for s in senders {
        let _ = s.await;
    }
}

/// An open-loop sender: sends on a fixed schedule (see [`Pace`]) and measures
/// each latency from the send's intended time, so time a stalled server keeps requests waiting is
/// counted, not hidden (coordinated omission, corrected as in wrk2).
pub(super) async fn paced_stream(local: Rc<Local>, pace: Pace, http2: Vec<Arc<SharedConnection>>) {
    let shared = local.shared.clone();
    let t0 = shared.start.get().copied().expect("start set");
    let measure_start = shared.measure_start();
    let measure_end = shared.measure_end();
    // In a timed run, sends still due when the window closed get one timeout to drain.
    let hard_end = measure_end.map(|end| end + shared.timeout);
    // Which sends the window holds is the schedule's (`due`); when each leaves, and its latency's
    // start, is its tick's (`intended`).
    let at = |k: u64| {
        let due = pace.due(k);
        (t0 + due, t0 + on_tick(due, shared.pace_tick))
    };
    let mut client = Client::new(&shared, pace.first, 0, &http2);
    let mut k = 0u64;
    loop {
        let (due, intended) = at(k);
        k += 1;
        if measure_end.is_some_and(|end| due >= end) || shared.stopping() {
            break;
        }
        let now = Instant::now();
        if hard_end.is_some_and(|hard| now >= hard) {
            // The schedule could not be kept before the drain deadline: every send still due in the
            // window is a timeout, with the latency it has reached.
            let end = measure_end.expect("hard end implies an end");
            let mut kk = k - 1;
            loop {
                let (due, late) = at(kk);
                if due >= end {
                    break;
                }
                if due >= measure_start {
                    if !shared.claim() {
                        break;
                    }
                    // Attributed to routes as the mix would have chosen them.
                    let route = local
                        .choose(&mut client.rng)
                        .map(|i| shared.scenario.requests()[i].route);
                    local.record(
                        route,
                        true,
                        &Verdict::Failed(ErrorKind::Timeout),
                        WireCount::default(),
                        Some(now - late),
                        None,
                    );
                }
                kk += 1;
            }
            break;
        }
        let measured = due >= measure_start;
        if measured && !shared.claim() {
            break;
        }
        if intended > now {
            tokio::time::sleep_until(intended.into()).await;
        }
        let from = Instant::now().min(intended + TIMER_SLACK);
        let Some(i) = local.choose(&mut client.rng) else {
            local.record_unroutable(measured);
            continue;
        };
        let route = shared.scenario.requests()[i].route;
        let start = Instant::now();
        let (verdict, count, answer) = local.send(&mut client, start, i, measured).await;
        let latency = from.elapsed();
        local.record(
            Some(route),
            measured,
            &verdict,
            count,
            answer.timed.then_some(latency),
            answer.status,
        );
    }
}
