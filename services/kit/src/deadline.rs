//! Deadlines that follow a request across services, so that waits queue within one budget instead
//! of stacking: a store operation and a peer call are each bounded by their own timeout **and** by
//! what is left of the caller's budget, and a peer call tells the peer how long its caller still
//! waits ([`BUDGET_HEADER`], as Envoy's `x-envoy-expected-rq-timeout-ms` and gRPC's
//! `grpc-timeout` do). The peer then bounds its own store operations by that budget, so it answers
//! (a 503 at worst) before its caller stops waiting, and never works on for a caller that has gone.
//!
//! A request that comes without the header has no budget of its own: each of its store operations
//! and peer calls gets its own full timeout, as before. The budget is relative (milliseconds left,
//! not a point in time), so the two hosts' clocks need not agree.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

tokio::task_local! {
    static DEADLINE: Instant;
}

/// The header a peer call carries: the milliseconds the caller still waits for the answer.
pub const BUDGET_HEADER: &str = "x-brigade-budget-ms";

/// The most a budget header may ask for; a larger value is read as this (an hour).
const MAX_BUDGET: Duration = Duration::from_secs(3600);

/// Reads a [`BUDGET_HEADER`] value: whole milliseconds, at most an hour. Anything else is `None`
/// (the request then runs as if it had come without one).
pub fn parse_budget(value: &str) -> Option<Duration> {
    let v = value.trim();
    if v.is_empty() || v.len() > 12 || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let ms: u64 = v.parse().ok()?;
    Some(Duration::from_millis(ms).min(MAX_BUDGET))
}

/// Runs `fut` with a deadline `budget` from now (the [`remaining`] time inside it), or as it is
/// when there is no budget.
pub async fn scope<F: Future>(budget: Option<Duration>, fut: F) -> F::Output {
    match budget {
        Some(b) => DEADLINE.scope(Instant::now() + b, fut).await,
        None => fut.await,
    }
}

/// The time left before the current request's deadline (zero once it has passed); `None` when
/// the request has no budget.
pub fn remaining() -> Option<Duration> {
    DEADLINE
        .try_with(|d| d.saturating_duration_since(Instant::now()))
        .ok()
}

/// `limit`, or less when the current request has less left.
pub fn bounded(limit: Duration) -> Duration {
    match remaining() {
        Some(left) => left.min(limit),
        None => limit,
    }
}

/// The budget to send with a peer call that waits `wait`: a little less (a twentieth, at most
/// 50 ms), so the peer's own answer, a 503 at worst, is on its way before the caller gives up.
pub fn budget_for_peer(wait: Duration) -> Duration {
    wait.saturating_sub((wait / 20).min(Duration::from_millis(50)))
}

/// The deadlines a service runs under, in words for the start-up line and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// The deadline of one store operation, its wait in line included (MongoDB; the memory and
    /// embedded stores neither wait nor time out).
    pub store: Duration,
    /// The deadline of one call to a peer.
    pub peer: Duration,
}

impl std::fmt::Display for Deadlines {
    /// One line: `store deadline 2000 ms (wait in line + operation); peer call deadline 2000 ms;
    /// both cut to the caller's x-brigade-budget-ms`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "store deadline {} ms (wait in line + operation); peer call deadline {} ms; both cut \
             to the caller's {BUDGET_HEADER}",
            self.store.as_millis(),
            self.peer.as_millis()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_are_whole_milliseconds_capped_at_an_hour() {
        assert_eq!(parse_budget("1500"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_budget(" 0 "), Some(Duration::ZERO));
        assert_eq!(parse_budget("99999999999"), Some(MAX_BUDGET));
        for bad in ["", "-1", "1.5", "12ms", "1e3", "9999999999999"] {
            assert_eq!(parse_budget(bad), None, "{bad:?}");
        }
    }

    #[tokio::test]
    async fn without_a_budget_every_limit_stands_and_with_one_the_smaller_wins() {
        let long = Duration::from_secs(10);
        assert_eq!(remaining(), None);
        assert_eq!(bounded(long), long);
        scope(Some(Duration::from_secs(2)), async {
            let left = remaining().unwrap();
            assert!(left <= Duration::from_secs(2) && left > Duration::ZERO);
            assert!(bounded(long) <= Duration::from_secs(2));
            assert_eq!(bounded(Duration::from_millis(1)), Duration::from_millis(1));
        })
        .await;
        scope(None, async { assert_eq!(remaining(), None) }).await;
    }

    #[tokio::test]
    async fn a_spent_budget_leaves_zero() {
        scope(Some(Duration::ZERO), async {
            assert_eq!(remaining(), Some(Duration::ZERO));
            assert_eq!(bounded(Duration::from_secs(1)), Duration::ZERO);
        })
        .await;
    }

    #[test]
    fn a_peer_is_given_a_little_less_than_the_caller_waits() {
        assert_eq!(
            budget_for_peer(Duration::from_secs(2)),
            Duration::from_millis(1950)
        );
        assert_eq!(
            budget_for_peer(Duration::from_millis(100)),
            Duration::from_millis(95)
        );
        assert_eq!(budget_for_peer(Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn deadlines_read_as_one_line() {
        let d = Deadlines {
            store: Duration::from_secs(2),
            peer: Duration::from_millis(1500),
        };
        assert_eq!(
            d.to_string(),
            "store deadline 2000 ms (wait in line + operation); peer call deadline 1500 ms; both \
             cut to the caller's x-brigade-budget-ms"
        );
    }
}
