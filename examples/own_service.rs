//! Your own service on Brigade's kit, served by any compiled-in runtime:
//! `cargo run --example own_service -- warp 127.0.0.1:9000`, then
//! `curl -X POST localhost:9000/counters/a -H 'content-type: application/json' -d '{"by":2}'`.
//!
//! The service declares its routes once; the runtime adapters, the error bodies, the 404/405/413/415
//! handling, `/health`, `/ready` and `/bench/*` come from the kit. `brigade load --target` and
//! `brigade compare --binary` (with a binary that speaks `serve`) measure it like the restaurant.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use brigade_kit::standard::{self, ServiceInfo};
use brigade_kit::store::{memory::MemoryStore, Store};
use brigade_kit::{ApiError, App, Reply, Request, RouteTable};
use serde::Deserialize;

/// The state every handler shares.
struct Counters {
    runtime: String,
    store: MemoryStore,
    values: Mutex<HashMap<String, i64>>,
}

impl ServiceInfo for Counters {
    fn service(&self) -> &str {
        "counters"
    }
    fn runtime(&self) -> &str {
        &self.runtime
    }
    fn store(&self) -> &dyn Store {
        &self.store
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Add {
    by: i64,
}

fn routes() -> RouteTable<Counters> {
    RouteTable::new()
        .get(
            "/counters/{name}",
            |s: Arc<Counters>, r: Request| async move {
                let values = s.values.lock().map_err(ApiError::internal)?;
                match values.get(r.param("name")) {
                    Some(v) => Ok(Reply::ok(
                        &serde_json::json!({"name": r.param("name"), "value": v}),
                    )),
                    None => Err(ApiError::not_found(format!(
                        "no counter {}",
                        r.param("name")
                    ))),
                }
            },
        )
        .post(
            "/counters/{name}",
            |s: Arc<Counters>, r: Request| async move {
                let add: Add = r.json()?;
                let mut values = s.values.lock().map_err(ApiError::internal)?;
                let v = values.entry(r.param("name").to_string()).or_insert(0);
                *v += add.by;
                Ok(Reply::ok(
                    &serde_json::json!({"name": r.param("name"), "value": *v}),
                ))
            },
        )
        .merge(standard::routes())
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let runtime_name = args.next().unwrap_or_else(|| "axum".into());
    let addr = args
        .next()
        .unwrap_or_else(|| "127.0.0.1:9000".into())
        .parse()?;
    let runtime = brigade_runtimes::find(&runtime_name)
        .ok_or_else(|| anyhow::anyhow!("runtime {runtime_name} is not compiled in"))?;
    let state = Arc::new(Counters {
        runtime: runtime.name.into(),
        store: MemoryStore::new(&[]),
        values: Mutex::default(),
    });
    let app = Arc::new(App::new("counters", routes(), state));
    let listener = brigade_runtimes::bind(addr)?;
    println!("counters on http://{addr} ({})", runtime.name);
    let (_trigger, shutdown) = brigade_runtimes::shutdown_channel();
    runtime.serve(vec![brigade_runtimes::Mount { listener, app }], 2, shutdown)
}
