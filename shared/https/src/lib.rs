//! The process's HTTPS clients: which roots they trust.
//!
//! reqwest's own TLS set-up reads the platform's root certificates (the
//! bundle file and every file of the certificate directories) and parses
//! each one, every time a client is built: about 1.3 ms of CPU per client
//! on the benchmark's machine, on the path to a cold start's first answer
//! (the worker's and the responder's HTTP client for Slack, each function's
//! Secrets Manager client at start-up, the ingress's for `views.open`). The
//! clients built here trust the roots of Mozilla's programme compiled into
//! the binary instead (`webpki-roots`, already in their parsed form: no
//! file is read and nothing is parsed), which is what the platform's
//! bundle is made from on Amazon Linux and Debian, and what Slack's own
//! SDKs trust (Python's through `certifi`).
//!
//! An operator who needs other roots (a TLS-inspecting proxy, a team API
//! behind a private authority) names them as OpenSSL does, with
//! `SSL_CERT_FILE` or `SSL_CERT_DIR`: then the platform's roots are read,
//! as reqwest reads them, with those variables honoured. The AWS SDK's
//! clients choose their roots in `adapters_aws::config` (Amazon Trust
//! Services' roots).

use std::sync::Arc;

/// Which roots a client built here trusts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Roots {
    /// Mozilla's, compiled in.
    Mozilla,
    /// The platform's, as `SSL_CERT_FILE` / `SSL_CERT_DIR` or the system's
    /// certificate store name them.
    Platform,
}

impl Roots {
    /// The platform's when the operator named roots (`SSL_CERT_FILE`'s
    /// `file` or `SSL_CERT_DIR`'s `dir`, set and not empty), Mozilla's
    /// otherwise.
    pub fn chosen(file: Option<String>, dir: Option<String>) -> Self {
        let named = |value: Option<String>| value.is_some_and(|value| !value.is_empty());
        if named(file) || named(dir) { Self::Platform } else { Self::Mozilla }
    }

    /// As this process's environment says.
    pub fn from_env() -> Self {
        Self::chosen(std::env::var("SSL_CERT_FILE").ok(), std::env::var("SSL_CERT_DIR").ok())
    }
}

/// A client builder trusting the roots the environment chooses
/// ([`Roots::from_env`]); the caller adds its timeouts and policies.
pub fn client_builder() -> reqwest::ClientBuilder {
    builder_trusting(Roots::from_env())
}

/// A client builder trusting `roots`.
pub fn builder_trusting(roots: Roots) -> reqwest::ClientBuilder {
    let builder = reqwest::Client::builder();
    match roots {
        Roots::Platform => builder,
        Roots::Mozilla => builder.tls_backend_preconfigured(mozilla_tls()),
    }
}

/// rustls set up as reqwest sets it up (the aws-lc-rs provider, TLS 1.2
/// and 1.3), trusting Mozilla's roots.
fn mozilla_tls() -> rustls::ClientConfig {
    let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("aws-lc-rs supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn chosen(vars: &[(&str, &str)]) -> Roots {
        let vars: HashMap<&str, &str> = vars.iter().copied().collect();
        let var = |name| vars.get(name).map(|value| (*value).to_owned());
        Roots::chosen(var("SSL_CERT_FILE"), var("SSL_CERT_DIR"))
    }

    #[test]
    fn mozillas_roots_unless_the_operator_names_a_bundle_or_a_directory() {
        assert_eq!(chosen(&[]), Roots::Mozilla);
        assert_eq!(chosen(&[("SSL_CERT_FILE", "/etc/proxy/ca.pem")]), Roots::Platform);
        assert_eq!(chosen(&[("SSL_CERT_DIR", "/etc/proxy/certs")]), Roots::Platform);
        assert_eq!(chosen(&[("SSL_CERT_FILE", "")]), Roots::Mozilla, "empty is unset");
        assert_eq!(chosen(&[("AWS_CA_BUNDLE", "/etc/proxy/ca.pem")]), Roots::Mozilla, "the AWS SDK's, not ours");
    }

    #[test]
    fn the_compiled_in_roots_are_mozillas_whole_programme() {
        let roots = mozilla_tls();
        // The programme holds some 150 server roots; a handful would mean
        // the wrong list (or a test one).
        assert!(webpki_roots::TLS_SERVER_ROOTS.len() > 100, "{}", webpki_roots::TLS_SERVER_ROOTS.len());
        assert!(roots.crypto_provider().cipher_suites.iter().any(|suite| suite.version() == &rustls::version::TLS13));
    }

    #[test]
    fn clients_build_on_both() {
        for roots in [Roots::Mozilla, Roots::Platform] {
            assert!(builder_trusting(roots).build().is_ok(), "{roots:?}");
        }
    }

    /// A server whose certificate no public authority issued (a
    /// self-signed one, as a machine in the middle would present) is
    /// refused, and the same server is reached by a client that trusts
    /// that certificate: the refusal is the roots', not the server's.
    #[tokio::test]
    async fn a_certificate_no_trusted_authority_issued_is_refused() {
        let rcgen::CertifiedKey { cert, signing_key } =
            rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::try_from(signing_key.serialize_der()).unwrap();
        let server =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(vec![cert.der().clone()], key)
                .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://localhost:{}/", listener.local_addr().unwrap().port());
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            while let Ok((socket, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(socket).await else { return };
                    let mut request = [0u8; 1024];
                    let _ = tls.read(&mut request).await;
                    let _ = tls.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok").await;
                    let _ = tls.shutdown().await;
                });
            }
        });
        let resolve = |builder: reqwest::ClientBuilder| {
            builder.resolve("localhost", "127.0.0.1:0".parse().unwrap()).build().unwrap()
        };

        let refused = resolve(builder_trusting(Roots::Mozilla)).get(&url).send().await.expect_err("an unknown issuer");
        assert!(format!("{refused:?}").contains("UnknownIssuer"), "{refused:?}");

        let mut trusting = rustls::RootCertStore::empty();
        trusting.add(cert.der().clone()).unwrap();
        let config =
            rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(trusting)
                .with_no_client_auth();
        let answer = resolve(reqwest::Client::builder().tls_backend_preconfigured(config)).get(&url).send().await;
        assert_eq!(answer.expect("the same server, trusted").text().await.unwrap(), "ok");
    }
}
