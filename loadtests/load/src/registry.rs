//! Scenarios and targets known by name. The engine knows no application: it brings only the
//! scenarios that name no service (`hello`, `bytes`, `strings`, `static`: the bench endpoints every
//! Brigade service answers), and
//! an application registers its own (name → TOML text) and the URLs its services listen on by
//! default. The `brigade` binary registers the restaurant's; a user's binary registers theirs:
//!
//! ```
//! let mut registry = brigade_load::Registry::new();
//! registry
//!     .scenario("links", "name = \"links\"\nservice = \"bookmarks\"\n[[request]]\npath = \"/links\"\n")
//!     .target("bookmarks", "http://127.0.0.1:8080");
//! assert_eq!(registry.load("links").unwrap().services(), ["bookmarks"]);
//! assert_eq!(registry.names(), ["hello", "bytes", "strings", "static", "links"]);
//! ```

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::scenario::{Scenario, DEFAULT_SERVICE};

/// The engine's own scenarios, on the bench endpoints every Brigade service answers: they name no
/// service, so they go to whichever target is given.
const ENGINE_SCENARIOS: &[(&str, &str)] = &[
    ("hello", include_str!("../scenarios/hello.toml")),
    ("bytes", include_str!("../scenarios/bytes.toml")),
    ("strings", include_str!("../scenarios/strings.toml")),
    ("static", include_str!("../scenarios/static.toml")),
];

/// Scenarios by name and default targets by service, as the engine and an application registered
/// them.
#[derive(Debug, Clone)]
pub struct Registry {
    scenarios: Vec<Registered>,
    targets: Vec<(String, String)>,
}

/// One registered scenario.
#[derive(Debug, Clone)]
struct Registered {
    name: String,
    toml: Cow<'static, str>,
    /// Registered by the application (not one of the engine's own).
    application: bool,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

impl Registry {
    /// The engine's own scenarios (`hello`, `bytes`, `strings`, `static`) and no targets.
    pub fn new() -> Registry {
        Registry {
            scenarios: ENGINE_SCENARIOS
                .iter()
                .map(|(name, toml)| Registered {
                    name: (*name).to_owned(),
                    toml: Cow::Borrowed(*toml),
                    application: false,
                })
                .collect(),
            targets: Vec::new(),
        }
    }

    /// Registers a scenario under `name` (its TOML text: `docs/methodology.md` has the syntax); a
    /// later registration of the same name replaces the earlier one. The text is checked when the
    /// scenario is loaded (and by the application's tests), not here.
    pub fn scenario(
        &mut self,
        name: impl Into<String>,
        toml: impl Into<Cow<'static, str>>,
    ) -> &mut Registry {
        let entry = Registered {
            name: name.into(),
            toml: toml.into(),
            application: true,
        };
        match self.scenarios.iter_mut().find(|s| s.name == entry.name) {
            Some(existing) => *existing = entry,
            None => self.scenarios.push(entry),
        }
        self
    }

    /// Registers where `service` listens by default (`brigade load` without `--target`); the first
    /// registered target also serves the scenarios that name no service.
    pub fn target(&mut self, service: impl Into<String>, url: impl Into<String>) -> &mut Registry {
        let (service, url) = (service.into(), url.into());
        match self.targets.iter_mut().find(|(s, _)| *s == service) {
            Some(existing) => existing.1 = url,
            None => self.targets.push((service, url)),
        }
        self
    }

    /// Every registered scenario's name, in registration order (the engine's first).
    pub fn names(&self) -> Vec<&str> {
        self.scenarios.iter().map(|s| s.name.as_str()).collect()
    }

    /// The names of the scenarios the application registered (not the engine's own), in order:
    /// what `compare` runs when no scenario is named.
    pub fn application_names(&self) -> Vec<&str> {
        self.scenarios
            .iter()
            .filter(|s| s.application)
            .map(|s| s.name.as_str())
            .collect()
    }

    /// The TOML text registered under `name`.
    pub fn toml(&self, name: &str) -> Option<&str> {
        self.scenarios
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.toml.as_ref())
    }

    /// The scenario registered under `name`, parsed.
    pub fn get(&self, name: &str) -> Result<Scenario> {
        let Some(text) = self.toml(name) else {
            bail!(
                "no scenario registered as {name:?}; registered: {}",
                self.names().join(", ")
            );
        };
        Scenario::parse(text, name).with_context(|| format!("registered scenario {name}"))
    }

