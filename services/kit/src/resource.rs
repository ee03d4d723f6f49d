//! Resources kept in a store, as a service's handlers read and write them: typed values to stored
//! documents and back, a GET and a list answered from the stored JSON as it is (neither decoded nor
//! encoded again, when the service stores exactly what it answers), and the paging every list takes
//! (`?limit=` 1..=500, default 50, and `?offset=`; lists answer `{"items": [...], "total": N}`).

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::store::{Doc, Filter, Page, Store};
use crate::{ApiError, Reply};

/// The page size of a list when `?limit=` is not given.
pub const DEFAULT_LIMIT: u32 = 50;
/// The largest `?limit=` a list accepts.
pub const MAX_LIMIT: u32 = 500;

/// `?limit=&offset=` of a list.
#[derive(Debug, Clone, Copy, Default, Deserialize, schemars::JsonSchema)]
pub struct Paging {
    /// Page size, 1..=[`MAX_LIMIT`] (default [`DEFAULT_LIMIT`]).
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
    /// Documents skipped.
    #[schemars(range(max = u64::MAX))]
    pub offset: Option<u64>,
}

impl Paging {
    /// The store's page; a limit outside 1..=[`MAX_LIMIT`] is 422.
    pub fn page(self) -> Result<Page, ApiError> {
        let limit = self.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ApiError::unprocessable(format!(
                "limit: must be 1..={MAX_LIMIT} (got {limit})"
            )));
        }
        Ok(Page {
            offset: self.offset.unwrap_or(0),
            limit: u64::from(limit),
        })
    }
}

/// The shape of every list answer.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct List<T> {
    /// The page's items.
    pub items: Vec<T>,
    /// How many match in all.
    pub total: u64,
}

/// A typed value as a stored document; a value that is not a JSON object is a 500.
pub fn to_doc<T: Serialize>(value: &T) -> Result<Doc, ApiError> {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::Object(m)) => Ok(m),
        Ok(other) => Err(ApiError::internal(format!("not a document: {other}"))),
        Err(e) => Err(ApiError::internal(e)),
    }
}

/// A stored document as a typed value; a document that does not fit is a 500.
pub fn from_doc<T: DeserializeOwned>(doc: Doc) -> Result<T, ApiError> {
    serde_json::from_value(serde_json::Value::Object(doc))
        .map_err(|e| ApiError::internal(format!("stored document: {e}")))
}

/// A stored document's JSON as a typed value; a document that does not fit is a 500.
pub fn from_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| ApiError::internal(format!("stored document: {e}")))
}

/// The stored JSON of document `id` of `collection`; 404 "no {what} {id}" if there is none.
pub async fn stored(
    store: &dyn Store,
    collection: &str,
    what: &str,
    id: &str,
) -> Result<Bytes, ApiError> {
    store
        .get_json(collection, id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no {what} {id}")))
}

/// Document `id` of `collection` as a `T`, decoded straight from its stored JSON; 404
/// "no {what} {id}" if there is none.
pub async fn load<T: DeserializeOwned>(
    store: &dyn Store,
    collection: &str,
    what: &str,
    id: &str,
) -> Result<T, ApiError> {
    from_json(&stored(store, collection, what, id).await?)
}

/// Answers a GET of one document with its stored JSON as it is; 404 "no {what} {id}".
pub async fn get_reply(
    store: &dyn Store,
    collection: &str,
    what: &str,
    id: &str,
) -> Result<Reply, ApiError> {
    Ok(Reply::json_bytes(
        200,
        stored(store, collection, what, id).await?,
    ))
}

/// Answers a list request: the page of `collection` matching `filter`, as `{"items", "total"}`
/// built from the documents' stored JSON.
pub async fn list_reply(
    store: &dyn Store,
    collection: &str,
    filter: Filter,
    paging: Paging,
) -> Result<Reply, ApiError> {
    let found = store.list_json(collection, &filter, paging.page()?).await?;
    Ok(Reply::json_bytes(200, found.body().into()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::store::memory::MemoryStore;
    use crate::store::CollectionSpec;

    #[test]
    fn paging_defaults_to_50_and_caps_at_500() {
        let p = Paging::default().page().unwrap();
        assert_eq!((p.limit, p.offset), (50, 0));
        let p = Paging {
            limit: Some(500),
            offset: Some(7),
        };
        assert_eq!(
            (p.page().unwrap().limit, p.page().unwrap().offset),
            (500, 7)
        );
        for limit in [0, 501] {
            let e = Paging {
                limit: Some(limit),
                offset: None,
            }
            .page()
            .unwrap_err();
            assert_eq!(e.code, crate::ErrorCode::Unprocessable);
            assert!(e.message.starts_with("limit"), "{}", e.message);
        }
    }

    #[derive(Debug, PartialEq, Serialize, serde::Deserialize)]
    struct Note {
        id: String,
        text: String,
    }

    const NOTES: CollectionSpec = CollectionSpec {
        name: "notes",
        unique: &[],
        indexed: &["text"],
    };

    #[tokio::test]
    async fn gets_and_lists_answer_the_stored_json_and_missing_ids_are_404() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new(&[NOTES]));
        for (id, text) in [("a", "x"), ("b", "y"), ("c", "x")] {
            let note = Note {
                id: id.into(),
                text: text.into(),
            };
            store.insert("notes", to_doc(&note).unwrap()).await.unwrap();
        }
        let r = get_reply(store.as_ref(), "notes", "note", "b")
            .await
            .unwrap();
        assert_eq!(
            (r.status, r.content_type),
            (200, crate::http::content_type::JSON)
        );
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v, json!({"id": "b", "text": "y"}));
        let e = get_reply(store.as_ref(), "notes", "note", "z")
            .await
            .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (crate::ErrorCode::NotFound, "no note z")
        );
        let n: Note = load(store.as_ref(), "notes", "note", "c").await.unwrap();
        assert_eq!(n.text, "x");
        let paging = Paging {
            limit: Some(1),
            offset: Some(1),
        };
        let r = list_reply(
            store.as_ref(),
            "notes",
            Filter::all().eq("text", "x"),
            paging,
        )
        .await
        .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v, json!({"items": [{"id": "c", "text": "x"}], "total": 2}));
        assert!(from_doc::<Note>(to_doc(&json!({"id": 1})).unwrap()).is_err());
        assert!(to_doc(&[1, 2]).is_err());
    }
}
