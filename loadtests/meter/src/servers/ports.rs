//! Free ports for a server's services: a block of consecutive ports found free on 127.0.0.1, and a
//! start that tries another block when a port found free was taken before the server bound it.

use std::net::TcpListener;
use std::time::Duration;

use anyhow::bail;

use super::launch::ServerSpec;
use super::process::ServerProcess;

/// What a server's log says when a port was taken between finding it free and binding it.
const BIND_FAILURES: [&str; 2] = ["Failed to bind", "Address already in use"];

/// Starts `spec` on a block of free ports (its `port` replaced), avoiding `taken`; a port found free
/// can be taken before the server binds it, so a few blocks are tried.
pub fn start_on_free_ports(
    spec: &ServerSpec,
    taken: &[u16],
    ready_timeout: Duration,
) -> anyhow::Result<ServerProcess> {
    let mut last_err = None;
    for _ in 0..3 {
        let port = free_port_block(spec.port_count(), taken)?;
        let spec = ServerSpec {
            port,
            ..spec.clone()
        };
        match ServerProcess::start(&spec, ready_timeout) {
            Ok(process) => return Ok(process),
            Err(err) => {
                // Only a port taken meanwhile is worth another block; anything else would fail
                // again (and a preload would be paid again).
                let log = std::fs::read_to_string(&spec.log_path).unwrap_or_default();
                if !BIND_FAILURES.iter().any(|failure| log.contains(failure)) {
                    return Err(err);
                }
                last_err = Some(err);
            }
        }
    }
    Err(last_err.unwrap_or_else(|| anyhow::anyhow!("the server did not start")))
}

/// Finds `count` consecutive free TCP ports on 127.0.0.1, avoiding those in `taken`.
///
/// The ports are only free at the time of asking; the caller retries on another block if the
/// server then fails to bind.
pub fn free_port_block(count: u16, taken: &[u16]) -> anyhow::Result<u16> {
    for _ in 0..200 {
        let first = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let Some(last) = first.checked_add(count - 1) else {
            continue;
        };
        if (first..=last).any(|p| taken.contains(&p)) {
            continue;
        }
        let held: Vec<TcpListener> = (first..=last)
            .filter_map(|p| TcpListener::bind(("127.0.0.1", p)).ok())
            .collect();
        if held.len() == count as usize {
            return Ok(first);
        }
    }
    bail!("could not find {count} consecutive free ports on 127.0.0.1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_port_blocks_are_bindable_and_avoid_taken_ports() {
        let first = free_port_block(3, &[]).unwrap();
        for port in first..first + 3 {
            TcpListener::bind(("127.0.0.1", port)).unwrap();
        }
        let other = free_port_block(3, &[first, first + 1, first + 2]).unwrap();
        assert!(!(first..first + 3).contains(&other));
    }
}
