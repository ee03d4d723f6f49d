//! How a server process ended.

use serde::{Deserialize, Serialize};

/// How a server process ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum StopOutcome {
    /// It exited on SIGTERM within the grace period.
    Graceful {
        /// Its exit code, if it exited normally.
        code: Option<i32>,
    },
    /// It ignored SIGTERM and was killed.
    Killed,
    /// It had already exited before it was asked to stop.
    AlreadyExited {
        /// Its exit code, if it exited normally.
        code: Option<i32>,
    },
}

impl std::fmt::Display for StopOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopOutcome::Graceful { code: Some(code) } => {
                write!(f, "stopped on SIGTERM, exit {code}")
            }
            StopOutcome::Graceful { code: None } => write!(f, "stopped on SIGTERM"),
            StopOutcome::Killed => write!(f, "killed after ignoring SIGTERM"),
            StopOutcome::AlreadyExited { code: Some(code) } => {
                write!(f, "had exited early, exit {code}")
            }
            StopOutcome::AlreadyExited { code: None } => write!(f, "had exited early (signal)"),
        }
    }
}
