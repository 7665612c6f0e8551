//! Tools that act as the person who asked: their own token per provider,
//! from a sign-in they make once (OAuth 2.1, authorization code with PKCE).
//!
//! - Before a step's calls run, the worker asks [`SignIn::access`] for the
//!   asker's token for each provider the calls act through: a fresh token
//!   from the vault, or one refreshed now (the new tokens stored again).
//!   None stored, or a refresh the provider refuses (revoked, expired):
//!   the step waits ([`assistant_core::turn::PendingSignIn`]) and only the
//!   asker gets a Connect button. A provider that is down fails only its
//!   calls, with a note the model reads.
//! - The Connect button links to the ingress's start page with a `state`
//!   ([`ConnectStates`]: single use, ten minutes, bound to team, person,
//!   turn and provider, then to the first browser that opens it), which
//!   sends the browser on to the provider's sign-in page. The provider
//!   sends it back to the ingress's `/oauth/callback/{provider}`, which
//!   takes the state (from that browser only, from that provider only) and
//!   keeps the code beside it; the worker then exchanges the code (with
//!   the PKCE verifier that never left the table) at the token endpoint
//!   the state names, seals the tokens into the vault, records the outcome
//!   for the person's browser and carries the turn on.
//! - Disconnecting (the Home tab) forgets the tokens and revokes them at
//!   the provider where it offers revocation.
//!
//! The vault is a port ([`TokenVault`]): the turns table sealed with KMS
//! here; Amazon Bedrock AgentCore Identity's token vault could stand
//! behind the same port.

use assistant_core::oauth::{
    AccessToken, ConnectState, ConnectStates, ConnectionKey, OAuthError, OAuthProvider, OAuthTokens, SignInOutcome,
    SignInUrls, TokenVault,
};
use assistant_core::ports::PortError;
use assistant_core::turn::SignInReason;
use slack::{TeamId, UserId};
use std::collections::BTreeMap;
use std::sync::Arc;
use tools_registry::auth::{OAuthConfig, ToolAuth};
use tools_registry::references::{self, Reference};
use tracing::{info, warn};
use url::Url;

/// What the sign-in needs outside the worker.
#[derive(Clone)]
pub struct SignInPorts {
    pub vault: Arc<dyn TokenVault>,
    pub states: ConnectStates,
    pub tokens: Arc<dyn OAuthTokens>,
    /// The ingress's start page and each provider's redirect URI.
    pub urls: SignInUrls,
}

/// The providers the configuration's tools act through, and the ports.
pub struct SignIn {
    pub ports: SignInPorts,
    pub providers: BTreeMap<String, OAuthProvider>,
}

/// The asker's access to one provider, now.
#[derive(Debug)]
pub enum Access {
    Ready {
        token: AccessToken,
        subject: Option<String>,
    },
    /// They must sign in (again).
    NeedsSignIn(SignInReason),
    /// The provider or the vault failed; the calls fail with this note.
    Unavailable(String),
}

/// Why the configured sign-in cannot be used. Each names what to fix.
#[derive(Debug, thiserror::Error)]
pub enum SignInConfigError {
    #[error("http tool {tool}: auth.oauth.{field}: {reason}")]
    Invalid { tool: String, field: &'static str, reason: String },
    #[error("http tools {first} and {second} describe provider {provider} differently: describe it alike in both")]
    Conflicting { provider: String, first: String, second: String },
    #[error("http tool {tool}: auth.oauth.client_secret: {reason}")]
    Unresolved { tool: String, reason: references::Unresolved },
    #[error(
        "tools act as the person who asked (auth.oauth), but the worker has no sign-in: set TOKEN_KEY_ID (the KMS key \
         that seals tokens) and OAUTH_REDIRECT_URI (the ingress's function URL + /oauth/callback)"
    )]
    NotDeployed,
}

/// An endpoint people's browsers or the worker reach: `https`, or `http`
/// on loopback (tests, local providers).
fn endpoint(tool: &str, field: &'static str, value: &str) -> Result<Url, SignInConfigError> {
    let invalid = |reason: String| SignInConfigError::Invalid { tool: tool.to_owned(), field, reason };
    let url = Url::parse(value).map_err(|err| invalid(format!("{value:?}: {err}")))?;
    match assistant_core::oauth::endpoint_refusal(&url) {
        Some(reason) => Err(invalid(reason.into())),
        None => Ok(url),
    }
}

