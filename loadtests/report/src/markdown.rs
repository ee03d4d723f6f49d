//! `report.md`: the study's table shape (per runtime, scenario, user count and preload: hits/s,
//! KiB/s, mean ms, p99 ms, error %, server CPU %, server CPU µs per request, peak RSS MiB), each
//! scenario's throughput and efficiency verdicts with their margins or why there are none, then the
//! setup and every run. [`summary`] is the part printed to the terminal.

use std::fmt::Write as _;

use super::cell_name;
use super::render::{
    cell_text, duration_words, preload_words, row_cells, run_cells, side_rows, table,
    verdict_columns, verdict_rules, RUN_HEADER, RUN_TEXT_COLUMNS, SIDE_HEADER, TABLE_HEADER,
};
use super::Report;
use crate::verdict::Verdict;

/// The whole markdown report.
pub fn render(report: &Report) -> String {
    let mut out = summary(report);
    out.push_str(&servers(report));
    out.push_str(&runs(report));
    out.push_str(&super::capacity::markdown_curves(report));
    out
}

/// The headline, setup, tables and verdicts (without the per-run appendix).
pub fn summary(report: &Report) -> String {
    let mut out = String::new();
    let s = &report.settings;
    let _ = writeln!(out, "# Brigade runtime comparison\n");
    let _ = writeln!(
        out,
        "{} runtimes ({}) on the {} store{}, started {}, took {}.\n",
        s.runtimes.len(),
        s.runtimes.join(", "),
        s.store,
        preload_words(&s.preloads),
        report.started_at,
        duration_words(report.wall_s)
    );
    out.push_str(&super::answer::markdown(report));
    out.push_str(&verdicts(report));
    out.push_str(&crate::correctness::markdown(report.correctness.as_ref()));
    out.push_str(&pairs(report));
    out.push_str(&crate::thresholds::markdown(
        &s.thresholds,
        &report.threshold_checks,
    ));
    out.push_str(&baseline(report));
    out.push_str(&setup(report));
    out.push_str(&super::capacity::markdown(report));
    // A comparison of capacity alone (`--slo`) has no isolated run or side-by-side level to show.
    if !report.runs.is_empty() || !report.side_by_side.is_empty() {
        for scenario in &s.scenarios {
            out.push_str(&scenario_table(report, scenario));
        }
    }
    out
}

/// The same runtime under two labels, side by side (an A/A check; containers against loopback).
fn pairs(report: &Report) -> String {
    if report.pairs.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "## The same runtime under two labels, or on two I/O engines

Each pair measured in the same \
         windows, judged by the same rule (an A/A pair shows the verdicts' noise; `R` in \
         containers against `R#loopback` what the containers cost R; `ntex-uring` against `ntex` \
         what io_uring changes for ntex's adapter):

",
    );
    for c in &report.pairs {
        let _ = writeln!(
            out,
            "- {} {} users at {}: {}",
            c.scenario,
            c.users,
            c.level.as_deref().unwrap_or("?"),
            c.sentence
        );
    }
    out.push('\n');
    out
}

/// A verdict's label and reason, or a dash where there is none (reports older than it).
fn label_and_reason(verdict: Option<&Verdict>) -> (String, String) {
    verdict.map_or(("-".to_owned(), "-".to_owned()), |v| {
        (v.label(), v.reason.clone())
    })
}

fn verdicts(report: &Report) -> String {
    let (compared, searched) = verdict_columns(report);
    let mut out = String::from("## Verdicts\n\n| scenario |");
    if compared {
        out.push_str(" throughput verdict | why | efficiency verdict | why |");
    }
    if searched {
        out.push_str(" capacity verdict | why |");
    }
    let columns = 1 + 4 * usize::from(compared) + 2 * usize::from(searched);
    let _ = writeln!(out, "\n|{}", " --- |".repeat(columns));
    for scenario in &report.scenarios {
        let _ = write!(out, "| {} |", scenario.scenario);
        if compared {
            let (label, reason) = label_and_reason(scenario.efficiency.as_ref());
            let _ = write!(
                out,
                " **{}** | {} | **{}** | {} |",
                scenario.verdict.label(),
                cell_text(&scenario.verdict.reason),
                label,
                cell_text(&reason)
            );
        }
        if searched {
            let (label, reason) = label_and_reason(scenario.capacity.as_ref());
            let _ = write!(out, " **{label}** | {} |", cell_text(&reason));
        }
        out.push('\n');
    }
    if compared {
        let _ = writeln!(out, "\n{}\n", verdict_rules(&report.settings.rule));
    } else {
        out.push('\n');
    }
    for note in &report.notes {
        let _ = writeln!(out, "- {note}");
    }
    if !report.notes.is_empty() {
        out.push('\n');
    }
    out
}

