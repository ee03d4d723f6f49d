//! [`MeteredStore`]: any store, its calls timed and their errors counted in the service's
//! [`Metrics`]. A service built with metrics off gets its store unwrapped, so it pays nothing.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;

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

impl MeteredStore {
    /// Wraps `inner`, recording into `metrics`.
    pub fn new(inner: Arc<dyn Store>, metrics: Arc<Metrics>) -> MeteredStore {
        MeteredStore { inner, metrics }
    }

    fn record<T>(&self, collection: &str, op: usize, started: Instant, r: &Result<T, StoreError>) {
        self.metrics
            .store_op(collection, op, started.elapsed(), r.as_ref().err());
    }
}

/// Times `$call` as store operation `$op` (its index in `STORE_OPS`) on `$collection`.
macro_rules! timed {
    ($self:ident, $collection:expr, $op:expr, $call:expr) => {{
        let started = Instant::now();
        let r = $call.await;
        $self.record($collection, $op, started, &r);
        r
    }};
}

#[async_trait]
impl Store for MeteredStore {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    async fn insert(&self, collection: &str, doc: Doc) -> Result<(), StoreError> {
        timed!(self, collection, 0, self.inner.insert(collection, doc))
    }

    async fn insert_many(&self, collection: &str, docs: Vec<Doc>) -> Result<(), StoreError> {
        timed!(
            self,
            collection,
            1,
            self.inner.insert_many(collection, docs)
        )
    }

    async fn get(&self, collection: &str, id: &str) -> Result<Option<Doc>, StoreError> {
        timed!(self, collection, 2, self.inner.get(collection, id))
    }

    async fn get_json(&self, collection: &str, id: &str) -> Result<Option<Bytes>, StoreError> {
        timed!(self, collection, 3, self.inner.get_json(collection, id))
    }

    async fn list(
        &self,
        collection: &str,
        filter: &Filter,
        page: Page,
    ) -> Result<Listing, StoreError> {
        timed!(
            self,
            collection,
            4,
            self.inner.list(collection, filter, page)
        )
    }

    async fn list_json(
        &self,
        collection: &str,
        filter: &Filter,
        page: Page,
    ) -> Result<JsonListing, StoreError> {
        timed!(
            self,
            collection,
            5,
            self.inner.list_json(collection, filter, page)
        )
    }

    async fn update(
        &self,
        collection: &str,
        id: &str,
        expect: &Filter,
        change: &Change,
    ) -> Result<Outcome, StoreError> {
        timed!(
            self,
            collection,
            6,
            self.inner.update(collection, id, expect, change)
        )
    }

    async fn delete(
        &self,
        collection: &str,
        id: &str,
        expect: &Filter,
    ) -> Result<Outcome, StoreError> {
        timed!(
            self,
            collection,
            7,
            self.inner.delete(collection, id, expect)
        )
    }

    async fn ping(&self) -> Result<(), StoreError> {
        timed!(self, "", 8, self.inner.ping())
    }

    async fn size_on_disk(&self) -> Result<Option<u64>, StoreError> {
        self.inner.size_on_disk().await
    }

    async fn close(&self) -> Result<(), StoreError> {
        self.inner.close().await
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
