//! Grouped durable commits: one writer thread applies every write of the store, many per
//! transaction.
//!
//! Why. A durable commit costs one fsync, a few hundred microseconds to several milliseconds on
//! real disks, and redb (like any single-file database) lets one write transaction run at a time.
//! With one transaction per write, a store answers at most one write per fsync however many
//! requests wait: about 6,500 writes/s on the development machine, whatever the concurrency. The
//! classic answer is group commit. PostgreSQL's WAL writer flushes the log once for every
//! transaction whose commit record is in it by then (`commit_delay`/`commit_siblings` even wait a
//! little for more to join); MongoDB's journal batches every write that arrives during a journal
//! flush into the next group commit, and a `j: true` write is answered when its group is on disk.
//! Here the same: writes queue on a channel; the writer takes the first, drains whatever else is
//! queued (up to [`MAX_GROUP`] jobs, [`MAX_GROUP_DOCS`] documents), applies them in arrival order
//! inside ONE redb write transaction and commits it with `Durability::Immediate` (one fsync for
//! the group). Only then is each caller answered, so "acknowledged" still means "durable". Nobody
//! waits for company: a write that arrives alone is committed alone, at once; groups form exactly
//! when writes arrive faster than fsyncs complete, which is when they are needed. Unlike
//! `commit_delay`, no time is ever spent waiting for more.
//!
//! One transaction for many callers needs two rules:
//! - A write that fails its own condition (the document is missing, the expectation does not hold,
//!   a unique value or the id is taken) fails alone and changes nothing: every job checks all its
//!   conditions, unique keys included, before it writes anything. So no rollback is needed, and
//!   later jobs of the group see exactly the state the earlier ones left (the conditions are
//!   checked in arrival order against the group's own uncommitted writes, as if each had committed
//!   alone).
//! - A failure of the storage itself (an I/O error, a failed commit) fails the whole group: the
//!   transaction is dropped and every caller of the group gets the error. Nobody of that group was
//!   answered before, so nobody was told "done" for a write that is not durable.
//!
//! A group that wrote nothing (every job refused) is aborted instead of committed: no fsync.
//! The thread owns no lock a reader needs during the fsync (redb readers see the last committed
//! snapshot), so reads go on while a group commits.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use redb::{Database, Durability, ReadableTable, WriteTransaction};
use tokio::sync::{mpsc, oneshot};

use super::super::keys::{decode_doc, encode_doc, field_key};
use super::super::{admit, doc_id, unique_key, Change, Doc, Filter, Outcome, StoreError};
use super::internal;
use super::layout::{count_table, docs_table, index_table, unique_table, Layout};

/// The most jobs one group (one transaction, one fsync) takes.
pub(super) const MAX_GROUP: usize = 256;

/// A group stops draining the queue once its jobs hold this many documents (bulk inserts).
pub(super) const MAX_GROUP_DOCS: usize = 16_384;

/// What a job does.
pub(super) enum Work {
    /// Inserts these documents, all or none.
    Insert(Vec<Doc>),
    /// A conditional update.
    Update {
        /// The document.
        id: String,
        /// What it must meet.
        expect: Filter,
        /// The change.
        change: Change,
    },
    /// A conditional delete.
    Delete {
        /// The document.
        id: String,
        /// What it must meet.
        expect: Filter,
    },
}

impl Work {
    fn weight(&self) -> usize {
        match self {
            Work::Insert(docs) => docs.len().max(1),
            _ => 1,
        }
    }
}

/// What a job answers.
#[derive(Debug)]
pub(super) enum Answer {
    /// The documents were inserted.
    Inserted,
    /// The outcome of an update or delete.
    Outcome(Outcome),
}

/// A write queued for the writer.
pub(super) struct Job {
    /// The collection.
    pub(super) layout: Arc<Layout>,
    /// The write.
    pub(super) work: Work,
    /// Where the answer goes, once the group is durable.
    pub(super) reply: oneshot::Sender<Result<Answer, StoreError>>,
}

enum Message {
    Job(Job),
    Stop,
}

/// How a job failed.
enum Fail {
    /// Its own condition: nothing was written; the rest of the group goes on.
    Alone(StoreError),
    /// The storage: the whole group fails.
    Group(StoreError),
}

fn io<T, E: std::fmt::Display>(r: Result<T, E>) -> Result<T, Fail> {
    r.map_err(|e| Fail::Group(internal(e)))
}

