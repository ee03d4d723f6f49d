//! The study itself, `--quick`, through the store on memory and embedded (and mongo when
//! `MONGODB_URI` is set and the `mongo` feature is on): its report has every store × phase, the
//! counts asked for, documents growing group by group, on-disk sizes where the store has them, and
//! the three files agree.

use clap::Parser;

use super::cli::StorageArgs;
use super::plan::Counts;
use super::report::{BANDS_TABLE, FIXED_TABLE, GROUPS_TABLE, PHASES_TABLE};
use crate::Registry;
use brigade_report::study::StudyReport;

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    args: StorageArgs,
}

#[test]
fn the_quick_study_reports_every_store_and_phase_with_the_counts_asked() {
    let out = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut stores = vec!["memory", "embedded"];
    let mongo = std::env::var("MONGODB_URI")
        .ok()
        .filter(|_| cfg!(feature = "mongo"));
    match &mongo {
        Some(_) => stores.push("mongo"),
        None => eprintln!(
            "SKIPPED the mongo store: set MONGODB_URI and enable the `mongo` feature to include it"
        ),
    }
    let stores_arg = stores.join(",");
    let cli = Cli::try_parse_from([
        "brigade-study-storage",
        "--quick",
        "--stores",
        &stores_arg,
        "--out",
        out.path().to_str().unwrap(),
        "--data-dir",
        data.path().to_str().unwrap(),
    ])
    .unwrap();
    let settings = cli.args.settings(&Registry::default()).unwrap();
    assert_eq!(settings.counts, Counts::QUICK);
    let report = super::run(&settings).unwrap();
    let c = Counts::QUICK;

    // The three files, and the JSON reads back whole.
    let back: StudyReport = brigade_report::json::read_as(&out.path().join("report.json")).unwrap();
    assert_eq!(back, report);
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    for title in [PHASES_TABLE, GROUPS_TABLE, BANDS_TABLE, FIXED_TABLE] {
        assert!(md.contains(&format!("### {title}")), "{title} in report.md");
        assert!(
            html.contains(&format!("<h3>{title}</h3>")),
            "{title} in report.html"
        );
    }
    assert_eq!(html.matches("<svg").count(), 3, "three charts");
    if mongo.is_some() {
        // The database server is named as it names itself (FerretDB adds its own version).
        assert!(md.contains("- Server (mongo): "), "{md}");
        assert!(md.contains("(buildInfo)"), "{md}");
    }
    assert!(html.contains("ms per operation against document size"));
    assert!(
        std::fs::read_dir(data.path()).unwrap().next().is_none(),
        "the embedded stores' folders are removed"
    );

    let phases = report.table(PHASES_TABLE).unwrap();
    let groups = report.table(GROUPS_TABLE).unwrap();
    let bands = report.table(BANDS_TABLE).unwrap();
    for store in &stores {
        let at = |study: &'static str, phase: &'static str| {
            [
                ("store", *store),
                ("via", "store"),
                ("study", study),
                ("phase", phase),
            ]
        };
        for (study, phase, count) in [
            ("growing", "create", c.growing_docs),
            ("growing", "read + grow", c.growth_ops),
            ("fixed", "create", c.fixed_docs),
            ("fixed", "read", c.fixed_reads),
            ("fixed", "read + rewrite", c.fixed_rewrites),
        ] {
            assert_eq!(
                phases.value(&at(study, phase), "operations"),
                Some(count as f64),
                "{store} {study} {phase}"
            );
            let mean = phases.value(&at(study, phase), "mean").unwrap();
            assert!(mean > 0.0, "{store} {study} {phase}: mean {mean}");
            let disk = phases.value(&at(study, phase), "on disk");
            match *store {
                "memory" => assert_eq!(disk, None, "the memory store has no files"),
                "embedded" => assert!(
                    disk.is_some_and(|d| d > 0.0),
                    "{store} {study} {phase}: on disk {disk:?}"
                ),
                _ => {}
            }
        }

        // The growth: every group of the size asked, the data growing by exactly the units
        // written, the documents read growing with it.
        let mine = groups.rows_at(&[("store", store)]);
        assert_eq!(mine.len() as u64, c.groups(), "{store}");
        let data = groups.metric("data").unwrap();
        let doc = groups.metric("document").unwrap();
        let disk = groups.metric("on disk").unwrap();
        for (k, row) in mine.iter().enumerate() {
            let first = k as u64 * c.group_ops + 1;
            assert_eq!(
                row.dimensions[2],
                format!("{first}–{}", first + c.group_ops - 1)
            );
            let units = c.growing_docs + (k as u64 + 1) * c.group_ops;
            let want = units as f64 * c.unit_bytes as f64 / (1024.0 * 1024.0);
            assert!(
                (row.values[data].unwrap() - want).abs() < 1e-9,
                "{store} group {k}"
            );
            if *store == "embedded" {
                assert!(
                    row.values[disk].is_some_and(|d| d > 0.0),
                    "{store} group {k}"
                );
            }
        }
        let (first, last) = (
            mine[0].values[doc].unwrap(),
            mine[mine.len() - 1].values[doc].unwrap(),
        );
        assert!(
            last > first + 4.0,
            "{store}: documents read grew from {first} KiB to only {last} KiB"
        );
        let band_ops: f64 = bands
            .rows_at(&[("store", store)])
            .iter()
            .map(|r| r.values[0].unwrap())
            .sum();
        assert_eq!(
            band_ops, c.growth_ops as f64,
            "{store}: every operation in a band"
        );
    }
    // Every store did the same work: the same documents in the same bands.
    let shape = |store: &str| -> Vec<(String, f64)> {
        bands
            .rows_at(&[("store", store)])
            .iter()
            .map(|r| (r.dimensions[2].clone(), r.values[0].unwrap()))
            .collect()
    };
    assert_eq!(shape("memory"), shape("embedded"));

    let checked = stores.len() as u64 * (2 * c.growth_ops + c.fixed_reads + 2 * c.fixed_rewrites);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains(&format!("({checked} reads and answers checked"))),
        "{:?}",
        report.notes
    );
}
