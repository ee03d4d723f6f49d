//! Brigade's reports as plain data and their renderers: what `brigade compare` and the studies found
//! ([`Report`], [`study::StudyReport`], serialized whole into `report.json`) and the documents made
//! from it (`report.md`, `report.html` with SVG charts). It sits below the code that measures and
//! judges (`brigade-compare`, `brigade-studies`): they fill these types in, the renderers here only
//! read them, and nothing here imports back.
//!
//! The data: one comparison's [`Report`] (`report.rs`: what it [`Measurements`] and what was
//! [`Judged`] of it, its notes derived in `notes.rs`), its settings (`settings.rs`), the store
//! state (`state.rs`), servers, runs and rows (`runs.rs`), verdicts (`cells.rs`, `verdict.rs`,
//! `comparison.rs`), thresholds, baseline and capacity searches. The table rows are the judge's
//! (one per scenario, preload, user count and runtime, each figure the median over the repeats),
//! so the markdown, the HTML and the JSON all show the same numbers. Fields added since the first reports carry serde defaults, so an older
//! `report.json` still reads (and `--rejudge` still works on it).
//!
//! Beside the comparison's report lives the general one every `brigade study` writes
//! ([`study::StudyReport`]: titled tables with named dimension and metric columns, charts as named
//! x/y series). Both open with the same [`setup::Setup`] section and go through the same writer
//! ([`write_all`], for anything that is a [`ReportDocument`]) into the same three files: the
//! renderers (`markdown.rs`, `html.rs`, the sections `answer.rs` and `capacity.rs`, `study/`) take
//! the helpers they share from `render.rs`, never from each other.

pub mod answer;
pub mod baseline;
pub mod capacity;
mod cells;
pub mod comparison;
pub mod correctness;
pub mod html;
pub mod json;
pub mod markdown;
mod notes;
pub mod render;
mod report;
mod runs;
mod settings;
pub mod setup;
mod state;
pub mod study;
pub mod thresholds;
pub mod verdict;
pub mod write;

pub use cells::{CellVerdict, LevelVerdict, PerCore, PooledVerdict, ScenarioVerdict};
pub use report::{cell_name, preload_varies, Judged, Measurements, Report, ThreadSetup, Versions};
pub use runs::{Row, RunRecord, ServerRecord};
pub use settings::{load_words, rate_words, rule_words, side_words, Settings, SideSetup, SloSetup};
pub use state::{PreparedState, StateReset, StateSetup};
pub use write::{write_all, ReportDocument, Written};
