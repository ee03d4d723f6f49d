//! The domain's types. Every rule on input lives here, in the types themselves: a value that
//! deserializes is valid, so handlers never re-check. A rule that fails is a 422 naming the field
//! (the JSON decoder adds the field's path to the message).

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

/// Defines a string newtype whose length (in characters) must lie in a range.
macro_rules! bounded_text {
    ($(#[$doc:meta])* $name:ident, $min:expr, $max:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl TryFrom<String> for $name {
            type Error = String;
            fn try_from(s: String) -> Result<Self, String> {
                let n = s.chars().count();
                if !($min..=$max).contains(&n) || (n > 0 && s.trim().is_empty()) {
                    return Err(format!("must be {}..{} characters and not blank (got {n})", $min, $max));
                }
                Ok($name(s))
            }
        }

        impl From<$name> for String {
            fn from(v: $name) -> String {
                v.0
            }
        }

        impl $name {
            /// The text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                // Not blank: empty (where allowed) or holding something other than white space.
                let pattern = if $min > 0 { "\\S" } else { "^$|\\S" };
                json_schema!({"type": "string", "minLength": $min, "maxLength": $max, "pattern": pattern})
            }
        }
    };
}

/// Defines an integer newtype that must lie in a range.
macro_rules! bounded_int {
    ($(#[$doc:meta])* $name:ident, $min:expr, $max:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "serde_json::Number", into = "u32")]
        pub struct $name(u32);

        impl TryFrom<serde_json::Number> for $name {
            type Error = String;
            fn try_from(n: serde_json::Number) -> Result<Self, String> {
                // JSON Schema counts 15.0 as the integer 15 (so does a client that sends it), so a
                // whole number written with a fraction is that number.
                let whole = n.as_i64().or_else(|| {
                    n.as_f64()
                        .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e18)
                        .map(|f| f as i64)
                });
                match whole {
                    Some(v) => $name::try_from(v),
                    None => Err(format!("must be a whole number {}..={} (got {n})", $min, $max)),
                }
            }
        }

        impl TryFrom<i64> for $name {
            type Error = String;
            fn try_from(n: i64) -> Result<Self, String> {
                if !($min..=$max).contains(&n) {
                    return Err(format!("must be {}..={} (got {n})", $min, $max));
                }
                Ok($name(n as u32))
            }
        }

        impl From<$name> for u32 {
            fn from(v: $name) -> u32 {
                v.0
            }
        }

        impl $name {
            /// The number.
            pub fn get(self) -> u32 {
                self.0
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({"type": "integer", "minimum": $min, "maximum": $max})
            }
        }
    };
}

bounded_text!(
    /// A waiter's name: 1..100 characters.
    WaiterName, 1, 100
);
bounded_text!(
    /// A dish: 1..100 characters.
    Dish, 1, 100
);
bounded_text!(
    /// Notes on an item: up to 500 characters.
    Notes, 0, 500
);
bounded_int!(
    /// A table's number: 1 or more.
    TableNumber, 1, i64::from(u32::MAX)
);
bounded_int!(
    /// A table's seats: 1..20.
    Seats, 1, 20
);
bounded_int!(
    /// The size of a party: 1..20 (and no more than the table's seats).
    PartySize, 1, 20
);
bounded_int!(
    /// How many of a dish: 1..50.
    Qty, 1, 50
);

/// A reference to another resource's id: 1..64 of `[A-Za-z0-9_-]`. Anything else (`$gt`, `../x`,
/// an object) is refused before it reaches a store or a peer's URL.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Id(String);

impl TryFrom<String> for Id {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        let ok = (1..=64).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if ok {
            Ok(Id(s))
        } else {
            Err("must be an id: 1..64 letters, digits, '-' or '_'".into())
        }
    }
}

impl JsonSchema for Id {
    fn schema_name() -> Cow<'static, str> {
        "Id".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"})
    }
}

impl From<Id> for String {
    fn from(v: Id) -> String {
        v.0
    }
}

impl Id {
    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A waiter's shift.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Shift {
    /// Morning.
    Morning,
    /// Evening.
    Evening,
    /// Night.
    Night,
}

impl Shift {
    /// The shift's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Shift::Morning => "morning",
            Shift::Evening => "evening",
            Shift::Night => "night",
        }
    }
}

/// A table's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TableStatus {
    /// Nobody sits there.
    Free,
    /// A party sits there.
    Occupied,
}

impl TableStatus {
    /// The state's name.
    pub fn as_str(self) -> &'static str {
        match self {
            TableStatus::Free => "free",
            TableStatus::Occupied => "occupied",
        }
    }
}

/// An order's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OrderStatus {
    /// Taken, not started.
    Queued,
    /// Being cooked.
    Cooking,
    /// Ready to serve.
    Ready,
    /// Served (final).
    Served,
    /// Cancelled (final).
    Cancelled,
}

