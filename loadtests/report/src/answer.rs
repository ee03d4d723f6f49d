//! The answer a reader came for, before anything else: one line per scenario, its levels pooled
//! (the best runtime, who trails it and how surely, where the order changes between levels), each
//! runtime's requests per server CPU-second, a forest plot with one row per runtime per scenario
//! (HTML); below it, every side-by-side level's leader in one line and its own forest. Each has a
//! tally that counts wins beyond the margin apart from orders inside it ("ahead"), equivalences
//! and the undecided, so nobody mistakes an order for a difference that matters.

use std::fmt::Write as _;

use super::comparison::Comparison;
use super::render::esc;
use super::{CellVerdict, LevelVerdict, PooledVerdict, Report};
use crate::verdict::Measure;

/// One judged side-by-side level with its comparisons (the best against each other runtime).
struct LevelAnswer<'a> {
    cell: &'a CellVerdict,
    level: &'a LevelVerdict,
    comparisons: Vec<&'a Comparison>,
}

/// Every side-by-side level of `scenario`, in the report's order.
fn levels<'a>(report: &'a Report, scenario: &str) -> Vec<LevelAnswer<'a>> {
    let mut out = Vec::new();
    for cell in report.cells.iter().filter(|c| c.scenario == scenario) {
        for level in &cell.efficiency_levels {
            let comparisons = report
                .comparisons
                .iter()
                .filter(|c| {
                    c.measure == Measure::Efficiency
                        && c.scenario == scenario
                        && c.users == cell.users
                        && c.preload == cell.preload
                        && c.level.as_deref() == Some(level.level.as_str())
                })
                .collect();
            out.push(LevelAnswer {
                cell,
                level,
                comparisons,
            });
        }
    }
    out
}

/// An outcome in one word.
fn word(outcome: brigade_stats::Outcome) -> &'static str {
    match outcome {
        brigade_stats::Outcome::Win => "win",
        brigade_stats::Outcome::Ahead => "ahead",
        brigade_stats::Outcome::Equivalent => "equivalent",
        brigade_stats::Outcome::Undecided => "undecided",
        brigade_stats::Outcome::NotJudged => "not judged",
    }
}

/// `+1.8% (1.0–2.6%)`: how much more the other runtime spends than the best.
fn extra(c: &Comparison) -> String {
    match (c.ratio, c.ci_low, c.ci_high) {
        (Some(r), Some(lo), Some(hi)) => format!(
            "{:+.1}% ({:.1}–{:.1}%)",
            (r - 1.0) * 100.0,
            (lo - 1.0) * 100.0,
            (hi - 1.0) * 100.0
        ),
        _ => "no interval".to_owned(),
    }
}

/// Where a level lies and what it measured: `10 users at 40% (437/s each, 44% busy)`.
fn where_words(report: &Report, a: &LevelAnswer<'_>) -> String {
    let busy = a
        .level
        .busy_pct
        .map(|b| format!(", {b:.0}% busy"))
        .unwrap_or_default();
    format!(
        "{} at {} ({}/s each{busy})",
        super::cell_name(report, a.cell),
        a.level.level,
        super::rate_words(a.level.rate_per_s)
    )
}

/// The one-line leader of a level, in markdown.
fn leader_line(report: &Report, a: &LevelAnswer<'_>) -> String {
    let place = where_words(report, a);
    let Some(leader) = &a.level.leader else {
        return format!("{place}: {}", a.level.verdict.label());
    };
    let group = group_words(&leader.runtimes);
    let state = if leader.decided { "decided" } else { "open" };
    let trail = trail(a.comparisons.iter().copied());
    let basis = basis_words(&a.comparisons);
    format!("{place}: {group} leads, {state} ({trail}){basis}")
}

