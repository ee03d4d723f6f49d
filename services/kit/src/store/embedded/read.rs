//! Reads of the embedded store: a document's stored bytes, and lists planned on the indexes.
//!
//! A list picks one of four plans ([`plan`]):
//! - no condition: the collection in id order; the total is the table's length;
//! - conditions of which at least one is on an indexed field: that field's index is walked in id
//!   order for the condition's values (an `In` merges its values' runs, each already in id
//!   order). The indexed condition with the smallest count is chosen, its count read from the
//!   count table: one lookup per value;
//!     - alone, the total is that count and only the page's entries (after skipping the offset's)
//!       are visited: a page costs `offset + limit` index steps and `limit` document reads,
//!       whatever the collection's size;
//!     - with other conditions, every candidate of the chosen index is checked: a condition on
//!       another indexed field by a point lookup of (value, id) in that field's index, O(log n)
//!       and no document read; a condition on an unindexed field by reading the document and
//!       parsing out just that field. The cost is then proportional to the smallest indexed
//!       count, not the collection; only the page's documents are handed out whole;
//!   - an indexed value nobody holds: an empty page at the cost of one lookup;
//! - conditions on unindexed fields only: a scan of the collection, each document parsed for the
//!   filter's fields alone.

use bytes::Bytes;
use redb::{
    Database, ReadOnlyTable, ReadTransaction, ReadableDatabase, ReadableTable,
    ReadableTableMetadata,
};

use super::super::keys::{index_key, peek_fields, MergeIds};
use super::super::{Cond, Filter, JsonListing, Page, StoreError};
use super::internal;
use super::layout::{count_table, docs_table, index_table, Layout};

type IndexTable = ReadOnlyTable<(&'static str, &'static str), ()>;
type DocsTable = ReadOnlyTable<&'static str, &'static [u8]>;

/// The stored bytes of document `id`.
pub(super) fn get(db: &Database, layout: &Layout, id: &str) -> Result<Option<Bytes>, StoreError> {
    let tx = db.begin_read().map_err(internal)?;
    let t = tx
        .open_table(docs_table(layout.spec.name))
        .map_err(internal)?;
    let found = t.get(id).map_err(internal)?;
    Ok(found.map(|g| Bytes::copy_from_slice(g.value())))
}

/// How a list is answered.
#[derive(Debug)]
pub(super) enum Plan {
    /// No condition: the collection in id order.
    All,
    /// An indexed condition's values hold no document.
    Nothing,
    /// Walk the index of condition `cond` for the value keys `keys`, which `count` documents hold.
    Index {
        /// The condition's position in the filter.
        cond: usize,
        /// Its values' keys, each once.
        keys: Vec<String>,
        /// How many documents hold them.
        count: u64,
    },
    /// No indexed condition: read every document.
    Scan,
}

impl Plan {
    /// Roughly how many entries the plan visits for `page` of `filter`: what decides whether a
    /// list may run inline.
    pub(super) fn work(&self, filter: &Filter, page: Page) -> u64 {
        match self {
            Plan::Nothing => 0,
            Plan::All => page.offset.saturating_add(page.limit),
            Plan::Index { count, .. } if filter.0.len() == 1 => {
                page.offset.saturating_add(page.limit).min(*count)
            }
            Plan::Index { count, .. } => *count,
            Plan::Scan => u64::MAX,
        }
    }
}

/// Chooses how to answer `filter` (reading the counts of its indexed conditions).
pub(super) fn plan(
    tx: &ReadTransaction,
    layout: &Layout,
    filter: &Filter,
) -> Result<Plan, StoreError> {
    if filter.0.is_empty() {
        return Ok(Plan::All);
    }
    let mut best: Option<Plan> = None;
    for (i, (field, cond)) in filter.0.iter().enumerate() {
        let Some(names) = layout.index(field) else {
            continue;
        };
        let counts = tx
            .open_table(count_table(&names.counts))
            .map_err(internal)?;
        let keys: Vec<String> = cond.values().into_iter().map(index_key).collect();
        let mut count = 0u64;
        for key in &keys {
            count += counts
                .get(key.as_str())
                .map_err(internal)?
                .map_or(0, |g| g.value());
        }
        if count == 0 {
            return Ok(Plan::Nothing);
        }
        if !matches!(&best, Some(Plan::Index { count: c, .. }) if *c <= count) {
            best = Some(Plan::Index {
                cond: i,
                keys,
                count,
            });
        }
    }
    Ok(best.unwrap_or(Plan::Scan))
}

