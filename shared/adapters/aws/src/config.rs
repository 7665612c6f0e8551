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
//!
//! What a cold start pays for here, kept small: the region and the
//! credentials Lambda puts in the environment are given to the SDK's loader
//! ([`loader`]), which would otherwise build its whole provider chains to
//! find them in the same place; and the HTTPS client's connector (its TLS
//! configuration and root store) is built once, with the configuration, on
//! the helper thread that loads it ([`crate::http_client`]), not at each
//! client and again at the first call on `main`'s thread.

use crate::http_client::WarmHttpsClient;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, SdkConfig};
use aws_smithy_http_client::tls::{TlsContext, TrustStore};
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
    if let Some(bundle) = var(vars, "AWS_CA_BUNDLE").filter(|path| !path.is_empty()) {
        return Roots::Bundle(bundle.to_owned());
    }
    let overridden_https =
        vars.iter().any(|(key, url)| key.starts_with("AWS_ENDPOINT_URL") && !url.starts_with("http://"));
    let china = env_region(vars).is_some_and(|region| region.as_ref().starts_with("cn-"));
    if overridden_https || china { Roots::Platform } else { Roots::AmazonTrust }
}

/// The SDK's HTTPS client trusting `roots`; none: the SDK's default (the
/// platform's roots, found as `rustls-native-certs` finds them). The
/// platform's roots are read from its bundle file alone where it has one
/// and the operator named none (`https::Roots::from_env`): the
/// default also reads every file of every certificate directory, which on
/// Lambda's Amazon Linux and on Debian hold the bundle's certificates again.
/// Its connector for `timeouts` is built before it is returned
/// ([`WarmHttpsClient`]).
fn https_client(roots: &Roots, timeouts: &TimeoutConfig) -> Option<WarmHttpsClient> {
    let trust = match roots {
        Roots::Platform => {
            let named = https::Roots::from_env() == https::Roots::Platform;
            return match openssl_probe::probe().cert_file.filter(|_| !named) {
                Some(bundle) => https_client(&Roots::Bundle(bundle.display().to_string()), timeouts),
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
    let client = WarmHttpsClient::new(context);
    client.warm(timeouts);
    Some(client)
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

/// The SDK's configuration for this process, with `timeouts`: the SDK's
/// own loader ([`loader`]), on the HTTPS client [`Roots`] says.
pub async fn load(timeouts: TimeoutConfig) -> SdkConfig {
    let vars = std::env::vars().collect::<Vec<_>>();
    let client = https_client(&roots(&vars), &timeouts);
    let loader = loader(&vars).timeout_config(timeouts);
    match client {
        Some(client) => loader.http_client(client.shared()).load().await,
        None => loader.load().await,
    }
}

/// The SDK's default loader, given the region and the credentials the
/// environment (`vars`) holds where it holds them, as Lambda's does.
///
/// The loader would find them there too, first in each of its chains, but
/// it builds the whole chain to do so (profile, web identity, container and
/// instance metadata providers, each with its clients), about a third of a
/// millisecond of every cold start's CPU; where the environment holds no
/// region or no credentials, the chain finds them as before.
pub fn loader(vars: &[(String, String)]) -> aws_config::ConfigLoader {
    let mut loader = aws_config::defaults(BehaviorVersion::latest());
    if let Some(region) = env_region(vars) {
        loader = loader.region(region);
    }
    if let Some(credentials) = env_credentials(vars) {
        loader = loader.credentials_provider(credentials);
    }
    loader
}

/// The value of the variable `name` in `vars` (as `std::env::vars()` lists them).
fn var<'a>(vars: &'a [(String, String)], name: &str) -> Option<&'a str> {
    vars.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
}

/// The region as the SDK's environment provider reads it: `AWS_REGION`,
/// else `AWS_DEFAULT_REGION`.
fn env_region(vars: &[(String, String)]) -> Option<aws_config::Region> {
    let region = var(vars, "AWS_REGION").or_else(|| var(vars, "AWS_DEFAULT_REGION"));
    region.map(|region| aws_config::Region::new(region.to_owned()))
}

/// The credentials as the SDK's environment provider reads them (the first
/// link of its default chain), or none where it would find none and the
/// chain would go on: `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (else
/// `SECRET_ACCESS_KEY`), not blank; `AWS_SESSION_TOKEN` and
/// `AWS_ACCOUNT_ID` where not blank. Lambda sets them for the function's
/// role, for the life of the execution environment.
fn env_credentials(vars: &[(String, String)]) -> Option<aws_credential_types::Credentials> {
    let set = |name: &str| var(vars, name).filter(|value| !value.trim().is_empty());
    let access_key = set("AWS_ACCESS_KEY_ID")?;
    let secret_key = set("AWS_SECRET_ACCESS_KEY").or_else(|| set("SECRET_ACCESS_KEY"))?;
    let mut credentials = aws_credential_types::Credentials::builder()
        .access_key_id(access_key)
        .secret_access_key(secret_key)
        .provider_name("EnvironmentVariable");
    credentials.set_session_token(set("AWS_SESSION_TOKEN").map(|token| token.trim().to_owned()));
    credentials.set_account_id(set("AWS_ACCOUNT_ID").map(|id| id.trim().into()));
    Some(credentials.build())
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use sha2::Digest;

    /// `vars` as `std::env::vars()` lists them.
    fn owned(vars: &[(&str, &str)]) -> Vec<(String, String)> {
        vars.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())).collect()
    }

    fn roots_with(vars: &[(&str, &str)]) -> Roots {
        roots(&owned(vars))
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

    /// What the SDK's own loader and [`loader`] load from `vars`, with no
    /// profile files: region, credentials, endpoint.
    async fn both_loaded(vars: &[(&str, &str)]) -> [(Option<String>, Option<String>, Option<String>); 2] {
        use aws_credential_types::provider::ProvideCredentials;
        let (env, fs) =
            (aws_types::os_shim_internal::Env::from_slice(vars), aws_types::os_shim_internal::Fs::from_slice(&[]));
        let sdk = aws_config::defaults(BehaviorVersion::latest()).env(env.clone()).fs(fs.clone()).load().await;
        let ours = loader(&owned(vars)).env(env).fs(fs).load().await;
        let mut loaded = Vec::new();
        for config in [sdk, ours] {
            let credentials = match config.credentials_provider() {
                Some(provider) => provider.provide_credentials().await.ok(),
                None => None,
            };
            let credentials = credentials.map(|c| {
                let account = c.account_id().map(|id| id.as_str().to_owned());
                format!("{} {} {:?} {account:?}", c.access_key_id(), c.secret_access_key(), c.session_token())
            });
            loaded.push((
                config.region().map(ToString::to_string),
                credentials,
                config.endpoint_url().map(str::to_owned),
            ));
        }
        loaded.try_into().unwrap()
    }

    #[tokio::test]
    async fn the_region_and_credentials_lambda_sets_are_what_the_sdks_own_loader_finds() {
        let lambda = [
            ("AWS_REGION", "eu-west-1"),
            ("AWS_DEFAULT_REGION", "eu-west-1"),
            ("AWS_ACCESS_KEY_ID", "ASIAEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_SESSION_TOKEN", "token"),
            ("AWS_LAMBDA_FUNCTION_NAME", "worker"),
        ];
        let [sdk, ours] = both_loaded(&lambda).await;
        assert_eq!(ours, sdk);
        assert_eq!(ours.0.as_deref(), Some("eu-west-1"));
        assert_eq!(ours.1.as_deref(), Some(r#"ASIAEXAMPLE secret Some("token") None"#));
        for vars in [
            &[("AWS_DEFAULT_REGION", "us-east-2"), ("AWS_ACCESS_KEY_ID", "AKID"), ("SECRET_ACCESS_KEY", "s")][..],
            &[
                ("AWS_REGION", "ap-south-1"),
                ("AWS_ACCESS_KEY_ID", "AKID"),
                ("AWS_SECRET_ACCESS_KEY", "s"),
                ("AWS_SESSION_TOKEN", "  t  "),
                ("AWS_ACCOUNT_ID", "123456789012"),
            ],
            &[
                ("AWS_REGION", "eu-west-1"),
                ("AWS_ACCESS_KEY_ID", "AKID"),
                ("AWS_SECRET_ACCESS_KEY", "s"),
                ("AWS_SESSION_TOKEN", " "),
            ],
            &[
                ("AWS_REGION", "eu-west-1"),
                ("AWS_ENDPOINT_URL", "http://127.0.0.1:4566"),
                ("AWS_ACCESS_KEY_ID", "AKID"),
                ("AWS_SECRET_ACCESS_KEY", "s"),
            ],
        ] {
            let [sdk, ours] = both_loaded(vars).await;
            assert_eq!(ours, sdk, "{vars:?}");
            assert!(ours.1.is_some(), "{vars:?}");
        }
    }

    #[tokio::test]
    async fn where_the_environment_holds_no_credentials_or_no_region_the_sdks_chains_look_further() {
        // A key without its secret, a blank key: the environment's
        // provider finds nothing, and neither do we; the chain goes on to
        // the next providers (here, with no profile and no metadata
        // service, it finds nothing either).
        for vars in [
            &[("AWS_ACCESS_KEY_ID", "AKID")][..],
            &[("AWS_ACCESS_KEY_ID", " "), ("AWS_SECRET_ACCESS_KEY", "s")],
            &[("AWS_SECRET_ACCESS_KEY", "s")],
            &[],
        ] {
            assert!(env_credentials(&owned(vars)).is_none(), "{vars:?}");
            assert!(env_region(&owned(vars)).is_none(), "{vars:?}");
        }
        // A profile names the region and the keys: found by the chain.
        let config = "[default]\nregion = eu-central-1\naws_access_key_id = FROMPROFILE\naws_secret_access_key = s\n";
        let env = aws_types::os_shim_internal::Env::from_slice(&[("AWS_ACCESS_KEY_ID", "AKID"), ("HOME", "/home/me")]);
        let fs = aws_types::os_shim_internal::Fs::from_slice(&[("/home/me/.aws/config", config)]);
        let loaded = loader(&owned(&[("AWS_ACCESS_KEY_ID", "AKID")])).env(env).fs(fs).load().await;
        assert_eq!(loaded.region().map(ToString::to_string).as_deref(), Some("eu-central-1"));
        use aws_credential_types::provider::ProvideCredentials;
        let credentials = loaded.credentials_provider().unwrap().provide_credentials().await.unwrap();
        assert_eq!(credentials.access_key_id(), "FROMPROFILE");
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
            let client = https_client(&roots, &worker_timeouts());
            // This machine has a bundle file (asserted below): the
            // platform's roots are read from it, unless the shell names roots.
            let named = https::Roots::from_env() == https::Roots::Platform;
            assert_eq!(client.is_none(), roots == Roots::Platform && named, "{roots:?}");
            let mut config = aws_config::SdkConfig::builder()
                .behavior_version(BehaviorVersion::latest())
                .region(aws_config::Region::new("us-east-1"));
            // Made, the HTTPS client has built its connector and its root
            // store: a bundle that did not parse would have panicked there.
            if let Some(client) = client {
                assert_eq!(client.connectors_built(), 1, "{roots:?}");
                config = config.http_client(client.shared());
            }
            let _ = aws_sdk_dynamodb::Client::new(&config.build());
        }
        assert!(
            https_client(&Roots::Bundle("/nonexistent/ca.pem".into()), &worker_timeouts()).is_none(),
            "unreadable: the platform's"
        );
    }

    /// A DynamoDB endpoint on loopback that answers every request with an
    /// empty `BatchGetItem` answer; its URL.
    async fn empty_dynamodb() -> String {
        let answer =
            || async { ([("content-type", "application/x-amz-json-1.0")], r#"{"Responses":{},"UnprocessedKeys":{}}"#) };
        testkit::serve(axum::Router::new().fallback(answer)).await
    }

    #[tokio::test]
    async fn the_connector_a_call_needs_was_built_with_the_configuration_and_clients_build_none() {
        use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
        let url = empty_dynamodb().await;
        let given = [
            ("AWS_REGION", "eu-west-1"),
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_ENDPOINT_URL", url.as_str()),
        ];
        let (vars, env) = (owned(&given), aws_types::os_shim_internal::Env::from_slice(&given));
        for timeouts in [worker_timeouts(), responder_timeouts(), ack_path_timeouts()] {
            // WHEN the configuration is loaded as `load` loads it
            let client = https_client(&roots(&vars), &timeouts).expect("a client on Amazon's roots");
            assert_eq!(client.connectors_built(), 1, "built with the configuration");
            let fs = aws_types::os_shim_internal::Fs::from_slice(&[]);
            let sdk = loader(&vars)
                .env(env.clone())
                .fs(fs)
                .timeout_config(timeouts)
                .http_client(client.shared())
                .load()
                .await;
            // THEN clients build no connector, and their calls use the one built
            let dynamodb = aws_sdk_dynamodb::Client::new(&sdk);
            let sqs = aws_sdk_sqs::Client::new(&sdk);
            assert_eq!(client.connectors_built(), 1, "none at a client's construction");
            let key = std::collections::HashMap::from([
                ("pk".to_owned(), AttributeValue::S("TURN#T1-Ev1".into())),
                ("sk".to_owned(), AttributeValue::S("STATE".into())),
            ]);
            for _ in 0..2 {
                let keys = KeysAndAttributes::builder().keys(key.clone()).consistent_read(true).build().unwrap();
                dynamodb.batch_get_item().request_items("turns", keys).send().await.expect("the read is answered");
            }
            assert_eq!(client.connectors_built(), 1, "the calls used the connector built with the configuration");
            // AND a client with timeouts of its own (the model's) gets a connector of its own, once
            let longer = TimeoutConfig::builder().connect_timeout(Duration::from_secs(7)).build();
            let dynamodb = aws_sdk_dynamodb::Client::from_conf(
                aws_sdk_dynamodb::config::Builder::from(&sdk).timeout_config(longer).build(),
            );
            for _ in 0..2 {
                let keys = KeysAndAttributes::builder().keys(key.clone()).build().unwrap();
                dynamodb.batch_get_item().request_items("turns", keys).send().await.expect("the read is answered");
            }
            assert_eq!(client.connectors_built(), 2);
            drop(sqs);
        }
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
            let client = https_client(&Roots::Bundle(bundle.display().to_string()), &worker_timeouts());
            std::fs::remove_file(&bundle).unwrap();
            assert!(client.is_none(), "the platform's roots");
        }
    }
}
