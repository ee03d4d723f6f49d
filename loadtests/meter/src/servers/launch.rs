//! How a server is started: the command line of one run's server, either the standard serve flags
//! of a binary (`--binary`) or a command template with placeholders (`--server-command`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use brigade_records::protocol::Protocol;

use super::info::ServerInfo;

/// The placeholders a command template may use.
pub const PLACEHOLDERS: [&str; 11] = [
    "binary",
    "runtime",
    "store",
    "listen",
    "port",
    "data_dir",
    "workers",
    "mongodb_uri",
    "preload",
    "database_prefix",
    "handicap_us",
];

/// How to start the server binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// `BINARY serve --runtime R --service all --listen 127.0.0.1:PORT ...`: the library's
    /// standard serve flags.
    Binary(PathBuf),
    /// A command template; `{binary}` in it is this binary.
    Template {
        /// The binary `{binary}` stands for.
        binary: PathBuf,
        /// The template.
        template: CommandTemplate,
    },
}

impl Launch {
    /// The launch `--binary` and `--server-command` describe (the binary defaults to this
    /// executable), and what the binary says about itself. With a command template and the
    /// runtimes given, the binary need not answer: the template may start something else.
    pub fn resolve(
        binary: Option<&Path>,
        server_command: Option<&str>,
        runtimes_given: bool,
    ) -> Result<(Launch, ServerInfo)> {
        let binary = match binary {
            Some(path) => path.to_path_buf(),
            None => std::env::current_exe().context("Failed to find this executable")?,
        };
        let info = match ServerInfo::ask(&binary) {
            Ok(info) => info,
            Err(_) if server_command.is_some() && runtimes_given => ServerInfo::default(),
            Err(err) => {
                return Err(err).with_context(|| {
                    format!(
                        "Failed to ask {} for its runtimes; give the runtimes",
                        binary.display()
                    )
                })
            }
        };
        let launch = match server_command {
            Some(text) => Launch::Template {
                binary,
                template: CommandTemplate::parse(text)?,
            },
            None => Launch::Binary(binary),
        };
        Ok((launch, info))
    }

    /// [`Launch::resolve`], and the runtimes to run: `runtimes` if given, else every one the binary
    /// lists (none at all is an error).
    pub fn resolve_runtimes(
        binary: Option<&Path>,
        server_command: Option<&str>,
        runtimes: &[String],
    ) -> Result<(Launch, ServerInfo, Vec<String>)> {
        let (launch, info) = Launch::resolve(binary, server_command, !runtimes.is_empty())?;
        let runtimes = info.pick_runtimes(runtimes);
        if runtimes.is_empty() {
            bail!("no runtime to study: the binary lists none, give --runtimes");
        }
        Ok((launch, info, runtimes))
    }

    /// The server binary (the one asked for its runtimes and version).
    pub fn binary(&self) -> &PathBuf {
        match self {
            Launch::Binary(binary) | Launch::Template { binary, .. } => binary,
        }
    }

    /// The command every server is started with, placeholders unfilled, for the report.
    pub fn describe(&self) -> String {
        match self {
            Launch::Binary(binary) => format!(
                "{} serve --runtime {{runtime}} --service all --listen {{listen}} --store {{store}} \
                 --data-dir {{data_dir}} --workers {{workers}} ...",
                binary.display()
            ),
            Launch::Template { template, .. } => template.text().to_owned(),
        }
    }

    /// Whether servers started this way receive `placeholder`'s value (the standard flags carry
    /// every one).
    pub fn passes(&self, placeholder: &str) -> bool {
        match self {
            Launch::Binary(_) => true,
            Launch::Template { template, .. } => template.uses(placeholder),
        }
    }

    /// Refuses a template that would let runs share state or measure the wrong thing: every run
    /// needs its own data folder (`{data_dir}`) on the embedded store and its own databases
    /// (`{database_prefix}`) on mongo, a preload needs `{preload}`, and comparing runtimes needs
    /// `{runtime}`. The standard flags carry all of them.
    pub fn check(&self, store: &str, preloading: bool, runtimes: usize) -> Result<()> {
        let Launch::Template { template, .. } = self else {
            return Ok(());
        };
        let needs = [
            (
                "data_dir",
                store == "embedded",
                "every run's fresh data folder",
            ),
            (
                "database_prefix",
                store == "mongo",
                "every run's fresh databases",
            ),
            ("preload", preloading, "the preload"),
            ("runtime", runtimes > 1, "the runtime to serve with"),
        ];
        for (name, needed, what) in needs {
            if needed && !template.uses(name) {
                bail!(
                    "--server-command has no {{{name}}}, so {what} cannot reach the server: add \
                     it (docs/embedding.md lists the placeholders)"
                );
            }
        }
        Ok(())
    }

