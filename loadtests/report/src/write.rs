//! The writer every report goes through: `report.json` (the whole report, serialized), `report.md`
//! and `report.html` (rendered), into one folder. It is the one place that joins the data (the
//! report types) to the renderers, so neither has to know the other.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use super::study::StudyReport;
use super::{json, Report};

/// A report the writer can put into the three files: serialized whole as `report.json`, rendered
/// as `report.md` and `report.html`.
pub trait ReportDocument: Serialize {
    /// The whole markdown document.
    fn markdown(&self) -> String;
    /// The whole HTML page (self-contained: inline CSS and SVG, no script, no network).
    fn html(&self) -> anyhow::Result<String>;
}

impl ReportDocument for Report {
    fn markdown(&self) -> String {
        super::markdown::render(self)
    }

    fn html(&self) -> anyhow::Result<String> {
        super::html::render(self)
    }
}

impl ReportDocument for StudyReport {
    fn markdown(&self) -> String {
        super::study::markdown::render(self)
    }

    fn html(&self) -> anyhow::Result<String> {
        super::study::html::render(self)
    }
}

/// The three report files written into a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// `report.json`.
    pub json: PathBuf,
    /// `report.md`.
    pub markdown: PathBuf,
    /// `report.html`.
    pub html: PathBuf,
}

/// Writes `report.json`, `report.md` and `report.html` into `dir` (created if missing).
pub fn write_all(report: &impl ReportDocument, dir: &Path) -> anyhow::Result<Written> {
    std::fs::create_dir_all(dir).with_context(|| format!("Failed to create {}", dir.display()))?;
    let written = Written {
        json: dir.join("report.json"),
        markdown: dir.join("report.md"),
        html: dir.join("report.html"),
    };
    json::write(report, &written.json)?;
    std::fs::write(&written.markdown, report.markdown())
        .with_context(|| format!("Failed to write {}", written.markdown.display()))?;
    std::fs::write(&written.html, report.html()?)
        .with_context(|| format!("Failed to write {}", written.html.display()))?;
    Ok(written)
}
