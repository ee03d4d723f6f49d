//! Brigade's comparison of runtimes (`brigade compare`): it plans the runs, makes every run's
//! fresh state, judges the runtimes and writes the reports (markdown, JSON, HTML with charts).
//!
//! It stands on the measurement core (`brigade-meter`: servers, pinning, sampling, isolated runs,
//! side-by-side window sets) and the verdict statistics (`brigade-stats`). The studies
//! (`brigade-studies`) write their reports with its report types and writer.

pub mod baseline;
pub mod capacity;
pub mod cli;
pub mod clock;
pub mod external;
pub mod judge;
pub mod measure;
pub mod plan;
pub mod protocols;
pub mod report;
pub mod run;
pub mod settings;
pub mod side;
pub mod state;
pub mod stores;
pub mod thresholds;
pub mod verdict;

pub use brigade_meter::{pin, procstat, servers};
pub use judge::{judge, rejudge};
pub use run::run;
pub use settings::{CompareSettings, CpuChoice};
