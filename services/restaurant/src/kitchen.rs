//! The kitchen service: orders. Taking an order asks the tables service whether the table exists and
//! is occupied. Orders grow as items are appended (one atomic append each) and move through their
//! states with one conditional update each, so two racing changes never both win.

use std::sync::Arc;

use brigade_kit::openapi::Body;
use brigade_kit::resource::{from_doc, get_reply, list_reply, load, to_doc};
use brigade_kit::store::{new_id, Change, CollectionSpec, Filter, Outcome};
use brigade_kit::{ApiError, Reply, Request, RouteTable};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use brigade_kit::resource::{List, Paging};

use crate::model::{
    now, Id, MoreItems, NewOrder, Order, OrderStatus, StatusChange, Table, TableStatus,
};
use crate::tables::peer_message;
use crate::ServiceState;

/// The `orders` collection.
pub static ORDERS: CollectionSpec = CollectionSpec {
    name: "orders",
    unique: &[],
    indexed: &["status", "table_id"],
};

/// The kitchen service's own routes.
pub fn routes() -> RouteTable<ServiceState> {
    RouteTable::new()
        .post("/orders", create)
        .accepts::<NewOrder>()
        .answers::<Order>(201)
        .errors(&[502, 503])
        .get("/orders", list)
        .query::<ListQuery>()
        .answers::<List<Order>>(200)
        .errors(&[503])
        .get("/orders/{id}", get)
        .answers::<Order>(200)
        .errors(&[503])
        .delete("/orders/{id}", delete)
        .answers_with(204, Body::Empty)
        .errors(&[503])
        .post("/orders/{id}/items", add_items)
        .accepts::<MoreItems>()
        .answers::<Order>(200)
        .errors(&[409, 503])
        .post("/orders/{id}/status", change_status)
        .accepts::<StatusChange>()
        .answers::<Order>(200)
        .errors(&[409, 503])
}

/// `GET /orders`' query.
#[derive(Deserialize, JsonSchema)]
struct ListQuery {
    /// Page size, 1..=500 (default 50).
    #[schemars(range(min = 1, max = 500))]
    limit: Option<u32>,
    /// Orders skipped.
    #[schemars(range(max = u64::MAX))]
    offset: Option<u64>,
    /// Only orders in this state.
    status: Option<OrderStatus>,
    /// Only the orders of this table.
    table_id: Option<String>,
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("no order {id}"))
}

/// Asks the tables service whether table `id` exists and is occupied: 422 if not, 502/503 if it can't say.
async fn ensure_occupied_table(s: &ServiceState, id: &Id) -> Result<(), ApiError> {
    let reply = s
        .peers
        .get("tables", &format!("/tables/{}", id.as_str()))
        .await?;
    match reply.status {
        200 => {
            let table: Table = serde_json::from_slice(&reply.body).map_err(|e| {
                ApiError::bad_gateway(format!("tables service answered an unreadable table: {e}"))
            })?;
            if table.status == TableStatus::Occupied {
                Ok(())
            } else {
                Err(ApiError::unprocessable(format!(
                    "table_id: table {} is not occupied",
                    table.number
                )))
            }
        }
        404 => Err(ApiError::unprocessable(format!(
            "table_id: no table {}",
            id.as_str()
        ))),
        503 => Err(ApiError::unavailable(format!(
            "tables service is unavailable: {}",
            peer_message(&reply.body)
        ))),
        other => Err(ApiError::bad_gateway(format!(
            "tables service answered {other}"
        ))),
    }
}

async fn create(s: Arc<ServiceState>, r: Request) -> Result<Reply, ApiError> {
    let new: NewOrder = r.json()?;
    ensure_occupied_table(&s, &new.table_id).await?;
    let at = now();
    let order = Order {
        id: new_id(),
        table_id: new.table_id.into(),
        items: new.items.into(),
        status: OrderStatus::Queued,
        created_at: at.clone(),
        updated_at: at,
    };
    s.store.insert(ORDERS.name, to_doc(&order)?).await?;
    Ok(Reply::created(&order))
}

async fn list(s: Arc<ServiceState>, r: Request) -> Result<Reply, ApiError> {
    let q: ListQuery = r.query()?;
    let mut filter = Filter::all();
    if let Some(status) = q.status {
        filter = filter.eq("status", status.as_str());
    }
    if let Some(table) = q.table_id {
        filter = filter.eq("table_id", table);
    }
    let paging = Paging {
        limit: q.limit,
        offset: q.offset,
    };
    list_reply(s.store.as_ref(), ORDERS.name, filter, paging).await
}

async fn get(s: Arc<ServiceState>, r: Request) -> Result<Reply, ApiError> {
    get_reply(s.store.as_ref(), ORDERS.name, "order", r.param("id")).await
}

async fn delete(s: Arc<ServiceState>, r: Request) -> Result<Reply, ApiError> {
    let id = r.param("id");
    match s.store.delete(ORDERS.name, id, &Filter::all()).await? {
        Outcome::Done(_) | Outcome::Refused(_) => Ok(Reply::no_content()),
        Outcome::Missing => Err(not_found(id)),
    }
}

async fn add_items(s: Arc<ServiceState>, r: Request) -> Result<Reply, ApiError> {
    let id = r.param("id");
    let more: MoreItems = r.json()?;
    let items: Vec<Value> = Vec::from(more.items)
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()
        .map_err(ApiError::internal)?;
    let change = Change::default()
        .push("items", items)
        .set("updated_at", now());
    let open = Filter::all().one_of(
        "status",
        [OrderStatus::Queued.as_str(), OrderStatus::Cooking.as_str()],
    );
    match s.store.update(ORDERS.name, id, &open, &change).await? {
        Outcome::Done(doc) => Ok(Reply::ok(&from_doc::<Order>(doc)?)),
        Outcome::Refused(doc) => {
            let order: Order = from_doc(doc)?;
            Err(ApiError::conflict(format!(
                "order {id} is {} and takes no more items",
                order.status.as_str()
            )))
        }
        Outcome::Missing => Err(not_found(id)),
    }
}

async fn change_status(s: Arc<ServiceState>, r: Request) -> Result<Reply, ApiError> {
    let id = r.param("id");
    let StatusChange { status: next } = r.json()?;
    let current = load::<Order>(s.store.as_ref(), ORDERS.name, "order", id).await?;
    if !current.status.can_become(next) {
        return Err(ApiError::conflict(format!(
            "order {id} cannot go from {} to {}",
            current.status.as_str(),
            next.as_str()
        )));
    }
    let change = Change::default()
        .set("status", next.as_str())
        .set("updated_at", now());
    let unchanged = Filter::all().eq("status", current.status.as_str());
    match s.store.update(ORDERS.name, id, &unchanged, &change).await? {
        Outcome::Done(doc) => Ok(Reply::ok(&from_doc::<Order>(doc)?)),
        Outcome::Refused(_) => Err(ApiError::conflict(format!(
            "order {id} changed meanwhile; read it and retry"
        ))),
        Outcome::Missing => Err(not_found(id)),
    }
}
