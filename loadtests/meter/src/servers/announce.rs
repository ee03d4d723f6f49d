//! What a server says on stdout about what it serves: one JSON object per line, a `listening` line
//! per service and a `preloaded` line per collection filled (see [`super`] for the contract). The
//! older text form (`listening service=NAME url=URL runtime=R store=S workers=N`, `preloaded
//! service=NAME collection=C documents=N existing=N seconds=F`) is read too.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use brigade_load::scenario::DEFAULT_SERVICE;
use serde::Deserialize;

/// A parsed `listening` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listening {
    /// The service's name.
    pub service: String,
    /// Its base URL.
    pub url: String,
    /// The runtime it serves with, if said.
    pub runtime: Option<String>,
    /// The store kind, if said.
    pub store: Option<String>,
    /// The worker count, if said.
    pub workers: Option<u32>,
    /// The server limits it runs under, in words, if said.
    pub limits: Option<String>,
}

/// A parsed `preloaded` line, printed before the `listening` lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Preloaded {
    /// The service.
    pub service: String,
    /// The collection filled.
    pub collection: String,
    /// Documents written.
    pub documents: u64,
    /// Documents it held already (then none were written).
    pub existing: u64,
    /// Seconds the fill took.
    pub seconds: f64,
}

/// The JSON lines of the contract.
#[derive(Debug, Deserialize)]
#[serde(tag = "brigade", rename_all = "snake_case")]
enum Announcement {
    Listening {
        service: String,
        url: String,
        runtime: Option<String>,
        store: Option<String>,
        workers: Option<u32>,
        #[serde(default)]
        limits: Option<String>,
    },
    Preloaded {
        service: String,
        collection: String,
        documents: u64,
        existing: u64,
        seconds: f64,
    },
}

/// The JSON announcement on `line`, if it is one.
fn json(line: &str) -> Option<Announcement> {
    let line = line.trim();
    if !line.starts_with('{') {
        return None;
    }
    serde_json::from_str(line).ok()
}

/// The `key=value` words of a text line starting with `tag`.
fn text_fields<'a>(line: &'a str, tag: &str) -> Option<BTreeMap<&'a str, &'a str>> {
    let mut words = line.split_whitespace();
    if words.next()? != tag {
        return None;
    }
    Some(words.filter_map(|w| w.split_once('=')).collect())
}

impl Listening {
    /// Parses a stdout line; `None` unless it is a `listening` announcement with a service and a
    /// URL.
    pub fn parse(line: &str) -> Option<Listening> {
        if let Some(Announcement::Listening {
            service,
            url,
            runtime,
            store,
            workers,
            limits,
        }) = json(line)
        {
            return Some(Listening {
                service,
                url: url.trim_end_matches('/').to_owned(),
                runtime,
                store,
                workers,
                limits,
            });
        }
        let fields = text_fields(line, "listening")?;
        Some(Listening {
            service: fields.get("service")?.to_string(),
            url: fields.get("url")?.trim_end_matches('/').to_string(),
            runtime: fields.get("runtime").map(|s| s.to_string()),
            store: fields.get("store").map(|s| s.to_string()),
            workers: fields.get("workers").and_then(|w| w.parse().ok()),
            limits: None,
        })
    }
}

impl Preloaded {
    /// Parses a stdout line; `None` unless it is a complete `preloaded` announcement.
    pub fn parse(line: &str) -> Option<Preloaded> {
        if let Some(Announcement::Preloaded {
            service,
            collection,
            documents,
            existing,
            seconds,
        }) = json(line)
        {
            return Some(Preloaded {
                service,
                collection,
                documents,
                existing,
                seconds,
            });
        }
        let fields = text_fields(line, "preloaded")?;
        Some(Preloaded {
            service: fields.get("service")?.to_string(),
            collection: fields.get("collection")?.to_string(),
            documents: fields.get("documents")?.parse().ok()?,
            existing: fields.get("existing")?.parse().ok()?,
            seconds: fields.get("seconds")?.parse().ok()?,
        })
    }
}

/// The services a server announced, in the order it announced them, with their base URLs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Announced {
    services: Vec<(String, String)>,
}

impl Announced {
    /// Records a service (a second announcement of the same name replaces its URL).
    pub fn insert(&mut self, service: String, url: String) {
        match self.services.iter_mut().find(|(s, _)| *s == service) {
            Some(existing) => existing.1 = url,
            None => self.services.push((service, url)),
        }
    }

    /// How many services were announced.
    pub fn len(&self) -> usize {
        self.services.len()
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.services.is_empty()
    }

    /// Their names, in the order announced.
    pub fn names(&self) -> Vec<String> {
        self.services.iter().map(|(s, _)| s.clone()).collect()
    }

    /// Service → URL.
    pub fn urls(&self) -> BTreeMap<String, String> {
        self.services.iter().cloned().collect()
    }

