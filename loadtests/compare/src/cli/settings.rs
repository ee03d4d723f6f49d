//! From `brigade compare`'s flags to the checked [`CompareSettings`]: every default, every check a
//! flag alone can fail, the servers, stores, runtimes, wire and SLO the flags ask for.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use brigade_load::Registry;
use brigade_meter::servers::external::ExternalSpec;
use brigade_meter::servers::{Launch, ServerInfo};
use brigade_meter::wire::Wire;
use brigade_records::protocol::Protocol;
use brigade_report::verdict;

use super::*;
use crate::settings::CompareSettings;

impl CompareArgs {
    /// The verdicts' rule these flags ask for.
    pub fn rule(&self) -> anyhow::Result<verdict::Rule> {
        if let Some(pct) = self.equivalence {
            if !(pct.is_finite() && pct > 0.0 && pct < 100.0) {
                bail!("--equivalence must be a percentage above 0 and below 100");
            }
        }
        if !(self.confidence.is_finite() && self.confidence >= 50.0 && self.confidence < 100.0) {
            bail!("--confidence must be a percentage from 50 to below 100");
        }
        Ok(verdict::Rule {
            equivalence_pct: self.equivalence,
            confidence_pct: self.confidence,
        })
    }

    /// The side-by-side settings these flags ask for.
    fn side(
        &self,
        cannot_sample: bool,
        runtimes: usize,
    ) -> anyhow::Result<crate::side::SideSettings> {
        for &rate in &self.side_by_side_rates {
            brigade_load::engine::check_rate("--side-by-side-rates", rate)?;
        }
        if self.windows == Some(0) {
            bail!("--windows must be at least 1");
        }
        if let Some(rounds) = self.rounds {
            if !(1..=crate::side::MAX_ROUNDS).contains(&rounds) {
                bail!("--rounds must be between 1 and {}", crate::side::MAX_ROUNDS);
            }
        }
        let budget = self.budget.unwrap_or_else(|| {
            if self.quick {
                Duration::ZERO
            } else {
                humantime::parse_duration(DEFAULT_BUDGET).expect("a valid default")
            }
        });
        Ok(crate::side::SideSettings {
            enabled: !self.no_side_by_side && !cannot_sample,
            levels: if self.quick {
                QUICK_LEVELS.to_vec()
            } else {
                DEFAULT_LEVELS.to_vec()
            },
            rates: (!self.side_by_side_rates.is_empty()).then(|| self.side_by_side_rates.clone()),
            // --quick keeps the fewest rounds worth an interval: with eight runtimes they do not
            // rotate through every place, so its generators share one schedule (less precise,
            // not biased).
            rounds: self.rounds.unwrap_or_else(|| {
                if self.quick {
                    crate::settings::MIN_ROUNDS
                } else {
                    crate::settings::balanced_rounds(runtimes)
                }
            }),
            windows: self.windows.unwrap_or(crate::side::DEFAULT_WINDOWS),
            count_s: self.count_seconds.unwrap_or(crate::side::DEFAULT_COUNT_S),
            budget,
            instructions: self.instructions,
            ..crate::side::SideSettings::default()
        })
    }

    /// The `--handicap NAME=US` flags, checked against the runtimes compared.
    fn handicaps(
        &self,
        runtimes: &[String],
    ) -> anyhow::Result<std::collections::BTreeMap<String, f64>> {
        let mut out = std::collections::BTreeMap::new();
        for text in &self.handicaps {
            let (name, us) = text.split_once('=').with_context(|| {
                format!("--handicap {text:?}: expected NAME=US, e.g. hyper#2=5")
            })?;
            let us: f64 = us
                .trim()
                .parse()
                .ok()
                .filter(|us: &f64| us.is_finite() && *us >= 0.0 && *us <= 1_000_000.0)
                .with_context(|| format!("--handicap {text:?}: {us:?} is not a number of µs"))?;
            let name = name.trim();
            if !runtimes.iter().any(|r| r == name) {
                bail!(
                    "--handicap {text:?}: {name} is not among the runtimes compared ({})",
                    runtimes.join(", ")
                );
            }
            out.insert(name.to_owned(), us);
        }
        Ok(out)
    }

