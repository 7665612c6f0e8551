//! A person's browser through a sign-in, as the ingress's pages take it:
//! bound at the start page, then back at its own provider's address naming
//! its issuer. For tests that play the callback without the ingress.

use assistant_core::oauth::{CallbackParams, ConnectState, ConnectStates, OAuthProvider, StateRefused};
use async_trait::async_trait;
use url::Url;

/// The one browser these tests sign in from.
pub const BROWSER: &str = "the-persons-browser";

#[async_trait]
pub trait ComeBack {
    /// The person clicks their Connect button, their browser opens the
    /// link and comes back with
    /// `code`: what [`ConnectStates::take`] then says.
    async fn come_back(&self, state: &str, code: &str, now_unix: i64) -> Result<ConnectState, StateRefused>;
}

#[async_trait]
impl ComeBack for ConnectStates {
    async fn come_back(&self, state: &str, code: &str, now_unix: i64) -> Result<ConnectState, StateRefused> {
        self.arm(state, now_unix).await.map_err(|err| StateRefused::Store(err.to_string()))?;
        match self.bind_browser(state, BROWSER, now_unix, now_unix).await {
            // Taken already: the take says how (the same callback again, or a replay).
            Ok(_) | Err(StateRefused::Replayed) => {}
            Err(refused) => return Err(refused),
        }
        let record =
            self.load(state).await.map_err(|err| StateRefused::Store(err.to_string()))?.ok_or(StateRefused::Unknown)?;
        let back = CallbackParams { code, provider: &record.provider, iss: record.issuer.as_deref(), browser: BROWSER };
        self.take(state, &back, now_unix).await
    }
}

/// A provider named `name` at `https://id.example.com`, for opening states.
pub fn provider(name: &str) -> OAuthProvider {
    let at = |path: &str| Url::parse(&format!("https://id.example.com{path}")).expect("a URL");
    OAuthProvider {
        name: name.to_owned(),
        authorization_endpoint: at("/authorize"),
        token_endpoint: at("/token"),
        revocation_endpoint: None,
        client_id: "slack-assistant".into(),
        client_secret: None,
        scopes: vec!["openid".into()],
        redirect_uri: at(&format!("/oauth/callback/{name}")),
        resource: None,
        issuer: None,
        issuer_sends_iss: false,
    }
}
