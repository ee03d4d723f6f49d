//! The structural claims of docs/architecture.md and docs/embedding.md are the workspace's, the way
//! `doc_counts` holds the counts: every crate's workspace dependencies as the architecture's table
//! states them (so "the report depends on nothing that measures" is read from the manifests, not
//! believed), the pipeline's direction inside `brigade-compare` (measuring never calls the judge,
//! the judge reaches back into no earlier phase), `run`'s length as stated, where the house rules
//! run and where a 404 or 405 comes from on the request path, and one import path per item: no
//! crate `pub use`s another workspace crate's items but the facades embedding.md declares.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(root().join(relative)).unwrap_or_else(|err| panic!("{relative}: {err}"))
}

/// Every workspace member's package name and folder (the second user's too).
fn packages() -> BTreeMap<String, String> {
    crate::imports::workspace_members()
        .into_iter()
        .map(|folder| {
            let manifest: toml::Value =
                toml::from_str(&read(&format!("{folder}/Cargo.toml"))).unwrap();
            let name = manifest["package"]["name"].as_str().unwrap().to_owned();
            (name, folder)
        })
        .collect()
}

/// The workspace crates `folder`'s manifest depends on (normal dependencies only).
fn workspace_dependencies(folder: &str, workspace: &BTreeMap<String, String>) -> BTreeSet<String> {
    let manifest: toml::Value = toml::from_str(&read(&format!("{folder}/Cargo.toml"))).unwrap();
    manifest
        .get("dependencies")
        .and_then(toml::Value::as_table)
        .map(|deps| {
            deps.keys()
                .filter(|name| workspace.contains_key(*name))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The table under "Who depends on whom" in docs/architecture.md: crate → its workspace
/// dependencies (`—` for none).
fn stated_dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let doc = read("docs/architecture.md");
    let start = doc
        .find("## Who depends on whom")
        .expect("docs/architecture.md has a \"Who depends on whom\" section");
    doc[start..]
        .lines()
        .skip_while(|line| !line.starts_with("| crate"))
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            let deps = cells[1]
                .split(',')
                .map(|d| d.trim().trim_matches('`').to_owned())
                .filter(|d| !d.is_empty() && d != "—")
                .collect();
            (cells[0].trim_matches('`').to_owned(), deps)
        })
        .collect()
}

#[test]
fn the_architecture_doc_states_every_crates_workspace_dependencies() {
    let workspace = packages();
    let stated = stated_dependencies();
    let actual: BTreeMap<String, BTreeSet<String>> = workspace
        .iter()
        .map(|(name, folder)| (name.clone(), workspace_dependencies(folder, &workspace)))
        .collect();
    assert_eq!(
        stated, actual,
        "docs/architecture.md's \"Who depends on whom\" table against the manifests"
    );
}

/// Every workspace crate `name` reaches through its normal dependencies, itself left out.
fn reached(name: &str, workspace: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut next = vec![name.to_owned()];
    while let Some(crate_name) = next.pop() {
        for dep in workspace_dependencies(&workspace[&crate_name], workspace) {
            if seen.insert(dep.clone()) {
                next.push(dep);
            }
        }
    }
    seen
}

#[test]
fn the_report_crate_reaches_no_crate_that_measures_or_judges() {
    let workspace = packages();
    let reached = reached("brigade-report", &workspace);
    // The generator and its clients, the meter, the comparison (which judges) and the studies:
    // not even through another crate. What the report renders comes from the plain records, the
    // pure statistics and the SLO search's records (a crate that runs nothing).
    for measures in [
        "brigade-load",
        "brigade-clients",
        "brigade-meter",
        "brigade-compare",
        "brigade-studies",
    ] {
        assert!(
            !reached.contains(measures),
            "brigade-report reaches {measures} (it reaches {reached:?})"
        );
    }
    assert!(
        reached.contains("brigade-records"),
        "the finder follows the manifests: {reached:?}"
    );
}

/// Every `.rs` file under `dir`, with its text less the in-file test module and comments.
fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let code = text.split("\n#[cfg(test)]").next().unwrap_or_default();
                let code: String = code
                    .lines()
                    .filter(|l| !l.trim_start().starts_with("//"))
                    .collect::<Vec<_>>()
                    .join("\n");
                out.push((path, code));
            }
        }
    }
    out.sort();
    out
}

