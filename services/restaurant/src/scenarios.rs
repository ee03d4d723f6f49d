//! The restaurant's load scenarios, as data: TOML files in `services/restaurant/scenarios/` (the
//! syntax is in `docs/methodology.md`), compiled in. The load tester knows no restaurant; the
//! `brigade` binary registers these by name, so `brigade load --scenario waiter` and `brigade
//! compare` (which runs them all by default) find them.

/// The scenarios, name → TOML text, in the order `compare` runs them by default: each service
/// alone, all together, and the read-heavy mix.
const SCENARIOS: [(&str, &str); 5] = [
    ("waiter", include_str!("../scenarios/waiter.toml")),
    ("tables", include_str!("../scenarios/tables.toml")),
    ("kitchen", include_str!("../scenarios/kitchen.toml")),
    ("all", include_str!("../scenarios/all.toml")),
    ("read-heavy", include_str!("../scenarios/read-heavy.toml")),
];

/// The restaurant's load scenarios: name and TOML text, in the order they are run by default.
pub fn load_scenarios() -> &'static [(&'static str, &'static str)] {
    &SCENARIOS
}
