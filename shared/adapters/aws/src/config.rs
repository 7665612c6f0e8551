//! Loading the shared AWS configuration once per process.
//!
//! Endpoints come from the SDK's own variables (`AWS_ENDPOINT_URL`,
//! `AWS_ENDPOINT_URL_<SERVICE>`), which is how tests and the local runner
//! point the real clients at a local emulator.
//!
//! The SDK's HTTPS client trusts the roots AWS's endpoints chain to
//! (Amazon Trust Services': [`AMAZON_TRUST_ROOTS`]), not the platform's
//! ~140: it builds a root store for every client and every client's first
//! call, and parsing the platform's each time was about a millisecond of a
//! cold start's path to its first answer; trusting five roots also means no
//! other certificate authority can vouch for an AWS endpoint. Where the
//! endpoints may be someone else's (an `https` endpoint override, the China
//! regions), the platform's roots, as before; `AWS_CA_BUNDLE` (the AWS
//! SDKs' variable, for a TLS-inspecting proxy) names a bundle to trust
//! instead.

use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, SdkConfig};
use aws_smithy_http_client::tls::{self, TlsContext, TrustStore};
use std::time::Duration;

/// The roots of Amazon Trust Services, which issue every AWS endpoint's
/// certificate (the file lists their fingerprints).
pub const AMAZON_TRUST_ROOTS: &str = include_str!("amazon-trust-roots.pem");

/// Which roots the SDK trusts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Roots {
    /// Amazon Trust Services' roots only: AWS's own endpoints.
    AmazonTrust,
    /// The platform's roots.
    Platform,
    /// The bundle `AWS_CA_BUNDLE` names.
    Bundle(String),
}

/// The roots for this process's environment (`vars`, as
/// `std::env::vars()` lists it).
pub fn roots(vars: &[(String, String)]) -> Roots {
    let var = |name: &str| vars.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str());
    if let Some(bundle) = var("AWS_CA_BUNDLE").filter(|path| !path.is_empty()) {
        return Roots::Bundle(bundle.to_owned());
    }
    let overridden_https =
        vars.iter().any(|(key, url)| key.starts_with("AWS_ENDPOINT_URL") && !url.starts_with("http://"));
    let china = var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION")).is_some_and(|region| region.starts_with("cn-"));
    if overridden_https || china { Roots::Platform } else { Roots::AmazonTrust }
}

/// The SDK's HTTPS client trusting `roots`; none: the SDK's default (the
/// platform's roots, found as `rustls-native-certs` finds them). The
/// platform's roots are read from its bundle file alone where it has one
/// and the operator named none (`https::Roots::from_env`): the
/// default also reads every file of every certificate directory, which on
/// Lambda's Amazon Linux and on Debian hold the bundle's certificates again.
fn https_client(roots: &Roots) -> Option<aws_sdk_dynamodb::config::SharedHttpClient> {
    let trust = match roots {
        Roots::Platform => {
            let named = https::Roots::from_env() == https::Roots::Platform;
            return match openssl_probe::probe().cert_file.filter(|_| !named) {
                Some(bundle) => https_client(&Roots::Bundle(bundle.display().to_string())),
                None => None,
            };
        }
        Roots::AmazonTrust => TrustStore::empty().with_pem_certificate(AMAZON_TRUST_ROOTS.as_bytes()),
        Roots::Bundle(path) => match std::fs::read(path).map_err(BadBundle::Read).and_then(|pem| {
            parses_as_roots(&pem)?;
            Ok(pem)
        }) {
            Ok(pem) => TrustStore::empty().with_pem_certificate(pem),
            Err(err) => {
                tracing::error!(%path, error = %err, "AWS_CA_BUNDLE is not a bundle of certificates: the platform's roots are trusted");
                return None;
            }
        },
    };
    let context = TlsContext::builder().with_trust_store(trust).build().expect("a trust store alone always builds");
    Some(
        aws_smithy_http_client::Builder::new()
            .tls_provider(tls::Provider::Rustls(tls::rustls_provider::CryptoMode::AwsLc))
            .tls_context(context)
            .build_https(),
    )
}

