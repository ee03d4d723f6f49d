//! The embedded backend: one redb file per service. Every write is one redb write transaction
//! committed with `Durability::Immediate` (fsync before the call returns), so an acknowledged write
//! survives a crash. redb has one writer at a time, which is what makes a conditional update atomic:
//! the condition is read and the change written inside the same transaction.
//!
//! Layout: table `<collection>` maps id → JSON bytes; table `<collection>#<field>` maps a unique
//! field's value (its JSON) → id. redb calls block, so each runs on tokio's blocking pool.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use redb::{
    Database, Durability, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition,
};

use super::*;

/// The embedded redb store.
pub struct EmbeddedStore {
    db: Arc<Database>,
    specs: Vec<CollectionSpec>,
    path: std::path::PathBuf,
}

fn internal(e: impl fmt::Display) -> StoreError {
    StoreError::Internal(e.to_string())
}

fn docs_table(name: &str) -> TableDefinition<'_, &'static str, &'static [u8]> {
    TableDefinition::new(name)
}

fn unique_table(name: &str) -> TableDefinition<'_, &'static str, &'static str> {
    TableDefinition::new(name)
}

fn decode(bytes: &[u8]) -> Result<Doc, StoreError> {
    serde_json::from_slice(bytes).map_err(internal)
}

impl EmbeddedStore {
    /// Opens (or creates) the database file at `path` with `collections`; `cache_bytes` caps redb's
    /// cache (its default when `None`).
    pub async fn open(
        path: &Path,
        collections: &[CollectionSpec],
        cache_bytes: Option<u64>,
    ) -> Result<EmbeddedStore, StoreError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| internal(format!("creating {}: {e}", dir.display())))?;
        }
        let file = path.to_path_buf();
        let path = path.to_path_buf();
        let specs = collections.to_vec();
        let setup = specs.clone();
        let db = tokio::task::spawn_blocking(move || -> Result<Database, StoreError> {
            let mut builder = Database::builder();
            if let Some(bytes) = cache_bytes {
                builder.set_cache_size(usize::try_from(bytes).unwrap_or(usize::MAX));
            }
            let db = builder
                .create(&path)
                .map_err(|e| internal(format!("opening {}: {e}", path.display())))?;
            let tx = db.begin_write().map_err(internal)?;
            for spec in &setup {
                tx.open_table(docs_table(spec.name)).map_err(internal)?;
                for field in spec.unique {
                    let name = format!("{}#{field}", spec.name);
                    tx.open_table(unique_table(&name)).map_err(internal)?;
                }
            }
            tx.commit().map_err(internal)?;
            Ok(db)
        })
        .await
        .map_err(internal)??;
        Ok(EmbeddedStore {
            db: Arc::new(db),
            specs,
            path: file,
        })
    }

    fn spec(&self, collection: &str) -> Result<CollectionSpec, StoreError> {
        self.specs
            .iter()
            .find(|s| s.name == collection)
            .copied()
            .ok_or_else(|| internal(format!("unknown collection {collection}")))
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Database) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || f(&db))
            .await
            .map_err(internal)?
    }

    /// Runs `f` in one durable write transaction; it returns whether to commit.
    async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&redb::WriteTransaction) -> Result<(T, bool), StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.blocking(move |db| {
            let mut tx = db.begin_write().map_err(internal)?;
            tx.set_durability(Durability::Immediate).map_err(internal)?;
            let (out, commit) = f(&tx)?;
            if commit {
                tx.commit().map_err(internal)?;
            } else {
                tx.abort().map_err(internal)?;
            }
            Ok(out)
        })
        .await
    }
}

/// Moves a document's unique keys from `old` to `new` inside `tx`, refusing a taken value.
fn reindex(
    tx: &redb::WriteTransaction,
    spec: &CollectionSpec,
    old: Option<&Doc>,
    new: Option<&Doc>,
) -> Result<(), StoreError> {
    for field in spec.unique {
        let name = format!("{}#{field}", spec.name);
        let mut t = tx.open_table(unique_table(&name)).map_err(internal)?;
        let old_key = old.and_then(|d| unique_key(d, field));
        let new_key = new.and_then(|d| unique_key(d, field));
        if old_key == new_key {
            continue;
        }
        if let Some(k) = &new_key {
            let id = new.map(doc_id).unwrap_or("");
            let owner = t
                .get(k.as_str())
                .map_err(internal)?
                .map(|g| g.value().to_string());
            if owner.is_some_and(|o| o != id) {
                return Err(StoreError::Duplicate {
                    field: field.to_string(),
                    value: k.clone(),
                });
            }
            t.insert(k.as_str(), id).map_err(internal)?;
        }
        if let Some(k) = &old_key {
            t.remove(k.as_str()).map_err(internal)?;
        }
    }
    Ok(())
}

