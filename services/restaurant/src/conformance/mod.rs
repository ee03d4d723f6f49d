//! The restaurant's black-box conformance suite: the kit's checks every service passes (health,
//! readiness, the error answers its route table implies, the bench endpoints), then every route and
//! status code of its domain, the cross-service flows, the races, and a peer that is down — over real
//! sockets, against a running deployment of the three services. Every runtime × store runs it (the
//! root `tests/suite/conformance.rs`, with `brigade_launch::conformance_matrix!`).
//!
//! Checks are public so a failure names the rule that broke. Parts: `fixtures` (waiters and tables
//! made through the API), `waiter` (CRUD and list rules), `input` (domain rules and hostile ids),
//! `tables`, `kitchen`, `races`, `peers`.

use brigade_kit::conformance::{run_standard_checks, Deployment};

mod fixtures;
mod input;
mod kitchen;
mod peers;
mod races;
mod tables;
mod waiter;

pub use fixtures::{new_table, new_waiter, seated_table, unique_number};
pub use input::{domain_rules_are_422_naming_the_field, hostile_ids_are_plain_not_found};
pub use kitchen::kitchen_orders;
pub use peers::waiter_down_gives_502_or_503_quickly;
pub use races::{
    fifty_concurrent_seats_give_exactly_one_200, racing_status_changes_give_exactly_one_200,
};
pub use tables::tables_and_seating;
pub use waiter::{lists_page_and_filter, waiter_crud};

/// The base URLs of the three services.
#[derive(Debug, Clone)]
pub struct Target {
    /// The waiter service, e.g. `http://127.0.0.1:8081`.
    pub waiter: String,
    /// The tables service.
    pub tables: String,
    /// The kitchen service.
    pub kitchen: String,
}

impl Target {
    /// The three services' URLs in `d`.
    pub fn of(d: &dyn Deployment) -> Target {
        Target {
            waiter: d.url("waiter"),
            tables: d.url("tables"),
            kitchen: d.url("kitchen"),
        }
    }
}

/// Runs every check, then stops the waiter and checks the peer-down behaviour.
pub async fn run_suite(d: &dyn Deployment) {
    let c = d.client();
    run_standard_checks(&c, d).await;
    let t = Target::of(d);
    waiter_crud(&c, &t).await;
    lists_page_and_filter(&c, &t).await;
    domain_rules_are_422_naming_the_field(&c, &t).await;
    hostile_ids_are_plain_not_found(&c, &t).await;
    tables_and_seating(&c, &t).await;
    kitchen_orders(&c, &t).await;
    fifty_concurrent_seats_give_exactly_one_200(&c, &t).await;
    racing_status_changes_give_exactly_one_200(&c, &t).await;
    d.stop("waiter");
    waiter_down_gives_502_or_503_quickly(&c, &t).await;
}