/// Counters of the writer, for tests and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CommitStats {
    /// Durable commits made (one fsync each).
    pub commits: u64,
    /// Writes answered (each job: an insert, insert-many chunk, update or delete).
    pub writes: u64,
    /// Groups taken from the queue (a group that changed nothing is aborted, not committed).
    pub groups: u64,
}

/// What the writer thread shares with the store.
pub(super) struct Shared {
    commits: AtomicU64,
    writes: AtomicU64,
    groups: AtomicU64,
    /// Jobs sent and not yet taken into a group (counted after the send, so it may dip below zero
    /// for a moment when the writer is quicker).
    queued: AtomicIsize,
    /// Held by the writer while it takes and applies a group (tests hold it to let a queue build).
    gate: Mutex<()>,
    /// Whether the file fits in redb's cache (reads may then run inline), checked after each commit.
    pub(super) fits_cache: AtomicBool,
    path: PathBuf,
    cache_bytes: u64,
}

impl Shared {
    fn refresh_fit(&self) {
        if let Ok(meta) = std::fs::metadata(&self.path) {
            self.fits_cache
                .store(meta.len() <= self.cache_bytes, Ordering::Relaxed);
        }
    }
}

/// The handle of the writer thread.
pub(super) struct Writer {
    queue: mpsc::UnboundedSender<Message>,
    thread: Mutex<Option<JoinHandle<()>>>,
    pub(super) shared: Arc<Shared>,
}

impl Writer {
    /// Starts the writer thread of `db` (the file at `path`, whose reads are cached up to
    /// `cache_bytes`).
    pub(super) fn start(
        db: Arc<Database>,
        path: PathBuf,
        cache_bytes: u64,
    ) -> Result<Writer, StoreError> {
        let shared = Arc::new(Shared {
            commits: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            groups: AtomicU64::new(0),
            queued: AtomicIsize::new(0),
            gate: Mutex::new(()),
            fits_cache: AtomicBool::new(false),
            path,
            cache_bytes,
        });
        shared.refresh_fit();
        let (queue, rx) = mpsc::unbounded_channel();
        let for_thread = shared.clone();
        let thread = std::thread::Builder::new()
            .name("brigade-store-writer".into())
            .spawn(move || run(&db, rx, &for_thread))
            .map_err(|e| internal(format!("starting the store's writer thread: {e}")))?;
        Ok(Writer {
            queue,
            thread: Mutex::new(Some(thread)),
            shared,
        })
    }

    /// Queues `work` on `layout` and waits for its answer, given once its group is durable.
    pub(super) async fn submit(
        &self,
        layout: Arc<Layout>,
        work: Work,
    ) -> Result<Answer, StoreError> {
        let (reply, answer) = oneshot::channel();
        let job = Message::Job(Job {
            layout,
            work,
            reply,
        });
        if self.queue.send(job).is_err() {
            return Err(internal("the store is closed"));
        }
        self.shared.queued.fetch_add(1, Ordering::SeqCst);
        answer
            .await
            .map_err(|_| internal("the store's writer stopped before answering"))?
    }

    /// The counters so far.
    pub(super) fn stats(&self) -> CommitStats {
        CommitStats {
            commits: self.shared.commits.load(Ordering::SeqCst),
            writes: self.shared.writes.load(Ordering::SeqCst),
            groups: self.shared.groups.load(Ordering::SeqCst),
        }
    }

    /// Jobs sent and not yet taken into a group.
    #[cfg(test)]
    pub(super) fn queued(&self) -> isize {
        self.shared.queued.load(Ordering::SeqCst)
    }

    /// Holds the writer before its next group until the guard is dropped (tests).
    #[cfg(test)]
    pub(super) fn hold(&self) -> MutexGuard<'_, ()> {
        self.shared.gate.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Lets the writer finish what is queued, then stops it and waits for it.
    pub(super) fn stop(&self) {
        let _ = self.queue.send(Message::Stop);
        let thread = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(t) = thread {
            let _ = t.join();
        }
    }
}

fn run(db: &Database, mut rx: mpsc::UnboundedReceiver<Message>, shared: &Shared) {
    let mut stopping = false;
    while !stopping {
        let Some(first) = rx.blocking_recv() else {
            break;
        };
        let gate: MutexGuard<'_, ()> = shared.gate.lock().unwrap_or_else(|p| p.into_inner());
        let mut group = Vec::new();
        let mut weight = 0;
        let mut next = Some(first);
        while let Some(message) = next.take() {
            match message {
                Message::Stop => stopping = true,
                Message::Job(job) => {
                    weight += job.work.weight();
                    group.push(job);
                }
            }
            if stopping || group.len() >= MAX_GROUP || weight >= MAX_GROUP_DOCS {
                break;
            }
            next = rx.try_recv().ok();
        }
        shared
            .queued
            .fetch_sub(group.len() as isize, Ordering::SeqCst);
        if !group.is_empty() {
            commit_group(db, group, shared);
        }
        drop(gate);
    }
}

