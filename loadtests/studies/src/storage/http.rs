//! The growing-documents phase through a running service's routes (`--via http`), as the original
//! study measured a web application: the same counts and the same seeded sequence of documents as
//! through the store, each operation a read (`GET`) and a growth (`POST`), timed by the generator's
//! own client ([`brigade_load::engine::session`]).
//!
//! The load tester knows no application, so the application describes its growth as data: a
//! [`GrowthDescription`] (TOML) is a scenario (the `docs/methodology.md` syntax: `[vars]`,
//! `[[setup]]` fixtures, templated requests) whose three requests are named `create` (makes a
//! document and captures its id into the pool `doc`), `grow` and `read` (each `{{take doc}}`: the
//! study puts the id it chose there), and `array`, the JSON pointer of the array that grows. The
//! study counts that array in every body it sends and in every document it reads back, and fails
//! loudly when a read finds other than what was written. The restaurant's description (kitchen
//! orders grown by appending items) is `services/restaurant/studies/storage-growth.toml`, which the
//! `brigade` binary registers.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use serde_json::Value;

use super::measure::{Figures, GrowingResult, GrowthRecorder, PhaseResult};
use super::plan::{Bands, GrowthPlan};
use brigade_load::engine::session::{Answer, Session};
use brigade_load::scenario::{Pools, RequestSpec, Scenario};
use brigade_records::histogram::LatencyHistogram;

/// The pool the study puts the chosen document's id into.
pub(crate) const DOC_POOL: &str = "doc";

/// How an application's documents are created, grown and read over HTTP.
#[derive(Debug, Clone)]
pub(crate) struct GrowthDescription {
    label: String,
    description: String,
    array: String,
    scenario: Scenario,
    create: usize,
    grow: usize,
    read: usize,
    doc: usize,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGrowth {
    #[serde(default)]
    description: String,
    array: String,
    scenario: toml::Table,
}

impl GrowthDescription {
    /// Parses a description; `label` names it in errors and in the report.
    pub(crate) fn parse(text: &str, label: &str) -> Result<GrowthDescription> {
        let raw: RawGrowth =
            toml::from_str(text).with_context(|| format!("{label}: not a growth description"))?;
        if !raw.array.starts_with('/') {
            bail!(
                "{label}: array {:?} is not a JSON pointer (they start with /)",
                raw.array
            );
        }
        let scenario_text = toml::to_string(&raw.scenario)
            .with_context(|| format!("{label}: its [scenario] cannot be read back"))?;
        let scenario = Scenario::parse(&scenario_text, label)
            .with_context(|| format!("{label}: its [scenario]"))?;
        let find = |name: &str| {
            scenario
                .requests()
                .iter()
                .position(|r| r.name == name)
                .ok_or_else(|| anyhow!("{label}: no [[scenario.request]] named {name:?}"))
        };
        let (create, grow, read) = (find("create")?, find("grow")?, find("read")?);
        let doc = scenario
            .pools()
            .iter()
            .position(|p| p.name == DOC_POOL)
            .ok_or_else(|| anyhow!("{label}: no request uses the pool {DOC_POOL:?}"))?;
        if !scenario.requests()[create]
            .captures
            .iter()
            .any(|c| c.pool == doc)
        {
            bail!(
                "{label}: the create request must capture the new document's id into {DOC_POOL:?}"
            );
        }
        Ok(GrowthDescription {
            label: label.to_owned(),
            description: raw.description,
            array: raw.array,
            scenario,
            create,
            grow,
            read,
            doc,
        })
    }

    /// Reads a description from a file.
    pub(crate) fn from_file(path: &Path) -> Result<GrowthDescription> {
        let text = brigade_records::files::read_text(
            path,
            brigade_records::files::MAX_INPUT_BYTES,
            "growth description",
        )?;
        GrowthDescription::parse(&text, &path.display().to_string())
    }

    /// What it is called (the file, or the name it was registered under).
    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    /// Its own words about what it does.
    pub(crate) fn description(&self) -> &str {
        &self.description
    }

    /// The services it talks to.
    pub(crate) fn services(&self) -> Vec<String> {
        self.scenario.services()
    }