/// What a level's intervals rest on: ` — 96% simultaneous intervals, 8 rounds`; where its later
/// rounds ran only the runtimes still in question, each part named: ` — xitca: 99% simultaneous
/// intervals, 19 rounds; the others: 96% simultaneous intervals, 8 rounds`.
fn basis_words(comparisons: &[&Comparison]) -> String {
    let words = |c: &Comparison| {
        format!(
            "{:.0}%{} intervals, {} {}",
            c.confidence_pct,
            if c.simultaneous { " simultaneous" } else { "" },
            c.samples,
            if c.simultaneous { "rounds" } else { "windows" }
        )
    };
    let mut parts: Vec<(String, Vec<&str>)> = Vec::new();
    for c in comparisons {
        let said = words(c);
        match parts.iter_mut().find(|(w, _)| *w == said) {
            Some((_, who)) => who.push(&c.b),
            None => parts.push((said, vec![&c.b])),
        }
    }
    match parts.as_slice() {
        [] => String::new(),
        [(said, _)] => format!(" — {said}"),
        _ => {
            let last = parts.len() - 1;
            let named: Vec<String> = parts
                .iter()
                .enumerate()
                .map(|(i, (said, who))| {
                    let who = if i == last && who.len() > 2 {
                        "the others".to_owned()
                    } else {
                        who.join(", ")
                    };
                    format!("{who}: {said}")
                })
                .collect();
            format!(" — {}", named.join("; "))
        }
    }
}

/// Every scenario's pooled answer, in the report's order.
fn pooled(report: &Report) -> Vec<(&str, &PooledVerdict)> {
    report
        .scenarios
        .iter()
        .filter_map(|s| Some((s.scenario.as_str(), s.pooled.as_ref()?)))
        .collect()
}

/// `**hyper** ≈ **xitca-web**`.
fn group_words(runtimes: &[String]) -> String {
    runtimes
        .iter()
        .map(|r| format!("**{r}**"))
        .collect::<Vec<_>>()
        .join(" ≈ ")
}

