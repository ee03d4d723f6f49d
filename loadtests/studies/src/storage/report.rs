//! The storage study's findings as a general [`StudyReport`]: every phase of every store in one
//! table; the growth by group and by document size; the fixed phase; charts of ms per operation
//! against document size (one line per store), ms per group and bytes on disk against operations;
//! the setup (counts, cache caps, how each store was reached) and the caveats.

use brigade_kit::store::StoreKind;

use brigade_report::setup::{build_versions, Setup};
use brigade_report::study::{Axis, Better, Chart, Metric, Section, Series, StudyReport, Table};
use brigade_report::Versions;

use super::measure::PhaseResult;
use super::{Part, StorageSettings, SubjectResult, Via};

/// The title of the table with every phase of every store.
pub const PHASES_TABLE: &str = "Every phase";
/// The title of the growth-by-group table.
pub const GROUPS_TABLE: &str = "Growing documents, group by group";
/// The title of the growth-by-size table.
pub const BANDS_TABLE: &str = "Growing documents, by document size";
/// The title of the fixed-size table.
pub const FIXED_TABLE: &str = "Fixed-size documents";

fn mib(bytes: Option<u64>) -> Option<f64> {
    bytes.map(|b| b as f64 / (1024.0 * 1024.0))
}

fn latency_metrics() -> Vec<Metric> {
    vec![
        Metric::new("mean", "ms", Better::Lower, 3),
        Metric::new("p50", "ms", Better::Lower, 3),
        Metric::new("p99", "ms", Better::Lower, 3),
    ]
}

fn phase_row(table: &mut Table, subject: &SubjectResult, study: &str, phase: &PhaseResult) {
    let f = &phase.figures;
    table.push(
        vec![
            subject.store.clone(),
            subject.via_text(),
            study.to_owned(),
            phase.phase.clone(),
        ],
        vec![
            Some(f.ops as f64),
            Some(f.mean_ms),
            Some(f.p50_ms),
            Some(f.p99_ms),
            Some(f.seconds),
            mib(phase.on_disk_bytes),
        ],
    );
}

/// Builds the report from the subjects' results (its wall time is left for the caller).
pub(crate) fn build(
    settings: &StorageSettings,
    results: &[SubjectResult],
    started_at: String,
) -> StudyReport {
    let mut sections = vec![phases_section(results)];
    if settings.parts.contains(&Part::Growing) {
        sections.push(growing_section(settings, results));
    }
    if settings.parts.contains(&Part::Fixed) && through_store(settings) {
        sections.push(fixed_section(settings, results));
    }
    StudyReport {
        study: "storage".to_owned(),
        title: "Brigade storage study".to_owned(),
        summary: summary(settings),
        started_at,
        wall_s: 0.0,
        setup: setup(settings, results),
        notes: notes(settings, results),
        sections,
    }
}

/// The report's one-line summary: which documents, on which stores, reached how.
fn summary(settings: &StorageSettings) -> String {
    format!(
        "{} on the {} store(s), {}.",
        match (
            settings.parts.contains(&Part::Growing),
            settings.parts.contains(&Part::Fixed) && through_store(settings)
        ) {
            (true, true) => "Growing and fixed-size documents",
            (true, false) => "Growing documents",
            (false, _) => "Fixed-size documents",
        },
        stores_text(settings),
        via_words(settings)
    )
}

