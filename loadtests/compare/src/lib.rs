//! Brigade's comparison of runtimes (`brigade compare`) as a pipeline: plan, launch, measure, judge,
//! render ([`run`]).
//!
//! It stands on the measurement core (`brigade-meter`: servers, pinning, sampling, isolated runs,
//! side-by-side window sets), the verdict statistics (`brigade-stats`) and the report types and
//! renderers below it (`brigade-report`): compare fills the report in, the renderers read it.

pub mod baseline;
pub mod capacity;
pub mod cli;
pub mod external;
pub mod judge;
pub mod measure;
pub mod plan;
pub mod protocols;
pub mod run;
pub mod settings;
pub mod side;
pub mod state;
pub mod stores;

pub use judge::{judge, rejudge};
pub use run::run;
pub use settings::CompareSettings;