    /// The registered scenario `name_or_path` names, else the TOML file at that path.
    pub fn load(&self, name_or_path: &str) -> Result<Scenario> {
        if self.toml(name_or_path).is_some() {
            self.get(name_or_path)
        } else if Path::new(name_or_path).exists() {
            Scenario::from_file(name_or_path)
        } else {
            bail!(
                "{name_or_path:?} is neither a registered scenario ({}) nor a file",
                self.names().join(", ")
            )
        }
    }

    /// The registered default targets, service → URL, in registration order.
    pub fn default_targets(&self) -> &[(String, String)] {
        &self.targets
    }

    /// The default targets as the engine takes them: every registered service, and the scenarios
    /// that name no service ([`DEFAULT_SERVICE`]) sent to the first registered one.
    pub fn targets(&self) -> BTreeMap<String, String> {
        let mut map: BTreeMap<String, String> = self.targets.iter().cloned().collect();
        if let Some((_, first)) = self.targets.first() {
            map.entry(DEFAULT_SERVICE.to_owned())
                .or_insert_with(|| first.clone());
        }
        map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engine_brings_the_bench_scenarios_which_name_no_service() {
        let registry = Registry::new();
        assert_eq!(registry.names(), ["hello", "bytes", "strings", "static"]);
        assert!(registry.application_names().is_empty());
        for name in registry.names() {
            let scenario = registry.get(name).unwrap();
            assert_eq!(scenario.services(), [DEFAULT_SERVICE], "{name}");
            assert_eq!(scenario.name(), name);
            // Fixed requests: each is encoded once per run.
            assert!(
                scenario.requests().iter().all(|r| r.literal().is_some()),
                "{name}"
            );
            for r in scenario.requests() {
                assert!(
                    r.path.display().starts_with("/bench/"),
                    "{name}: {}",
                    r.name
                );
            }
        }
        assert!(registry.targets().is_empty());

        // The bodies are the sizes the studies name.
        let bytes = registry.get("bytes").unwrap();
        let sent = bytes.requests()[0].literal().unwrap();
        assert_eq!(sent.body.len(), 100_000);
        let strings = registry.get("strings").unwrap();
        let sent = strings.requests()[1].literal().unwrap();
        let parsed: Vec<String> = serde_json::from_slice(&sent.body).unwrap();
        assert_eq!(parsed.len(), 5000);
        assert!(parsed.iter().all(|s| s.len() == 10));
        assert_ne!(parsed[0], parsed[1]);
        let sizes: Vec<String> = registry
            .get("static")
            .unwrap()
            .routes()
            .iter()
            .map(|r| r.rsplit('/').next().unwrap().to_owned())
            .collect();
        assert_eq!(sizes, ["256", "2048", "4096", "65536", "524288"]);
    }

    #[test]
    fn an_application_registers_scenarios_and_targets_and_may_replace_them() {
        let mut registry = Registry::new();
        registry
            .scenario(
                "a",
                "name = \"a\"\nservice = \"one\"\n[[request]]\npath = \"/\"\n",
            )
            .scenario("b", "not toml [")
            .target("one", "http://h:1")
            .target("two", "http://h:2")
            .target("one", "http://h:11");
        assert_eq!(
            registry.names(),
            ["hello", "bytes", "strings", "static", "a", "b"]
        );
        assert_eq!(registry.application_names(), ["a", "b"]);
        assert_eq!(registry.load("a").unwrap().services(), ["one"]);
        let err = format!("{:#}", registry.load("b").unwrap_err());
        assert!(err.contains("registered scenario b"), "{err}");
        let err = format!("{:#}", registry.load("nothing-by-that-name").unwrap_err());
        assert!(err.contains("hello, bytes, strings, static, a, b"), "{err}");
        // The first registered target also takes the scenarios that name no service.
        let targets = registry.targets();
        assert_eq!(targets["one"], "http://h:11");
        assert_eq!(targets["two"], "http://h:2");
        assert_eq!(targets[DEFAULT_SERVICE], "http://h:11");
        registry.scenario("hello", "name = \"mine\"\n[[request]]\npath = \"/x\"\n");
        assert_eq!(registry.get("hello").unwrap().name(), "mine");
        assert_eq!(
            registry.names(),
            ["hello", "bytes", "strings", "static", "a", "b"]
        );
    }
}
