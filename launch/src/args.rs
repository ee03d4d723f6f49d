//! The `serve` command's flags, the same for every binary built on the entry point.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use brigade_kit::limits::{Http2Settings, ServeProtocol, ServerLimits};
use brigade_kit::store::StoreKind;
use clap::Args;

/// `serve`: one service, or all, on one runtime.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// The runtime (see `runtimes`); default: the first compiled in.
    #[arg(long)]
    pub runtime: Option<String>,
    /// A service's name (see `runtimes`), or all (every service in one process on consecutive
    /// ports).
    #[arg(long, default_value = "all")]
    pub service: String,
    /// Address to listen on. With `--service all`, the first service's; the others take the next
    /// ports (port 0: any free ports). Default: 127.0.0.1 and each service's own port.
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// The store, one of those compiled in (the kit's registry: `brigade_kit::store::BACKENDS`).
    #[arg(long, default_value = brigade_kit::store::DEFAULT, help = store_help())]
    pub store: StoreKind,
    /// Where the embedded store keeps its files (one per service).
    #[arg(long, default_value = "./data")]
    pub data_dir: PathBuf,
    /// MongoDB connection string for `--store mongo`.
    #[arg(long, env = "MONGODB_URI")]
    pub mongodb_uri: Option<String>,
    /// Deadline of one store operation in milliseconds, its wait in line for a turn included
    /// (MongoDB: the wait, server selection and the operation together; past it, 503). A request
    /// that carries its caller's budget (`x-brigade-budget-ms`) gets less if that is less.
    #[arg(long, default_value_t = 2000)]
    pub store_timeout_ms: u64,
    /// MongoDB: reads on the wire at once per service; more wait in line, first come first
    /// served, within --store-timeout-ms [default: 4]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub store_concurrency: Option<u32>,
    /// MongoDB: writes on the wire at once per service, in a line of their own [default: 1 on
    /// FerretDB, whose SQLite writes one at a time; else --store-concurrency]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub store_writers: Option<u32>,
    /// Worker threads per service; default: the cores this process may use.
    #[arg(long)]
    pub workers: Option<usize>,
    /// A peer's base URL, `name=URL` (e.g. `users=http://users:8080`); repeatable, or
    /// comma-separated in `BRIGADE_PEERS`.
    #[arg(long = "peer", env = "BRIGADE_PEERS", value_delimiter = ',', value_parser = parse_peer)]
    pub peers: Vec<(String, String)>,
    /// Deadline of a whole call to a peer in milliseconds (past it, 503), never more than what is
    /// left of the caller's own budget; the call tells the peer how long it waits
    /// (`x-brigade-budget-ms`), so the peer's store bounds its work by it too.
    #[arg(long, default_value_t = 2000)]
    pub peer_timeout_ms: u64,
    /// Before listening, fill each service's collections with N realistic documents, in bulk;
    /// collections that already hold documents are left alone (a restart does not double them).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub preload: u64,
    /// Prepended to each service's database name: the embedded store's file name and the MongoDB
    /// database. Letters, digits, `_` and `-`, at most 32.
    #[arg(long, default_value = "", value_parser = parse_prefix)]
    pub database_prefix: String,
    /// After stopping, drop the services' MongoDB databases (for throw-away databases, as
    /// `brigade compare` gives each run); ignored by other stores.
    #[arg(long)]
    pub drop_databases_on_exit: bool,
    /// Record no metrics: no timing or counting per request, store call or peer call, and
    /// `/metrics` answers 404.
    #[arg(long)]
    pub no_metrics: bool,
    /// Calibration only: every request burns about N µs of CPU before its handler (a known cost
    /// to test comparisons with, e.g. `compare --handicap 'hyper#2=5'`); off by default.
    #[arg(long, default_value_t = 0.0, value_name = "N", value_parser = parse_handicap)]
    pub handicap_us: f64,
    /// Log lines on stderr as `text` (for people) or `json` (one object a line, for machines).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// The server limits, the same on every runtime.
    #[command(flatten)]
    pub limits: LimitArgs,
    /// TLS, the same on every runtime.
    #[command(flatten)]
    pub tls: TlsArgs,
}

