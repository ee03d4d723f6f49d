//! What a caller asks of a store and what it gets back: filters, changes, pages, listings and the
//! outcome of a conditional write.

use bytes::Bytes;
use serde_json::Value;

use super::Doc;

/// A condition on one field.
#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    /// The field equals the value.
    Eq(Value),
    /// The field equals one of the values.
    In(Vec<Value>),
}

impl Cond {
    /// Whether a field whose value is `v` (`null` when missing) meets the condition.
    pub fn holds(&self, v: &Value) -> bool {
        match self {
            Cond::Eq(want) => v == want,
            Cond::In(wants) => wants.iter().any(|w| w == v),
        }
    }

    /// The values the condition accepts, each once (a value's [`super::keys::index_key`] decides
    /// sameness, as `==` on values does).
    pub fn values(&self) -> Vec<&Value> {
        match self {
            Cond::Eq(v) => vec![v],
            Cond::In(vs) => {
                let mut seen = std::collections::HashSet::new();
                vs.iter()
                    .filter(|v| seen.insert(super::keys::index_key(v)))
                    .collect()
            }
        }
    }
}

/// A conjunction of field conditions; the empty filter matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter(pub Vec<(String, Cond)>);

impl Filter {
    /// The empty filter.
    pub fn all() -> Filter {
        Filter::default()
    }

    /// Adds `field == value`.
    pub fn eq(mut self, field: &str, value: impl Into<Value>) -> Filter {
        self.0.push((field.to_string(), Cond::Eq(value.into())));
        self
    }

    /// Adds `field in values`.
    pub fn one_of(
        mut self,
        field: &str,
        values: impl IntoIterator<Item = impl Into<Value>>,
    ) -> Filter {
        self.0.push((
            field.to_string(),
            Cond::In(values.into_iter().map(Into::into).collect()),
        ));
        self
    }

    /// Whether `doc` meets every condition (missing fields are `null`).
    pub fn matches(&self, doc: &Doc) -> bool {
        self.0
            .iter()
            .all(|(field, cond)| cond.holds(doc.get(field).unwrap_or(&Value::Null)))
    }
}

/// A change to one document: fields to set, then values to append to array fields.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Change {
    /// Fields to set.
    pub set: Vec<(String, Value)>,
    /// Values appended, in order, to each named array field.
    pub push: Vec<(String, Vec<Value>)>,
}

impl Change {
    /// Adds `field = value`.
    pub fn set(mut self, field: &str, value: impl Into<Value>) -> Change {
        self.set.push((field.to_string(), value.into()));
        self
    }

    /// Adds an append of `values` to the array `field`.
    pub fn push(mut self, field: &str, values: Vec<Value>) -> Change {
        self.push.push((field.to_string(), values));
        self
    }

    /// Applies the change to `doc` in place (shared by the backends that change documents themselves).
    pub fn apply(&self, doc: &mut Doc) {
        for (k, v) in &self.set {
            doc.insert(k.clone(), v.clone());
        }
        for (k, vs) in &self.push {
            let slot = doc
                .entry(k.clone())
                .or_insert_with(|| Value::Array(Vec::new()));
            if !slot.is_array() {
                *slot = Value::Array(Vec::new());
            }
            if let Value::Array(a) = slot {
                a.extend(vs.iter().cloned());
            }
        }
    }
}

/// Which slice of a list to return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// Documents skipped.
    pub offset: u64,
    /// Documents returned at most.
    pub limit: u64,
}

impl Page {
    /// Whether the match numbered `n` (from 0, in id order) falls on this page, given how many
    /// items the page already holds.
    pub(crate) fn wants(&self, n: u64, held: usize) -> bool {
        n >= self.offset && (held as u64) < self.limit
    }

    /// The listing's total when this page, holding `items` matches, already tells it, so a backend
    /// that counts separately (MongoDB's `countDocuments`) need not: a short page is the last one,
    /// so the total is the offset plus what it holds — unless it is empty past the start, which
    /// says only that the matches end somewhere before the offset. `None`: count.
    pub fn total_from(&self, items: usize) -> Option<u64> {
        let items = items as u64;
        let short = items < self.limit;
        (short && (self.offset == 0 || items > 0)).then(|| self.offset.saturating_add(items))
    }
}

