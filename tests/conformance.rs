//! The restaurant's conformance suite (`brigade_services::conformance`: the kit's checks every
//! service passes, then its own) against every runtime × every store, over real sockets, each
//! combination on its own fresh in-process deployment (`brigade_serve::conformance_matrix!`).
//!
//! MongoDB runs when `MONGODB_URI` is set or a Docker engine is reachable (a `mongo:7` container);
//! otherwise its tests say loudly why they skip, and fail under `BRIGADE_REQUIRE_MONGO=1`.

use brigade_serve::testing::Deployment;
use brigade_serve::Services;
use brigade_services::conformance;

fn restaurant() -> Services {
    Services::from(brigade_services::services())
}

async fn suite(d: Deployment) {
    conformance::run_suite(&d).await;
}

brigade_serve::conformance_matrix!(restaurant(), suite);
