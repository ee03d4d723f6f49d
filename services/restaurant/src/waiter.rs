//! The waiter service: waiters and their shifts. It calls nobody, so under load it shows a runtime's
//! raw speed with a store behind it.

use std::sync::Arc;

use brigade_kit::openapi::Body;
use brigade_kit::resource::{from_doc, get_reply, list_reply, to_doc};
use brigade_kit::store::{new_id, Change, CollectionSpec, Filter, Outcome};
use brigade_kit::{ApiError, Reply, Request, RouteTable};
use schemars::JsonSchema;
use serde::Deserialize;

use brigade_kit::resource::{List, Paging};

use crate::model::{NewWaiter, Shift, Waiter, WaiterUpdate};
use crate::ServiceState;

/// The `waiters` collection.
pub static WAITERS: CollectionSpec = CollectionSpec {
    name: "waiters",
    unique: &[],
    indexed: &["shift"],
};

/// The waiter service's own routes.
pub fn routes() -> RouteTable<ServiceState> {
    RouteTable::new()
        .post("/waiters", create)
        .accepts::<NewWaiter>()
        .answers::<Waiter>(201)
        .errors(&[503])
        .get("/waiters", list)
        .query::<ListQuery>()
        .answers::<List<Waiter>>(200)
        .errors(&[503])
        .get("/waiters/{id}", get)
        .answers::<Waiter>(200)
        .errors(&[503])
        .put("/waiters/{id}", update)
        .accepts::<WaiterUpdate>()
        .answers::<Waiter>(200)
        .errors(&[503])
        .delete("/waiters/{id}", delete)
        .answers_with(204, Body::Empty)
        .errors(&[503])
}

/// `GET /waiters`' query.
#[derive(Deserialize, JsonSchema)]
struct ListQuery {
    /// Page size, 1..=500 (default 50).
    #[schemars(range(min = 1, max = 500))]
    limit: Option<u32>,
    /// Waiters skipped.
    #[schemars(range(max = u64::MAX))]
    offset: Option<u64>,
    /// Only waiters of this shift.
    shift: Option<Shift>,
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("no waiter {id}"))
}

async fn create(s: Arc<ServiceState>, r: Request) -> Result<Reply, ApiError> {
    let new: NewWaiter = r.json()?;
    let waiter = Waiter {
        id: new_id(),
        name: new.name.into(),
        shift: new.shift,
        active: true,
    };
    s.store.insert(WAITERS.name, to_doc(&waiter)?).await?;
    Ok(Reply::created(&waiter))
}

async fn list(s: Arc<ServiceState>, r: Request) -> Result<Reply, ApiError> {
    let q: ListQuery = r.query()?;
    let mut filter = Filter::all();
    if let Some(shift) = q.shift {
        filter = filter.eq("shift", shift.as_str());
    }
    let paging = Paging {
        limit: q.limit,
        offset: q.offset,
    };
    list_reply(s.store.as_ref(), WAITERS.name, filter, paging).await
}

async fn get(s: Arc<ServiceState>, r: Request) -> Result<Reply, ApiError> {
    get_reply(s.store.as_ref(), WAITERS.name, "waiter", r.param("id")).await
}

async fn update(s: Arc<ServiceState>, r: Request) -> Result<Reply, ApiError> {
    let id = r.param("id");
    let u: WaiterUpdate = r.json()?;
    let mut change = Change::default();
    if let Some(name) = u.name {
        change = change.set("name", name.as_str());
    }
    if let Some(shift) = u.shift {
        change = change.set("shift", shift.as_str());
    }
    if let Some(active) = u.active {
        change = change.set("active", active);
    }
    match s
        .store
        .update(WAITERS.name, id, &Filter::all(), &change)
        .await?
    {
        Outcome::Done(doc) | Outcome::Refused(doc) => Ok(Reply::ok(&from_doc::<Waiter>(doc)?)),
        Outcome::Missing => Err(not_found(id)),
    }
}

async fn delete(s: Arc<ServiceState>, r: Request) -> Result<Reply, ApiError> {
    let id = r.param("id");
    match s.store.delete(WAITERS.name, id, &Filter::all()).await? {
        Outcome::Done(_) | Outcome::Refused(_) => Ok(Reply::no_content()),
        Outcome::Missing => Err(not_found(id)),
    }
}