#[async_trait]
impl Store for EmbeddedStore {
    fn kind(&self) -> &'static str {
        "embedded"
    }

    async fn insert(&self, collection: &str, doc: Doc) -> Result<(), StoreError> {
        let spec = self.spec(collection)?;
        self.write(move |tx| {
            reindex(tx, &spec, None, Some(&doc))?;
            let bytes = serde_json::to_vec(&doc).map_err(internal)?;
            tx.open_table(docs_table(spec.name))
                .map_err(internal)?
                .insert(doc_id(&doc), bytes.as_slice())
                .map_err(internal)?;
            Ok(((), true))
        })
        .await
    }

    async fn get(&self, collection: &str, id: &str) -> Result<Option<Doc>, StoreError> {
        let spec = self.spec(collection)?;
        let id = id.to_string();
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(internal)?;
            let t = tx.open_table(docs_table(spec.name)).map_err(internal)?;
            let found = t.get(id.as_str()).map_err(internal)?;
            found.map(|g| decode(g.value())).transpose()
        })
        .await
    }

    async fn list(
        &self,
        collection: &str,
        filter: &Filter,
        page: Page,
    ) -> Result<Listing, StoreError> {
        let spec = self.spec(collection)?;
        let filter = filter.clone();
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(internal)?;
            let t = tx.open_table(docs_table(spec.name)).map_err(internal)?;
            let mut items = Vec::new();
            if filter.0.is_empty() {
                // No filter: the total is the table's length and only the page is decoded.
                let total = t.len().map_err(internal)?;
                for entry in t
                    .iter()
                    .map_err(internal)?
                    .skip(page.offset as usize)
                    .take(page.limit as usize)
                {
                    let (_, v) = entry.map_err(internal)?;
                    items.push(decode(v.value())?);
                }
                return Ok(Listing { items, total });
            }
            let mut total = 0u64;
            for entry in t.iter().map_err(internal)? {
                let (_, v) = entry.map_err(internal)?;
                let d = decode(v.value())?;
                if filter.matches(&d) {
                    if total >= page.offset && (items.len() as u64) < page.limit {
                        items.push(d);
                    }
                    total += 1;
                }
            }
            Ok(Listing { items, total })
        })
        .await
    }

    async fn update(
        &self,
        collection: &str,
        id: &str,
        expect: &Filter,
        change: &Change,
    ) -> Result<Outcome, StoreError> {
        let spec = self.spec(collection)?;
        let (id, expect, change) = (id.to_string(), expect.clone(), change.clone());
        self.write(move |tx| {
            let mut t = tx.open_table(docs_table(spec.name)).map_err(internal)?;
            let found = t
                .get(id.as_str())
                .map_err(internal)?
                .map(|g| decode(g.value()))
                .transpose()?;
            let current = match admit(found, &expect) {
                Ok(doc) => doc,
                Err(outcome) => return Ok((outcome, false)),
            };
            let mut next = current.clone();
            change.apply(&mut next);
            reindex(tx, &spec, Some(&current), Some(&next))?;
            let bytes = serde_json::to_vec(&next).map_err(internal)?;
            t.insert(id.as_str(), bytes.as_slice()).map_err(internal)?;
            Ok((Outcome::Done(next), true))
        })
        .await
    }

    async fn delete(
        &self,
        collection: &str,
        id: &str,
        expect: &Filter,
    ) -> Result<Outcome, StoreError> {
        let spec = self.spec(collection)?;
        let (id, expect) = (id.to_string(), expect.clone());
        self.write(move |tx| {
            let mut t = tx.open_table(docs_table(spec.name)).map_err(internal)?;
            let found = t
                .get(id.as_str())
                .map_err(internal)?
                .map(|g| decode(g.value()))
                .transpose()?;
            let current = match admit(found, &expect) {
                Ok(doc) => doc,
                Err(outcome) => return Ok((outcome, false)),
            };
            t.remove(id.as_str()).map_err(internal)?;
            reindex(tx, &spec, Some(&current), None)?;
            Ok((Outcome::Done(current), true))
        })
        .await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        Ok(())
    }

    async fn size_on_disk(&self) -> Result<Option<u64>, StoreError> {
        let meta = std::fs::metadata(&self.path)
            .map_err(|e| internal(format!("reading {}: {e}", self.path.display())))?;
        Ok(Some(meta.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn embedded_store_passes_the_store_conformance_checks() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(&dir.path().join("t.redb"), &[conformance::SPEC], None)
            .await
            .unwrap();
        conformance::run(Arc::new(store)).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn embedded_store_keeps_documents_across_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.redb");
        let id = new_id();
        {
            let store = EmbeddedStore::open(&path, &[conformance::SPEC], None)
                .await
                .unwrap();
            let doc = serde_json::json!({"id": id, "number": 7})
                .as_object()
                .cloned()
                .unwrap();
            store.insert("things", doc).await.unwrap();
        }
        let store = EmbeddedStore::open(&path, &[conformance::SPEC], None)
            .await
            .unwrap();
        assert_eq!(
            store.get("things", &id).await.unwrap().unwrap()["number"],
            serde_json::json!(7)
        );
    }
}
