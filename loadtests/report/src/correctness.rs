//! The comparison's "Correctness" section: beside the cost verdicts, what the last conformance
//! study (`brigade study conformance`) found per runtime and protocol: the cases run, how many
//! failed through Brigade, whose those failures are, and the runtime's own failures named. Read
//! from that study's report (its two tables, titled [`RUNTIMES_TABLE`] and [`FAILURES_TABLE`]);
//! a comparison measures none of it.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::render::esc;
use crate::study::StudyReport;

/// The title of the conformance study's table per runtime and suite.
pub const RUNTIMES_TABLE: &str = "Conformance: runtime × suite";
/// The title of its table of every failing case.
pub const FAILURES_TABLE: &str = "Conformance: every failing case";

/// What a conformance study found, as a comparison's report carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Correctness {
    /// The study's report, as found.
    pub source: String,
    /// When the study started.
    pub studied_at: String,
    /// The study's one-sentence summary.
    pub summary: String,
    /// Per runtime and suite.
    pub rows: Vec<CorrectnessRow>,
}

/// One runtime's counts on one suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorrectnessRow {
    /// The runtime.
    pub runtime: String,
    /// The suite (`HTTP/1.1`, `h2spec h2c`, `h2spec h2-tls`, `HTTP/3`).
    pub suite: String,
    /// Cases run, times the routes they ran on.
    pub cases: u64,
    /// Of those, failed through Brigade in some run.
    pub failed: u64,
    /// Failures that are Brigade's (through Brigade only, every run).
    pub brigades: u64,
    /// Failures that are the runtime's own (on its control server too).
    pub runtimes: u64,
    /// Failures with no control to tell whose they are (a control that did not start).
    #[serde(default)]
    pub unclassified: u64,
    /// The runtime's own failing cases, by id (each once, whatever the route).
    pub own: Vec<String>,
}

/// The header of the section's table.
pub const HEADER: [&str; 8] = [
    "runtime",
    "suite",
    "cases × routes",
    "failed through Brigade",
    "Brigade's",
    "the runtime's own",
    "no control to tell",
    "the runtime's own cases",
];

impl Correctness {
    /// What the study at `source` found for `runtimes` (every runtime when empty), or None when
    /// the report is not a conformance study's.
    pub fn from_study(
        study: &StudyReport,
        source: &str,
        runtimes: &[String],
    ) -> Option<Correctness> {
        let tables = study.sections.iter().flat_map(|s| &s.tables);
        let per_runtime = tables.clone().find(|t| t.title == RUNTIMES_TABLE)?;
        let failures = tables.clone().find(|t| t.title == FAILURES_TABLE)?;
        let value = |row: &crate::study::TableRow, name: &str| {
            per_runtime
                .metric(name)
                .and_then(|i| row.values[i])
                .map_or(0, |v| v as u64)
        };
        let (runtime_at, suite_at) = (
            per_runtime.dimension("runtime")?,
            per_runtime.dimension("suite")?,
        );
        let mut rows = Vec::new();
        for row in &per_runtime.rows {
            let (runtime, suite) = (&row.dimensions[runtime_at], &row.dimensions[suite_at]);
            if !runtimes.is_empty() && !runtimes.contains(runtime) {
                continue;
            }
            let mut own: Vec<String> = failures
                .rows_at(&[
                    ("runtime", runtime),
                    ("suite", suite),
                    ("whose", "the runtime's"),
                ])
                .iter()
                .filter_map(|r| failures.dimension("case").map(|i| r.dimensions[i].clone()))
                .collect();
            own.sort();
            own.dedup();
            rows.push(CorrectnessRow {
                runtime: runtime.clone(),
                suite: suite.clone(),
                cases: value(row, "cases × routes"),
                failed: value(row, "failed through Brigade"),
                brigades: value(row, "Brigade's"),
                runtimes: value(row, "the runtime's"),
                unclassified: value(row, "no control to tell"),
                own,
            });
        }
        Some(Correctness {
            source: source.to_owned(),
            studied_at: study.started_at.clone(),
            summary: study.summary.clone(),
            rows,
        })
    }

    /// A row's cells, in [`HEADER`]'s order.
    pub fn cells(row: &CorrectnessRow) -> [String; 8] {
        [
            row.runtime.clone(),
            row.suite.clone(),
            row.cases.to_string(),
            row.failed.to_string(),
            row.brigades.to_string(),
            row.runtimes.to_string(),
            row.unclassified.to_string(),
            if row.own.is_empty() {
                "—".to_owned()
            } else {
                row.own.join(", ")
            },
        ]
    }

    /// The sentence under the section's title: where the figures come from, the path as `code`
    /// gives it (markdown's backticks, or HTML's element around the escaped path).
    fn source_words(&self, code: fn(&str) -> String) -> String {
        format!(
            "From the conformance study {} (started {}): {}",
            code(&self.source),
            self.studied_at,
            self.summary
        )
    }
}

