//! How the memory and embedded backends index documents: the key a field's value is indexed under,
//! reading chosen fields straight from a stored document's bytes, and merging index walks in id
//! order.
//!
//! A value's key is its JSON text in one canonical form: object keys sorted (the workspace builds
//! `serde_json` with `preserve_order`, so two equal objects may print their keys in different
//! orders) and `-0.0` written as `0.0`. Two values get the same key exactly when they are `==`, so
//! an index lookup agrees with [`super::Filter::matches`]. A missing field is keyed as `null`, as
//! `matches` reads it, so `Eq(null)` finds documents that lack the field too.

use std::fmt;

use bytes::Bytes;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::{Doc, StoreError};

/// The key a value is indexed under (its canonical JSON text).
pub fn index_key(v: &Value) -> String {
    let mut out = String::new();
    write_key(v, &mut out);
    out
}

fn write_key(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<_> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(k.as_str()).to_string());
                out.push(':');
                write_key(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_key(v, out);
            }
            out.push(']');
        }
        Value::Number(n) if n.is_f64() && n.as_f64() == Some(0.0) => out.push_str("0.0"),
        other => out.push_str(&other.to_string()),
    }
}

/// The key `doc` is indexed under for `field` (`null` when the field is missing).
pub fn field_key(doc: &Doc, field: &str) -> String {
    index_key(doc.get(field).unwrap_or(&Value::Null))
}

/// Decodes a stored document.
pub fn decode_doc(bytes: &[u8]) -> Result<Doc, StoreError> {
    serde_json::from_slice(bytes)
        .map_err(|e| StoreError::Internal(format!("a stored document does not decode: {e}")))
}

/// Encodes a document as stored.
pub fn encode_doc(doc: &Doc) -> Bytes {
    // Encoding a map of JSON values cannot fail: its keys are strings and its numbers finite.
    Bytes::from(serde_json::to_vec(doc).unwrap_or_default())
}

/// The values of `fields` in the stored document `bytes` (`null` where missing), read without
/// building the rest of the document: other fields are skipped by the parser, not decoded.
pub fn peek_fields(bytes: &[u8], fields: &[&str]) -> Result<Vec<Value>, StoreError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    Peek { fields }
        .deserialize(&mut de)
        .map_err(|e| StoreError::Internal(format!("a stored document does not decode: {e}")))
}

struct Peek<'f> {
    fields: &'f [&'f str],
}

impl<'de> DeserializeSeed<'de> for Peek<'_> {
    type Value = Vec<Value>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Vec<Value>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Peek<'_> {
    type Value = Vec<Value>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<Value>, A::Error> {
        let mut found = vec![Value::Null; self.fields.len()];
        while let Some(slot) = map.next_key_seed(FieldSlot {
            fields: self.fields,
        })? {
            match slot {
                Some(i) => {
                    let v: Value = map.next_value()?;
                    // A field named twice gets the value in every slot.
                    for (j, f) in self.fields.iter().enumerate().skip(i + 1) {
                        if *f == self.fields[i] {
                            found[j] = v.clone();
                        }
                    }
                    found[i] = v;
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }
}

/// Reads a key and says which wanted field it is, without allocating for keys without escapes.
struct FieldSlot<'f> {
    fields: &'f [&'f str],
}

impl<'de> DeserializeSeed<'de> for FieldSlot<'_> {
    type Value = Option<usize>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for FieldSlot<'_> {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Option<usize>, E> {
        Ok(self.fields.iter().position(|f| *f == key))
    }
}

/// Merges iterators that each yield ids in ascending order into one ascending walk. The iterators
/// must not share ids (an index holds each document under one value per field). An error is
/// handed on as soon as it is met.
pub struct MergeIds<I: Iterator<Item = Result<String, StoreError>>> {
    walks: Vec<I>,
    /// The next id of each walk, once started.
    heads: Vec<Option<String>>,
    started: bool,
    failed: Option<StoreError>,
}

impl<I: Iterator<Item = Result<String, StoreError>>> MergeIds<I> {
    /// A merge of `walks`.
    pub fn new(walks: impl IntoIterator<Item = I>) -> Self {
        let walks: Vec<I> = walks.into_iter().collect();
        MergeIds {
            heads: walks.iter().map(|_| None).collect(),
            walks,
            started: false,
            failed: None,
        }
    }

    fn advance(&mut self, i: usize) {
        match self.walks[i].next() {
            Some(Ok(id)) => self.heads[i] = Some(id),
            Some(Err(e)) => self.failed = Some(e),
            None => {}
        }
    }
}

impl<I: Iterator<Item = Result<String, StoreError>>> Iterator for MergeIds<I> {
    type Item = Result<String, StoreError>;
    fn next(&mut self) -> Option<Self::Item> {
        if !self.started {
            self.started = true;
            for i in 0..self.walks.len() {
                self.advance(i);
            }
        }
        if let Some(e) = self.failed.take() {
            return Some(Err(e));
        }
        let best = self
            .heads
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.as_ref().map(|h| (i, h)))
            .min_by(|a, b| a.1.cmp(b.1))
            .map(|(i, _)| i)?;
        let id = self.heads[best].take();
        self.advance(best);
        id.map(Ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_values_share_a_key_and_unequal_ones_do_not() {
        let a: Value = serde_json::from_str(r#"{"b":1,"a":[2,{"y":1,"x":2}]}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":[2,{"x":2,"y":1}],"b":1}"#).unwrap();
        assert_eq!(a, b);
        assert_eq!(index_key(&a), index_key(&b));
        assert_eq!(json!(-0.0), json!(0.0));
        assert_eq!(index_key(&json!(-0.0)), index_key(&json!(0.0)));
        for (x, y) in [
            (json!(1), json!(1.0)),
            (json!("1"), json!(1)),
            (json!(null), json!("null")),
        ] {
            assert_ne!(x, y);
            assert_ne!(index_key(&x), index_key(&y), "{x} vs {y}");
        }
    }

    #[test]
    fn peeking_reads_only_the_named_fields_and_missing_ones_are_null() {
        let bytes = br#"{"id":"x","st\u0061te":"free","big":{"deep":[1,2,3]},"n":7}"#;
        let got = peek_fields(bytes, &["n", "state", "gone", "n"]).unwrap();
        assert_eq!(got, vec![json!(7), json!("free"), Value::Null, json!(7)]);
        assert!(peek_fields(b"[1]", &["n"]).is_err());
    }

    #[test]
    fn merged_walks_come_out_in_id_order() {
        let walk = |ids: &[&str]| {
            ids.iter()
                .map(|s| Ok::<_, StoreError>(s.to_string()))
                .collect::<Vec<_>>()
                .into_iter()
        };
        let merged: Vec<String> =
            MergeIds::new([walk(&["b", "e"]), walk(&[]), walk(&["a", "c", "f"])])
                .collect::<Result<_, _>>()
                .unwrap();
        assert_eq!(merged, ["a", "b", "c", "e", "f"]);
    }
}