    /// The length of the array at the description's pointer in `json`.
    fn count(&self, json: &[u8], what: &str) -> Result<u64> {
        let value: Value = serde_json::from_slice(json)
            .with_context(|| format!("{}: the {what} is not JSON", self.label))?;
        value
            .pointer(&self.array)
            .and_then(Value::as_array)
            .map(|a| a.len() as u64)
            .ok_or_else(|| {
                anyhow!(
                    "{}: the {what} has no array at {}: {}",
                    self.label,
                    self.array,
                    String::from_utf8_lossy(&json[..json.len().min(200)])
                )
            })
    }
}

/// Sends `spec` for the document `id` (put in the `doc` pool, which the request must `take`).
async fn send_for(
    session: &mut Session<'_>,
    description: &GrowthDescription,
    spec: &RequestSpec,
    pools: &mut Pools,
    id: &str,
) -> Result<Answer> {
    pools.push(description.doc, id.to_owned());
    let answer = session
        .send(spec, pools)
        .await
        .with_context(|| format!("{} for document {id}", spec.name))?;
    if pools.len(description.doc) != 0 {
        bail!(
            "{}: the {} request must {{{{take {DOC_POOL}}}}}, not pick it",
            description.label,
            spec.name
        );
    }
    Ok(answer)
}

/// Runs the growing phase against services at `targets` (service → base URL); `on_disk` says
/// the server's store's bytes on disk (`None` where it cannot be told).
#[allow(clippy::too_many_arguments)]
pub(crate) fn growing(
    description: &GrowthDescription,
    targets: &BTreeMap<String, String>,
    docs: u64,
    group_ops: u64,
    plan: &GrowthPlan,
    bands: Bands,
    timeout: Duration,
    on_disk: &dyn Fn() -> Option<u64>,
    label: &str,
) -> Result<GrowingResult> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("Failed to build the client's runtime")?;
    let seq = AtomicU64::new(0);
    let mut session = Session::new(&description.scenario, targets, timeout, &seq)?;
    runtime.block_on(async {
        let mut pools = session
            .fixtures()
            .await
            .context("the growth description's fixtures failed")?;
        let (create, ids, mut counts) =
            create_phase(&mut session, &mut pools, description, docs, on_disk, label).await?;
        let mut recorder = GrowthRecorder::new(bands, group_ops);
        for &pick in &plan.picks {
            let i = pick as usize;
            let (id, count) = (&ids[i], &mut counts[i]);
            grow_step(
                &mut session,
                &mut pools,
                description,
                id,
                count,
                &mut recorder,
            )
            .await?;
            if recorder.group_full() {
                close_group(&mut recorder, on_disk, label);
            }
        }
        Ok(recorder.finish(create, None, on_disk()))
    })
}

/// Creates `docs` documents one by one, checking each was stored with what was sent; answers
/// the phase's figures, the documents' ids and their element counts.
async fn create_phase(
    session: &mut Session<'_>,
    pools: &mut Pools,
    description: &GrowthDescription,
    docs: u64,
    on_disk: &dyn Fn() -> Option<u64>,
    label: &str,
) -> Result<(PhaseResult, Vec<String>, Vec<u64>)> {
    let create = &description.scenario.requests()[description.create];
    let mut rng = fastrand::Rng::new();
    let began = Instant::now();
    let mut created = LatencyHistogram::new();
    let mut ids = Vec::with_capacity(docs as usize);
    let mut counts = Vec::with_capacity(docs as usize);
    for n in 0..docs {
        let answer = session
            .send(create, pools)
            .await
            .with_context(|| format!("creating document {}", n + 1))?;
        created.record(answer.elapsed);
        let id = pools
            .take(description.doc, &mut rng)
            .context("the create request captured no id")?;
        let sent = description.count(&answer.sent, "create request's body")?;
        let stored = description.count(&answer.body, "create answer")?;
        if stored != sent {
            bail!("document {id} was created with {stored} elements, {sent} were sent");
        }
        ids.push(id);
        counts.push(sent);
    }
    let create = PhaseResult {
        phase: "create".to_owned(),
        figures: Figures::of(&created, began.elapsed().as_secs_f64()),
        on_disk_bytes: on_disk(),
    };
    println!(
        "{label}: growing: created {docs} documents, {:.3} ms each",
        create.figures.mean_ms
    );
    Ok((create, ids, counts))
}