/// Where a comparison without a study says so, and how to make one.
const NO_STUDY: &str = "No conformance study was found (`results/study-conformance-*` or \
`--conformance-report`): run `brigade study conformance` (after `bash scripts/conformance-tools.sh`) \
and compare again.";

/// The section in markdown.
pub fn markdown(correctness: Option<&Correctness>) -> String {
    let mut out = String::from("## Correctness\n\n");
    let Some(c) = correctness else {
        let _ = writeln!(out, "{NO_STUDY}\n");
        return out;
    };
    let _ = writeln!(out, "{}\n", c.source_words(|p| format!("`{p}`")));
    let _ = writeln!(out, "| {} |", HEADER.join(" | "));
    let _ = writeln!(out, "|{}", " --- |".repeat(HEADER.len()));
    for row in &c.rows {
        let _ = writeln!(out, "| {} |", Correctness::cells(row).join(" | "));
    }
    out.push('\n');
    out
}

/// The section in HTML.
pub fn html(correctness: Option<&Correctness>) -> String {
    let mut out = String::from("<h2>Correctness</h2>\n");
    let Some(c) = correctness else {
        let _ = writeln!(out, "<p>{}</p>", esc(NO_STUDY));
        return out;
    };
    let words = esc(&c.source_words(|p| format!("\u{1}{p}\u{2}")));
    let words = words.replace('\u{1}', "<code>").replace('\u{2}', "</code>");
    let _ = writeln!(out, "<p>{words}</p>\n<table><tr>");
    for h in HEADER {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr>\n");
    for row in &c.rows {
        out.push_str("<tr>");
        for cell in Correctness::cells(row) {
            let _ = write!(out, "<td>{}</td>", esc(&cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::{Better, Metric, Section, Table};

    fn study() -> StudyReport {
        let count = |n| Metric::new(n, "", Better::Lower, 0);
        let mut per = Table::new(
            RUNTIMES_TABLE,
            &["runtime", "suite"],
            vec![
                count("cases × routes"),
                count("failed through Brigade"),
                count("Brigade's"),
                count("the runtime's"),
            ],
        );
        per.push(
            vec!["ntex".into(), "h2spec h2c".into()],
            vec![Some(290.0), Some(4.0), Some(0.0), Some(4.0)],
        );
        per.push(
            vec!["hyper".into(), "h2spec h2c".into()],
            vec![Some(290.0), Some(0.0), Some(0.0), Some(0.0)],
        );
        let mut failures = Table::new(
            FAILURES_TABLE,
            &["runtime", "suite", "case", "section", "route", "whose"],
            vec![count("runs")],
        );
        for route in ["reads the body", "body unread"] {
            failures.push(
                vec![
                    "ntex".into(),
                    "h2spec h2c".into(),
                    "http2/4.2/2".into(),
                    "RFC 7540 §4.2".into(),
                    route.into(),
                    "the runtime's".into(),
                ],
                vec![Some(3.0)],
            );
        }
        StudyReport {
            study: "conformance".into(),
            title: "t".into(),
            summary: "s".into(),
            started_at: "2026-12-05T22:00:00Z".into(),
            wall_s: 1.0,
            setup: crate::setup::Setup::default(),
            notes: vec![],
            sections: vec![Section {
                title: "Per runtime".into(),
                text: vec![],
                tables: vec![per, failures],
                charts: vec![],
            }],
        }
    }

    #[test]
    fn a_conformance_study_reads_as_counts_per_runtime_with_the_runtimes_own_cases_named() {
        let c = Correctness::from_study(&study(), "results/x/report.json", &[]).unwrap();
        assert_eq!(c.rows.len(), 2);
        assert_eq!(c.rows[0].runtime, "ntex");
        assert_eq!(
            (c.rows[0].cases, c.rows[0].failed, c.rows[0].runtimes),
            (290, 4, 4)
        );
        assert_eq!(
            c.rows[0].own,
            vec!["http2/4.2/2".to_owned()],
            "each case once"
        );
        let only = Correctness::from_study(&study(), "x", &["hyper".to_owned()]).unwrap();
        assert_eq!(only.rows.len(), 1);
        let md = markdown(Some(&c));
        assert!(
            md.contains("| ntex | h2spec h2c | 290 | 4 | 0 | 4 | 0 | http2/4.2/2 |"),
            "{md}"
        );
        assert!(markdown(None).contains("brigade study conformance"));
        assert!(md.contains("study `results/x/report.json`"), "{md}");
        let page = html(Some(&c));
        assert!(page.contains("<td>http2/4.2/2</td>"), "{page}");
        assert!(
            page.contains("<code>results/x/report.json</code>"),
            "{page}"
        );
    }
}
