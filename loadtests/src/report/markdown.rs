//! `report.md`: the study's table shape (per runtime, scenario and user count: hits/s, KiB/s, mean
//! ms, p99 ms, error %, server CPU %, peak RSS MiB), each scenario's winner and margin or why there
//! is none, then the setup and every run. [`summary`] is the part printed to the terminal.

use std::fmt::Write as _;

use super::{Report, Row, RunRecord};

/// The whole markdown report.
pub fn render(report: &Report) -> String {
    let mut out = summary(report);
    out.push_str(&servers(report));
    out.push_str(&runs(report));
    out
}

/// The headline, setup, tables and verdicts (without the per-run appendix).
pub fn summary(report: &Report) -> String {
    let mut out = String::new();
    let s = &report.settings;
    let _ = writeln!(out, "# Brigade runtime comparison\n");
    let _ = writeln!(
        out,
        "{} runtimes ({}) on the {} store, started {}, took {}.\n",
        s.runtimes.len(),
        s.runtimes.join(", "),
        s.store,
        report.started_at,
        duration_words(report.wall_s)
    );
    out.push_str(&verdicts(report));
    out.push_str(&setup(report));
    for scenario in &s.scenarios {
        out.push_str(&scenario_table(report, scenario));
    }
    out
}

/// `1 min 23 s` style.
pub(crate) fn duration_words(seconds: f64) -> String {
    let total = seconds.round() as u64;
    if total >= 60 {
        format!("{} min {} s", total / 60, total % 60)
    } else {
        format!("{seconds:.1} s")
    }
}

fn verdicts(report: &Report) -> String {
    let mut out =
        String::from("## Verdicts\n\n| scenario | verdict | why |\n| --- | --- | --- |\n");
    for scenario in &report.scenarios {
        let _ = writeln!(
            out,
            "| {} | **{}** | {} |",
            scenario.scenario,
            scenario.verdict.label(),
            cell_text(&scenario.verdict.reason)
        );
    }
    let _ = writeln!(
        out,
        "\nVerdicts compare successful hits/s repeat by repeat (the runs of a \
         repeat are made back to back, so drift such as the stores growing hits both sides of a \
         pair alike): a runtime wins when it led in every repeat by a median of at least {:.0}%; \
         anything less is a tie. A run in which the generator's CPU had no headroom \
         (generator-bound) or other processes took a fifth of a side's CPU (contended) names no \
         winner. The spread column is each runtime's own min–max over the repeats, drift \
         included.\n",
        report.settings.noise_floor_pct
    );
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

/// A number without trailing zeros (`3`, `0.5`), for settings.
pub(crate) fn trim(value: f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The header shared by every scenario table; the tests read tables by these names.
pub const TABLE_HEADER: [&str; 13] = [
    "runtime",
    "users",
    "hits/s",
    "spread %",
    "KiB/s",
    "mean ms",
    "p99 ms",
    "error %",
    "server CPU %",
    "peak RSS MiB",
    "generator CPU %",
    "requests",
    "note",
];

fn scenario_table(report: &Report, scenario: &str) -> String {
    let mut out = format!("## Scenario `{scenario}`\n\n");
    let _ = writeln!(out, "| {} |", TABLE_HEADER.join(" | "));
    let mut rule = vec!["---"];
    rule.extend(std::iter::repeat_n("---:", TABLE_HEADER.len() - 2));
    rule.push("---");
    let _ = writeln!(out, "| {} |", rule.join(" | "));
    for row in report.rows.iter().filter(|r| r.scenario == scenario) {
        let _ = writeln!(out, "| {} |", row_cells(row).join(" | "));
    }
    out.push('\n');
    for cell in report.cells.iter().filter(|c| c.scenario == scenario) {
        let _ = writeln!(
            out,
            "- {} users: **{}** — {}",
            cell.users,
            cell.verdict.label(),
            cell.verdict.reason
        );
    }
    if let Some(verdict) = report.scenarios.iter().find(|v| v.scenario == scenario) {
        let _ = writeln!(
            out,
            "- Scenario: **{}** — {}",
            verdict.verdict.label(),
            verdict.verdict.reason
        );
    }
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
        format!("{:.1}", row.hits_per_s),
        format!("{:.1}", row.spread_pct),
        format!("{:.1}", row.kib_per_s),
        format!("{:.3}", row.mean_ms),
        format!("{:.3}", row.p99_ms),
        format!("{:.2}", row.error_pct),
        format!("{:.1}", row.server_cpu_pct),
        format!("{:.1}", row.peak_rss_mib),
        format!("{:.1}", row.generator_cpu_pct),
        row.requests.to_string(),
        note.join("; "),
    ]
}

fn servers(report: &Report) -> String {
    let mut out = String::from(
        "## Server processes\n\n| runtime | round | pid | CPUs | ready after s | idle RSS MiB | \
         RSS after MiB | peak RSS MiB | stop |\n| --- | ---: | ---: | --- | ---: | ---: | ---: | \
         ---: | --- |\n",
    );
    for s in &report.servers {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.2} | {:.1} | {} | {} | {} |",
            s.runtime,
            s.round,
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
pub const RUN_HEADER: [&str; 13] = [
    "#",
    "repeat",
    "runtime",
    "scenario",
    "users",
    "hits/s",
    "requests",
    "seconds",
    "server CPU %",
    "server CPUs busy %",
    "generator CPU %",
    "generator CPUs busy %",
    "result",
];

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
    vec![
        (run.index + 1).to_string(),
        (run.repeat + 1).to_string(),
        run.runtime.clone(),
        run.scenario.clone(),
        run.users.to_string(),
        hits,
        requests,
        elapsed,
        format!("{:.1}", run.server.cpu_percent),
        format!("{:.1}", run.cpu.server_cpus.busy_percent),
        format!("{:.1}", run.generator_cpu_percent),
        format!("{:.1}", run.cpu.generator_cpus.busy_percent),
        outcome,
    ]
}

fn runs(report: &Report) -> String {
    let mut out = format!("## Every run\n\n| {} |\n", RUN_HEADER.join(" | "));
    let mut rule = vec!["---:"; RUN_HEADER.len()];
    rule[2] = "---";
    rule[3] = "---";
    rule[RUN_HEADER.len() - 1] = "---";
    let _ = writeln!(out, "| {} |", rule.join(" | "));
    for run in &report.runs {
        let cells: Vec<String> = run_cells(run).iter().map(|c| cell_text(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

/// Makes text safe inside a table cell.
pub(crate) fn cell_text(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}
