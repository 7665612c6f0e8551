//! Per-user sign-in for tools that act as the person who asked (OAuth 2.1:
//! authorization code with PKCE), without any transport: the pieces every
//! function shares.
//!
//! - [`Pkce`]: a fresh verifier and its S256 challenge.
//! - [`ConnectStates`]: the `state` of one sign-in, a random value naming
//!   an item that binds team, user, turn and provider, kept a few minutes
//!   and taken at most once: a forged value names nothing, a replayed one
//!   finds it taken, a late one finds it expired. Taking it is a versioned
//!   write, so a take whose answer was lost is still known as its own.
//! - [`TokenVault`]: a person's tokens per provider, and [`SealedVault`],
//!   which keeps them on any [`VersionedRecords`] sealed by a [`KeySealer`]
//!   (KMS envelope encryption in AWS): the table never holds a token in
//!   the clear, and a sealed token copied to another person's item does
//!   not open (the seal is bound to team, user and provider).
//!
//! Tokens never enter the turn, logs, S3, metrics or Slack: [`Tokens`]
//! prints as `Tokens { .. }`.

use crate::messages::ThreadRef;
use crate::ports::{KeySealer, PortError, Put, RecordKey, VersionedRecords};
use crate::turn::TurnId;
use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use slack::{TeamId, UserId};
use std::fmt;
use std::sync::Arc;
use url::Url;

/// How long a sign-in may take, from the Connect button to the callback.
pub const STATE_TTL_SECS: i64 = 10 * 60;

/// Why an endpoint of a sign-in (configured, or read from a server's
/// metadata) may not be used: it must be `https` (`http` only on
/// loopback, for tests and local providers) and carry no credentials or
/// fragment. `None`: usable.
pub fn endpoint_refusal(url: &Url) -> Option<&'static str> {
    let loopback = matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
    if !(url.scheme() == "https" || (url.scheme() == "http" && loopback)) {
        return Some("must be https");
    }
    (!url.username().is_empty() || url.password().is_some() || url.fragment().is_some())
        .then_some("may not carry credentials or a fragment")
}

/// `bytes` random bytes from the OS, base64url without padding.
pub fn random_token(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    aws_lc_rs::rand::SecureRandom::fill(&aws_lc_rs::rand::SystemRandom::new(), &mut buffer)
        .expect("the OS random number generator works");
    URL_SAFE_NO_PAD.encode(buffer)
}

/// RFC 7636 with `S256`: the verifier stays with the state item; only the
/// challenge goes to the authorization server in the browser.
#[derive(Clone, PartialEq, Eq)]
pub struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

impl Pkce {
    pub fn fresh() -> Self {
        // 32 bytes: 43 characters, the shortest verifier RFC 7636 allows.
        Self::from_verifier(random_token(32))
    }

    pub fn from_verifier(verifier: String) -> Self {
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        Self { verifier, challenge }
    }
}

impl fmt::Debug for Pkce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Pkce { .. }")
    }
}

/// What one sign-in is for: who, in which turn, with which provider.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectState {
    pub team: TeamId,
    pub user: UserId,
    pub turn_id: TurnId,
    /// Where the turn asks, to resume it.
    pub thread: ThreadRef,
    pub provider: String,
    /// The PKCE verifier, sent only with the code exchange.
    pub verifier: String,
    /// Unix seconds.
    pub expires_at: i64,
    /// Taken by a callback (or burned by another person's click).
    #[serde(default)]
    pub taken: bool,
    /// The code the callback brought, for the worker's exchange: useless
    /// without the verifier beside it, and spent once exchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Someone other than `user` clicked the Connect button: the state is
    /// burned, and no callback can use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burned_by: Option<UserId>,
}

impl fmt::Debug for ConnectState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectState")
            .field("team", &self.team)
            .field("user", &self.user)
            .field("turn_id", &self.turn_id)
            .field("provider", &self.provider)
            .field("expires_at", &self.expires_at)
            .field("taken", &self.taken)
            .field("burned_by", &self.burned_by)
            .finish_non_exhaustive()
    }
}

/// Why a callback's `state` was not accepted. Each changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateRefused {
    #[error("the sign-in link is not one this bot made")]
    Unknown,
    #[error("the sign-in link was already used")]
    Replayed,
    #[error("the sign-in link expired")]
    Expired,
    #[error("the state store failed: {0}")]
    Store(String),
}

