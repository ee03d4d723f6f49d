//! Whose failure a case is: every run of a case through Brigade set beside every run of it on the
//! runtime's control server, on the same suite and route. A case that fails on both is the
//! runtime's; one that fails only through Brigade is Brigade's (unless it is a deliberate house
//! rule, [`HOUSE_RULES`]) when it fails there in every run; one that fails through Brigade in some
//! runs only, and never on the control, is flaky through Brigade (a race, most often: a route that
//! answers before the body is read races the malformed frames after it; more runs tell); one that
//! fails only on the control is a case the kit's layer fixes. A case that fails in some runs and
//! not others is flaky, with its rate, whatever its class. The gate (`--fail-on-brigade`) fails
//! on Brigade's, not on flaky ones.

use std::collections::BTreeMap;

use super::{CaseRun, Route, Server, Suite};

/// Whose failure a case is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Class {
    /// Fails through Brigade in every run, never on the control.
    Brigades,
    /// Fails through Brigade in some runs, never on the control.
    FlakyThroughBrigade,
    /// Fails through Brigade and on the runtime's own server.
    Runtimes,
    /// Fails on the runtime's own server only: Brigade's layer is stricter.
    ControlOnly,
    /// Fails through Brigade; the control did not run, so no one can say whose.
    Unclassified,
}

impl Class {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Class::Brigades => "Brigade's",
            Class::FlakyThroughBrigade => "flaky through Brigade",
            Class::Runtimes => "the runtime's",
            Class::ControlOnly => "the runtime's, fixed by Brigade",
            Class::Unclassified => "no control to tell",
        }
    }
}

/// A failure Brigade answers on purpose, stricter than a case expects: the case's id, the rule,
/// and what the RFC says of it.
pub(crate) const HOUSE_RULES: &[(&str, &str, &str)] = &[];

/// One case on one runtime, suite and route: how often it failed where.
#[derive(Debug, Clone)]
pub(crate) struct CaseTally {
    pub(crate) runtime: String,
    pub(crate) suite: Suite,
    pub(crate) route: Route,
    pub(crate) id: String,
    pub(crate) section: String,
    pub(crate) what: String,
    pub(crate) smuggling: bool,
    /// Runs through Brigade, and how many failed.
    pub(crate) brigade: (u32, u32),
    /// Runs on the control, and how many failed.
    pub(crate) control: (u32, u32),
    /// Whether h2spec skipped it everywhere.
    pub(crate) skipped: bool,
    /// What went wrong, last seen (Brigade's first, else the control's).
    pub(crate) words: Option<String>,
}

impl CaseTally {
    /// Its class, or None where it passed everywhere it ran.
    pub(crate) fn class(&self) -> Option<Class> {
        let (b, c) = (self.brigade.1 > 0, self.control.1 > 0);
        match (b, c, self.control.0 > 0) {
            (false, false, _) => None,
            (true, _, false) => Some(Class::Unclassified),
            (true, true, true) => Some(Class::Runtimes),
            (true, false, true) if self.brigade.1 == self.brigade.0 => Some(Class::Brigades),
            (true, false, true) => Some(Class::FlakyThroughBrigade),
            (false, true, _) => Some(Class::ControlOnly),
        }
    }

    /// Whether it failed in some runs and not in others, on either server.
    pub(crate) fn flaky(&self) -> bool {
        let some = |(runs, failed): (u32, u32)| failed > 0 && failed < runs;
        some(self.brigade) || some(self.control)
    }

    /// The house rule it is, if Brigade answers it so on purpose.
    pub(crate) fn house_rule(&self) -> Option<&'static (&'static str, &'static str, &'static str)> {
        HOUSE_RULES.iter().find(|(id, _, _)| *id == self.id)
    }

    /// `runtime suite route case` in one line.
    pub(crate) fn name(&self) -> String {
        format!(
            "{} {} {} ({}) {}",
            self.runtime,
            self.suite.name(),
            self.id,
            self.route.name(),
            self.section
        )
    }
}