/// Who asks for a sign-in: an HTTP tool, or an MCP server (the resource,
/// whose provider may be discovered).
pub struct Asking<'a> {
    owner: &'a str,
    oauth: &'a OAuthConfig,
    resource: Option<Url>,
}

impl<'a> Asking<'a> {
    /// An HTTP tool (`owner`) that acts as the person through `auth`'s
    /// provider, if it does.
    pub fn tool(owner: &'a str, auth: Option<&'a ToolAuth>) -> Option<Self> {
        match auth {
            Some(ToolAuth::OAuth(oauth)) => Some(Self { owner, oauth, resource: None }),
            _ => None,
        }
    }

    /// An MCP server (`owner` at `url`, the resource its tokens are for)
    /// that acts as the person, if it does.
    pub fn server(owner: &'a str, url: &str, auth: Option<&'a ToolAuth>) -> Result<Option<Self>, SignInConfigError> {
        let Some(ToolAuth::OAuth(oauth)) = auth else { return Ok(None) };
        let resource = Url::parse(url).map_err(|err| SignInConfigError::Invalid {
            tool: owner.to_owned(),
            field: "url",
            reason: err.to_string(),
        })?;
        Ok(Some(Self { owner, oauth, resource: Some(resource) }))
    }
}

/// The providers the HTTP tools and MCP servers that act as the person
/// name (`asking`: [`Asking::tool`], [`Asking::server`]), checked, their
/// secrets resolved through `lookup`; an MCP server's endpoints discovered
/// from its metadata and its client registered where the configuration
/// leaves them out. Empty when nothing acts as the person. Beside them,
/// the MCP servers whose provider could not be found now, and why: only
/// their tools are lost.
pub async fn providers(
    asking: Vec<Asking<'_>>,
    ports: Option<&SignInPorts>,
    lookup: &impl Fn(&Reference) -> Option<String>,
    now_unix: i64,
) -> Result<(BTreeMap<String, OAuthProvider>, Vec<(String, String)>), SignInConfigError> {
    let mut found: BTreeMap<String, Asking> = BTreeMap::new();
    for ask in asking {
        let name = &ask.oauth.provider;
        if !assistant_core::oauth::valid_provider_name(name) {
            return Err(SignInConfigError::Invalid {
                tool: ask.owner.to_owned(),
                field: "provider",
                reason: "1 to 32 of a-z, A-Z, 0-9, _ and -".into(),
            });
        }
        if let Some(known) = found.get(name) {
            if known.oauth != ask.oauth || known.resource != ask.resource {
                return Err(SignInConfigError::Conflicting {
                    provider: name.clone(),
                    first: known.owner.to_owned(),
                    second: ask.owner.to_owned(),
                });
            }
            continue;
        }
        found.insert(name.clone(), ask);
    }
    if found.is_empty() {
        return Ok((BTreeMap::new(), Vec::new()));
    }
    let ports = ports.ok_or(SignInConfigError::NotDeployed)?;
    let (mut providers, mut lost) = (BTreeMap::new(), Vec::new());
    for (name, ask) in found {
        let tool = ask.owner.to_owned();
        let oauth = ask.oauth;
        let client_secret = match &oauth.client_secret {
            Some(value) if references::named([value]).is_empty() => {
                return Err(SignInConfigError::Invalid {
                    tool,
                    field: "client_secret",
                    reason: "name a secret (${secret:NAME}) or a variable (${env:NAME}), never the value".into(),
                });
            }
            Some(value) => Some(
                references::resolve(value, lookup)
                    .map_err(|reason| SignInConfigError::Unresolved { tool: tool.clone(), reason })?,
            ),
            None => None,
        };
        if client_secret.is_some() && oauth.client_id.is_none() {
            return Err(SignInConfigError::Invalid {
                tool,
                field: "client_secret",
                reason: "a client secret goes with its client_id (a registered client is public: PKCE, no secret)"
                    .into(),
            });
        }
        let configured = match (&oauth.authorization_endpoint, &oauth.token_endpoint) {
            (Some(authorization), Some(token)) => Some((
                endpoint(&tool, "authorization_endpoint", authorization)?,
                endpoint(&tool, "token_endpoint", token)?,
            )),
            (None, None) => None,
            _ => {
                return Err(SignInConfigError::Invalid {
                    tool,
                    field: "token_endpoint",
                    reason: "give both authorization_endpoint and token_endpoint, or (for an MCP server) neither"
                        .into(),
                });
            }
        };
        let revocation_endpoint = match &oauth.revocation_endpoint {
            Some(value) => Some(endpoint(&tool, "revocation_endpoint", value)?),
            None => None,
        };
        let issuer = match &oauth.issuer {
            Some(value) => Some(endpoint(&tool, "issuer", value)?),
            None => None,
        };
        let redirect_uri = ports.urls.redirect_uri(&name);
        let mut provider = match (configured, &oauth.client_id) {
            (Some((authorization_endpoint, token_endpoint)), Some(client_id)) => OAuthProvider {
                name: name.clone(),
                authorization_endpoint,
                token_endpoint,
                revocation_endpoint,
                client_id: client_id.clone(),
                client_secret,
                scopes: oauth.scopes.clone(),
                redirect_uri,
                resource: ask.resource.clone(),
                // Configured: RFC 9207's `iss` checked where the provider sends it.
                issuer_sends_iss: false,
                issuer,
            },
            (configured, client_id) => {
                let Some(resource) = &ask.resource else {
                    return Err(SignInConfigError::Invalid {
                        tool,
                        field: if configured.is_none() { "authorization_endpoint" } else { "client_id" },
                        reason: "required for an HTTP tool (discovery and registration are for MCP servers)".into(),
                    });
                };
                match discovered(ports, &name, &redirect_uri, resource, configured, client_id.as_deref(), now_unix)
                    .await
                {
                    Ok(provider) => OAuthProvider {
                        client_secret,
                        scopes: if oauth.scopes.is_empty() { provider.scopes.clone() } else { oauth.scopes.clone() },
                        revocation_endpoint: revocation_endpoint.or(provider.revocation_endpoint.clone()),
                        ..provider
                    },
                    Err(reason) => {
                        warn!(server = %tool, provider = %name, error = %reason, "the MCP server's sign-in cannot be found now: its tools are not offered");
                        lost.push((tool, reason.to_string()));
                        continue;
                    }
                }
            }
        };
        provider.name = name.clone();
        providers.insert(name, provider);
    }
    Ok((providers, lost))
}