    /// Whether the command is the standard `serve --service all` (so the binary's `runtimes
    /// --json` services are the ones it will announce).
    pub fn serves_all(&self) -> bool {
        matches!(self, Launch::Binary(_))
    }
}

/// A command line with `{placeholder}`s, split into words like a shell would (quotes, no
/// expansion): `'{binary} serve --runtime {runtime} --listen {listen} --store {store}'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandTemplate {
    text: String,
    words: Vec<String>,
}

impl CommandTemplate {
    /// Parses and checks a template: words split, every placeholder known, `{listen}` or `{port}`
    /// present (compare picks the ports).
    pub fn parse(text: &str) -> Result<CommandTemplate> {
        let Some(words) = shlex::split(text) else {
            bail!("--server-command {text:?}: unbalanced quotes");
        };
        if words.is_empty() {
            bail!("--server-command is empty");
        }
        let mut used = Vec::new();
        for word in &words {
            let mut rest = word.as_str();
            while let Some(start) = rest.find('{') {
                let Some(len) = rest[start..].find('}') else {
                    break;
                };
                let name = &rest[start + 1..start + len];
                let is_name = !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit());
                if is_name {
                    if !PLACEHOLDERS.contains(&name) {
                        bail!(
                            "--server-command: unknown placeholder {{{name}}} (known: {})",
                            PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(" ")
                        );
                    }
                    used.push(name.to_owned());
                }
                rest = &rest[start + len + 1..];
            }
        }
        if !used.iter().any(|p| p == "listen" || p == "port") {
            bail!(
                "--server-command must place the server with {{listen}} or {{port}}: compare \
                 picks free ports for every run"
            );
        }
        Ok(CommandTemplate {
            text: text.to_owned(),
            words,
        })
    }

    /// Whether the template uses the placeholder `name`.
    pub fn uses(&self, name: &str) -> bool {
        let hole = format!("{{{name}}}");
        self.words.iter().any(|w| w.contains(&hole))
    }

    /// The template as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The words with every placeholder replaced by `value(name)`; a word left empty by the
    /// replacement (an absent value) is dropped.
    pub fn render(&self, value: impl Fn(&str) -> String) -> Vec<String> {
        self.words
            .iter()
            .map(|word| {
                let mut out = word.clone();
                for name in PLACEHOLDERS {
                    let hole = format!("{{{name}}}");
                    if out.contains(&hole) {
                        out = out.replace(&hole, &value(name));
                    }
                }
                out
            })
            .filter(|word| !word.is_empty())
            .collect()
    }
}

/// How to start one run's server.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// The binary and how to start it.
    pub launch: Launch,
    /// The runtime to serve with (`axum`, `actix`, ...).
    pub runtime: String,
    /// The store kind (`embedded`, `memory`, `mongo`).
    pub store: String,
    /// The MongoDB URI, for `mongo`.
    pub mongodb_uri: Option<String>,
    /// Worker threads for the runtime.
    pub workers: u32,
    /// The first of the consecutive ports its services take.
    pub port: u16,
    /// A fresh folder for the embedded store's files.
    pub data_dir: PathBuf,
    /// `--preload N`: documents per collection the server fills its empty store with before it
    /// listens (0: none).
    pub preload: u64,
    /// `--database-prefix`: fresh database names for a store shared between runs (MongoDB); the
    /// server drops those databases when it stops.
    pub database_prefix: Option<String>,
    /// The services it will announce, when known before it starts (a binary's `runtimes --json`
    /// with the standard flags); `None`: learned from its announcements alone.
    pub services: Option<Vec<String>>,
    /// Where the process's stdout and stderr go.
    pub log_path: PathBuf,
    /// CPUs to pin the process to, if any.
    pub cpus: Option<Vec<usize>>,
    /// `--handicap-us N`: the calibration knob, a known CPU cost per request, µs (0: off).
    pub handicap_us: f64,
    /// The protocol it is measured over: it is started with [`serve_protocol_args`] and its
    /// readiness asked over that protocol.
    pub protocol: Protocol,
}