/// The files of `brigade-compare` under `modules` (a file `x.rs` or a folder `x/`) that name any
/// of `forbidden` as `crate::<module>`.
fn reaching(modules: &[&str], forbidden: &[&str]) -> Vec<String> {
    let src = root().join("loadtests/compare/src");
    let mine = |path: &Path| {
        let rel = path.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        modules.contains(&first.trim_end_matches(".rs"))
    };
    sources(&src)
        .into_iter()
        .filter(|(path, _)| mine(path))
        .flat_map(|(path, code)| {
            forbidden
                .iter()
                .filter(|m| {
                    code.contains(&format!("crate::{m}::"))
                        || code.contains(&format!("crate::{m};"))
                })
                .map(|m| format!("{} names crate::{m}", path.display()))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn compares_pipeline_runs_one_way() {
    // The phases as docs/architecture.md draws them.
    let plan = ["plan", "settings", "cli"];
    let measure = [
        "state",
        "measure",
        "side",
        "capacity",
        "external",
        "protocols",
        "stores",
    ];
    let judge = ["judge", "baseline"];
    let doc = read("docs/architecture.md");
    assert!(
        doc.contains("measuring never calls the judge"),
        "docs/architecture.md no longer states the pipeline's direction this test checks"
    );
    let back = reaching(&measure, &judge);
    assert!(back.is_empty(), "measuring calls the judge: {back:?}");
    let mut earlier = plan.to_vec();
    earlier.extend(
        measure
            .iter()
            .filter(|m| !["protocols", "stores"].contains(m)),
    );
    earlier.push("run");
    let back = reaching(&judge, &earlier);
    assert!(back.is_empty(), "the judge reaches back: {back:?}");
}

#[test]
fn run_is_as_long_as_the_architecture_doc_says() {
    let doc = read("docs/architecture.md");
    let marker = "`brigade_compare::run` is that list (";
    let at = doc
        .find(marker)
        .expect("docs/architecture.md states run's length")
        + marker.len();
    let stated: usize = doc[at..].split(' ').next().unwrap().parse().unwrap();
    let code = read("loadtests/compare/src/run.rs");
    let start = code.find("pub fn run(").unwrap();
    let end = start + code[start..].find("\n}\n").unwrap() + 2;
    assert_eq!(code[start..end].lines().count(), stated, "run's lines");
}

/// The crates docs/embedding.md declares as facades (the only crates that re-export another
/// workspace crate's items): the names in backticks on the line `Facades: ...`, before its first
/// parenthesis.
fn declared_facades() -> BTreeSet<String> {
    let doc = read("docs/embedding.md");
    let line = doc
        .lines()
        .find(|l| l.starts_with("Facades:"))
        .expect("docs/embedding.md declares its facades on a `Facades:` line");
    let names = line["Facades:".len()..]
        .split('(')
        .next()
        .unwrap_or_default();
    names
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// Every `pub use` of another workspace crate's items in the members' sources, as
/// `(package, file, line)`.
fn cross_crate_reexports() -> Vec<(String, String, String)> {
    let workspace = packages();
    let idents: BTreeMap<String, String> = workspace
        .keys()
        .map(|name| (name.replace('-', "_"), name.clone()))
        .collect();
    let mut out = Vec::new();
    for (name, folder) in &workspace {
        for (path, code) in sources(&root().join(folder).join("src")) {
            for line in code.lines().map(str::trim) {
                let Some(rest) = line.strip_prefix("pub use ") else {
                    continue;
                };
                let first = rest
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                    .next();
                if let Some(other) = first.and_then(|f| idents.get(f)) {
                    if other != name {
                        let file = path.strip_prefix(root()).unwrap().display().to_string();
                        out.push((name.clone(), file, line.to_owned()));
                    }
                }
            }
        }
    }
    out
}

#[test]
fn no_crate_re_exports_another_workspace_crate_but_the_declared_facades() {
    let facades = declared_facades();
    let workspace = packages();
    for facade in &facades {
        assert!(
            workspace.contains_key(facade),
            "{facade} is not a workspace crate"
        );
    }
    let leaks: Vec<_> = cross_crate_reexports()
        .into_iter()
        .filter(|(name, _, _)| !facades.contains(name))
        .collect();
    assert!(
        leaks.is_empty(),
        "re-exports of another workspace crate outside the facades {facades:?}: {leaks:#?}"
    );
}

#[test]
fn the_re_export_finder_sees_a_re_export() {
    // Its own check: the facades themselves re-export, so the finder must see them.
    let facades = declared_facades();
    assert!(
        cross_crate_reexports()
            .iter()
            .any(|(name, _, _)| facades.contains(name)),
        "no re-export found even in the declared facades {facades:?}"
    );
}

/// The files of `runtimes/src` whose code (comments left out) contains `needle`, relative to it.
fn runtime_files_with(needle: &str) -> BTreeSet<String> {
    let src = root().join("runtimes/src");
    sources(&src)
        .into_iter()
        .filter(|(_, code)| code.contains(needle))
        .map(|(path, _)| path.strip_prefix(&src).unwrap().display().to_string())
        .collect()
}

#[test]
fn the_house_rules_run_where_the_architecture_doc_says() {
    let set = |files: &[&str]| {
        files
            .iter()
            .map(|f| (*f).to_owned())
            .collect::<BTreeSet<_>>()
    };
    // The kit's rules are called from one module of the runtimes: house.rs, its function for the
    // `http` 1 runtimes and its macro for actix-web's and ntex's own types.
    assert_eq!(runtime_files_with("rules::admit("), set(&["house.rs"]));
    // The function: the hyper-based runtimes' shared guard and xitca-web's guard.
    assert_eq!(
        runtime_files_with("house::admit("),
        set(&["hyper_loop.rs", "xitca/app.rs"])
    );
    // The macro: actix-web and ntex.
    let mut macro_users = runtime_files_with("house_rules!(");
    macro_users.remove("house.rs");
    assert_eq!(macro_users, set(&["actix.rs", "ntex.rs"]));
    let doc = read("docs/architecture.md");
    for named in [
        "`runtimes/src/house.rs`, `admit`",
        "`hyper_loop.rs`",
        "`xitca/app.rs`",
        "the `house_rules!` macro",
    ] {
        assert!(
            doc.contains(named),
            "docs/architecture.md no longer says {named}"
        );
    }
}

#[test]
fn a_404_or_405_comes_from_one_place_in_the_kit() {
    // Every adapter's 404 and 405 hooks call the kit's `unmatched`; no adapter writes its own.
    let src = root().join("runtimes/src");
    let own_codes: Vec<String> = sources(&src)
        .into_iter()
        .filter(|(_, code)| {
            [
                "ErrorCode::NotFound",
                "ErrorCode::MethodNotAllowed",
                "ApiError::not_found(",
                "ApiError::method_not_allowed(",
            ]
            .iter()
            .any(|own| code.contains(own))
        })
        .map(|(path, _)| path.display().to_string())
        .collect();
    assert!(
        own_codes.is_empty(),
        "adapters answering 404/405 themselves: {own_codes:?}"
    );
    assert!(!runtime_files_with("unmatched(").is_empty());
    assert!(read("docs/architecture.md").contains("**the one place a 404 or 405 comes from**"));
}

/// The names `folder`'s sources make public: every `pub` item declared outside a test module
/// (not `pub(crate)`), and the names a `pub use` brings in (after `as` where renamed).
fn public_names(folder: &str) -> BTreeSet<String> {
    const KINDS: [&str; 8] = [
        "fn", "struct", "enum", "const", "static", "type", "trait", "mod",
    ];
    let mut names = BTreeSet::new();
    for (_, code) in sources(&root().join(folder).join("src")) {
        let lines: Vec<&str> = code.lines().map(str::trim).collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(item) = line.strip_prefix("pub ") else {
                continue;
            };
            let item = item.strip_prefix("async ").unwrap_or(item);
            let (kind, rest) = item.split_once(' ').unwrap_or((item, ""));
            if KINDS.contains(&kind) {
                let name = rest
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                    .next()
                    .unwrap_or_default();
                names.insert(name.to_owned());
            } else if kind == "use" {
                // The use tree to its `;`, over as many lines as it takes.
                let tree: String = std::iter::once(rest)
                    .chain(lines[i + 1..].iter().copied())
                    .collect::<Vec<_>>()
                    .join(" ");
                let tree = &tree[..tree.find(';').unwrap_or(tree.len())];
                let inner = tree.rsplit('{').next().unwrap_or_default();
                for leaf in inner.trim_end_matches('}').split(',') {
                    let leaf = leaf.rsplit(" as ").next().unwrap_or_default();
                    let leaf = leaf.rsplit("::").next().unwrap_or_default().trim();
                    if !leaf.is_empty() && leaf != "self" {
                        names.insert(leaf.to_owned());
                    }
                }
            }
        }
    }
    names
}

/// docs/embedding.md's "What is stable" bullet for `package`.
fn stable_bullet(package: &str) -> String {
    let doc = read("docs/embedding.md");
    let start = doc
        .find(&format!("- `{package}`:"))
        .unwrap_or_else(|| panic!("docs/embedding.md says what of {package} is stable"));
    let rest = &doc[start + 2..];
    let end = rest.find("\n- ").unwrap_or(rest.len());
    rest[..end].to_owned()
}

#[test]
fn compares_and_the_studies_public_items_are_what_the_embedding_doc_calls_stable() {
    for (package, folder) in [
        ("brigade-compare", "loadtests/compare"),
        ("brigade-studies", "loadtests/studies"),
    ] {
        let bullet = stable_bullet(package);
        let words: BTreeSet<&str> = bullet
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| !w.is_empty())
            .collect();
        let names = public_names(folder);
        // The tables' titles are one entry in the doc (`tables::*`): a study report's table names.
        let unlisted: Vec<&String> = names
            .iter()
            .filter(|n| !words.contains(n.as_str()))
            .filter(|n| !(n.ends_with("_TABLE") && bullet.contains("`tables::*`")))
            .collect();
        assert!(
            unlisted.is_empty(),
            "{package} makes public what docs/embedding.md does not call stable: {unlisted:?} \
             (make them pub(crate), or say they are stable)"
        );
        assert!(
            names.contains("run_compare") || names.contains("run_study"),
            "the finder sees the entry point: {names:?}"
        );
    }
}