/// Whether a value could be a state this build made (43 base64url
/// characters), before any read.
fn well_formed(state: &str) -> bool {
    state.len() == 43 && state.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn state_key(state: &str) -> RecordKey {
    RecordKey { partition: format!("OAUTH_STATE#{state}"), kind: "STATE" }
}

/// Sign-in states on any [`VersionedRecords`] (the turns table in AWS).
#[derive(Clone)]
pub struct ConnectStates(Arc<dyn VersionedRecords>);

impl ConnectStates {
    pub fn new(records: Arc<dyn VersionedRecords>) -> Self {
        Self(records)
    }

    /// Stores a new sign-in and returns its `state` (and the PKCE pair
    /// whose challenge goes in the authorization URL).
    pub async fn open(
        &self,
        thread: &ThreadRef,
        user: &UserId,
        turn_id: &TurnId,
        provider: &str,
        now_unix: i64,
    ) -> Result<(String, Pkce), PortError> {
        let (state, pkce) = (random_token(32), Pkce::fresh());
        let record = ConnectState {
            team: thread.team.clone(),
            user: user.clone(),
            turn_id: turn_id.clone(),
            thread: thread.clone(),
            provider: provider.to_owned(),
            verifier: pkce.verifier.clone(),
            expires_at: now_unix + STATE_TTL_SECS,
            taken: false,
            code: None,
            burned_by: None,
        };
        let json = serde_json::to_string(&record).expect("states are strings and numbers");
        match crate::store::put_versioned(self.0.as_ref(), &state_key(&state), 0, json, record.expires_at).await? {
            Put::Written => Ok((state, pkce)),
            // 256 random bits met an existing state: not in this universe.
            Put::Conflict { .. } => Err(PortError::new("open sign-in", "a fresh state already existed")),
        }
    }

    /// Takes the sign-in `state` names for the callback that brought
    /// `code`, if it is ours, unused and in time: the code is stored with
    /// it for the worker's exchange, and no other callback (or click) can
    /// use it. The same callback again (a reload, or a retry after a lost
    /// answer) finds its own take and gets the record again; the worker's
    /// exchange happens once whatever it is sent.
    pub async fn take(&self, state: &str, code: &str, now_unix: i64) -> Result<ConnectState, StateRefused> {
        let store = |err: PortError| StateRefused::Store(err.to_string());
        let Some((mut record, version)) = self.read(state).await.map_err(store)? else {
            return Err(StateRefused::Unknown);
        };
        if record.taken {
            return match &record.code {
                Some(taken_with) if taken_with == code && record.burned_by.is_none() => Ok(record),
                _ => Err(StateRefused::Replayed),
            };
        }
        if now_unix >= record.expires_at {
            return Err(StateRefused::Expired);
        }
        record.taken = true;
        record.code = Some(code.to_owned());
        let json = serde_json::to_string(&record).expect("states are strings and numbers");
        match crate::store::put_versioned(self.0.as_ref(), &state_key(state), version, json, record.expires_at)
            .await
            .map_err(store)?
        {
            Put::Written => Ok(record),
            Put::Conflict { .. } => Err(StateRefused::Replayed),
        }
    }

    /// The sign-in `state` names, as stored (its code included once taken).
    pub async fn load(&self, state: &str) -> Result<Option<ConnectState>, PortError> {
        Ok(self.read(state).await?.map(|(record, _)| record))
    }

    /// Burns a state someone other than its person clicked: no callback
    /// can use it afterwards. `Ok(None)`: it names nothing, or was
    /// already taken (then burning changes nothing).
    pub async fn burn(&self, state: &str, by: &UserId) -> Result<Option<ConnectState>, PortError> {
        let Some((mut record, version)) = self.read(state).await? else { return Ok(None) };
        if record.taken {
            return Ok((record.burned_by.as_ref() == Some(by)).then_some(record));
        }
        record.taken = true;
        record.burned_by = Some(by.clone());
        let json = serde_json::to_string(&record).expect("states are strings and numbers");
        match crate::store::put_versioned(self.0.as_ref(), &state_key(state), version, json, record.expires_at).await? {
            Put::Written => Ok(Some(record)),
            Put::Conflict { .. } => Ok(None),
        }
    }

    async fn read(&self, state: &str) -> Result<Option<(ConnectState, u64)>, PortError> {
        if !well_formed(state) {
            return Ok(None);
        }
        let Some(stored) = self.0.get(&state_key(state)).await? else { return Ok(None) };
        let record = serde_json::from_str(&stored.state)
            .map_err(|err| PortError::new("read sign-in", format!("stored state does not parse: {err}")))?;
        Ok(Some((record, stored.version)))
    }
}

fn client_key(issuer: &Url, redirect_uri: &Url) -> RecordKey {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{issuer} {redirect_uri}"));
    let hex: String = digest[..16].iter().map(|byte| format!("{byte:02x}")).collect();
    RecordKey { partition: format!("OAUTH_CLIENT#{hex}"), kind: "CLIENT" }
}

/// How long a registered client id is kept without a worker reading it.
const CLIENT_TTL_SECS: i64 = 5 * 365 * 24 * 3600;

impl ConnectStates {
    /// The client id this bot registered at `issuer` for `redirect_uri`
    /// (dynamic client registration), if any worker did.
    pub async fn registered_client(&self, issuer: &Url, redirect_uri: &Url) -> Result<Option<String>, PortError> {
        let stored = self.0.get(&client_key(issuer, redirect_uri)).await?;
        Ok(stored.map(|record| record.state))
    }

    /// Keeps a newly registered client id, once for every worker: when
    /// another worker kept one first, that one (this registration is left
    /// unused).
    pub async fn keep_registered_client(
        &self,
        issuer: &Url,
        redirect_uri: &Url,
        client_id: &str,
        now_unix: i64,
    ) -> Result<String, PortError> {
        let key = client_key(issuer, redirect_uri);
        match crate::store::put_versioned(self.0.as_ref(), &key, 0, client_id.to_owned(), now_unix + CLIENT_TTL_SECS)
            .await?
        {
            Put::Written => Ok(client_id.to_owned()),
            Put::Conflict { current: Some(first) } => Ok(first.state),
            Put::Conflict { current: None } => {
                Ok(self.registered_client(issuer, redirect_uri).await?.unwrap_or_else(|| client_id.to_owned()))
            }
        }
    }
}

/// One provider as configured (or discovered), its secret resolved.
#[derive(Clone)]
pub struct OAuthProvider {
    pub name: String,
    pub authorization_endpoint: Url,
    pub token_endpoint: Url,
    pub revocation_endpoint: Option<Url>,
    pub client_id: String,
    /// `None`: a public client (PKCE alone).
    pub client_secret: Option<String>,
    pub scopes: Vec<String>,
    /// The bot's callback: `{function URL}/oauth/callback`.
    pub redirect_uri: Url,
    /// The resource the tokens are for (an MCP server), sent as RFC 8707's
    /// `resource` with the sign-in and every token request.
    pub resource: Option<Url>,
}

impl std::fmt::Debug for OAuthProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthProvider")
            .field("name", &self.name)
            .field("authorization_endpoint", &self.authorization_endpoint.as_str())
            .field("token_endpoint", &self.token_endpoint.as_str())
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl OAuthProvider {
    /// Where the person's browser goes to sign in and consent.
    pub fn authorization_url(&self, state: &str, pkce: &Pkce) -> Url {
        let mut url = self.authorization_endpoint.clone();
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.client_id)
            .append_pair("redirect_uri", self.redirect_uri.as_str())
            .append_pair("scope", &self.scopes.join(" "))
            .append_pair("state", state)
            .append_pair("code_challenge", &pkce.challenge)
            .append_pair("code_challenge_method", "S256");
        if let Some(resource) = &self.resource {
            url.query_pairs_mut().append_pair("resource", resource.as_str());
        }
        url
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthError {
    /// The provider said no (`invalid_grant`: the code or refresh token is
    /// spent, expired or revoked; the person must connect again).
    #[error("the provider refused: {error}")]
    Refused { error: String },
    /// Not reached, timed out, or a 5xx: try again later.
    #[error("the provider is unavailable: {0}")]
    Unavailable(String),
    #[error("the provider's answer cannot be read: {0}")]
    Malformed(String),
}

impl OAuthError {
    /// The person must sign in again (nothing else will mend it).
    pub fn needs_sign_in(&self) -> bool {
        matches!(self, OAuthError::Refused { error } if error == "invalid_grant")
    }
}

/// An authorization server as a protected resource names it and its
/// metadata describes it (RFC 9728, RFC 8414; the MCP authorization spec).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationServer {
    pub issuer: Url,
    pub authorization_endpoint: Url,
    pub token_endpoint: Url,
    pub revocation_endpoint: Option<Url>,
    /// Dynamic client registration (RFC 7591), where offered.
    pub registration_endpoint: Option<Url>,
    /// The resource the tokens are for (RFC 8707's `resource`).
    pub resource: Url,
    /// The scopes the resource says it supports.
    pub scopes: Vec<String>,
}

/// The provider's endpoints: discovery, client registration, and the
/// token endpoint's exchange, refresh and revocation (the OAuth adapter
/// over HTTP).
#[async_trait]
pub trait OAuthTokens: Send + Sync {
    /// The authorization server of the protected resource at `resource`
    /// (an MCP server's URL): its protected-resource metadata, then the
    /// server's own.
    async fn discover(&self, resource: &Url) -> Result<AuthorizationServer, OAuthError> {
        Err(OAuthError::Unavailable(format!("no discovery for {resource}")))
    }
    /// Registers this bot as a public client (PKCE, no secret) sending
    /// people back to `redirect_uri`; its `client_id`.
    async fn register(&self, server: &AuthorizationServer, _redirect_uri: &Url) -> Result<String, OAuthError> {
        Err(OAuthError::Unavailable(format!("no client registration at {}", server.issuer)))
    }
    /// The code a callback got, for the person's tokens.
    async fn exchange(
        &self,
        provider: &OAuthProvider,
        code: &str,
        verifier: &str,
        now_unix: i64,
    ) -> Result<Tokens, OAuthError>;
    /// New tokens for a refresh token (the old one kept where the provider
    /// does not rotate it).
    async fn refresh(&self, provider: &OAuthProvider, refresh_token: &str, now_unix: i64)
    -> Result<Tokens, OAuthError>;
    /// Revokes a token where the provider offers revocation; `Ok(false)`
    /// where it does not.
    async fn revoke(&self, provider: &OAuthProvider, token: &str, hint: &str) -> Result<bool, OAuthError>;
}

/// A person's tokens for one provider. Never printed.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Unix seconds; `None`: the provider did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Who the provider says signed in (`sub`), for the audit trail; not a secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

impl Tokens {
    /// Usable for a call at `now_unix`, with a minute to spare.
    pub fn is_fresh(&self, now_unix: i64) -> bool {
        self.expires_at.is_none_or(|at| now_unix + 60 < at)
    }
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Tokens { .. }")
    }
}

