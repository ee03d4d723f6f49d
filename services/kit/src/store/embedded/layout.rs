//! The tables of an embedded store file, and bringing them in step with the collections on open.
//!
//! For a collection `c`:
//! - `c`: id → the document's JSON bytes;
//! - `c#f` for each unique field `f`: the value's key → the id holding it;
//! - `c@f` for each indexed field `f`: (the value's key, id) → (), so one value's ids lie together,
//!   in id order, and a list walks them a page at a time;
//! - `c%f`: the value's key → how many documents hold it (exact, kept in the same transaction as
//!   the index, so a list's total is one lookup per value).
//!
//! Value keys are [`keys::index_key`]s; a missing field is keyed `null`. The table `$brigade.meta`
//! records which unique and index tables the file holds. On open, a table the collections ask for
//! but the meta table does not list (a file written before indexes existed, or a field newly
//! declared) is built from the documents, and one no longer asked for is dropped, so an index is
//! never read unless every write since it was built kept it in step.

use std::collections::{HashMap, HashSet};

use redb::{ReadableTable, TableDefinition, WriteTransaction};

use super::super::keys::{self, peek_fields};
use super::super::{CollectionSpec, StoreError};
use super::internal;

/// The documents of a collection: id → JSON bytes.
pub(super) fn docs_table(name: &str) -> TableDefinition<'_, &'static str, &'static [u8]> {
    TableDefinition::new(name)
}

/// A unique field's values: value key → id.
pub(super) fn unique_table(name: &str) -> TableDefinition<'_, &'static str, &'static str> {
    TableDefinition::new(name)
}

/// An indexed field's entries: (value key, id) → ().
pub(super) fn index_table(name: &str) -> TableDefinition<'_, (&'static str, &'static str), ()> {
    TableDefinition::new(name)
}

/// An indexed field's counts: value key → documents holding it.
pub(super) fn count_table(name: &str) -> TableDefinition<'_, &'static str, u64> {
    TableDefinition::new(name)
}

/// What the file holds besides documents: `unique\t<c>\t<f>` or `index\t<c>\t<f>` → "1".
const META: TableDefinition<'static, &'static str, &'static str> =
    TableDefinition::new("$brigade.meta");

/// An indexed field and the names of its tables.
#[derive(Debug)]
pub(super) struct IndexNames {
    /// The field.
    pub(super) field: &'static str,
    /// Its entries' table.
    pub(super) entries: String,
    /// Its counts' table.
    pub(super) counts: String,
}

/// A collection and the names of its tables, worked out once.
#[derive(Debug)]
pub(super) struct Layout {
    /// The collection.
    pub(super) spec: CollectionSpec,
    /// Each unique field and its table's name.
    pub(super) unique: Vec<(&'static str, String)>,
    /// Each indexed field and its tables' names.
    pub(super) indexed: Vec<IndexNames>,
}

impl Layout {
    /// The layout of `spec`.
    pub(super) fn new(spec: CollectionSpec) -> Layout {
        Layout {
            spec,
            unique: spec
                .unique
                .iter()
                .map(|f| (*f, format!("{}#{f}", spec.name)))
                .collect(),
            indexed: spec
                .indexed
                .iter()
                .map(|f| IndexNames {
                    field: f,
                    entries: format!("{}@{f}", spec.name),
                    counts: format!("{}%{f}", spec.name),
                })
                .collect(),
        }
    }

