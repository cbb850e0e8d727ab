//! The private-network policy: which addresses the engine may connect to.
//!
//! By default a monitor may not reach loopback, private, link-local (cloud metadata at
//! 169.254.169.254 included), unique-local, multicast, unspecified or otherwise reserved
//! addresses: a monitoring service fetches URLs its users choose, and must not become a way into
//! the network it runs in. The check applies to the addresses a name resolves to (the resolver
//! below only ever hands the connector allowed addresses, so a DNS answer pointing inside is
//! refused at connect time), and to IP-literal URLs and redirect targets. Through a location's
//! proxy, which resolves names itself, each hop's name is resolved and refused unless every
//! address is allowed (one that does not resolve here is refused too), and https tunnels name
//! the checked addresses. An IPv6 address that carries an IPv4 one (mapped, compatible,
//! translated, NAT64, 6to4) is judged by the IPv4 address.

use ipnet::IpNet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Which addresses may be reached: public ones always; private ones when allowed wholesale
/// or when they fall in an allowed network (say, one intranet range).
///
/// A policy may also be confined to a list of origins ([`NetworkPolicy::only_origins`]): then
/// nothing else is reached, public addresses included.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NetworkPolicy {
    allow_private: bool,
    allowed: Vec<IpNet>,
    /// When set, the only hosts and ports that may be reached (hosts as URLs spell them,
    /// lower case, IPv6 without brackets).
    origins: Option<Vec<(String, u16)>>,
}

/// A request outside the origins a policy is confined to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refused to connect to {target}: only {allowed} may be reached from here")]
pub struct OutsideOrigins {
    /// The host and port asked for.
    pub target: String,
    /// The origins allowed, comma-separated.
    pub allowed: String,
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
            ..NetworkPolicy::default()
        }
    }

    /// Also allows the addresses in `network`.
    pub fn allowing(mut self, network: IpNet) -> Self {
        self.allowed.push(network);
        self
    }

    /// Confines the policy to these hosts and ports (hosts as URLs spell them): every other
    /// target is refused, public ones included, whatever else the policy allows.
    pub fn only_origins(mut self, origins: impl IntoIterator<Item = (String, u16)>) -> Self {
        let list = self.origins.get_or_insert_with(Vec::new);
        list.extend(origins.into_iter().map(|(h, p)| (bare(&h), p)));
        self
    }

    /// Whether every address is allowed (and every origin).
    pub fn allows_all(&self) -> bool {
        self.allow_private && self.origins.is_none()
    }

    /// Checks a target's host (as a URL or a `CONNECT` spells it) and port against the origins
    /// the policy is confined to, if it is.
    pub fn check_origin(&self, host: &str, port: u16) -> Result<(), OutsideOrigins> {
        let Some(origins) = &self.origins else {
            return Ok(());
        };
        let host = bare(host);
        if origins.iter().any(|(h, p)| *h == host && *p == port) {
            return Ok(());
        }
        let shown = |h: &str, p: u16| match h.contains(':') {
            true => format!("[{h}]:{p}"),
            false => format!("{h}:{p}"),
        };
        Err(OutsideOrigins {
            target: shown(&host, port),
            allowed: origins
                .iter()
                .map(|(h, p)| shown(h, *p))
                .collect::<Vec<_>>()
                .join(", "),
        })
    }

    /// Checks one address.
    pub fn check(&self, host: &str, addr: IpAddr) -> Result<(), Refused> {
        // An allowed IPv4 network also allows its addresses spelled inside IPv6 (a mapped
        // `::ffff:10.20.0.1` reaches the same host as `10.20.0.1`).
        let inside = embedded_v4(addr).map(IpAddr::V4);
        let allowed = |a: IpAddr| self.allowed.iter().any(|net| net.contains(&a));
        if self.allow_private || allowed(addr) || inside.is_some_and(allowed) {
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

    /// `host`'s addresses on `port` (an IP literal is its own), split by the policy: those it
    /// allows, and its first refusal when it refused one. An error when the name does not
    /// resolve. The one resolution every connection of the engine is judged by (the plain
    /// fetcher's connector and name check, the render egress).
    pub(crate) async fn screen(
        &self,
        host: &str,
        port: u16,
    ) -> std::io::Result<(Vec<SocketAddr>, Option<Refused>)> {
        let resolved: Vec<SocketAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => tokio::net::lookup_host((host, port)).await?.collect(),
        };
        let mut refusal = None;
        let mut allowed = Vec::with_capacity(resolved.len());
        for addr in resolved {
            match self.check(host, addr.ip()) {
                Ok(()) => allowed.push(addr),
                Err(refused) => {
                    refusal.get_or_insert(refused);
                }
            }
        }
        Ok((allowed, refusal))
    }
}