/// The serve flags a server needs to be measured over `protocol`: none for plaintext HTTP/1.1,
/// `--protocol h2c` for HTTP/2 by prior knowledge, and `--tls-self-signed` for both TLS protocols
/// (the server offers `h2, http/1.1` by ALPN; the generator's offer picks one), and
/// `--protocol h3 --tls-self-signed` for HTTP/3 (QUIC on the same port number, beside TLS on TCP).
pub fn serve_protocol_args(protocol: Protocol) -> &'static [&'static str] {
    match protocol {
        Protocol::H1 => &[],
        Protocol::H2c => &["--protocol", "h2c"],
        Protocol::H1Tls | Protocol::H2Tls => &["--tls-self-signed"],
        // QUIC beside TLS on TCP: the runtimes without h3 refuse it at start.
        Protocol::H3 => &["--protocol", "h3", "--tls-self-signed"],
    }
}

impl ServerSpec {
    /// The program and its arguments.
    pub fn command(&self) -> (PathBuf, Vec<String>) {
        match &self.launch {
            Launch::Binary(binary) => (binary.clone(), self.serve_args()),
            Launch::Template { template, .. } => {
                let mut words = template.render(|name| self.value(name));
                let program = PathBuf::from(words.remove(0));
                (program, words)
            }
        }
    }

    /// The command line as one string, for logs and reports.
    pub fn command_line(&self) -> String {
        let (program, args) = self.command();
        std::iter::once(program.display().to_string())
            .chain(args)
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The number of consecutive ports to reserve for it.
    pub fn port_count(&self) -> u16 {
        match &self.services {
            Some(services) if !services.is_empty() => services.len().min(64) as u16,
            // Not said: a block roomy enough for a handful of services.
            _ => UNKNOWN_PORT_BLOCK,
        }
    }

    /// A placeholder's value.
    fn value(&self, name: &str) -> String {
        match name {
            "binary" => self.launch.binary().display().to_string(),
            "runtime" => self.runtime.clone(),
            "store" => self.store.clone(),
            "listen" => format!("127.0.0.1:{}", self.port),
            "port" => self.port.to_string(),
            "data_dir" => self.data_dir.display().to_string(),
            "workers" => self.workers.to_string(),
            "mongodb_uri" => self.mongodb_uri.clone().unwrap_or_default(),
            "preload" => self.preload.to_string(),
            "database_prefix" => self.database_prefix.clone().unwrap_or_default(),
            "handicap_us" => self.handicap_us.to_string(),
            _ => String::new(),
        }
    }

    /// The standard serve flags.
    fn serve_args(&self) -> Vec<String> {
        let mut args = vec![
            "serve".to_owned(),
            "--runtime".to_owned(),
            self.runtime.clone(),
            "--service".to_owned(),
            "all".to_owned(),
            "--listen".to_owned(),
            format!("127.0.0.1:{}", self.port),
            "--store".to_owned(),
            self.store.clone(),
            "--data-dir".to_owned(),
            self.data_dir.display().to_string(),
            "--workers".to_owned(),
            self.workers.to_string(),
        ];
        if let Some(uri) = &self.mongodb_uri {
            args.push("--mongodb-uri".to_owned());
            args.push(uri.clone());
        }
        if self.preload > 0 {
            args.push("--preload".to_owned());
            args.push(self.preload.to_string());
        }
        if let Some(prefix) = &self.database_prefix {
            args.push("--database-prefix".to_owned());
            args.push(prefix.clone());
            args.push("--drop-databases-on-exit".to_owned());
        }
        if self.handicap_us > 0.0 {
            args.push("--handicap-us".to_owned());
            args.push(self.handicap_us.to_string());
        }
        args.extend(
            serve_protocol_args(self.protocol)
                .iter()
                .map(|&a| a.to_owned()),
        );
        args
    }
}

/// Ports reserved for a server whose services are not known before it starts.
pub const UNKNOWN_PORT_BLOCK: u16 = 8;

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(launch: Launch) -> ServerSpec {
        ServerSpec {
            launch,
            runtime: "warp".into(),
            store: "embedded".into(),
            mongodb_uri: None,
            workers: 1,
            port: 9000,
            data_dir: "/tmp/x".into(),
            preload: 0,
            database_prefix: None,
            services: None,
            log_path: "/tmp/x.log".into(),
            cpus: None,
            handicap_us: 0.0,
            protocol: Protocol::H1,
        }
    }

