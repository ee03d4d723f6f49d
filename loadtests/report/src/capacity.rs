//! The capacity section of the reports (`compare --slo`): per scenario, every runtime's capacity
//! at the SLOs with its bracket, search by search, per server CPU and in cores for a target rate,
//! the capacity verdicts, and the latency–rate curve — in markdown as tables, in HTML as a chart
//! per cell (p50 and p99 on a log axis against the offered rate, one colour per runtime, the
//! latency SLOs drawn across, each capacity marked).

use std::fmt::Write as _;

use brigade_slo::{rate_words, CurvePoint, SloSearch};
use plotters::prelude::*;

use super::render::{colour, esc, plot_err, significant};

/// The curve chart's size in pixels: wider than the others, for seven runtimes' knees.
const CURVE_CHART: (u32, u32) = (880, 460);
use super::Report;

/// The header of the capacity table: one row per search.
pub const HEADER: [&str; 11] = [
    "runtime",
    "users",
    "search",
    "capacity /s",
    "per server CPU /s",
    "cores for target",
    "bracket /s",
    "steps",
    "seconds",
    "machine's own pauses",
    "why",
];

/// How the searches go, in words (the report's explanation under the capacity table).
pub fn rules(report: &Report) -> String {
    let Some(slo) = &report.settings.slo else {
        return String::new();
    };
    format!(
        "Capacity is the highest open-loop rate at which every SLO ({}) held, latency counted \
         from each request's intended send time. A step measures {} sub-windows of {} s (after \
         {} s of warm-up), each with an exact histogram; every step at one rate pools, and the \
         rate is held when every SLO's one-sided 95% upper bound is inside it, failed when one's \
         lower bound is past it, and not yet known otherwise: then it is measured again, up to \
         {} sub-windows, after which it counts as failed (a percentile SLO is judged as the \
         share of latencies past its bound, with the sub-window as the unit, since a pause \
         delays a batch of requests together). The search ramps from its start rate (×2 while \
         the SLO holds, ÷2 while it fails), bisects until the bracket's ends are within {}%, \
         and rechecks each end on a fresh visit, moving the bracket when an end turns; the \
         capacity is the low end once both ends have answered twice. Each runtime gets {} \
         independent searches per cell, each round on fresh servers after a probe of the \
         machine's own pauses (a capacity the machine's pauses alone would break is refused); \
         the capacity verdict compares the searches' capacities by rounds (simultaneous \
         intervals, ±{}% margin), and a runtime with a search that found none is not ranked. \
         Steps: {}. A step the generator could not offer ends that search as generator-bound.",
        slo.slo.join(", "),
        slo.windows,
        trim(slo.window_s),
        trim(slo.warmup_s),
        slo.max_windows,
        trim(slo.precision_pct),
        slo.searches,
        trim(
            report
                .settings
                .rule
                .margin_pct(crate::verdict::Measure::Capacity)
        ),
        slo.interleaving
    )
}

fn trim(v: f64) -> String {
    super::render::trim(v)
}

/// One search's row of the capacity table.
pub fn row(search: &SloSearch) -> Vec<String> {
    let o = &search.outcome;
    let maybe = |v: Option<f64>| v.map_or("-".to_owned(), rate_words);
    vec![
        search.runtime.clone(),
        search.users.to_string(),
        (search.search + 1).to_string(),
        maybe(o.capacity_per_s),
        maybe(search.capacity_per_cpu),
        search.cores_for_target.map_or("-".to_owned(), |c| {
            format!(
                "{c:.2} for {}",
                rate_words(search.target_rate_per_s.unwrap_or(0.0))
            )
        }),
        match (o.bracket_low, o.bracket_high) {
            (Some(l), Some(h)) => format!("{}–{}", rate_words(l), rate_words(h)),
            (Some(l), None) => format!("≥ {}", rate_words(l)),
            (None, Some(h)) => format!("< {}", rate_words(h)),
            (None, None) => "-".to_owned(),
        },
        o.steps.to_string(),
        format!("{:.0}", search.seconds),
        search.stall_probe.as_ref().map_or("-".to_owned(), pauses),
        o.reason.clone().unwrap_or_else(|| "-".to_owned()),
    ]
}

