//! Preloading: filling an empty store with many realistic documents before it serves, so a
//! measurement sees a store of a known size (`brigade serve --preload N`, `brigade compare
//! --preload N`).
//!
//! Realistic documents need the domain, and the kit knows none: the application supplies them
//! through [`Preload`], a source of numbered documents per collection, and [`fill`] writes them in
//! bulk ([`Store::insert_many`], chunks of [`CHUNK`]). A collection that already holds documents is
//! left alone, so a server restarted on the same data folder with the same `--preload` does not
//! double its data.
//!
//! Preloaded documents carry ids from [`preload_id`]: deterministic, distinct per number, and older
//! than any id [`new_id`](crate::store::new_id) makes now, so they sort before the documents a run
//! creates, as old data does, and an application can refer from one collection to another's
//! preloaded documents by number (an order to its table) without reading them back.

use std::ops::Range;
use std::time::{Duration, Instant};

use crate::store::{CollectionSpec, Doc, Filter, Page, Store, StoreError};

/// Documents written per [`Store::insert_many`] call.
pub const CHUNK: u64 = 10_000;

/// The creation time of preloaded document 0, milliseconds since the Unix epoch
/// (2020-01-01T00:00:00Z); document `n` was created `n` ms later.
pub const PRELOAD_EPOCH_MS: u64 = 1_577_836_800_000;

/// A source of realistic documents for an application's collections.
pub trait Preload: Send + Sync {
    /// Documents number `range` of `collection` (numbered from 0), out of `total` that the
    /// collection will hold; every collection of the store receives the same `total`. The same
    /// numbers always give the same documents, so a preload made in chunks equals one made at once.
    /// Each document carries its `id` (use [`preload_id`] with its number).
    fn documents(&self, collection: &str, range: Range<u64>, total: u64) -> Vec<Doc>;
}

/// The id of preloaded document `n`: a UUIDv7 (32 hex digits, like
/// [`new_id`](crate::store::new_id)) stamped [`PRELOAD_EPOCH_MS`] + `n` ms, with `n` as its
/// random part, so ids are distinct, sort by `n`, and sort before every id made today.
pub fn preload_id(n: u64) -> String {
    let mut tail = [0u8; 10];
    tail[2..].copy_from_slice(&n.to_be_bytes());
    uuid::Builder::from_unix_timestamp_millis(PRELOAD_EPOCH_MS + n, &tail)
        .into_uuid()
        .simple()
        .to_string()
}

/// What [`fill`] did to one collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filled {
    /// The collection.
    pub collection: &'static str,
    /// Documents written.
    pub inserted: u64,
    /// Documents the collection held before (when not 0, nothing was written).
    pub existing: u64,
    /// Time taken, generation and writes together.
    pub elapsed: Duration,
}

/// Fills every empty collection of `store` with `count` documents from `source`, in chunks of
/// [`CHUNK`]; a collection that holds any document already is left as it is.
pub async fn fill(
    store: &dyn Store,
    collections: &[CollectionSpec],
    source: &dyn Preload,
    count: u64,
) -> Result<Vec<Filled>, StoreError> {
    let mut filled = Vec::with_capacity(collections.len());
    for spec in collections {
        let began = Instant::now();
        let existing = store
            .list(
                spec.name,
                &Filter::all(),
                Page {
                    offset: 0,
                    limit: 1,
                },
            )
            .await?
            .total;
        let mut inserted = 0;
        if existing == 0 {
            while inserted < count {
                let end = (inserted + CHUNK).min(count);
                let docs = source.documents(spec.name, inserted..end, count);
                if docs.len() as u64 != end - inserted {
                    return Err(StoreError::Internal(format!(
                        "the preload source made {} documents of {} for {} {}..{end}",
                        docs.len(),
                        end - inserted,
                        spec.name,
                        inserted
                    )));
                }
                store.insert_many(spec.name, docs).await?;
                inserted = end;
            }
        }
        filled.push(Filled {
            collection: spec.name,
            inserted,
            existing,
            elapsed: began.elapsed(),
        });
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::store::memory::MemoryStore;

    const THINGS: CollectionSpec = CollectionSpec {
        name: "things",
        unique: &["number"],
        indexed: &["kind"],
    };
    const OTHERS: CollectionSpec = CollectionSpec {
        name: "others",
        unique: &[],
        indexed: &[],
    };

    /// Numbered documents with a unique number and a kind that cycles.
    struct Numbered;

    impl Preload for Numbered {
        fn documents(&self, _collection: &str, range: Range<u64>, _total: u64) -> Vec<Doc> {
            range
                .map(|n| {
                    let kind = ["a", "b", "c"][n as usize % 3];
                    json!({"id": preload_id(n), "number": n, "kind": kind})
                        .as_object()
                        .cloned()
                        .unwrap_or_default()
                })
                .collect()
        }
    }

    fn total(listing: crate::store::Listing) -> u64 {
        listing.total
    }

    #[tokio::test]
    async fn fill_writes_count_documents_over_several_chunks_into_every_collection() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new(&[THINGS, OTHERS]));
        let count = CHUNK * 2 + 17;
        let filled = fill(store.as_ref(), &[THINGS, OTHERS], &Numbered, count)
            .await
            .unwrap();
        assert_eq!(filled.len(), 2);
        for f in &filled {
            assert_eq!((f.inserted, f.existing), (count, 0), "{f:?}");
        }
        let page = Page {
            offset: 0,
            limit: 1,
        };
        for c in ["things", "others"] {
            assert_eq!(
                total(store.list(c, &Filter::all(), page).await.unwrap()),
                count
            );
        }
        let kind_b = store
            .list("things", &Filter::all().eq("kind", "b"), page)
            .await
            .unwrap();
        assert_eq!(kind_b.total, count / 3 + u64::from(count % 3 == 2));
        // The last chunk's documents are there, in id order after the first.
        let last = store
            .list(
                "things",
                &Filter::all(),
                Page {
                    offset: count - 1,
                    limit: 1,
                },
            )
            .await
            .unwrap();
        assert_eq!(last.items[0]["number"], json!(count - 1));
    }

    #[tokio::test]
    async fn a_collection_holding_documents_is_not_filled_again() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new(&[THINGS, OTHERS]));
        fill(store.as_ref(), &[THINGS], &Numbered, 50)
            .await
            .unwrap();
        let again = fill(store.as_ref(), &[THINGS, OTHERS], &Numbered, 50)
            .await
            .unwrap();
        assert_eq!((again[0].inserted, again[0].existing), (0, 50));
        assert_eq!((again[1].inserted, again[1].existing), (50, 0));
        let page = Page {
            offset: 0,
            limit: 1,
        };
        assert_eq!(
            total(store.list("things", &Filter::all(), page).await.unwrap()),
            50
        );
    }

    #[test]
    fn preload_ids_are_distinct_sorted_and_older_than_new_ids() {
        let ids: Vec<String> = [0, 1, 2, 255, 256, 1_000_000, u32::MAX as u64]
            .into_iter()
            .map(preload_id)
            .collect();
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, ids, "distinct and in number order");
        assert!(ids.iter().all(|id| id.len() == 32));
        assert!(ids.last().unwrap() < &crate::store::new_id());
        assert_eq!(preload_id(42), preload_id(42));
    }
}
