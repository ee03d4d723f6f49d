//! The API's JSON documents, filters and changes as MongoDB's BSON, and back.
//!
//! Documents travel as raw BSON bytes both ways ([`to_raw`], [`write_json`], [`raw_to_doc`]): a
//! document written is encoded from the JSON value straight into the bytes the driver sends, and a
//! document read is written from the bytes the driver received straight into the JSON text the API
//! answers, with no owned BSON tree ([`Document`]) built and walked in between. Filters and updates
//! are small and stay [`Document`]s.

use mongodb::bson::{
    doc, Bson, Document, RawArrayBuf, RawBson, RawBsonRef, RawDocument, RawDocumentBuf,
};
use serde_json::{Map, Number, Value};

use super::super::{doc_id, Change, Cond, Doc, Filter, StoreError};

/// The stored name of a field: the API's `id` is MongoDB's `_id`.
pub(super) fn stored_field(field: &str) -> &str {
    if field == "id" {
        "_id"
    } else {
        field
    }
}

/// A query for `filter` (and the id, if given). Values are compared with `$eq`/`$in`, so a value that
/// looks like an operator (`{"$ne": 1}`) is matched literally, never interpreted.
pub(super) fn to_query(id: Option<&str>, filter: &Filter) -> Document {
    let mut clauses: Vec<Document> = Vec::new();
    if let Some(id) = id {
        clauses.push(doc! { "_id": { "$eq": id } });
    }
    for (field, cond) in &filter.0 {
        let test = match cond {
            Cond::Eq(v) => doc! { "$eq": to_bson(v) },
            Cond::In(vs) => doc! { "$in": vs.iter().map(to_bson).collect::<Vec<_>>() },
        };
        clauses.push(doc! { stored_field(field): test });
    }
    // One document when every field appears once (what both servers plan best), `$and` otherwise.
    let mut merged = Document::new();
    let mut repeated = false;
    for clause in &clauses {
        for (k, v) in clause {
            repeated |= merged.insert(k.clone(), v.clone()).is_some();
        }
    }
    if repeated {
        doc! { "$and": clauses }
    } else {
        merged
    }
}

/// The update document of `change`: `$set` for fields, `$push` with `$each` for appends.
pub(super) fn to_update(change: &Change) -> Document {
    let mut update = Document::new();
    if !change.set.is_empty() {
        let set: Document = change
            .set
            .iter()
            .map(|(k, v)| (k.clone(), to_bson(v)))
            .collect();
        update.insert("$set", set);
    }
    if !change.push.is_empty() {
        let push: Document = change
            .push
            .iter()
            .map(|(k, vs)| {
                (
                    k.clone(),
                    Bson::Document(doc! { "$each": vs.iter().map(to_bson).collect::<Vec<_>>() }),
                )
            })
            .collect();
        update.insert("$push", push);
    }
    update
}

/// A JSON document as stored: `id` becomes `_id`. The owned form of [`to_raw`], which the tests
/// hold it to.
#[cfg(test)]
pub(super) fn to_document(doc: &Doc) -> Document {
    let mut out = Document::new();
    out.insert("_id", doc_id(doc));
    for (k, v) in doc {
        if k != "id" {
            out.insert(k.clone(), to_bson(v));
        }
    }
    out
}

/// A stored document as JSON: `_id` becomes the string `id`. The owned form of [`raw_to_doc`] and
/// [`write_json`], which the tests hold them to.
#[cfg(test)]
pub(super) fn from_document(document: Document) -> Doc {
    let mut out = Doc::new();
    for (k, v) in document {
        if k == "_id" {
            let id = match v {
                Bson::String(s) => s,
                Bson::ObjectId(oid) => oid.to_hex(),
                other => from_bson(other).to_string(),
            };
            out.insert("id".into(), Value::String(id));
        } else {
            out.insert(k, from_bson(v));
        }
    }
    out
}

