//! The names this service answers to, checked on every request before any route runs (the web
//! interface, the API and `/metrics` alike). A browser tricked by DNS rebinding sends the
//! attacker's name in `Host`, so answering only to our own names keeps a web site a person
//! visits from reaching a server on their loopback or private network through their browser.
//!
//! The names: the `--public-url` host, the listening address, each `--allowed-host`, and when
//! listening on loopback (or on every address) `localhost`, `*.localhost` and every loopback
//! address. Names are compared in ASCII lower case without a trailing dot; the port is not
//! compared (a proxy may forward on another port), only checked to be a port.

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// The names one running service answers to.
#[derive(Debug, Clone)]
pub struct AllowedHosts {
    /// Names and address literals (lower case, no trailing dot, IPv6 without brackets).
    names: Vec<String>,
    /// The listening address: loopback names and addresses are this service's own.
    loopback: bool,
    /// Listening on every address: any address literal of this machine reaches it (an address
    /// literal cannot be rebound, so every one is accepted).
    any_address: bool,
}

impl AllowedHosts {
    /// The names of a service listening on `listen`, reached at `public_url` (`scheme://host[:port]`)
    /// and at the `extra` names.
    pub fn new(listen: SocketAddr, public_url: Option<&str>, extra: &[String]) -> Self {
        let mut names = vec![listen.ip().to_string()];
        if let Some(url) = public_url {
            let rest = url
                .split_once("://")
                .map_or(url, |(_, rest)| rest)
                .trim_end_matches('/');
            if let Some((host, _)) = split_port(rest) {
                names.push(host);
            }
        }
        for name in extra {
            if let Some((host, _)) = split_port(name.trim()) {
                names.push(host);
            }
        }
        names.retain(|name| !name.is_empty());
        AllowedHosts {
            names,
            loopback: listen.ip().is_loopback(),
            any_address: listen.ip().is_unspecified(),
        }
    }

    /// Whether a `Host` header's value names this service.
    pub fn allows(&self, host: &str) -> bool {
        let Some((name, _port)) = split_port(host) else {
            return false;
        };
        if self.names.contains(&name) {
            return true;
        }
        if let Ok(ip) = name.parse::<IpAddr>() {
            return self.any_address || ((self.loopback) && ip.is_loopback());
        }
        (self.loopback || self.any_address) && (name == "localhost" || name.ends_with(".localhost"))
    }
}

/// An `--allowed-host` value: a host name or address, optionally with a port (which is not
/// compared).
pub fn parse_name(value: &str) -> Result<String, String> {
    split_port(value.trim())
        .map(|(host, _)| host)
        .ok_or_else(|| "not a host name or address (IPv6 in brackets)".to_string())
}

/// The host of `host[:port]` (IPv6 in brackets) in lower case without a trailing dot, and its
/// port; `None` when it is no host at all (empty, a port that is not a number, characters no
/// host name has).
fn split_port(value: &str) -> Option<(String, Option<u16>)> {
    let (host, port) = if let Some(rest) = value.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        inside.parse::<std::net::Ipv6Addr>().ok()?;
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':')?),
        };
        (inside, port)
    } else {
        match value.rsplit_once(':') {
            // A second colon without brackets is an IPv6 address, which `Host` must bracket.
            Some((host, _)) if host.contains(':') => return None,
            Some((host, port)) => (host, Some(port)),
            None => (value, None),
        }
    };
    let port = match port {
        None => None,
        Some(port) => Some(port.parse::<u16>().ok()?),
    };
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    let valid = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b':'));
    valid.then_some((host, port))
}

/// Answers 421 to a request for a name this service does not answer to, and 400 to one without
/// a `Host`, before any route runs.
pub async fn check(
    State(allowed): State<Arc<AllowedHosts>>,
    request: Request,
    next: Next,
) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .map(|value| value.to_str().unwrap_or(""));
    match host {
        Some(host) if allowed.allows(host) => next.run(request).await,
        Some(_) => crate::api::problem::problem(
            StatusCode::MISDIRECTED_REQUEST,
            "this server does not answer to that Host; use its own address \
             (an administrator adds names with --allowed-host)",
        ),
        None => {
            crate::api::problem::problem(StatusCode::BAD_REQUEST, "the request has no Host header")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::AllowedHosts;
    use std::net::SocketAddr;

    fn at(listen: &str, public: Option<&str>, extra: &[&str]) -> AllowedHosts {
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        AllowedHosts::new(listen.parse::<SocketAddr>().unwrap(), public, &extra)
    }

    #[test]
    fn loopback_listeners_answer_to_loopback_names_only() {
        let hosts = at("127.0.0.1:8080", None, &[]);
        for good in [
            "127.0.0.1:8080",
            "127.0.0.1",
            "127.0.0.2:9",
            "localhost:8080",
            "LOCALHOST.",
            "localhost.:8080",
            "app.localhost",
            "[::1]:8080",
            "[::1]",
        ] {
            assert!(hosts.allows(good), "{good}");
        }
        for bad in [
            "attacker.example",
            "attacker.example:8080",
            "ATTACKER.EXAMPLE.",
            "localhost.attacker.example",
            "10.0.0.1:8080",
            "[2001:db8::1]:8080",
            "::1",
            "127.0.0.1:port",
            "127.0.0.1:99999",
            "",
            ":8080",
            "a b",
            "[::1",
            "user@127.0.0.1",
        ] {
            assert!(!hosts.allows(bad), "{bad}");
        }
    }

    #[test]
    fn public_and_allowed_names_are_answered_in_any_case_and_with_any_port() {
        let hosts = at(
            "10.0.0.5:8080",
            Some("https://Watch.Example.com"),
            &["intranet.corp", "[2001:db8::5]"],
        );
        for good in [
            "watch.example.com",
            "WATCH.example.com.:443",
            "intranet.corp:8080",
            "10.0.0.5:8080",
            "[2001:db8::5]:8080",
        ] {
            assert!(hosts.allows(good), "{good}");
        }
        for bad in ["localhost", "127.0.0.1", "example.com", "10.0.0.6"] {
            assert!(!hosts.allows(bad), "{bad}");
        }
        let every = at("0.0.0.0:8080", None, &[]);
        assert!(every.allows("192.168.1.9:8080"));
        assert!(every.allows("localhost"));
        assert!(!every.allows("rebound.example"));
    }
}
