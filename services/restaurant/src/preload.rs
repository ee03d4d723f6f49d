//! The restaurant's realistic documents for `--preload N` (the kit's [`Preload`] hook): waiters on
//! every shift, tables with unique numbers of which some are occupied, and an order history in
//! which most orders are served and the newest are still open.
//!
//! The shapes are the services' own types ([`Waiter`], [`Table`], [`Order`]), so a preloaded
//! document reads back exactly like one the API created. Values are spread so that the filtered
//! lists the scenarios send select the fractions a real restaurant would see:
//! - waiters: a third per shift (`?shift=`), nine in ten active;
//! - tables: two in five occupied (`?status=`), each by a preloaded waiter, with a party that fits;
//! - orders: on a tenth of the tables (about ten orders each, `?table_id=`); the oldest nine tenths
//!   served (one in ten of those cancelled), the newest tenth queued, cooking or ready
//!   (`?status=`), on occupied tables.
//!
//! Everything is a pure function of the document's number, so chunks and reruns agree.

use std::ops::Range;

use brigade_kit::preload::{preload_id, Preload, PRELOAD_EPOCH_MS};
use brigade_kit::store::Doc;

use crate::kitchen::ORDERS;
use crate::model::{Dish, Item, Notes, Order, OrderStatus, Qty, Shift, Table, TableStatus, Waiter};
use crate::tables::TABLES;
use crate::waiter::WAITERS;

/// Preloaded tables are numbered from here up. The built-in scenarios create tables with random
/// numbers in 1..=2,000,000,000 and a number is unique, so preloaded tables stay above that range
/// and a fixture never collides with one.
pub const FIRST_TABLE_NUMBER: u64 = 2_000_000_001;

/// The restaurant's preload source; see the module documentation for the shapes.
#[derive(Debug, Clone, Copy, Default)]
pub struct RestaurantData;

impl Preload for RestaurantData {
    fn documents(&self, collection: &str, range: Range<u64>, total: u64) -> Vec<Doc> {
        let docs = range.map(|n| match collection {
            c if c == WAITERS.name => to_doc(&waiter(n)),
            c if c == TABLES.name => to_doc(&table(n, total)),
            c if c == ORDERS.name => to_doc(&order(n, total)),
            _ => None,
        });
        docs.flatten().collect()
    }
}

const FIRST_NAMES: [&str; 16] = [
    "Ada", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jonas",
    "Keiko", "Luca", "Maya", "Nils", "Olga", "Pablo",
];
const LAST_NAMES: [&str; 16] = [
    "Moreau",
    "Okafor",
    "Rossi",
    "Novak",
    "Silva",
    "Berg",
    "Kowalski",
    "Haddad",
    "Tanaka",
    "Dubois",
    "Lindqvist",
    "Costa",
    "Weber",
    "Ivanova",
    "Murphy",
    "Castillo",
];
const DISHES: [&str; 12] = [
    "Soup of the day",
    "Steak frites",
    "Caesar salad",
    "Risotto",
    "Tiramisu",
    "Margherita",
    "Grilled salmon",
    "Ratatouille",
    "Cheeseburger",
    "Pad thai",
    "Crème brûlée",
    "Espresso",
];
const NOTES: [&str; 4] = ["no onions", "well done", "gluten free", "extra sauce"];