/// Applies `group` in one transaction, commits it durably and answers every job.
fn commit_group(db: &Database, group: Vec<Job>, shared: &Shared) {
    shared.groups.fetch_add(1, Ordering::SeqCst);
    let n = group.len() as u64;
    let mut answers = Vec::with_capacity(group.len());
    let result = (|| -> Result<bool, StoreError> {
        let mut tx = db.begin_write().map_err(internal)?;
        tx.set_durability(Durability::Immediate).map_err(internal)?;
        let mut wrote = false;
        let mut jobs = group.into_iter();
        while let Some(job) = jobs.next() {
            let answer = match apply(&tx, &job.layout, job.work) {
                Ok((answer, changed)) => {
                    wrote |= changed;
                    Ok(answer)
                }
                Err(Fail::Alone(e)) => Err(e),
                Err(Fail::Group(e)) => {
                    answers.push((job.reply, Err(e.clone())));
                    answers.extend(jobs.map(|j| (j.reply, Err(e.clone()))));
                    return Err(e);
                }
            };
            answers.push((job.reply, answer));
        }
        if wrote {
            tx.commit().map_err(internal)?;
        } else {
            tx.abort().map_err(internal)?;
        }
        Ok(wrote)
    })();
    match result {
        Ok(committed) => {
            if committed {
                shared.commits.fetch_add(1, Ordering::SeqCst);
                shared.refresh_fit();
            }
            shared.writes.fetch_add(n, Ordering::SeqCst);
            for (reply, answer) in answers {
                let _ = reply.send(answer);
            }
        }
        Err(e) => {
            tracing::error!(error = %e, jobs = n, "a group of store writes failed as a whole");
            shared.writes.fetch_add(n, Ordering::SeqCst);
            for (reply, _) in answers {
                let _ = reply.send(Err(e.clone()));
            }
        }
    }
}

/// Applies one job inside `tx`; says whether it changed anything.
fn apply(tx: &WriteTransaction, layout: &Layout, work: Work) -> Result<(Answer, bool), Fail> {
    match work {
        Work::Insert(docs) => {
            insert(tx, layout, &docs)?;
            Ok((Answer::Inserted, true))
        }
        Work::Update { id, expect, change } => {
            let outcome = update(tx, layout, &id, &expect, &change)?;
            let changed = matches!(outcome, Outcome::Done(_));
            Ok((Answer::Outcome(outcome), changed))
        }
        Work::Delete { id, expect } => {
            let outcome = delete(tx, layout, &id, &expect)?;
            let changed = matches!(outcome, Outcome::Done(_));
            Ok((Answer::Outcome(outcome), changed))
        }
    }
}

fn duplicate(field: &str, value: String) -> Fail {
    Fail::Alone(StoreError::Duplicate {
        field: field.to_string(),
        value,
    })
}

/// Inserts `docs`: first every check (ids and unique values free, in the store and within the
/// batch), then every write.
fn insert(tx: &WriteTransaction, layout: &Layout, docs: &[Doc]) -> Result<(), Fail> {
    let mut table = io(tx.open_table(docs_table(layout.spec.name)))?;
    let mut ids = HashSet::with_capacity(docs.len());
    for doc in docs {
        let id = doc_id(doc);
        if !ids.insert(id) || io(table.get(id))?.is_some() {
            return Err(duplicate("id", serde_json::Value::from(id).to_string()));
        }
    }
    for (field, name) in &layout.unique {
        let t = io(tx.open_table(unique_table(name)))?;
        let mut batch = HashSet::new();
        for key in docs.iter().filter_map(|d| unique_key(d, field)) {
            if io(t.get(key.as_str()))?.is_some() || !batch.insert(key.clone()) {
                return Err(duplicate(field, key));
            }
        }
    }
    for doc in docs {
        io(table.insert(doc_id(doc), encode_doc(doc).as_ref()))?;
    }
    for (field, name) in &layout.unique {
        let mut t = io(tx.open_table(unique_table(name)))?;
        for doc in docs {
            if let Some(key) = unique_key(doc, field) {
                io(t.insert(key.as_str(), doc_id(doc)))?;
            }
        }
    }
    for names in &layout.indexed {
        let mut t = io(tx.open_table(index_table(&names.entries)))?;
        let mut added: HashMap<String, u64> = HashMap::new();
        for doc in docs {
            let key = field_key(doc, names.field);
            io(t.insert((key.as_str(), doc_id(doc)), ()))?;
            *added.entry(key).or_default() += 1;
        }
        let mut counts = io(tx.open_table(count_table(&names.counts)))?;
        for (key, n) in added {
            let now = io(counts.get(key.as_str()))?.map_or(0, |g| g.value());
            io(counts.insert(key.as_str(), now + n))?;
        }
    }
    Ok(())
}