/// The stores, comma-separated.
fn stores_text(settings: &StorageSettings) -> String {
    settings
        .stores
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The metrics of a table of whole phases: operations, latencies, wall time and size on disk.
fn phase_metrics() -> Vec<Metric> {
    let mut m = vec![Metric::new("operations", "", Better::Neither, 0)];
    m.extend(latency_metrics());
    m.push(Metric::new("wall", "s", Better::Lower, 1));
    m.push(Metric::new("on disk", "MiB", Better::Lower, 1));
    m
}

/// Every phase of every store in one table.
fn phases_section(results: &[SubjectResult]) -> Section {
    let mut phases = Table::new(
        PHASES_TABLE,
        &["store", "via", "study", "phase"],
        phase_metrics(),
    );
    for subject in results {
        if let Some(g) = &subject.growing {
            phase_row(&mut phases, subject, "growing", &g.create);
            phase_row(&mut phases, subject, "growing", &g.grow);
        }
        if let Some(f) = &subject.fixed {
            for p in &f.phases {
                phase_row(&mut phases, subject, "fixed", p);
            }
        }
    }
    Section {
        title: "Every phase".to_owned(),
        text: vec![
            "Mean, p50 and p99 are per operation: a create is one insert, a read one get, \
             `read + grow` one read and one growth of the same document, `read + rewrite` one \
             read and one same-size rewrite. Wall is the phase's wall-clock time, the \
             study's checks included; on disk is after the phase."
                .to_owned(),
        ],
        tables: vec![phases],
        charts: Vec::new(),
    }
}

/// The growing documents: by group, by document size, and their charts.
fn growing_section(settings: &StorageSettings, results: &[SubjectResult]) -> Section {
    let c = &settings.counts;
    Section {
        title: "Growing documents".to_owned(),
        text: vec![format!(
            "{} documents of {} bytes are created; then {} times a random one (the same \
             sequence for every store, seed {}) is read and grown by {} bytes, reported per \
             {} operations and by the size of the document read. Data is the documents' \
             payload at the group's end; on disk what the store's files take then.",
            c.growing_docs, c.unit_bytes, c.growth_ops, settings.seed, c.unit_bytes, c.group_ops
        )],
        tables: vec![groups_table(results), bands_table(results)],
        charts: growing_charts(settings, results),
    }
}

/// The growth group by group: latencies, the document and data sizes, and the size on disk.
fn groups_table(results: &[SubjectResult]) -> Table {
    let mut groups = Table::new(GROUPS_TABLE, &["store", "via", "operations"], {
        let mut m = latency_metrics();
        m.push(Metric::new("read", "ms", Better::Lower, 3));
        m.push(Metric::new("grow", "ms", Better::Lower, 3));
        m.push(Metric::new("document", "KiB", Better::Neither, 1));
        m.push(Metric::new("data", "MiB", Better::Neither, 1));
        m.push(Metric::new("on disk", "MiB", Better::Lower, 1));
        m
    });
    for subject in results {
        let Some(g) = &subject.growing else { continue };
        for group in &g.groups {
            let f = &group.figures;
            groups.push(
                vec![
                    subject.store.clone(),
                    subject.via_text(),
                    format!("{}–{}", group.first_op, group.last_op),
                ],
                vec![
                    Some(f.mean_ms),
                    Some(f.p50_ms),
                    Some(f.p99_ms),
                    Some(group.read_mean_ms),
                    Some(group.grow_mean_ms),
                    Some(group.mean_doc_kib),
                    group.data_mib,
                    mib(group.on_disk_bytes),
                ],
            );
        }
    }
    groups
}

/// The growth by the size of the document read.
fn bands_table(results: &[SubjectResult]) -> Table {
    let mut bands = Table::new(BANDS_TABLE, &["store", "via", "document size"], {
        let mut m = vec![
            Metric::new("operations", "", Better::Neither, 0),
            Metric::new("document", "KiB", Better::Neither, 1),
        ];
        m.extend(latency_metrics());
        m
    });
    for subject in results {
        let Some(g) = &subject.growing else { continue };
        for band in &g.bands {
            let f = &band.figures;
            bands.push(
                vec![
                    subject.store.clone(),
                    subject.via_text(),
                    band.label.clone(),
                ],
                vec![
                    Some(f.ops as f64),
                    Some(band.mean_doc_kib),
                    Some(f.mean_ms),
                    Some(f.p50_ms),
                    Some(f.p99_ms),
                ],
            );
        }
    }
    bands
}

/// ms per operation against document size and group by group, and bytes on disk against
/// operations (one line per store).
fn growing_charts(settings: &StorageSettings, results: &[SubjectResult]) -> Vec<Chart> {
    let mut by_size = Vec::new();
    let mut by_group = Vec::new();
    for subject in results {
        let Some(g) = &subject.growing else { continue };
        by_size.push(Series {
            name: subject.label(),
            points: g
                .bands
                .iter()
                .map(|b| (b.mean_doc_kib, b.figures.mean_ms))
                .collect(),
        });
        by_group.push(Series {
            name: subject.label(),
            points: g
                .groups
                .iter()
                .map(|gr| (gr.last_op as f64, gr.figures.mean_ms))
                .collect(),
        });
    }
    vec![
        Chart {
            title: "ms per operation against document size".to_owned(),
            x: Axis::linear("document size, KiB"),
            y: Axis::log("mean ms per read + grow"),
            series: by_size,
        },
        Chart {
            title: "ms per operation, group by group".to_owned(),
            x: Axis::linear("growth operations"),
            y: Axis::log("mean ms per read + grow"),
            series: by_group,
        },
        Chart {
            title: "on-disk size against operations".to_owned(),
            x: Axis::linear("growth operations"),
            y: Axis::linear("MiB"),
            series: on_disk_series(settings, results),
        },
    ]
}

/// Each store's size on disk against operations, and the documents' payload beside them (from
/// the first store that knows it at every group).
fn on_disk_series(settings: &StorageSettings, results: &[SubjectResult]) -> Vec<Series> {
    let c = &settings.counts;
    let mut on_disk = Vec::new();
    let mut payload: Option<Series> = None;
    for subject in results {
        let Some(g) = &subject.growing else { continue };
        let disk: Vec<(f64, f64)> = std::iter::once((0.0, mib(g.create.on_disk_bytes)))
            .chain(
                g.groups
                    .iter()
                    .map(|gr| (gr.last_op as f64, mib(gr.on_disk_bytes))),
            )
            .filter_map(|(x, y)| Some((x, y?)))
            .collect();
        if !disk.is_empty() {
            on_disk.push(Series {
                name: subject.label(),
                points: disk,
            });
        }
        if payload.is_none() && g.groups.iter().all(|gr| gr.data_mib.is_some()) {
            let start = c.growing_docs as f64 * c.unit_bytes as f64 / (1024.0 * 1024.0);
            payload = Some(Series {
                name: "the documents' payload".to_owned(),
                points: std::iter::once((0.0, start))
                    .chain(
                        g.groups
                            .iter()
                            .filter_map(|gr| Some((gr.last_op as f64, gr.data_mib?))),
                    )
                    .collect(),
            });
        }
    }
    on_disk.extend(payload);
    on_disk
}

/// The fixed-size documents' phases, through the store only.
fn fixed_section(settings: &StorageSettings, results: &[SubjectResult]) -> Section {
    let c = &settings.counts;
    let mut fixed = Table::new(FIXED_TABLE, &["store", "via", "phase"], phase_metrics());
    for subject in results {
        let Some(f) = &subject.fixed else { continue };
        for p in &f.phases {
            let fig = &p.figures;
            fixed.push(
                vec![subject.store.clone(), subject.via_text(), p.phase.clone()],
                vec![
                    Some(fig.ops as f64),
                    Some(fig.mean_ms),
                    Some(fig.p50_ms),
                    Some(fig.p99_ms),
                    Some(fig.seconds),
                    mib(p.on_disk_bytes),
                ],
            );
        }
    }
    Section {
        title: "Fixed-size documents".to_owned(),
        text: vec![format!(
            "{} documents of {} bytes are created; then {} random reads; then {} random \
             read + same-size rewrite pairs. Through the store only.",
            c.fixed_docs, c.fixed_bytes, c.fixed_reads, c.fixed_rewrites
        )],
        tables: vec![fixed],
        charts: Vec::new(),
    }
}

fn through_store(settings: &StorageSettings) -> bool {
    settings.via.contains(&Via::Store)
}

fn via_words(settings: &StorageSettings) -> String {
    let runtime = settings.http.as_ref().map_or("", |h| h.runtime.as_str());
    settings
        .via
        .iter()
        .map(|v| match v {
            Via::Store => "through the Store trait".to_owned(),
            Via::Http => format!("through HTTP ({runtime})"),
        })
        .collect::<Vec<_>>()
        .join(" and ")
}

/// The setup section: machine, versions, stores, how each was reached, counts and data.
fn setup(settings: &StorageSettings, results: &[SubjectResult]) -> Setup {
    let mut out = Setup {
        machine: brigade_load::machine::describe(),
        versions: versions(settings),
        lines: Vec::new(),
        command_line: settings.command_line.clone(),
    };
    out.line("Stores", stores_text(settings));
    out.line("Via", via_words(settings));
    if let Some(http) = settings
        .http
        .as_ref()
        .filter(|_| settings.via.contains(&Via::Http))
    {
        out.line(
            "HTTP growth",
            format!("{} — {}", http.growth.label(), http.growth.description()),
        );
    }
    for subject in results {
        if let Some(server) = &subject.server {
            out.line(format!("Server ({})", subject.label()), server.clone());
        }
    }
    out.line("Counts", counts_text(settings));
    out.line(
        "Cache",
        format!(
            "embedded: redb's cache capped at {} MiB (--cache-mib); memory: everything in RAM; \
             mongo: the server's own cache, which a client cannot set (WiredTiger's cache size is \
             a server option; FerretDB on SQLite has SQLite's page cache); via HTTP: the served \
             store's default cache (`brigade serve` has no cache option)",
            settings.cache_mib
        ),
    );
    out.line(
        "Threads",
        "one client, one operation at a time; through the store: a tokio runtime with one worker \
         thread (the embedded store's calls on its blocking pool); through HTTP: the server pinned \
         to the server CPUs with --workers = their number, the client pinned to the others",
    );
    out.line(
        "Seed",
        format!(
            "{}: every store reads and grows the same documents in the same order",
            settings.seed
        ),
    );
    out.line("Data", data_text(settings));
    out
}

/// This build's versions, and the served binary's when the study goes through HTTP.
fn versions(settings: &StorageSettings) -> Versions {
    let mut versions = build_versions();
    if let Some(http) = &settings.http {
        if settings.via.contains(&Via::Http) {
            let binary = http.launch.binary();
            versions.server_binary = binary.display().to_string();
            versions.server_binary_version = brigade_meter::servers::binary_version(binary);
        }
    }
    versions
}

/// The setup's counts line: documents, sizes and operations of both parts.
fn counts_text(settings: &StorageSettings) -> String {
    let c = &settings.counts;
    format!(
        "growing: {} documents of {} bytes, {} read + grow operations in groups of {}; fixed: \
         {} documents of {} bytes, {} reads, {} read + rewrite pairs (--scale {}{})",
        c.growing_docs,
        c.unit_bytes,
        c.growth_ops,
        c.group_ops,
        c.fixed_docs,
        c.fixed_bytes,
        c.fixed_reads,
        c.fixed_rewrites,
        settings.scale,
        if settings.quick { ", --quick" } else { "" }
    )
}

/// The setup's data line: where each store's data lived and that it was removed.
fn data_text(settings: &StorageSettings) -> String {
    let mut data = vec!["each phase on a fresh store".to_owned()];
    if settings.stores.contains(&StoreKind::Embedded) {
        data.push(format!(
            "embedded in a new folder under {} (removed after)",
            settings.data_dir.display()
        ));
    }
    if settings.stores.contains(&StoreKind::Mongo) && through_store(settings) {
        data.push(format!(
            "mongo in a new database brigade_study_{}_<phase> (dropped after)",
            settings.run_token
        ));
    }
    data.join("; ")
}

fn notes(settings: &StorageSettings, results: &[SubjectResult]) -> Vec<String> {
    let mut notes = vec![
        "Latencies of single operations from one client, one at a time: how a store behaves as \
         its documents and files grow, not its throughput under concurrency."
            .to_owned(),
    ];
    let checked: u64 = results
        .iter()
        .map(|r| {
            r.growing.as_ref().map_or(0, |g| g.checked) + r.fixed.as_ref().map_or(0, |f| f.checked)
        })
        .sum();
    notes.push(format!(
        "Every document read back had the size that was written ({checked} reads and answers \
         checked; a mismatch would have stopped the study)."
    ));
    if settings.quick {
        notes.push(
            "--quick: counts far too small for the data to outgrow any cache; this run shows the \
             study works, not how the stores behave."
                .to_owned(),
        );
    }
    if through_store(settings) && settings.stores.contains(&StoreKind::Embedded) {
        let mut reached = Vec::new();
        if let Some(most) = results
            .iter()
            .filter_map(|r| r.growing.as_ref())
            .flat_map(|g| g.groups.iter().filter_map(|gr| gr.data_mib))
            .reduce(f64::max)
        {
            reached.push(format!(
                "the growing documents' payload reached {most:.1} MiB"
            ));
        }
        if settings.parts.contains(&Part::Fixed) {
            let c = &settings.counts;
            reached.push(format!(
                "the fixed documents' was {:.1} MiB",
                c.fixed_docs as f64 * c.fixed_bytes as f64 / (1024.0 * 1024.0)
            ));
        }
        notes.push(format!(
            "The embedded store's cache was capped at {} MiB; {}.",
            settings.cache_mib,
            reached.join(", ")
        ));
    }
    if settings.stores.contains(&StoreKind::Memory) {
        notes.push("The memory store keeps nothing on disk: its on-disk figures are —.".to_owned());
    }
    if settings.stores.contains(&StoreKind::Mongo) {
        notes.push(
            "MongoDB's cache cannot be set from a client: the mongo figures outgrow its cache \
             only if the server was started with a small one (mongod --wiredTigerCacheSizeGB); \
             FerretDB on SQLite caches through SQLite. Its on-disk size is what the server \
             reports, — where it reports nothing."
                .to_owned(),
        );
        if settings.via.contains(&Via::Http) {
            notes.push(
                "Through HTTP, mongo is the services' own databases (brigade_<service>), as with \
                 `brigade compare`; the study does not drop them."
                    .to_owned(),
            );
        }
    }
    notes
}
