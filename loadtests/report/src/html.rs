//! `report.html`: one self-contained page (inline CSS, inline SVG, no script, no network) with the
//! report's tables and, per scenario, up to three charts drawn by `plotters`: throughput per runtime
//! (bars with the repeats' min–max), throughput against users (when there are several user counts),
//! and latency percentiles at the highest user count — plus throughput against the preload when the
//! comparison has several.

use std::fmt::Write as _;

use plotters::prelude::*;

use super::render::{
    colour, draw_legend, draw_line, duration_words, esc, head, log_range, plain_table, plot_err,
    preload_words, significant, LineChart, CHART,
};
use super::{Report, Row};
use crate::verdict::Verdict;

/// Renders the whole page.
pub fn render(report: &Report) -> anyhow::Result<String> {
    let mut out = head("Brigade runtime comparison");
    out.push_str(&intro(report));
    out.push_str(&super::answer::html(report));
    let (compared, searched) = crate::render::verdict_columns(report);
    out.push_str(&verdicts(report, compared, searched));
    out.push_str(&crate::correctness::html(report.correctness.as_ref()));
    out.push_str(&notes(report, compared));
    out.push_str(&thresholds(report));
    out.push_str(&baseline(report));
    out.push_str(&setup(report));
    out.push_str(&super::capacity::html(report)?);
    // A comparison of capacity alone (`--slo`) has no isolated run or side-by-side level to show.
    for scenario in report.settings.scenarios.iter().filter(|_| compared) {
        out.push_str(&scenario_section(report, scenario)?);
    }
    out.push_str(&servers(report));
    out.push_str(&runs(report));
    out.push_str("</body>\n</html>\n");
    Ok(out)
}

/// The title and the one sentence on what was compared, where and when.
fn intro(report: &Report) -> String {
    let mut out = String::new();
    let s = &report.settings;
    let _ = writeln!(out, "<h1>Brigade runtime comparison</h1>");
    let _ = writeln!(
        out,
        "<p>{} runtimes ({}) on the <b>{}</b> store{}, started {}, took {}.</p>",
        s.runtimes.len(),
        esc(&s.runtimes.join(", ")),
        esc(&s.store),
        esc(&preload_words(&s.preloads)),
        esc(&report.started_at),
        duration_words(report.wall_s)
    );
    out
}