    /// The index of `field`, if it has one.
    pub(super) fn index(&self, field: &str) -> Option<&IndexNames> {
        self.indexed.iter().find(|i| i.field == field)
    }
}

fn meta_key(kind: &str, collection: &str, field: &str) -> String {
    format!("{kind}\t{collection}\t{field}")
}

/// Creates what is missing and drops what is stale, inside `tx`: document tables, unique and index
/// tables (built from the documents when the meta table does not list them).
pub(super) fn prepare(tx: &WriteTransaction, layouts: &[Layout]) -> Result<(), StoreError> {
    let recorded: HashSet<String> = {
        let meta = tx.open_table(META).map_err(internal)?;
        let entries = meta.iter().map_err(internal)?;
        entries
            .map(|e| e.map(|(k, _)| k.value().to_string()).map_err(internal))
            .collect::<Result<_, _>>()?
    };
    let mut wanted = HashSet::new();
    for layout in layouts {
        tx.open_table(docs_table(layout.spec.name))
            .map_err(internal)?;
        let mut build_unique = Vec::new();
        let mut build_index = Vec::new();
        for (field, table) in &layout.unique {
            let key = meta_key("unique", layout.spec.name, field);
            if !recorded.contains(&key) {
                build_unique.push((*field, table.as_str()));
            }
            wanted.insert(key);
        }
        for names in &layout.indexed {
            let key = meta_key("index", layout.spec.name, names.field);
            if !recorded.contains(&key) {
                build_index.push(names);
            }
            wanted.insert(key);
        }
        build(tx, layout, &build_unique, &build_index)?;
    }
    let mut meta = tx.open_table(META).map_err(internal)?;
    for stale in recorded.difference(&wanted) {
        let mut parts = stale.split('\t');
        let (kind, collection, field) = (parts.next(), parts.next(), parts.next());
        match (kind, collection, field) {
            (Some("unique"), Some(c), Some(f)) => {
                tx.delete_table(unique_table(&format!("{c}#{f}")))
                    .map_err(internal)?;
            }
            (Some("index"), Some(c), Some(f)) => {
                tx.delete_table(index_table(&format!("{c}@{f}")))
                    .map_err(internal)?;
                tx.delete_table(count_table(&format!("{c}%{f}")))
                    .map_err(internal)?;
            }
            _ => {}
        }
        meta.remove(stale.as_str()).map_err(internal)?;
    }
    for key in &wanted {
        meta.insert(key.as_str(), "1").map_err(internal)?;
    }
    Ok(())
}

/// Builds the given unique and index tables of `layout` afresh from its documents.
fn build(
    tx: &WriteTransaction,
    layout: &Layout,
    unique: &[(&'static str, &str)],
    indexes: &[&IndexNames],
) -> Result<(), StoreError> {
    if unique.is_empty() && indexes.is_empty() {
        return Ok(());
    }
    for (_, table) in unique {
        tx.delete_table(unique_table(table)).map_err(internal)?;
    }
    for names in indexes {
        tx.delete_table(index_table(&names.entries))
            .map_err(internal)?;
        tx.delete_table(count_table(&names.counts))
            .map_err(internal)?;
    }
    let fields: Vec<&str> = unique
        .iter()
        .map(|(f, _)| *f)
        .chain(indexes.iter().map(|n| n.field))
        .collect();
    // (field number, value key, id) for every document, read once.
    let mut seen: Vec<(usize, String, String)> = Vec::new();
    {
        let docs = tx
            .open_table(docs_table(layout.spec.name))
            .map_err(internal)?;
        for entry in docs.iter().map_err(internal)? {
            let (id, bytes) = entry.map_err(internal)?;
            let values = peek_fields(bytes.value(), &fields)?;
            for (i, v) in values.iter().enumerate() {
                seen.push((i, keys::index_key(v), id.value().to_string()));
            }
        }
    }
    for (i, (field, table)) in unique.iter().enumerate() {
        let mut t = tx.open_table(unique_table(table)).map_err(internal)?;
        for (_, key, id) in seen.iter().filter(|(n, k, _)| *n == i && k != "null") {
            if t.insert(key.as_str(), id.as_str())
                .map_err(internal)?
                .is_some()
            {
                return Err(StoreError::Internal(format!(
                    "cannot build the unique index of {}.{field}: the value {key} is held by \
                     several documents",
                    layout.spec.name
                )));
            }
        }
    }
    for (j, names) in indexes.iter().enumerate() {
        let i = unique.len() + j;
        let mut counts: HashMap<&str, u64> = HashMap::new();
        let mut t = tx
            .open_table(index_table(&names.entries))
            .map_err(internal)?;
        for (_, key, id) in seen.iter().filter(|(n, _, _)| *n == i) {
            t.insert((key.as_str(), id.as_str()), ())
                .map_err(internal)?;
            *counts.entry(key.as_str()).or_default() += 1;
        }
        let mut c = tx
            .open_table(count_table(&names.counts))
            .map_err(internal)?;
        for (key, n) in counts {
            c.insert(key, n).map_err(internal)?;
        }
    }
    Ok(())
}
