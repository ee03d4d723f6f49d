//! [`Admission`]: a bounded first-come-first-served line in front of a database server that can
//! take only so much at once, so that a slow database gives slow answers rather than errors.
//!
//! Without it, every request in flight sends its operation at once: the server (FerretDB on SQLite
//! serializes writes in one file and scans for filtered reads) works on all of them together, each
//! takes as long as all of them, and the slowest run past their timeout. A timed-out operation is
//! then worse than lost: the driver closes its connection (it cannot reuse one with an answer still
//! on its way), the server finishes the abandoned query anyway, and the next operation pays for a
//! new connection. With the line, at most `size` operations are on the wire, each is answered in
//! about its own time, and the others wait their turn in arrival order (tokio's semaphore is fair).
//! The deadline covers the wait and the operation together, so the bound a caller is promised does
//! not grow; an operation whose deadline passes while it waits never reaches the server.
//! (PostgreSQL's poolers, PgBouncer's `default_pool_size` with its client queue, and HikariCP's
//! `connectionTimeout` covering the wait for a connection, do the same.)

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::StoreError;
use crate::deadline;

/// A bounded FIFO line: at most `size` operations at once, the rest wait in arrival order.
#[derive(Debug)]
pub struct Admission {
    slots: Arc<Semaphore>,
    size: usize,
    /// Who the server is, for error messages (`MongoDB`).
    server: &'static str,
}

impl Admission {
    /// A line letting `size` operations (at least one) reach `server` at once.
    pub fn new(size: usize, server: &'static str) -> Admission {
        let size = size.max(1);
        Admission {
            slots: Arc::new(Semaphore::new(size)),
            size,
            server,
        }
    }

    /// How many operations run at once at most.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Operations waiting for a slot or running now, at most [`Admission::size`] of them running.
    pub fn busy(&self) -> usize {
        self.size - self.slots.available_permits()
    }

    /// Runs `op` once a slot is free, the wait and the operation together within `limit`, or less
    /// when the current request's budget ([`deadline::remaining`]) has less left. Running out of
    /// time in line or in the operation is [`StoreError::Unavailable`] (503): the line is full, or
    /// the server did not answer.
    pub async fn run<T, F>(&self, limit: Duration, op: F) -> Result<T, StoreError>
    where
        F: Future<Output = Result<T, StoreError>>,
    {
        let turn = self.turn(limit).await?;
        match tokio::time::timeout_at(turn.until, op).await {
            Ok(result) => result,
            Err(_) => Err(turn.late()),
        }
    }

    /// Waits for a slot within `limit` (or the request's budget, if less): the [`Turn`] holds it
    /// and says how long the operation has left. A slot not free in time is
    /// [`StoreError::Unavailable`].
    pub async fn turn(&self, limit: Duration) -> Result<Turn, StoreError> {
        let limit = deadline::bounded(limit);
        if limit.is_zero() {
            return Err(StoreError::Unavailable(format!(
                "no time left to ask {}: the request's budget is spent",
                self.server
            )));
        }
        let until = Instant::now() + limit;
        // The free case first: no waiter is queued then, so taking a slot jumps nobody.
        let slot = match self.slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                match tokio::time::timeout_at(until, self.slots.clone().acquire_owned()).await {
                    Ok(slot) => slot.map_err(|_| {
                        StoreError::Unavailable(format!("{} store is closing", self.server))
                    })?,
                    Err(_) => {
                        return Err(StoreError::Unavailable(format!(
                            "no turn at {} within {} ms: {} operations at once, the rest queued \
                         behind them",
                            self.server,
                            limit.as_millis(),
                            self.size
                        )))
                    }
                }
            }
        };
        Ok(Turn {
            slot,
            until,
            limit,
            server: self.server,
        })
    }

    /// Refuses new operations (those waiting are answered 503); for shutdown.
    pub fn close(&self) {
        self.slots.close();
    }
}

/// A slot in the line, held until dropped, and the time by which its operation must be answered.
#[derive(Debug)]
pub struct Turn {
    slot: OwnedSemaphorePermit,
    /// When the operation's deadline passes.
    pub until: Instant,
    limit: Duration,
    server: &'static str,
}

impl Turn {
    /// The error of an operation that was not answered by [`Turn::until`].
    pub fn late(&self) -> StoreError {
        StoreError::Unavailable(format!(
            "{} did not answer within {} ms",
            self.server,
            self.limit.as_millis()
        ))
    }

