//! The counts the docs state are the workspace's: docs/architecture.md's library crates, runtimes,
//! stores and routes (against the root manifest's members, the runtime registry, the store registry
//! and the restaurant's route tables), docs/embedding.md's line counts of the second user's
//! files, and docs/methodology.md's count of the calibration's experiments (against the defaults
//! of scripts/calibrate-verdicts.sh).

use std::path::Path;

/// The number docs/architecture.md puts before `what` in bold (`**9 library crates**`).
fn stated(what: &str) -> usize {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .unwrap();
    let marker = format!(" {what}**");
    let end = doc
        .find(&marker)
        .unwrap_or_else(|| panic!("docs/architecture.md states no count of {what}"));
    let start = doc[..end].rfind("**").unwrap() + 2;
    doc[start..end]
        .parse()
        .unwrap_or_else(|_| panic!("{what}: {:?} is not a number", &doc[start..end]))
}

#[test]
fn the_architecture_doc_counts_the_library_crates_of_the_workspace() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let libraries = crate::imports::workspace_members()
        .into_iter()
        // An example is a user of the kit, not one of its crates.
        .filter(|m| !m.starts_with("examples/"))
        .filter(|m| root.join(m).join("src/lib.rs").exists())
        .count();
    assert_eq!(stated("library crates"), libraries);
}

#[test]
fn the_architecture_doc_counts_every_runtime_and_store_of_the_registries() {
    assert_eq!(stated("runtimes"), brigade_runtimes::KNOWN.len());
    assert_eq!(stated("stores"), brigade_kit::store::StoreKind::KNOWN.len());
}

#[test]
fn the_architecture_doc_counts_the_restaurant_routes() {
    let routes: usize = brigade_restaurant::ServiceName::ALL
        .iter()
        .map(|service| service.routes().routes().len())
        .sum();
    assert_eq!(stated("routes"), routes);
}

#[test]
fn the_embedding_doc_counts_the_code_lines_of_the_second_user() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/embedding.md")).unwrap();
    let mut checked = 0;
    // Rows of its table: | `src/lib.rs` | 162 | what |, counted as the header says: non-blank
    // lines that are not comments.
    for row in doc.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (Some(file), Ok(stated)) = (
            cells[1].strip_prefix('`').and_then(|c| c.strip_suffix('`')),
            cells[2].parse::<usize>(),
        ) else {
            continue;
        };
        let path = root.join("examples/bookmarks").join(file);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let counted = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("//"))
            .count();
        assert_eq!(
            counted, stated,
            "docs/embedding.md says {file} has {stated} lines"
        );
        checked += 1;
    }
    assert!(
        checked >= 6,
        "only {checked} rows of docs/embedding.md's file table were read"
    );
}

#[test]
fn the_reliability_doc_states_the_fuzz_ledgers_sums() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ledger = std::fs::read_to_string(root.join("fuzz/ledger.tsv")).unwrap();
    // Per target: executions, seconds and crashes summed over its runs.
    let mut sums = std::collections::BTreeMap::<String, [u64; 3]>::new();
    let mut lines = ledger.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (target, executions, seconds, crashes) = (
        column("target"),
        column("executions"),
        column("seconds"),
        column("crashes"),
    );
    for line in lines {
        let cells: Vec<&str> = line.split('\t').collect();
        let sum = sums.entry(cells[target].to_owned()).or_default();
        for (i, c) in [executions, seconds, crashes].into_iter().enumerate() {
            sum[i] += cells[c].parse::<u64>().unwrap();
        }
    }
    assert!(!sums.is_empty(), "the ledger has runs");
    let doc = std::fs::read_to_string(root.join("docs/reliability.md")).unwrap();
    let table = doc
        .split("| target | executions | seconds | crashes |")
        .nth(1)
        .expect("docs/reliability.md states the ledger's sums");
    // Rows: | `request_axum` | 10,000,000 | 1,183 | 0 | ...
    let mut stated = std::collections::BTreeMap::new();
    for row in table.lines().skip(1) {
        if !row.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let Some(name) = cells[1].strip_prefix('`').and_then(|c| c.strip_suffix('`')) else {
            continue; // the header's rule
        };
        let number = |i: usize| cells[i].replace(',', "").parse::<u64>().unwrap();
        stated.insert(name.to_owned(), [number(2), number(3), number(4)]);
    }
    assert_eq!(
        stated, sums,
        "docs/reliability.md §4 against fuzz/ledger.tsv"
    );
}

/// The default of `name` in scripts/calibrate-verdicts.sh (`N_AA=${N_AA:-60}`).
fn calibration_default(script: &str, name: &str) -> usize {
    let marker = format!("{name}=${{{name}:-");
    let start = script
        .find(&marker)
        .unwrap_or_else(|| panic!("calibrate-verdicts.sh sets no default {name}"))
        + marker.len();
    let end = start + script[start..].find('}').unwrap();
    script[start..end].parse().unwrap()
}

#[test]
fn the_methodology_doc_counts_the_calibrations_experiments() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = std::fs::read_to_string(root.join("scripts/calibrate-verdicts.sh")).unwrap();
    let doc = std::fs::read_to_string(root.join("docs/methodology.md")).unwrap();
    let doc = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let [aa, h5, h1, copies, scenario] =
        ["N_AA", "N5", "N1", "N7", "N_SCEN"].map(|name| calibration_default(&script, name));
    for stated in [
        format!("{aa} A/A (hyper against"),
        format!("{h5} with a handicap worth about 5%"),
        format!("{h1} with one worth about 1%"),
        format!("{copies} with as many copies of hyper"),
        format!("{scenario} default runs of eight copies"),
        // The scenario runs are two kinds (copies, and the planted ~3%), each N_SCEN times.
        format!("all {} experiments", aa + h5 + h1 + copies + 2 * scenario),
    ] {
        assert!(
            doc.contains(&stated),
            "docs/methodology.md does not say {stated:?}"
        );
    }
}