    /// Resolves defaults (and `--quick`) into settings; `registry` holds the scenarios known by
    /// name and those run by default.
    pub fn settings(&self, registry: &Registry) -> anyhow::Result<CompareSettings> {
        let (launch, server_info, mut external) = self.servers()?;
        let mut setup_notes = self.setup_notes()?;
        let runtimes = self.runtime_names(&mut external, &server_info)?;
        let runtimes = self.offering_h3(
            runtimes,
            &server_info,
            external.is_empty(),
            &mut setup_notes,
        )?;
        let handicaps = self.handicaps(&runtimes)?;
        if !handicaps.is_empty() && !external.is_empty() {
            bail!("--handicap needs servers compare starts; it cannot reach --external ones");
        }
        // Side by side reads every server's CPU in nanoseconds: an external runtime needs its
        // cgroups for that.
        let side = self.side(
            external.iter().any(|e| e.cgroups.is_empty()),
            runtimes.len(),
        )?;
        let rule = self.rule()?;
        let scenarios = self.scenario_names(registry)?;
        let users = self.user_counts();
        self.check_launch(&launch, &handicaps, runtimes.len(), &users)?;
        self.check_store(&launch, &server_info)?;
        let (duration, warmup) = self.run_times();
        let cpus = self.cpus.choice()?;
        self.check_mongodb_uri(external.is_empty())?;
        let preloads = self.preloads();
        if let Some(rate) = self.rate {
            brigade_load::engine::check_rate("--rate", rate)?;
        }
        let thresholds = brigade_records::threshold::parse_all(&self.thresholds)?;
        let slo = self.slo_plan()?;
        let (isolated, side) = self.what_runs(slo.is_some(), side);
        self.check_baseline()?;
        let wire = self.wire(&launch, !external.is_empty())?;
        let out_dir = self.out.clone().unwrap_or_else(default_out);
        Ok(CompareSettings {
            launch,
            server_info,
            registry: registry.clone(),
            runtimes,
            handicaps,
            store: self.store.clone(),
            mongodb_uri: self.mongodb_uri.clone(),
            scenarios,
            users,
            preloads,
            duration,
            warmup,
            repeat: self.repeat.unwrap_or(DEFAULT_REPEAT),
            isolated,
            side,
            workers: self.workers,
            threads: self.threads,
            timeout: self.timeout,
            rule,
            cpus,
            out_dir,
            quick: self.quick,
            progress: !self.no_progress && std::io::IsTerminal::is_terminal(&std::io::stderr()),
            command_line: std::env::args().collect::<Vec<_>>().join(" "),
            keepalive: !self.no_keepalive,
            wire,
            rate: self.rate,
            seed: self.seed.unwrap_or_else(|| fastrand::u64(..)),
            thresholds,
            baselines: self.baselines.clone(),
            conformance_report: self.conformance_report.clone(),
            conformance: self.conformance,
            external,
            setup_notes,
            slo,
        })
    }

    /// The servers flags (`--external*`, `--binary`, `--server-command`): how servers start, what
    /// the binary says of itself, and the external runtimes (none when compare starts them).
    fn servers(
        &self,
    ) -> anyhow::Result<(
        Launch,
        ServerInfo,
        Vec<brigade_meter::servers::external::ExternalRuntime>,
    )> {
        let specs = self
            .external
            .iter()
            .map(|text| ExternalSpec::parse(text))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let mut external = brigade_meter::servers::external::group(&specs)?;
        brigade_meter::servers::external::add_companions(&mut external, &self.external_companions)?;
        brigade_meter::servers::external::add_cgroups(&mut external, &self.external_cgroups)?;
        let (launch, server_info) = if external.is_empty() {
            Launch::resolve(
                self.binary.as_deref(),
                self.server_command.as_deref(),
                !self.runtimes.is_empty(),
            )?
        } else {
            // Nothing is started: the binary is neither asked nor run.
            (
                Launch::Binary(PathBuf::from("(external servers)")),
                ServerInfo::default(),
            )
        };
        Ok((launch, server_info, external))
    }

    /// The runtimes compared (`--runtimes`, else every external one, else every one the binary
    /// has); with external servers, `--runtimes` picks and orders among them.
    fn runtime_names(
        &self,
        external: &mut Vec<brigade_meter::servers::external::ExternalRuntime>,
        server_info: &ServerInfo,
    ) -> anyhow::Result<Vec<String>> {
        Ok(if !external.is_empty() {
            if self.runtimes.is_empty() {
                external.iter().map(|e| e.runtime.clone()).collect()
            } else {
                // --runtimes picks (and orders) among the external runtimes.
                for runtime in &self.runtimes {
                    if !external.iter().any(|e| &e.runtime == runtime) {
                        bail!("--runtimes names {runtime}, which no --external gives a URL for");
                    }
                }
                external.retain(|e| self.runtimes.contains(&e.runtime));
                self.runtimes.clone()
            }
        } else {
            crate::settings::label_runtimes(&server_info.pick_runtimes(&self.runtimes))
        })
    }