/// Who trails the best and how surely: `warp +1.8% (1.0–2.6%) ahead; axum …`.
fn trail<'a>(comparisons: impl Iterator<Item = &'a Comparison>) -> String {
    comparisons
        .map(|c| format!("{} {} {}", c.b, extra(c), word(c.outcome)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// A scenario's pooled answer in one line of markdown.
fn scenario_line(scenario: &str, p: &PooledVerdict) -> String {
    let left = if p.left_out.is_empty() {
        String::new()
    } else {
        format!("; left out: {}", p.left_out.join("; "))
    };
    let Some(leader) = &p.leader else {
        return format!("`{scenario}`: no levels to pool{left}");
    };
    let state = if leader.decided { "decided" } else { "open" };
    let trail = trail(p.comparisons.iter());
    let confidence = p.comparisons.first().map_or(0.0, |c| c.confidence_pct);
    let interaction = p
        .interaction
        .map(|f| format!("; the gaps scatter between levels ×{f:.1} what the rounds explain"))
        .unwrap_or_default();
    let changes = if p.levels.len() < 2 {
        String::new()
    } else if p.order_changes.is_empty() {
        "; the same order at every level".to_owned()
    } else {
        format!("; the order changes {}", p.order_changes.join(", "))
    };
    let over = match p.levels.as_slice() {
        [only] => format!("at its one level ({only})"),
        all => format!("over {} levels", all.len()),
    };
    format!(
        "`{scenario}` {over}: {} leads, {state} ({trail}) — {confidence:.0}% intervals \
         simultaneous over every pair{interaction}{changes}{left}",
        group_words(&leader.runtimes)
    )
}

/// The tally over every scenario's pooled answer, in one sentence.
pub fn scenario_tally(report: &Report) -> String {
    let all = pooled(report);
    let judged: Vec<&PooledVerdict> = all
        .iter()
        .map(|(_, p)| *p)
        .filter(|p| p.leader.is_some())
        .collect();
    let decided = judged
        .iter()
        .filter(|p| p.leader.as_ref().is_some_and(|l| l.decided))
        .count();
    let comparisons: Vec<&Comparison> = judged.iter().flat_map(|p| &p.comparisons).collect();
    let count = |o: brigade_stats::Outcome| comparisons.iter().filter(|c| c.outcome == o).count();
    format!(
        "Per scenario, its levels pooled: the leader decided in {decided} of {} scenarios; \
         comparisons with the best: {} wins beyond the margin, {} ahead (an order inside it), {} \
         equivalent, {} undecided; median half-width {:.2} points.",
        judged.len(),
        count(brigade_stats::Outcome::Win),
        count(brigade_stats::Outcome::Ahead),
        count(brigade_stats::Outcome::Equivalent),
        count(brigade_stats::Outcome::Undecided),
        median_half_width(&comparisons),
    )
}

/// The median half-width of `comparisons`' intervals, in points.
fn median_half_width(comparisons: &[&Comparison]) -> f64 {
    let halves: Vec<f64> = comparisons
        .iter()
        .filter_map(|c| Some((c.ci_high? - c.ci_low?) / 2.0 * 100.0))
        .collect();
    brigade_stats::median(&halves)
}

/// What the capacity-per-core table shows.
const PER_CORE: &str = "Capacity per core — requests per second of server CPU (10⁶ / CPU µs per \
     request), the geometric mean over each scenario's pooled levels, their lowest–highest in \
     brackets. The verdicts above judge their ratios; the isolated runs (one per cell by default) \
     judge no throughput, so this is the throughput answer per core.";

/// Every runtime's requests per server CPU-second per scenario: the header and one row per
/// runtime; None without a pooled scenario.
fn per_core_rows(report: &Report) -> Option<(Vec<String>, Vec<Vec<String>>)> {
    let all = pooled(report);
    let mut runtimes: Vec<&str> = Vec::new();
    for c in all.iter().flat_map(|(_, p)| &p.per_core) {
        if !runtimes.contains(&c.runtime.as_str()) {
            runtimes.push(&c.runtime);
        }
    }
    if runtimes.is_empty() {
        return None;
    }
    let mut header = vec!["runtime".to_owned()];
    header.extend(all.iter().map(|(s, _)| (*s).to_owned()));
    let rows = runtimes
        .into_iter()
        .map(|runtime| {
            let mut row = vec![runtime.to_owned()];
            row.extend(all.iter().map(|(_, p)| {
                p.per_core
                    .iter()
                    .find(|c| c.runtime == runtime)
                    .map_or("—".to_owned(), |c| {
                        let n = |v: f64| brigade_records::number::grouped(v.round() as u64);
                        format!("{} ({}–{})", n(c.hits_per_cpu_s), n(c.lowest), n(c.highest))
                    })
            }));
            row
        })
        .collect();
    Some((header, rows))
}

/// The tally over every side-by-side level of the report, in one sentence.
pub fn tally(report: &Report) -> String {
    let all: Vec<LevelAnswer<'_>> = report
        .settings
        .scenarios
        .iter()
        .flat_map(|s| levels(report, s))
        .collect();
    let judged: Vec<&LevelAnswer<'_>> = all.iter().filter(|a| a.level.leader.is_some()).collect();
    let decided = judged
        .iter()
        .filter(|a| a.level.leader.as_ref().is_some_and(|l| l.decided))
        .count();
    let count = |o: brigade_stats::Outcome| {
        judged
            .iter()
            .flat_map(|a| &a.comparisons)
            .filter(|c| c.outcome == o)
            .count()
    };
    let comparisons: Vec<&Comparison> = judged
        .iter()
        .flat_map(|a| a.comparisons.iter().copied())
        .collect();
    let median = median_half_width(&comparisons);
    format!(
        "Efficiency: {} of {} levels judged; the leader decided in {decided}; comparisons with \
         the best: {} wins beyond the margin, {} ahead (an order inside it), {} equivalent, {} \
         undecided; median half-width {median:.2} points.",
        judged.len(),
        all.len(),
        count(brigade_stats::Outcome::Win),
        count(brigade_stats::Outcome::Ahead),
        count(brigade_stats::Outcome::Equivalent),
        count(brigade_stats::Outcome::Undecided),
    )
}

/// The answer in markdown: every scenario's pooled line and the capacity per core, then every
/// level's leader per scenario.
pub fn markdown(report: &Report) -> String {
    if report.side_by_side.is_empty() {
        return String::new();
    }
    let mut out = String::from("## The answer\n\n");
    let scenarios = pooled(report);
    if !scenarios.is_empty() {
        let _ = writeln!(out, "{}\n", scenario_tally(report));
        for (scenario, p) in &scenarios {
            let _ = writeln!(out, "- {}", scenario_line(scenario, p));
        }
        out.push('\n');
        if let Some((header, rows)) = per_core_rows(report) {
            let header: Vec<&str> = header.iter().map(String::as_str).collect();
            let _ = writeln!(
                out,
                "{PER_CORE}\n\n{}",
                super::render::number_table(&header, &rows)
            );
        }
    }
    let _ = writeln!(out, "### Level by level\n\n{}\n", tally(report));
    for scenario in &report.settings.scenarios {
        let _ = writeln!(out, "`{scenario}`:\n");
        for a in levels(report, scenario) {
            let _ = writeln!(out, "- {}", leader_line(report, &a));
        }
        out.push('\n');
    }
    out
}

/// The answer in HTML: the tally, then per scenario its forest plot and its leaders.
pub fn html(report: &Report) -> String {
    if report.side_by_side.is_empty() {
        return String::new();
    }
    let margin = report.settings.rule.margin_pct(Measure::Efficiency);
    let mut out = String::from("<h2>The answer</h2>\n");
    let scenarios = pooled(report);
    if !scenarios.is_empty() {
        let _ = writeln!(out, "<p>{}</p>\n<ul>", esc(&scenario_tally(report)));
        for (scenario, p) in &scenarios {
            let _ = writeln!(out, "<li>{}</li>", bold(&esc(&scenario_line(scenario, p))));
        }
        out.push_str("</ul>\n");
        let groups: Vec<Group<'_>> = scenarios
            .iter()
            .filter(|(_, p)| !p.comparisons.is_empty())
            .map(|(scenario, p)| Group {
                title: format!("{scenario}: {}", Group::pooled(p).title),
                ..Group::pooled(p)
            })
            .collect();
        out.push_str(&forest(&groups, margin));
        if let Some((header, rows)) = per_core_rows(report) {
            let header: Vec<&str> = header.iter().map(String::as_str).collect();
            let _ = writeln!(out, "<p>{}</p>", esc(PER_CORE));
            out.push_str(&super::render::plain_table(&header, &rows));
        }
    }
    let _ = writeln!(
        out,
        "<h3>Level by level</h3>\n<p>{}</p>",
        esc(&tally(report))
    );
    for scenario in &report.settings.scenarios {
        let answers = levels(report, scenario);
        let _ = writeln!(out, "<h4>{}</h4>", esc(scenario));
        let groups: Vec<Group<'_>> = answers.iter().map(Group::level).collect();
        out.push_str(&forest(&groups, margin));
        out.push_str("<ul>\n");
        for a in &answers {
            let line = esc(&leader_line(report, a));
            let _ = writeln!(out, "<li>{}</li>", bold(&line));
        }
        out.push_str("</ul>\n");
    }
    out
}

/// Markdown's `**x**` as `<b>x</b>` and `` `x` `` as `<code>x</code>` (the text is escaped
/// already).
fn bold(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in text.split("**").enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<b>{part}</b>");
        } else {
            for (j, piece) in part.split('`').enumerate() {
                if j % 2 == 1 {
                    let _ = write!(out, "<code>{piece}</code>");
                } else {
                    out.push_str(piece);
                }
            }
        }
    }
    out
}

/// Pixel sizes of the forest plot.
const LABEL_W: f64 = 260.0;
const PLOT_W: f64 = 420.0;
const ROW_H: f64 = 16.0;

/// The forest plot's horizontal scale: percent of extra cost to pixels.
struct Scale {
    low: f64,
    high: f64,
}

impl Scale {
    /// The pixel of `pct`.
    fn x(&self, pct: f64) -> f64 {
        LABEL_W + (pct - self.low) / (self.high - self.low) * PLOT_W
    }
}

/// `(ratio - 1) * 100`, where there is a ratio.
fn pct(ratio: Option<f64>) -> Option<f64> {
    ratio.map(|r| (r - 1.0) * 100.0)
}

/// One group of a forest plot: its title (where, and who is best) and the best's comparisons.
struct Group<'a> {
    title: String,
    comparisons: Vec<&'a Comparison>,
}

