//! The conformance study's report: a table per runtime and suite (cases, failures through Brigade
//! and on the control, whose they are, flaky), then every failing case named with its section,
//! route, class and failure rates, and in words the runtimes' own failures and Brigade's.

use std::time::Duration;

use brigade_report::setup::Setup;
use brigade_report::study::{Better, Metric, Section, StudyReport, Table};

use super::classify::{Class, Tally, HOUSE_RULES};
use super::{h1, NotRun, Route, Settings, Suite};

// The tables' titles are the report crate's: the comparison's "Correctness" section reads them.
use brigade_report::correctness::{FAILURES_TABLE, RUNTIMES_TABLE};

pub(super) fn build(
    settings: &Settings,
    tally: &Tally,
    not_run: &[NotRun],
    started_at: String,
    wall: Duration,
) -> StudyReport {
    StudyReport {
        study: "conformance".to_owned(),
        title: "Brigade conformance study".to_owned(),
        summary: headline(settings, tally),
        started_at,
        wall_s: wall.as_secs_f64(),
        setup: setup(settings),
        notes: notes(settings, not_run),
        sections: vec![runtimes_section(settings, tally), failures_section(tally)],
    }
}

/// The counts a runtime's suite is summed into.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) cases: usize,
    pub(crate) brigade_failed: usize,
    pub(crate) control_failed: usize,
    pub(crate) brigades: usize,
    pub(crate) flaky_brigade: usize,
    pub(crate) unclassified: usize,
    pub(crate) runtimes: usize,
    pub(crate) fixed: usize,
    pub(crate) flaky: usize,
}

pub(crate) fn counts<'a>(cases: impl Iterator<Item = &'a super::classify::CaseTally>) -> Counts {
    let mut n = Counts::default();
    for c in cases {
        n.cases += 1;
        n.brigade_failed += usize::from(c.brigade.1 > 0);
        n.control_failed += usize::from(c.control.1 > 0);
        match c.class() {
            Some(Class::Brigades) => n.brigades += 1,
            Some(Class::Unclassified) => n.unclassified += 1,
            Some(Class::FlakyThroughBrigade) => n.flaky_brigade += 1,
            Some(Class::Runtimes) => n.runtimes += 1,
            Some(Class::ControlOnly) => n.fixed += 1,
            None => {}
        }
        n.flaky += usize::from(c.flaky());
    }
    n
}

fn runtimes_section(settings: &Settings, tally: &Tally) -> Section {
    let count = |name| Metric::new(name, "", Better::Lower, 0);
    let mut table = Table::new(
        RUNTIMES_TABLE,
        &["runtime", "suite"],
        vec![
            Metric::new("cases × routes", "", Better::Neither, 0),
            count("failed through Brigade"),
            count("failed on the control"),
            count("Brigade's"),
            count("flaky through Brigade"),
            count("no control to tell"),
            count("the runtime's"),
            count("fixed by Brigade"),
            count("flaky"),
        ],
    );
    for runtime in &settings.runtimes {
        for &suite in &settings.suites {
            if suite == Suite::H3 && !settings.h3.contains(runtime) {
                continue; // not applicable
            }
            let n = counts(tally.of(runtime, suite));
            let v = |x: usize| Some(x as f64);
            table.push(
                vec![runtime.clone(), suite.name().to_owned()],
                vec![
                    v(n.cases),
                    v(n.brigade_failed),
                    v(n.control_failed),
                    v(n.brigades),
                    v(n.flaky_brigade),
                    v(n.unclassified),
                    v(n.runtimes),
                    v(n.fixed),
                    v(n.flaky),
                ],
            );
        }
    }
    Section {
        title: "Per runtime".to_owned(),
        text: vec![format!(
            "Each case ran {} time(s) on each of two routes (one that reads the request body, one \
             that answers without reading it) through Brigade (the application's first service, memory store) and on \
             the runtime's own control server. A case failing on both is the runtime's; one failing \
             only through Brigade is Brigade's; one failing only on the control is the runtime's, \
             fixed by Brigade's layer; a case that fails in some runs only is flaky (its rates are \
             in the next table).",
            settings.runs
        )],
        tables: vec![table],
        charts: Vec::new(),
    }
}

fn failures_section(tally: &Tally) -> Section {
    let mut table = Table::new(
        FAILURES_TABLE,
        &["runtime", "suite", "case", "section", "route", "whose"],
        vec![
            Metric::new("failed runs through Brigade", "", Better::Lower, 0),
            Metric::new("failed runs on the control", "", Better::Lower, 0),
            Metric::new("runs", "", Better::Neither, 0),
        ],
    );
    let mut brigades = Vec::new();
    let mut runtimes: Vec<String> = Vec::new();
    for c in &tally.cases {
        let Some(class) = c.class() else { continue };
        let whose = match (class, c.house_rule()) {
            (Class::Brigades, Some((_, rule, _))) => format!("Brigade's house rule: {rule}"),
            _ => class.name().to_owned(),
        };
        table.push(
            vec![
                c.runtime.clone(),
                c.suite.name().to_owned(),
                c.id.clone(),
                c.section.clone(),
                c.route.name().to_owned(),
                whose.clone(),
            ],
            vec![
                Some(c.brigade.1 as f64),
                Some(c.control.1 as f64),
                Some(c.brigade.0.max(c.control.0) as f64),
            ],
        );
        let line = failure_line(c, &whose);
        match class {
            Class::Brigades | Class::Unclassified | Class::FlakyThroughBrigade => {
                brigades.push(line)
            }
            Class::Runtimes => runtimes.push(line),
            Class::ControlOnly => {}
        }
    }
    let mut text = vec![if brigades.is_empty() {
        "Nothing fails through Brigade alone: every case that fails through Brigade fails on the \
         runtime's own server too."
            .to_owned()
    } else {
        format!(
            "Failing through Brigade and not on the control ({}, each with its class: Brigade's, \
             flaky through Brigade, or no control to tell): {}.",
            brigades.len(),
            brigades.join("; ")
        )
    }];
    if !runtimes.is_empty() {
        text.push(format!(
            "The runtimes' own failures ({}): {}.",
            runtimes.len(),
            runtimes.join("; ")
        ));
    }
    for (id, rule, why) in HOUSE_RULES {
        text.push(format!("House rule on {id}: {rule} ({why})."));
    }
    Section {
        title: "Failures".to_owned(),
        text,
        tables: vec![table],
        charts: Vec::new(),
    }
}

