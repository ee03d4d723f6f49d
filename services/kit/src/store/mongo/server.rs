//! What answers at a MongoDB URI, in words for a report: `MongoDB 7.0.14`, or `FerretDB 1.24.2`
//! (a MongoDB-compatible server, which adds `ferretdbVersion` to `buildInfo`). A comparison names
//! the server behind `--store mongo` because the two differ in speed by orders of magnitude.

use std::time::Duration;

use mongodb::bson::doc;
use mongodb::options::ClientOptions;
use mongodb::Client;

use super::errors::classify;
use crate::store::StoreError;

/// The server at `uri`, in words, asked within `timeout`.
pub async fn describe(uri: &str, timeout: Duration) -> Result<String, StoreError> {
    let mut options = ClientOptions::parse(uri)
        .await
        .map_err(|e| StoreError::Internal(format!("invalid MongoDB URI: {e}")))?;
    options.server_selection_timeout = Some(timeout);
    options.connect_timeout = Some(timeout);
    let client = Client::with_options(options)
        .map_err(|e| StoreError::Internal(format!("MongoDB client: {e}")))?;
    let info = tokio::time::timeout(
        timeout,
        client
            .database("admin")
            .run_command(doc! { "buildInfo": 1 }),
    )
    .await
    .map_err(|_| StoreError::Unavailable(format!("{uri} did not answer within {timeout:?}")))?
    .map_err(|e| classify(e, None))?;
    client.shutdown().await;
    Ok(words(
        info.get_str("version").ok(),
        info.get_str("ferretdbVersion").ok(),
    ))
}

/// `buildInfo`'s versions in words.
fn words(version: Option<&str>, ferretdb: Option<&str>) -> String {
    match (ferretdb, version) {
        (Some(f), Some(v)) => format!("FerretDB {f}, MongoDB-compatible, answering as MongoDB {v}"),
        (Some(f), None) => format!("FerretDB {f}, MongoDB-compatible"),
        (None, Some(v)) => format!("MongoDB {v}"),
        (None, None) => "a MongoDB-compatible server that gives no version".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ferretdb_is_named_before_the_version_it_claims() {
        assert_eq!(words(Some("7.0.14"), None), "MongoDB 7.0.14");
        assert!(words(Some("7.0.77"), Some("v1.24.2")).starts_with("FerretDB v1.24.2"));
    }
}
