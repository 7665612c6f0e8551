//! Name lookups in a statically linked binary.
//!
//! The functions ship linked statically against glibc (`shipped_link` in
//! `infra/tools.sh`). glibc looks host names up (`getaddrinfo`, behind
//! every HTTP client here) and users (`getpwuid`, behind a home directory
//! when `HOME` is unset) through the modules `/etc/nsswitch.conf` lists.
//! `files` and `dns` are built in; any other (`myhostname`, `resolve`,
//! `systemd`, …) is a shared library glibc loads with `dlopen`, built for
//! the system's glibc rather than the one linked in: a mix glibc does not
//! support (its linker warns of it), which could fail or crash a lookup.
//! [`pin`] sets both databases to the built-in modules before anything
//! looks a name up, so no module is loaded, whatever the system lists.
//! A dynamically linked build loads modules with the system's own glibc
//! and keeps the system's configuration.

/// In a statically linked build, hosts from `files` then `dns` and users
/// from `files` only; nothing in a dynamically linked one. Call before
/// anything looks a name up (first in `main`: [`crate::startup::configure`]).
/// A database glibc refused is logged: lookups then follow the system's
/// configuration.
pub fn pin() {
    if cfg!(target_feature = "crt-static") {
        for refused in pin_to_built_in() {
            tracing::warn!("name lookups: glibc refused the built-in modules for {refused}; nsswitch.conf applies");
        }
    }
}

/// Sets the two databases glibc looks names up in to its built-in
/// modules; returns those it refused.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn pin_to_built_in() -> Vec<&'static str> {
    use std::ffi::{CStr, c_char, c_int};
    unsafe extern "C" {
        /// glibc's (`nss.h`): a database's service line, in place of
        /// nsswitch.conf's; 0 when taken.
        fn __nss_configure_lookup(database: *const c_char, services: *const c_char) -> c_int;
    }
    let lines: [(&CStr, &CStr); 2] = [(c"hosts", c"files dns"), (c"passwd", c"files")];
    lines
        .into_iter()
        // SAFETY: both are NUL-terminated strings glibc only reads (it
        // copies the service line); called before other threads look up.
        .filter(|(database, services)| unsafe { __nss_configure_lookup(database.as_ptr(), services.as_ptr()) } != 0)
        .map(|(database, _)| database.to_str().unwrap_or("?"))
        .collect()
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn pin_to_built_in() -> Vec<&'static str> {
    Vec::new()
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;
    use std::net::ToSocketAddrs;

    #[test]
    fn pinned_lookups_still_find_hosts_and_users() {
        assert_eq!(pin_to_built_in(), Vec::<&str>::new(), "glibc took both service lines");
        // `localhost` is in /etc/hosts: the `files` module answers it.
        let addresses: Vec<_> = ("localhost", 443).to_socket_addrs().expect("localhost resolves").collect();
        assert!(addresses.iter().all(|address| address.ip().is_loopback() && address.port() == 443), "{addresses:?}");
        // A name no module knows is an error, not a hang or a crash.
        assert!(("no-such-host.invalid", 443).to_socket_addrs().is_err());
    }
}