/// A JSON value as BSON: integers as 64-bit integers, other numbers as doubles.
pub(super) fn to_bson(v: &Value) -> Bson {
    match v {
        Value::Null => Bson::Null,
        Value::Bool(b) => Bson::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Bson::Int64(i),
            None => Bson::Double(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Bson::String(s.clone()),
        Value::Array(items) => Bson::Array(items.iter().map(to_bson).collect()),
        Value::Object(map) => {
            Bson::Document(map.iter().map(|(k, v)| (k.clone(), to_bson(v))).collect())
        }
    }
}

/// A JSON document as the raw BSON the driver sends: `id` becomes `_id` (first), integers 64-bit
/// integers, other numbers doubles, as [`to_document`] does. A field name holding a NUL byte,
/// which BSON cannot carry, is [`StoreError::Internal`].
pub(super) fn to_raw(doc: &Doc) -> Result<RawDocumentBuf, StoreError> {
    let mut out = RawDocumentBuf::new();
    out.append_ref("_id", RawBsonRef::String(doc_id(doc)));
    for (k, v) in doc {
        if k != "id" {
            append_value(&mut out, k, v)?;
        }
    }
    Ok(out)
}

fn append_value(out: &mut RawDocumentBuf, key: &str, v: &Value) -> Result<(), StoreError> {
    if key.contains('\0') {
        return Err(StoreError::Internal(format!(
            "field name {key:?} holds a NUL byte, which BSON cannot store"
        )));
    }
    match v {
        Value::Null => out.append_ref(key, RawBsonRef::Null),
        Value::Bool(b) => out.append_ref(key, RawBsonRef::Boolean(*b)),
        Value::Number(n) => out.append_ref(key, number(n)),
        Value::String(s) => out.append_ref(key, RawBsonRef::String(s)),
        Value::Array(_) | Value::Object(_) => out.append(key, nested(v)?),
    }
    Ok(())
}

/// An array or object value as an owned raw BSON value (scalars too, inside arrays).
fn nested(v: &Value) -> Result<RawBson, StoreError> {
    Ok(match v {
        Value::Array(items) => {
            let mut a = RawArrayBuf::new();
            for item in items {
                a.push(nested(item)?);
            }
            RawBson::Array(a)
        }
        Value::Object(map) => {
            let mut d = RawDocumentBuf::new();
            for (k, v) in map {
                append_value(&mut d, k, v)?;
            }
            RawBson::Document(d)
        }
        Value::Null => RawBson::Null,
        Value::Bool(b) => RawBson::Boolean(*b),
        Value::Number(n) => number(n).to_raw_bson(),
        Value::String(s) => RawBson::String(s.clone()),
    })
}

fn number(n: &Number) -> RawBsonRef<'static> {
    match n.as_i64() {
        Some(i) => RawBsonRef::Int64(i),
        None => RawBsonRef::Double(n.as_f64().unwrap_or(f64::NAN)),
    }
}

/// Writes the stored document `raw` as the JSON text of the API's object, appended to `out`:
/// `_id` becomes the string `id`, every other value as [`from_bson`] makes it, in the stored order.
pub(super) fn write_json(raw: &RawDocument, out: &mut Vec<u8>) -> Result<(), StoreError> {
    out.push(b'{');
    for (i, element) in raw.iter().enumerate() {
        let (key, value) = element.map_err(unreadable)?;
        if i > 0 {
            out.push(b',');
        }
        if key == "_id" {
            out.extend_from_slice(b"\"id\":");
            match value {
                RawBsonRef::String(s) => write_str(s, out),
                other => write_str(&id_text(other)?, out),
            }
        } else {
            write_str(key, out);
            out.push(b':');
            write_value(value, out)?;
        }
    }
    out.push(b'}');
    Ok(())
}

fn write_value(v: RawBsonRef<'_>, out: &mut Vec<u8>) -> Result<(), StoreError> {
    match v {
        RawBsonRef::Null | RawBsonRef::Undefined => out.extend_from_slice(b"null"),
        RawBsonRef::Boolean(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
        RawBsonRef::Int32(i) => write_plain(&i, out),
        RawBsonRef::Int64(i) => write_plain(&i, out),
        RawBsonRef::String(s) => write_str(s, out),
        RawBsonRef::Document(d) => {
            out.push(b'{');
            for (i, element) in d.iter().enumerate() {
                let (key, value) = element.map_err(unreadable)?;
                if i > 0 {
                    out.push(b',');
                }
                write_str(key, out);
                out.push(b':');
                write_value(value, out)?;
            }
            out.push(b'}');
        }
        RawBsonRef::Array(a) => {
            out.push(b'[');
            for (i, item) in a.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item.map_err(unreadable)?, out)?;
            }
            out.push(b']');
        }
        // Doubles (serde_json's shortest form; NaN and infinities are null) and the types
        // Brigade never writes take the owned path, so they read exactly as `from_bson` says.
        other => {
            let value = from_bson(Bson::try_from(other).map_err(unreadable)?);
            serde_json::to_writer(&mut *out, &value).map_err(unreadable)?;
        }
    }
    Ok(())
}

