//! The SDK's HTTPS client, with its connector built when the client is
//! made: on a start-up helper thread, not at a function's first call.
//!
//! `aws_smithy_http_client::Builder::build_https` makes a client that
//! builds a connector (the TLS configuration and its root store, the
//! connection pool) at every SDK client made on it, to throw it away, and
//! again at the first call of each timeout setting, which it keeps. On a
//! cold start that first call is the first invocation's read, on `main`'s
//! thread: about half a millisecond of CPU on the path to the first
//! answer. [`WarmHttpsClient`] builds the connectors the same way, from the
//! same parts, but the one for the SDK configuration's own timeouts
//! ([`WarmHttpsClient::warm`]) when the configuration is loaded, and none
//! at client construction.

use aws_smithy_http_client::Connector;
use aws_smithy_http_client::tls::{self, TlsContext};
use aws_smithy_runtime_api::client::http::{HttpClient, HttpConnectorSettings, SharedHttpClient, SharedHttpConnector};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_runtime_api::shared::IntoShared;
use aws_smithy_types::timeout::TimeoutConfig;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// What a connector is built for: the SDK's own cache key.
type Settings = (Option<Duration>, Option<Duration>);

/// An HTTPS client for the SDK trusting `tls`'s roots, through aws-lc.
/// Its clones share its connectors.
#[derive(Debug, Clone)]
pub struct WarmHttpsClient {
    tls: TlsContext,
    connectors: Arc<RwLock<HashMap<Settings, SharedHttpConnector>>>,
    built: Arc<AtomicUsize>,
}

impl WarmHttpsClient {
    pub fn new(tls: TlsContext) -> Self {
        Self { tls, connectors: Arc::default(), built: Arc::default() }
    }

    /// The client as the SDK's configuration takes it.
    pub fn shared(&self) -> SharedHttpClient {
        SharedHttpClient::new(self.clone())
    }

    /// Builds the connector the SDK's clients will ask for under
    /// `timeouts` (a configuration's, as loaded), on this thread, now.
    pub fn warm(&self, timeouts: &TimeoutConfig) {
        let settings = settings_for(timeouts);
        self.connector(&settings, None);
    }

    /// How many connectors it has built (each builds the TLS configuration).
    pub fn connectors_built(&self) -> usize {
        self.built.load(Ordering::SeqCst)
    }

    fn connector(
        &self,
        settings: &HttpConnectorSettings,
        components: Option<&RuntimeComponents>,
    ) -> SharedHttpConnector {
        let key = (settings.connect_timeout(), settings.read_timeout());
        if let Some(connector) = self.connectors.read().expect("connectors lock").get(&key) {
            return connector.clone();
        }
        let mut connectors = self.connectors.write().expect("connectors lock");
        connectors
            .entry(key)
            .or_insert_with(|| {
                // As `build_https` builds it: the components' sleep for the
                // timeouts (the SDK's default, Tokio's, where none is given).
                let mut builder = Connector::builder().connector_settings(settings.clone());
                builder.set_sleep_impl(components.and_then(RuntimeComponents::sleep_impl));
                let connector = builder
                    .tls_provider(tls::Provider::Rustls(tls::rustls_provider::CryptoMode::AwsLc))
                    .tls_context(self.tls.clone())
                    .build();
                self.built.fetch_add(1, Ordering::SeqCst);
                connector.into_shared()
            })
            .clone()
    }
}

/// The connector settings the SDK's orchestrator derives from a call's
/// timeouts.
fn settings_for(timeouts: &TimeoutConfig) -> HttpConnectorSettings {
    let mut settings = HttpConnectorSettings::builder();
    settings.set_connect_timeout(timeouts.connect_timeout());
    settings.set_read_timeout(timeouts.read_timeout());
    settings.build()
}

impl HttpClient for WarmHttpsClient {
    fn http_connector(&self, settings: &HttpConnectorSettings, components: &RuntimeComponents) -> SharedHttpConnector {
        self.connector(settings, Some(components))
    }

    fn connector_metadata(&self) -> Option<aws_smithy_runtime_api::client::connector_metadata::ConnectorMetadata> {
        Some(aws_smithy_runtime_api::client::connector_metadata::ConnectorMetadata::new("hyper", Some("1.x".into())))
    }
}