/// The verdicts table: per scenario, the throughput and efficiency verdicts (when compared) and
/// the capacity verdict (when searched).
fn verdicts(report: &Report, compared: bool, searched: bool) -> String {
    let mut out = String::new();
    out.push_str("<h2>Verdicts</h2>\n<table><tr><th>scenario</th>");
    if compared {
        out.push_str(
            "<th>throughput verdict</th><th>why</th><th>efficiency verdict</th><th>why</th>",
        );
    }
    if searched {
        out.push_str("<th>capacity verdict</th><th>why</th>");
    }
    out.push_str("</tr>\n");
    let cells = |label: &str, reason: &str| {
        format!(
            "<td class=\"verdict\">{}</td><td class=\"why\">{}</td>",
            esc(label),
            esc(reason)
        )
    };
    for v in &report.scenarios {
        let _ = write!(out, "<tr><td>{}</td>", esc(&v.scenario));
        if compared {
            let (label, reason) = label_and_reason(v.efficiency.as_ref());
            out.push_str(&cells(&v.verdict.label(), &v.verdict.reason));
            out.push_str(&cells(&label, &reason));
        }
        if searched {
            let (label, reason) = label_and_reason(v.capacity.as_ref());
            out.push_str(&cells(&label, &reason));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// The verdict rules (when compared) and the report's notes.
fn notes(report: &Report, compared: bool) -> String {
    let mut out = String::new();
    if compared {
        let _ = writeln!(
            out,
            "<p>{}</p>",
            esc(&crate::render::verdict_rules(&report.settings.rule)).replace("**", "")
        );
    }
    if !report.notes.is_empty() {
        out.push_str("<ul>\n");
        for note in &report.notes {
            let _ = writeln!(out, "<li>{}</li>", esc(note));
        }
        out.push_str("</ul>\n");
    }
    out
}

/// One scenario's section: its verdicts, charts, tables and per-cell verdicts.
fn scenario_section(report: &Report, scenario: &str) -> anyhow::Result<String> {
    let mut out = String::new();
    let _ = writeln!(out, "<h2>Scenario <code>{}</code></h2>", esc(scenario));
    if let Some(v) = report.scenarios.iter().find(|v| v.scenario == scenario) {
        let (label, reason) = label_and_reason(v.efficiency.as_ref());
        let _ = writeln!(
            out,
            "<p>Throughput: <span class=\"verdict\">{}</span> — <span class=\"why\">{}</span><br>\
             Efficiency: <span class=\"verdict\">{}</span> — <span class=\"why\">{}</span></p>",
            esc(&v.verdict.label()),
            esc(&v.verdict.reason),
            esc(&label),
            esc(&reason)
        );
    }
    let rows: Vec<&Row> = report
        .rows
        .iter()
        .filter(|r| r.scenario == scenario)
        .collect();
    if !rows.is_empty() {
        out.push_str(&scenario_charts(report, scenario, &rows)?);
    }
    out.push_str(&table(&rows));
    out.push_str(&side_by_side(report, scenario)?);
    out.push_str(&cell_verdicts(report, scenario));
    Ok(out)
}

/// A scenario's charts of its isolated runs.
fn scenario_charts(report: &Report, scenario: &str, rows: &[&Row]) -> anyhow::Result<String> {
    let mut out = String::new();
    out.push_str("<div class=\"charts\">\n");
    out.push_str(&throughput_bars(report, scenario, rows)?);
    // One user count makes no line: the bars above already say it.
    if user_counts(rows).len() > 1 {
        out.push_str(&throughput_by_users(report, scenario, rows)?);
    }
    out.push_str(&latency_percentiles(report, scenario, rows)?);
    if preloads(rows).len() > 1 {
        out.push_str(&throughput_by_preload(report, scenario, rows)?);
    }
    out.push_str("</div>\n");
    Ok(out)
}

/// A scenario's side-by-side chart and table (nothing when it ran none).
fn side_by_side(report: &Report, scenario: &str) -> anyhow::Result<String> {
    let mut out = String::new();
    let side = crate::render::side_rows(report, scenario);
    if !side.is_empty() {
        out.push_str("<div class=\"charts\">\n");
        out.push_str(&breakdown_bars(report, scenario)?);
        out.push_str("</div>\n");
        out.push_str("<p>Side by side (every runtime at once, the same offered rate):</p>\n");
        out.push_str(&plain_table(&crate::render::SIDE_HEADER, &side));
    }
    Ok(out)
}

/// A scenario's verdict per cell: throughput, then efficiency at each side-by-side level.
fn cell_verdicts(report: &Report, scenario: &str) -> String {
    let mut out = String::new();
    out.push_str("<ul>\n");
    for cell in report.cells.iter().filter(|c| c.scenario == scenario) {
        let _ = writeln!(
            out,
            "<li>{}: throughput <b>{}</b> — {}</li>",
            esc(&super::cell_name(report, cell)),
            esc(&cell.verdict.label()),
            esc(&cell.verdict.reason),
        );
        for level in &cell.efficiency_levels {
            let _ = writeln!(
                out,
                "<li>{} at {} ({}/s each): efficiency <b>{}</b> — {}</li>",
                esc(&super::cell_name(report, cell)),
                esc(&level.level),
                esc(&super::rate_words(level.rate_per_s)),
                esc(&level.verdict.label()),
                esc(&level.verdict.reason),
            );
        }
    }
    out.push_str("</ul>\n");
    out
}

/// A verdict's label and reason, or dashes where there is none (reports older than it).
fn label_and_reason(verdict: Option<&Verdict>) -> (String, String) {
    verdict.map_or(("-".to_owned(), "-".to_owned()), |v| {
        (v.label(), v.reason.clone())
    })
}

fn setup(report: &Report) -> String {
    report.setup().html()
}

/// The thresholds asked for and every failed check.
fn thresholds(report: &Report) -> String {
    let asked = &report.settings.thresholds;
    if asked.is_empty() {
        return String::new();
    }
    let failed = crate::thresholds::failures(&report.threshold_checks);
    let mut out = format!(
        "<h2>Thresholds</h2>\n<p>{} threshold(s) checked against each run: <code>{}</code>. {}</p>\n",
        asked.len(),
        esc(&asked.join(", ")),
        if failed.is_empty() {
            format!("All {} checks held.", report.threshold_checks.len())
        } else {
            format!(
                "<b>{} of {} checks failed:</b>",
                failed.len(),
                report.threshold_checks.len()
            )
        }
    );
    if !failed.is_empty() {
        out.push_str("<ul>\n");
        for c in failed {
            let _ = writeln!(out, "<li>{}</li>", esc(&c.sentence()));
        }
        out.push_str("</ul>\n");
    }
    out
}

/// Every cell against the saved report, if there was one.
fn baseline(report: &Report) -> String {
    let Some(b) = &report.baseline else {
        return String::new();
    };
    let mut out = format!(
        "<h2>Against the baseline</h2>\n<p><code>{}</code>, started {} on {}.</p>\n<table>\n<tr>",
        esc(&b.path),
        esc(&b.started_at),
        esc(&b.machine)
    );
    for head in super::baseline::HEADER {
        let _ = write!(out, "<th>{}</th>", esc(head));
    }
    out.push_str("</tr>\n");
    for cell in &b.cells {
        out.push_str("<tr>");
        for text in super::baseline::cells(cell) {
            let _ = write!(out, "<td>{}</td>", esc(&text));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    let _ = writeln!(
        out,
        "<p>{}</p>",
        esc(&super::baseline::rule(&report.settings.rule, b))
    );
    if !b.differences.is_empty() || !b.missing.is_empty() {
        out.push_str("<ul>\n");
        for d in &b.differences {
            let _ = writeln!(out, "<li>Differs from the baseline: {}</li>", esc(d));
        }
        for m in &b.missing {
            let _ = writeln!(out, "<li>Not in the baseline: {}</li>", esc(m));
        }
        out.push_str("</ul>\n");
    }
    out
}

fn table(rows: &[&Row]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| crate::render::row_cells(row))
        .collect();
    plain_table(&crate::render::TABLE_HEADER, &cells)
}

fn servers(report: &Report) -> String {
    let mut out = String::from(
        "<h2>Server processes</h2>\n<table><tr><th>runtime</th><th>run</th><th>preload</th><th>pid</th><th>CPUs</th>\
         <th>ready after s</th><th>idle RSS MiB</th><th>RSS after MiB</th><th>peak RSS MiB</th><th>stop</th></tr>\n",
    );
    for s in &report.servers {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{:.2}</td>\
             <td class=\"n\">{:.1}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            esc(&s.runtime),
            s.round + 1,
            s.preload,
            s.pid,
            esc(s.cpus_allowed.as_deref().unwrap_or("?")),
            s.startup_s,
            s.rss_idle_mib,
            s.rss_after_mib.map_or("?".to_owned(), |v| format!("{v:.1}")),
            s.rss_peak_mib.map_or("?".to_owned(), |v| format!("{v:.1}")),
            esc(&s.stop.as_ref().map_or("?".to_owned(), ToString::to_string))
        );
    }
    out.push_str("</table>\n");
    out
}

fn runs(report: &Report) -> String {
    let mut out = String::from("<details><summary>Every run</summary>\n<table><tr>");
    for head in crate::render::RUN_HEADER {
        let _ = write!(out, "<th>{}</th>", esc(head));
    }
    out.push_str("</tr>\n");
    for run in &report.runs {
        out.push_str("<tr>");
        let cells = crate::render::run_cells(run);
        for (i, cell) in cells.iter().enumerate() {
            let text = crate::render::RUN_TEXT_COLUMNS.contains(&i);
            let class = if text { "" } else { " class=\"n\"" };
            let _ = write!(out, "<td{class}>{}</td>", esc(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n</details>\n");
    out
}

/// The user counts present in `rows`, ascending.
fn user_counts(rows: &[&Row]) -> Vec<u32> {
    let mut users: Vec<u32> = rows.iter().map(|r| r.users).collect();
    users.sort_unstable();
    users.dedup();
    users
}

/// The preloads present in `rows`, ascending.
fn preloads(rows: &[&Row]) -> Vec<u64> {
    let mut preloads: Vec<u64> = rows.iter().map(|r| r.preload).collect();
    preloads.sort_unstable();
    preloads.dedup();
    preloads
}

/// A document count for a chart label: `200`, `1k`, `2.5M`.
fn short(n: u64) -> String {
    let (value, unit) = match n {
        n if n >= 1_000_000 => (n as f64 / 1e6, "M"),
        n if n >= 1_000 => (n as f64 / 1e3, "k"),
        n => return n.to_string(),
    };
    let text = format!("{value:.1}");
    format!("{}{unit}", text.trim_end_matches('0').trim_end_matches('.'))
}

/// A series' name: the runtime, and its preload when the rows have several.
fn series_name(runtime: &str, preload: u64, several: bool) -> String {
    if several {
        format!("{runtime}, {} docs", short(preload))
    } else {
        runtime.to_owned()
    }
}

/// The runtimes present in `rows`, in the report's order.
fn runtimes<'a>(report: &'a Report, rows: &[&Row]) -> Vec<&'a str> {
    report
        .settings
        .runtimes
        .iter()
        .filter(|rt| rows.iter().any(|r| &r.runtime == *rt))
        .map(String::as_str)
        .collect()
}

/// The frame of a grouped bar chart: `labels` under the groups (one per whole x), `y_desc` up the
/// side, y from 0 to `top`.
fn bar_frame<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    caption: String,
    labels: Vec<String>,
    y_desc: &str,
    top: f64,
) -> anyhow::Result<LineChart<'a, 'b>> {
    let groups = labels.len();
    let mut chart = ChartBuilder::on(root)
        .caption(caption, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5f64..groups as f64 - 0.5, 0f64..top)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(groups.max(2))
        .x_label_formatter(&move |x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
                labels[i as usize].clone()
            } else {
                String::new()
            }
        })
        .y_desc(y_desc)
        .y_label_formatter(&|y| format!("{y:.0}"))
        .light_line_style(RGBColor(240, 240, 240))
        .draw()
        .map_err(plot_err)?;
    Ok(chart)
}

/// Grouped bars: one group per user count (and preload), one bar per runtime, a whisker from min to
/// max.
fn throughput_bars(report: &Report, scenario: &str, rows: &[&Row]) -> anyhow::Result<String> {
    let several = preloads(rows).len() > 1;
    let groups: Vec<(u64, u32)> = preloads(rows)
        .into_iter()
        .flat_map(|p| user_counts(rows).into_iter().map(move |u| (p, u)))
        .filter(|(p, u)| rows.iter().any(|r| r.preload == *p && r.users == *u))
        .collect();
    let runtimes = runtimes(report, rows);
    let top = rows
        .iter()
        .map(|r| r.hits_per_s_max.max(r.hits_per_s))
        .fold(1.0, f64::max)
        * 1.45; // room for the legend above the bars
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, CHART).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let labels: Vec<String> = groups
            .iter()
            .map(|(p, u)| {
                if several {
                    format!("{u} u, {} docs", short(*p))
                } else {
                    format!("{u} users")
                }
            })
            .collect();
        let mut chart = bar_frame(
            &root,
            format!("{scenario}: throughput per runtime"),
            labels,
            "hits/s (median)",
            top,
        )?;
        let width = 0.8 / runtimes.len().max(1) as f64;
        for (k, runtime) in runtimes.iter().enumerate() {
            let color = colour(&report.settings.runtimes, runtime);
            let bars: Vec<(f64, &Row)> = groups
                .iter()
                .enumerate()
                .filter_map(|(i, (p, u))| {
                    rows.iter()
                        .find(|r| r.users == *u && r.preload == *p && r.runtime == *runtime)
                        .map(|r| (i as f64 - 0.4 + width * k as f64, *r))
                })
                .collect();
            chart
                .draw_series(bars.iter().map(|(x, r)| {
                    Rectangle::new(
                        [(*x + width * 0.05, 0.0), (*x + width * 0.95, r.hits_per_s)],
                        color.filled(),
                    )
                }))
                .map_err(plot_err)?
                .label(runtime.to_string())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
            chart
                .draw_series(bars.iter().filter(|(_, r)| r.runs > 1).map(|(x, r)| {
                    let mid = *x + width / 2.0;
                    PathElement::new(
                        vec![(mid, r.hits_per_s_min), (mid, r.hits_per_s_max)],
                        BLACK.stroke_width(2),
                    )
                }))
                .map_err(plot_err)?;
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg + "\n")
}

/// Stacked bars of the cost breakdown side by side: per cell level, one bar per runtime, user CPU
/// µs per request below and system above (the whole bar is its CPU per request).
fn breakdown_bars(report: &Report, scenario: &str) -> anyhow::Result<String> {
    let cells: Vec<&brigade_records::side::SideCell> = report
        .side_by_side
        .iter()
        .filter(|c| c.scenario == scenario)
        .collect();
    let runtimes: Vec<&str> = report
        .settings
        .runtimes
        .iter()
        .map(String::as_str)
        .collect();
    let top = cells
        .iter()
        .flat_map(|c| &c.runtimes)
        .map(|r| r.cpu_us_per_request)
        .fold(1.0, f64::max)
        * 1.45;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, CHART).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let labels: Vec<String> = cells
            .iter()
            .map(|c| format!("{} users, {}", c.users, c.level))
            .collect();
        let mut chart = bar_frame(
            &root,
            format!("{scenario}: CPU per request side by side (user below, system above)"),
            labels,
            "server CPU µs per request",
            top,
        )?;
        let width = 0.8 / runtimes.len().max(1) as f64;
        for (k, runtime) in runtimes.iter().enumerate() {
            let color = colour(&report.settings.runtimes, runtime);
            let bars: Vec<(f64, f64, f64)> = cells
                .iter()
                .enumerate()
                .filter_map(|(i, c)| {
                    let r = c.runtimes.iter().find(|r| r.runtime == *runtime)?;
                    let user = r.user_cpu_us_per_request.unwrap_or(r.cpu_us_per_request);
                    Some((
                        i as f64 - 0.4 + width * k as f64,
                        user,
                        r.cpu_us_per_request,
                    ))
                })
                .collect();
            chart
                .draw_series(bars.iter().map(|(x, user, _)| {
                    Rectangle::new(
                        [(*x + width * 0.05, 0.0), (*x + width * 0.95, *user)],
                        color.filled(),
                    )
                }))
                .map_err(plot_err)?
                .label(runtime.to_string())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
            chart
                .draw_series(bars.iter().map(|(x, user, total)| {
                    Rectangle::new(
                        [(*x + width * 0.05, *user), (*x + width * 0.95, *total)],
                        color.mix(0.35).filled(),
                    )
                }))
                .map_err(plot_err)?;
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg + "\n")
}

