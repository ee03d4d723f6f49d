//! The memory backend: maps behind one lock per collection. Keeps nothing across restarts; the
//! baseline that shows what a runtime does without a database.
//!
//! Each document is kept twice, as a map (to check conditions and apply changes) and as its JSON
//! bytes (handed out by [`Store::get_json`] and [`Store::list_json`] without encoding). Every
//! `indexed` field has an index, value key → ids in id order, whose sets also give exact per-value
//! counts, so a filtered list costs its page (plus its offset), not the collection: a list on a
//! growing collection stays as fast as on a small one, and a benchmark run does not slow down the
//! next one by leaving documents behind. Nothing else grows per request: the maps grow with the
//! documents and shrink with them (an emptied value's set is removed).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;

use super::keys::{encode_doc, field_key, MergeIds};
use super::*;

/// The memory backend's registry entry (always compiled in: it needs no dependency).
pub(crate) const BACKEND: Backend = Backend {
    name: "memory",
    about: "in the server's process, nothing kept",
    durable: false,
    needs_uri: false,
    open,
};

fn open<'a>(
    _database: &'a str,
    collections: &'a [CollectionSpec],
    _config: &'a StoreConfig,
) -> BoxFuture<'a, Result<Arc<dyn Store>, StoreError>> {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new(collections));
    Box::pin(std::future::ready(Ok(store)))
}

/// A stored document: the map and its JSON bytes.
struct Entry {
    doc: Doc,
    json: Bytes,
}

impl Entry {
    fn new(doc: Doc) -> Arc<Entry> {
        let json = encode_doc(&doc);
        Arc::new(Entry { doc, json })
    }
}

struct Collection {
    spec: CollectionSpec,
    docs: BTreeMap<String, Arc<Entry>>,
    /// unique field → value key → id
    taken: HashMap<&'static str, HashMap<String, String>>,
    /// indexed field → value key → ids (their number is the value's count)
    indexes: HashMap<&'static str, HashMap<String, BTreeSet<String>>>,
}

impl Collection {
    fn new(spec: CollectionSpec) -> Collection {
        Collection {
            spec,
            docs: BTreeMap::new(),
            taken: spec.unique.iter().map(|f| (*f, HashMap::new())).collect(),
            indexes: spec.indexed.iter().map(|f| (*f, HashMap::new())).collect(),
        }
    }

