//! The caveats a reader of a comparison's report should know, derived from the rest of it (the
//! machine, the CPU split, the runs, the side-by-side levels, the settings): [`of`].

use brigade_records::side::SideCell;

use crate::{Report, RunRecord};
use brigade_records::runcpu::CONTENTION;

/// The caveats a reader of this report should know.
pub(crate) fn of(report: &Report) -> Vec<String> {
    let mut notes = Vec::new();
    cpu_notes(report, &mut notes);
    side_by_side_note(report, &mut notes);
    isolated_run_notes(report, &mut notes);
    side_not_judged_note(report, &mut notes);
    notes.extend(measured_again_note(&report.side_by_side));
    settings_notes(report, &mut notes);
    failure_notes(report, &mut notes);
    notes
}

/// Where the servers and generator ran: shared CPUs, a small machine.
fn cpu_notes(report: &Report, notes: &mut Vec<String>) {
    let t = &report.threads;
    if !t.cpus.pinned {
        notes.push(
            "Servers and generator shared the CPUs (nothing pinned): they competed for them, and \
             generator-bound runs are detected only roughly."
                .to_owned(),
        );
    }
    if report.machine.cores <= 4 && report.settings.external {
        notes.push(format!(
            "A {}-core machine: the servers ran where they were put outside compare (server CPUs \
             {} as given), so this compares runtimes on a small slice of a machine, not how they \
             scale across cores.",
            report.machine.cores,
            brigade_records::cpus::list(&t.cpus.server),
        ));
    } else if report.machine.cores <= 4 {
        notes.push(format!(
            "A {}-core machine: each server ran on {} CPU with {} worker(s), so this compares \
             runtimes on a small slice of a machine, not how they scale across cores.",
            report.machine.cores,
            t.cpus.server.len(),
            t.server_workers
        ));
    }
}

/// How efficiency was measured side by side, and how much of it was decided.
fn side_by_side_note(report: &Report, notes: &mut Vec<String>) {
    let cells = &report.side_by_side;
    if cells.is_empty() {
        return;
    }
    notes.push(format!(
        "{} Latency measured side by side includes the other servers' work and is not judged.",
        crate::answer::tally(report)
    ));
    let one_round = cells
        .iter()
        .filter(|c| c.not_judged.is_none() && c.rounds().len() < 2)
        .count();
    if one_round > 0 {
        notes.push(format!(
            "{one_round} of {} levels were measured in one round of servers (a report written \
             before rounds, or --rounds 1): their intervals come from the windows of one server \
             per runtime and cannot cover how much two fresh servers of one runtime differ (about \
             0.7% here), so they claim more than they hold.",
            cells.len()
        ));
    }
    if report.settings.external {
        notes.push(
            "Servers compare did not start (--external) are the same instance in every round: \
             their comparisons cannot cover the instance effect."
                .to_owned(),
        );
    }
    let stopped: Vec<String> = cells
        .iter()
        .filter_map(|c| {
            c.looks
                .stopped
                .as_ref()
                .map(|why| format!("{} {} users at {}: {why}", c.scenario, c.users, c.level))
        })
        .collect();
    if !stopped.is_empty() {
        notes.push(format!("Left open by the budget: {}.", stopped.join("; ")));
    }
}

/// The isolated runs whose figures show the generator's limit or other processes' work.
fn isolated_run_notes(report: &Report, notes: &mut Vec<String>) {
    let bound = report
        .runs
        .iter()
        .filter(|r| r.generator_bound.is_some() && r.contended.is_none())
        .count();
    if bound > 0 {
        notes.push(format!(
            "{bound} of {} isolated runs were generator-bound (the generator's CPUs were at least \
             90% busy, so the figures may show the generator's limit); their cells name no \
             throughput winner, but their side-by-side efficiency verdicts stand.",
            report.runs.len()
        ));
    }
    let contended = report.runs.iter().filter(|r| r.contended.is_some()).count();
    if contended > 0 {
        notes.push(format!(
            "{contended} of {} isolated runs shared their CPUs with other processes (at least \
             {:.0}% of a side's CPUs went to someone else); their cells name no throughput winner. \
             Side by side, such noise lands on every runtime in the same windows and cancels.",
            report.runs.len(),
            CONTENTION * 100.0
        ));
    }
}

