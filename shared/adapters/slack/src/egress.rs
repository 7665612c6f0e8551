//! Where the process's HTTP client may connect: a host name that resolves
//! only to loopback, link-local or the instance metadata service is refused,
//! so an HTTP tool whose API's name points there (a mistake, or a poisoned
//! record) cannot reach the function's own credentials. Addresses written
//! as such in a tool's URL (`http://127.0.0.1:8080/…`) are not resolved and
//! stay reachable: the configuration named them itself. Private ranges
//! (10/8, 172.16/12, 192.168/16) stay reachable: that is where team APIs live.

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::net::{IpAddr, SocketAddr};

/// The resolver the process's client uses (see the module).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoInternalAddresses;

/// Loopback, link-local (169.254.0.0/16, fe80::/10, which holds the
/// metadata service at 169.254.169.254), the metadata service's IPv6
/// address (fd00:ec2::254) and the unspecified address.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_link_local() || v4.is_unspecified(),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_internal(IpAddr::V4(v4));
            }
            v6.is_loopback()
                || v6.is_unspecified()
                || (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6 == "fd00:ec2::254".parse::<std::net::Ipv6Addr>().expect("a valid address")
        }
    }
}

impl Resolve for NoInternalAddresses {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = resolved.into_iter().filter(|addr| !is_internal(addr.ip())).collect();
            if allowed.is_empty() {
                return Err(
                    format!("{host} resolves only to loopback, link-local or metadata addresses: refused").into()
                );
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_link_local_and_metadata_are_internal_and_private_ranges_are_not() {
        for internal in [
            "127.0.0.1",
            "127.8.9.10",
            "169.254.169.254",
            "169.254.0.1",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
        ] {
            assert!(is_internal(internal.parse().unwrap()), "{internal}");
        }
        for reachable in ["10.0.3.7", "172.20.1.1", "192.168.1.20", "52.94.236.248", "fd12:3456::1", "2600:1f18::1"] {
            assert!(!is_internal(reachable.parse().unwrap()), "{reachable}");
        }
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_is_refused() {
        let err = NoInternalAddresses.resolve("localhost".parse().unwrap()).await.err().expect("refused");
        assert!(err.to_string().contains("localhost resolves only to loopback"), "{err}");
    }
}
