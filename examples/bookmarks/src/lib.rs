//! A bookmarks service on Brigade's library crates, and nothing of the restaurant's: Brigade's
//! second user, written as anyone would write their own service.
//!
//! - `POST /bookmarks` `{"user", "url", "title", "tags"?}` → 201 bookmark
//!   `{"id","user","url","title","tags","archived": false}`; a URL the user bookmarked already → 409.
//! - `GET /bookmarks` (`?user=`, `?archived=true|false`, `?limit=`, `?offset=`): a list filtered on
//!   indexed fields, `{"items": [...], "total": N}`.
//! - `GET /bookmarks/{id}`, `DELETE /bookmarks/{id}` → 204.
//! - `POST /bookmarks/{id}/archive` → 200 archived bookmark; 409 if it was archived already (one
//!   conditional update: of racing archives exactly one wins).
//! - and the kit's standard routes: `/health`, `/ready`, `/bench/*`.
//!
//! [`services`] is what its binary serves (`bookmarks serve --runtime ... --store ...`, from
//! `brigade-launch`); `tests/suite/conformance.rs` runs the kit's checks and its own on every runtime ×
//! store; `scenarios/bookmarks.toml` is its load for `brigade load` and `brigade compare`.

use std::sync::Arc;

use brigade_kit::openapi::Body;
use brigade_kit::preload::Preload;
use brigade_kit::resource::{from_doc, load, to_doc, List, Paging};
use brigade_kit::service::Parts;
use brigade_kit::standard::{self, ServiceInfo};
use brigade_kit::store::{new_id, Change, CollectionSpec, Filter, Outcome, Store, StoreError};
use brigade_kit::{ApiError, App, AppHandle, Method, Reply, Request, Route, RouteTable, Service};
use brigade_launch::Services;
use schemars::JsonSchema;
use serde::Deserialize;

pub mod model;
mod preload;

use model::{Bookmark, NewBookmark, Stored, User};
pub use preload::BookmarkData;

/// The `bookmarks` collection: lists filter on `user` and `archived`; a URL is unique per user.
pub static BOOKMARKS: CollectionSpec = CollectionSpec {
    name: "bookmarks",
    unique: &["user_url"],
    indexed: &["user", "archived"],
};

/// The bookmarks service.
#[derive(Debug, Clone, Copy)]
pub struct Bookmarks;

/// What every handler shares.
pub struct State {
    runtime: String,
    store: Arc<dyn Store>,
}

impl ServiceInfo for State {
    fn service(&self) -> &str {
        "bookmarks"
    }
    fn runtime(&self) -> &str {
        &self.runtime
    }
    fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }
}

impl Service for Bookmarks {
    fn name(&self) -> &str {
        "bookmarks"
    }
    fn default_port(&self) -> u16 {
        8090
    }
    fn collections(&self) -> &[CollectionSpec] {
        std::slice::from_ref(&BOOKMARKS)
    }
    fn app(&self, parts: Parts) -> Arc<dyn AppHandle> {
        let state = State {
            runtime: parts.runtime,
            store: parts.store,
        };
        Arc::new(App::new("bookmarks", routes(), Arc::new(state)))
    }
    fn preload(&self) -> Option<&dyn Preload> {
        Some(&BookmarkData)
    }
}

/// What the bookmarks binary serves.
pub fn services() -> Services {
    Services::new().with(Bookmarks)
}

/// Every route, the kit's standard ones included.
pub fn routes() -> RouteTable<State> {
    RouteTable::new()
        .post("/bookmarks", create)
        .accepts::<NewBookmark>()
        .answers::<Bookmark>(201)
        .errors(&[409, 503])
        .get("/bookmarks", list)
        .query::<ListQuery>()
        .answers::<List<Bookmark>>(200)
        .errors(&[503])
        .get("/bookmarks/{id}", get)
        .answers::<Bookmark>(200)
        .errors(&[503])
        .delete("/bookmarks/{id}", delete)
        .answers_with(204, Body::Empty)
        .errors(&[503])
        .route(
            Route::new(Method::Post, "/bookmarks/{id}/archive", archive)
                .body(brigade_kit::http::BodyKind::Empty),
        )
        .answers::<Bookmark>(200)
        .errors(&[409, 503])
        .merge(standard::routes())
}

/// `GET /bookmarks`' query.
#[derive(Deserialize, JsonSchema)]
struct ListQuery {
    /// Only this user's bookmarks.
    user: Option<User>,
    /// Only archived (or only not archived) bookmarks.
    archived: Option<bool>,
    /// Page size, 1..=500 (default 50).
    #[schemars(range(min = 1, max = 500))]
    limit: Option<u32>,
    /// Bookmarks skipped.
    #[schemars(range(max = u64::MAX))]
    offset: Option<u64>,
}

async fn create(s: Arc<State>, r: Request) -> Result<Reply, ApiError> {
    let new: NewBookmark = r.json()?;
    let bookmark = Bookmark::new(new_id(), new);
    match s
        .store
        .insert(BOOKMARKS.name, to_doc(&Stored::of(&bookmark))?)
        .await
    {
        Ok(()) => Ok(Reply::created(&bookmark)),
        Err(StoreError::Duplicate { .. }) => Err(ApiError::conflict(format!(
            "{} has bookmarked {} already",
            bookmark.user, bookmark.url
        ))),
        Err(e) => Err(e.into()),
    }
}

async fn list(s: Arc<State>, r: Request) -> Result<Reply, ApiError> {
    let q: ListQuery = r.query()?;
    let mut filter = Filter::all();
    if let Some(user) = q.user {
        filter = filter.eq("user", String::from(user));
    }
    if let Some(archived) = q.archived {
        filter = filter.eq("archived", archived);
    }
    let page = Paging {
        limit: q.limit,
        offset: q.offset,
    }
    .page()?;
    let found = s.store.list(BOOKMARKS.name, &filter, page).await?;
    let items = found
        .items
        .into_iter()
        .map(from_doc::<Bookmark>)
        .collect::<Result<_, _>>()?;
    Ok(Reply::ok(&List {
        items,
        total: found.total,
    }))
}

async fn get(s: Arc<State>, r: Request) -> Result<Reply, ApiError> {
    let b: Bookmark = load(s.store.as_ref(), BOOKMARKS.name, "bookmark", r.param("id")).await?;
    Ok(Reply::ok(&b))
}

async fn archive(s: Arc<State>, r: Request) -> Result<Reply, ApiError> {
    let id = r.param("id");
    let only_if_not_archived = Filter::all().eq("archived", false);
    let change = Change::default().set("archived", true);
    match s
        .store
        .update(BOOKMARKS.name, id, &only_if_not_archived, &change)
        .await?
    {
        Outcome::Done(doc) => Ok(Reply::ok(&from_doc::<Bookmark>(doc)?)),
        Outcome::Refused(_) => Err(ApiError::conflict(format!(
            "bookmark {id} is archived already"
        ))),
        Outcome::Missing => Err(ApiError::not_found(format!("no bookmark {id}"))),
    }
}

async fn delete(s: Arc<State>, r: Request) -> Result<Reply, ApiError> {
    let id = r.param("id");
    match s.store.delete(BOOKMARKS.name, id, &Filter::all()).await? {
        Outcome::Done(_) | Outcome::Refused(_) => Ok(Reply::no_content()),
        Outcome::Missing => Err(ApiError::not_found(format!("no bookmark {id}"))),
    }
}