/// The TLS flags (`brigade_kit::tls`: rustls on ring, ALPN h2 then http/1.1, on every runtime).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "TLS (the same on every runtime)")]
pub struct TlsArgs {
    /// Serve TLS with this certificate chain (PEM); needs --tls-key.
    #[arg(
        long,
        value_name = "PEM",
        requires = "tls_key",
        conflicts_with = "tls_self_signed"
    )]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve TLS with an ECDSA P-256 certificate made at start for localhost and 127.0.0.1
    /// (clients need `--tls-insecure`).
    #[arg(long)]
    pub tls_self_signed: bool,
    /// Mutual TLS: require a client certificate signed by a CA in this PEM file.
    #[arg(long, value_name = "PEM")]
    pub tls_client_ca: Option<PathBuf>,
}

impl TlsArgs {
    /// The kit's TLS settings these flags ask for.
    pub fn settings(&self) -> brigade_kit::tls::TlsSettings {
        brigade_kit::tls::TlsSettings {
            cert_and_key: self.tls_cert.clone().zip(self.tls_key.clone()),
            self_signed: self.tls_self_signed,
            client_ca: self.tls_client_ca.clone(),
        }
    }
}

/// The server limits' flags; each one left out takes the kit's default ([`ServerLimits`]).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Server limits (the same on every runtime)")]
pub struct LimitArgs {
    /// Time a client has to send a complete request head [default: 5s]
    #[arg(long, value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub header_read_timeout: Option<Duration>,
    /// Time an idle keep-alive connection is kept between requests [default: 5s]
    #[arg(long, value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub keep_alive_timeout: Option<Duration>,
    /// Time a client has to send a whole request body [default: 10s]
    #[arg(long, value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub body_read_timeout: Option<Duration>,
    /// Most bytes in a request head, request line included (at most 131072) [default: 32768]
    #[arg(long, value_name = "BYTES")]
    pub max_header_bytes: Option<usize>,
    /// Most headers in a request (at most 96) [default: 64]
    #[arg(long, value_name = "N")]
    pub max_headers: Option<usize>,
    /// Largest request body on any route; caps the routes' own limits [default: 16777216]
    #[arg(long, value_name = "BYTES")]
    pub max_body_bytes: Option<usize>,
    /// Most connections open at once per service; one more is closed at once [default: 16384]
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Protocols on a plaintext listener: h1 (HTTP/1.1), h2c (HTTP/2 by prior knowledge) or auto
    /// (both on one port); under TLS auto, as ALPN chooses (h2, http/1.1), or h3: HTTP/3 over QUIC
    /// on the same port number (UDP) beside it, on the runtimes that offer it [default: h1; auto
    /// under TLS]
    #[arg(long, value_name = "PROTOCOL")]
    pub protocol: Option<ServeProtocol>,
    /// HTTP/2: streams a client may have open at once on a connection [default: 200]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub h2_max_concurrent_streams: Option<u32>,
    /// HTTP/2: each stream's initial flow-control window, bytes [default: 1048576]
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(1..=2_147_483_647))]
    pub h2_initial_stream_window: Option<u32>,
    /// HTTP/2: the connection's flow-control window, bytes [default: 2097152]
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(65_535..=2_147_483_647))]
    pub h2_initial_connection_window: Option<u32>,
    /// HTTP/2: the largest header list a request may send, bytes (a backstop above
    /// --max-header-bytes) [default: 131072]
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(1..))]
    pub h2_max_header_list_bytes: Option<u32>,
}

