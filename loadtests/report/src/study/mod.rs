//! The general report every `brigade study` writes: the storage study's store × phase × size, and
//! the studies to come (RPC payloads with provider × operation × threads, a client sweep, in-process
//! against loopback, faults) fill the same shape, so no result is ever stuffed into a scenario name
//! and there is no second report format.
//!
//! A [`StudyReport`] is a header (title, a sentence, when, how long, the shared [`Setup`] section and
//! the notes) and [`Section`]s, each with paragraphs, titled [`Table`]s (named dimension columns,
//! then [`Metric`] columns with a unit and a better direction; a missing value shows as "—") and
//! [`Chart`]s (named x/y [`Series`] with axis labels and an optional log axis). It goes through the
//! comparison's writer ([`super::write_all`]) into the same `report.json`, `report.md` and
//! `report.html` (charts drawn by `plotters` with the comparison's palette and helpers).
//!
//! Why a type of its own instead of growing the comparison's [`super::Report`]: that report's rows,
//! verdicts and `--rejudge` are about runtimes × scenarios × users, and it is read back by
//! `compare --rejudge`; bolting optional general sections onto it would leave every consumer to
//! guess which half is filled. What the two must share, they share: the setup section
//! ([`Setup`], rendered once for both), the writer and the page's head, style and chart helpers.

pub mod html;
pub mod markdown;

use serde::{Deserialize, Serialize};

use super::setup::Setup;

/// What a study measured: its setup, its notes and its sections of tables and charts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudyReport {
    /// The study's name on the command line (`storage`).
    pub study: String,
    /// The report's title.
    pub title: String,
    /// One or two sentences saying what was measured.
    pub summary: String,
    /// When the study started (RFC 3339, UTC).
    pub started_at: String,
    /// Wall-clock seconds it took.
    pub wall_s: f64,
    /// Machine, versions, threads and CPUs, settings, command line.
    pub setup: Setup,
    /// Caveats a reader should know.
    pub notes: Vec<String>,
    /// The findings, section by section.
    pub sections: Vec<Section>,
}

/// One part of a study (a phase, an experiment) with its words, tables and charts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Section {
    /// The section's heading.
    pub title: String,
    /// Paragraphs of explanation, in order.
    pub text: Vec<String>,
    /// Its tables.
    pub tables: Vec<Table>,
    /// Its charts.
    pub charts: Vec<Chart>,
}

/// Which way a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// Smaller is better (latency, bytes on disk).
    Lower,
    /// Larger is better (throughput).
    Higher,
    /// Neither: a description of the workload (a count, a size).
    Neither,
}

impl Better {
    /// The arrow shown after a metric's name: ↓, ↑ or nothing.
    pub fn arrow(self) -> &'static str {
        match self {
            Better::Lower => " ↓",
            Better::Higher => " ↑",
            Better::Neither => "",
        }
    }
}

/// A measured column of a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metric {
    /// Its name (`mean`, `p99`, `on disk`).
    pub name: String,
    /// Its unit (`ms`, `MiB`; empty for a count).
    pub unit: String,
    /// Which way is better.
    pub better: Better,
    /// Decimals shown in the documents (the JSON keeps full precision).
    pub decimals: u8,
}

impl Metric {
    /// A metric called `name` in `unit`, better `better`, shown with `decimals` decimals.
    pub fn new(name: &str, unit: &str, better: Better, decimals: u8) -> Metric {
        Metric {
            name: name.to_owned(),
            unit: unit.to_owned(),
            better,
            decimals,
        }
    }

    /// The column's header: name, unit and arrow (`mean ms ↓`).
    pub fn header(&self) -> String {
        let mut out = self.name.clone();
        if !self.unit.is_empty() {
            out.push(' ');
            out.push_str(&self.unit);
        }
        out.push_str(self.better.arrow());
        out
    }

    /// A value as shown in the documents: rounded to the metric's decimals, "—" when missing.
    pub fn format(&self, value: Option<f64>) -> String {
        match value {
            Some(v) if v.is_finite() => format!("{v:.*}", self.decimals as usize),
            _ => "—".to_owned(),
        }
    }
}

/// One row of a table: its dimension values, then one value per metric (`None`: not measured).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableRow {
    /// The dimension values, one per dimension column.
    pub dimensions: Vec<String>,
    /// The metric values, one per metric column.
    pub values: Vec<Option<f64>>,
}

