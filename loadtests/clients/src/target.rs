//! Where the generator sends: each service's target URL parsed and resolved once, before a run,
//! into the address, `host` header, path prefix and TLS server name every connection to it uses.

use std::net::{SocketAddr, ToSocketAddrs};

use anyhow::{anyhow, bail, Context, Result};
use http::header::HeaderValue;
use rustls::pki_types::ServerName;

/// Where one service is reached.
#[derive(Debug, Clone)]
pub struct Target {
    /// The URL as given.
    pub url: String,
    /// The resolved address (resolved once, before the run).
    pub addr: SocketAddr,
    /// The `host` header.
    pub host: HeaderValue,
    /// A path prefix from the URL (`http://h:1/api` → `/api`), empty for none.
    pub prefix: String,
    /// Whether the URL is `https://`.
    pub https: bool,
    /// The URL's host, without brackets or port.
    pub hostname: String,
    /// The host as a TLS server name (SNI), when it is one.
    pub server_name: Option<ServerName<'static>>,
}

impl Target {
    /// Parses and resolves `http[s]://host:port[/prefix]`.
    pub fn parse(url: &str) -> Result<Target> {
        let uri: http::Uri = url
            .parse()
            .with_context(|| format!("{url:?} is not a URL"))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            Some(other) => {
                bail!("{url}: only http:// and https:// targets are supported, not {other}://")
            }
            None => bail!("{url}: the URL needs a scheme (http://host:port)"),
        };
        let authority = uri.authority().ok_or_else(|| anyhow!("{url}: no host"))?;
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        let hostname = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let addr = (hostname.as_str(), port)
            .to_socket_addrs()
            .with_context(|| format!("Failed to resolve {url}"))?
            .next()
            .ok_or_else(|| anyhow!("{url}: the host resolves to no address"))?;
        let prefix = uri.path().trim_end_matches('/').to_string();
        Ok(Target {
            url: url.to_string(),
            addr,
            host: HeaderValue::from_str(authority.as_str())?,
            prefix,
            https,
            server_name: ServerName::try_from(hostname.clone()).ok(),
            hostname,
        })
    }
}