impl LimitArgs {
    /// The limits these flags ask for, the kit's defaults where a flag is left out.
    pub fn limits(&self) -> ServerLimits {
        let d = ServerLimits::default();
        ServerLimits {
            header_read_timeout: self.header_read_timeout.unwrap_or(d.header_read_timeout),
            keep_alive_timeout: self.keep_alive_timeout.unwrap_or(d.keep_alive_timeout),
            body_read_timeout: self.body_read_timeout.unwrap_or(d.body_read_timeout),
            max_header_bytes: self.max_header_bytes.unwrap_or(d.max_header_bytes),
            max_headers: self.max_headers.unwrap_or(d.max_headers),
            max_body_bytes: self.max_body_bytes.unwrap_or(d.max_body_bytes),
            max_connections: self.max_connections.unwrap_or(d.max_connections),
            protocol: self.protocol.unwrap_or(d.protocol),
            tls: d.tls,
            http2: Http2Settings {
                max_concurrent_streams: self
                    .h2_max_concurrent_streams
                    .unwrap_or(d.http2.max_concurrent_streams),
                initial_stream_window: self
                    .h2_initial_stream_window
                    .unwrap_or(d.http2.initial_stream_window),
                initial_connection_window: self
                    .h2_initial_connection_window
                    .unwrap_or(d.http2.initial_connection_window),
                max_header_list_bytes: self
                    .h2_max_header_list_bytes
                    .unwrap_or(d.http2.max_header_list_bytes),
            },
        }
    }

    /// The limits for a server whose TLS is `tls`: under TLS the protocol is `auto` (ALPN
    /// chooses); `h1` or `h2c` asked for beside TLS is refused, as no runtime can keep to it
    /// (actix-web and ntex always offer h2 and http/1.1).
    pub fn limits_under(&self, tls: brigade_kit::tls::TlsMode) -> Result<ServerLimits, String> {
        match self.protocol {
            Some(p @ (ServeProtocol::H1 | ServeProtocol::H2c)) if tls.on() => Err(format!(
                "--protocol {p} under TLS: ALPN chooses between h2 and http/1.1 on every \
                 runtime, so the protocol is auto (a client that offers only http/1.1 gets \
                 HTTP/1.1)"
            )),
            Some(ServeProtocol::H3) if !tls.on() => Err(
                "--protocol h3: QUIC is always TLS 1.3, add --tls-self-signed or \
                 --tls-cert/--tls-key"
                    .into(),
            ),
            _ => Ok(self.limits().under_tls(tls)),
        }
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object a line, the current span's fields (`trace_id`) included.
    Json,
}

fn parse_handicap(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(us) if us.is_finite() && (0.0..=1_000_000.0).contains(&us) => Ok(us),
        _ => Err("expected µs of CPU per request, from 0 to 1000000".to_string()),
    }
}

fn parse_prefix(s: &str) -> Result<String, String> {
    let ok = s.len() <= 32
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(s.to_string())
    } else {
        Err("expected at most 32 letters, digits, '_' or '-'".to_string())
    }
}

/// `name=http://...`; whether `name` is a service is checked against the binary's services later.
/// `--store`'s help, from the registry: every store compiled in and what it is.
fn store_help() -> String {
    format!("The store: {}", brigade_kit::store::help())
}

