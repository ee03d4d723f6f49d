//! Which target each of a scenario's services is sent to: the `--target` URLs resolved, once,
//! before a run, by the scenario's service index.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Result};
use brigade_clients::Target;
use brigade_records::protocol::Protocol;

use crate::scenario::Scenario;

/// Resolves the scenario's services to targets (by service index) and names them `service=url`.
pub(crate) fn resolve_targets(
    scenario: &Scenario,
    given: &BTreeMap<String, String>,
    protocol: Protocol,
) -> Result<(Vec<Target>, Vec<String>)> {
    let mut targets = Vec::new();
    let mut names = Vec::new();
    for service in scenario.services() {
        let url = given
            .get(&service)
            .or_else(|| given.get("*"))
            .ok_or_else(|| {
                anyhow!(
                    "scenario {} needs a target for service {service:?} (give --target URL or --target {service}=URL); it uses: {}",
                    scenario.name(),
                    scenario.services().join(", ")
                )
            })?;
        let target = Target::parse(url)?;
        if target.https && !protocol.tls() {
            bail!(
                "{url} is https://, but --protocol {protocol} is plaintext: pass --protocol h1-tls or --protocol h2-tls"
            );
        }
        targets.push(target);
        names.push(format!("{service}={url}"));
    }
    Ok((targets, names))
}