/// A titled table: named dimension columns (what a row is about), then metric columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// The table's title.
    pub title: String,
    /// The dimension columns' names (`store`, `phase`, `size band`).
    pub dimensions: Vec<String>,
    /// The metric columns.
    pub metrics: Vec<Metric>,
    /// The rows, in order.
    pub rows: Vec<TableRow>,
}

impl Table {
    /// An empty table.
    pub fn new(title: &str, dimensions: &[&str], metrics: Vec<Metric>) -> Table {
        Table {
            title: title.to_owned(),
            dimensions: dimensions.iter().map(|d| (*d).to_owned()).collect(),
            metrics,
            rows: Vec::new(),
        }
    }

    /// Adds a row. Panics if the counts do not match the columns: that is a bug in the study.
    pub fn push(&mut self, dimensions: Vec<String>, values: Vec<Option<f64>>) {
        assert_eq!(
            dimensions.len(),
            self.dimensions.len(),
            "table {:?}: a row needs one value per dimension",
            self.title
        );
        assert_eq!(
            values.len(),
            self.metrics.len(),
            "table {:?}: a row needs one value per metric",
            self.title
        );
        self.rows.push(TableRow { dimensions, values });
    }

    /// The index of the metric called `name`.
    pub fn metric(&self, name: &str) -> Option<usize> {
        self.metrics.iter().position(|m| m.name == name)
    }

    /// The index of the dimension called `name`.
    pub fn dimension(&self, name: &str) -> Option<usize> {
        self.dimensions.iter().position(|d| d == name)
    }

    /// The rows whose dimensions include every `(dimension, value)` of `at`.
    pub fn rows_at<'a>(&'a self, at: &[(&str, &str)]) -> Vec<&'a TableRow> {
        let wanted: Vec<(Option<usize>, &str)> =
            at.iter().map(|(d, v)| (self.dimension(d), *v)).collect();
        self.rows
            .iter()
            .filter(|row| {
                wanted
                    .iter()
                    .all(|(i, v)| i.is_some_and(|i| row.dimensions[i] == *v))
            })
            .collect()
    }

    /// The value of metric `metric` in the one row at `at`, if there is exactly one and it has one.
    pub fn value(&self, at: &[(&str, &str)], metric: &str) -> Option<f64> {
        let m = self.metric(metric)?;
        match self.rows_at(at).as_slice() {
            [row] => row.values[m],
            _ => None,
        }
    }
}

/// A chart axis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Axis {
    /// Its label, unit included (`document size, KiB`).
    pub label: String,
    /// Whether it is drawn on a log scale (values at or below zero are then left out).
    pub log: bool,
}

impl Axis {
    /// A linear axis.
    pub fn linear(label: &str) -> Axis {
        Axis {
            label: label.to_owned(),
            log: false,
        }
    }

    /// A log axis.
    pub fn log(label: &str) -> Axis {
        Axis {
            label: label.to_owned(),
            log: true,
        }
    }
}

/// One named line of a chart: its (x, y) points in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Its name in the legend (`embedded`).
    pub name: String,
    /// Its points.
    pub points: Vec<(f64, f64)>,
}

/// A line chart: named series over two axes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chart {
    /// The chart's title.
    pub title: String,
    /// The x axis.
    pub x: Axis,
    /// The y axis.
    pub y: Axis,
    /// The lines, one per series.
    pub series: Vec<Series>,
}

impl StudyReport {
    /// Every table of every section, in order.
    pub fn tables(&self) -> impl Iterator<Item = &Table> {
        self.sections.iter().flat_map(|s| s.tables.iter())
    }

    /// The table titled `title`, if any.
    pub fn table(&self, title: &str) -> Option<&Table> {
        self.tables().find(|t| t.title == title)
    }

    /// Every chart of every section, in order.
    pub fn charts(&self) -> impl Iterator<Item = &Chart> {
        self.sections.iter().flat_map(|s| s.charts.iter())
    }

    /// Every series name of every chart, in first-seen order (a series keeps its colour from
    /// chart to chart).
    pub fn series_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for series in self.charts().flat_map(|c| c.series.iter()) {
            if !names.contains(&series.name.as_str()) {
                names.push(&series.name);
            }
        }
        names
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::setup::build_versions;
    use brigade_records::result::Machine;

