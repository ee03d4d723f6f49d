//! [`MeteredStore`]: any store, its calls timed and their errors counted in the service's
//! [`Metrics`]. A service built with metrics off gets its store unwrapped, so it pays nothing.
//!
//! The wrapper is on every request's path, so it is written for its cost (docs/observability.md):
//! each call finds its metric slot before it starts and hands back the inner store's future inside
//! one small [`Timed`] future (one allocation, which the `Store` trait's boxed futures require),
//! rather than an `async` block that would carry the arguments and the inner future along.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use async_trait::async_trait;
use bytes::Bytes;

use super::metrics::StoreOpSlot;
use super::slots::Stopwatch;
use super::Metrics;
use crate::store::{Change, Doc, Filter, JsonListing, Listing, Outcome, Page, Store, StoreError};

/// A store whose calls are timed and whose errors are counted.
pub struct MeteredStore {
    inner: Arc<dyn Store>,
    metrics: Arc<Metrics>,
}

impl std::fmt::Debug for MeteredStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MeteredStore({})", self.inner.kind())
    }
}

/// The boxed future every `Store` method returns.
type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// A store call in progress: its result is recorded in `slot` when it is ready.
struct Timed<'a, T> {
    call: StoreFuture<'a, T>,
    started: Stopwatch,
    slot: &'a StoreOpSlot,
}

impl<T> Future for Timed<'_, T> {
    type Output = Result<T, StoreError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let result = ready!(self.call.as_mut().poll(cx));
        self.slot
            .record(self.started.nanos(), result.as_ref().err());
        Poll::Ready(result)
    }
}

impl MeteredStore {
    /// Wraps `inner`, recording into `metrics`.
    pub fn new(inner: Arc<dyn Store>, metrics: Arc<Metrics>) -> MeteredStore {
        MeteredStore { inner, metrics }
    }

    /// Times `call`, store operation `op` (its index in `STORE_OPS`) on `collection`.
    fn timed<'a, T: 'a>(
        &'a self,
        collection: &str,
        op: usize,
        call: StoreFuture<'a, T>,
    ) -> StoreFuture<'a, T> {
        Box::pin(Timed {
            call,
            started: Stopwatch::start(),
            slot: self.metrics.store_slot(collection, op),
        })
    }
}

/// One timed `Store` method: the signature `#[async_trait]` gives the trait's (every reference its
/// own lifetime), written out because the body hands back a [`Timed`] future, not an `async` block.
macro_rules! timed_method {
    ($name:ident, $op:expr, ($collection:ident $(, $arg:ident: &$lt:lifetime $ty:ty)* $(; $owned:ident: $oty:ty)?) -> $out:ty) => {
        fn $name<'s, 'c, $($lt,)* 'async_trait>(
            &'s self,
            $collection: &'c str,
            $($arg: &$lt $ty,)*
            $($owned: $oty,)?
        ) -> StoreFuture<'async_trait, $out>
        where
            's: 'async_trait,
            'c: 'async_trait,
            $($lt: 'async_trait,)*
            Self: 'async_trait,
        {
            self.timed($collection, $op, self.inner.$name($collection $(, $arg)* $(, $owned)?))
        }
    };
}

#[async_trait]
impl Store for MeteredStore {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    timed_method!(insert, 0, (collection; doc: Doc) -> ());
    timed_method!(insert_many, 1, (collection; docs: Vec<Doc>) -> ());
    timed_method!(get, 2, (collection, id: &'i str) -> Option<Doc>);
    timed_method!(get_json, 3, (collection, id: &'i str) -> Option<Bytes>);
    timed_method!(list, 4, (collection, filter: &'f Filter; page: Page) -> Listing);
    timed_method!(list_json, 5, (collection, filter: &'f Filter; page: Page) -> JsonListing);
    timed_method!(update, 6, (collection, id: &'i str, expect: &'e Filter, change: &'g Change) -> Outcome);
    timed_method!(delete, 7, (collection, id: &'i str, expect: &'e Filter) -> Outcome);

    fn ping<'s, 'async_trait>(&'s self) -> StoreFuture<'async_trait, ()>
    where
        's: 'async_trait,
        Self: 'async_trait,
    {
        self.timed("", 8, self.inner.ping())
    }

    fn size_on_disk<'s, 'async_trait>(&'s self) -> StoreFuture<'async_trait, Option<u64>>
    where
        's: 'async_trait,
        Self: 'async_trait,
    {
        self.inner.size_on_disk()
    }

    fn close<'s, 'async_trait>(&'s self) -> StoreFuture<'async_trait, ()>
    where
        's: 'async_trait,
        Self: 'async_trait,
    {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::memory::MemoryStore;
    use crate::store::CollectionSpec;

    #[tokio::test]
    async fn calls_are_timed_and_a_duplicate_is_counted_as_one() {
        let spec = CollectionSpec {
            name: "notes",
            unique: &[],
            indexed: &[],
        };
        let inner: Arc<dyn Store> = Arc::new(MemoryStore::new(&[spec]));
        let metrics = Arc::new(Metrics::new(&["notes"], &[]));
        let store = MeteredStore::new(inner, metrics.clone());
        let doc: Doc = serde_json::from_str(r#"{"id": "a"}"#).unwrap();
        store.insert("notes", doc.clone()).await.unwrap();
        assert!(store.insert("notes", doc).await.is_err());
        assert!(store.get_json("notes", "a").await.unwrap().is_some());
        store.ping().await.unwrap();
        let text = metrics.encode();
        for line in [
            "brigade_store_operation_duration_seconds_count{collection=\"notes\",operation=\"insert\"} 2",
            "brigade_store_operation_duration_seconds_count{collection=\"notes\",operation=\"get_json\"} 1",
            "brigade_store_operation_duration_seconds_count{collection=\"(none)\",operation=\"ping\"} 1",
            "brigade_store_errors_total{collection=\"notes\",operation=\"insert\",kind=\"duplicate\"} 1",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
    }
}
