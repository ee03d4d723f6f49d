//! `report.md`: the study's table shape (per runtime, scenario, user count and preload: hits/s,
//! KiB/s, mean ms, p99 ms, error %, server CPU %, server CPU µs per request, peak RSS MiB), each
//! scenario's throughput and efficiency verdicts with their margins or why there are none, then the
//! setup and every run. [`summary`] is the part printed to the terminal.

use std::fmt::Write as _;

use super::cell_name;
use super::render::{cell_text, duration_words, preload_words, table, trim};
use super::{Report, Row, RunRecord};
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
         between a first look and a second after more rounds. A level the generator could not \
         deliver or that kept the server CPUs 90% busy or more, or an isolated cell that was \
         generator-bound or contended, is not judged, and says why.",
        trim(rule.confidence_pct),
        trim(rule.margin_pct(Measure::Efficiency)),
        trim(rule.margin_pct(Measure::Throughput))
    )
}

/// A verdict's label and reason, or a dash where there is none (reports older than it).
fn label_and_reason(verdict: Option<&Verdict>) -> (String, String) {
    verdict.map_or(("-".to_owned(), "-".to_owned()), |v| {
        (v.label(), v.reason.clone())
    })
}

/// Which verdict columns a report has: throughput and efficiency when it made isolated runs or
/// side-by-side levels, capacity when it searched (`--slo`).
pub fn verdict_columns(report: &Report) -> (bool, bool) {
    let compared = !report.runs.is_empty() || !report.side_by_side.is_empty();
    let searched = !report.slo_searches.is_empty();
    (compared || !searched, searched)
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
    let _ = writeln!(out, "\n{}\n", super::baseline::rule(&report.settings.rule));
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