/// One growth operation: reads the document `id` (checking it holds `count` elements), grows it
/// (checking the answer holds what was added) and records both.
async fn grow_step(
    session: &mut Session<'_>,
    pools: &mut Pools,
    description: &GrowthDescription,
    id: &str,
    count: &mut u64,
    recorder: &mut GrowthRecorder,
) -> Result<()> {
    let requests = description.scenario.requests();
    let (grow, read) = (&requests[description.grow], &requests[description.read]);
    let started = Instant::now();
    let found = send_for(session, description, read, pools, id).await?;
    let read_back = description.count(&found.body, "read answer")?;
    if read_back != *count {
        bail!(
            "document {id} read back with {read_back} elements at {}, but {} were written",
            description.array,
            count
        );
    }
    let grown = send_for(session, description, grow, pools, id).await?;
    *count += description.count(&grown.sent, "grow request's body")?;
    let after = description.count(&grown.body, "grow answer")?;
    if after != *count {
        bail!(
            "document {id} has {after} elements after growing, but {} were written",
            count
        );
    }
    recorder.checked(2);
    let doc_kib = found.body.len() as f64 / 1024.0;
    recorder.record(doc_kib, found.elapsed, grown.elapsed, started.elapsed());
    Ok(())
}

/// Closes a full group with the size on disk now, and prints it.
fn close_group(recorder: &mut GrowthRecorder, on_disk: &dyn Fn() -> Option<u64>, label: &str) {
    let disk = on_disk();
    if let Some(g) = recorder.close_group(None, disk) {
        println!(
            "{label}: growing: operations {}–{}: {:.3} ms (read {:.3}, grow {:.3}), \
             documents {:.1} KiB, on disk {}",
            g.first_op,
            g.last_op,
            g.figures.mean_ms,
            g.read_mean_ms,
            g.grow_mean_ms,
            g.mean_doc_kib,
            super::direct::mib_text(disk)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const THINGS: &str = r#"
description = "Lists grown by appending entries."
array = "/entries"

[scenario]
name = "list-growth"
service = "api"

[[scenario.request]]
name = "create"
method = "POST"
path = "/lists"
body = '{"entries": [{"text": "{{random_string 10}}"}]}'
expect = [201]
capture = { doc = "/id" }

[[scenario.request]]
name = "grow"
method = "POST"
path = "/lists/{{take doc}}/entries"
body = '{"entries": [{"text": "{{random_string 10}}"}, {"text": "x"}]}'

[[scenario.request]]
name = "read"
path = "/lists/{{take doc}}"
"#;

    #[test]
    fn a_description_names_its_three_requests_and_the_growing_array() {
        let d = GrowthDescription::parse(THINGS, "things").unwrap();
        assert_eq!(d.description(), "Lists grown by appending entries.");
        assert_eq!(d.services(), ["api"]);
        assert_eq!(d.count(br#"{"entries": [1, 2, 3]}"#, "answer").unwrap(), 3);
        let err = d.count(br#"{"other": []}"#, "answer").unwrap_err();
        assert!(err.to_string().contains("no array at /entries"), "{err}");
    }

    #[test]
    fn a_description_without_a_read_or_an_id_capture_is_refused() {
        let no_read = THINGS.replace("name = \"read\"", "name = \"fetch\"");
        let err = format!("{:#}", GrowthDescription::parse(&no_read, "x").unwrap_err());
        assert!(
            err.contains("no [[scenario.request]] named \"read\""),
            "{err}"
        );
        let no_capture = THINGS.replace("capture = { doc = \"/id\" }", "");
        let err = format!(
            "{:#}",
            GrowthDescription::parse(&no_capture, "x").unwrap_err()
        );
        assert!(err.contains("capture"), "{err}");
        let bad_pointer = THINGS.replace("array = \"/entries\"", "array = \"entries\"");
        assert!(GrowthDescription::parse(&bad_pointer, "x").is_err());
    }
}