    #[test]
    fn the_standard_flags_carry_every_setting() {
        let spec = spec(Launch::Binary("srv".into()));
        assert_eq!(
            spec.command_line(),
            "srv serve --runtime warp --service all --listen 127.0.0.1:9000 --store embedded \
             --data-dir /tmp/x --workers 1"
        );
        let fresh = ServerSpec {
            store: "mongo".into(),
            mongodb_uri: Some("mongodb://h".into()),
            preload: 500,
            database_prefix: Some("run3_".into()),
            ..spec
        };
        assert!(
            fresh.command_line().ends_with(
                "--mongodb-uri mongodb://h --preload 500 --database-prefix run3_ \
                 --drop-databases-on-exit"
            ),
            "{}",
            fresh.command_line()
        );
    }

    #[test]
    fn each_protocol_starts_the_server_with_the_flags_it_needs() {
        let flags = |protocol| {
            let spec = ServerSpec {
                protocol,
                ..spec(Launch::Binary("srv".into()))
            };
            let line = spec.command_line();
            let standard = "srv serve --runtime warp --service all --listen 127.0.0.1:9000 \
                            --store embedded --data-dir /tmp/x --workers 1";
            line.strip_prefix(standard)
                .unwrap_or(&line)
                .trim()
                .to_owned()
        };
        assert_eq!(flags(Protocol::H1), "");
        assert_eq!(flags(Protocol::H2c), "--protocol h2c");
        assert_eq!(flags(Protocol::H1Tls), "--tls-self-signed");
        assert_eq!(flags(Protocol::H2Tls), "--tls-self-signed");
    }

    #[test]
    fn a_template_is_split_like_a_shell_and_its_placeholders_filled() {
        let template = CommandTemplate::parse(
            "{binary} serve --runtime {runtime} --service one --listen {listen} \
             --data-dir '{data_dir}/my data' --workers={workers} --mongodb-uri={mongodb_uri} \
             {mongodb_uri} --tag \"p{port}\"",
        )
        .unwrap();
        let spec = spec(Launch::Template {
            binary: "/bin/srv".into(),
            template,
        });
        let (program, args) = spec.command();
        assert_eq!(program, PathBuf::from("/bin/srv"));
        assert_eq!(
            args,
            [
                "serve",
                "--runtime",
                "warp",
                "--service",
                "one",
                "--listen",
                "127.0.0.1:9000",
                "--data-dir",
                "/tmp/x/my data",
                "--workers=1",
                "--mongodb-uri=",
                "--tag",
                "p9000"
            ],
            "an absent value leaves `--flag=` and drops a word that was only the placeholder"
        );
        assert_eq!(spec.port_count(), UNKNOWN_PORT_BLOCK);
        let known = ServerSpec {
            services: Some(vec!["a".into(), "b".into()]),
            ..spec
        };
        assert_eq!(known.port_count(), 2);
    }

    #[test]
    fn a_template_with_a_mistake_is_refused_with_the_reason() {
        for (text, reason) in [
            (
                "srv --listen {listen} --x {nope}",
                "unknown placeholder {nope}",
            ),
            ("srv serve --runtime {runtime}", "{listen} or {port}"),
            ("srv 'unclosed {listen}", "unbalanced quotes"),
            ("   ", "empty"),
        ] {
            let err = format!("{:#}", CommandTemplate::parse(text).unwrap_err());
            assert!(err.contains(reason), "{text}: {err}");
        }
        // Braces that are not placeholders (JSON, say) are left alone.
        let t = CommandTemplate::parse(r#"srv --port {port} --config '{"a": 1}'"#).unwrap();
        assert_eq!(
            t.render(|_| "7".into()),
            ["srv", "--port", "7", "--config", r#"{"a": 1}"#]
        );
    }

    #[test]
    fn a_template_that_would_share_state_between_runs_is_refused() {
        let launch = |text: &str| Launch::Template {
            binary: "srv".into(),
            template: CommandTemplate::parse(text).unwrap(),
        };
        let bare = launch("srv --listen {listen}");
        assert!(bare.check("memory", false, 1).is_ok());
        for (store, preloading, runtimes, missing) in [
            ("embedded", false, 1, "{data_dir}"),
            ("mongo", false, 1, "{database_prefix}"),
            ("memory", true, 1, "{preload}"),
            ("memory", false, 2, "{runtime}"),
        ] {
            let err = bare
                .check(store, preloading, runtimes)
                .unwrap_err()
                .to_string();
            assert!(err.contains(missing), "{err}");
        }
        let full = launch(
            "srv --runtime {runtime} --listen {listen} --data-dir {data_dir} --preload {preload} \
             --database-prefix={database_prefix}",
        );
        assert!(full.check("mongo", true, 3).is_ok());
        assert!(full.check("embedded", true, 3).is_ok());
        assert!(Launch::Binary("srv".into()).check("mongo", true, 3).is_ok());
    }
}
