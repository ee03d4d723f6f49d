//! What an operation waits for before it reaches the server, and the deadline it runs under: its
//! line ([`Admission`], reads or writes), on FerretDB first its document's lock, the wait and the
//! operation together within the store's deadline or the caller's budget if it has less left.
//! Shared by every runtime's client: the lines bound what the whole store has on the wire.

use std::collections::hash_map::DefaultHasher;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, OwnedMutexGuard};

use super::clients::RunsToEnd;
use crate::store::admission::Admission;
use crate::store::StoreError;

/// How many locks conditional writes to the same document are striped over (FerretDB only).
const WRITE_LOCK_STRIPES: usize = 256;

/// Which line an operation waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Line {
    Reads,
    Writes,
}

/// The lines and locks in front of the server.
#[derive(Debug)]
pub(super) struct Gate {
    /// The deadline of one call, the wait included.
    pub(super) timeout: Duration,
    /// The line reads wait in.
    pub(super) reads: Admission,
    /// The line writes wait in.
    pub(super) writes: Admission,
    /// Per-document write locks, only where `findAndModify` is not atomic (FerretDB v1).
    write_locks: Option<Vec<Arc<Mutex<()>>>>,
}

impl Gate {
    /// Lines of `reads` and `writes` places, without document locks.
    pub(super) fn new(timeout: Duration, reads: usize, writes: usize) -> Gate {
        Gate {
            timeout,
            reads: Admission::new(reads, "MongoDB"),
            writes: Admission::new(writes, "MongoDB"),
            write_locks: None,
        }
    }

    /// The same gate with conditional writes serialized per document (FerretDB).
    pub(super) fn with_write_locks(mut self) -> Gate {
        self.write_locks = Some(
            (0..WRITE_LOCK_STRIPES)
                .map(|_| Arc::new(Mutex::new(())))
                .collect(),
        );
        self
    }

    /// Whether conditional writes take a document lock.
    pub(super) fn locks_writes(&self) -> bool {
        self.write_locks.is_some()
    }

    /// Runs `op` in its turn in `line`, within `limit` (or the caller's budget if it has less
    /// left), first holding document `doc`'s lock where the server needs one, so a write queued
    /// behind another one to the same document holds no place on the wire meanwhile. Running out
    /// of time is [`StoreError::Unavailable`]; an operation whose caller stopped waiting runs on
    /// to its end in its slot ([`RunsToEnd`]).
    pub(super) async fn pass<T: Send + 'static>(
        &self,
        line: Line,
        limit: Duration,
        doc: Option<(&str, &str)>,
        op: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (held, limit) = match doc {
            Some((collection, id)) if self.write_locks.is_some() => {
                let limit = crate::deadline::bounded(limit);
                let started = tokio::time::Instant::now();
                let held = tokio::time::timeout(limit, self.lock_document(collection, id))
                    .await
                    .map_err(|_| {
                        StoreError::Unavailable(format!(
                            "another write to the same document held it past {} ms",
                            limit.as_millis()
                        ))
                    })?;
                (held, limit.saturating_sub(started.elapsed()))
            }
            _ => (None, limit),
        };
        let line = match line {
            Line::Reads => &self.reads,
            Line::Writes => &self.writes,
        };
        let turn = line.turn(limit).await?;
        let (until, late) = (turn.until, turn.late());
        let slot = turn.into_slot();
        let op = RunsToEnd::new(async move {
            let result = op.await;
            drop((slot, held));
            result
        });
        match tokio::time::timeout_at(until, op).await {
            Ok(result) => result,
            Err(_) => Err(late),
        }
    }

    /// The lock for document `id` of `collection`, where the server needs one.
    async fn lock_document(&self, collection: &str, id: &str) -> Option<OwnedMutexGuard<()>> {
        let locks = self.write_locks.as_ref()?;
        let mut h = DefaultHasher::new();
        (collection, id).hash(&mut h);
        let lock = locks[(h.finish() % locks.len() as u64) as usize].clone();
        Some(lock.lock_owned().await)
    }
}