/// Lines: hits/s against users, one line per runtime.
fn throughput_by_users(report: &Report, scenario: &str, rows: &[&Row]) -> anyhow::Result<String> {
    let users = user_counts(rows);
    let runtimes = runtimes(report, rows);
    let (lo, hi) = (users[0] as f64, users[users.len() - 1] as f64);
    let pad = ((hi - lo) * 0.08).max(1.0);
    let top = rows.iter().map(|r| r.hits_per_s).fold(1.0, f64::max) * 1.15;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, CHART).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{scenario}: throughput against users"),
                ("sans-serif", 16),
            )
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d((lo - pad)..(hi + pad), 0f64..top)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("users")
            .y_desc("hits/s (median)")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .light_line_style(RGBColor(240, 240, 240))
            .draw()
            .map_err(plot_err)?;
        let several = preloads(rows).len() > 1;
        for preload in preloads(rows) {
            for runtime in &runtimes {
                let color = colour(&report.settings.runtimes, runtime);
                let points: Vec<(f64, f64)> = users
                    .iter()
                    .filter_map(|u| {
                        rows.iter()
                            .find(|r| {
                                r.users == *u && r.preload == preload && r.runtime == *runtime
                            })
                            .map(|r| (*u as f64, r.hits_per_s))
                    })
                    .collect();
                let name = series_name(runtime, preload, several);
                draw_line(&mut chart, points, color, name, 4)?;
            }
        }
        draw_legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg + "\n")
}