/// Whether `pem` holds certificates and every one parses as a root: the
/// SDK builds its root store from it at every client and panics on one
/// that does not.
fn parses_as_roots(pem: &[u8]) -> Result<usize, BadBundle> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut store = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(BadBundle::NotPem)?;
        store.add(cert).map_err(BadBundle::Certificate)?;
    }
    match store.len() {
        0 => Err(BadBundle::Empty),
        n => Ok(n),
    }
}

/// Why `AWS_CA_BUNDLE` is not a bundle of root certificates.
#[derive(Debug, thiserror::Error)]
enum BadBundle {
    #[error("{0}")]
    Read(#[source] std::io::Error),
    #[error("not PEM: {0:?}")]
    NotPem(rustls::pki_types::pem::Error),
    #[error("a certificate does not parse: {0}")]
    Certificate(#[source] rustls::Error),
    #[error("no certificate in it")]
    Empty,
}

/// For the ingress acknowledgement path: Slack gives up after 3 s, so the
/// path's calls together (claim and enqueue, 2 × 0.8 s; with the
/// every-question read before them, 3 × 0.8 s) stay under it, retries
/// included.
pub fn ack_path_timeouts() -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(Duration::from_millis(300))
        .operation_attempt_timeout(Duration::from_millis(400))
        .operation_timeout(Duration::from_millis(800))
        .build()
}

/// For the worker: a model call may stream for minutes, but a connection
/// that does not open or an attempt that never ends must not hold the turn.
pub fn worker_timeouts() -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(3))
        .operation_attempt_timeout(Duration::from_secs(180))
        .build()
}

/// For the responder: short calls, retried by SQS when they fail.
pub fn responder_timeouts() -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(2))
        .operation_attempt_timeout(Duration::from_secs(5))
        .operation_timeout(Duration::from_secs(15))
        .build()
}

