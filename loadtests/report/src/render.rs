//! The helpers every section of a report borrows, in one place: markdown tables and cells, number
//! and duration words, HTML escaping and tables, and the chart scaffolding (colours, lines,
//! legends, log ranges) the SVG charts share. They read plain values and the report's settings,
//! never a section's code, so a section (markdown, HTML, capacity, a study's tables) can use any
//! of them without importing another section.

use std::fmt::Write as _;

use anyhow::anyhow;
use plotters::prelude::*;

use crate::verdict::count;

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

/// Makes text safe inside a table cell.
/// A markdown table of text cells under `header`, numbers right-aligned (every column but the
/// first and the last), each cell escaped.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n", header.join(" | "));
    let mut rule = vec!["---"];
    rule.extend(std::iter::repeat_n("---:", header.len().saturating_sub(2)));
    if header.len() > 1 {
        rule.push("---");
    }
    let _ = writeln!(out, "| {} |", rule.join(" | "));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| cell_text(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

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
