//! Brigade's load generator, scenarios, comparison and reports. Knows nothing about restaurants:
//! scenarios are data (TOML files), targets are URLs.

pub mod result;