/// An access token on its way to one call: never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken(String);

impl AccessToken {
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    /// The token, for the `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AccessToken(..)")
    }
}

/// Whose tokens, for which provider.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConnectionKey {
    pub team: TeamId,
    pub user: UserId,
    pub provider: String,
}

impl ConnectionKey {
    /// What a seal is bound to: a sealed token opens only for its own key.
    pub fn context(&self) -> [(&'static str, &str); 3] {
        [("team", self.team.as_str()), ("user", self.user.as_str()), ("provider", self.provider.as_str())]
    }
}

/// A connection as the Home tab lists it: no token in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    pub provider: String,
    pub subject: Option<String>,
    pub connected_at: i64,
}

/// A person's tokens, per provider.
#[async_trait]
pub trait TokenVault: Send + Sync {
    async fn get(&self, key: &ConnectionKey) -> Result<Option<Tokens>, PortError>;
    async fn put(&self, key: &ConnectionKey, tokens: &Tokens, now_unix: i64) -> Result<(), PortError>;
    /// Forgets the tokens; what was stored, for revoking at the provider.
    async fn remove(&self, key: &ConnectionKey) -> Result<Option<Tokens>, PortError>;
    /// The person's connections, tokens left sealed.
    async fn connections(&self, team: &TeamId, user: &UserId) -> Result<Vec<Connection>, PortError>;
}

