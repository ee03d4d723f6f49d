//! The helpers every section of a report borrows, in one place: markdown tables and cells, the
//! columns and cells of the tables both documents print (rows, side-by-side rows, runs), the
//! verdicts' rule in words, number and duration words, HTML escaping and tables, and the chart scaffolding (colours, lines,
//! legends, log ranges) the SVG charts share. They read plain values and the report's settings,
//! never a section's code, so a section (markdown, HTML, capacity, a study's tables) can use any
//! of them without importing another section.

use std::fmt::Write as _;

use anyhow::anyhow;
use plotters::prelude::*;

use crate::verdict::count;
use crate::{Report, Row, RunRecord};

/// One colour per runtime (or series), in the order they were given.
pub(crate) const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// The colour of `runtime` in every chart of a report that compares `runtimes`.
pub fn colour(runtimes: &[String], runtime: &str) -> RGBColor {
    let index = runtimes.iter().position(|r| r == runtime).unwrap_or(0);
    PALETTE[index % PALETTE.len()]
}

/// The page's opening up to `<body>`: the title and the one inline style sheet every report uses.
pub fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{}</title>\n<style>\n\
         body{{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1200px;padding:0 1rem;color:#222}}\n\
         table{{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.9rem}}\n\
         th,td{{border:1px solid #ccc;padding:.25rem .5rem}}td.n{{text-align:right;font-variant-numeric:tabular-nums}}\n\
         th{{background:#f3f3f3}}.charts{{display:flex;flex-wrap:wrap;gap:1rem}}\n\
         .verdict{{font-weight:bold}}.why{{color:#555}}code{{background:#f3f3f3;padding:0 .2rem}}\n\
         </style>\n</head>\n<body>\n",
        esc(title)
    )
}

/// Escapes text for HTML.
pub fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A table of text cells under `header`, numbers right-aligned (every cell but the first and last).
pub fn plain_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::from("<table>\n<tr>");
    for head in header {
        let _ = write!(out, "<th>{}</th>", esc(head));
    }
    out.push_str("</tr>\n");
    for cells in rows {
        out.push_str("<tr>");
        let last = cells.len().saturating_sub(1);
        for (i, cell) in cells.iter().enumerate() {
            let class = if i == 0 || i == last {
                ""
            } else {
                " class=\"n\""
            };
            let _ = write!(out, "<td{class}>{}</td>", esc(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// One runtime's line with a dot on each point, and its legend entry.
pub fn draw_line(
    chart: &mut LineChart<'_, '_>,
    points: Vec<(f64, f64)>,
    color: RGBColor,
    label: impl Into<String>,
    dot: i32,
) -> anyhow::Result<()> {
    chart
        .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
        .map_err(plot_err)?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], color.stroke_width(2)));
    chart
        .draw_series(points.iter().map(|p| Circle::new(*p, dot, color.filled())))
        .map_err(plot_err)?;
    Ok(())
}

/// The legend box at `position`.
pub fn draw_legend<'a, 'b: 'a>(
    chart: &mut LineChart<'a, 'b>,
    position: SeriesLabelPosition,
) -> anyhow::Result<()> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(plot_err)
}

/// A log axis's range for positive `values` (ms): 1.5× beyond the smallest and the largest, or
/// 0.01–1 when there are none.
pub fn log_range(values: &[f64]) -> (f64, f64) {
    if values.is_empty() {
        return (0.01, 1.0);
    }
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    (lo / 1.5, hi * 1.5)
}

pub fn plot_err<E: std::fmt::Debug>(err: E) -> anyhow::Error {
    anyhow!("Failed to draw a chart: {err:?}")
}

/// A latency for an axis label: two significant digits, no trailing noise.
pub fn significant(ms: f64) -> String {
    if ms <= 0.0 || !ms.is_finite() {
        return "0".to_owned();
    }
    let magnitude = ms.log10().floor() as i32 - 1;
    let scale = 10f64.powi(magnitude);
    let rounded = (ms / scale).round() * scale;
    format!("{rounded:.*}", (-magnitude).max(0) as usize)
}

/// `, preloaded with 1,000 and 1,000,000 documents per collection` (nothing without a preload).
pub fn preload_words(preloads: &[u64]) -> String {
    if preloads.iter().all(|&n| n == 0) {
        return String::new();
    }
    let list: Vec<String> = preloads.iter().map(|&n| count(n)).collect();
    let list = match list.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => list.join(""),
    };
    format!(", preloaded with {list} documents per collection")
}

/// `1 min 23 s` style.
pub fn duration_words(seconds: f64) -> String {
    let total = seconds.round() as u64;
    if total >= 60 {
        format!("{} min {} s", total / 60, total % 60)
    } else {
        format!("{seconds:.1} s")
    }
}

/// A number without trailing zeros (`3`, `0.5`), for settings.
pub fn trim(value: f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A markdown table of text cells under `header`, numbers right-aligned (every column but the
/// first and the last, the last a note or verdict), each cell escaped.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    aligned(header, rows, true)
}

/// A markdown table whose every column but the first holds numbers, right-aligned.
pub fn number_table(header: &[&str], rows: &[Vec<String>]) -> String {
    aligned(header, rows, false)
}

/// The table both of those write: the first column text, the last text when `text_last`, every
/// other column right-aligned.
fn aligned(header: &[&str], rows: &[Vec<String>], text_last: bool) -> String {
    let mut out = format!("| {} |\n", header.join(" | "));
    let numbers = header.len().saturating_sub(1 + usize::from(text_last));
    let mut rule = vec!["---"];
    rule.extend(std::iter::repeat_n("---:", numbers));
    if header.len() > 1 && text_last {
        rule.push("---");
    }
    let _ = writeln!(out, "| {} |", rule.join(" | "));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| cell_text(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

/// Makes text safe inside a table cell.
pub fn cell_text(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Chart size in pixels.
pub const CHART: (u32, u32) = (560, 340);

/// A chart with `f64` axes drawn as SVG, the kind every line chart here is.
pub type LineChart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// The explanation printed under the verdicts: which verdict is which, and the rules.
pub fn verdict_rules(rule: &crate::verdict::Rule) -> String {
    use crate::verdict::Measure;
    format!(
        "Two verdicts per cell (scenario × users × preload), one rule. The **efficiency verdict** \
         compares the servers' CPU µs per request measured **side by side**: every runtime's \
         server alive at once on the same CPUs, each offered the same rate, each one's CPU read \
         every window, so the machine's noise lands on all of them in the same second and cancels \
         in the paired ratio; one verdict per load level, measured in **rounds** of fresh servers \
         (two fresh servers of one runtime differ, so the server instance is the unit). The \
         **throughput verdict** compares successful hits/s of the isolated closed-loop runs (one \
         runtime alone on its CPUs), run by run. Each comparison is the best runtime against \
         another, a ratio with its {}% interval, simultaneous over the cell's comparisons \
         (rounds or runs as blocks, Tukey's range): **win** when the whole interval lies beyond \
         the equivalence margin (±{}% efficiency, ±{}% throughput), **equivalent** when it lies \
         inside, **ahead** when it excludes no difference but reaches inside the margin (the \
         order is known, not that it matters), **undecided** otherwise, with about how many \
         rounds would decide it. A level's **leader** is its best runtime with those equivalent \
         to it, decided when nothing is undecided. With `--budget` the error rate is split \
         between a first look and a second after more rounds of the runtimes still in question \
         (fresh copies of each filling the round's places; the others keep the first look's \
         verdict). A level the generator could not \
         deliver or that kept the server CPUs 90% busy or more, or an isolated cell that was \
         generator-bound or contended, is not judged, and says why.",
        trim(rule.confidence_pct),
        trim(rule.margin_pct(Measure::Efficiency)),
        trim(rule.margin_pct(Measure::Throughput))
    )
}

/// Which verdict columns a report has: throughput and efficiency when it made isolated runs or
/// side-by-side levels, capacity when it searched (`--slo`).
pub fn verdict_columns(report: &Report) -> (bool, bool) {
    let compared = !report.runs.is_empty() || !report.side_by_side.is_empty();
    let searched = !report.slo_searches.is_empty();
    (compared || !searched, searched)
}

/// The header shared by every scenario table; the tests read tables by these names.
pub const TABLE_HEADER: [&str; 15] = [
    "runtime",
    "users",
    "preload",
    "hits/s",
    "spread %",
    "KiB/s",
    "mean ms",
    "p99 ms",
    "error %",
    "server CPU %",
    "server CPU µs/req",
    "peak RSS MiB",
    "generator CPU %",
    "requests",
    "note",
];

/// The header of the side-by-side table; the tests read it by these names.
pub const SIDE_HEADER: [&str; 15] = [
    "runtime",
    "users",
    "level",
    "offered /s",
    "achieved /s",
    "windows",
    "CPU µs/req",
    "user µs/req",
    "system µs/req",
    "syscalls/req",
    "ctx switches/req",
    "instructions/req",
    "p99 ms (side by side)",
    "kernel irq µs/req (cell)",
    "note",
];

/// An optional figure, or "not measured".
fn maybe(value: Option<f64>, digits: usize) -> String {
    value.map_or_else(|| "not measured".to_owned(), |v| format!("{v:.digits$}"))
}

/// The side-by-side rows of a scenario, one per runtime and level, formatted as printed: the cost
/// breakdown (the HTML table shows the same cells).
pub fn side_rows(report: &Report, scenario: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for cell in report
        .side_by_side
        .iter()
        .filter(|c| c.scenario == scenario)
    {
        for r in &cell.runtimes {
            let mut note: Vec<String> = Vec::new();
            if let Some(us) = r.handicap_us {
                note.push(format!("handicap +{us} µs"));
            }
            if let Some(spread) = r.instructions_spread_pct {
                note.push(format!("instructions: two samples {spread:.1}% apart"));
            }
            if let Some(n) = &r.counts_note {
                note.push(n.clone());
            }
            if let Some(e) = &r.error {
                note.push(e.clone());
            }
            if let Some(why) = &cell.not_judged {
                note.push(format!("not judged: {why}"));
            }
            rows.push(vec![
                r.runtime.clone(),
                cell.users.to_string(),
                cell.level.clone(),
                format!("{:.0}", cell.rate_per_s),
                format!("{:.0}", r.achieved_per_s),
                r.window_requests.len().to_string(),
                format!("{:.2}", r.cpu_us_per_request),
                maybe(r.user_cpu_us_per_request, 2),
                maybe(r.system_cpu_us_per_request, 2),
                maybe(r.syscalls_per_request, 2),
                maybe(r.context_switches_per_request, 3),
                maybe(r.instructions_per_request, 0),
                format!("{:.3}", r.side_by_side_p99_ms),
                maybe(cell.interrupts_us_per_request, 2),
                note.join("; "),
            ]);
        }
    }
    rows
}

/// One table row's cells, formatted as printed (the JSON keeps full precision).
pub fn row_cells(row: &Row) -> Vec<String> {
    let mut note = Vec::new();
    if row.generator_bound_runs > 0 {
        note.push(format!(
            "generator-bound ({}/{})",
            row.generator_bound_runs, row.runs
        ));
    }
    if row.contended_runs > 0 {
        note.push(format!("contended ({}/{})", row.contended_runs, row.runs));
    }
    if row.failed_runs > 0 {
        note.push(format!("{} run(s) failed", row.failed_runs));
    }
    vec![
        row.runtime.clone(),
        row.users.to_string(),
        row.preload.to_string(),
        format!("{:.1}", row.hits_per_s),
        format!("{:.1}", row.spread_pct),
        format!("{:.1}", row.kib_per_s),
        format!("{:.3}", row.mean_ms),
        format!("{:.3}", row.p99_ms),
        format!("{:.2}", row.error_pct),
        format!("{:.1}", row.server_cpu_pct),
        format!("{:.1}", row.server_cpu_us_per_request),
        format!("{:.1}", row.peak_rss_mib),
        format!("{:.1}", row.generator_cpu_pct),
        row.requests.to_string(),
        note.join("; "),
    ]
}

/// The header of the every-run table.
pub const RUN_HEADER: [&str; 17] = [
    "#",
    "repeat",
    "runtime",
    "scenario",
    "users",
    "preload",
    "server pid",
    "fresh state",
    "hits/s",
    "requests",
    "seconds",
    "server CPU %",
    "server CPU µs/req",
    "server CPUs busy %",
    "generator CPU %",
    "generator CPUs busy %",
    "result",
];

/// The columns of [`RUN_HEADER`] that hold text (left-aligned), the others hold numbers.
pub const RUN_TEXT_COLUMNS: [usize; 4] = [2, 3, 7, 16];

/// One run's cells in the every-run table.
pub fn run_cells(run: &RunRecord) -> Vec<String> {
    let (hits, requests, elapsed) =
        run.result
            .as_ref()
            .map_or(("-".to_owned(), "-".to_owned(), "-".to_owned()), |r| {
                (
                    format!("{:.1}", r.total.hits_per_s),
                    r.total.requests.to_string(),
                    format!("{:.2}", r.elapsed_s),
                )
            });
    let outcome = match (&run.error, &run.contended, &run.generator_bound) {
        (Some(err), _, _) => format!("failed: {err}"),
        (None, Some(why), _) => format!("contended: {why}"),
        (None, None, Some(why)) => format!("generator-bound: {why}"),
        (None, None, None) => "ok".to_owned(),
    };
    let (pid, fresh) = run
        .reset
        .as_ref()
        .map_or(("-".to_owned(), "-".to_owned()), |r| {
            let mut how = r.how.clone();
            if let Some(copy) = r.copy_s {
                let _ = write!(how, " (copied in {copy:.2} s)");
            }
            if let Some(fill) = r.preload_s {
                let _ = write!(how, " (filled in {fill:.2} s)");
            }
            (r.pid.to_string(), how)
        });
    vec![
        // A report read from a file may hold any number: widened, never wrapped.
        (run.index as u64 + 1).to_string(),
        (u64::from(run.repeat) + 1).to_string(),
        run.runtime.clone(),
        run.scenario.clone(),
        run.users.to_string(),
        run.preload.to_string(),
        pid,
        fresh,
        hits,
        requests,
        elapsed,
        format!("{:.1}", run.server.cpu_percent),
        run.server_cpu_us_per_request()
            .map_or("-".to_owned(), |us| format!("{us:.1}")),
        format!("{:.1}", run.cpu.server_cpus.busy_percent),
        format!("{:.1}", run.generator_cpu_percent),
        format!("{:.1}", run.cpu.generator_cpus.busy_percent),
        outcome,
    ]
}

#[cfg(test)]
mod tests {
    use super::{number_table, table};

    #[test]
    fn a_table_leaves_its_last_column_as_text_and_a_number_table_aligns_it() {
        let rows = vec![vec![
            "hyper".to_owned(),
            "5,638".to_owned(),
            "10,548".to_owned(),
        ]];
        let header = ["runtime", "waiter", "read-heavy"];
        assert!(table(&header, &rows).contains("\n| --- | ---: | --- |\n"));
        assert!(number_table(&header, &rows).contains("\n| --- | ---: | ---: |\n"));
        assert!(number_table(&header, &rows).ends_with("| hyper | 5,638 | 10,548 |\n"));
    }
}
