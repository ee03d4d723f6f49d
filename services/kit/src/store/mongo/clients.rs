//! One driver client per tokio runtime that calls the store, so every operation runs on the
//! runtime that serves its request: no hand-over to another thread per operation.
//!
//! A `mongodb::Client` starts its background tasks (the connection pool's worker, the server
//! monitor) with `tokio::spawn` on the runtime it is made on, and its pool's worker opens the
//! sockets there, so they are registered with that runtime's reactor. An operation checks a
//! connection out of the pool (a message to the pool's worker and its answer), writes the command
//! and reads the answer. Made on the runtime that awaits the operation, all of that stays on the
//! serving thread: on a current-thread runtime (actix-web, ntex and xitca-web run one per worker)
//! the check-out is two task wake-ups on the same thread and the socket's readiness comes from
//! that thread's own reactor; on a multi-thread runtime (the hyper-based runtimes) the one client
//! is shared by the runtime's workers, whose reactor is shared too. Before, the client lived on a
//! thread of its own ([`DriverThread`]) and each operation went there and back: two cross-thread
//! wake-ups (one each way) per operation, and most of Brigade's own CPU per request on MongoDB.
//!
//! The client of a runtime is made the first time that runtime calls the store (made lazily: the
//! store cannot know the serving runtimes when it is opened, on serve's support runtime) and
//! found again through a per-thread slot, so a call costs a lookup in this thread's slot and no
//! lock shared by the threads. The first call of a thread also asks whether the thread runs the
//! runtime's tasks ([`runs_tasks_of`]). A thread that does not cannot have the operation run in
//! its task without every step of it crossing threads (the client's tasks and its sockets'
//! readiness are the other thread's), so its operations are handed over, whole, to a task of the
//! runtime, once there and once back: a thread that only entered a runtime others drive (ntex on
//! io_uring enters a small tokio runtime for the kit on each worker; the thread blocked in a
//! multi-thread runtime's `block_on`) to that runtime; a thread with no tokio runtime at all to
//! the store's own driver thread ([`DriverThread`]), started the first time such a caller comes.
//!
//! Pools: each client's pool may grow to every place in the store's lines (the lines are shared
//! by all runtimes, so one runtime may hold all places at once), but only the serving runtimes
//! keep theirs warm, and a current-thread runtime only its share (the places over the cores): see
//! [`Clients::warm_pool`] and docs/stores.md for the totals.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::task::{ready, Context, Poll};

use mongodb::bson::RawDocumentBuf;
use mongodb::options::ClientOptions;
use mongodb::{Client, Collection, Database};
use thread_local::ThreadLocal;
use tokio::runtime::{Handle, RuntimeFlavor};

use crate::store::{CollectionSpec, StoreError};

/// The driver's client on one runtime, with the handles made from it.
pub(super) struct RuntimeClient {
    runtime: tokio::runtime::Id,
    /// Dead once the runtime has shut down (its tasks, this one's probe among them, are dropped).
    alive: Weak<()>,
    client: Client,
    /// The store's database.
    pub(super) db: Database,
    /// One handle per collection spec, in the specs' order.
    pub(super) collections: Vec<Collection<RawDocumentBuf>>,
}

impl RuntimeClient {
    /// Whether its runtime still runs (and with it the client's background tasks).
    fn alive(&self) -> bool {
        self.alive.strong_count() > 0
    }
}

/// Where an operation runs.
#[derive(Clone)]
pub(super) enum Route {
    /// In the calling task, on its runtime's client.
    Here,
    /// Handed over to a task of this runtime, which runs its client: the caller's thread does not
    /// run that runtime's tasks (it has no runtime, and the store's driver thread stands in, or it
    /// only entered one that other threads drive).
    HandedOver(Handle),
}

/// The client a thread used last, and where that thread's operations run.
struct Nearest {
    client: Arc<RuntimeClient>,
    route: Route,
}

/// The store's clients, one per runtime that has called it.
pub(super) struct Clients {
    /// The options every client is made with, but the pool's warm part ([`Clients::warm_pool`]).
    options: ClientOptions,
    /// The places in the store's lines: the most connections one client needs.
    places: u32,
    database: String,
    specs: Vec<CollectionSpec>,
    /// The runtime that opened the store: it keeps no connection warm.
    opener: Option<tokio::runtime::Id>,
    /// Every client made, by runtime.
    made: Mutex<Vec<Arc<RuntimeClient>>>,
    /// The client each thread used last.
    nearest: ThreadLocal<RefCell<Option<Nearest>>>,
    /// The thread callers without a runtime hand their operations to, started for the first one.
    driver: OnceLock<DriverThread>,
}

