//! Root certificates read from one file at start-up.
//!
//! The AWS SDK and reqwest each load the platform's root certificates
//! through `rustls-native-certs`, which reads the bundle file `openssl-probe`
//! finds *and* every file of every certificate directory it finds. On
//! Lambda's Amazon Linux 2023 both `/etc/ssl/certs` and `/etc/pki/tls/certs`
//! exist (the first a link to the second) and hold the bundle again; on
//! Debian `/etc/ssl/certs` is ~290 files, each a certificate of the bundle.
//! Every one is read and parsed twice (once by each client) on the way to a
//! function's first AWS call: 1.7 ms of the worker's start-up on the
//! benchmark's machine. The bundle file alone holds every root the
//! directories do, so the process is pointed at it before anything loads.

use std::path::PathBuf;

/// The bundle both TLS clients are to read, if the process should be
/// pointed at one: none when the operator set `SSL_CERT_FILE` or
/// `SSL_CERT_DIR` (their choice stands), or when the platform has no bundle
/// file `openssl-probe` knows (the clients' own search then applies).
pub fn bundle_to_pin(file_set: bool, dir_set: bool, probed: Option<PathBuf>) -> Option<PathBuf> {
    if file_set || dir_set { None } else { probed }
}

/// Points `SSL_CERT_FILE` at the platform's bundle file (see
/// [`bundle_to_pin`]), so the TLS clients read that file and no directory.
/// [`crate::startup::configure`] calls it, first thing in `main`.
///
/// # Safety
///
/// Sets an environment variable: no other thread may be running.
pub(crate) unsafe fn read_roots_from_one_file() {
    let set = |name| std::env::var_os(name).is_some();
    let probed = openssl_probe::probe().cert_file;
    if let Some(bundle) = bundle_to_pin(set("SSL_CERT_FILE"), set("SSL_CERT_DIR"), probed) {
        // SAFETY: the caller guarantees no other thread reads the
        // environment concurrently.
        unsafe { std::env::set_var("SSL_CERT_FILE", bundle) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_platform_bundle_is_pinned_unless_the_operator_chose_roots_or_there_is_none() {
        let bundle = || Some(PathBuf::from("/etc/pki/tls/certs/ca-bundle.crt"));
        assert_eq!(bundle_to_pin(false, false, bundle()), bundle());
        assert_eq!(bundle_to_pin(true, false, bundle()), None, "SSL_CERT_FILE set: kept");
        assert_eq!(bundle_to_pin(false, true, bundle()), None, "SSL_CERT_DIR set: kept, with the directory");
        assert_eq!(bundle_to_pin(false, false, None), None, "no bundle file: the clients search as before");
    }

    #[test]
    fn this_machines_bundle_is_found_and_holds_certificates() {
        let bundle = openssl_probe::probe().cert_file.expect("the test machine has a CA bundle");
        let pem = std::fs::read_to_string(&bundle).expect("the bundle reads");
        assert!(
            pem.matches("-----BEGIN CERTIFICATE-----").count() > 50,
            "{} holds a real root store",
            bundle.display()
        );
    }
}