/// A host as compared: lower case, an IPv6 address without its brackets.
fn bare(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// The kind of non-public address `addr` is, or `None` for a public one.
pub fn classify(addr: IpAddr) -> Option<&'static str> {
    match addr {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(reason) = classify_v6(v6) {
                return Some(reason);
            }
            let inside = embedded_v4s(v6);
            // A reading of all zeros is the padding of another prefix length (unless every
            // reading is: then it stands for 0.0.0.0, which reaches this host).
            let zero = Ipv4Addr::UNSPECIFIED;
            let meant = inside.iter().flatten().filter(|v4| **v4 != zero);
            match inside.iter().flatten().any(|v4| *v4 != zero) {
                true => meant.copied().find_map(classify_v4),
                false => inside[0].and_then(|_| classify_v4(zero)),
            }
        }
    }
}

/// The IPv4 address an IPv6 address stands for, when it has exactly one: IPv4-compatible
/// (`::a.b.c.d`), mapped (`::ffff:a.b.c.d`), translated (`::ffff:0:a.b.c.d`), NAT64's
/// well-known prefix (`64:ff9b::a.b.c.d`) and 6to4 (`2002:aabb:ccdd::/48`).
fn embedded_v4(addr: IpAddr) -> Option<Ipv4Addr> {
    match addr {
        IpAddr::V4(_) => None,
        IpAddr::V6(v6) => match embedded_v4s(v6) {
            [Some(v4), None, None, None] => Some(v4),
            _ => None,
        },
    }
}