/// The side-by-side levels left unjudged, and the first one's reason.
fn side_not_judged_note(report: &Report, notes: &mut Vec<String>) {
    let side_cells = report.side_by_side.len();
    let side_not_judged: Vec<&SideCell> = report
        .side_by_side
        .iter()
        .filter(|c| c.not_judged.is_some())
        .collect();
    if let Some(first) = side_not_judged.first() {
        notes.push(format!(
            "{} of {side_cells} side-by-side levels were not judged; first: {} {} users at {}: {}",
            side_not_judged.len(),
            first.scenario,
            first.users,
            first.level,
            first.not_judged.as_deref().unwrap_or_default()
        ));
    }
}

/// The window sets measured once more because they fell short of their rate while the servers
/// waited, and the first one's level and reason.
fn measured_again_note(cells: &[SideCell]) -> Option<String> {
    let again: Vec<(&SideCell, &String)> = cells
        .iter()
        .flat_map(|c| c.measured_again.iter().map(move |why| (c, why)))
        .collect();
    let (cell, why) = again.first()?;
    Some(format!(
        "{} window sets fell short of their offered rate with neither side's CPUs saturated (the \
         servers waiting) and were measured once more on the same servers, the second set \
         standing; first: {} {} users at {}, {why}",
        again.len(),
        cell.scenario,
        cell.users,
        cell.level,
    ))
}

/// The settings that change what the figures mean: open loop, no keep-alive, planted costs.
fn settings_notes(report: &Report, notes: &mut Vec<String>) {
    let s = &report.settings;
    if let Some(rate) = s.rate {
        notes.push(format!(
            "Open loop: every runtime was offered the same {} requests/s in its isolated runs \
             (latency counted from each request's intended send time). Throughput verdicts say \
             only who kept up.",
            crate::rate_words(rate)
        ));
    }
    if !s.keepalive {
        notes.push(
            "A new connection per request (no keep-alive): every request pays a TCP handshake and \
             close on both sides, so connection handling weighs as much as the route."
                .to_owned(),
        );
    }
    if !s.handicaps.is_empty() {
        let planted: Vec<String> = s
            .handicaps
            .iter()
            .map(|(r, us)| format!("{r} +{us} µs"))
            .collect();
        notes.push(format!(
            "Calibration: a known CPU cost was planted per request ({}; `serve --handicap-us`): \
             this report tests the verdicts, not the runtimes.",
            planted.join(", ")
        ));
    }
}

/// The runs that failed and the rows with many failed requests.
fn failure_notes(report: &Report, notes: &mut Vec<String>) {
    let failed: Vec<&RunRecord> = report.runs.iter().filter(|r| r.error.is_some()).collect();
    if !failed.is_empty() {
        notes.push(format!(
            "{} run(s) failed, first: {} {} {} users: {}",
            failed.len(),
            failed[0].runtime,
            failed[0].scenario,
            failed[0].users,
            failed[0].error.as_deref().unwrap_or_default()
        ));
    }
    for row in report.rows.iter().filter(|r| r.error_pct >= 1.0) {
        notes.push(format!(
            "{} on {} at {} users, preload {}: {:.1}% of requests failed (see report.json for the \
             kinds).",
            row.runtime, row.scenario, row.users, row.preload, row.error_pct
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_measured_again_are_counted_with_the_first_ones_level() {
        let level = |label: &str, again: &[&str]| SideCell {
            scenario: "all".into(),
            users: 10,
            level: label.into(),
            measured_again: again.iter().map(|s| (*s).to_owned()).collect(),
            ..SideCell::default()
        };
        assert_eq!(measured_again_note(&[level("40%", &[])]), None);
        let note = measured_again_note(&[
            level("40%", &[]),
            level("80%", &["round 3: short of the offered rate: warp"]),
            level("60%", &["round 1: x", "round 5: y"]),
        ])
        .unwrap();
        assert!(note.starts_with("3 window sets fell short"), "{note}");
        assert!(
            note.ends_with("first: all 10 users at 80%, round 3: short of the offered rate: warp"),
            "{note}"
        );
    }
}
