//! `report.json`: the whole [`Report`], every run's full result included, so a report can be read
//! back, re-rendered or compared with a later one.

use std::path::Path;

use anyhow::Context;

use super::Report;

/// Writes the report as pretty-printed JSON.
pub fn write(report: &Report, path: &Path) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(report).context("Failed to serialize the report")?;
    std::fs::write(path, text).with_context(|| format!("Failed to write {}", path.display()))
}

/// Reads a report written by [`write`].
pub fn read(path: &Path) -> anyhow::Result<Report> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("Failed to read {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not a Brigade report", path.display()))
}
