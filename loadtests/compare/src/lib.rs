//! Brigade's comparison of runtimes (`brigade compare`) as a pipeline: plan, launch, measure, judge,
//! render ([`run`]).
//!
//! It stands on the measurement core (`brigade-meter`: servers, pinning, sampling, isolated runs,
//! side-by-side window sets), the verdict statistics (`brigade-stats`) and the report types and
//! renderers below it (`brigade-report`): compare fills the report in, the renderers read it.

pub mod baseline;
mod capacity;
pub mod cli;
mod correctness;
mod external;
pub mod judge;
mod measure;
mod phases;
mod plan;
mod protocols;
mod run;
mod settings;
mod side;
mod state;
mod stores;

pub use judge::{judge, rejudge};
pub use run::run;
pub use settings::CompareSettings;