/// The probe's pauses in a table cell: `server 0.5/s ≤ 27 ms; generator 0/s`.
fn pauses(probe: &brigade_slo::stalls::StallProbe) -> String {
    probe
        .sides
        .iter()
        .map(|s| {
            format!(
                "{} {:.2}/s, longest {:.1} ms",
                s.side, s.pauses_per_s, s.longest_ms
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Each runtime's capacity over its searches in a cell, one line each.
fn summaries(searches: &[&SloSearch]) -> Vec<String> {
    let mut runtimes: Vec<&str> = Vec::new();
    for s in searches {
        if !runtimes.contains(&s.runtime.as_str()) {
            runtimes.push(&s.runtime);
        }
    }
    runtimes
        .into_iter()
        .map(|r| {
            let mine: Vec<&SloSearch> = searches
                .iter()
                .copied()
                .filter(|s| s.runtime == r)
                .collect();
            brigade_slo::CapacitySummary::of(&mine).sentence()
        })
        .collect()
}

/// The header of the curve table.
pub const CURVE_HEADER: [&str; 10] = [
    "runtime",
    "search",
    "stage",
    "offered /s",
    "achieved /s",
    "p99 ms (step)",
    "sub-windows",
    "pooled p99 ms",
    "errors %",
    "answer",
];

/// A curve point's row: the step alone, and the rate's pooled answer after it.
fn curve_row(search: &SloSearch, p: &CurvePoint) -> Vec<String> {
    vec![
        search.runtime.clone(),
        (search.search + 1).to_string(),
        p.stage.as_str().to_owned(),
        rate_words(p.offered_per_s),
        rate_words(p.achieved_per_s),
        format!("{:.3}", p.p99_ms),
        p.windows.to_string(),
        format!("{:.3}", p.pooled_p99_ms),
        format!("{:.2}", p.error_pct),
        match &p.why {
            Some(why) => format!("{}: {why}", p.answer.words()),
            None => p.answer.words().to_owned(),
        },
    ]
}

/// The cells (scenario, users, preload) that have searches, in the report's order.
fn cells<'a>(report: &'a Report, scenario: &str) -> Vec<(u32, u64, Vec<&'a SloSearch>)> {
    let mut out = Vec::new();
    for &preload in &report.settings.preloads {
        for &users in &report.settings.users {
            let mine: Vec<&SloSearch> = report
                .slo_searches
                .iter()
                .filter(|s| s.scenario == scenario && s.users == users && s.preload == preload)
                .collect();
            if !mine.is_empty() {
                out.push((users, preload, mine));
            }
        }
    }
    out
}

/// The capacity section of `report.md` (empty without searches).
pub fn markdown(report: &Report) -> String {
    if report.slo_searches.is_empty() {
        return String::new();
    }
    let mut out = String::from("## Capacity at the SLO\n\n");
    let _ = writeln!(out, "{}\n", rules(report));
    for scenario in &report.settings.scenarios {
        let rows: Vec<Vec<String>> = report
            .slo_searches
            .iter()
            .filter(|s| &s.scenario == scenario)
            .map(row)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "### Scenario `{scenario}`\n");
        out.push_str(&super::render::table(&HEADER, &rows));
        out.push('\n');
        for (users, _, searches) in cells(report, scenario) {
            for line in summaries(&searches) {
                let _ = writeln!(out, "- {users} users: {line}");
            }
        }
        for cell in report.cells.iter().filter(|c| &c.scenario == scenario) {
            if let Some(v) = &cell.capacity {
                let _ = writeln!(
                    out,
                    "- {}: capacity **{}** — {}",
                    super::cell_name(report, cell),
                    v.label(),
                    v.reason
                );
            }
        }
        if let Some(v) = report
            .scenarios
            .iter()
            .find(|v| &v.scenario == scenario)
            .and_then(|v| v.capacity.as_ref())
        {
            let _ = writeln!(out, "- Scenario: capacity **{}** — {}", v.label(), v.reason);
        }
        out.push('\n');
    }
    out
}

/// The latency–rate curves of `report.md`'s appendix: every tested rate of every search.
pub fn markdown_curves(report: &Report) -> String {
    if report.slo_searches.is_empty() {
        return String::new();
    }
    let mut out = String::from("## Latency–rate curves\n\n");
    for scenario in &report.settings.scenarios {
        for (users, preload, searches) in cells(report, scenario) {
            let _ = writeln!(
                out,
                "### `{scenario}`, {users} users{}\n",
                if preload > 0 {
                    format!(", preload {}", crate::verdict::count(preload))
                } else {
                    String::new()
                }
            );
            let mut rows = Vec::new();
            for s in searches {
                rows.extend(s.outcome.curve.iter().map(|p| curve_row(s, p)));
            }
            out.push_str(&super::render::table(&CURVE_HEADER, &rows));
            out.push('\n');
        }
    }
    out
}

/// The capacity section of `report.html`: the table, the verdicts and a curve chart per cell.
pub fn html(report: &Report) -> anyhow::Result<String> {
    if report.slo_searches.is_empty() {
        return Ok(String::new());
    }
    let mut out = String::from("<h2>Capacity at the SLO</h2>\n");
    let _ = writeln!(out, "<p>{}</p>", esc(&rules(report)));
    for scenario in &report.settings.scenarios {
        let cells = cells(report, scenario);
        if cells.is_empty() {
            continue;
        }
        let _ = writeln!(out, "<h3>Scenario <code>{}</code></h3>", esc(scenario));
        out.push_str("<div class=\"charts\">\n");
        for (users, preload, searches) in &cells {
            out.push_str(&curve_chart(report, scenario, *users, *preload, searches)?);
        }
        out.push_str("</div>\n");
        let rows: Vec<Vec<String>> = cells
            .iter()
            .flat_map(|(_, _, searches)| searches.iter().map(|s| row(s)))
            .collect();
        out.push_str(&super::render::plain_table(&HEADER, &rows));
        out.push_str("<ul>\n");
        for (users, _, searches) in &cells {
            for line in summaries(searches) {
                let _ = writeln!(out, "<li>{users} users: {}</li>", esc(&line));
            }
        }
        for cell in report.cells.iter().filter(|c| &c.scenario == scenario) {
            if let Some(v) = &cell.capacity {
                let _ = writeln!(
                    out,
                    "<li>{}: capacity <b>{}</b> — {}</li>",
                    esc(&super::cell_name(report, cell)),
                    esc(&v.label()),
                    esc(&v.reason)
                );
            }
        }
        out.push_str("</ul>\n");
    }
    Ok(out)
}

/// The latency SLOs' bounds in ms, with their names, to draw across the chart.
fn latency_bounds(slo: &[String]) -> Vec<(String, f64)> {
    slo.iter()
        .filter_map(|text| {
            let t = brigade_records::threshold::parse_slo(text).ok()?;
            t.latency_bound_ms().map(|ms| (text.clone(), ms))
        })
        .collect()
}

/// The median of `value` at each distinct offered rate of `curve`, as (rate, log10 of the median),
/// in rate order; points without a positive value are left out.
fn median_by_rate(curve: &[CurvePoint], value: impl Fn(&CurvePoint) -> f64) -> Vec<(f64, f64)> {
    let mut by_rate: std::collections::BTreeMap<u64, (f64, Vec<f64>)> = Default::default();
    for p in curve.iter().filter(|p| value(p) > 0.0) {
        by_rate
            .entry(p.offered_per_s.round() as u64)
            .or_insert_with(|| (p.offered_per_s, Vec::new()))
            .1
            .push(value(p));
    }
    by_rate
        .into_values()
        .map(|(rate, values)| (rate, brigade_stats::median(&values).log10()))
        .collect()
}

/// One cell's latency–rate chart: every step's p99 as a small dot, and a line per runtime through
/// the median p99 (solid) and p50 (thin) at each rate tested, on a log axis against the offered
/// rate; the latency SLOs drawn across, and each runtime's capacity marked by a vertical line and
/// a triangle in its colour.
fn curve_chart(
    report: &Report,
    scenario: &str,
    users: u32,
    preload: u64,
    searches: &[&SloSearch],
) -> anyhow::Result<String> {
    let points: Vec<&CurvePoint> = searches.iter().flat_map(|s| &s.outcome.curve).collect();
    let bounds = latency_bounds(searches.first().map_or(&[][..], |s| &s.outcome.slo));
    let latencies: Vec<f64> = points
        .iter()
        .flat_map(|p| [p.p50_ms, p.p99_ms])
        .chain(bounds.iter().map(|(_, ms)| *ms))
        .filter(|v| *v > 0.0 && v.is_finite())
        .collect();
    let (lo, hi) = super::render::log_range(&latencies);
    let max_rate = points.iter().map(|p| p.offered_per_s).fold(1.0, f64::max) * 1.05;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, CURVE_CHART).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let caption = format!(
            "{scenario}: latency against rate, {users} users{}",
            if preload > 0 {
                format!(", preload {}", crate::verdict::count(preload))
            } else {
                String::new()
            }
        );
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..max_rate, lo.log10()..hi.log10())
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("offered requests/s")
            .x_labels(6)
            .x_label_formatter(&|x| crate::verdict::figure(*x))
            .y_desc("ms (log scale)")
            .y_labels(10)
            .y_label_formatter(&|y| significant(10f64.powf(*y)))
            .light_line_style(RGBColor(240, 240, 240))
            .draw()
            .map_err(plot_err)?;
        for (name, ms) in &bounds {
            let y = ms.log10();
            chart
                .draw_series(LineSeries::new(
                    vec![(0.0, y), (max_rate, y)],
                    BLACK.mix(0.6).stroke_width(1),
                ))
                .map_err(plot_err)?
                .label(format!("SLO {name}"))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], BLACK.mix(0.6)));
        }
        for search in searches {
            let color = colour(&report.settings.runtimes, &search.runtime);
            draw_search(&mut chart, search, color, (lo, hi))?;
        }
        super::render::draw_legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg + "\n")
}

