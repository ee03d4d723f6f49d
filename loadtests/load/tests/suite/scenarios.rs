//! Scenario files: parsing, templating, pools (pick, take, capture) and how pools are shared
//! between generator threads; the mistakes a scenario author can make are refused with a reason.

use std::sync::atomic::AtomicU64;

use brigade_load::scenario::{Pools, RenderContext, Scenario};
use brigade_load::Registry;

const SHOP: &str = r#"
name = "shop"
description = "a test mix"
service = "shop"

[vars]
colours = ["red", "green"]

[[setup]]
method = "POST"
path = "/items"
body = '{"n": {{seq}}}'
times = 4
capture = { items = "/id" }

[[request]]
name = "create"
weight = 1
method = "post"
path = "/items"
body = '{"n": {{seq}}, "colour": "{{pick colours}}", "size": {{random_int 3 5}}, "code": "{{random_string 8}}", "mood": "{{one_of calm busy}}"}'
headers = { x-trace = "t-{{seq}}" }
expect = [201, 409]
capture = { items = "/id", sizes = "/size" }

[[request]]
weight = 3
path = "/items/{{pick items}}?colour={{pick colours}}"

[[request]]
name = "remove"
weight = 1
service = "archive"
method = "DELETE"
path = "/items/{{take items}}"
expect = [204]
"#;

fn ctx_parts() -> (fastrand::Rng, AtomicU64) {
    (fastrand::Rng::with_seed(7), AtomicU64::new(0))
}

#[test]
fn a_scenario_file_parses_into_services_routes_and_pools() {
    let s = Scenario::parse(SHOP, "shop.toml").unwrap();
    assert_eq!(s.name(), "shop");
    assert_eq!(s.label(), "shop.toml");
    assert_eq!(s.description(), "a test mix");
    assert_eq!(
        s.services(),
        vec!["shop".to_string(), "archive".to_string()]
    );
    // An unnamed request is named after its method and path, holes shown as {id} / {s}.
    assert_eq!(
        s.routes(),
        &[
            "create".to_string(),
            "GET /items/{id}?colour={s}".to_string(),
            "remove".to_string()
        ]
    );
    let pools: Vec<(&str, bool)> = s
        .pools()
        .iter()
        .map(|p| (p.name.as_str(), p.taken))
        .collect();
    assert_eq!(pools, vec![("items", true), ("sizes", false)]);
    assert_eq!(s.setup().len(), 1);
    assert_eq!(s.setup()[0].times, 4);
    let r = &s.requests()[0];
    assert_eq!(r.method, http::Method::POST);
    assert!(r.expects(409) && r.expects(201) && !r.expects(200));
    // Without `expect`, any 2xx is a success.
    assert!(s.requests()[1].expects(204) && !s.requests()[1].expects(404));
    assert!((s.write_share() - 0.4).abs() < 1e-9);
}

#[test]
fn templates_fill_sequence_numbers_random_values_vars_and_pools() {
    let s = Scenario::parse(SHOP, "shop").unwrap();
    let (mut rng, seq) = ctx_parts();
    let mut pools = s.empty_pools();
    let create = &s.requests()[0];
    let mut seen_sizes = std::collections::HashSet::new();
    for expected_seq in [1u64, 3, 5] {
        let r = create
            .render(&mut RenderContext {
                rng: &mut rng,
                pools: &mut pools,
                seq: &seq,
                spacing: Default::default(),
            })
            .unwrap();
        assert_eq!(r.path, "/items");
        assert!(r.has_body);
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        // Each {{seq}} draws the next number of the run, in path, headers, body order.
        assert_eq!(r.headers[0].0.as_str(), "x-trace");
        assert_eq!(
            r.headers[0].1.to_str().unwrap(),
            format!("t-{expected_seq}")
        );
        assert_eq!(v["n"], expected_seq + 1);
        assert!(["red", "green"].contains(&v["colour"].as_str().unwrap()));
        assert!(["calm", "busy"].contains(&v["mood"].as_str().unwrap()));
        let size = v["size"].as_i64().unwrap();
        assert!((3..=5).contains(&size));
        seen_sizes.insert(size);
        let code = v["code"].as_str().unwrap();
        assert_eq!(code.len(), 8);
        assert!(code.chars().all(|c| c.is_ascii_alphanumeric()));
    }
    assert!(!seen_sizes.is_empty());
}