/// A failing case in one line: where, whose, what it sends, how often it failed, what went wrong.
fn failure_line(c: &super::classify::CaseTally, whose: &str) -> String {
    format!(
        "{} [{whose}]: {}{} ({}; {}): {}{}",
        c.name(),
        c.what,
        if c.smuggling {
            " [smuggling class]"
        } else {
            ""
        },
        c.route.name(),
        rate(c.brigade, c.control),
        c.words.as_deref().unwrap_or("failed"),
        if c.flaky() { " (flaky)" } else { "" }
    )
}

/// `failed 2 of 3 through Brigade, 0 of 3 on the control`.
fn rate(brigade: (u32, u32), control: (u32, u32)) -> String {
    format!(
        "failed {} of {} through Brigade, {} of {} on the control",
        brigade.1, brigade.0, control.1, control.0
    )
}

fn headline(settings: &Settings, tally: &Tally) -> String {
    let all = counts(tally.cases.iter());
    let ran: Vec<String> = settings
        .suites
        .iter()
        .map(|s| {
            let n = tally
                .cases
                .iter()
                .filter(|c| c.suite == *s)
                .map(|c| &c.id)
                .collect::<std::collections::BTreeSet<_>>()
                .len();
            format!("{} ({n} cases)", s.name())
        })
        .collect();
    format!(
        "{} runtime(s) through Brigade and on their own control servers: {}, each {} time(s) on two \
         routes. Failures: {} Brigade's, {} flaky through Brigade, {} with no control to tell, \
         {} the runtimes' own, {} fixed by Brigade's layer; {} flaky in all.",
        settings.runtimes.len(),
        ran.join(", "),
        settings.runs,
        all.brigades,
        all.flaky_brigade,
        all.unclassified,
        all.runtimes,
        all.fixed,
        all.flaky
    )
}

fn notes(settings: &Settings, not_run: &[NotRun]) -> Vec<String> {
    let mut notes = vec![
        format!(
            "Routes: through Brigade `{}` (reads the body) and `{}` (answers without it); on the \
             control `{}` and `{}`.",
            Route::Reads.path(super::Server::Brigade),
            Route::Skips.path(super::Server::Brigade),
            Route::Reads.path(super::Server::Control),
            Route::Skips.path(super::Server::Control)
        ),
        format!(
            "The HTTP/1.1 suite is Brigade's own ({} cases, {} of them request-smuggling classes), \
             written from RFC 9112 and RFC 9110, each case citing its section; a single server \
             cannot show a smuggling attack, only its own half: that it never answers a hidden \
             request and closes where the RFC says so.",
            h1::cases::CASES.len(),
            h1::cases::CASES.iter().filter(|c| c.smuggling).count()
        ),
        format!(
            "The HTTP/3 suite is Brigade's own too ({} cases from RFC 9114, each citing its \
             section: quinn with hand-written frames, streams and QPACK literals), on the runtimes \
             that offer h3; their control is the `h3` crate's own serving loop for the hyper-based \
             runtimes (which serve h3 through it) and xitca-http's h3 dispatcher for xitca-web.",
            super::h3::CASES.len()
        ),
    ];
    if let Some(why) = &settings.h2spec_missing {
        notes.push(format!(
            "h2spec's suites (h2c, h2-tls) did not run: {why}. Their columns are missing, not passed."
        ));
    }
    if settings.quick {
        notes.push(format!(
            "--quick: one run each, h2spec's sections {} only. With one run a race cannot be \
             told from a fault: an h2spec case that fails through Brigade alone in its one run is \
             counted Brigade's though it may be one of the races the full study's three runs show \
             as flaky (a route that answers before the body is read against the frames after it).",
            super::QUICK_H2SPEC.join(", ")
        ));
    }
    for n in not_run {
        notes.push(format!(
            "{} {} on the {:?} server: not run ({}); its cases are missing from that run.",
            n.runtime,
            n.suite.name(),
            n.server,
            n.why
        ));
    }
    notes
}

fn setup(settings: &Settings) -> Setup {
    let mut out = crate::server_setup(&settings.launch, &settings.command_line);
    let h2spec = match &settings.h2spec_missing {
        None => format!(
            "h2spec {} ({}, -o {} s) over h2c and h2-tls",
            settings.h2spec_version,
            settings.h2spec.display(),
            settings.h2spec_timeout
        ),
        Some(_) => "h2spec not installed (not run)".to_owned(),
    };
    out.line("Runtimes", settings.runtimes.join(", "))
        .line(
            "Suites",
            format!(
                "{h2spec}; the HTTP/1.1 suite ({} cases); the HTTP/3 suite ({} cases)",
                h1::cases::CASES.len(),
                super::h3::CASES.len()
            ),
        )
        .line("Runs", format!("{} per suite, server and route", settings.runs))
        .line(
            "Servers",
            format!(
                "Brigade: {} (the first service announced, memory store, 1 worker); control: {} serve-control --runtime {{runtime}} [--tls-self-signed [--h3]]",
                settings.launch.describe(),
                settings.launch.binary().display()
            ),
        );
    out
}