    /// Over h3 (compare's servers): the runtimes that offer it, the others left out and said so in
    /// a setup note (an h3 comparison of actix-web would not be one: it refuses h3 at start).
    fn offering_h3(
        &self,
        runtimes: Vec<String>,
        server_info: &ServerInfo,
        started_here: bool,
        notes: &mut Vec<(String, String)>,
    ) -> anyhow::Result<Vec<String>> {
        if self.protocols.as_slice() != [Protocol::H3] || !started_here {
            return Ok(runtimes);
        }
        let offers = |label: &String| {
            server_info.offers(brigade_meter::servers::runtime_of(label), Protocol::H3)
        };
        let (kept, left): (Vec<String>, Vec<String>) = runtimes.into_iter().partition(offers);
        if kept.is_empty() {
            bail!(
                "--protocols h3: none of the runtimes compared offers h3 ({}): the binary's \
                 `runtimes --json` names those that do",
                left.join(", ")
            );
        }
        let stacks: Vec<String> = server_info
            .runtimes
            .iter()
            .filter(|r| {
                kept.iter()
                    .any(|k| brigade_meter::servers::runtime_of(k) == r.name)
            })
            .filter_map(|r| r.h3.as_ref().map(|s| format!("{} on {s}", r.name)))
            .collect();
        notes.push((
            "HTTP/3".to_owned(),
            format!("served by {}", stacks.join("; ")),
        ));
        if !left.is_empty() {
            notes.push((
                "Left out of h3".to_owned(),
                format!("{} (h3 not offered by this runtime)", left.join(", ")),
            ));
        }
        Ok(kept)
    }

    /// `--setup-note LABEL=TEXT`, in the order given.
    fn setup_notes(&self) -> anyhow::Result<Vec<(String, String)>> {
        self.setup_notes
            .iter()
            .map(|text| {
                text.split_once('=')
                    .map(|(label, line)| (label.trim().to_owned(), line.trim().to_owned()))
                    .with_context(|| format!("--setup-note {text:?}: expected LABEL=TEXT"))
            })
            .collect::<anyhow::Result<Vec<_>>>()
    }

    /// `--scenarios`, else every scenario the binary registered to compare by default.
    fn scenario_names(&self, registry: &Registry) -> anyhow::Result<Vec<String>> {
        Ok(if self.scenarios.is_empty() {
            let registered = registry.application_names();
            if registered.is_empty() {
                bail!(
                    "this binary registers no scenario to compare by default: give --scenarios \
                     (a scenario file, or one of: {})",
                    registry.names().join(", ")
                );
            }
            registered.into_iter().map(str::to_owned).collect()
        } else {
            self.scenarios.clone()
        })
    }

    /// `--users`, else the default (or `--quick`) user counts.
    fn user_counts(&self) -> Vec<u32> {
        if self.users.is_empty() {
            let default = if self.quick {
                QUICK_USERS
            } else {
                DEFAULT_USERS
            };
            default
                .split(',')
                .map(|u| u.parse().expect("a valid default"))
                .collect()
        } else {
            self.users.clone()
        }
    }

    /// Whether the servers can be started as asked: the store and preload they need, a
    /// `{handicap_us}` in the server command for `--handicap`, at least one user.
    fn check_launch(
        &self,
        launch: &Launch,
        handicaps: &std::collections::BTreeMap<String, f64>,
        runtimes: usize,
        users: &[u32],
    ) -> anyhow::Result<()> {
        launch.check(&self.store, self.preload.iter().any(|&n| n > 0), runtimes)?;
        if !handicaps.is_empty() && !launch.passes("handicap_us") {
            bail!(
                "--server-command has no {{handicap_us}}, so --handicap cannot reach the server: \
                 add `--handicap-us {{handicap_us}}` to it"
            );
        }
        if users.contains(&0) {
            bail!("--users must be at least 1");
        }
        Ok(())
    }

    /// Refuses a store the server binary does not have: its stores are its registry's (`runtimes
    /// --json`); a binary that did not say (external servers, one that could not be asked) is
    /// taken at its word.
    fn check_store(&self, launch: &Launch, server_info: &ServerInfo) -> anyhow::Result<()> {
        if !server_info.stores.is_empty() && !server_info.stores.contains(&self.store) {
            bail!(
                "store {} is not compiled into {} (it has: {})",
                self.store,
                launch.binary().display(),
                server_info.stores.join(", ")
            );
        }
        Ok(())
    }