/// A page of documents and how many match in all.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// The documents of the page, ordered by id.
    pub items: Vec<Doc>,
    /// How many documents match the filter in all.
    pub total: u64,
}

/// A page of documents as their stored JSON bytes, and how many match in all: what a list endpoint
/// answers, without decoding a document only to encode it again.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonListing {
    /// Each document of the page as the JSON text of its object, ordered by id.
    pub items: Vec<Bytes>,
    /// How many documents match the filter in all.
    pub total: u64,
}

impl JsonListing {
    /// The listing as the API's list body, `{"items":[...],"total":N}`.
    pub fn body(&self) -> Vec<u8> {
        let size: usize = self.items.iter().map(|b| b.len() + 1).sum();
        let mut out = Vec::with_capacity(size + 32);
        out.extend_from_slice(b"{\"items\":[");
        for (i, item) in self.items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(item);
        }
        out.extend_from_slice(b"],\"total\":");
        out.extend_from_slice(self.total.to_string().as_bytes());
        out.push(b'}');
        out
    }

    /// Decodes every item into a document.
    pub fn decode(self) -> Result<Listing, super::StoreError> {
        let items = self
            .items
            .iter()
            .map(|b| super::keys::decode_doc(b))
            .collect::<Result<_, _>>()?;
        Ok(Listing {
            items,
            total: self.total,
        })
    }
}

impl From<Listing> for JsonListing {
    fn from(l: Listing) -> JsonListing {
        JsonListing {
            items: l.items.iter().map(super::keys::encode_doc).collect(),
            total: l.total,
        }
    }
}

/// The result of a conditional update or delete.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The condition held and the change was made; for an update, the document after it.
    Done(Doc),
    /// No document has that id.
    Missing,
    /// The document exists but the condition did not hold; it is returned as it is.
    Refused(Doc),
}

/// The first step of every conditional change a backend applies itself (memory, embedded): the
/// document must exist (else [`Outcome::Missing`]) and meet `expect` (else [`Outcome::Refused`] with
/// the document as it is). Returns the document to change when the change may go ahead.
pub(crate) fn admit(current: Option<Doc>, expect: &Filter) -> Result<Doc, Outcome> {
    match current {
        None => Err(Outcome::Missing),
        Some(doc) if !expect.matches(&doc) => Err(Outcome::Refused(doc)),
        Some(doc) => Ok(doc),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_json_listing_is_the_api_list_body() {
        let l = JsonListing {
            items: vec![
                Bytes::from_static(b"{\"id\":\"a\"}"),
                Bytes::from_static(b"{}"),
            ],
            total: 7,
        };
        let v: Value = serde_json::from_slice(&l.body()).unwrap();
        assert_eq!(v, json!({"items": [{"id": "a"}, {}], "total": 7}));
        let empty = JsonListing {
            items: vec![],
            total: 0,
        };
        assert_eq!(empty.body(), b"{\"items\":[],\"total\":0}");
    }

    #[test]
    fn a_short_page_tells_the_total_and_a_full_or_empty_later_one_does_not() {
        let page = |offset, limit| Page { offset, limit };
        // From the start: fewer than the limit is everything, none is zero.
        assert_eq!(page(0, 20).total_from(7), Some(7));
        assert_eq!(page(0, 20).total_from(0), Some(0));
        // A full page may have more behind it.
        assert_eq!(page(0, 20).total_from(20), None);
        assert_eq!(page(40, 20).total_from(20), None);
        // Later on, a short page that holds something is the last one.
        assert_eq!(page(40, 20).total_from(3), Some(43));
        // An empty page past the start says nothing about how many came before it.
        assert_eq!(page(40, 20).total_from(0), None);
        // A zero limit answers no items, so only a count can say.
        assert_eq!(page(0, 0).total_from(0), None);
        assert_eq!(page(u64::MAX, 5).total_from(1), Some(u64::MAX));
    }

    #[test]
    fn in_values_are_distinct_by_value() {
        let c = Cond::In(vec![json!("a"), json!(1), json!("a"), json!(1.0), json!(1)]);
        assert_eq!(c.values(), vec![&json!("a"), &json!(1), &json!(1.0)]);
    }
}