/// One search on the latency–rate chart: every step's p99 a dot, the median p99 (solid) and p50
/// (thin) lines, and its capacity marked by a vertical line and a triangle; `(lo, hi)` is the
/// latency axis in ms.
fn draw_search(
    chart: &mut super::render::LineChart<'_, '_>,
    search: &SloSearch,
    color: RGBColor,
    (lo, hi): (f64, f64),
) -> anyhow::Result<()> {
    let curve = &search.outcome.curve;
    // Every step a dot; the line through each rate's pooled figures (a step's own where none were
    // pooled; the median where a rate was tested several times, extended or rechecked), so that
    // each rate draws one point of the curve.
    let pooled = |own: f64, pooled: f64| if pooled > 0.0 { pooled } else { own };
    let p99 = median_by_rate(curve, |p| pooled(p.p99_ms, p.pooled_p99_ms));
    let p50 = median_by_rate(curve, |p| pooled(p.p50_ms, p.pooled_p50_ms));
    chart
        .draw_series(curve.iter().filter(|p| p.p99_ms > 0.0).map(|p| {
            Circle::new(
                (p.offered_per_s, p.p99_ms.log10()),
                2,
                color.mix(0.5).filled(),
            )
        }))
        .map_err(plot_err)?;
    if search.search == 0 {
        // One legend entry per runtime, however many searches it had.
        super::render::draw_line(chart, p99, color, format!("{} p99", search.runtime), 3)?;
    } else {
        chart
            .draw_series(LineSeries::new(p99.clone(), color.stroke_width(2)))
            .map_err(plot_err)?;
        chart
            .draw_series(p99.iter().map(|p| Circle::new(*p, 3, color.filled())))
            .map_err(plot_err)?;
    }
    chart
        .draw_series(LineSeries::new(p50, color.mix(0.5).stroke_width(1)))
        .map_err(plot_err)?;
    if let Some(capacity) = search.outcome.capacity_per_s {
        chart
            .draw_series(LineSeries::new(
                vec![(capacity, lo.log10()), (capacity, hi.log10())],
                color.mix(0.7).stroke_width(1),
            ))
            .map_err(plot_err)?;
        chart
            .draw_series(std::iter::once(TriangleMarker::new(
                (capacity, lo.log10()),
                7,
                color.filled(),
            )))
            .map_err(plot_err)?;
    }
    Ok(())
}