    /// `--duration` and `--warmup`, else their defaults (or `--quick`'s).
    fn run_times(&self) -> (Duration, Duration) {
        let parse_duration = |text: &str| humantime::parse_duration(text).expect("a valid default");
        let duration = self.duration.unwrap_or_else(|| {
            parse_duration(if self.quick {
                QUICK_DURATION
            } else {
                DEFAULT_DURATION
            })
        });
        let warmup = self.warmup.unwrap_or_else(|| {
            parse_duration(if self.quick {
                QUICK_WARMUP
            } else {
                DEFAULT_WARMUP
            })
        });
        (duration, warmup)
    }

    /// Refuses a `--mongodb-uri` that names a database when compare starts the servers.
    fn check_mongodb_uri(&self, starts_servers: bool) -> anyhow::Result<()> {
        if self.store == "mongo" && starts_servers {
            if let Some(database) = self.mongodb_uri.as_deref().and_then(uri_database) {
                bail!(
                    "the MongoDB URI names the database {database:?}: every run would share it; \
                     give the URI without a database (compare gives each run fresh databases)"
                );
            }
        }
        Ok(())
    }

    /// `--preload`, each count once in the order given (none: 0).
    fn preloads(&self) -> Vec<u64> {
        let mut preloads = if self.preload.is_empty() {
            vec![0]
        } else {
            self.preload.clone()
        };
        let mut seen = std::collections::BTreeSet::new();
        preloads.retain(|n| seen.insert(*n));
        preloads
    }

    /// Whether the runs alone and side by side happen: an `--slo` search replaces them unless
    /// `--slo-also-compare`.
    fn what_runs(
        &self,
        slo: bool,
        side: crate::side::SideSettings,
    ) -> (bool, crate::side::SideSettings) {
        if slo && !self.slo_also_compare {
            (
                false,
                crate::side::SideSettings {
                    enabled: false,
                    instructions: false,
                    ..side
                },
            )
        } else {
            (!self.no_isolated, side)
        }
    }

    /// Reads `--baseline` now: a typo should not cost a whole comparison.
    fn check_baseline(&self) -> anyhow::Result<()> {
        for path in &self.baselines {
            crate::baseline::read(path)
                .with_context(|| format!("--baseline {}", path.display()))?;
        }
        Ok(())
    }

    /// What this one comparison speaks: its one `--protocols` entry (h1 when none), `--streams`;
    /// a protocol other than h1 needs servers compare starts with the standard flags, which it
    /// gives the serve flags that protocol needs.
    fn wire(&self, launch: &Launch, external: bool) -> anyhow::Result<Wire> {
        let protocol = match self.protocols.as_slice() {
            [] => Protocol::H1,
            [one] => *one,
            _ => bail!("--protocols with several protocols runs one comparison per protocol"),
        };
        if protocol != Protocol::H1 {
            if external {
                bail!(
                    "--protocols {protocol} needs servers compare starts: it cannot tell --external \
                     ones which protocol to speak"
                );
            }
            if matches!(launch, Launch::Template { .. }) {
                bail!(
                    "--protocols {protocol} needs the standard serve flags, to which compare adds {}: \
                     drop --server-command",
                    brigade_meter::servers::launch::serve_protocol_args(protocol).join(" ")
                );
            }
        }
        Ok(Wire::new(protocol, self.streams))
    }

    /// The `--slo` search's plan, checked; `None` without `--slo`.
    fn slo_plan(&self) -> anyhow::Result<Option<crate::settings::SloPlan>> {
        if self.slo.slo.is_empty() {
            return Ok(None);
        }
        if self.rate.is_some() {
            bail!("--slo sets the rates itself: drop --rate (the search starts from --slo-start)");
        }
        let slos = self.slo.slos()?;
        // Checked now, with any start: a typo should not wait for the first search.
        let search = self.slo.settings(self.slo.slo_start.unwrap_or(1.0))?;
        Ok(Some(crate::settings::SloPlan {
            slos,
            args: self.slo.clone(),
            search,
        }))
    }
}

/// The database a MongoDB URI names (`mongodb://host/db?...` → `db`), if any.
pub(super) fn uri_database(uri: &str) -> Option<&str> {
    let rest = uri.split_once("://")?.1;
    let path = rest.split('?').next()?.split_once('/')?.1;
    (!path.is_empty()).then_some(path)
}

