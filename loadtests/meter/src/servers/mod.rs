//! The servers under test, as child processes, and the contract between `compare` (or a study) and
//! any server binary — the restaurant's `brigade`, or a user's own. Four things, nothing else:
//!
//! 1. **How it is started** ([`launch`]). Either `--binary PATH`, a binary that takes the library's
//!    standard serve flags:
//!    `PATH serve --runtime R --service all --listen 127.0.0.1:PORT --store S --data-dir D
//!    --workers N [--mongodb-uri U] [--preload N] [--database-prefix P --drop-databases-on-exit]`,
//!    its services taking consecutive ports from PORT; or `--server-command 'TEMPLATE'`, any command
//!    line, split like a shell's (quotes, no expansion), with the placeholders `{binary}`
//!    `{runtime}` `{store}` `{listen}` (`127.0.0.1:PORT`) `{port}` `{data_dir}` `{workers}`
//!    `{mongodb_uri}` `{preload}` `{database_prefix}` `{handicap_us}` replaced (an absent value is empty: write
//!    `--flag={placeholder}` for those). The process it starts must be the server itself (it is
//!    pinned, sampled and sent SIGTERM), not a shell around it: use `exec` in a wrapper script.
//! 2. **How it announces what it serves** ([`announce`]): one JSON object per line on stdout,
//!    `{"brigade":"listening","service":"NAME","url":"http://127.0.0.1:PORT","runtime":"R",
//!    "store":"S","workers":N}` per service (optionally `"limits":"..."`, the server limits in
//!    words, which reports copy into their setup), all of them printed before it answers any request;
//!    before them, when preloading, `{"brigade":"preloaded","service":"NAME","collection":"C",
//!    "documents":N,"existing":N,"seconds":F}` per collection. Other lines are copied to the log and
//!    otherwise ignored. The service names come from these lines and nowhere else: scenarios naming
//!    a service the server does not announce are refused, and a scenario naming no service goes to
//!    the first one announced. A server that announces another runtime than asked is refused.
//! 3. **How readiness is checked** ([`process`]): `GET /ready` answers 200 on every announced
//!    service. It is stopped with SIGTERM and has [`process::ServerProcess::stop`]'s grace period
//!    to exit (then SIGKILL); exit code 0 is a clean stop.
//! 4. **How its runtimes are listed** ([`info`]): `BIN runtimes --json` prints
//!    `{"runtimes":[{"name":"axum","version":"...","threading":"..."}],"stores":[...],
//!    "services":[...]}`; `compare` runs every runtime listed unless told `--runtimes`, and
//!    `services` tells how many consecutive ports to reserve and which services `--service all`
//!    will announce (the older text form of `brigade runtimes` is still read, without services).
//!
//! `docs/embedding.md` ("compare on your own service") walks a user through it. Servers compare
//! did not start (`--external`, [`external`]) keep points 3 and, through `/health`, the runtime
//! check; CPU and memory then come from their `/metrics`.

/// How long a server has to exit after SIGTERM before it is killed.
pub const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// How long a server may take to start and answer `/ready`, with nothing to preload.
pub const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

pub mod announce;
pub mod external;
pub mod info;
pub mod launch;
pub mod ports;
pub mod process;

pub use announce::{Listening, Preloaded};
pub use info::{binary_version, RuntimeInfo, ServerInfo};
pub use launch::{CommandTemplate, Launch, ServerSpec};
pub use ports::{free_port_block, start_on_free_ports};
pub use process::{wait_ready, ServerProcess};

/// The runtime a comparison's runtime name serves with: `hyper#2` → `hyper`.
pub fn runtime_of(label: &str) -> &str {
    label.split_once('#').map_or(label, |(runtime, _)| runtime)
}
