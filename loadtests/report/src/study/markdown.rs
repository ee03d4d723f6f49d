//! A study's `report.md`: the title and summary, the notes, the shared setup section, then each
//! section's paragraphs and tables (dimension columns, then metric columns with their unit and
//! better direction). Charts are drawn only in `report.html`; the markdown names them, and their
//! numbers are the tables'.

use std::fmt::Write as _;

use super::{StudyReport, Table};
use crate::render::{cell_text, duration_words};

/// The whole markdown document.
pub fn render(report: &StudyReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", report.title);
    let _ = writeln!(
        out,
        "{} Started {}, took {}.\n",
        report.summary,
        report.started_at,
        duration_words(report.wall_s)
    );
    for note in &report.notes {
        let _ = writeln!(out, "- {note}");
    }
    if !report.notes.is_empty() {
        out.push('\n');
    }
    out.push_str(&report.setup.markdown());
    for section in &report.sections {
        let _ = writeln!(out, "## {}\n", section.title);
        for paragraph in &section.text {
            let _ = writeln!(out, "{paragraph}\n");
        }
        for t in &section.tables {
            out.push_str(&table(t));
        }
        if !section.charts.is_empty() {
            let titles: Vec<&str> = section.charts.iter().map(|c| c.title.as_str()).collect();
            let _ = writeln!(out, "Charts in report.html: {}.\n", titles.join("; "));
        }
    }
    if report.tables().any(|t| !t.metrics.is_empty()) {
        out.push_str("↓ lower is better, ↑ higher is better; — not measured.\n");
    }
    out
}

/// One table: its title as a heading, a header row of dimension and metric columns, one line per row.
pub fn table(table: &Table) -> String {
    let mut out = format!("### {}\n\n", table.title);
    let mut header: Vec<String> = table.dimensions.iter().map(|d| cell_text(d)).collect();
    header.extend(table.metrics.iter().map(|m| cell_text(&m.header())));
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let mut rule = vec!["---"; table.dimensions.len()];
    rule.extend(std::iter::repeat_n("---:", table.metrics.len()));
    let _ = writeln!(out, "| {} |", rule.join(" | "));
    for row in &table.rows {
        let mut cells: Vec<String> = row.dimensions.iter().map(|d| cell_text(d)).collect();
        cells.extend(
            table
                .metrics
                .iter()
                .zip(&row.values)
                .map(|(m, v)| m.format(*v)),
        );
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::sample;
    use super::*;

    #[test]
    fn tables_show_dimensions_then_metrics_with_units_and_directions() {
        let md = render(&sample());
        assert!(md.contains("| store | phase | operations | mean ms ↓ | on disk MiB ↓ |"));
        assert!(md.contains("| --- | --- | ---: | ---: | ---: |"));
        assert!(md.contains("| memory | read | 100 | 0.012 | — |"), "{md}");
        assert!(md.contains("| embedded | read | 100 | 0.250 | 12.5 |"));
        assert!(md.contains("## Setup") && md.contains("- Stores: memory, embedded"));
        assert!(md.contains("- A busy machine."));
        assert!(md.contains("Charts in report.html: ms per operation against document size."));
    }
}