/// Every IPv4 address `ip` may carry to an IPv4 host, by the transition mechanisms that embed
/// one: such an address reaches whatever the IPv4 address inside reaches, so it is judged by
/// it. NAT64's local-use prefix (`64:ff9b:1::/48`, RFC 8215) may be operated at any of RFC
/// 6052's prefix lengths from /48 on, so all four positions are candidates there.
fn embedded_v4s(ip: Ipv6Addr) -> [Option<Ipv4Addr>; 4] {
    let s = ip.segments();
    let o = ip.octets();
    let v4 = |a: u8, b: u8, c: u8, d: u8| Some(Ipv4Addr::new(a, b, c, d));
    let last = v4(o[12], o[13], o[14], o[15]);
    match s {
        // IPv4-compatible (deprecated, still routed by some stacks); `::` and `::1` are
        // IPv6's own unspecified and loopback, classified before.
        [0, 0, 0, 0, 0, 0, _, _] => [last, None, None, None],
        // Mapped, and SIIT's translated form.
        [0, 0, 0, 0, 0, 0xffff, _, _] | [0, 0, 0, 0, 0xffff, 0, _, _] => [last, None, None, None],
        // NAT64, well-known prefix (/96 only).
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => [last, None, None, None],
        // NAT64, local-use prefix: octet 8 (bits 64..72) is always skipped (RFC 6052 2.2).
        [0x64, 0xff9b, 0x0001, ..] => [
            v4(o[6], o[7], o[9], o[10]),
            v4(o[7], o[9], o[10], o[11]),
            v4(o[9], o[10], o[11], o[12]),
            last,
        ],
        // 6to4: the IPv4 address in bits 16..48.
        [0x2002, ..] => [v4(o[2], o[3], o[4], o[5]), None, None, None],
        _ => [None, None, None, None],
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
    } else if first == 0x0064
        && ip.segments()[1] == 0xff9b
        && ip.segments()[2..6] != [0, 0, 0, 0]
        && ip.segments()[2] != 0x0001
    {
        // The rest of 64:ff9b::/32 is reserved for translators (RFC 8215); the two
        // prefixes in use are judged by the IPv4 address inside.
        "NAT64"
    } else {
        return None;
    })
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
    fn ipv6_addresses_with_an_ipv4_inside_are_judged_by_it() {
        for (addr, kind) in [
            // IPv4-compatible.
            ("::127.0.0.1", Some("loopback")),
            ("::10.0.0.1", Some("private-network")),
            ("::8.8.8.8", None),
            // Mapped.
            ("::ffff:127.0.0.1", Some("loopback")),
            ("::ffff:169.254.169.254", Some("link-local")),
            ("::ffff:8.8.8.8", None),
            // Translated (SIIT).
            ("::ffff:0:127.0.0.1", Some("loopback")),
            ("::ffff:0:192.168.0.1", Some("private-network")),
            ("::ffff:0:8.8.8.8", None),
            // NAT64, well-known prefix.
            ("64:ff9b::127.0.0.1", Some("loopback")),
            ("64:ff9b::a9fe:a9fe", Some("link-local")),
            ("64:ff9b::8.8.8.8", None),
            // NAT64, local-use prefix, at /48 (10.0.0.1: 0a00 in bits 48..64, 0001 after
            // the skipped octet). Every reading counts: at /96, 127.0.0.1 reads 0.0.0.127 at
            // /64, refused first.
            ("64:ff9b:1:a00:1:100::", Some("private-network")),
            ("64:ff9b:1:808:8:800::", None),
            ("64:ff9b:1::127.0.0.1", Some("unspecified")),
            ("64:ff9b:1::", Some("unspecified")),
            // The rest of 64:ff9b::/32 is reserved.
            ("64:ff9b:2::808:808", Some("NAT64")),
            // 6to4: 2002:AABB:CCDD::/48 carries AA.BB.CC.DD.
            ("2002:7f00:1::1", Some("loopback")),
            ("2002:a00:1::1", Some("private-network")),
            ("2002:a9fe:a9fe::", Some("link-local")),
            ("2002:808:808::1", None),
        ] {
            let ip: IpAddr = addr.parse().unwrap();
            assert_eq!(classify(ip), kind, "{addr}");
            assert_eq!(
                NetworkPolicy::public_only().check("h", ip).is_ok(),
                kind.is_none(),
                "{addr}"
            );
        }
        // IPv6's own loopback and unspecified are not IPv4-compatible addresses.
        assert_eq!(classify("::1".parse().unwrap()), Some("loopback"));
        assert_eq!(classify("::".parse().unwrap()), Some("unspecified"));
        // An allowed IPv4 network is allowed however it is spelled.
        let intranet = NetworkPolicy::public_only().allowing("10.20.0.0/16".parse().unwrap());
        for spelled in ["::ffff:10.20.0.1", "::10.20.0.1", "2002:a14:1::1"] {
            assert!(
                intranet.check("h", spelled.parse().unwrap()).is_ok(),
                "{spelled}"
            );
        }
        assert!(
            intranet
                .check("h", "::ffff:10.21.0.1".parse().unwrap())
                .is_err()
        );
    }

    #[test]
    fn a_policy_confined_to_origins_refuses_every_other_target() {
        let policy = NetworkPolicy::allow_all().only_origins([("127.0.0.1".to_string(), 8080)]);
        assert!(!policy.allows_all());
        assert!(policy.check_origin("127.0.0.1", 8080).is_ok());
        assert!(policy.check_origin("127.0.0.1", 8081).is_err());
        assert!(policy.check_origin("localhost", 8080).is_err());
        let err = policy.check_origin("[::1]", 8080).unwrap_err();
        assert_eq!(
            err.to_string(),
            "refused to connect to [::1]:8080: only 127.0.0.1:8080 may be reached from here"
        );
        assert!(NetworkPolicy::allow_all().check_origin("x", 1).is_ok());
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