    /// A small report with two sections, a missing value, a log chart and an empty chart.
    pub(crate) fn sample() -> StudyReport {
        let mut phases = Table::new(
            "Phases",
            &["store", "phase"],
            vec![
                Metric::new("operations", "", Better::Neither, 0),
                Metric::new("mean", "ms", Better::Lower, 3),
                Metric::new("on disk", "MiB", Better::Lower, 1),
            ],
        );
        phases.push(
            vec!["memory".into(), "read".into()],
            vec![Some(100.0), Some(0.0123), None],
        );
        phases.push(
            vec!["embedded".into(), "read".into()],
            vec![Some(100.0), Some(0.25), Some(12.5)],
        );
        let mut setup = Setup {
            machine: Machine {
                hostname: "box".into(),
                cores: 2,
                ..Machine::default()
            },
            versions: build_versions(),
            lines: Vec::new(),
            command_line: "brigade study storage --quick".into(),
        };
        setup.line("Stores", "memory, embedded");
        StudyReport {
            study: "storage".into(),
            title: "Brigade storage study".into(),
            summary: "Growing documents, then fixed ones.".into(),
            started_at: "2025-01-01T00:00:00Z".into(),
            wall_s: 3.5,
            setup,
            notes: vec!["A busy machine.".into()],
            sections: vec![
                Section {
                    title: "Fixed-size documents".into(),
                    text: vec!["Reads, then rewrites.".into()],
                    tables: vec![phases],
                    charts: vec![Chart {
                        title: "ms per operation against document size".into(),
                        x: Axis::linear("document size, KiB"),
                        y: Axis::log("mean ms per operation"),
                        series: vec![
                            Series {
                                name: "memory".into(),
                                points: vec![(1.0, 0.01), (2.0, 0.02), (4.0, 0.0)],
                            },
                            Series {
                                name: "embedded".into(),
                                points: vec![(1.0, 0.2), (2.0, 0.3), (4.0, 0.5)],
                            },
                        ],
                    }],
                },
                Section {
                    title: "Nothing measured".into(),
                    text: Vec::new(),
                    tables: Vec::new(),
                    charts: vec![Chart {
                        title: "on disk against operations".into(),
                        x: Axis::linear("operations"),
                        y: Axis::linear("MiB"),
                        series: vec![Series {
                            name: "memory".into(),
                            points: Vec::new(),
                        }],
                    }],
                },
            ],
        }
    }

    #[test]
    fn tables_are_looked_up_by_dimension_and_metric_names() {
        let report = sample();
        let table = report.table("Phases").unwrap();
        assert_eq!(
            table.value(&[("store", "embedded"), ("phase", "read")], "mean"),
            Some(0.25)
        );
        assert_eq!(
            table.value(&[("store", "memory"), ("phase", "read")], "on disk"),
            None
        );
        assert_eq!(table.rows_at(&[("phase", "read")]).len(), 2);
        assert!(table.rows_at(&[("no such", "x")]).is_empty());
        assert_eq!(report.series_names(), ["memory", "embedded"]);
    }

    #[test]
    fn metrics_format_with_their_decimals_and_a_dash_for_nothing() {
        let m = Metric::new("mean", "ms", Better::Lower, 3);
        assert_eq!(m.header(), "mean ms ↓");
        assert_eq!(m.format(Some(1.23456)), "1.235");
        assert_eq!(m.format(None), "—");
        assert_eq!(m.format(Some(f64::NAN)), "—");
        assert_eq!(
            Metric::new("operations", "", Better::Neither, 0).header(),
            "operations"
        );
    }

    #[test]
    #[should_panic(expected = "one value per metric")]
    fn a_row_with_the_wrong_number_of_values_is_a_bug() {
        let mut t = Table::new("t", &["a"], vec![Metric::new("m", "", Better::Higher, 0)]);
        t.push(vec!["x".into()], vec![]);
    }

    #[test]
    fn the_report_round_trips_through_json() {
        let report = sample();
        let dir = tempfile::tempdir().unwrap();
        let written = crate::write_all(&report, dir.path()).unwrap();
        let back: StudyReport = crate::json::read_as(&written.json).unwrap();
        assert_eq!(back, report);
        let md = std::fs::read_to_string(&written.markdown).unwrap();
        assert!(md.starts_with("# Brigade storage study"));
        let html = std::fs::read_to_string(&written.html).unwrap();
        assert!(html.contains("<svg"));
    }
}