    /// The slot alone, to be held where the operation runs (another task) until it is done.
    pub fn into_slot(self) -> OwnedSemaphorePermit {
        self.slot
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::sync::oneshot;

    use super::*;

    fn unavailable<T: std::fmt::Debug>(r: Result<T, StoreError>) -> String {
        match r {
            Err(StoreError::Unavailable(m)) => m,
            other => panic!("expected Unavailable, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn operations_past_the_size_wait_their_turn_in_arrival_order() {
        let line = Arc::new(Admission::new(1, "test"));
        let (release, held) = oneshot::channel::<()>();
        let first = tokio::spawn({
            let line = line.clone();
            async move {
                line.run(Duration::from_secs(60), async {
                    held.await.ok();
                    Ok(0)
                })
                .await
            }
        });
        while line.busy() == 0 {
            tokio::task::yield_now().await;
        }
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut waiting = Vec::new();
        for n in 1..=5 {
            let (line, order) = (line.clone(), order.clone());
            waiting.push(tokio::spawn(async move {
                line.run(Duration::from_secs(60), async {
                    order.lock().unwrap().push(n);
                    Ok(n)
                })
                .await
            }));
            // Each one queued before the next arrives.
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
        }
        assert!(
            order.lock().unwrap().is_empty(),
            "nobody passed the held slot"
        );
        release.send(()).unwrap();
        assert_eq!(first.await.unwrap().unwrap(), 0);
        for (i, w) in waiting.into_iter().enumerate() {
            assert_eq!(w.await.unwrap().unwrap(), i + 1);
        }
        assert_eq!(*order.lock().unwrap(), vec![1, 2, 3, 4, 5]);
        assert_eq!(line.busy(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn the_deadline_covers_the_wait_and_a_late_turn_never_runs() {
        let line = Arc::new(Admission::new(1, "test"));
        let (_keep, held) = oneshot::channel::<()>();
        let holder = tokio::spawn({
            let line = line.clone();
            async move {
                line.run(Duration::from_secs(3600), async {
                    held.await.ok();
                    Ok(())
                })
                .await
            }
        });
        while line.busy() == 0 {
            tokio::task::yield_now().await;
        }
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let r = line
            .run(Duration::from_millis(500), {
                let ran = ran.clone();
                async move {
                    ran.store(true, std::sync::atomic::Ordering::SeqCst);
                    Ok(())
                }
            })
            .await;
        let message = unavailable(r);
        assert!(
            message.contains("no turn at test within 500 ms"),
            "{message}"
        );
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
        holder.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_operation_is_unavailable_at_the_deadline_and_frees_its_slot() {
        let line = Admission::new(2, "test");
        let r = line
            .run(Duration::from_millis(200), async {
                tokio::time::sleep(Duration::from_secs(10)).await;
                Ok(())
            })
            .await;
        assert!(unavailable(r).contains("did not answer within 200 ms"));
        assert_eq!(line.busy(), 0);
        assert_eq!(
            line.run(Duration::from_millis(200), async { Ok(7) }).await,
            Ok(7)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_callers_budget_shortens_the_deadline() {
        let line = Admission::new(1, "test");
        let r = deadline::scope(Some(Duration::from_millis(100)), async {
            line.run(Duration::from_secs(2), async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Ok(())
            })
            .await
        })
        .await;
        assert!(unavailable(r).contains("within 100 ms"));
    }

    #[tokio::test]
    async fn a_spent_budget_is_refused_before_the_operation_starts() {
        let line = Admission::new(4, "test");
        let ran = std::sync::atomic::AtomicBool::new(false);
        let r = deadline::scope(Some(Duration::ZERO), async {
            line.run(Duration::from_secs(2), async {
                ran.store(true, std::sync::atomic::Ordering::SeqCst);
                Ok(())
            })
            .await
        })
        .await;
        assert!(unavailable(r).contains("budget is spent"));
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[tokio::test]
    async fn a_closed_line_refuses_and_errors_pass_through() {
        let line = Admission::new(1, "test");
        let failed: Result<(), _> = line
            .run(Duration::from_secs(1), async {
                Err(StoreError::Internal("boom".into()))
            })
            .await;
        assert_eq!(failed, Err(StoreError::Internal("boom".into())));
        line.close();
        let r = line.run(Duration::from_secs(1), async { Ok(()) }).await;
        assert!(unavailable(r).contains("closing"));
    }
}