/// A JSON string, escaped as serde_json escapes it.
fn write_str(s: &str, out: &mut Vec<u8>) {
    write_plain(s, out);
}

/// A string or integer as serde_json writes it (which cannot fail for those, into a `Vec`).
fn write_plain<T: serde::Serialize + ?Sized>(v: &T, out: &mut Vec<u8>) {
    let _ = serde_json::to_writer(&mut *out, v);
}

/// The text of an `_id` that is not a string (an ObjectId's hex, else the value's JSON).
fn id_text(v: RawBsonRef<'_>) -> Result<String, StoreError> {
    Ok(match v {
        RawBsonRef::ObjectId(oid) => oid.to_hex(),
        other => from_bson(Bson::try_from(other).map_err(unreadable)?).to_string(),
    })
}

/// The stored document `raw` as the API's JSON document, as [`from_document`] makes it.
pub(super) fn raw_to_doc(raw: &RawDocument) -> Result<Doc, StoreError> {
    let mut out = Map::new();
    for element in raw {
        let (key, value) = element.map_err(unreadable)?;
        if key == "_id" {
            let id = match value {
                RawBsonRef::String(s) => s.to_string(),
                other => id_text(other)?,
            };
            out.insert("id".into(), Value::String(id));
        } else {
            out.insert(key.to_string(), raw_value(value)?);
        }
    }
    Ok(out)
}

fn raw_value(v: RawBsonRef<'_>) -> Result<Value, StoreError> {
    Ok(match v {
        RawBsonRef::Null | RawBsonRef::Undefined => Value::Null,
        RawBsonRef::Boolean(b) => Value::Bool(b),
        RawBsonRef::Int32(i) => Value::from(i),
        RawBsonRef::Int64(i) => Value::from(i),
        RawBsonRef::String(s) => Value::String(s.to_string()),
        RawBsonRef::Document(d) => {
            let mut m = Map::new();
            for element in d {
                let (key, value) = element.map_err(unreadable)?;
                m.insert(key.to_string(), raw_value(value)?);
            }
            Value::Object(m)
        }
        RawBsonRef::Array(a) => Value::Array(
            a.into_iter()
                .map(|item| raw_value(item.map_err(unreadable)?))
                .collect::<Result<_, _>>()?,
        ),
        other => from_bson(Bson::try_from(other).map_err(unreadable)?),
    })
}

/// Bytes from the server that are not valid BSON (or not valid UTF-8 where BSON says text).
fn unreadable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Internal(format!(
        "MongoDB answered a document that cannot be read: {e}"
    ))
}

