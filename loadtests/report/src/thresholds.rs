//! `brigade compare --threshold 'p99<5ms' --threshold 'errors<0.1%'`: every threshold checked
//! against every completed run's totals (a run is one runtime at one scenario, user count, preload
//! and repeat, as `brigade load` checks its one run), and every failure named in the report and on
//! the terminal; the command exits non-zero when one fails. A run that failed outright fails every
//! threshold: it measured nothing that could hold one. The checks are made from the runs by
//! [`crate::check_thresholds`]; this module holds what a check is and how it is printed.

use serde::{Deserialize, Serialize};

use brigade_records::threshold::Check;

/// One threshold checked against one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunCheck {
    /// The run's index in the order of runs.
    pub run: usize,
    /// The runtime.
    pub runtime: String,
    /// The scenario.
    pub scenario: String,
    /// Users (open loop: connections).
    pub users: u32,
    /// Documents preloaded per collection.
    pub preload: u64,
    /// The repeat (0-based).
    pub repeat: u32,
    /// The threshold and how it went.
    pub check: Check,
}

impl RunCheck {
    /// `axum, hello, 10 users, repeat 1: p99<5ms failed: p99 = 6.2 ms (wanted < 5 ms)`.
    pub fn sentence(&self) -> String {
        format!(
            "{}, {}, {} users{}, repeat {}: {} {}: {}",
            self.runtime,
            self.scenario,
            self.users,
            if self.preload > 0 {
                format!(", preload {}", self.preload)
            } else {
                String::new()
            },
            u64::from(self.repeat) + 1,
            self.check.threshold,
            if self.check.passed { "held" } else { "failed" },
            self.check.text
        )
    }
}

/// The failed checks.
pub fn failures(checks: &[RunCheck]) -> Vec<&RunCheck> {
    checks.iter().filter(|c| !c.check.passed).collect()
}

/// The thresholds section of `report.md`: what was asked, and every failure (or that all held).
pub fn markdown(thresholds: &[String], checks: &[RunCheck]) -> String {
    if thresholds.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "## Thresholds\n\n{} threshold(s) checked against each of the runs: `{}`.\n\n",
        thresholds.len(),
        thresholds.join("`, `")
    );
    let failed = failures(checks);
    if failed.is_empty() {
        out.push_str(&format!("All {} checks held.\n\n", checks.len()));
    } else {
        out.push_str(&format!(
            "**{} of {} checks failed:**\n\n",
            failed.len(),
            checks.len()
        ));
        for c in failed {
            out.push_str(&format!("- {}\n", c.sentence()));
        }
        out.push('\n');
    }
    out
}
