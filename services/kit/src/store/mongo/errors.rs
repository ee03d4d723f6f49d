//! How driver errors become store errors: duplicates (named by field), transient failures
//! (unavailable) and the rest (internal).

use mongodb::error::{Error as MongoError, ErrorKind, WriteFailure};

use super::super::{doc_id, CollectionSpec, Doc, StoreError};
use serde_json::Value;

/// MongoDB's duplicate-key error code (E11000).
const DUPLICATE_KEY: i32 = 11000;

/// Server error codes that mean "not now" rather than "never": shutdown, stepdown, network trouble,
/// time limits. They become [`StoreError::Unavailable`].
const TRANSIENT_CODES: &[i32] = &[
    6,     // HostUnreachable
    7,     // HostNotFound
    50,    // MaxTimeMSExpired
    64,    // WriteConcernFailed (wtimeout)
    89,    // NetworkTimeout
    91,    // ShutdownInProgress
    189,   // PrimarySteppedDown
    262,   // ExceededTimeLimit
    9001,  // SocketException
    10107, // NotWritablePrimary
    11600, // InterruptedAtShutdown
    11602, // InterruptedDueToReplStateChange
    13435, // NotPrimaryNoSecondaryOk
    13436, // NotPrimaryOrSecondary
];

/// What a failed write tried to write, to name the field and value of a duplicate key.
pub(super) struct Written<'a> {
    pub(super) spec: &'a CollectionSpec,
    pub(super) doc: &'a Doc,
}

/// Maps a driver error onto the store's errors. A duplicate whose field the server's message does
/// not name comes back with an empty `field`; [`MongoStore::name_duplicate`] fills it in.
pub(super) fn classify(e: MongoError, written: Option<Written<'_>>) -> StoreError {
    if let Some(message) = duplicate_key_message(&e) {
        return duplicate(&message, written);
    }
    if is_transient(&e) {
        return StoreError::Unavailable(e.to_string());
    }
    StoreError::Internal(e.to_string())
}

/// The server's message if `e` is a duplicate-key error: E11000 from MongoDB (and FerretDB on
/// insert), or the SQLite constraint FerretDB reports as an internal error on update.
fn duplicate_key_message(e: &MongoError) -> Option<String> {
    match e.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(we)) if we.code == DUPLICATE_KEY => {
            Some(we.message.clone())
        }
        ErrorKind::Command(ce)
            if ce.code == DUPLICATE_KEY || ce.message.contains("UNIQUE constraint failed") =>
        {
            Some(ce.message.clone())
        }
        ErrorKind::InsertMany(im) => im
            .write_errors
            .as_ref()
            .and_then(|errs| errs.iter().find(|we| we.code == DUPLICATE_KEY))
            .map(|we| we.message.clone()),
        _ => None,
    }
}

fn is_transient(e: &MongoError) -> bool {
    match e.kind.as_ref() {
        ErrorKind::ServerSelection { .. }
        | ErrorKind::Io(_)
        | ErrorKind::ConnectionPoolCleared { .. }
        | ErrorKind::DnsResolve { .. }
        | ErrorKind::Shutdown => true,
        ErrorKind::Command(ce) => TRANSIENT_CODES.contains(&ce.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(wce)) => {
            TRANSIENT_CODES.contains(&wce.code)
        }
        _ => {
            e.contains_label("RetryableWriteError") || e.contains_label("TransientTransactionError")
        }
    }
}

/// A [`StoreError::Duplicate`] for the unique field the server's message names (index names end in
/// `<field>_1`; `_id_` is the id), with an empty field when the message names none.
fn duplicate(message: &str, written: Option<Written<'_>>) -> StoreError {
    let Some(Written { spec, doc }) = written else {
        return StoreError::Duplicate {
            field: "unknown".into(),
            value: message.to_string(),
        };
    };
    if message.contains("index: _id_") || message.contains("_id_ dup key") {
        return StoreError::Duplicate {
            field: "id".into(),
            value: Value::from(doc_id(doc)).to_string(),
        };
    }
    // The longest name that matches, so `number` does not shadow `table_number`.
    let named = spec
        .unique
        .iter()
        .filter(|f| message.contains(&format!("{f}_1")) || message.contains(&format!("{{ {f}:")))
        .max_by_key(|f| f.len());
    match named {
        Some(f) => duplicate_of(f, doc),
        None => StoreError::Duplicate {
            field: String::new(),
            value: String::new(),
        },
    }
}

pub(super) fn duplicate_of(field: &str, doc: &Doc) -> StoreError {
    StoreError::Duplicate {
        field: field.to_string(),
        value: doc
            .get(field)
            .map(Value::to_string)
            .unwrap_or_else(|| "null".into()),
    }
}

/// The position of the first document an ordered `insertMany` could not write, if `e` says.
pub(super) fn failed_index(e: &MongoError) -> Option<usize> {
    match e.kind.as_ref() {
        ErrorKind::InsertMany(im) => im
            .write_errors
            .as_ref()
            .and_then(|errs| errs.iter().map(|we| we.index).min()),
        _ => None,
    }
}