impl OrderStatus {
    /// The state's name.
    pub fn as_str(self) -> &'static str {
        match self {
            OrderStatus::Queued => "queued",
            OrderStatus::Cooking => "cooking",
            OrderStatus::Ready => "ready",
            OrderStatus::Served => "served",
            OrderStatus::Cancelled => "cancelled",
        }
    }

    /// Whether an order may go from `self` to `next`: queued→cooking→ready→served, and
    /// queued|cooking→cancelled.
    pub fn can_become(self, next: OrderStatus) -> bool {
        use OrderStatus::*;
        matches!(
            (self, next),
            (Queued, Cooking)
                | (Cooking, Ready)
                | (Ready, Served)
                | (Queued, Cancelled)
                | (Cooking, Cancelled)
        )
    }

    /// Whether items may still be added.
    pub fn accepts_items(self) -> bool {
        matches!(self, OrderStatus::Queued | OrderStatus::Cooking)
    }
}

/// A waiter as stored and answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Waiter {
    /// Opaque id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Shift.
    pub shift: Shift,
    /// Whether the waiter is working.
    pub active: bool,
}

/// `POST /waiters`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewWaiter {
    /// Name.
    pub name: WaiterName,
    /// Shift.
    pub shift: Shift,
}

/// `PUT /waiters/{id}`: any of the fields; those given replace the stored ones.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaiterUpdate {
    /// New name.
    pub name: Option<WaiterName>,
    /// New shift.
    pub shift: Option<Shift>,
    /// Whether working.
    pub active: Option<bool>,
}

/// A table as stored and answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Table {
    /// Opaque id.
    pub id: String,
    /// The number on the table, unique.
    pub number: u32,
    /// Seats.
    pub seats: u32,
    /// Free or occupied.
    pub status: TableStatus,
    /// The waiter serving it while occupied.
    pub waiter_id: Option<String>,
    /// The party's size while occupied.
    pub party_size: Option<u32>,
}

/// `POST /tables`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTable {
    /// Number, unique.
    pub number: TableNumber,
    /// Seats.
    pub seats: Seats,
}

/// `POST /tables/{id}/seat`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SeatParty {
    /// How many sit down.
    pub party_size: PartySize,
    /// Who serves them.
    pub waiter_id: Id,
}

/// One line of an order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Item {
    /// The dish.
    pub dish: Dish,
    /// How many.
    pub qty: Qty,
    /// Notes for the kitchen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<Notes>,
}

/// 1..100 items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Vec<Item>", into = "Vec<Item>")]
pub struct Items(Vec<Item>);

impl TryFrom<Vec<Item>> for Items {
    type Error = String;
    fn try_from(v: Vec<Item>) -> Result<Self, String> {
        if v.is_empty() || v.len() > 100 {
            return Err(format!("must hold 1..100 items (got {})", v.len()));
        }
        Ok(Items(v))
    }
}

impl JsonSchema for Items {
    fn schema_name() -> Cow<'static, str> {
        "Items".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let item = generator.subschema_for::<Item>();
        json_schema!({"type": "array", "items": item, "minItems": 1, "maxItems": 100})
    }
}

impl From<Items> for Vec<Item> {
    fn from(v: Items) -> Vec<Item> {
        v.0
    }
}

/// An order as stored and answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Order {
    /// Opaque id.
    pub id: String,
    /// The table it is for.
    pub table_id: String,
    /// Its items; the document grows as items are added.
    pub items: Vec<Item>,
    /// Its state.
    pub status: OrderStatus,
    /// When it was taken (RFC 3339).
    pub created_at: String,
    /// When it last changed (RFC 3339).
    pub updated_at: String,
}

/// `POST /orders`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewOrder {
    /// The table.
    pub table_id: Id,
    /// The items.
    pub items: Items,
}

/// `POST /orders/{id}/items`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MoreItems {
    /// Items to append.
    pub items: Items,
}

/// `POST /orders/{id}/status`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusChange {
    /// The state to move to.
    pub status: OrderStatus,
}

