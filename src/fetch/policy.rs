//! The private-network policy: which addresses the engine may connect to.
//!
//! By default a monitor may not reach loopback, private, link-local (cloud metadata at
//! 169.254.169.254 included), unique-local, multicast, unspecified or otherwise reserved
//! addresses: a monitoring service fetches URLs its users choose, and must not become a way into
//! the network it runs in. The check applies to the addresses a name resolves to (the resolver
//! below only ever hands the connector allowed addresses, so a DNS answer pointing inside is
//! refused at connect time), to IP-literal URLs and redirect targets, and to the peer address
//! of the response.

use ipnet::IpNet;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

/// Which addresses may be reached: public ones always; private ones when allowed wholesale
/// or when they fall in an allowed network (say, one intranet range).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NetworkPolicy {
    allow_private: bool,
    allowed: Vec<IpNet>,
}
/// A refused address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "refused to connect to {host} ({addr}): {reason} addresses are not allowed; the server must be configured to allow private networks"
)]
pub struct Refused {
    /// The host as named in the URL.
    pub host: String,
    /// The address it resolved to.
    pub addr: IpAddr,
    /// Which kind of address it is.
    pub reason: &'static str,
}

impl NetworkPolicy {
    /// Public addresses only (the default).
    pub fn public_only() -> Self {
        NetworkPolicy::default()
    }

    /// Every address; for local tools and tests.
    pub fn allow_all() -> Self {
        NetworkPolicy {
            allow_private: true,
            allowed: Vec::new(),
        }
    }

    /// Also allows the addresses in `network`.
    pub fn allowing(mut self, network: IpNet) -> Self {
        self.allowed.push(network);
        self
    }

    /// Whether every address is allowed.
    pub fn allows_all(&self) -> bool {
        self.allow_private
    }

    /// Checks one address.
    pub fn check(&self, host: &str, addr: IpAddr) -> Result<(), Refused> {
        if self.allow_private || self.allowed.iter().any(|net| net.contains(&addr)) {
            return Ok(());
        }
        match classify(addr) {
            None => Ok(()),
            Some(reason) => Err(Refused {
                host: host.to_string(),
                addr,
                reason,
            }),
        }
    }
}

/// The kind of non-public address `addr` is, or `None` for a public one.
pub fn classify(addr: IpAddr) -> Option<&'static str> {
    match addr {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return classify_v4(v4);
            }
            classify_v6(v6)
        }
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(if ip.is_loopback() {
        "loopback"
    } else if ip.is_private() {
        "private-network"
    } else if ip.is_link_local() {
        "link-local"
    } else if ip.is_unspecified() || a == 0 {
        "unspecified"
    } else if ip.is_multicast() {
        "multicast"
    } else if ip.is_broadcast() || a >= 240 {
        "reserved"
    } else if a == 100 && (64..128).contains(&b) {
        "shared (carrier-grade NAT)"
    } else if a == 192 && b == 0 && c == 0 {
        "IETF protocol"
    } else if ip.is_documentation() || (a == 198 && (b == 18 || b == 19)) {
        "reserved"
    } else {
        return None;
    })
}

fn classify_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    Some(if ip.is_loopback() {
        "loopback"
    } else if ip.is_unspecified() {
        "unspecified"
    } else if ip.is_multicast() {
        "multicast"
    } else if first & 0xfe00 == 0xfc00 {
        "unique-local"
    } else if first & 0xffc0 == 0xfe80 {
        "link-local"
    } else if first == 0x2001 && ip.segments()[1] == 0x0db8 {
        "reserved"
    } else if first == 0x0064 && ip.segments()[1] == 0xff9b {
        // NAT64 can embed any IPv4 address, private ones included.
        "NAT64"
    } else {
        return None;
    })
}

/// A resolver that drops refused addresses and fails when none is left.
#[derive(Debug, Clone)]
pub(crate) struct PolicyResolver {
    pub policy: Arc<NetworkPolicy>,
}

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        Box::pin(async move {
            let host = name.as_str().to_string();
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refused = None;
            let allowed: Vec<SocketAddr> = addrs
                .into_iter()
                .filter(|a| match policy.check(&host, a.ip()) {
                    Ok(()) => true,
                    Err(e) => {
                        refused.get_or_insert(e);
                        false
                    }
                })
                .collect();
            if allowed.is_empty() {
                let err: Box<dyn std::error::Error + Send + Sync> = match refused {
                    Some(r) => Box::new(r),
                    None => format!("{host} resolved to no address").into(),
                };
                return Err(err);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

impl PolicyResolver {
    pub fn shared(policy: Arc<NetworkPolicy>) -> Arc<Self> {
        Arc::new(PolicyResolver { policy })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_special_addresses_are_classified() {
        for (addr, kind) in [
            ("127.0.0.1", "loopback"),
            ("10.1.2.3", "private-network"),
            ("172.16.0.1", "private-network"),
            ("192.168.1.1", "private-network"),
            ("169.254.169.254", "link-local"),
            ("0.0.0.0", "unspecified"),
            ("224.0.0.1", "multicast"),
            ("100.64.0.1", "shared (carrier-grade NAT)"),
            ("::1", "loopback"),
            ("fd00::1", "unique-local"),
            ("fe80::1", "link-local"),
            ("::ffff:10.0.0.1", "private-network"),
            ("::", "unspecified"),
            ("ff02::1", "multicast"),
        ] {
            let ip: IpAddr = addr.parse().unwrap();
            assert_eq!(classify(ip), Some(kind), "{addr}");
        }
        for public in ["93.184.216.34", "8.8.8.8", "2606:4700::1111"] {
            assert_eq!(classify(public.parse().unwrap()), None, "{public}");
        }
    }

    #[test]
    fn refusal_says_what_and_why() {
        let err = NetworkPolicy::public_only()
            .check("metadata", "169.254.169.254".parse().unwrap())
            .unwrap_err();
        assert!(err.to_string().contains("169.254.169.254"));
        assert!(err.to_string().contains("link-local"));
        assert!(
            NetworkPolicy::allow_all()
                .check("x", "127.0.0.1".parse().unwrap())
                .is_ok()
        );
        let one = NetworkPolicy::public_only().allowing("127.0.0.1/32".parse().unwrap());
        assert!(one.check("x", "127.0.0.1".parse().unwrap()).is_ok());
        assert!(one.check("x", "127.0.0.2".parse().unwrap()).is_err());
    }
}