/// An MCP server's provider from its metadata (what the configuration
/// gives kept), its client id configured, kept from an earlier
/// registration, or registered now.
/// Why an MCP server's sign-in could not be found now.
#[derive(Debug, thiserror::Error)]
enum NotDiscovered {
    #[error("discovery: {0}")]
    Discovery(#[source] OAuthError),
    #[error("registration: {0}")]
    Registration(#[source] OAuthError),
    /// Reading or keeping the registered client id.
    #[error(transparent)]
    Store(#[from] PortError),
}

async fn discovered(
    ports: &SignInPorts,
    name: &str,
    redirect_uri: &Url,
    resource: &Url,
    configured: Option<(Url, Url)>,
    client_id: Option<&str>,
    now_unix: i64,
) -> Result<OAuthProvider, NotDiscovered> {
    let server = ports.tokens.discover(resource).await.map_err(NotDiscovered::Discovery)?;
    let client_id = match client_id {
        Some(id) => id.to_owned(),
        None => match ports.states.registered_client(&server.issuer, redirect_uri).await? {
            Some(id) => id,
            None => {
                let id = ports.tokens.register(&server, redirect_uri).await.map_err(NotDiscovered::Registration)?;
                info!(provider = name, issuer = %server.issuer, "registered this bot as a client of the MCP server's authorization server");
                ports.states.keep_registered_client(&server.issuer, redirect_uri, &id, now_unix).await?
            }
        },
    };
    let (authorization_endpoint, token_endpoint) =
        configured.unwrap_or((server.authorization_endpoint.clone(), server.token_endpoint.clone()));
    Ok(OAuthProvider {
        name: name.to_owned(),
        authorization_endpoint,
        token_endpoint,
        revocation_endpoint: server.revocation_endpoint,
        client_id,
        client_secret: None,
        scopes: server.scopes,
        redirect_uri: redirect_uri.clone(),
        resource: Some(server.resource),
        issuer_sends_iss: server.sends_iss,
        issuer: Some(server.issuer),
    })
}

impl SignIn {
    fn key(team: &TeamId, user: &UserId, provider: &str) -> ConnectionKey {
        ConnectionKey { team: team.clone(), user: user.clone(), provider: provider.to_owned() }
    }

    /// The person's usable token for `provider`: stored and fresh, or
    /// refreshed now. A refused refresh forgets the stored tokens (they
    /// will never work again) and asks for a sign-in.
    pub async fn access(&self, team: &TeamId, user: &UserId, provider: &str, now_unix: i64) -> Access {
        let Some(config) = self.providers.get(provider) else {
            return Access::Unavailable(format!("{provider} is not a configured sign-in"));
        };
        let key = Self::key(team, user, provider);
        let stored = match self.ports.vault.get(&key).await {
            Ok(Some(tokens)) => tokens,
            Ok(None) => return Access::NeedsSignIn(SignInReason::NotConnected),
            Err(err) => {
                warn!(provider, error = %err, "the person's sign-in cannot be read");
                return Access::Unavailable(format!("the person's {provider} sign-in cannot be read right now"));
            }
        };
        if stored.is_fresh(now_unix) {
            return Access::Ready { token: AccessToken::new(stored.access_token), subject: stored.subject };
        }
        let Some(refresh_token) = stored.refresh_token.as_deref() else {
            return Access::NeedsSignIn(SignInReason::Expired);
        };
        match self.ports.tokens.refresh(config, refresh_token, now_unix).await {
            Ok(mut tokens) => {
                // The provider's answer to a refresh need not repeat the ID
                // token: the person stays who they were.
                tokens.subject = tokens.subject.or(stored.subject);
                // A put whose answer is lost may still have landed; one that
                // did not leaves the old tokens, whose refresh token a
                // rotating provider has spent: the next call asks to sign in.
                if let Err(err) = self.ports.vault.put(&key, &tokens, now_unix).await {
                    warn!(provider, error = %err, "refreshed tokens not stored: used for this step only");
                }
                info!(provider, "the person's token was refreshed");
                Access::Ready { token: AccessToken::new(tokens.access_token), subject: tokens.subject }
            }
            Err(err) if err.needs_sign_in() => {
                info!(provider, error = %err, "the provider refused the refresh: asking to sign in again");
                if let Err(err) = self.ports.vault.remove(&key).await {
                    warn!(provider, error = %err, "refused tokens not forgotten");
                }
                Access::NeedsSignIn(SignInReason::Expired)
            }
            Err(err) => {
                warn!(provider, error = %err, "the token could not be refreshed");
                Access::Unavailable(format!("{provider} could not renew the person's sign-in: {err}"))
            }
        }
    }

    /// A new sign-in for the turn: its `state` and the link for the
    /// person's browser (the ingress's start page, which binds the sign-in
    /// to that browser and sends it on to the provider).
    pub async fn connect_link(
        &self,
        thread: &assistant_core::ThreadRef,
        user: &UserId,
        turn: &assistant_core::TurnId,
        provider: &str,
        now_unix: i64,
    ) -> Result<(String, Url), PortError> {
        let config = self
            .providers
            .get(provider)
            .ok_or_else(|| PortError::new("open sign-in", format!("{provider} is not a configured sign-in")))?;
        let (state, _) = self.ports.states.open(thread, user, turn, config, now_unix).await?;
        let url = self.ports.urls.start(&state);
        Ok((state, url))
    }

    /// Exchanges a taken sign-in's code and keeps the tokens. A sign-in
    /// already completed (a redelivery: the code is spent, the tokens
    /// stored after the state was opened) completes again without a call.
    /// The code goes only to the token endpoint the state was opened with:
    /// if the provider's is another now, it goes nowhere.
    pub async fn complete(&self, state: &ConnectState, now_unix: i64) -> Result<Completed, PortError> {
        let key = Self::key(&state.team, &state.user, &state.provider);
        let opened_at = state.expires_at - assistant_core::oauth::STATE_TTL_SECS;
        let connections = self.ports.vault.connections(&state.team, &state.user).await?;
        if let Some(found) =
            connections.into_iter().find(|found| found.provider == state.provider && found.connected_at >= opened_at)
        {
            info!(provider = %state.provider, "sign-in already completed: the tokens are stored");
            return Ok(Completed::Connected { account: found.account.or(found.subject) });
        }
        let (Some(config), Some(code)) = (self.providers.get(&state.provider), state.code.as_deref()) else {
            return Ok(Completed::Refused("this sign-in has no provider or no code".into()));
        };
        if state.token_endpoint.as_deref() != Some(config.token_endpoint.as_str()) {
            warn!(provider = %state.provider, "the sign-in's token endpoint is not the provider's: its code is not sent");
            return Ok(Completed::Refused("the provider's sign-in changed since this one started".into()));
        }
        match self.ports.tokens.exchange(config, code, &state.verifier, now_unix).await {
            Ok(tokens) => {
                self.ports.vault.put(&key, &tokens, now_unix).await?;
                info!(provider = %state.provider, subject = tokens.subject.as_deref(), "signed in");
                Ok(Completed::Connected { account: tokens.account.or(tokens.subject) })
            }
            Err(OAuthError::Unavailable(reason)) => Err(PortError::new("exchange the code", reason)),
            Err(err) => {
                warn!(provider = %state.provider, error = %err, "the provider refused the sign-in's code");
                Ok(Completed::Refused(err.to_string()))
            }
        }
    }

    /// Forgets the person's tokens for `provider` and revokes them at the
    /// provider where it offers revocation. Whether any were stored.
    pub async fn disconnect(&self, team: &TeamId, user: &UserId, provider: &str) -> Result<bool, PortError> {
        let removed = self.ports.vault.remove(&Self::key(team, user, provider)).await?;
        let Some(tokens) = removed else { return Ok(false) };
        let Some(config) = self.providers.get(provider) else { return Ok(true) };
        // The refresh token first: revoking it ends the grant, and with it
        // the access tokens, at providers that tie them together.
        let (token, hint) = match &tokens.refresh_token {
            Some(refresh) => (refresh.as_str(), "refresh_token"),
            None => (tokens.access_token.as_str(), "access_token"),
        };
        match self.ports.tokens.revoke(config, token, hint).await {
            Ok(true) => info!(provider, "disconnected and revoked at the provider"),
            Ok(false) => info!(provider, "disconnected (the provider offers no revocation)"),
            Err(err) => warn!(provider, error = %err, "disconnected, but the provider did not revoke the token"),
        }
        Ok(true)
    }
}

/// How a callback's sign-in ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completed {
    /// `account`: who signed in, as the provider named them.
    Connected { account: Option<String> },
    /// The provider refused the code: the person signs in again.
    Refused(String),
}

impl Completed {
    /// What the person's browser is told.
    pub fn outcome(&self) -> SignInOutcome {
        match self {
            Completed::Connected { account } => SignInOutcome::Connected { account: account.clone() },
            Completed::Refused(reason) => SignInOutcome::Refused { reason: reason.clone() },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tools_http::HttpToolConfig;
    use tools_mcp::McpServerConfig;

    fn tool(name: &str, oauth: serde_json::Value) -> HttpToolConfig {
        serde_json::from_value(serde_json::json!({
            "name": name, "description": "d", "input_schema": {"type": "object"},
            "url": "https://api.example.com/x", "auth": {"oauth": oauth}
        }))
        .unwrap()
    }

    fn oauth(secret: &str) -> serde_json::Value {
        serde_json::json!({
            "provider": "tracker", "authorization_endpoint": "https://id.example.com/authorize",
            "token_endpoint": "https://id.example.com/token", "client_id": "bot", "client_secret": secret,
            "scopes": ["openid"]
        })
    }

    fn lookup(reference: &Reference) -> Option<String> {
        matches!(reference, Reference::Secret(name) if name == "TRACKER").then(|| "s3cret".to_owned())
    }

    /// A provider that is never reached: configuration checks only.
    struct Unreached;

    #[async_trait::async_trait]
    impl OAuthTokens for Unreached {
        async fn exchange(
            &self,
            _: &OAuthProvider,
            _: &str,
            _: &str,
            _: i64,
        ) -> Result<assistant_core::oauth::Tokens, OAuthError> {
            Err(OAuthError::Unavailable("unreached".into()))
        }

        async fn refresh(
            &self,
            _: &OAuthProvider,
            _: &str,
            _: i64,
        ) -> Result<assistant_core::oauth::Tokens, OAuthError> {
            Err(OAuthError::Unavailable("unreached".into()))
        }

        async fn revoke(&self, _: &OAuthProvider, _: &str, _: &str) -> Result<bool, OAuthError> {
            Err(OAuthError::Unavailable("unreached".into()))
        }
    }

    fn ports() -> SignInPorts {
        let records = Arc::new(testkit::memory::MemoryRecords::default());
        SignInPorts {
            vault: Arc::new(assistant_core::oauth::SealedVault::new(
                records.clone(),
                Arc::new(testkit::memory::MemorySealer),
            )),
            states: ConnectStates::new(records),
            tokens: Arc::new(Unreached),
            urls: SignInUrls::from_callback(&Url::parse("https://bot.example/oauth/callback").unwrap()).unwrap(),
        }
    }

    async fn checked(
        tools: &[HttpToolConfig],
        ports: Option<&SignInPorts>,
    ) -> Result<BTreeMap<String, OAuthProvider>, SignInConfigError> {
        providers(asking(tools, &[]).unwrap(), ports, &lookup, 0).await.map(|(found, lost)| {
            assert!(lost.is_empty());
            found
        })
    }

    #[tokio::test]
    async fn tools_share_a_provider_described_alike_and_its_secret_is_never_a_literal() {
        let ports = ports();
        let redirect = Url::parse("https://bot.example/oauth/callback/tracker").unwrap();
        let tools = [tool("a", oauth("${secret:TRACKER}")), tool("b", oauth("${secret:TRACKER}"))];
        let found = checked(&tools, Some(&ports)).await.unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found["tracker"].client_secret.as_deref(), Some("s3cret"));
        assert_eq!(found["tracker"].redirect_uri, redirect);

        let err = providers_of(&[tool("a", oauth("plain-secret"))], Some(&ports)).await;
        assert!(err.contains("never the value"), "{err}");
        let mut other = oauth("${secret:TRACKER}");
        other["scopes"] = serde_json::json!(["everything"]);
        let err = providers_of(&[tool("a", oauth("${secret:TRACKER}")), tool("b", other)], Some(&ports)).await;
        assert!(err.contains("differently"), "{err}");
        let err = providers_of(&[tool("a", oauth("${secret:TRACKER}"))], None).await;
        assert!(err.contains("TOKEN_KEY_ID"), "{err}");
        for (field, bad) in [
            ("token_endpoint", "http://id.example.com/token"),
            ("authorization_endpoint", "https://user:pw@id.example.com/a"),
            ("provider", "has spaces"),
        ] {
            let mut config = oauth("${secret:TRACKER}");
            config[field] = bad.into();
            let err = providers_of(&[tool("a", config)], Some(&ports)).await;
            assert!(err.contains(field), "{field}: {err}");
        }
        // An HTTP tool's provider is never discovered.
        let mut bare = oauth("${secret:TRACKER}");
        bare.as_object_mut().unwrap().remove("client_id");
        let err = providers_of(&[tool("a", bare.clone())], Some(&ports)).await;
        assert!(err.contains("goes with its client_id"), "{err}");
        bare.as_object_mut().unwrap().remove("client_secret");
        let err = providers_of(&[tool("a", bare)], Some(&ports)).await;
        assert!(err.contains("client_id") && err.contains("required for an HTTP tool"), "{err}");
        let mut loopback = oauth("${secret:TRACKER}");
        loopback["token_endpoint"] = "http://127.0.0.1:9/token".into();
        assert!(checked(&[tool("a", loopback)], Some(&ports)).await.is_ok(), "loopback http is for tests");
    }

    #[tokio::test]
    async fn an_mcp_server_whose_sign_in_cannot_be_discovered_loses_only_its_tools() {
        let server = |provider: &str| -> Vec<McpServerConfig> {
            serde_json::from_value(serde_json::json!([{"name": "issues", "url": "https://mcp.tracker.example/mcp",
                "auth": {"oauth": {"provider": provider}}}]))
            .unwrap()
        };
        let tools = [tool("a", oauth("${secret:TRACKER}"))];
        // One provider name for an HTTP tool and an MCP server: two resources, refused.
        let err = providers(asking(&tools, &server("tracker")).unwrap(), Some(&ports()), &lookup, 0)
            .await
            .expect_err("conflict");
        assert!(matches!(err, SignInConfigError::Conflicting { .. }), "{err}");

        let (found, lost) =
            providers(asking(&tools, &server("issues")).unwrap(), Some(&ports()), &lookup, 0).await.unwrap();
        assert_eq!(found.keys().collect::<Vec<_>>(), ["tracker"], "the HTTP tool's provider stands");
        assert_eq!(lost.len(), 1);
        assert_eq!(lost[0].0, "issues");
        assert!(lost[0].1.starts_with("discovery:"), "{lost:?}");
    }

    /// What the assembly hands [`providers`] for these tools and servers.
    fn asking<'a>(
        tools: &'a [HttpToolConfig],
        servers: &'a [McpServerConfig],
    ) -> Result<Vec<Asking<'a>>, SignInConfigError> {
        let tools = tools.iter().filter_map(|tool| Asking::tool(&tool.name, tool.auth.as_ref()));
        let mut found: Vec<Asking> = tools.collect();
        for server in servers {
            found.extend(Asking::server(&server.name, &server.url, server.auth.as_ref())?);
        }
        Ok(found)
    }

    async fn providers_of(tools: &[HttpToolConfig], ports: Option<&SignInPorts>) -> String {
        checked(tools, ports).await.expect_err("refused").to_string()
    }
}