#[test]
fn captured_ids_are_picked_and_taken_by_later_requests() {
    let s = Scenario::parse(SHOP, "shop").unwrap();
    let (mut rng, seq) = ctx_parts();
    let mut pools = s.empty_pools();
    let (create, read, remove) = (&s.requests()[0], &s.requests()[1], &s.requests()[2]);
    // Nothing captured yet: only `create` can be formed, so it is always the one chosen.
    assert!(!read.formable(&pools) && !remove.formable(&pools));
    for _ in 0..20 {
        assert_eq!(s.choose(&mut rng, &pools), Some(0));
    }
    create
        .capture(br#"{"id": "a1", "size": 4}"#, &mut pools)
        .unwrap();
    create
        .capture(br#"{"id": "a2", "size": 5}"#, &mut pools)
        .unwrap();
    assert_eq!(pools.values(0).collect::<Vec<_>>(), vec!["a1", "a2"]);
    // Numbers are captured as their text.
    assert_eq!(pools.values(1).collect::<Vec<_>>(), vec!["4", "5"]);

    let mut ctx = RenderContext {
        rng: &mut rng,
        pools: &mut pools,
        seq: &seq,
        spacing: Default::default(),
    };
    let r = read.render(&mut ctx).unwrap();
    let (id, colour) = r
        .path
        .strip_prefix("/items/")
        .unwrap()
        .split_once("?colour=")
        .unwrap();
    assert!(
        ["a1", "a2"].contains(&id) && ["red", "green"].contains(&colour),
        "{}",
        r.path
    );
    assert!(!r.has_body);
    assert_eq!(ctx.pools.len(0), 2, "pick leaves the id in the pool");
    let r = remove.render(&mut ctx).unwrap();
    let taken = r.path.strip_prefix("/items/").unwrap().to_string();
    assert_eq!(ctx.pools.len(0), 1, "take removes it");
    let r = remove.render(&mut ctx).unwrap();
    assert_ne!(
        r.path.strip_prefix("/items/").unwrap(),
        taken,
        "a taken id is never handed out twice"
    );
    assert_eq!(ctx.pools.len(0), 0);
    assert!(!remove.formable(ctx.pools));
}

#[test]
fn a_capture_that_finds_nothing_is_an_error() {
    let s = Scenario::parse(SHOP, "shop").unwrap();
    let mut pools = s.empty_pools();
    let create = &s.requests()[0];
    assert!(create.capture(br#"{"name": "no id"}"#, &mut pools).is_err());
    assert!(create.capture(b"not json", &mut pools).is_err());
    assert!(create
        .capture(br#"{"id": {"nested": 1}, "size": 1}"#, &mut pools)
        .is_err());
}

#[test]
fn pools_are_bounded_and_forget_their_oldest_values() {
    let text = SHOP.replace(
        "service = \"shop\"",
        "service = \"shop\"\npool_capacity = 3",
    );
    let s = Scenario::parse(&text, "shop").unwrap();
    let mut pools = s.empty_pools();
    for i in 0..5 {
        pools.push(0, format!("v{i}"));
    }
    assert_eq!(pools.values(0).collect::<Vec<_>>(), vec!["v2", "v3", "v4"]);
}

#[test]
fn taken_pools_are_dealt_out_between_threads_and_picked_pools_copied() {
    let s = Scenario::parse(SHOP, "shop").unwrap();
    let mut filled: Pools = s.empty_pools();
    for i in 0..5 {
        filled.push(0, format!("item{i}"));
        filled.push(1, format!("{i}"));
    }
    let shares = s.share_pools(&filled, 2);
    assert_eq!(shares.len(), 2);
    let a: Vec<&str> = shares[0].values(0).collect();
    let b: Vec<&str> = shares[1].values(0).collect();
    assert_eq!(a.len() + b.len(), 5);
    assert!(
        a.iter().all(|x| !b.contains(x)),
        "a taken id belongs to one thread"
    );
    assert_eq!(shares[0].len(1), 5);
    assert_eq!(shares[1].len(1), 5);
}

#[test]
fn weights_shape_the_mix() {
    let s = Scenario::parse(SHOP, "shop").unwrap();
    let mut pools = s.empty_pools();
    for i in 0..1000 {
        pools.push(0, format!("id{i}"));
    }
    let mut rng = fastrand::Rng::with_seed(1);
    let mut counts = [0u32; 3];
    for _ in 0..10_000 {
        counts[s.choose(&mut rng, &pools).unwrap()] += 1;
    }
    // Weights 1 : 3 : 1.
    assert!((1700..2300).contains(&counts[0]), "{counts:?}");
    assert!((5600..6400).contains(&counts[1]), "{counts:?}");
    assert!((1700..2300).contains(&counts[2]), "{counts:?}");
}

#[test]
fn mistakes_in_a_scenario_are_refused_with_the_reason() {
    let cases: &[(&str, &str)] = &[
        ("name = \"x\"\n", "at least one [[request]]"),
        (
            "name = \"x\"\n[[request]]\npath = \"/{{nope}}\"\n",
            "unknown function",
        ),
        ("name = \"x\"\n[[request]]\npath = \"/{{seq\"\n", "unclosed"),
        (
            "name = \"x\"\n[[request]]\npath = \"/{{random_int 5 1}}\"\n",
            "lower bound",
        ),
        (
            "name = \"x\"\n[[request]]\npath = \"/{{random_int 1}}\"\n",
            "takes 2 argument",
        ),
        (
            "name = \"x\"\n[[request]]\npath = \"/{{pick ghosts}}\"\n",
            "pool \"ghosts\" is read but",
        ),
        (
            "name = \"x\"\n[[request]]\npath = \"no-slash\"\n",
            "must start with /",
        ),
        (
            "name = \"x\"\n[[request]]\npath = \"/\"\nexpect = [42]\n",
            "expect",
        ),
        (
            "name = \"x\"\n[[request]]\npath = \"/\"\ncapture = { a = \"id\" }\n",
            "JSON pointer",
        ),
        (
            "name = \"x\"\n[[request]]\npath = \"/\"\ntimes = 3\n",
            "`times` belongs to [[setup]]",
        ),
        (
            "name = \"x\"\n[[request]]\npath = \"/\"\nweight = 0\n",
            "weight 0",
        ),
        (
            "name = \"x\"\n[[request]]\npath = \"/\"\nbodyy = \"{}\"\n",
            "unknown field",
        ),
        (
            "name = \"x\"\n[vars]\nv = [\"a\"]\n[[request]]\npath = \"/{{take v}}\"\n",
            "use `pick`",
        ),
    ];
    for (text, reason) in cases {
        let err = format!("{:#}", Scenario::parse(text, "x").unwrap_err());
        assert!(
            err.contains(reason),
            "{text:?}: expected {reason:?} in {err:?}"
        );
    }
}

#[test]
fn registered_names_load_files_load_by_path_and_unknown_names_fail() {
    let mut registry = Registry::new();
    registry.scenario("shop", SHOP);
    // Services in first-use order, setup included.
    assert_eq!(
        registry.load("shop").unwrap().services(),
        vec!["shop".to_string(), "archive".to_string()]
    );
    let dir = tempfile_dir();
    let path = dir.join("mine.toml");
    std::fs::write(&path, SHOP).unwrap();
    let s = registry.load(path.to_str().unwrap()).unwrap();
    assert_eq!(s.name(), "shop");
    assert_eq!(s.label(), path.to_str().unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    let err = format!("{:#}", registry.load("no-such-scenario").unwrap_err());
    assert!(err.contains("hello, bytes, strings, static, shop"), "{err}");
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("brigade-scenario-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_rehearsal_plays_fixtures_in_order_and_renders_every_request() {
    assert_eq!(
        Scenario::parse(SHOP, "shop").unwrap().rehearse().unwrap(),
        3
    );
    assert_eq!(Registry::new().get("hello").unwrap().rehearse().unwrap(), 1);
    // A setup step reading a pool only a later step fills would starve the fixtures.
    let starved = Scenario::parse(
        r#"
name = "starved"
[[setup]]
path = "/a/{{pick later}}"
[[setup]]
path = "/b"
capture = { later = "/id" }
[[request]]
path = "/c"
"#,
        "starved",
    )
    .unwrap();
    let err = format!("{:#}", starved.rehearse().unwrap_err());
    assert!(err.contains("setup step 1 (GET /a/{later}"), "{err}");
    // A body that claims JSON must be JSON once rendered.
    let broken = Scenario::parse(
        "name = \"b\"\n[[request]]\nmethod = \"POST\"\npath = \"/x\"\nbody = '{\"n\": {{seq}},}'\n",
        "b",
    )
    .unwrap();
    let err = format!("{:#}", broken.rehearse().unwrap_err());
    assert!(
        err.contains("request POST /x: renders invalid JSON"),
        "{err}"
    );
}