impl<'a> Group<'a> {
    /// A level's group: `10 users at 40%: hyper (best)`.
    fn level(a: &LevelAnswer<'a>) -> Group<'a> {
        let best = a.comparisons.first().map_or("", |c| c.a.as_str());
        Group {
            title: format!("{} users at {}: {best} (best)", a.cell.users, a.level.level),
            comparisons: a.comparisons.clone(),
        }
    }

    /// A scenario's pooled group: `all 6 levels: hyper (best)`.
    fn pooled(p: &'a PooledVerdict) -> Group<'a> {
        let best = p.comparisons.first().map_or("", |c| c.a.as_str());
        Group {
            title: format!("all {} levels: {best} (best)", p.levels.len()),
            comparisons: p.comparisons.iter().collect(),
        }
    }
}

/// A forest plot: one row per runtime trailing a group's best, its extra cost over the best as a
/// dot and its interval as a whisker, the ±margin band shaded, grouped by level (or the scenario's
/// levels pooled).
fn forest(groups: &[Group<'_>], margin_pct: f64) -> String {
    let rows: usize = groups.iter().map(|g| 1 + g.comparisons.len()).sum();
    if rows == 0 {
        return String::new();
    }
    let ends = groups
        .iter()
        .flat_map(|g| g.comparisons.iter().copied())
        .flat_map(|c| [pct(c.ci_low), pct(c.ci_high)])
        .flatten()
        .filter(|v| v.is_finite());
    let (low, high) = ends.fold((-1.5 * margin_pct, 1.5 * margin_pct), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let scale = Scale { low, high };
    let height = (rows as f64 + 2.0) * ROW_H;
    let mut svg = format!(
        "<svg class=\"forest\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" \
         height=\"{height}\" font-size=\"11\" font-family=\"sans-serif\">\n",
        LABEL_W + PLOT_W + 20.0
    );
    let _ = writeln!(
        svg,
        "<rect x=\"{:.1}\" y=\"0\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#e8eef5\"/>",
        scale.x(-margin_pct),
        scale.x(margin_pct) - scale.x(-margin_pct),
        height - ROW_H
    );
    let _ = writeln!(
        svg,
        "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"0\" y2=\"{1:.1}\" stroke=\"#555\"/>",
        scale.x(0.0),
        height - ROW_H
    );
    let mut y = ROW_H;
    for g in groups {
        forest_group(&mut svg, &scale, g, &mut y);
    }
    for (tick, anchor) in ticks(&scale, margin_pct) {
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{tick:+.1}%</text>",
            scale.x(tick),
            height - 2.0
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// Width in pixels of one character of the forest plot's 11-pixel labels (an upper bound).
const CHAR_W: f64 = 7.0;

/// The forest plot's axis labels, each with its text anchor: zero, the margins (outside the band,
/// so they never sit on zero's label), then the scale's two ends, each kept only where its label
/// overlaps none kept before it.
fn ticks(scale: &Scale, margin_pct: f64) -> Vec<(f64, &'static str)> {
    let candidates = [
        (0.0, "middle"),
        (-margin_pct, "end"),
        (margin_pct, "start"),
        (scale.low, "middle"),
        (scale.high, "middle"),
    ];
    let mut kept: Vec<(f64, &'static str, (f64, f64))> = Vec::new();
    for (tick, anchor) in candidates {
        let width = format!("{tick:+.1}%").chars().count() as f64 * CHAR_W;
        let x = scale.x(tick);
        let span = match anchor {
            "end" => (x - width, x),
            "start" => (x, x + width),
            _ => (x - width / 2.0, x + width / 2.0),
        };
        if kept
            .iter()
            .all(|(_, _, (a, b))| span.1 <= *a || span.0 >= *b)
        {
            kept.push((tick, anchor, span));
        }
    }
    kept.into_iter()
        .map(|(tick, anchor, _)| (tick, anchor))
        .collect()
}

/// One level's rows of the forest plot, from `y` down: its heading, then each comparison.
fn forest_group(svg: &mut String, scale: &Scale, g: &Group<'_>, y: &mut f64) {
    let _ = writeln!(
        svg,
        "<text x=\"4\" y=\"{y:.1}\" font-weight=\"bold\">{}</text>",
        esc(&g.title)
    );
    *y += ROW_H;
    for c in &g.comparisons {
        let colour = match c.outcome {
            brigade_stats::Outcome::Win => "#b2182b",
            brigade_stats::Outcome::Ahead => "#ef8a62",
            brigade_stats::Outcome::Equivalent => "#1a9850",
            _ => "#777777",
        };
        let _ = writeln!(
            svg,
            "<text x=\"16\" y=\"{y:.1}\">{} ({})</text>",
            esc(&c.b),
            word(c.outcome)
        );
        if let (Some(r), Some(lo), Some(hi)) = (pct(c.ratio), pct(c.ci_low), pct(c.ci_high)) {
            let mid = *y - 4.0;
            let _ = writeln!(
                svg,
                "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{mid:.1}\" y2=\"{mid:.1}\" \
                 stroke=\"{colour}\" stroke-width=\"2\"/><circle cx=\"{:.1}\" cy=\"{mid:.1}\" \
                 r=\"3.5\" fill=\"{colour}\"><title>{}</title></circle>",
                scale.x(lo),
                scale.x(hi),
                scale.x(r),
                esc(&extra(c))
            );
        }
        *y += ROW_H;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compared(b: &str, confidence_pct: f64, samples: usize) -> Comparison {
        Comparison {
            measure: crate::verdict::Measure::Efficiency,
            scenario: "waiter".into(),
            users: 10,
            preload: 0,
            level: Some("40%".into()),
            rate_per_s: Some(200.0),
            store: "embedded".into(),
            a: "hyper".into(),
            b: b.into(),
            ratio: Some(1.03),
            ci_low: Some(1.01),
            ci_high: Some(1.05),
            confidence_pct,
            margin_pct: 2.0,
            samples,
            simultaneous: true,
            outcome: brigade_stats::Outcome::Ahead,
            reason: None,
            samples_to_decide: None,
            sentence: String::new(),
        }
    }

    #[test]
    fn the_forest_plots_axis_labels_never_overlap_and_keep_zero_and_the_margins() {
        // The default run's pooled plot: -3% to +23% over 420 pixels, 2% about 32 pixels.
        let scale = super::Scale {
            low: -3.0,
            high: 22.9,
        };
        let kept = super::ticks(&scale, 2.0);
        let values: Vec<f64> = kept.iter().map(|(t, _)| *t).collect();
        // -3% sits inside -2%'s label and is left out; the rest fit.
        assert_eq!(values, vec![0.0, -2.0, 2.0, 22.9]);
        // A wide scale keeps all five.
        let wide = super::Scale {
            low: -20.0,
            high: 20.0,
        };
        assert_eq!(super::ticks(&wide, 2.0).len(), 5);
    }

    #[test]
    fn a_level_judged_in_two_parts_names_what_each_rests_on() {
        let one = [compared("warp", 96.0, 8), compared("axum", 96.0, 8)];
        let refs: Vec<&Comparison> = one.iter().collect();
        assert_eq!(
            basis_words(&refs),
            " — 96% simultaneous intervals, 8 rounds"
        );
        let split = [
            compared("xitca", 99.0, 19),
            compared("warp", 96.0, 8),
            compared("axum", 96.0, 8),
            compared("ntex", 96.0, 8),
        ];
        let refs: Vec<&Comparison> = split.iter().collect();
        assert_eq!(
            basis_words(&refs),
            " — xitca: 99% simultaneous intervals, 19 rounds; the others: 96% simultaneous \
             intervals, 8 rounds"
        );
        assert_eq!(basis_words(&[]), "");
    }
}