pub async fn load(timeouts: TimeoutConfig) -> SdkConfig {
    let loader = aws_config::defaults(BehaviorVersion::latest()).timeout_config(timeouts);
    match https_client(&roots(&std::env::vars().collect::<Vec<_>>())) {
        Some(client) => loader.http_client(client).load().await,
        None => loader.load().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use sha2::Digest;

    fn roots_with(vars: &[(&str, &str)]) -> Roots {
        roots(&vars.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())).collect::<Vec<_>>())
    }

    #[test]
    fn aws_endpoints_are_trusted_to_amazon_trust_services_and_anyone_elses_to_the_platform() {
        assert_eq!(roots_with(&[("AWS_REGION", "eu-west-1")]), Roots::AmazonTrust);
        assert_eq!(roots_with(&[]), Roots::AmazonTrust);
        let emulator = [("AWS_REGION", "us-east-1"), ("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")];
        assert_eq!(roots_with(&emulator), Roots::AmazonTrust, "plain HTTP: no roots are used");
        let elsewhere = [("AWS_ENDPOINT_URL_DYNAMODB", "https://dynamo.internal.example")];
        assert_eq!(roots_with(&elsewhere), Roots::Platform, "someone else's endpoint");
        assert_eq!(roots_with(&[("AWS_REGION", "cn-north-1")]), Roots::Platform);
        assert_eq!(roots_with(&[("AWS_DEFAULT_REGION", "cn-northwest-1")]), Roots::Platform);
        let proxy = [("AWS_CA_BUNDLE", "/etc/proxy/ca.pem"), ("AWS_REGION", "cn-north-1")];
        assert_eq!(roots_with(&proxy), Roots::Bundle("/etc/proxy/ca.pem".into()), "the operator's bundle wins");
        assert_eq!(roots_with(&[("AWS_CA_BUNDLE", "")]), Roots::AmazonTrust, "empty is unset");
    }

    #[test]
    fn the_bundled_roots_are_the_five_amazon_trust_services_roots_the_file_lists() {
        let listed: Vec<String> = AMAZON_TRUST_ROOTS
            .lines()
            .filter_map(|line| line.strip_prefix("#   "))
            .map(|line| line.rsplit(": ").next().unwrap().replace(':', "").to_lowercase())
            .collect();
        let found: Vec<String> = AMAZON_TRUST_ROOTS
            .split("-----BEGIN CERTIFICATE-----")
            .skip(1)
            .map(|block| {
                let body: String =
                    block.split("-----END CERTIFICATE-----").next().unwrap().split_whitespace().collect();
                let der = base64::engine::general_purpose::STANDARD.decode(body).expect("base64");
                hex::encode(sha2::Sha256::digest(&der))
            })
            .collect();
        assert_eq!(found.len(), 5);
        assert_eq!(found, listed, "each certificate is the one its fingerprint line names");
        assert_eq!(listed[0], "8ecde6884f3d87b1125ba31ac3fcb13d7016de7f57cc904fe1cb97c6ae98196e", "Amazon Root CA 1");
    }

    #[tokio::test]
    async fn clients_build_on_each_trust_store() {
        let bundle = std::env::temp_dir().join(format!("ca-{}.pem", std::process::id()));
        std::fs::write(&bundle, AMAZON_TRUST_ROOTS).unwrap();
        for roots in [Roots::AmazonTrust, Roots::Platform, Roots::Bundle(bundle.display().to_string())] {
            let client = https_client(&roots);
            // This machine has a bundle file (asserted below): the
            // platform's roots are read from it, unless the shell names roots.
            let named = https::Roots::from_env() == https::Roots::Platform;
            assert_eq!(client.is_none(), roots == Roots::Platform && named, "{roots:?}");
            let mut config = aws_config::SdkConfig::builder()
                .behavior_version(BehaviorVersion::latest())
                .region(aws_config::Region::new("us-east-1"));
            if let Some(client) = client {
                config = config.http_client(client);
            }
            // Building a client builds its root store: a bundle that did not
            // parse would panic here.
            let _ = aws_sdk_dynamodb::Client::new(&config.build());
        }
        assert!(https_client(&Roots::Bundle("/nonexistent/ca.pem".into())).is_none(), "unreadable: the platform's");
    }

    #[test]
    fn this_machines_bundle_is_found_and_holds_certificates() {
        let bundle = openssl_probe::probe().cert_file.expect("the test machine has a CA bundle");
        let pem = std::fs::read(&bundle).expect("the bundle reads");
        assert!(
            parses_as_roots(&pem).expect("every certificate parses") > 50,
            "{} holds a real root store",
            bundle.display()
        );
    }

    #[test]
    fn a_bundle_that_is_not_certificates_is_refused_before_the_sdk_would_panic_on_it() {
        assert_eq!(parses_as_roots(AMAZON_TRUST_ROOTS.as_bytes()).ok(), Some(5));
        let truncated = AMAZON_TRUST_ROOTS.replacen("MIIDQTCCAimgAwIBAgITBmyfz5m", "MIIDQTCCAimg", 1);
        let corrupt = AMAZON_TRUST_ROOTS.replacen("MIIDQTCCAimgAwIBAgITBmyfz5m", "AAAAAAAAAAAAAAAAAAAAAAAAAAA", 1);
        let hostile = ["", "not a certificate", "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n"];
        for pem in hostile.iter().map(|pem| pem.to_string()).chain([truncated, corrupt]) {
            assert!(parses_as_roots(pem.as_bytes()).is_err(), "{pem:.80}");
            let bundle = std::env::temp_dir().join(format!("bad-ca-{}.pem", std::process::id()));
            std::fs::write(&bundle, &pem).unwrap();
            assert!(https_client(&Roots::Bundle(bundle.display().to_string())).is_none(), "the platform's roots");
        }
    }
}
