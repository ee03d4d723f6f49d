//! Brigade's comparison of runtimes (`brigade compare`) and its studies (`brigade study ...`), on the
//! `brigade-load` generator: it starts any server binary that speaks the contract in [`servers`],
//! pins it and the generator to their CPUs, loads it, samples `/proc`, judges the runtimes and
//! writes the reports (markdown, JSON, HTML with charts).

pub mod baseline;
pub mod cli;
pub mod external;
pub mod judge;
pub mod measure;
pub mod pin;
pub mod plan;
pub mod procstat;
pub mod report;
pub mod run;
pub mod servers;
pub mod settings;
pub mod side;
pub mod state;
pub mod study;
pub mod thresholds;
pub mod verdict;

pub use judge::{judge, rejudge};
pub use run::run;
pub use settings::{CompareSettings, CpuChoice};