/// The item a [`SealedVault`] keeps: everything but the tokens in the clear.
#[derive(Serialize, Deserialize)]
struct VaultItem {
    provider: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    subject: Option<String>,
    connected_at: i64,
    /// The tokens' JSON, sealed.
    sealed: String,
}

/// How long tokens are kept without being used or refreshed.
pub const TOKENS_TTL_SECS: i64 = 90 * 24 * 3600;
const VAULT_PREFIX: &str = "TOKENS#";

fn vault_partition(team: &TeamId, user: &UserId) -> String {
    format!("USER#{team}#{user}")
}

/// Tokens sealed by a [`KeySealer`], one item per person and provider
/// beside the person's other items (`USER#{team}#{user}` / `TOKENS#{provider}`).
pub struct SealedVault {
    records: Arc<dyn VersionedRecords>,
    sealer: Arc<dyn KeySealer>,
}

impl SealedVault {
    pub fn new(records: Arc<dyn VersionedRecords>, sealer: Arc<dyn KeySealer>) -> Self {
        Self { records, sealer }
    }

    async fn items(&self, team: &TeamId, user: &UserId) -> Result<Vec<VaultItem>, PortError> {
        let items = self.records.parts(&vault_partition(team, user), VAULT_PREFIX).await?;
        items
            .into_iter()
            .map(|(_, json)| {
                serde_json::from_str(&json)
                    .map_err(|err| PortError::new("read tokens", format!("stored item does not parse: {err}")))
            })
            .collect()
    }
}