    /// Refuses `doc` if one of its unique values is held by another document.
    fn check_unique(&self, doc: &Doc) -> Result<(), StoreError> {
        for field in self.spec.unique {
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

    /// Adds (`add`) or removes `doc`'s entries in the unique maps and the indexes.
    fn index(&mut self, doc: &Doc, add: bool) {
        let id = doc_id(doc);
        for field in self.spec.unique {
            if let Some(key) = unique_key(doc, field) {
                let m = self.taken.entry(field).or_default();
                if add {
                    m.insert(key, id.to_string());
                } else if m.get(&key).is_some_and(|owner| owner == id) {
                    m.remove(&key);
                }
            }
        }
        for field in self.spec.indexed {
            let key = field_key(doc, field);
            let index = self.indexes.entry(field).or_default();
            if add {
                index.entry(key).or_default().insert(id.to_string());
            } else if let Some(ids) = index.get_mut(&key) {
                ids.remove(id);
                if ids.is_empty() {
                    index.remove(&key);
                }
            }
        }
    }

    fn store(&mut self, doc: Doc) -> Arc<Entry> {
        self.index(&doc, true);
        let entry = Entry::new(doc);
        let id = doc_id(&entry.doc).to_string();
        self.docs.insert(id, entry.clone());
        entry
    }

    /// Refuses `doc` if its id or one of its unique values is taken, by the store or by an earlier
    /// document of the same batch (`batch` records what the batch takes).
    fn check_new(
        &self,
        doc: &Doc,
        batch: &mut HashSet<(&'static str, String)>,
    ) -> Result<(), StoreError> {
        let id = doc_id(doc);
        if self.docs.contains_key(id) || !batch.insert(("id", id.to_string())) {
            return Err(StoreError::Duplicate {
                field: "id".into(),
                value: Value::from(id).to_string(),
            });
        }
        self.check_unique(doc)?;
        for field in self.spec.unique {
            if let Some(key) = unique_key(doc, field) {
                if !batch.insert((field, key.clone())) {
                    return Err(StoreError::Duplicate {
                        field: field.to_string(),
                        value: key,
                    });
                }
            }
        }
        Ok(())
    }

    /// The entries of the page of documents matching `filter`, and how many match in all.
    ///
    /// With no condition on an indexed field it scans. Otherwise it walks the index of the indexed
    /// condition with the smallest count (an `In` merges its values' id sets in id order); with that
    /// condition alone the total is that count and only the page (after its offset) is visited.
    /// Other conditions are checked on the candidate documents (in memory, so without decoding):
    /// that costs one visit per candidate of the smallest indexed set.
    fn select(&self, filter: &Filter, page: Page) -> (Vec<Arc<Entry>>, u64) {
        let (offset, limit) = (page.offset as usize, page.limit as usize);
        if filter.0.is_empty() {
            let items = self.docs.values().skip(offset).take(limit).cloned();
            return (items.collect(), self.docs.len() as u64);
        }
        let best = filter
            .0
            .iter()
            .enumerate()
            .filter_map(|(i, (field, cond))| {
                let index = self.indexes.get(field.as_str())?;
                let sets: Vec<&BTreeSet<String>> = cond
                    .values()
                    .into_iter()
                    .filter_map(|v| index.get(&keys::index_key(v)))
                    .collect();
                let count: u64 = sets.iter().map(|s| s.len() as u64).sum();
                Some((count, i, sets))
            })
            .min_by_key(|(count, i, _)| (*count, *i));
        let Some((count, chosen, sets)) = best else {
            return self.scan(filter, page);
        };
        let ids = MergeIds::new(
            sets.into_iter()
                .map(|s| s.iter().map(|id| Ok::<_, StoreError>(id.clone()))),
        )
        .filter_map(Result::ok)
        .filter_map(|id| self.docs.get(&id));
        if filter.0.len() == 1 {
            return (ids.skip(offset).take(limit).cloned().collect(), count);
        }
        let rest: Vec<&(String, Cond)> = filter
            .0
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != chosen)
            .map(|(_, c)| c)
            .collect();
        let mut items = Vec::new();
        let mut total = 0u64;
        for entry in ids {
            let ok = rest
                .iter()
                .all(|(f, c)| c.holds(entry.doc.get(f).unwrap_or(&Value::Null)));
            if ok {
                if page.wants(total, items.len()) {
                    items.push(entry.clone());
                }
                total += 1;
            }
        }
        (items, total)
    }

    fn scan(&self, filter: &Filter, page: Page) -> (Vec<Arc<Entry>>, u64) {
        let mut items = Vec::new();
        let mut total = 0u64;
        for entry in self.docs.values().filter(|e| filter.matches(&e.doc)) {
            if page.wants(total, items.len()) {
                items.push(entry.clone());
            }
            total += 1;
        }
        (items, total)
    }
}

/// The memory store.
pub struct MemoryStore {
    collections: HashMap<String, RwLock<Collection>>,
}

impl MemoryStore {
    /// An empty store with `collections`.
    pub fn new(collections: &[CollectionSpec]) -> MemoryStore {
        MemoryStore {
            collections: collections
                .iter()
                .map(|c| (c.name.to_string(), RwLock::new(Collection::new(*c))))
                .collect(),
        }
    }

    fn collection(&self, name: &str) -> Result<&RwLock<Collection>, StoreError> {
        self.collections
            .get(name)
            .ok_or_else(|| StoreError::Internal(format!("unknown collection {name}")))
    }

    fn read<T>(&self, name: &str, f: impl FnOnce(&Collection) -> T) -> Result<T, StoreError> {
        let c = self
            .collection(name)?
            .read()
            .map_err(|_| StoreError::Internal("memory store lock poisoned".into()))?;
        Ok(f(&c))
    }

    fn write<T>(
        &self,
        name: &str,
        f: impl FnOnce(&mut Collection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut c = self
            .collection(name)?
            .write()
            .map_err(|_| StoreError::Internal("memory store lock poisoned".into()))?;
        f(&mut c)
    }
}

#[async_trait]
impl Store for MemoryStore {
    fn kind(&self) -> &'static str {
        BACKEND.name
    }

    async fn insert(&self, collection: &str, doc: Doc) -> Result<(), StoreError> {
        self.insert_many(collection, vec![doc]).await
    }

    /// Inserts all of `docs` or, when one clashes, none of them.
    async fn insert_many(&self, collection: &str, docs: Vec<Doc>) -> Result<(), StoreError> {
        self.write(collection, |c| {
            let mut batch = HashSet::new();
            for doc in &docs {
                c.check_new(doc, &mut batch)?;
            }
            for doc in docs {
                c.store(doc);
            }
            Ok(())
        })
    }

    async fn get(&self, collection: &str, id: &str) -> Result<Option<Doc>, StoreError> {
        self.read(collection, |c| c.docs.get(id).map(|e| e.doc.clone()))
    }

    async fn get_json(&self, collection: &str, id: &str) -> Result<Option<Bytes>, StoreError> {
        self.read(collection, |c| c.docs.get(id).map(|e| e.json.clone()))
    }

    async fn list(
        &self,
        collection: &str,
        filter: &Filter,
        page: Page,
    ) -> Result<Listing, StoreError> {
        let (items, total) = self.read(collection, |c| c.select(filter, page))?;
        Ok(Listing {
            items: items.iter().map(|e| e.doc.clone()).collect(),
            total,
        })
    }

    async fn list_json(
        &self,
        collection: &str,
        filter: &Filter,
        page: Page,
    ) -> Result<JsonListing, StoreError> {
        let (items, total) = self.read(collection, |c| c.select(filter, page))?;
        Ok(JsonListing {
            items: items.iter().map(|e| e.json.clone()).collect(),
            total,
        })
    }

    async fn update(
        &self,
        collection: &str,
        id: &str,
        expect: &Filter,
        change: &Change,
    ) -> Result<Outcome, StoreError> {
        if change.set.iter().any(|(k, _)| k == "id") {
            return Err(StoreError::Internal("a document's id cannot change".into()));
        }
        self.write(collection, |c| {
            let current = c.docs.get(id).map(|e| e.doc.clone());
            let mut next = match admit(current, expect) {
                Ok(doc) => doc,
                Err(outcome) => return Ok(outcome),
            };
            change.apply(&mut next);
            c.check_unique(&next)?;
            if let Some(old) = c.docs.remove(id) {
                c.index(&old.doc, false);
            }
            Ok(Outcome::Done(c.store(next).doc.clone()))
        })
    }

    async fn delete(
        &self,
        collection: &str,
        id: &str,
        expect: &Filter,
    ) -> Result<Outcome, StoreError> {
        self.write(collection, |c| {
            if let Err(outcome) = admit(c.docs.get(id).map(|e| e.doc.clone()), expect) {
                return Ok(outcome);
            }
            let Some(gone) = c.docs.remove(id) else {
                return Ok(Outcome::Missing);
            };
            c.index(&gone.doc, false);
            Ok(Outcome::Done(gone.doc.clone()))
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

    #[tokio::test]
    async fn emptied_index_values_leave_nothing_behind() {
        let store = MemoryStore::new(&[conformance::SPEC]);
        for n in 0..50 {
            let doc =
                serde_json::json!({"id": format!("{n:03}"), "number": n, "state": format!("s{n}")});
            store
                .insert("things", doc.as_object().cloned().unwrap())
                .await
                .unwrap();
        }
        for n in 0..50 {
            let id = format!("{n:03}");
            store.delete("things", &id, &Filter::all()).await.unwrap();
        }
        let c = store.collections["things"].read().unwrap();
        assert!(c.docs.is_empty());
        assert!(
            c.indexes["state"].is_empty(),
            "{:?}",
            c.indexes["state"].len()
        );
        assert!(c.taken["number"].is_empty());
    }
}
