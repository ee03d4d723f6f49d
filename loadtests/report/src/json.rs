//! `report.json`: the whole report (a comparison's [`Report`] with every run's full result, or a
//! study's [`super::study::StudyReport`]), so a report can be read back, re-rendered or compared
//! with a later one.

use std::path::Path;

use anyhow::Context;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::Report;

/// Writes the report as pretty-printed JSON.
pub fn write(report: &impl Serialize, path: &Path) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(report).context("Failed to serialize the report")?;
    std::fs::write(path, text).with_context(|| format!("Failed to write {}", path.display()))
}

/// Reads a comparison report written by [`write`].
pub fn read(path: &Path) -> anyhow::Result<Report> {
    read_as(path)
}

/// Reads a report of type `T` (a [`Report`], a [`super::study::StudyReport`]) written by [`write`].
pub fn read_as<T: DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let text = brigade_records::files::read_text(
        path,
        brigade_records::files::MAX_REPORT_BYTES,
        "report",
    )?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not a Brigade report of this kind", path.display()))
}
