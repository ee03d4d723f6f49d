//! Brigade's load generator, scenarios, comparison and reports. Knows nothing about restaurants:
//! scenarios are data (TOML files), targets are URLs.

pub mod result;

// --- the generator (engine, scenarios, histograms, `brigade load`) ---
pub mod cli;
pub mod engine;
pub mod histogram;
pub mod machine;
pub mod scenario;
pub mod table;

// --- the comparison (`brigade compare`) and its reports ---
pub mod compare;
pub mod report;

// --- the studies (`brigade study storage`, ...), written with the same report writer ---
pub mod study;
