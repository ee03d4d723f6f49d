//! The restaurant's load scenarios, checked with the generator that runs them: each parses, names
//! the services it talks to, plays its fixtures in order and renders valid JSON bodies; the
//! read-heavy mix writes at most a tenth.

use brigade_load::Registry;
use brigade_restaurant::scenarios::load_scenarios;
use brigade_restaurant::ServiceName;

fn registry() -> Registry {
    let mut registry = Registry::new();
    for (name, toml) in load_scenarios() {
        registry.scenario(*name, *toml);
    }
    registry
}

#[test]
fn every_scenario_parses_rehearses_and_talks_only_to_restaurant_services() {
    let registry = registry();
    let names: Vec<&str> = ServiceName::ALL.iter().map(|s| s.as_str()).collect();
    assert_eq!(
        registry.application_names(),
        ["waiter", "tables", "kitchen", "all", "read-heavy"]
    );
    for name in registry.application_names() {
        let s = registry
            .get(name)
            .unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert_eq!(s.name(), name);
        for service in s.services() {
            assert!(names.contains(&service.as_str()), "{name}: {service}");
        }
        let rendered = s.rehearse().unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert_eq!(rendered, s.requests().len(), "{name}");
    }
}

#[test]
fn services_come_in_first_use_order_setup_included() {
    let registry = registry();
    // The tables scenario creates waiters first; the kitchen's, waiters and tables.
    assert_eq!(
        registry.get("tables").unwrap().services(),
        ["waiter", "tables"]
    );
    assert_eq!(
        registry.get("kitchen").unwrap().services(),
        ["waiter", "tables", "kitchen"]
    );
    let mut all = registry.get("all").unwrap().services();
    all.sort();
    assert_eq!(all, ["kitchen", "tables", "waiter"]);
}

#[test]
fn read_heavy_writes_at_most_a_tenth() {
    let s = registry().get("read-heavy").unwrap();
    assert!(s.write_share() <= 0.10, "{}", s.write_share());
    assert!(s.write_share() > 0.0);
}