/// Lines over p50, p90, p99, p99.9 and max at the highest user count, on a log scale (the values'
/// logarithms on a linear axis, labelled with the values, so every decade gets its ticks).
fn latency_percentiles(report: &Report, scenario: &str, rows: &[&Row]) -> anyhow::Result<String> {
    const NAMES: [&str; 5] = ["p50", "p90", "p99", "p99.9", "max"];
    let users = *user_counts(rows).last().unwrap_or(&0);
    let at: Vec<&Row> = rows
        .iter()
        .copied()
        .filter(|r| r.users == users && r.runs > 0)
        .collect();
    let values = |r: &Row| [r.p50_ms, r.p90_ms, r.p99_ms, r.p999_ms, r.max_ms];
    let all: Vec<f64> = at
        .iter()
        .flat_map(|r| values(r))
        .filter(|v| *v > 0.0)
        .collect();
    let (lo, hi) = log_range(&all);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, CHART).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{scenario}: latency at {users} users"),
                ("sans-serif", 16),
            )
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.3f64..4.3f64, lo.log10()..hi.log10())
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(5)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && (0.0..5.0).contains(&i) {
                    NAMES[i as usize].to_owned()
                } else {
                    String::new()
                }
            })
            .y_desc("ms (log scale)")
            .y_labels(10)
            .y_label_formatter(&|y| significant(10f64.powf(*y)))
            .light_line_style(RGBColor(240, 240, 240))
            .draw()
            .map_err(plot_err)?;
        let several = preloads(&at).len() > 1;
        for row in &at {
            let color = colour(&report.settings.runtimes, &row.runtime);
            let points: Vec<(f64, f64)> = values(row)
                .iter()
                .enumerate()
                .filter(|(_, v)| **v > 0.0)
                .map(|(i, v)| (i as f64, v.log10()))
                .collect();
            let name = series_name(&row.runtime, row.preload, several);
            draw_line(&mut chart, points, color, name, 3)?;
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg + "\n")
}