impl Clients {
    /// Clients made with `options` (the pool's size set by the caller: every place in the lines,
    /// `places`), using `database`, for the runtime calling this one (the opener) and the others
    /// as they come.
    pub(super) fn new(
        options: ClientOptions,
        places: u32,
        database: String,
        specs: &[CollectionSpec],
    ) -> Clients {
        Clients {
            options,
            places,
            database,
            specs: specs.to_vec(),
            opener: Handle::try_current().ok().map(|h| h.id()),
            made: Mutex::new(Vec::new()),
            nearest: ThreadLocal::new(),
            driver: OnceLock::new(),
        }
    }

    /// The name of the database the clients use.
    pub(super) fn database(&self) -> &str {
        &self.database
    }

    /// The client for the calling task and where its operations run: in the task, on its own
    /// runtime's client, when this thread runs that runtime's tasks; else handed over to the
    /// runtime it entered, or to the driver's thread when it has none.
    pub(super) async fn here(&self) -> Result<(Arc<RuntimeClient>, Route), StoreError> {
        let (runtime, driver) = match Handle::try_current() {
            Ok(runtime) => (runtime, false),
            Err(_) => (self.driver()?.handle.clone(), true),
        };
        if let Some(found) = self.nearest(&runtime) {
            return Ok(found);
        }
        let client = self.find_or_make(&runtime)?;
        let thread = std::thread::current().id();
        let route = if !driver && runs_tasks_of(&runtime).await {
            Route::Here
        } else {
            Route::HandedOver(runtime)
        };
        // Remembered for the thread that asked (a task of a multi-thread runtime may have moved).
        if std::thread::current().id() == thread {
            *self.nearest.get_or_default().borrow_mut() = Some(Nearest {
                client: client.clone(),
                route: route.clone(),
            });
        }
        Ok((client, route))
    }

    /// This thread's last client and route, if they are `runtime`'s.
    fn nearest(&self, runtime: &Handle) -> Option<(Arc<RuntimeClient>, Route)> {
        let id = runtime.id();
        let nearest = self.nearest.get_or_default().borrow();
        let n = nearest.as_ref().filter(|n| n.client.runtime == id)?;
        Some((n.client.clone(), n.route.clone()))
    }

    /// The driver's thread, started on first use.
    fn driver(&self) -> Result<&DriverThread, StoreError> {
        if let Some(driver) = self.driver.get() {
            return Ok(driver);
        }
        let started = DriverThread::start()?;
        // Two first callers at once: one thread wins, the other's stops as it drops.
        Ok(self.driver.get_or_init(|| started))
    }

    fn find_or_make(&self, runtime: &Handle) -> Result<Arc<RuntimeClient>, StoreError> {
        let id = runtime.id();
        let mut made = self.made.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(client) = made.iter().find(|c| c.runtime == id) {
            return Ok(client.clone());
        }
        // A runtime that has shut down took its client's tasks with it: forget its client.
        made.retain(|c| c.alive());
        let client = Arc::new(self.make(runtime)?);
        made.push(client.clone());
        tracing::debug!(
            database = %self.database,
            runtime = %id,
            clients = made.len(),
            "a MongoDB client for another runtime"
        );
        Ok(client)
    }

    /// A client made on `runtime`, so its tasks and sockets live there.
    fn make(&self, runtime: &Handle) -> Result<RuntimeClient, StoreError> {
        let _inside = runtime.enter();
        let mut options = self.options.clone();
        if options.min_pool_size.is_none() {
            options.min_pool_size = Some(self.warm_pool(runtime));
        }
        let client = Client::with_options(options)
            .map_err(|e| StoreError::Internal(format!("MongoDB client: {e}")))?;
        let token = Arc::new(());
        let alive = Arc::downgrade(&token);
        // Dropped, and `alive` dead with it, when the runtime shuts down.
        runtime.spawn(async move {
            let _token = token;
            std::future::pending::<()>().await
        });
        let db = client.database(&self.database);
        Ok(RuntimeClient {
            runtime: runtime.id(),
            alive,
            collections: self.specs.iter().map(|s| db.collection(s.name)).collect(),
            db,
            client,
        })
    }

    /// How many connections `runtime`'s client keeps open when idle (the pool's minimum, unless
    /// the URI sets one): none on the runtime that opened the store (it creates the indexes and
    /// may preload; serving happens elsewhere), every place on a multi-thread runtime (it serves
    /// on all its workers: today's pool), and on a current-thread runtime its share, the places
    /// over the cores (one such runtime per worker, and workers = cores by default), so the
    /// workers together keep about as many as one pool did.
    pub(super) fn warm_pool(&self, runtime: &Handle) -> u32 {
        if Some(runtime.id()) == self.opener {
            return 0;
        }
        match runtime.runtime_flavor() {
            RuntimeFlavor::CurrentThread => {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                self.places.div_ceil(u32::try_from(cores).unwrap_or(1))
            }
            _ => self.places,
        }
    }