#[async_trait]
impl TokenVault for SealedVault {
    async fn get(&self, key: &ConnectionKey) -> Result<Option<Tokens>, PortError> {
        let items = self.items(&key.team, &key.user).await?;
        let Some(item) = items.into_iter().find(|item| item.provider == key.provider) else { return Ok(None) };
        let plaintext = self.sealer.open(&item.sealed, &key.context()).await?;
        let tokens = serde_json::from_slice(&plaintext)
            .map_err(|_| PortError::new("open tokens", "sealed tokens do not parse"))?;
        Ok(Some(tokens))
    }

    async fn put(&self, key: &ConnectionKey, tokens: &Tokens, now_unix: i64) -> Result<(), PortError> {
        let plaintext = serde_json::to_vec(tokens).expect("tokens are strings and numbers");
        let sealed = self.sealer.seal(&plaintext, &key.context()).await?;
        let item = VaultItem {
            provider: key.provider.clone(),
            subject: tokens.subject.clone(),
            connected_at: now_unix,
            sealed,
        };
        let json = serde_json::to_string(&item).expect("vault items are strings and numbers");
        let sort_key = format!("{VAULT_PREFIX}{}", key.provider);
        self.records.put_part(&vault_partition(&key.team, &key.user), &sort_key, json, now_unix + TOKENS_TTL_SECS).await
    }

    async fn remove(&self, key: &ConnectionKey) -> Result<Option<Tokens>, PortError> {
        let tokens = self.get(key).await.ok().flatten();
        self.records
            .delete_part(&vault_partition(&key.team, &key.user), &format!("{VAULT_PREFIX}{}", key.provider))
            .await?;
        Ok(tokens)
    }

    async fn connections(&self, team: &TeamId, user: &UserId) -> Result<Vec<Connection>, PortError> {
        Ok(self
            .items(team, user)
            .await?
            .into_iter()
            .map(|item| Connection { provider: item.provider, subject: item.subject, connected_at: item.connected_at })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_the_rfc_7636_s256_of_the_verifier() {
        // RFC 7636, appendix B.
        let pkce = Pkce::from_verifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".into());
        assert_eq!(pkce.challenge, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        let fresh = Pkce::fresh();
        assert_eq!(fresh.verifier.len(), 43);
        assert_ne!(fresh.verifier, Pkce::fresh().verifier);
        assert_eq!(format!("{fresh:?}"), "Pkce { .. }");
    }

    #[test]
    fn tokens_never_print_and_go_stale_a_minute_early() {
        let tokens = Tokens {
            access_token: "at-secret".into(),
            refresh_token: Some("rt-secret".into()),
            expires_at: Some(1_000),
            scope: None,
            subject: Some("alice".into()),
        };
        assert_eq!(format!("{tokens:?}"), "Tokens { .. }");
        assert!(tokens.is_fresh(939) && !tokens.is_fresh(940));
    }
}
