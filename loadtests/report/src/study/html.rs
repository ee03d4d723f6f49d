//! A study's `report.html`: one self-contained page (the comparison's inline style, inline SVG, no
//! script, no network) with the notes, the shared setup section, and per section its paragraphs,
//! charts and tables. Every chart is a line chart of named series drawn by `plotters` with the
//! comparison's line and legend helpers; a series keeps its colour across charts; a log axis plots
//! the values' logarithms on a linear axis labelled with the values (as the comparison's latency
//! chart does), leaving out values at or below zero.

use std::fmt::Write as _;

use plotters::prelude::*;

use super::{Chart, StudyReport, Table};
use crate::render::duration_words;
use crate::render::{draw_legend, draw_line, esc, head, plot_err, significant, CHART, PALETTE};

/// Renders the whole page.
pub fn render(report: &StudyReport) -> anyhow::Result<String> {
    let mut out = head(&report.title);
    let _ = writeln!(out, "<h1>{}</h1>", esc(&report.title));
    let _ = writeln!(
        out,
        "<p>{} Started {}, took {}.</p>",
        esc(&report.summary),
        esc(&report.started_at),
        esc(&duration_words(report.wall_s))
    );
    if !report.notes.is_empty() {
        out.push_str("<ul>\n");
        for note in &report.notes {
            let _ = writeln!(out, "<li>{}</li>", esc(note));
        }
        out.push_str("</ul>\n");
    }
    out.push_str(&report.setup.html());
    let names = report.series_names();
    let colour = |name: &str| {
        let index = names.iter().position(|n| *n == name).unwrap_or(0);
        PALETTE[index % PALETTE.len()]
    };
    for section in &report.sections {
        let _ = writeln!(out, "<h2>{}</h2>", esc(&section.title));
        for paragraph in &section.text {
            let _ = writeln!(out, "<p>{}</p>", esc(paragraph));
        }
        if !section.charts.is_empty() {
            out.push_str("<div class=\"charts\">\n");
            for chart in &section.charts {
                out.push_str(&line_chart(chart, &colour)?);
            }
            out.push_str("</div>\n");
        }
        for t in &section.tables {
            out.push_str(&table(t));
        }
    }
    out.push_str(
        "<p class=\"why\">↓ lower is better, ↑ higher is better; — not measured.</p>\n\
         </body>\n</html>\n",
    );
    Ok(out)
}

/// One table: a heading, then dimension columns (text) and metric columns (numbers, right-aligned).
pub fn table(table: &Table) -> String {
    let mut out = format!("<h3>{}</h3>\n<table>\n<tr>", esc(&table.title));
    for d in &table.dimensions {
        let _ = write!(out, "<th>{}</th>", esc(d));
    }
    for m in &table.metrics {
        let _ = write!(out, "<th>{}</th>", esc(&m.header()));
    }
    out.push_str("</tr>\n");
    for row in &table.rows {
        out.push_str("<tr>");
        for d in &row.dimensions {
            let _ = write!(out, "<td>{}</td>", esc(d));
        }
        for (m, v) in table.metrics.iter().zip(&row.values) {
            let _ = write!(out, "<td class=\"n\">{}</td>", esc(&m.format(*v)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// A value as plotted on an axis: itself, or its logarithm on a log axis (`None` if it cannot be).
fn plotted(value: f64, log: bool) -> Option<f64> {
    match (log, value.is_finite()) {
        (_, false) => None,
        (true, _) if value <= 0.0 => None,
        (true, _) => Some(value.log10()),
        (false, _) => Some(value),
    }
}

/// An axis label for a plotted value.
fn tick(plotted: f64, log: bool) -> String {
    if log {
        return significant(10f64.powf(plotted));
    }
    if plotted.abs() >= 100.0 {
        format!("{plotted:.0}")
    } else {
        let text = format!("{plotted:.3}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// A plotted range with some room around it (and above it, for the legend).
fn range(values: impl Iterator<Item = f64>, log: bool, headroom: f64) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    // A linear axis of positive values starts at zero, so lines are compared from the same floor.
    let lo = if !log && lo > 0.0 { 0.0 } else { lo };
    let span = if hi > lo { hi - lo } else { 1.0 };
    (lo - span * 0.04, hi + span * headroom)
}

/// Draws `chart` as an inline SVG; an empty chart says so instead.
pub fn line_chart(chart: &Chart, colour: &dyn Fn(&str) -> RGBColor) -> anyhow::Result<String> {
    let lines: Vec<(&str, Vec<(f64, f64)>)> = chart
        .series
        .iter()
        .map(|s| {
            let points = s
                .points
                .iter()
                .filter_map(|(x, y)| Some((plotted(*x, chart.x.log)?, plotted(*y, chart.y.log)?)))
                .collect::<Vec<_>>();
            (s.name.as_str(), points)
        })
        .filter(|(_, points)| !points.is_empty())
        .collect();
    if lines.is_empty() {
        return Ok(format!(
            "<p class=\"why\">{}: nothing to draw.</p>\n",
            esc(&chart.title)
        ));
    }
    let all = || lines.iter().flat_map(|(_, p)| p.iter());
    let (x_lo, x_hi) = range(all().map(|p| p.0), chart.x.log, 0.04);
    let (y_lo, y_hi) = range(all().map(|p| p.1), chart.y.log, 0.3);
    let (x_log, y_log) = (chart.x.log, chart.y.log);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, CHART).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut drawing = ChartBuilder::on(&root)
            .caption(&chart.title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)
            .map_err(plot_err)?;
        let log_word = |log: bool| if log { " (log scale)" } else { "" };
        drawing
            .configure_mesh()
            .x_desc(format!("{}{}", chart.x.label, log_word(x_log)))
            .y_desc(format!("{}{}", chart.y.label, log_word(y_log)))
            .x_label_formatter(&|x| tick(*x, x_log))
            .y_label_formatter(&|y| tick(*y, y_log))
            .light_line_style(RGBColor(240, 240, 240))
            .draw()
            .map_err(plot_err)?;
        for (name, points) in lines {
            draw_line(&mut drawing, points, colour(name), name.to_owned(), 3)?;
        }
        draw_legend(&mut drawing, SeriesLabelPosition::UpperLeft)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg + "\n")
}

#[cfg(test)]
mod tests {
    use super::super::tests::sample;
    use super::*;

    #[test]
    fn the_page_is_self_contained_with_one_svg_per_drawable_chart() {
        let html = render(&sample()).unwrap();
        assert_eq!(
            html.matches("<svg").count(),
            1,
            "the empty chart is not drawn"
        );
        assert!(html.contains("on disk against operations: nothing to draw."));
        assert!(html.contains("ms per operation against document size"));
        assert!(html.contains("(log scale)"));
        assert!(html.contains("<th>mean ms ↓</th>"));
        assert!(html.contains("<td class=\"n\">—</td>"));
        assert!(!html.contains("<script"), "no scripts");
        assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
        assert!(html.ends_with("</html>\n"));
    }

    #[test]
    fn log_axes_leave_out_what_they_cannot_plot() {
        assert_eq!(plotted(100.0, true), Some(2.0));
        assert_eq!(plotted(0.0, true), None);
        assert_eq!(plotted(0.0, false), Some(0.0));
        assert_eq!(plotted(f64::NAN, false), None);
        assert_eq!(tick(2.0, true), "100");
        assert_eq!(tick(2.5, false), "2.5");
        assert_eq!(tick(12_500.0, false), "12500");
    }
}