/// A BSON value as plain JSON. Types Brigade never writes (dates, ids, decimals, binaries) become
/// strings rather than extended-JSON objects, so no BSON shape reaches the API.
pub(super) fn from_bson(v: Bson) -> Value {
    match v {
        Bson::Null | Bson::Undefined => Value::Null,
        Bson::Boolean(b) => Value::Bool(b),
        Bson::Int32(i) => Value::from(i),
        Bson::Int64(i) => Value::from(i),
        Bson::Double(f) => Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        Bson::String(s) => Value::String(s),
        Bson::Array(items) => Value::Array(items.into_iter().map(from_bson).collect()),
        Bson::Document(d) => Value::Object(d.into_iter().map(|(k, v)| (k, from_bson(v))).collect()),
        Bson::ObjectId(oid) => Value::String(oid.to_hex()),
        Bson::DateTime(dt) => Value::String(
            dt.try_to_rfc3339_string()
                .unwrap_or_else(|_| dt.to_string()),
        ),
        Bson::Decimal128(d) => Value::String(d.to_string()),
        Bson::Symbol(s) => Value::String(s),
        other => Value::String(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn documents_round_trip_with_the_id_as_the_string_id() {
        let doc = json!({"id": "abc", "n": 3, "big": i64::MAX, "x": 1.5, "items": [{"dish": "soup", "qty": 2}], "w": null})
            .as_object()
            .cloned()
            .unwrap();
        let stored = to_document(&doc);
        assert_eq!(stored.get_str("_id").unwrap(), "abc");
        assert!(!stored.contains_key("id"));
        assert_eq!(stored.get("n"), Some(&Bson::Int64(3)));
        assert_eq!(from_document(stored), doc);
    }

    /// A document with every JSON shape, and strings that need escaping.
    fn every_shape() -> Doc {
        json!({
            "id": "a\"b\\c\u{1}é",
            "n": -3, "big": i64::MAX, "x": 1.5, "tiny": 1e-300, "whole": 2.0,
            "t": true, "f": false, "none": null, "s": "line\nbreak \u{2028} ✓",
            "items": [{"dish": "soup", "qty": 2, "notes": "\"hot\""}, [], {}, [1, [2, "x"]], null],
            "nested": {"deeper": {"deepest": [true]}}
        })
        .as_object()
        .cloned()
        .unwrap()
    }

    #[test]
    fn the_raw_path_writes_exactly_what_the_owned_path_did() {
        let doc = every_shape();
        let raw = to_raw(&doc).unwrap();
        // The same bytes on the wire as the owned document the driver used to encode.
        let owned = to_document(&doc);
        assert_eq!(raw.to_document().unwrap(), owned);
        // Read back: the same JSON value, and the same text as encoding the owned result.
        let via_owned = from_document(owned);
        assert_eq!(raw_to_doc(&raw).unwrap(), via_owned);
        let mut text = Vec::new();
        write_json(&raw, &mut text).unwrap();
        assert_eq!(text, serde_json::to_vec(&via_owned).unwrap());
        assert_eq!(serde_json::from_slice::<Doc>(&text).unwrap(), doc);
    }

    #[test]
    fn other_bson_types_read_as_the_owned_path_says_on_both_raw_paths() {
        let oid = mongodb::bson::oid::ObjectId::new();
        let d = doc! {
            "_id": oid, "i": 7_i32, "when": mongodb::bson::DateTime::from_millis(0),
            "nan": f64::NAN, "dec": mongodb::bson::Decimal128::from_bytes([0; 16]),
            "inner": { "_id": 1_i32, "bin": mongodb::bson::Binary { subtype: mongodb::bson::spec::BinarySubtype::Generic, bytes: vec![1, 2] } },
        };
        let raw = RawDocumentBuf::from_document(&d).unwrap();
        let owned = from_document(d);
        assert_eq!(raw_to_doc(&raw).unwrap(), owned);
        let mut text = Vec::new();
        write_json(&raw, &mut text).unwrap();
        assert_eq!(text, serde_json::to_vec(&owned).unwrap());
        assert_eq!(owned["id"], json!(oid.to_hex()));
        assert_eq!(owned["nan"], Value::Null);
    }

    #[test]
    fn a_field_name_with_a_nul_byte_is_refused_not_a_panic() {
        let doc = json!({"id": "a", "ok": {"bad\u{0}key": 1}})
            .as_object()
            .cloned()
            .unwrap();
        assert!(matches!(to_raw(&doc), Err(StoreError::Internal(m)) if m.contains("NUL")));
    }

    #[test]
    fn bson_types_become_plain_json() {
        let oid = mongodb::bson::oid::ObjectId::new();
        let d = doc! { "_id": oid, "i": 7_i32, "when": mongodb::bson::DateTime::from_millis(0) };
        let json = from_document(d);
        assert_eq!(json["id"], json!(oid.to_hex()));
        assert_eq!(json["i"], json!(7));
        assert_eq!(json["when"], json!("1970-01-01T00:00:00Z"));
    }

    #[test]
    fn queries_compare_literally_and_map_id() {
        let q = to_query(Some("x"), &Filter::all().eq("state", json!({"$ne": 1})));
        assert_eq!(
            q,
            doc! { "_id": { "$eq": "x" }, "state": { "$eq": { "$ne": 1_i64 } } }
        );
        let repeated = to_query(Some("x"), &Filter::all().one_of("id", ["a"]));
        assert_eq!(
            repeated,
            doc! { "$and": [ { "_id": { "$eq": "x" } }, { "_id": { "$in": ["a"] } } ] }
        );
    }

    #[test]
    fn updates_set_then_push_each() {
        let u = to_update(
            &Change::default()
                .set("state", "busy")
                .push("log", vec![json!(1), json!(2)]),
        );
        assert_eq!(
            u,
            doc! { "$set": { "state": "busy" }, "$push": { "log": { "$each": [1_i64, 2_i64] } } }
        );
    }
}