/// Answers `page` of `filter` by `plan`.
pub(super) fn run(
    tx: &ReadTransaction,
    layout: &Layout,
    filter: &Filter,
    page: Page,
    plan: &Plan,
) -> Result<JsonListing, StoreError> {
    let docs = tx
        .open_table(docs_table(layout.spec.name))
        .map_err(internal)?;
    let (offset, limit) = (page.offset as usize, page.limit as usize);
    match plan {
        Plan::Nothing => Ok(JsonListing {
            items: Vec::new(),
            total: 0,
        }),
        Plan::All => {
            let total = docs.len().map_err(internal)?;
            let mut items = Vec::new();
            for entry in docs.iter().map_err(internal)?.skip(offset).take(limit) {
                let (_, v) = entry.map_err(internal)?;
                items.push(Bytes::copy_from_slice(v.value()));
            }
            Ok(JsonListing { items, total })
        }
        Plan::Scan => scan(&docs, filter, page),
        Plan::Index { cond, keys, count } => {
            let (field, _) = &filter.0[*cond];
            let names = layout
                .index(field)
                .ok_or_else(|| internal(format!("no index on {field}")))?;
            let index = tx
                .open_table(index_table(&names.entries))
                .map_err(internal)?;
            let walks = keys
                .iter()
                .map(|k| walk(&index, k))
                .collect::<Result<Vec<_>, _>>()?;
            let ids = MergeIds::new(walks);
            if filter.0.len() == 1 {
                let mut items = Vec::new();
                for id in ids.skip(offset).take(limit) {
                    items.push(stored(&docs, &id?)?);
                }
                return Ok(JsonListing {
                    items,
                    total: *count,
                });
            }
            let checks = Checks::new(tx, layout, filter, *cond)?;
            let mut items = Vec::new();
            let mut total = 0u64;
            for id in ids {
                let id = id?;
                if checks.pass(&docs, &id)? {
                    if page.wants(total, items.len()) {
                        items.push(stored(&docs, &id)?);
                    }
                    total += 1;
                }
            }
            Ok(JsonListing { items, total })
        }
    }
}

/// The ids holding value `key` in `index`, in id order.
fn walk(
    index: &IndexTable,
    key: &str,
) -> Result<impl Iterator<Item = Result<String, StoreError>>, StoreError> {
    let owned = key.to_string();
    let range = index.range::<(&str, &str)>((key, "")..).map_err(internal)?;
    Ok(range.map_while(move |entry| match entry {
        Err(e) => Some(Err(internal(e))),
        Ok((k, _)) => {
            let (value, id) = k.value();
            (value == owned).then(|| Ok(id.to_string()))
        }
    }))
}

fn stored(docs: &DocsTable, id: &str) -> Result<Bytes, StoreError> {
    let found = docs.get(id).map_err(internal)?;
    found
        .map(|g| Bytes::copy_from_slice(g.value()))
        .ok_or_else(|| internal(format!("index entry for missing document {id}")))
}

/// The conditions besides the walked one: indexed ones answered by point lookups, the others by
/// parsing just their fields out of the document.
struct Checks<'f> {
    /// (that field's index, its accepted value keys)
    indexed: Vec<(IndexTable, Vec<String>)>,
    /// unindexed fields and their conditions
    fields: Vec<&'f str>,
    conds: Vec<&'f Cond>,
}

impl<'f> Checks<'f> {
    fn new(
        tx: &ReadTransaction,
        layout: &Layout,
        filter: &'f Filter,
        walked: usize,
    ) -> Result<Checks<'f>, StoreError> {
        let mut checks = Checks {
            indexed: Vec::new(),
            fields: Vec::new(),
            conds: Vec::new(),
        };
        for (i, (field, cond)) in filter.0.iter().enumerate() {
            if i == walked {
                continue;
            }
            match layout.index(field) {
                Some(names) => {
                    let t = tx
                        .open_table(index_table(&names.entries))
                        .map_err(internal)?;
                    let keys = cond.values().into_iter().map(index_key).collect();
                    checks.indexed.push((t, keys));
                }
                None => {
                    checks.fields.push(field);
                    checks.conds.push(cond);
                }
            }
        }
        Ok(checks)
    }

    fn pass(&self, docs: &DocsTable, id: &str) -> Result<bool, StoreError> {
        for (index, keys) in &self.indexed {
            let mut held = false;
            for key in keys {
                if index.get((key.as_str(), id)).map_err(internal)?.is_some() {
                    held = true;
                    break;
                }
            }
            if !held {
                return Ok(false);
            }
        }
        if self.fields.is_empty() {
            return Ok(true);
        }
        let found = docs.get(id).map_err(internal)?;
        let Some(bytes) = found else {
            return Ok(false);
        };
        let values = peek_fields(bytes.value(), &self.fields)?;
        Ok(self.conds.iter().zip(&values).all(|(c, v)| c.holds(v)))
    }
}

fn scan(docs: &DocsTable, filter: &Filter, page: Page) -> Result<JsonListing, StoreError> {
    let fields: Vec<&str> = filter.0.iter().map(|(f, _)| f.as_str()).collect();
    let mut items = Vec::new();
    let mut total = 0u64;
    for entry in docs.iter().map_err(internal)? {
        let (_, v) = entry.map_err(internal)?;
        let values = peek_fields(v.value(), &fields)?;
        if filter.0.iter().zip(&values).all(|((_, c), v)| c.holds(v)) {
            if page.wants(total, items.len()) {
                items.push(Bytes::copy_from_slice(v.value()));
            }
            total += 1;
        }
    }
    Ok(JsonListing { items, total })
}
