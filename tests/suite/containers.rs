//! The container setup's structure, checked without Docker: `docker-compose.yml` runs three services,
//! each on its own MongoDB with its own volume, every dependency waits for health, and the `RUNTIME`
//! argument travels from compose into the Dockerfile's cargo features.
//! The Kubernetes manifests (deploy/k8s) are checked the same way: their structure here, their
//! schema by scripts/k8s-validate.sh in CI.

use std::collections::BTreeSet;
use std::path::Path;

use serde_norway::Value;

const SERVICES: [&str; 3] = ["waiter", "tables", "kitchen"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn compose() -> Value {
    let text =
        std::fs::read_to_string(root().join("docker-compose.yml")).expect("docker-compose.yml");
    serde_norway::from_str(&text).expect("docker-compose.yml is YAML")
}

fn dockerfile() -> String {
    std::fs::read_to_string(root().join("Dockerfile")).expect("Dockerfile")
}

fn service<'a>(compose: &'a Value, name: &str) -> &'a Value {
    let s = &compose["services"][name];
    assert!(s.is_mapping(), "compose has no service {name}");
    s
}

fn strings(v: &Value) -> Vec<String> {
    v.as_sequence()
        .map(|s| {
            s.iter()
                .map(|x| x.as_str().expect("a string").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The service's environment as (name, value) pairs, from either the map or the list form.
fn env(service: &Value, key: &str) -> Option<String> {
    let e = &service["environment"];
    if let Some(m) = e.as_mapping() {
        return m.get(key).and_then(Value::as_str).map(str::to_string);
    }
    strings(e)
        .iter()
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")).map(str::to_string))
}

/// The host of a `mongodb://host:port/...` URI.
fn mongo_host(uri: &str) -> &str {
    let rest = uri.strip_prefix("mongodb://").expect("a mongodb:// URI");
    let hosts = rest.split(['/', '?']).next().unwrap();
    let host = hosts.rsplit('@').next().unwrap();
    host.split(':').next().unwrap()
}

/// Dockerfile instructions with continuation lines joined: (stage index, KEYWORD, arguments).
fn instructions(text: &str) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    let mut stage = 0;
    let mut pending = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if pending.is_empty() && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        if let Some(body) = trimmed.strip_suffix('\\') {
            pending.push_str(body);
            pending.push(' ');
            continue;
        }
        pending.push_str(trimmed);
        let full = std::mem::take(&mut pending);
        let (keyword, args) = full.split_once(char::is_whitespace).unwrap_or((&full, ""));
        let keyword = keyword.to_ascii_uppercase();
        if keyword == "FROM" {
            stage += 1;
        }
        out.push((stage, keyword, args.trim().to_string()));
    }
    out
}

#[test]
fn compose_runs_three_services_each_on_its_own_mongodb() {
    let c = compose();
    let mut databases = BTreeSet::new();
    let mut volumes = BTreeSet::new();
    for name in SERVICES {
        let s = service(&c, name);
        let uri = env(s, "MONGODB_URI").unwrap_or_else(|| panic!("{name} has no MONGODB_URI"));
        let host = mongo_host(&uri).to_string();
        assert_eq!(
            host,
            format!("{name}-db"),
            "{name} must use its own database service"
        );
        let cmd = strings(&s["command"]);
        assert!(
            cmd.windows(2).any(|w| w == ["--store", "mongo"]),
            "{name} runs --store mongo: {cmd:?}"
        );
        assert!(
            cmd.windows(2).any(|w| w == ["--service", name]),
            "{name} serves itself: {cmd:?}"
        );

        let db = service(&c, &host);
        let image = db["image"].as_str().unwrap_or_default();
        assert_eq!(image, "mongo:7", "{host} runs mongo:7");
        let mounts = strings(&db["volumes"]);
        let volume = mounts
            .iter()
            .find_map(|m| m.strip_suffix(":/data/db"))
            .unwrap_or_else(|| panic!("{host} keeps /data/db on a volume: {mounts:?}"))
            .to_string();
        assert!(
            c["volumes"]
                .as_mapping()
                .is_some_and(|v| v.contains_key(volume.as_str())),
            "{volume} is a named volume"
        );
        assert!(
            db["healthcheck"]["test"].is_sequence(),
            "{host} has a healthcheck"
        );
        let waits = &s["depends_on"][host.as_str()]["condition"];
        assert_eq!(
            waits.as_str(),
            Some("service_healthy"),
            "{name} waits for {host} to be healthy"
        );
        databases.insert(host);
        volumes.insert(volume);
    }
    assert_eq!(
        databases.len(),
        3,
        "three distinct databases: {databases:?}"
    );
    assert_eq!(volumes.len(), 3, "three distinct volumes: {volumes:?}");
}

#[test]
fn compose_waits_for_health_on_every_dependency() {
    let c = compose();
    let services = c["services"].as_mapping().expect("services");
    for (name, s) in services {
        let name = name.as_str().unwrap();
        let Some(deps) = s["depends_on"].as_mapping() else {
            assert!(
                s["depends_on"].is_null(),
                "{name}: depends_on in the long form, with conditions"
            );
            continue;
        };
        for (dep, how) in deps {
            let dep = dep.as_str().unwrap();
            assert_eq!(
                how["condition"].as_str(),
                Some("service_healthy"),
                "{name} → {dep}"
            );
            assert!(
                service(&c, dep)["healthcheck"]["test"].is_sequence(),
                "{name} waits for {dep}, which therefore needs a healthcheck"
            );
        }
    }
    // The service chain of DESIGN.md: tables asks the waiter, kitchen asks tables.
    assert!(service(&c, "tables")["depends_on"]["waiter"].is_mapping());
    assert!(service(&c, "kitchen")["depends_on"]["tables"].is_mapping());
    for (name, peer) in [
        ("tables", "waiter=http://waiter:8080"),
        ("kitchen", "tables=http://tables:8080"),
    ] {
        let env = &service(&c, name)["environment"];
        assert_eq!(
            env["BRIGADE_PEERS"].as_str(),
            Some(peer),
            "{name} reaches its peer through BRIGADE_PEERS: {env:?}"
        );
    }
}

#[test]
fn compose_builds_the_runtime_named_by_runtime() {
    let c = compose();
    for name in SERVICES.iter().copied().chain(["loadtest"]) {
        let s = service(&c, name);
        assert_eq!(
            s["build"]["context"].as_str(),
            Some("."),
            "{name} builds this repository"
        );
        assert_eq!(
            s["build"]["args"]["RUNTIME"].as_str(),
            Some("${RUNTIME:-axum}"),
            "{name} passes RUNTIME"
        );
        assert_eq!(
            s["image"].as_str(),
            Some("brigade:${RUNTIME:-axum}"),
            "{name} tags the image by runtime"
        );
    }
    for name in SERVICES {
        let test = strings(&service(&c, name)["healthcheck"]["test"]);
        assert_eq!(
            test[..3],
            ["CMD", "brigade", "probe"],
            "{name} probes itself (no curl in slim images)"
        );
        assert!(
            test[3].ends_with("/ready"),
            "{name} health is readiness: {test:?}"
        );
    }
}

#[test]
fn compose_loadtest_runs_under_the_load_profile_and_writes_to_a_mounted_folder() {
    let c = compose();
    let l = service(&c, "loadtest");
    assert_eq!(strings(&l["profiles"]), ["load"]);
    let mounts = strings(&l["volumes"]);
    assert!(
        mounts.iter().any(|m| m == "./results:/results"),
        "{mounts:?}"
    );
    let script = strings(&l["command"]).join("\n");
    assert!(
        script.contains("brigade load"),
        "runs Brigade's load generator"
    );
    assert!(
        script.contains("--json \"$$out/"),
        "writes JSON results under the mount"
    );
    assert!(script.contains("/results/"), "writes under /results");
    for name in SERVICES {
        assert!(
            script.contains(&format!("--target {name}=http://{name}:8080")),
            "targets {name} on the network"
        );
        assert_eq!(
            l["depends_on"][name]["condition"].as_str(),
            Some("service_healthy")
        );
    }
}

#[test]
fn dockerfile_is_multi_stage_and_runtime_reaches_the_cargo_features() {
    let text = dockerfile();
    let ins = instructions(&text);
    let stages = ins.iter().filter(|(_, k, _)| k == "FROM").count();
    assert!(stages >= 2, "multi-stage: {stages} stage(s)");
    let last = ins.iter().map(|(s, _, _)| *s).max().unwrap();

    // ARG RUNTIME=axum in the stage that runs cargo build, and the build uses it as features.
    let (build_stage, _, build) = ins
        .iter()
        .find(|(_, k, a)| k == "RUN" && a.contains("cargo build"))
        .expect("a RUN cargo build");
    assert!(
        build.contains("--release") && build.contains("--no-default-features"),
        "{build}"
    );
    assert!(
        build.contains("--features \"${RUNTIME},embedded,mongo\"")
            || build.contains("--features ${RUNTIME},embedded,mongo"),
        "RUNTIME becomes the features, with the stores: {build}"
    );
    assert!(
        ins.iter()
            .any(|(s, k, a)| s == build_stage && k == "ARG" && a == "RUNTIME=axum"),
        "ARG RUNTIME=axum in the build stage"
    );
    assert_ne!(
        *build_stage, last,
        "the binary is built in an earlier stage than the runtime image"
    );

    // Dependencies are built before the sources are copied: a cached layer.
    let cook = ins
        .iter()
        .position(|(s, k, a)| s == build_stage && k == "RUN" && a.contains("cargo chef cook"))
        .expect("a dependency-only build step (cargo chef cook)");
    let copy_all = ins
        .iter()
        .position(|(s, k, a)| s == build_stage && k == "COPY" && a == ". .")
        .expect("COPY . . in the build stage");
    assert!(
        cook < copy_all,
        "dependencies are cooked before the sources are copied"
    );
    assert!(
        ins[cook].2.contains("${RUNTIME},embedded,mongo"),
        "the cooked dependencies use the same features"
    );

    // The runtime image: slim, unprivileged, healthy by its own probe, brigade as the entrypoint.
    let from = ins.iter().rfind(|(_, k, _)| k == "FROM").unwrap();
    assert!(
        from.2.contains("RUNTIME_IMAGE") || from.2.contains("bookworm-slim"),
        "{}",
        from.2
    );
    assert!(
        text.contains("ARG RUNTIME_IMAGE=debian:bookworm-slim"),
        "a slim Debian runtime image"
    );
    let user = ins
        .iter()
        .rfind(|(s, k, _)| *s == last && k == "USER")
        .expect("USER in the runtime stage");
    let name = user.2.split(':').next().unwrap();
    assert!(
        name != "root" && name != "0",
        "runs as a non-root user: {}",
        user.2
    );
    let health = ins
        .iter()
        .find(|(s, k, _)| *s == last && k == "HEALTHCHECK")
        .expect("a HEALTHCHECK");
    assert!(
        health
            .2
            .contains(r#"CMD ["brigade", "probe", "http://127.0.0.1:8080/ready"]"#),
        "{}",
        health.2
    );
    let entry = ins
        .iter()
        .find(|(s, k, _)| *s == last && k == "ENTRYPOINT")
        .expect("an ENTRYPOINT");
    assert_eq!(entry.2, r#"["brigade"]"#);
}

#[test]
fn every_runtime_the_docs_offer_is_a_cargo_feature() {
    let manifest: toml::Table = std::fs::read_to_string(root().join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let features = manifest["features"].as_table().expect("[features]");
    let mut offered = brigade_runtimes::names();
    offered.extend(["embedded", "mongo"]);
    for f in offered {
        assert!(
            features.contains_key(f),
            "the Dockerfile's RUNTIME={f} needs a cargo feature {f}"
        );
    }
}

#[test]
fn dockerignore_keeps_build_outputs_and_data_out_of_the_context() {
    let text = std::fs::read_to_string(root().join(".dockerignore")).expect(".dockerignore");
    let lines: BTreeSet<&str> = text.lines().map(str::trim).collect();
    for must in ["target", ".git", "data", "results", ".ferretdb"] {
        assert!(lines.contains(must), ".dockerignore lacks {must}");
    }
}

/// Every document of the YAML files named, in order.
fn k8s_documents(files: &[&str]) -> Vec<Value> {
    use serde::Deserialize;
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(root().join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        for doc in serde_norway::Deserializer::from_str(&text) {
            out.push(Value::deserialize(doc).unwrap_or_else(|e| panic!("{f}: {e}")));
        }
    }
    out
}

/// The documents of every resource file kustomization `dir` lists.
fn k8s_kustomized(dir: &str) -> Vec<Value> {
    let k = &k8s_documents(&[&format!("{dir}/kustomization.yaml")])[0];
    let files: Vec<String> = strings(&k["resources"])
        .iter()
        .map(|r| format!("{dir}/{r}"))
        .collect();
    k8s_documents(&files.iter().map(String::as_str).collect::<Vec<_>>())
}

fn k8s_find<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"].as_str() == Some(kind) && d["metadata"]["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

/// A container's environment variable, from its `env` list.
fn k8s_env(container: &Value, key: &str) -> Option<String> {
    container["env"].as_sequence()?.iter().find_map(|e| {
        (e["name"].as_str() == Some(key)).then(|| e["value"].as_str().unwrap().to_string())
    })
}

#[test]
fn kubernetes_base_gives_each_service_probes_resources_its_own_mongodb_and_peers_by_service_name() {
    let docs = k8s_kustomized("deploy/k8s/base");
    let peers = [
        ("waiter", None),
        ("tables", Some("waiter")),
        ("kitchen", Some("tables")),
    ];
    for (name, peer) in peers {
        let deployment = k8s_find(&docs, "Deployment", name);
        let pod = &deployment["spec"]["template"];
        let selector = &deployment["spec"]["selector"]["matchLabels"];
        for (k, v) in selector.as_mapping().unwrap() {
            assert_eq!(
                &pod["metadata"]["labels"][k.as_str().unwrap()],
                v,
                "{name}'s selector"
            );
        }
        let c = &pod["spec"]["containers"][0];
        assert_eq!(
            c["readinessProbe"]["httpGet"]["path"].as_str(),
            Some("/ready"),
            "{name}"
        );
        assert_eq!(
            c["livenessProbe"]["httpGet"]["path"].as_str(),
            Some("/health"),
            "{name}"
        );
        for kind in ["requests", "limits"] {
            for what in ["cpu", "memory"] {
                assert!(
                    c["resources"][kind][what].as_str().is_some(),
                    "{name}: {kind}.{what}"
                );
            }
        }
        let args = strings(&c["args"]);
        assert!(
            args.windows(2).any(|w| w == ["--service", name]),
            "{name}: {args:?}"
        );
        assert!(
            args.windows(2).any(|w| w == ["--store", "mongo"]),
            "{name}: {args:?}"
        );
        // Its own MongoDB: a StatefulSet with a volume claim behind a Service of that name.
        let db = mongo_host(&k8s_env(c, "MONGODB_URI").expect("MONGODB_URI")).to_string();
        assert_eq!(db, format!("{name}-db"));
        let sts = k8s_find(&docs, "StatefulSet", &db);
        assert!(
            sts["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"]
                .as_str()
                .is_some()
        );
        k8s_find(&docs, "Service", &db);
        // Its Service, and its peer reached through the peer's Service name.
        let service = k8s_find(&docs, "Service", name);
        assert_eq!(
            &service["spec"]["selector"], selector,
            "{name}'s Service selects its pods"
        );
        match peer {
            Some(p) => {
                assert_eq!(
                    k8s_env(c, "BRIGADE_PEERS"),
                    Some(format!("{p}=http://{p}:8080"))
                );
                k8s_find(&docs, "Service", p);
            }
            None => assert_eq!(k8s_env(c, "BRIGADE_PEERS"), None),
        }
    }
    // Tables and kitchen scale out; the waiter does not.
    for name in ["tables", "kitchen"] {
        let hpa = k8s_find(&docs, "HorizontalPodAutoscaler", name);
        assert_eq!(hpa["spec"]["scaleTargetRef"]["name"].as_str(), Some(name));
        assert_eq!(
            hpa["spec"]["scaleTargetRef"]["kind"].as_str(),
            Some("Deployment")
        );
    }
    assert!(!docs
        .iter()
        .any(|d| d["kind"].as_str() == Some("HorizontalPodAutoscaler")
            && d["metadata"]["name"].as_str() == Some("waiter")));
}

#[test]
fn kubernetes_overlays_only_change_the_image_one_per_runtime() {
    let mut runtimes: Vec<String> = std::fs::read_dir(root().join("deploy/k8s/overlays"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    runtimes.sort();
    let mut registry = brigade_runtimes::names();
    registry.sort();
    assert_eq!(
        runtimes, registry,
        "one overlay per runtime of the registry: run scripts/k8s-overlays.sh"
    );
    for rt in &runtimes {
        let k = &k8s_documents(&[&format!("deploy/k8s/overlays/{rt}/kustomization.yaml")])[0];
        let keys: BTreeSet<&str> = k
            .as_mapping()
            .unwrap()
            .keys()
            .map(|k| k.as_str().unwrap())
            .collect();
        assert_eq!(
            keys,
            BTreeSet::from(["apiVersion", "kind", "resources", "images"]),
            "{rt}"
        );
        assert_eq!(strings(&k["resources"]), ["../../base"], "{rt}");
        assert_eq!(k["images"][0]["name"].as_str(), Some("brigade"), "{rt}");
        assert_eq!(k["images"][0]["newTag"].as_str(), Some(rt.as_str()), "{rt}");
    }
}

#[test]
fn kubernetes_load_runs_one_indexed_generator_per_shard_then_merges() {
    let dir = "deploy/k8s/load";
    let k = &k8s_documents(&[&format!("{dir}/kustomization.yaml")])[0];
    let literals = strings(&k["configMapGenerator"][0]["literals"]);
    let shards: u64 = literals
        .iter()
        .find_map(|l| l.strip_prefix("SHARDS="))
        .expect("SHARDS")
        .parse()
        .unwrap();
    let docs = k8s_kustomized(dir);
    let generators = k8s_find(&docs, "Job", "brigade-load-generators");
    assert_eq!(
        generators["spec"]["completionMode"].as_str(),
        Some("Indexed")
    );
    assert_eq!(generators["spec"]["completions"].as_u64(), Some(shards));
    assert_eq!(generators["spec"]["parallelism"].as_u64(), Some(shards));
    let script =
        strings(&generators["spec"]["template"]["spec"]["containers"][0]["args"]).join("\n");
    for flag in [
        "i=\"$JOB_COMPLETION_INDEX\"",
        "--shard \"$i/$SHARDS\"",
        "--start-at",
        "--fixtures",
        "--json",
        "--attempt",
    ] {
        assert!(script.contains(flag), "the generators run {flag}: {script}");
    }
    // A lost shard runs again once, after the lost pod has ended (its partial result written),
    // instead of failing the run (docs/scaling.md, "Faults").
    assert_eq!(generators["spec"]["backoffLimitPerIndex"].as_u64(), Some(1));
    assert_eq!(generators["spec"]["maxFailedIndexes"].as_u64(), Some(0));
    assert_eq!(
        generators["spec"]["podReplacementPolicy"].as_str(),
        Some("Failed")
    );
    assert!(
        script.contains("trap 'kill -TERM"),
        "SIGTERM reaches the generator: {script}"
    );
    let setup = k8s_find(&docs, "Job", "brigade-load-setup");
    let script = strings(&setup["spec"]["template"]["spec"]["containers"][0]["args"]).join("\n");
    assert!(script.contains("--setup-only --fixtures"), "{script}");
    let merge = k8s_find(&docs, "Job", "brigade-merge");
    let script = strings(&merge["spec"]["template"]["spec"]["containers"][0]["args"]).join("\n");
    assert!(script.contains("brigade merge"), "{script}");
    // One volume for all three steps.
    let claim = k8s_find(&docs, "PersistentVolumeClaim", "brigade-load-results");
    assert_eq!(strings(&claim["spec"]["accessModes"]), ["ReadWriteMany"]);
    for job in [setup, generators, merge] {
        let v = &job["spec"]["template"]["spec"]["volumes"][0];
        assert_eq!(
            v["persistentVolumeClaim"]["claimName"].as_str(),
            Some("brigade-load-results")
        );
    }
}

fn ferretdb_override() -> Value {
    let text = std::fs::read_to_string(root().join("docker-compose.ferretdb.yml"))
        .expect("docker-compose.ferretdb.yml");
    serde_norway::from_str(&text).expect("docker-compose.ferretdb.yml is YAML")
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_mapping()
        .map(|m| {
            m.keys()
                .map(|k| k.as_str().expect("a string key").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// CI's podman stack (scripts/containers.sh) runs the users' compose file with this override: it
/// may swap the databases' image, command and health check, and say so in the loadtest's report,
/// and nothing else.
#[test]
fn the_ferretdb_override_swaps_the_databases_and_nothing_else() {
    let base = compose();
    let over = ferretdb_override();
    let top: BTreeSet<String> = keys(&over)
        .into_iter()
        .filter(|k| !k.starts_with("x-"))
        .collect();
    assert_eq!(top, BTreeSet::from(["services".to_owned()]));
    let databases: BTreeSet<String> = SERVICES.iter().map(|s| format!("{s}-db")).collect();
    let mut overridden = databases.clone();
    overridden.insert("loadtest".to_owned());
    assert_eq!(keys(&over["services"]), overridden);
    let loadtest = &over["services"]["loadtest"];
    assert_eq!(keys(loadtest), BTreeSet::from(["environment".to_owned()]));
    assert_eq!(
        keys(&loadtest["environment"]),
        BTreeSet::from(["BRIGADE_STORE_WORDS".to_owned()])
    );
    let words = loadtest["environment"]["BRIGADE_STORE_WORDS"]
        .as_str()
        .unwrap();
    assert!(words.contains("FerretDB"), "{words}");
    for db in &databases {
        let s = &over["services"][db.as_str()];
        assert_eq!(
            keys(s),
            BTreeSet::from(["image", "command", "healthcheck"].map(str::to_owned)),
            "{db}"
        );
        assert!(s["image"].as_str().unwrap().contains("ferretdb"), "{db}");
        let command = strings(&s["command"]);
        // FerretDB listens on 127.0.0.1 unless told, and refuses mongod's cache flag.
        assert!(command.contains(&"--listen-addr=0.0.0.0:27017".to_owned()));
        assert!(command.iter().all(|c| !c.contains("wiredTiger")));
        // Its SQLite files go where the users' volume is mounted.
        let volume = strings(&service(&base, db)["volumes"]);
        assert!(
            volume.iter().any(|v| v.ends_with(":/data/db")),
            "{volume:?}"
        );
        assert!(command
            .iter()
            .any(|c| c.starts_with("--sqlite-url=file:/data/db/")));
        // mongosh's check is reset: the FerretDB image's own HEALTHCHECK takes its place.
        assert!(
            matches!(&s["healthcheck"], Value::Tagged(t) if t.tag == "reset"),
            "{db}: {:?}",
            s["healthcheck"]
        );
    }
    let image = std::fs::read_to_string(root().join("scripts/containers/ferretdb.Containerfile"))
        .expect("the FerretDB image's Containerfile");
    assert!(
        image.contains("HEALTHCHECK"),
        "the image brings its own check"
    );
}

/// Where no Rust image can be pulled, the binary may come from the host, but through the same
/// runtime stage (user, health check, entrypoint): only the stage the binary is copied from
/// changes, and RUNTIME picks which host build goes in.
#[test]
fn a_prebuilt_binary_enters_through_the_same_runtime_stage() {
    let text = dockerfile();
    let ins = instructions(&text);
    assert!(
        text.contains("ARG BUILDER=build"),
        "the cargo-chef build stays the default"
    );
    assert!(ins
        .iter()
        .any(|(_, k, a)| k == "FROM" && a == "${BUILDER} AS binary"));
    let last = ins.iter().map(|(s, _, _)| *s).max().unwrap();
    let copies: Vec<&String> = ins
        .iter()
        .filter(|(s, k, _)| *s == last && k == "COPY")
        .map(|(_, _, a)| a)
        .collect();
    assert_eq!(
        copies,
        ["--from=binary /src/target/release/brigade /usr/local/bin/brigade"]
    );
    // From the build context (a directory holding prebuilt/RUNTIME/brigade): no named context,
    // which Docker Engine 20.10's BuildKit cannot take.
    assert!(ins
        .iter()
        .any(|(_, k, a)| k == "COPY"
            && a == "prebuilt/${RUNTIME}/brigade /src/target/release/brigade"));
    // No `# syntax=` line: its frontend image would have to be pulled.
    assert!(
        !text
            .lines()
            .any(|l| l.trim_start().starts_with("# syntax=")),
        "the Dockerfile names a frontend image to pull"
    );
}

fn embedded_override() -> Value {
    let text = std::fs::read_to_string(root().join("docker-compose.embedded.yml"))
        .expect("docker-compose.embedded.yml");
    serde_norway::from_str(&text).expect("docker-compose.embedded.yml is YAML")
}

/// `scripts/containers.sh compare … --store embedded` runs the users' compose file with this
/// override: each service on the embedded store with a volume of its own at the data folder the
/// image prepares for it, no database container started, and the services still waiting for each
/// other's health (tables for waiter, kitchen for tables), for no database.
#[test]
fn the_embedded_override_gives_each_service_its_own_volume_and_starts_no_database() {
    let base = compose();
    let over = embedded_override();
    let services = &over["services"];
    let mut volumes = BTreeSet::new();
    for name in SERVICES {
        let s = &services[name];
        let command = strings(&s["command"]);
        let flag = |f: &str| {
            command
                .iter()
                .position(|c| c == f)
                .and_then(|i| command.get(i + 1))
                .cloned()
        };
        assert_eq!(flag("--service").as_deref(), Some(name), "{command:?}");
        assert_eq!(flag("--store").as_deref(), Some("embedded"), "{command:?}");
        let data = flag("--data-dir").expect("a --data-dir");
        let mounts = strings(&s["volumes"]);
        assert_eq!(mounts.len(), 1, "{name}: {mounts:?}");
        let (volume, at) = mounts[0].split_once(':').expect("VOLUME:PATH");
        assert_eq!(at, data, "{name}: the volume holds the data folder");
        assert!(volumes.insert(volume.to_owned()), "{volume} shared");
        assert!(keys(&over["volumes"]).contains(volume), "{volume} declared");
        // The same listen address and health check as the users' stack.
        assert_eq!(
            flag("--listen"),
            strings(&service(&base, name)["command"])
                .iter()
                .position(|c| c == "--listen")
                .map(|i| strings(&service(&base, name)["command"])[i + 1].clone())
        );
        // Its dependencies: the peer it calls, never a database.
        let depends = match &s["depends_on"] {
            Value::Tagged(t) => {
                assert!(
                    t.tag == "reset" || t.tag == "override",
                    "{name}: {:?}",
                    t.tag
                );
                match &t.value {
                    Value::Sequence(_) => strings(&t.value).into_iter().collect(),
                    other => keys(other),
                }
            }
            other => panic!("{name}: depends_on must replace the base's: {other:?}"),
        };
        assert!(depends.iter().all(|d| !d.ends_with("-db")), "{depends:?}");
        let peer = match name {
            "waiter" => None,
            "tables" => Some("waiter"),
            _ => Some("tables"),
        };
        assert_eq!(depends, peer.into_iter().map(str::to_owned).collect());
    }
    // The databases are kept out of the default profile: `up` starts none of them.
    for name in SERVICES {
        let db = format!("{name}-db");
        assert_eq!(
            strings(&services[db.as_str()]["profiles"]),
            ["mongo"],
            "{db}"
        );
    }
    // The folder exists in the image, owned by its user, so a fresh volume there is writable.
    assert!(
        dockerfile().contains("install -d -o brigade -g brigade /app/data"),
        "the image prepares /app/data"
    );
}

/// The base's Deployments, StatefulSets and the load's Jobs, as kustomize would list them.
fn k8s_base_and_load() -> Vec<Value> {
    let mut docs = k8s_kustomized("deploy/k8s/base");
    docs.extend(k8s_kustomized("deploy/k8s/load"));
    docs
}

/// A CPU quantity in millicores (`500m`, `1`).
fn millicores(q: &str) -> u64 {
    match q.strip_suffix('m') {
        Some(m) => m.parse().unwrap(),
        None => (q.parse::<f64>().unwrap() * 1000.0) as u64,
    }
}

/// deploy/k8s/local (what a one-node cluster without a registry needs: scripts/cluster.sh) changes
/// images, pull policy, the stand-in database and CPU requests, and each CPU request it sets is a
/// tenth of the base's (the factor docs/scaling.md states), for every resource its patch reaches.
#[test]
fn the_local_component_asks_a_tenth_of_each_cpu_request_and_changes_nothing_else() {
    let local = &k8s_documents(&["deploy/k8s/local/kustomization.yaml"])[0];
    assert_eq!(local["kind"].as_str(), Some("Component"));
    let keys: BTreeSet<&str> = local
        .as_mapping()
        .unwrap()
        .keys()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        BTreeSet::from(["apiVersion", "kind", "images", "patches"])
    );
    let docs = k8s_base_and_load();
    let mut reached = BTreeSet::new();
    for patch in local["patches"].as_sequence().unwrap() {
        let target = &patch["target"];
        let kind = target["kind"].as_str().unwrap();
        let name = target["name"].as_str().map(regex_lite);
        let ops: Vec<Value> = serde_norway::from_str(patch["patch"].as_str().unwrap()).unwrap();
        let cpu = ops
            .iter()
            .find(|o| {
                o["path"].as_str()
                    == Some("/spec/template/spec/containers/0/resources/requests/cpu")
            })
            .and_then(|o| o["value"].as_str())
            .expect("every patch sets the CPU request");
        // Only these fields: pull policy and the CPU request everywhere; the databases' image
        // flags and probe (the FerretDB substitution, as docker-compose.ferretdb.yml makes it).
        for o in &ops {
            let path = o["path"].as_str().unwrap();
            let allowed = path.ends_with("/imagePullPolicy")
                || path.ends_with("/requests/cpu")
                || (kind == "StatefulSet"
                    && (path.ends_with("/args") || path.ends_with("/readinessProbe")));
            assert!(allowed, "the local component patches {path} of {kind}");
        }
        for d in docs.iter().filter(|d| d["kind"].as_str() == Some(kind)) {
            let n = d["metadata"]["name"].as_str().unwrap();
            if name
                .as_ref()
                .is_some_and(|re| !re.iter().any(|alt| alt == n))
            {
                continue;
            }
            let base = d["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]
                ["cpu"]
                .as_str()
                .unwrap();
            assert_eq!(
                millicores(base),
                10 * millicores(cpu),
                "{kind} {n}: {base} -> {cpu}"
            );
            reached.insert(format!("{kind}/{n}"));
        }
    }
    // Every workload of the base and the load is reached by exactly the patches above.
    let workloads: BTreeSet<String> = docs
        .iter()
        .filter(|d| {
            matches!(
                d["kind"].as_str(),
                Some("Deployment" | "StatefulSet" | "Job")
            )
        })
        .map(|d| {
            format!(
                "{}/{}",
                d["kind"].as_str().unwrap(),
                d["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(reached, workloads);
    let images: Vec<(&str, &str)> = local["images"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|i| (i["name"].as_str().unwrap(), i["newName"].as_str().unwrap()))
        .collect();
    assert_eq!(
        images,
        [
            ("brigade", "localhost/brigade"),
            ("mongo", "localhost/brigade-ferretdb")
        ]
    );
}

/// The names a target's `name` pattern of the form `prefix-(a|b)` or a plain name matches.
fn regex_lite(pattern: &str) -> Vec<String> {
    match pattern.split_once('(') {
        Some((prefix, rest)) => rest
            .trim_end_matches(')')
            .split('|')
            .map(|alt| format!("{prefix}{alt}"))
            .collect(),
        None => vec![pattern.to_string()],
    }
}

/// A deleted pod (a scale-down, a rollout) leaves its Service's endpoints while SIGTERM goes out:
/// without a pause, kube-proxy still sends new connections to a server that has stopped
/// accepting. Measured on the cluster (docs/scaling.md): writes refused while a tables pod was
/// deleted, none with the pause. The pause, the drain and the grace fit the termination period.
#[test]
fn kubernetes_services_leave_their_endpoints_before_they_stop_accepting() {
    let docs = k8s_base_and_load();
    for name in SERVICES {
        let pod = &k8s_find(&docs, "Deployment", name)["spec"]["template"]["spec"];
        let pause = pod["containers"][0]["lifecycle"]["preStop"]["sleep"]["seconds"]
            .as_u64()
            .unwrap_or_else(|| panic!("{name} has no preStop sleep"));
        assert!(
            pause >= 2,
            "{name}: {pause} s is shorter than kube-proxy's sync"
        );
        let period = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
        let drain = brigade_runtimes::DRAIN + brigade_runtimes::GRACE;
        assert!(
            period >= pause + drain.as_secs(),
            "{name}: {period} s cannot hold a {pause} s pause and the {} s drain",
            drain.as_secs()
        );
    }
}
