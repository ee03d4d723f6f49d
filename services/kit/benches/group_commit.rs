//! Grouped durable commits on the embedded store: durable writes/s from 1 writer and from 32
//! concurrent writers, and their ratio (the target is ≥ 5×); then what a read costs inline and
//! on tokio's blocking pool (the embedded store's two read paths).
//!
//! Run: `cargo bench -p brigade-kit --bench group_commit`
//! Smoke run: `BRIGADE_BENCH_WRITES=400 BRIGADE_BENCH_READS=2000 cargo bench -p brigade-kit --bench group_commit`
//!
//! `BRIGADE_BENCH_WRITES` (default 20,000) is the concurrent phase's writes (the single writer makes
//! a tenth, at least 100); `BRIGADE_BENCH_READS` (default 100,000) the reads per path;
//! `BRIGADE_BENCH_DIR` the folder for the database file (default `target/tmp`, on the real disk:
//! a tmpfs would make fsync free and the comparison meaningless).

use std::sync::Arc;
use std::time::{Duration, Instant};

use brigade_kit::store::embedded::{EmbeddedStore, ReadPath};
use brigade_kit::store::{CollectionSpec, Doc, Filter, Page, Store};
use serde_json::json;

const SPEC: CollectionSpec = CollectionSpec {
    name: "bench",
    unique: &["number"],
    indexed: &["state"],
};

/// Concurrent writers in the grouped phase.
const WRITERS: u64 = 32;

fn env_count(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

fn doc(n: u64) -> Doc {
    let states = ["new", "open", "done"];
    json!({
        "id": format!("{n:012}"),
        "number": n,
        "state": states[(n % 3) as usize],
        "lines": [{"name": "x", "count": 1}],
    })
    .as_object()
    .cloned()
    .unwrap()
}

fn per_second(n: u64, took: Duration) -> f64 {
    n as f64 / took.as_secs_f64()
}

fn main() {
    let writes = env_count("BRIGADE_BENCH_WRITES", 20_000).max(WRITERS);
    let single = (writes / 10).max(100);
    let reads = env_count("BRIGADE_BENCH_READS", 100_000).max(1);
    let base = std::env::var("BRIGADE_BENCH_DIR")
        .unwrap_or_else(|_| env!("CARGO_TARGET_TMPDIR").to_string());
    std::fs::create_dir_all(&base).expect("creating the bench folder");
    let dir = tempfile::tempdir_in(&base).expect("a temporary folder");
    let path = dir.path().join("bench.redb");
    println!("group_commit: database {}", path.display());

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let store = Arc::new(
        rt.block_on(EmbeddedStore::open(&path, &[SPEC], None))
            .expect("opening the store"),
    );

    let (one, one_commits) = single_writer(&rt, &store, single);
    grouped_writers(&rt, &store, single, writes, one, one_commits);
    read_paths(&store, single + writes, reads);
    store.set_read_path(ReadPath::Auto);
}

/// One writer: each insert waits for its own durable commit. Answers its writes/s and the commits
/// made so far.
fn single_writer(rt: &tokio::runtime::Runtime, store: &EmbeddedStore, single: u64) -> (f64, u64) {
    let before = store.commit_stats();
    let started = Instant::now();
    rt.block_on(async {
        for n in 0..single {
            store.insert(SPEC.name, doc(n)).await.unwrap();
        }
    });
    let one = per_second(single, started.elapsed());
    let one_stats = store.commit_stats();
    println!(
        "1 writer:   {single:>7} durable writes in {:>7.3} s = {one:>9.0} writes/s ({} commits)",
        started.elapsed().as_secs_f64(),
        one_stats.commits - before.commits
    );
    (one, one_stats.commits)
}

/// 32 writers at once: writes queued during one fsync share the next. Prints their writes/s and
/// its ratio to the single writer's `one`.
fn grouped_writers(
    rt: &tokio::runtime::Runtime,
    store: &Arc<EmbeddedStore>,
    single: u64,
    writes: u64,
    one: f64,
    one_commits: u64,
) {
    let started = Instant::now();
    rt.block_on(async {
        let tasks: Vec<_> = (0..WRITERS)
            .map(|w| {
                let store = store.clone();
                tokio::spawn(async move {
                    let mut n = single + w;
                    while n < single + writes {
                        store.insert(SPEC.name, doc(n)).await.unwrap();
                        n += WRITERS;
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    let took = started.elapsed();
    let many = per_second(writes, took);
    let stats = store.commit_stats();
    let commits = stats.commits - one_commits;
    println!(
        "{WRITERS} writers: {writes:>7} durable writes in {:>7.3} s = {many:>9.0} writes/s ({commits} commits, {:.1} writes per commit)",
        took.as_secs_f64(),
        writes as f64 / commits.max(1) as f64
    );
    println!(
        "ratio: {:.2}x the single writer's durable writes/s (target >= 5x: {})",
        many / one,
        if many / one >= 5.0 { "met" } else { "not met" }
    );
}

/// Reads: the same gets and indexed list pages over the `docs` written, inline and on the blocking
/// pool, from a current-thread runtime (actix's kind), one at a time.
fn read_paths(store: &EmbeddedStore, docs: u64, reads: u64) {
    let ids: Vec<String> = (0..docs).map(|n| format!("{n:012}")).collect();
    let local = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for (name, mode) in [("inline", ReadPath::Inline), ("pool", ReadPath::Pool)] {
        store.set_read_path(mode);
        let started = Instant::now();
        local.block_on(async {
            for i in 0..reads {
                let id = &ids[(i.wrapping_mul(7919) % ids.len() as u64) as usize];
                let found = store.get_json(SPEC.name, id).await.unwrap();
                assert!(found.is_some());
            }
        });
        let get = started.elapsed().as_secs_f64() * 1e6 / reads as f64;
        let lists = (reads / 20).max(1);
        let started = Instant::now();
        local.block_on(async {
            let filter = Filter::all().eq("state", "open");
            for i in 0..lists {
                let page = Page {
                    offset: (i % 10) * 50 % (ids.len() as u64 / 3).max(1),
                    limit: 50,
                };
                let found = store.list_json(SPEC.name, &filter, page).await.unwrap();
                assert!(found.total >= 50 || found.items.len() as u64 == found.total);
            }
        });
        let list = started.elapsed().as_secs_f64() * 1e6 / lists as f64;
        println!(
            "reads {name:>6}: get by id {get:>7.2} us, indexed list page of 50 {list:>8.1} us ({reads} gets, {lists} lists)"
        );
    }
}