/// Every case of the study, tallied.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tally {
    pub(crate) cases: Vec<CaseTally>,
}

impl Tally {
    pub(crate) fn new(runs: &[CaseRun]) -> Tally {
        let mut by_case: BTreeMap<(String, Suite, Route, String), CaseTally> = BTreeMap::new();
        let mut order = Vec::new();
        for r in runs {
            let key = (r.runtime.clone(), r.suite, r.route, r.id.clone());
            let entry = by_case.entry(key.clone()).or_insert_with(|| {
                order.push(key);
                CaseTally {
                    runtime: r.runtime.clone(),
                    suite: r.suite,
                    route: r.route,
                    id: r.id.clone(),
                    section: r.section.clone(),
                    what: r.what.clone(),
                    smuggling: r.smuggling,
                    brigade: (0, 0),
                    control: (0, 0),
                    skipped: true,
                    words: None,
                }
            });
            let failed = u32::from(r.failure.is_some());
            let counts = match r.server {
                Server::Brigade => &mut entry.brigade,
                Server::Control => &mut entry.control,
            };
            counts.0 += 1;
            counts.1 += failed;
            entry.skipped &= r.skipped;
            if let Some(words) = &r.failure {
                if r.server == Server::Brigade || entry.words.is_none() {
                    entry.words = Some(words.clone());
                }
            }
        }
        let cases = order
            .into_iter()
            .filter_map(|k| by_case.remove(&k))
            .collect();
        Tally { cases }
    }

    /// The failures classified as Brigade's that no house rule explains, named.
    pub(crate) fn brigades_unexcused(&self) -> Vec<String> {
        self.cases
            .iter()
            .filter(|c| c.class() == Some(Class::Brigades) && c.house_rule().is_none())
            .map(CaseTally::name)
            .collect()
    }

    /// The cases of `runtime` on `suite` (both routes).
    pub(crate) fn of<'a>(
        &'a self,
        runtime: &'a str,
        suite: Suite,
    ) -> impl Iterator<Item = &'a CaseTally> + 'a {
        self.cases
            .iter()
            .filter(move |c| c.runtime == runtime && c.suite == suite)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(server: Server, id: &str, failed: bool) -> CaseRun {
        CaseRun {
            runtime: "hyper".to_owned(),
            suite: Suite::H2c,
            server,
            route: Route::Reads,
            id: id.to_owned(),
            section: "RFC 7540 §4.2".to_owned(),
            what: "a case".to_owned(),
            smuggling: false,
            failure: failed.then(|| "wrong".to_owned()),
            skipped: false,
        }
    }

    #[test]
    fn a_case_is_the_runtimes_where_it_fails_on_both_and_brigades_where_only_through_brigade() {
        use Server::{Brigade, Control};
        let runs = vec![
            run(Brigade, "both", true),
            run(Control, "both", true),
            run(Brigade, "kit", true),
            run(Control, "kit", false),
            run(Brigade, "fixed", false),
            run(Control, "fixed", true),
            run(Brigade, "fine", false),
            run(Control, "fine", false),
            run(Brigade, "flaky", true),
            run(Brigade, "flaky", false),
            run(Control, "flaky", false),
            run(Control, "flaky", false),
            run(Brigade, "alone", true),
        ];
        let tally = Tally::new(&runs);
        let class = |id: &str| tally.cases.iter().find(|c| c.id == id).unwrap().class();
        assert_eq!(class("both"), Some(Class::Runtimes));
        assert_eq!(class("kit"), Some(Class::Brigades));
        assert_eq!(class("fixed"), Some(Class::ControlOnly));
        assert_eq!(class("fine"), None);
        assert_eq!(class("flaky"), Some(Class::FlakyThroughBrigade));
        assert_eq!(class("alone"), Some(Class::Unclassified));
        let flaky = tally.cases.iter().find(|c| c.id == "flaky").unwrap();
        assert!(flaky.flaky() && flaky.brigade == (2, 1));
        assert_eq!(
            tally.brigades_unexcused().len(),
            1,
            "the flaky one does not gate"
        );
    }
}