    /// The clients whose runtimes still run.
    pub(super) fn live(&self) -> Vec<Client> {
        let made = self.made.lock().unwrap_or_else(|e| e.into_inner());
        made.iter()
            .filter(|c| c.alive())
            .map(|c| c.client.clone())
            .collect()
    }

    /// How many clients have been made and are alive (one per runtime that called the store).
    pub(super) fn count(&self) -> usize {
        let made = self.made.lock().unwrap_or_else(|e| e.into_inner());
        made.iter().filter(|c| c.alive()).count()
    }
}

/// Whether this thread runs `runtime`'s tasks: it drives that current-thread runtime or is one of
/// that multi-thread runtime's workers, rather than a thread that only entered it (ntex on
/// io_uring enters a small tokio runtime on each of its workers for the kit, and that runtime's
/// own thread drives it). Asked once per thread and runtime, by spawning a task that says which
/// thread ran it: one spawned from a worker goes to that worker's next-task slot, which no other
/// worker steals, so the first answer is nearly always this thread; three tries make a stray
/// answer from a stealing worker still less likely (and its cost is only a hand-over).
async fn runs_tasks_of(runtime: &Handle) -> bool {
    let here = std::thread::current().id();
    for _ in 0..3 {
        match runtime.spawn(async { std::thread::current().id() }).await {
            Ok(there) if there == here => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    false
}

/// The thread callers without a tokio runtime hand their operations to: a current-thread runtime
/// of its own, with its own client. Stopped when the store is dropped.
pub(super) struct DriverThread {
    pub(super) handle: Handle,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl DriverThread {
    fn start() -> Result<DriverThread, StoreError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StoreError::Internal(format!("the MongoDB driver's runtime: {e}")))?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("brigade-mongo".into())
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                });
                // The runtime drops here, outside `block_on`, with whatever it still runs.
            })
            .map_err(|e| StoreError::Internal(format!("the MongoDB driver's thread: {e}")))?;
        Ok(DriverThread {
            handle,
            _stop: stop,
        })
    }
}

/// An operation that runs to its end even when its caller stops waiting: dropped unfinished (its
/// deadline passed, or the caller went away), it goes on as a task of the runtime it was dropped
/// on, so its connection goes back to the pool with the answer read instead of being closed
/// mid-answer, and the slot and lock it holds are given back when it is done, as before.
pub(super) struct RunsToEnd<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    op: Option<Pin<Box<F>>>,
}

impl<F> RunsToEnd<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    pub(super) fn new(op: F) -> RunsToEnd<F> {
        RunsToEnd {
            op: Some(Box::pin(op)),
        }
    }
}

impl<F> Future for RunsToEnd<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let Some(op) = self.op.as_mut() else {
            return Poll::Pending;
        };
        let out = ready!(op.as_mut().poll(cx));
        self.op = None;
        Poll::Ready(out)
    }
}

impl<F> Drop for RunsToEnd<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn drop(&mut self) {
        if let (Some(op), Ok(runtime)) = (self.op.take(), Handle::try_current()) {
            runtime.spawn(async move {
                let _ = op.await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clients_opened_here(places: u32) -> Clients {
        Clients::new(ClientOptions::default(), places, "brigade_test".into(), &[])
    }

    #[test]
    fn only_serving_runtimes_keep_connections_warm_and_current_thread_ones_their_share() {
        let opener = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let clients = opener.block_on(async { clients_opened_here(8) });
        assert_eq!(clients.warm_pool(opener.handle()), 0, "the opener serves nobody");
        let many = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        assert_eq!(clients.warm_pool(many.handle()), 8, "one pool for all its workers");
        let one = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        assert_eq!(clients.warm_pool(one.handle()), 8_u32.div_ceil(cores));
    }

    #[tokio::test]
    async fn an_operation_dropped_before_its_end_runs_on_to_it() {
        let (done, finished) = tokio::sync::oneshot::channel();
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        let op = RunsToEnd::new(async move {
            let _ = wait.await;
            let _ = done.send(());
        });
        // The caller stops waiting: dropped unfinished, the operation goes on as a task.
        assert!(tokio::time::timeout(std::time::Duration::ZERO, op)
            .await
            .is_err());
        go.send(()).unwrap();
        finished.await.expect("the operation ran to its end");
    }
}