/// Now, as RFC 3339.
pub fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use brigade_kit::http::decode_json;
    use brigade_kit::ErrorCode;

    #[test]
    fn names_must_be_1_to_100_characters_and_not_blank() {
        assert!(decode_json::<NewWaiter>(br#"{"name":"Ana","shift":"morning"}"#).is_ok());
        let long = format!(r#"{{"name":"{}","shift":"night"}}"#, "é".repeat(100));
        assert!(
            decode_json::<NewWaiter>(long.as_bytes()).is_ok(),
            "100 characters (200 bytes) fit"
        );
        for bad in [r#""""#, r#""   ""#, &format!("\"{}\"", "x".repeat(101))] {
            let body = format!(r#"{{"name":{bad},"shift":"night"}}"#);
            let e = decode_json::<NewWaiter>(body.as_bytes()).unwrap_err();
            assert_eq!(e.code, ErrorCode::Unprocessable);
            assert!(e.message.starts_with("name: "), "{}", e.message);
        }
    }

    #[test]
    fn unknown_shifts_and_fields_are_422_naming_them() {
        let e = decode_json::<NewWaiter>(br#"{"name":"A","shift":"noon"}"#).unwrap_err();
        assert_eq!(e.code, ErrorCode::Unprocessable);
        assert!(e.message.contains("shift"), "{}", e.message);
        let e =
            decode_json::<NewWaiter>(br#"{"name":"A","shift":"night","boss":true}"#).unwrap_err();
        assert!(e.message.contains("boss"), "{}", e.message);
    }

    #[test]
    fn numbers_out_of_range_are_422_naming_the_field() {
        for (body, field) in [
            (r#"{"number":0,"seats":4}"#, "number"),
            (r#"{"number":-1,"seats":4}"#, "number"),
            (r#"{"number":99999999999,"seats":4}"#, "number"),
            (r#"{"number":1,"seats":21}"#, "seats"),
            (r#"{"number":1,"seats":1e30}"#, "seats"),
            (r#"{"number":"1","seats":2}"#, "number"),
            (r#"{"number":1.5,"seats":2}"#, "number"),
        ] {
            let e = decode_json::<NewTable>(body.as_bytes()).unwrap_err();
            assert_eq!(e.code, ErrorCode::Unprocessable, "{body}");
            assert!(
                e.message.starts_with(&format!("{field}: ")),
                "{body}: {}",
                e.message
            );
        }
    }

    #[test]
    fn a_whole_number_written_with_a_fraction_is_that_number() {
        let t: NewTable = decode_json(br#"{"number":3.0,"seats":15.0}"#).unwrap();
        assert_eq!((t.number.get(), t.seats.get()), (3, 15));
    }

    #[test]
    fn ids_that_look_like_operators_or_paths_are_refused() {
        for bad in [
            r#""$gt""#,
            r#"{"$ne":1}"#,
            r#""../waiters""#,
            r#""""#,
            r#""a b""#,
        ] {
            let body = format!(r#"{{"party_size":2,"waiter_id":{bad}}}"#);
            let e = decode_json::<SeatParty>(body.as_bytes()).unwrap_err();
            assert_eq!(e.code, ErrorCode::Unprocessable, "{bad}");
            assert!(e.message.starts_with("waiter_id: "), "{}", e.message);
        }
        assert!(decode_json::<SeatParty>(br#"{"party_size":2,"waiter_id":"abc-DEF_09"}"#).is_ok());
    }

    #[test]
    fn orders_need_1_to_100_valid_items() {
        let item = r#"{"dish":"soup","qty":2}"#;
        let ok = format!(r#"{{"table_id":"t1","items":[{item}]}}"#);
        assert!(decode_json::<NewOrder>(ok.as_bytes()).is_ok());
        let none = r#"{"table_id":"t1","items":[]}"#;
        assert!(decode_json::<NewOrder>(none.as_bytes())
            .unwrap_err()
            .message
            .starts_with("items: "));
        let many = format!(
            r#"{{"table_id":"t1","items":[{}]}}"#,
            vec![item; 101].join(",")
        );
        assert_eq!(
            decode_json::<NewOrder>(many.as_bytes()).unwrap_err().code,
            ErrorCode::Unprocessable
        );
        let e = decode_json::<NewOrder>(br#"{"table_id":"t1","items":[{"dish":"soup","qty":51}]}"#)
            .unwrap_err();
        assert!(e.message.starts_with("items[0].qty: "), "{}", e.message);
        let notes = format!(
            r#"{{"table_id":"t1","items":[{{"dish":"a","qty":1,"notes":"{}"}}]}}"#,
            "n".repeat(501)
        );
        assert!(decode_json::<NewOrder>(notes.as_bytes())
            .unwrap_err()
            .message
            .contains("notes"));
    }

    #[test]
    fn order_status_moves_only_forward_or_to_cancelled() {
        use OrderStatus::*;
        assert!(
            Queued.can_become(Cooking) && Cooking.can_become(Ready) && Ready.can_become(Served)
        );
        assert!(Queued.can_become(Cancelled) && Cooking.can_become(Cancelled));
        for (a, b) in [
            (Queued, Ready),
            (Ready, Cancelled),
            (Served, Queued),
            (Cancelled, Cooking),
            (Queued, Queued),
        ] {
            assert!(!a.can_become(b), "{a:?} -> {b:?}");
        }
        assert!(Queued.accepts_items() && Cooking.accepts_items() && !Ready.accepts_items());
    }
}