fn parse_peer(s: &str) -> Result<(String, String), String> {
    let (name, url) = s.split_once('=').ok_or("expected name=URL")?;
    if name.is_empty() {
        return Err("expected name=URL, the name is empty".to_string());
    }
    if !url.starts_with("http://") {
        return Err(format!("peer URL {url:?} must start with http://"));
    }
    Ok((name.to_string(), url.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn parse(args: &[&str]) -> Result<ServeArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied())).map(|c| c.serve)
    }

    #[test]
    fn defaults_are_every_service_on_the_embedded_store() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.service, "all");
        assert_eq!(a.store, StoreKind::Embedded);
        assert_eq!(a.data_dir, PathBuf::from("./data"));
        assert_eq!(
            (a.preload, a.store_timeout_ms, a.peer_timeout_ms),
            (0, 2000, 2000)
        );
        assert!(a.runtime.is_none() && a.listen.is_none() && a.workers.is_none());
        assert!(a.store_concurrency.is_none() && a.store_writers.is_none());
        let c = parse(&["--store-concurrency", "8", "--store-writers", "2"]).unwrap();
        assert_eq!((c.store_concurrency, c.store_writers), (Some(8), Some(2)));
        assert!(parse(&["--store-concurrency", "0"]).is_err());
        assert!(parse(&["--store-writers", "1025"]).is_err());
        assert!(!a.no_metrics);
        assert_eq!(a.handicap_us, 0.0);
        assert!(parse(&["--handicap-us", "-1"]).is_err());
        assert_eq!(parse(&["--handicap-us", "1.5"]).unwrap().handicap_us, 1.5);
        assert_eq!(a.log_format, LogFormat::Text);
        let b = parse(&["--no-metrics", "--log-format", "json"]).unwrap();
        assert!(b.no_metrics);
        assert_eq!(b.log_format, LogFormat::Json);
        assert!(parse(&["--log-format", "xml"]).is_err());
        assert_eq!(a.limits.limits(), ServerLimits::default());
    }

    #[test]
    fn limit_flags_override_the_kits_defaults_one_by_one() {
        let a = parse(&[
            "--header-read-timeout",
            "2s",
            "--max-connections",
            "10",
            "--max-body-bytes",
            "1024",
        ])
        .unwrap();
        let l = a.limits.limits();
        assert_eq!(l.header_read_timeout, Duration::from_secs(2));
        assert_eq!((l.max_connections, l.max_body_bytes), (10, 1024));
        assert_eq!(
            l.keep_alive_timeout,
            ServerLimits::default().keep_alive_timeout
        );
        assert!(parse(&["--keep-alive-timeout", "soon"]).is_err());
    }

    #[test]
    fn protocols_and_tls_flags_make_limits_and_h1_beside_tls_is_refused() {
        use brigade_kit::tls::TlsMode;
        let a = parse(&["--protocol", "h2c", "--h2-max-concurrent-streams", "7"]).unwrap();
        let l = a.limits.limits_under(TlsMode::Off).unwrap();
        assert_eq!(
            (l.protocol, l.http2.max_concurrent_streams),
            (ServeProtocol::H2c, 7)
        );
        assert!(a.limits.limits_under(TlsMode::SelfSigned).is_err());
        let t = parse(&["--tls-self-signed"]).unwrap();
        assert_eq!(t.tls.settings().mode(), TlsMode::SelfSigned);
        let l = t.limits.limits_under(TlsMode::SelfSigned).unwrap();
        assert_eq!(
            (l.protocol, l.tls),
            (ServeProtocol::Auto, TlsMode::SelfSigned)
        );
        let h3 = parse(&["--protocol", "h3"]).unwrap();
        assert!(h3.limits.limits_under(TlsMode::Off).is_err());
        let l = h3.limits.limits_under(TlsMode::SelfSigned).unwrap();
        assert_eq!(l.protocol, ServeProtocol::H3);
        assert!(parse(&["--protocol", "h4"]).is_err());
        assert!(parse(&["--tls-cert", "c.pem"]).is_err());
        assert!(parse(&["--h2-initial-connection-window", "100"]).is_err());
    }

    #[test]
    fn peers_are_name_equals_http_url_and_prefixes_are_plain() {
        let a = parse(&["--peer", "users=http://u:1", "--peer", "mail=http://m:2"]).unwrap();
        assert_eq!(
            a.peers,
            [
                ("users".to_string(), "http://u:1".to_string()),
                ("mail".to_string(), "http://m:2".to_string())
            ]
        );
        assert!(parse(&["--peer", "users"]).is_err());
        assert!(parse(&["--peer", "users=https://u"]).is_err());
        assert!(parse(&["--peer", "=http://u"]).is_err());
        assert_eq!(
            parse(&["--database-prefix", "run_3-"])
                .unwrap()
                .database_prefix,
            "run_3-"
        );
        assert!(parse(&["--database-prefix", "a/b"]).is_err());
        assert!(parse(&["--database-prefix", &"x".repeat(33)]).is_err());
        assert!(parse(&["--store", "paper"]).is_err());
    }
}
