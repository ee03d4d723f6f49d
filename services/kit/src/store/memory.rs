//! The memory backend: a map behind one lock. Keeps nothing across restarts; the baseline that shows
//! what a runtime does without a database.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use async_trait::async_trait;

use super::*;

#[derive(Default)]
struct Collection {
    docs: BTreeMap<String, Doc>,
    unique: &'static [&'static str],
    /// field -> value key -> id
    taken: HashMap<&'static str, HashMap<String, String>>,
}

impl Collection {
    fn check_unique(&self, doc: &Doc) -> Result<(), StoreError> {
        for field in self.unique {
            if let Some(key) = unique_key(doc, field) {
                if let Some(owner) = self.taken.get(field).and_then(|m| m.get(&key)) {
                    if owner != doc_id(doc) {
                        return Err(StoreError::Duplicate {
                            field: field.to_string(),
                            value: key,
                        });
                    }
                }
            }
        }
        Ok(())
    }

    fn index(&mut self, doc: &Doc, add: bool) {
        for field in self.unique {
            if let Some(key) = unique_key(doc, field) {
                let m = self.taken.entry(field).or_default();
                if add {
                    m.insert(key, doc_id(doc).to_string());
                } else {
                    m.remove(&key);
                }
            }
        }
    }
}

/// The memory store.
pub struct MemoryStore {
    collections: Mutex<HashMap<String, Collection>>,
}

impl MemoryStore {
    /// An empty store with `collections`.
    pub fn new(collections: &[CollectionSpec]) -> MemoryStore {
        let map = collections
            .iter()
            .map(|c| {
                (
                    c.name.to_string(),
                    Collection {
                        unique: c.unique,
                        ..Default::default()
                    },
                )
            })
            .collect();
        MemoryStore {
            collections: Mutex::new(map),
        }
    }

    fn with<T>(
        &self,
        name: &str,
        f: impl FnOnce(&mut Collection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut all = self
            .collections
            .lock()
            .map_err(|_| StoreError::Internal("memory store lock poisoned".into()))?;
        let c = all
            .get_mut(name)
            .ok_or_else(|| StoreError::Internal(format!("unknown collection {name}")))?;
        f(c)
    }
}

#[async_trait]
impl Store for MemoryStore {
    fn kind(&self) -> &'static str {
        "memory"
    }

    async fn insert(&self, collection: &str, doc: Doc) -> Result<(), StoreError> {
        self.with(collection, |c| {
            c.check_unique(&doc)?;
            c.index(&doc, true);
            c.docs.insert(doc_id(&doc).to_string(), doc);
            Ok(())
        })
    }

    async fn get(&self, collection: &str, id: &str) -> Result<Option<Doc>, StoreError> {
        self.with(collection, |c| Ok(c.docs.get(id).cloned()))
    }

    async fn list(
        &self,
        collection: &str,
        filter: &Filter,
        page: Page,
    ) -> Result<Listing, StoreError> {
        self.with(collection, |c| {
            let mut total = 0u64;
            let mut items = Vec::new();
            for d in c.docs.values().filter(|d| filter.matches(d)) {
                if total >= page.offset && (items.len() as u64) < page.limit {
                    items.push(d.clone());
                }
                total += 1;
            }
            Ok(Listing { items, total })
        })
    }

    async fn update(
        &self,
        collection: &str,
        id: &str,
        expect: &Filter,
        change: &Change,
    ) -> Result<Outcome, StoreError> {
        self.with(collection, |c| {
            let mut next = match admit(c.docs.get(id).cloned(), expect) {
                Ok(doc) => doc,
                Err(outcome) => return Ok(outcome),
            };
            change.apply(&mut next);
            c.check_unique(&next)?;
            let old = c.docs.insert(id.to_string(), next.clone());
            if let Some(old) = old {
                c.index(&old, false);
            }
            c.index(&next, true);
            Ok(Outcome::Done(next))
        })
    }

    async fn delete(
        &self,
        collection: &str,
        id: &str,
        expect: &Filter,
    ) -> Result<Outcome, StoreError> {
        self.with(collection, |c| {
            if let Err(outcome) = admit(c.docs.get(id).cloned(), expect) {
                return Ok(outcome);
            }
            let gone = c.docs.remove(id).expect("present under the lock");
            c.index(&gone, false);
            Ok(Outcome::Done(gone))
        })
    }

    async fn ping(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn memory_store_passes_the_store_conformance_checks() {
        conformance::run(Arc::new(MemoryStore::new(&[conformance::SPEC]))).await;
    }
}