/// The stored document `id`, decoded.
fn current(
    table: &redb::Table<'_, &'static str, &'static [u8]>,
    id: &str,
) -> Result<Option<Doc>, Fail> {
    let found = io(table.get(id))?;
    found
        .map(|g| decode_doc(g.value()))
        .transpose()
        .map_err(Fail::Group)
}

fn update(
    tx: &WriteTransaction,
    layout: &Layout,
    id: &str,
    expect: &Filter,
    change: &Change,
) -> Result<Outcome, Fail> {
    let mut table = io(tx.open_table(docs_table(layout.spec.name)))?;
    let old = match admit(current(&table, id)?, expect) {
        Ok(doc) => doc,
        Err(outcome) => return Ok(outcome),
    };
    let mut new = old.clone();
    change.apply(&mut new);
    for (field, name) in &layout.unique {
        let t = io(tx.open_table(unique_table(name)))?;
        let (was, will) = (unique_key(&old, field), unique_key(&new, field));
        if let Some(key) = will.filter(|k| Some(k) != was.as_ref()) {
            let owner = io(t.get(key.as_str()))?.map(|g| g.value().to_string());
            if owner.is_some_and(|o| o != id) {
                return Err(duplicate(field, key));
            }
        }
    }
    io(table.insert(id, encode_doc(&new).as_ref()))?;
    reindex(tx, layout, id, Some(&old), Some(&new))?;
    Ok(Outcome::Done(new))
}

fn delete(
    tx: &WriteTransaction,
    layout: &Layout,
    id: &str,
    expect: &Filter,
) -> Result<Outcome, Fail> {
    let mut table = io(tx.open_table(docs_table(layout.spec.name)))?;
    let old = match admit(current(&table, id)?, expect) {
        Ok(doc) => doc,
        Err(outcome) => return Ok(outcome),
    };
    io(table.remove(id))?;
    reindex(tx, layout, id, Some(&old), None)?;
    Ok(Outcome::Done(old))
}

/// Moves document `id`'s unique values and index entries from `old` to `new` (its conditions were
/// checked already).
fn reindex(
    tx: &WriteTransaction,
    layout: &Layout,
    id: &str,
    old: Option<&Doc>,
    new: Option<&Doc>,
) -> Result<(), Fail> {
    for (field, name) in &layout.unique {
        let (was, will) = (
            old.and_then(|d| unique_key(d, field)),
            new.and_then(|d| unique_key(d, field)),
        );
        if was == will {
            continue;
        }
        let mut t = io(tx.open_table(unique_table(name)))?;
        if let Some(k) = was {
            io(t.remove(k.as_str()))?;
        }
        if let Some(k) = will {
            io(t.insert(k.as_str(), id))?;
        }
    }
    for names in &layout.indexed {
        let (was, will) = (
            old.map(|d| field_key(d, names.field)),
            new.map(|d| field_key(d, names.field)),
        );
        if was == will {
            continue;
        }
        let mut t = io(tx.open_table(index_table(&names.entries)))?;
        let mut counts = io(tx.open_table(count_table(&names.counts)))?;
        if let Some(k) = &was {
            io(t.remove((k.as_str(), id)))?;
            let now = io(counts.get(k.as_str()))?.map_or(0, |g| g.value());
            if now <= 1 {
                io(counts.remove(k.as_str()))?;
            } else {
                io(counts.insert(k.as_str(), now - 1))?;
            }
        }
        if let Some(k) = &will {
            io(t.insert((k.as_str(), id), ()))?;
            let now = io(counts.get(k.as_str()))?.map_or(0, |g| g.value());
            io(counts.insert(k.as_str(), now + 1))?;
        }
    }
    Ok(())
}