/// A well-mixed 64-bit value of `n` and a per-field `salt` (SplitMix64's finaliser).
fn mix(n: u64, salt: u64) -> u64 {
    let mut z = n
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(salt.wrapping_mul(0xD1B5_4A32_D192_ED03));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn to_doc<T: serde::Serialize>(value: &T) -> Option<Doc> {
    brigade_kit::resource::to_doc(value).ok()
}

/// Preloaded waiter `n`.
fn waiter(n: u64) -> Waiter {
    let shift = [Shift::Morning, Shift::Evening, Shift::Night][(mix(n, 1) % 3) as usize];
    Waiter {
        id: preload_id(n),
        name: format!(
            "{} {}",
            FIRST_NAMES[(mix(n, 2) % 16) as usize],
            LAST_NAMES[(mix(n, 3) % 16) as usize]
        ),
        shift,
        active: !mix(n, 4).is_multiple_of(10),
    }
}

/// Whether preloaded table `k` is occupied (two in five are).
fn occupied(k: u64) -> bool {
    mix(k, 5) % 5 < 2
}

/// Preloaded table `n` of `total`.
fn table(n: u64, total: u64) -> Table {
    let seats = [2, 2, 4, 4, 4, 6, 8, 10][(mix(n, 6) % 8) as usize];
    let number = u32::try_from(FIRST_TABLE_NUMBER + n).unwrap_or(u32::MAX);
    if occupied(n) {
        Table {
            id: preload_id(n),
            number,
            seats,
            status: TableStatus::Occupied,
            waiter_id: Some(preload_id(mix(n, 7) % total.max(1))),
            party_size: Some(1 + (mix(n, 8) % u64::from(seats)) as u32),
        }
    } else {
        Table {
            id: preload_id(n),
            number,
            seats,
            status: TableStatus::Free,
            waiter_id: None,
            party_size: None,
        }
    }
}

/// RFC 3339 of `ms` milliseconds since the Unix epoch.
fn rfc3339(ms: u64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

/// Preloaded order `n` of `total`.
fn order(n: u64, total: u64) -> Order {
    let tables = (total / 10).max(1);
    let open = n >= total - total / 10;
    let status = if open {
        [
            OrderStatus::Queued,
            OrderStatus::Cooking,
            OrderStatus::Ready,
        ][(mix(n, 9) % 3) as usize]
    } else if mix(n, 9).is_multiple_of(10) {
        OrderStatus::Cancelled
    } else {
        OrderStatus::Served
    };
    // Open orders sit on occupied tables where the first few candidates offer one.
    let mut table = mix(n, 10) % tables;
    if open {
        if let Some(k) = (0..8)
            .map(|salt| mix(n, 20 + salt) % tables)
            .find(|&k| occupied(k))
        {
            table = k;
        }
    }
    let items = (0..1 + mix(n, 11) % 4)
        .map(|i| {
            let pick = mix(n, 100 + i);
            Item {
                dish: Dish::try_from(DISHES[(pick % 12) as usize].to_owned())
                    .expect("the dishes are valid"),
                qty: Qty::try_from(1 + (pick >> 8) as i64 % 3).expect("1..=3 is a valid qty"),
                notes: (pick >> 16).is_multiple_of(6).then(|| {
                    Notes::try_from(NOTES[((pick >> 24) % 4) as usize].to_owned())
                        .expect("the notes are valid")
                }),
            }
        })
        .collect();
    let created = PRELOAD_EPOCH_MS + n;
    let updated = if open && status == OrderStatus::Queued {
        created
    } else {
        created + 60_000 + mix(n, 12) % 3_600_000
    };
    Order {
        id: preload_id(n),
        table_id: preload_id(table),
        items,
        status,
        created_at: rfc3339(created),
        updated_at: rfc3339(updated),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn docs(collection: &str, total: u64) -> Vec<Doc> {
        RestaurantData.documents(collection, 0..total, total)
    }

    fn typed<T: serde::de::DeserializeOwned>(doc: &Doc) -> T {
        serde_json::from_value(serde_json::Value::Object(doc.clone())).expect("a valid document")
    }

    #[test]
    fn every_document_reads_back_as_the_services_type() {
        let waiters: Vec<Waiter> = docs("waiters", 500).iter().map(typed).collect();
        let tables: Vec<Table> = docs("tables", 500).iter().map(typed).collect();
        let orders: Vec<Order> = docs("orders", 500).iter().map(typed).collect();
        assert_eq!((waiters.len(), tables.len(), orders.len()), (500, 500, 500));
        assert!(
            docs("elsewhere", 10).is_empty(),
            "unknown collections get nothing"
        );
        // Ids are distinct and in order, as new ones would be.
        for ids in [
            waiters.iter().map(|w| w.id.clone()).collect::<Vec<_>>(),
            orders.iter().map(|o| o.id.clone()).collect(),
        ] {
            let mut sorted = ids.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted, ids);
        }
    }

    #[test]
    fn table_numbers_are_unique_and_clear_of_the_scenarios_range() {
        let tables: Vec<Table> = docs("tables", 2_000).iter().map(typed).collect();
        let numbers: HashSet<u32> = tables.iter().map(|t| t.number).collect();
        assert_eq!(numbers.len(), 2_000);
        assert!(tables
            .iter()
            .all(|t| u64::from(t.number) >= FIRST_TABLE_NUMBER));
        for t in &tables {
            match t.status {
                TableStatus::Occupied => {
                    assert!(t.party_size.unwrap() <= t.seats && t.waiter_id.is_some())
                }
                TableStatus::Free => assert!(t.party_size.is_none() && t.waiter_id.is_none()),
            }
        }
    }

    #[test]
    fn filtered_lists_select_realistic_fractions() {
        let total = 10_000;
        let share = |count: usize| count as f64 / total as f64;
        let waiters: Vec<Waiter> = docs("waiters", total).iter().map(typed).collect();
        for shift in [Shift::Morning, Shift::Evening, Shift::Night] {
            let s = share(waiters.iter().filter(|w| w.shift == shift).count());
            assert!((0.30..0.37).contains(&s), "{shift:?}: {s}");
        }
        let tables: Vec<Table> = docs("tables", total).iter().map(typed).collect();
        let busy = share(
            tables
                .iter()
                .filter(|t| t.status == TableStatus::Occupied)
                .count(),
        );
        assert!((0.36..0.44).contains(&busy), "occupied {busy}");
        let orders: Vec<Order> = docs("orders", total).iter().map(typed).collect();
        let queued = share(
            orders
                .iter()
                .filter(|o| o.status == OrderStatus::Queued)
                .count(),
        );
        assert!((0.02..0.05).contains(&queued), "queued {queued}");
        let served = share(
            orders
                .iter()
                .filter(|o| o.status == OrderStatus::Served)
                .count(),
        );
        assert!((0.78..0.84).contains(&served), "served {served}");
        // Orders sit on a tenth of the tables, about ten per table, all of them preloaded tables.
        let table_ids: HashSet<&str> = tables.iter().map(|t| t.id.as_str()).collect();
        let used: HashSet<&str> = orders.iter().map(|o| o.table_id.as_str()).collect();
        assert!(used.iter().all(|id| table_ids.contains(id)));
        assert!(
            (800..=1_000).contains(&used.len()),
            "{} tables used",
            used.len()
        );
    }

    #[test]
    fn chunks_give_the_same_documents_as_one_go() {
        let whole = RestaurantData.documents("orders", 0..300, 300);
        let mut parts = RestaurantData.documents("orders", 0..120, 300);
        parts.extend(RestaurantData.documents("orders", 120..300, 300));
        assert_eq!(whole, parts);
    }
}