/// Lines: hits/s against the preload (log scale) at the highest user count, one line per runtime:
/// a flat line is a store that does not slow down as its data grows.
fn throughput_by_preload(report: &Report, scenario: &str, rows: &[&Row]) -> anyhow::Result<String> {
    let users = *user_counts(rows).last().unwrap_or(&0);
    let at: Vec<&Row> = rows.iter().copied().filter(|r| r.users == users).collect();
    let preloads = preloads(&at);
    // log10 of the preload, with 0 drawn one decade below the smallest other preload.
    let smallest = preloads
        .iter()
        .copied()
        .filter(|&p| p > 0)
        .min()
        .unwrap_or(1);
    let x = |p: u64| {
        if p == 0 {
            (smallest as f64).log10() - 1.0
        } else {
            (p as f64).log10()
        }
    };
    let (lo, hi) = (x(preloads[0]), x(preloads[preloads.len() - 1]));
    let pad = ((hi - lo) * 0.08).max(0.2);
    let top = at.iter().map(|r| r.hits_per_s).fold(1.0, f64::max) * 1.15;
    let labels: Vec<(f64, String)> = preloads.iter().map(|&p| (x(p), short(p))).collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, CHART).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{scenario}: throughput against preload at {users} users"),
                ("sans-serif", 16),
            )
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d((lo - pad)..(hi + pad), 0f64..top)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("documents per collection (log scale)")
            .y_desc("hits/s (median)")
            .x_labels(40)
            .x_label_formatter(&|v| {
                labels
                    .iter()
                    .find(|(at, _)| (at - v).abs() < 0.03)
                    .map(|(_, text)| text.clone())
                    .unwrap_or_default()
            })
            .y_label_formatter(&|y| format!("{y:.0}"))
            .light_line_style(RGBColor(240, 240, 240))
            .draw()
            .map_err(plot_err)?;
        for runtime in runtimes(report, &at) {
            let color = colour(&report.settings.runtimes, runtime);
            let points: Vec<(f64, f64)> = preloads
                .iter()
                .filter_map(|&p| {
                    at.iter()
                        .find(|r| r.preload == p && r.runtime == runtime)
                        .map(|r| (x(p), r.hits_per_s))
                })
                .collect();
            draw_line(&mut chart, points, color, runtime.to_string(), 4)?;
        }
        draw_legend(&mut chart, SeriesLabelPosition::LowerLeft)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg + "\n")
}
