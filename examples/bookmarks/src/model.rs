//! The bookmarks' types. Input is validated once, by the types a body decodes into (a body that
//! decodes is valid; a rule it breaks is a 422 naming the field); the stored and answered shape is
//! [`Bookmark`].

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

/// Gives a validated type the JSON Schema of its rule, inlined where it is used (for the OpenAPI
/// document: what a body must be is what the type accepts).
macro_rules! schema {
    ($name:ident, $generator:ident => $schema:expr) => {
        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema($generator: &mut SchemaGenerator) -> Schema {
                $schema
            }
        }
    };
}

schema!(User, _g => json_schema!({"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}));
schema!(Url, _g => json_schema!({"type": "string", "maxLength": 2048, "pattern": "^https?://\\S+$"}));
schema!(Title, _g => json_schema!({"type": "string", "minLength": 1, "maxLength": 200, "pattern": "\\S"}));
schema!(Tag, _g => json_schema!({"type": "string", "pattern": "^[a-z0-9-]{1,32}$"}));
schema!(Tags, g => {
    let tag = g.subschema_for::<Tag>();
    json_schema!({"type": "array", "items": tag, "maxItems": 10})
});

/// Checks `s` with `ok`, or says what it must be.
fn checked(s: String, ok: bool, rule: &str) -> Result<String, String> {
    if ok {
        Ok(s)
    } else {
        Err(format!("must be {rule}"))
    }
}

/// Whether every byte of `s` is a letter, a digit, `-` or `_`.
fn plain(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Whose bookmark it is: 1..64 letters, digits, `-` or `_`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct User(String);

impl TryFrom<String> for User {
    type Error = String;
    fn try_from(s: String) -> Result<User, String> {
        let ok = (1..=64).contains(&s.len()) && plain(&s);
        checked(s, ok, "1..64 letters, digits, '-' or '_'").map(User)
    }
}

impl From<User> for String {
    fn from(u: User) -> String {
        u.0
    }
}

/// The address bookmarked: `http://` or `https://`, at most 2048 bytes, no whitespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Url(String);

impl TryFrom<String> for Url {
    type Error = String;
    fn try_from(s: String) -> Result<Url, String> {
        let scheme = ["http://", "https://"]
            .iter()
            .find_map(|p| s.strip_prefix(p));
        let ok = scheme.is_some_and(|rest| !rest.is_empty())
            && s.len() <= 2048
            && !s.chars().any(char::is_whitespace);
        checked(s, ok, "an http:// or https:// URL of at most 2048 bytes").map(Url)
    }
}

impl From<Url> for String {
    fn from(u: Url) -> String {
        u.0
    }
}

/// A title: 1..200 characters, not blank.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Title(String);

impl TryFrom<String> for Title {
    type Error = String;
    fn try_from(s: String) -> Result<Title, String> {
        let ok = (1..=200).contains(&s.chars().count()) && !s.trim().is_empty();
        checked(s, ok, "1..200 characters, not blank").map(Title)
    }
}

impl From<Title> for String {
    fn from(t: Title) -> String {
        t.0
    }
}

/// A tag: 1..32 lower-case letters, digits or `-`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Tag(String);

impl TryFrom<String> for Tag {
    type Error = String;
    fn try_from(s: String) -> Result<Tag, String> {
        let ok = (1..=32).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        checked(s, ok, "1..32 lower-case letters, digits or '-'").map(Tag)
    }
}

impl From<Tag> for String {
    fn from(t: Tag) -> String {
        t.0
    }
}

/// At most 10 tags.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(try_from = "Vec<Tag>")]
pub struct Tags(Vec<Tag>);

impl TryFrom<Vec<Tag>> for Tags {
    type Error = String;
    fn try_from(v: Vec<Tag>) -> Result<Tags, String> {
        if v.len() <= 10 {
            Ok(Tags(v))
        } else {
            Err("at most 10 tags".to_string())
        }
    }
}

/// `POST /bookmarks`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewBookmark {
    /// Whose it is.
    pub user: User,
    /// What it points at.
    pub url: Url,
    /// What it is called.
    pub title: Title,
    /// Its tags (none if not given).
    #[serde(default)]
    pub tags: Tags,
}

/// A bookmark, as stored and answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Bookmark {
    /// Its id.
    pub id: String,
    /// Whose it is.
    pub user: String,
    /// What it points at; a user bookmarks a URL once.
    pub url: String,
    /// What it is called.
    pub title: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// Whether it was archived (once archived, it stays so).
    pub archived: bool,
}

impl Bookmark {
    /// A new, unarchived bookmark with id `id`.
    pub fn new(id: String, new: NewBookmark) -> Bookmark {
        Bookmark {
            id,
            user: new.user.into(),
            url: new.url.into(),
            title: new.title.into(),
            tags: new.tags.0.into_iter().map(String::from).collect(),
            archived: false,
        }
    }
}

/// What the store keeps: the bookmark and the key that makes a URL unique per user.
///
/// The store keeps single fields unique, and "once per user" is a pair; so the pair is stored as
/// one derived field, `user_url`, declared unique, and left out of answers (a [`Bookmark`] decoded
/// from the stored JSON simply does not have it).
#[derive(Debug, Serialize)]
pub struct Stored<'a> {
    /// The bookmark's fields.
    #[serde(flatten)]
    pub bookmark: &'a Bookmark,
    /// `user` and `url` with a space between them (neither can hold one).
    pub user_url: String,
}

impl<'a> Stored<'a> {
    /// `bookmark` with its unique key.
    pub fn of(bookmark: &'a Bookmark) -> Stored<'a> {
        Stored {
            user_url: format!("{} {}", bookmark.user, bookmark.url),
            bookmark,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brigade_kit::http::decode_json;
    use brigade_kit::ErrorCode;

    fn refused(body: &str, field: &str) {
        let e = decode_json::<NewBookmark>(body.as_bytes()).unwrap_err();
        assert_eq!(e.code, ErrorCode::Unprocessable, "{body}");
        assert!(e.message.starts_with(field), "{body}: {}", e.message);
    }

    #[test]
    fn every_field_has_its_rule_and_a_broken_rule_names_the_field() {
        let ok =
            r#"{"user":"ana","url":"https://a.example/x","title":"A","tags":["rust","web-1"]}"#;
        let new: NewBookmark = decode_json(ok.as_bytes()).unwrap();
        let b = Bookmark::new("1".into(), new);
        assert_eq!((b.tags.len(), b.archived), (2, false));
        refused(r#"{"user":"a b","url":"http://x","title":"A"}"#, "user");
        refused(r#"{"user":"","url":"http://x","title":"A"}"#, "user");
        refused(r#"{"user":"a","url":"ftp://x","title":"A"}"#, "url");
        refused(r#"{"user":"a","url":"http://","title":"A"}"#, "url");
        refused(r#"{"user":"a","url":"http://x y","title":"A"}"#, "url");
        refused(r#"{"user":"a","url":"http://x","title":"  "}"#, "title");
        refused(
            r#"{"user":"a","url":"http://x","title":"A","tags":["Rust"]}"#,
            "tags",
        );
        let eleven: Vec<String> = (0..11).map(|i| format!("\"t{i}\"")).collect();
        refused(
            &format!(
                r#"{{"user":"a","url":"http://x","title":"A","tags":[{}]}}"#,
                eleven.join(",")
            ),
            "tags",
        );
        refused(
            r#"{"user":"a","url":"http://x","title":"A","stars":5}"#,
            "stars",
        );
    }

    #[test]
    fn the_stored_document_carries_the_unique_key_and_the_answer_does_not() {
        let b = Bookmark::new(
            "1".into(),
            decode_json(br#"{"user":"ana","url":"http://x","title":"A"}"#).unwrap(),
        );
        let stored = serde_json::to_value(Stored::of(&b)).unwrap();
        assert_eq!(stored["user_url"], "ana http://x");
        let back: Bookmark = serde_json::from_value(stored).unwrap();
        assert_eq!(back, b);
        assert!(serde_json::to_value(&b).unwrap().get("user_url").is_none());
    }
}