/// Where a comparison writes when `--out` is not given: `results/compare-<UTC time>`.
pub(super) fn default_out() -> PathBuf {
    PathBuf::from("results").join(format!("compare-{}", brigade_meter::clock::stamp()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::dimensions::store_server;

    /// `compare` with `args`, parsed as the binary parses them.
    fn parse(args: &[&str]) -> CompareArgs {
        #[derive(clap::Parser)]
        struct Command {
            #[command(flatten)]
            compare: CompareArgs,
        }
        let words = std::iter::once("compare").chain(args.iter().copied());
        <Command as clap::Parser>::parse_from(words).compare
    }

    #[test]
    fn one_protocol_is_one_comparison_over_it_with_its_streams() {
        let binary = Launch::Binary("brigade".into());
        assert_eq!(parse(&[]).wire(&binary, false).unwrap(), Wire::default());
        let wire = parse(&["--protocols", "h2-tls", "--streams", "4"])
            .wire(&binary, false)
            .unwrap();
        assert_eq!(wire, Wire::new(Protocol::H2Tls, 4));
        let template = Launch::Template {
            binary: "brigade".into(),
            template: brigade_meter::servers::CommandTemplate::parse("srv --listen {listen}")
                .unwrap(),
        };
        let h2c = parse(&["--protocols", "h2c"]);
        let refused = h2c.wire(&template, false).unwrap_err().to_string();
        assert!(refused.contains("--protocol h2c"), "{refused}");
        let refused = h2c.wire(&binary, true).unwrap_err().to_string();
        assert!(refused.contains("--external"), "{refused}");
        // Plaintext HTTP/1.1 is what every server speaks unasked: a template or external is fine.
        assert!(parse(&["--protocols", "h1"]).wire(&template, true).is_ok());
    }

    #[test]
    fn over_h3_only_the_runtimes_that_offer_it_are_compared_and_the_others_named() {
        let info = ServerInfo {
            runtimes: ["quic-a", "tcp-only", "quic-b"]
                .iter()
                .map(|name| brigade_meter::servers::info::RuntimeInfo {
                    name: (*name).to_owned(),
                    h3: (*name != "tcp-only").then(|| "h3 0.0.8".to_owned()),
                    ..Default::default()
                })
                .collect(),
            ..ServerInfo::default()
        };
        let all: Vec<String> = ["quic-a", "tcp-only", "quic-b", "quic-b#2"]
            .map(String::from)
            .into();
        let mut notes = Vec::new();
        let h3 = parse(&["--protocols", "h3"]);
        let kept = h3
            .offering_h3(all.clone(), &info, true, &mut notes)
            .unwrap();
        assert_eq!(kept, ["quic-a", "quic-b", "quic-b#2"]);
        assert_eq!(notes[0].0, "HTTP/3");
        assert!(notes[0].1.contains("quic-a on h3 0.0.8"), "{notes:?}");
        assert_eq!(
            notes[1],
            (
                "Left out of h3".to_owned(),
                "tcp-only (h3 not offered by this runtime)".to_owned()
            )
        );
        let h2 = parse(&["--protocols", "h2-tls"]);
        assert_eq!(
            h2.offering_h3(all, &info, true, &mut notes).unwrap().len(),
            4
        );
        let tcp_only = vec!["tcp-only".to_owned()];
        assert!(h3.offering_h3(tcp_only, &info, true, &mut notes).is_err());
    }

    #[test]
    fn several_protocols_on_several_stores_are_refused_with_the_way_out() {
        let args = parse(&["--protocols", "h1,h2c", "--stores", "memory,embedded"]);
        let refused = run_compare(args, &Registry::new()).unwrap_err().to_string();
        assert!(refused.contains("--store S --protocols"), "{refused}");
    }

    #[test]
    fn a_uri_database_is_found_where_there_is_one() {
        assert_eq!(uri_database("mongodb://h:27017/shop?x=1"), Some("shop"));
        assert_eq!(uri_database("mongodb://h:27017/?x=1"), None);
        assert_eq!(uri_database("mongodb://u:p@h1,h2"), None);
    }

    #[test]
    fn the_mongo_server_is_described_by_the_binary_or_said_unknown() {
        let mut args = parse(&["--mongodb-uri", "mongodb://h:27017"]);
        assert!(store_server("mongo", &args).contains("cannot ask"));
        args.describe_mongo = Some(|uri| Ok(format!("MongoDB 7.0 at {uri}")));
        assert_eq!(
            store_server("mongo", &args),
            "MongoDB 7.0 at mongodb://h:27017"
        );
        args.describe_mongo = Some(|_| anyhow::bail!("refused"));
        assert!(store_server("mongo", &args).ends_with("did not say what it is (refused)"));
        args.mongodb_uri = None;
        assert_eq!(store_server("mongo", &args), "MongoDB (no URI given)");
    }
}
