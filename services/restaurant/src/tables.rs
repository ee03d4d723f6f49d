//! The tables service: tables, seating and release. Seating asks the waiter service whether the
//! waiter exists; the seat itself is one conditional store update (expect `free`), so of many
//! racing seat requests exactly one wins and the others get 409.

use std::sync::Arc;

use brigade_kit::openapi::Body;
use brigade_kit::resource::{from_doc, get_reply, list_reply, load, to_doc};
use brigade_kit::store::{new_id, Change, CollectionSpec, Filter, Outcome};
use brigade_kit::{ApiError, Reply, Request, RouteTable};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use brigade_kit::resource::{List, Paging};

use crate::model::{NewTable, SeatParty, Table, TableStatus, Waiter};
use crate::ServiceState;

/// The `tables` collection; table numbers are unique.
pub static TABLES: CollectionSpec = CollectionSpec {
    name: "tables",
    unique: &["number"],
    indexed: &["status"],
};

/// The tables service's own routes.
pub fn routes() -> RouteTable<ServiceState> {
    RouteTable::new()
        .post("/tables", create)
        .accepts::<NewTable>()
        .answers::<Table>(201)
        .errors(&[409, 503])
        .get("/tables", list)
        .query::<ListQuery>()
        .answers::<List<Table>>(200)
        .errors(&[503])
        .get("/tables/{id}", get)
        .answers::<Table>(200)
        .errors(&[503])
        .delete("/tables/{id}", delete)
        .answers_with(204, Body::Empty)
        .errors(&[409, 503])
        .post("/tables/{id}/seat", seat)
        .accepts::<SeatParty>()
        .answers::<Table>(200)
        .errors(&[409, 502, 503])
        .route(
            brigade_kit::Route::new(brigade_kit::Method::Post, "/tables/{id}/release", release)
                .body(brigade_kit::http::BodyKind::Empty),
        )
        .answers::<Table>(200)
        .errors(&[409, 503])
}

/// `GET /tables`' query.
#[derive(Deserialize, JsonSchema)]
struct ListQuery {
    /// Page size, 1..=500 (default 50).
    #[schemars(range(min = 1, max = 500))]
    limit: Option<u32>,
    /// Tables skipped.
    #[schemars(range(max = u64::MAX))]
    offset: Option<u64>,
    /// Only tables in this state.
    status: Option<TableStatus>,
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("no table {id}"))
}

async fn create(s: Arc<ServiceState>, r: Request) -> Result<Reply, ApiError> {
    let new: NewTable = r.json()?;
    let table = Table {
        id: new_id(),
        number: new.number.get(),
        seats: new.seats.get(),
        status: TableStatus::Free,
        waiter_id: None,
        party_size: None,
    };
    s.store
        .insert(TABLES.name, to_doc(&table)?)
        .await
        .map_err(|e| match e {
            brigade_kit::store::StoreError::Duplicate { .. } => {
                ApiError::conflict(format!("table number {} is already used", table.number))
            }
            other => other.into(),
        })?;
    Ok(Reply::created(&table))
}

async fn list(s: Arc<ServiceState>, r: Request) -> Result<Reply, ApiError> {
    let q: ListQuery = r.query()?;
    let mut filter = Filter::all();
    if let Some(status) = q.status {
        filter = filter.eq("status", status.as_str());
    }
    let paging = Paging {
        limit: q.limit,
        offset: q.offset,
    };
    list_reply(s.store.as_ref(), TABLES.name, filter, paging).await
}

async fn get(s: Arc<ServiceState>, r: Request) -> Result<Reply, ApiError> {
    get_reply(s.store.as_ref(), TABLES.name, "table", r.param("id")).await
}

async fn delete(s: Arc<ServiceState>, r: Request) -> Result<Reply, ApiError> {
    let id = r.param("id");
    match s
        .store
        .delete(TABLES.name, id, &Filter::all().eq("status", "free"))
        .await?
    {
        Outcome::Done(_) => Ok(Reply::no_content()),
        Outcome::Refused(_) => Err(ApiError::conflict(format!(
            "table {id} is occupied; release it first"
        ))),
        Outcome::Missing => Err(not_found(id)),
    }
}

async fn seat(s: Arc<ServiceState>, r: Request) -> Result<Reply, ApiError> {
    let id = r.param("id");
    let party: SeatParty = r.json()?;
    let table = load::<Table>(s.store.as_ref(), TABLES.name, "table", id).await?;
    if table.status != TableStatus::Free {
        return Err(ApiError::conflict(format!(
            "table {} is not free",
            table.number
        )));
    }
    if party.party_size.get() > table.seats {
        return Err(ApiError::unprocessable(format!(
            "party_size: {} is more than table {}'s {} seats",
            party.party_size.get(),
            table.number,
            table.seats
        )));
    }
    ensure_waiter(&s, party.waiter_id.as_str()).await?;
    let change = Change::default()
        .set("status", TableStatus::Occupied.as_str())
        .set("waiter_id", party.waiter_id.as_str())
        .set("party_size", party.party_size.get());
    match s
        .store
        .update(
            TABLES.name,
            id,
            &Filter::all().eq("status", "free"),
            &change,
        )
        .await?
    {
        Outcome::Done(doc) => Ok(Reply::ok(&from_doc::<Table>(doc)?)),
        Outcome::Refused(_) => Err(ApiError::conflict(format!(
            "table {} was taken meanwhile",
            table.number
        ))),
        Outcome::Missing => Err(not_found(id)),
    }
}

/// Asks the waiter service whether an active waiter `id` exists: 422 if not, 502/503 if it can't say.
async fn ensure_waiter(s: &ServiceState, id: &str) -> Result<(), ApiError> {
    let reply = s.peers.get("waiter", &format!("/waiters/{id}")).await?;
    match reply.status {
        200 => {
            let waiter: Waiter = serde_json::from_slice(&reply.body).map_err(|e| {
                ApiError::bad_gateway(format!("waiter service answered an unreadable waiter: {e}"))
            })?;
            if waiter.active {
                Ok(())
            } else {
                Err(ApiError::unprocessable(format!(
                    "waiter_id: waiter {id} is not active"
                )))
            }
        }
        404 => Err(ApiError::unprocessable(format!(
            "waiter_id: no waiter {id}"
        ))),
        503 => Err(ApiError::unavailable(format!(
            "waiter service is unavailable: {}",
            peer_message(&reply.body)
        ))),
        other => Err(ApiError::bad_gateway(format!(
            "waiter service answered {other}"
        ))),
    }
}

/// The message of a peer's error body, if it has one.
pub(crate) fn peer_message(body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| "no message".into())
}

async fn release(s: Arc<ServiceState>, r: Request) -> Result<Reply, ApiError> {
    let id = r.param("id");
    let change = Change::default()
        .set("status", TableStatus::Free.as_str())
        .set("waiter_id", Value::Null)
        .set("party_size", Value::Null);
    match s
        .store
        .update(
            TABLES.name,
            id,
            &Filter::all().eq("status", "occupied"),
            &change,
        )
        .await?
    {
        Outcome::Done(doc) => Ok(Reply::ok(&from_doc::<Table>(doc)?)),
        Outcome::Refused(_) => Err(ApiError::conflict(format!("table {id} is not occupied"))),
        Outcome::Missing => Err(not_found(id)),
    }
}