    /// The first service's URL: where a scenario that names no service goes.
    pub fn first_url(&self) -> Option<&str> {
        self.services.first().map(|(_, url)| url.as_str())
    }

    /// The targets of a scenario that talks to `services`: each to the service of that name, the
    /// unnamed one ([`DEFAULT_SERVICE`]) to the first announced; a service the server did not
    /// announce is refused, naming those it did.
    pub fn targets(&self, scenario: &str, services: &[String]) -> Result<BTreeMap<String, String>> {
        refuse_unknown(&self.names(), scenario, services)?;
        let urls = self.urls();
        Ok(services
            .iter()
            .filter_map(|service| {
                let url = match urls.get(service) {
                    Some(url) => Some(url.as_str()),
                    None => self.first_url(),
                };
                url.map(|url| (service.clone(), url.to_owned()))
            })
            .collect())
    }
}

/// Refuses a scenario that talks to a service `known` does not hold (the unnamed one,
/// [`DEFAULT_SERVICE`], goes anywhere).
pub fn refuse_unknown(known: &[String], scenario: &str, services: &[String]) -> Result<()> {
    let missing: Vec<&str> = services
        .iter()
        .filter(|s| s.as_str() != DEFAULT_SERVICE && !known.contains(s))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        bail!(
            "scenario {scenario} talks to {}, which the server does not announce (it serves: {})",
            missing
                .iter()
                .map(|s| format!("{s:?}"))
                .collect::<Vec<_>>()
                .join(", "),
            if known.is_empty() {
                "nothing".to_owned()
            } else {
                known.join(", ")
            }
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_listening_lines_are_parsed_and_others_ignored() {
        let line = r#"{"brigade":"listening","service":"links","url":"http://127.0.0.1:9000/","runtime":"axum","store":"memory","workers":2}"#;
        assert_eq!(
            Listening::parse(line),
            Some(Listening {
                service: "links".into(),
                url: "http://127.0.0.1:9000".into(),
                runtime: Some("axum".into()),
                store: Some("memory".into()),
                workers: Some(2),
                limits: None,
            })
        );
        // Fields a later server adds are ignored; missing optional ones are None.
        let lean = r#"{"brigade":"listening","service":"a","url":"http://h:1","extra":true}"#;
        assert_eq!(Listening::parse(lean).unwrap().workers, None);
        for other in [
            r#"{"brigade":"listening","service":"a"}"#,
            r#"{"brigade":"stopping"}"#,
            r#"{"level":"INFO","message":"listening"}"#,
            "2024-01-01 INFO listening on 8082",
            "{not json",
        ] {
            assert_eq!(Listening::parse(other), None, "{other}");
        }
        assert_eq!(Preloaded::parse(line), None);
    }

    #[test]
    fn json_preloaded_lines_are_parsed() {
        let line = r#"{"brigade":"preloaded","service":"links","collection":"links","documents":200,"existing":0,"seconds":0.125}"#;
        let p = Preloaded::parse(line).unwrap();
        assert_eq!(
            (p.collection.as_str(), p.documents, p.existing, p.seconds),
            ("links", 200, 0, 0.125)
        );
        assert_eq!(Listening::parse(line), None);
        let partial = r#"{"brigade":"preloaded","service":"links","collection":"links"}"#;
        assert_eq!(Preloaded::parse(partial), None);
    }

    #[test]
    fn the_older_text_form_is_still_read() {
        let line =
            "listening service=api url=http://127.0.0.1:8082 runtime=axum store=embedded workers=2";
        let parsed = Listening::parse(line).unwrap();
        assert_eq!(parsed.service, "api");
        assert_eq!(parsed.url, "http://127.0.0.1:8082");
        assert_eq!(parsed.runtime.as_deref(), Some("axum"));
        assert_eq!(parsed.workers, Some(2));
        assert_eq!(Listening::parse("listening service=api"), None);
        let preloaded = Preloaded::parse(
            "preloaded service=api collection=things documents=200 existing=0 seconds=0.125",
        )
        .unwrap();
        assert_eq!(
            (preloaded.collection.as_str(), preloaded.documents),
            ("things", 200)
        );
        assert_eq!(Preloaded::parse(line), None);
    }

    #[test]
    fn targets_follow_the_announcements_and_unknown_services_are_refused() {
        let mut announced = Announced::default();
        announced.insert("links".into(), "http://h:1".into());
        announced.insert("tags".into(), "http://h:2".into());
        let services = vec!["tags".to_owned(), DEFAULT_SERVICE.to_owned()];
        let targets = announced.targets("mix", &services).unwrap();
        assert_eq!(targets["tags"], "http://h:2");
        assert_eq!(
            targets[DEFAULT_SERVICE], "http://h:1",
            "the first announced"
        );
        let err = announced
            .targets("mix", &["tags".to_owned(), "users".to_owned()])
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "scenario mix talks to \"users\", which the server does not announce (it serves: \
             links, tags)"
        );
    }
}
