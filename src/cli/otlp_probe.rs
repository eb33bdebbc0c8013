//! A look, at startup, whether anything listens where spans are to be
//! exported: the exporter sends in the background and drops what it cannot
//! deliver, so without this a collector that is not there goes unnoticed.

use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// How long a connection to the collector may take before it counts as
/// unreachable (a collector that is there answers well within it).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Prints a warning on stderr when no TCP connection can be made to the
/// host and port of `endpoint` (an OTLP/HTTP URL); says nothing otherwise.
pub(crate) fn warn_if_unreachable(endpoint: &str) {
    if let Err(why) = reachable(endpoint) {
        eprintln!(
            "troupe: warning: no OTLP collector answers at {endpoint} ({why}); spans will not be exported"
        );
    }
}

/// Whether a TCP connection to `endpoint`'s host and port can be made;
/// why not otherwise.
fn reachable(endpoint: &str) -> Result<(), String> {
    let url: axum::http::Uri = endpoint.parse().map_err(|e| format!("not a URL: {e}"))?;
    let host = url.host().ok_or("no host in the URL")?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = match (url.port_u16(), url.scheme_str()) {
        (Some(port), _) => port,
        (None, Some("https")) => 443,
        (None, _) => 80,
    };
    let addrs = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?;
    let mut last = format!("{host} resolves to no address");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            Ok(_) => return Ok(()),
            Err(e) => last = format!("{addr}: {e}"),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::reachable;

    #[test]
    fn a_listener_is_reachable_and_a_closed_port_is_not() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        assert!(reachable(&format!("http://{addr}/v1/traces")).is_ok());
        drop(listener);
        let why = reachable(&format!("http://{addr}/v1/traces")).unwrap_err();
        assert!(why.contains(&addr.to_string()), "{why}");
        assert!(reachable("not a url").is_err());
    }
}