fn setup(report: &Report) -> String {
    report.setup().markdown()
}

/// The section setting every cell against the saved report, if there was one.
fn baseline(report: &Report) -> String {
    let Some(b) = &report.baseline else {
        return String::new();
    };
    let mut out = format!(
        "## Against the baseline\n\n`{}`, started {} on {}.\n\n",
        b.path, b.started_at, b.machine
    );
    let _ = writeln!(out, "| {} |", super::baseline::HEADER.join(" | "));
    let _ = writeln!(out, "|{}", " --- |".repeat(super::baseline::HEADER.len()));
    for cell in &b.cells {
        let cells: Vec<String> = super::baseline::cells(cell)
            .iter()
            .map(|c| cell_text(c))
            .collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    let _ = writeln!(
        out,
        "\n{}\n",
        super::baseline::rule(&report.settings.rule, b)
    );
    for d in &b.differences {
        let _ = writeln!(out, "- Differs from the baseline: {d}");
    }
    for m in &b.missing {
        let _ = writeln!(out, "- Not in the baseline: {m}");
    }
    if !b.differences.is_empty() || !b.missing.is_empty() {
        out.push('\n');
    }
    out
}

fn scenario_table(report: &Report, scenario: &str) -> String {
    let mut out = format!("## Scenario `{scenario}`\n\n");
    let rows: Vec<Vec<String>> = report
        .rows
        .iter()
        .filter(|r| r.scenario == scenario)
        .map(row_cells)
        .collect();
    out.push_str(&table(&TABLE_HEADER, &rows));
    out.push('\n');
    out.push_str(&side_table(report, scenario));
    for cell in report.cells.iter().filter(|c| c.scenario == scenario) {
        let _ = writeln!(
            out,
            "- {}: throughput **{}** — {}",
            cell_name(report, cell),
            cell.verdict.label(),
            cell.verdict.reason
        );
        for level in &cell.efficiency_levels {
            let _ = writeln!(
                out,
                "- {} at {} ({}/s each): efficiency **{}** — {}",
                cell_name(report, cell),
                level.level,
                super::rate_words(level.rate_per_s),
                level.verdict.label(),
                level.verdict.reason
            );
        }
    }
    if let Some(verdict) = report.scenarios.iter().find(|v| v.scenario == scenario) {
        let (label, reason) = label_and_reason(verdict.efficiency.as_ref());
        let _ = writeln!(
            out,
            "- Scenario: throughput **{}** — {}; efficiency **{label}** — {reason}",
            verdict.verdict.label(),
            verdict.verdict.reason
        );
    }
    out.push('\n');
    out
}

/// The side-by-side figures of a scenario as a markdown table.
fn side_table(report: &Report, scenario: &str) -> String {
    let rows = side_rows(report, scenario);
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from("Side by side (every runtime at once, the same offered rate):\n\n");
    out.push_str(&table(&SIDE_HEADER, &rows));
    out.push('\n');
    out
}

fn servers(report: &Report) -> String {
    let mut out = String::from(
        "## Server processes\n\n| runtime | run | preload | pid | CPUs | ready after s | idle RSS MiB | \
         RSS after MiB | peak RSS MiB | stop |\n| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | \
         ---: | --- |\n",
    );
    for s in &report.servers {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:.2} | {:.1} | {} | {} | {} |",
            s.runtime,
            s.round + 1,
            s.preload,
            s.pid,
            s.cpus_allowed.as_deref().unwrap_or("?"),
            s.startup_s,
            s.rss_idle_mib,
            s.rss_after_mib
                .map_or("?".to_owned(), |v| format!("{v:.1}")),
            s.rss_peak_mib.map_or("?".to_owned(), |v| format!("{v:.1}")),
            s.stop.as_ref().map_or("?".to_owned(), ToString::to_string)
        );
    }
    out.push('\n');
    out
}

fn runs(report: &Report) -> String {
    let mut out = format!("## Every run\n\n| {} |\n", RUN_HEADER.join(" | "));
    let mut rule = vec!["---:"; RUN_HEADER.len()];
    for text in RUN_TEXT_COLUMNS {
        rule[text] = "---";
    }
    let _ = writeln!(out, "| {} |", rule.join(" | "));
    for run in &report.runs {
        let cells: Vec<String> = run_cells(run).iter().map(|c| cell_text(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}
