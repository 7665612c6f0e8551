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
//! - The person and their browser: the Connect button opens the bot's own
//!   start page ([`SignInUrls::start`]), which sets a cookie for this
//!   sign-in in the browser (stamped with when that browser first came).
//!   It goes on only once Slack told the bot that the person who asked
//!   clicked the button (a signed interaction: [`ConnectStates::arm`]),
//!   and binds the sign-in to a browser that first came no earlier than
//!   that click (the browser the click opened; not one that held the link
//!   before) within a minute of the last click; the state keeps the
//!   cookie's hash. The callback is taken only from that browser: a link
//!   forwarded or pasted elsewhere signs no one in as the person.
//! - No mix-up between providers (RFC 9207; RFC 9700 4.4): each provider
//!   has its own redirect URI ([`SignInUrls::redirect_uri`]), the callback
//!   must arrive at the one of the state's provider and name its issuer
//!   where the issuer says it will, and the state keeps the one token
//!   endpoint its code may be sent to.
//! - [`TokenVault`]: a person's tokens per provider, and [`SealedVault`],
//!   which keeps them on any [`VersionedRecords`] sealed by a [`KeySealer`]
//!   (KMS envelope encryption in AWS): the table never holds a token in
//!   the clear, and a sealed token copied to another person's item does
//!   not open (the seal is bound to team, user and provider).
//!
//! Tokens never enter the turn, logs, S3, metrics or Slack: [`Tokens`]
//! prints as `Tokens { .. }`.

use crate::keys;
use crate::messages::ThreadRef;
use crate::ports::{KeySealer, PortError, Put, RecordKey, VersionedRecords};
use crate::retry::{Raced, retry_races};
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

pub use crate::keys::{STATE_TTL_SECS, TOKENS_TTL_SECS};
/// Binds of a browser tried when the worker changed the state meanwhile.
const BIND_TRIES: u32 = 3;

/// How long after the person's click the start page may bind a browser:
/// the browser the click opened arrives within seconds; a link opened
/// later (forwarded, pasted) finds the window shut.
pub const ARMED_FOR_SECS: i64 = 60;

/// How much earlier than Slack's stamp of the click the browser the click
/// opened may first reach the start page (clocks and networks differ).
pub const CLICK_SLOP_SECS: i64 = 2;

/// Where the Connect button sends the person's browser first.
pub const START_PATH: &str = "/oauth/start";
/// Where providers send it back: `{CALLBACK_PATH}/{provider}`.
pub const CALLBACK_PATH: &str = "/oauth/callback";

/// The deployment's sign-in addresses, from its callback URL
/// (`OAUTH_REDIRECT_URI`: the ingress's function URL + `/oauth/callback`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInUrls {
    callback: Url,
}

impl SignInUrls {
    /// `None` unless `callback` ends in [`CALLBACK_PATH`] and has no query
    /// or fragment.
    pub fn from_callback(callback: &Url) -> Option<Self> {
        let usable = callback.path().ends_with(CALLBACK_PATH)
            && callback.query().is_none()
            && callback.fragment().is_none()
            && endpoint_refusal(callback).is_none();
        usable.then(|| Self { callback: callback.clone() })
    }

    /// The redirect URI of one provider: its own, so a callback says which
    /// provider's sign-in it ends.
    pub fn redirect_uri(&self, provider: &str) -> Url {
        let mut url = self.callback.clone();
        url.path_segments_mut().expect("an http(s) URL has a path").push(provider);
        url
    }

    /// The link the Connect button opens: the bot's start page for `state`.
    pub fn start(&self, state: &str) -> Url {
        let mut url = self.callback.clone();
        let base = &self.callback.path()[..self.callback.path().len() - CALLBACK_PATH.len()];
        url.set_path(&format!("{base}{START_PATH}"));
        url.query_pairs_mut().append_pair("state", state);
        url
    }
}

/// The provider a callback path names (`/oauth/callback/{provider}`), if
/// it is one.
pub fn callback_provider(path: &str) -> Option<&str> {
    let provider = path.strip_prefix(CALLBACK_PATH)?.strip_prefix('/')?;
    valid_provider_name(provider).then_some(provider)
}

/// A provider's name as configured: `[a-zA-Z0-9_-]`, 1 to 32 characters.
pub fn valid_provider_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 32 && name.chars().all(|c| c.is_ascii_alphanumeric() || "_-".contains(c))
}

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

/// Why an endpoint read from a server's metadata (discovery) may not be
/// used: everything [`endpoint_refusal`] refuses, and, unless the resource
/// that named it is itself on loopback (the tests, the local runner), any
/// `http` endpoint and any host that is an IP address on loopback, a
/// private or link-local network, or unspecified: a server's metadata
/// cannot point the worker at its own machine or network.
pub fn discovered_endpoint_refusal(url: &Url, resource: &Url) -> Option<&'static str> {
    if let Some(reason) = endpoint_refusal(url) {
        return Some(reason);
    }
    if is_local(resource) {
        return None;
    }
    if url.scheme() != "https" {
        return Some("must be https");
    }
    is_local(url).then_some("may not name a loopback, private or link-local address")
}

fn is_local(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => {
            ip.is_loopback() || ip.is_private() || ip.is_link_local() || ip.is_unspecified() || ip.is_broadcast()
        }
        Some(url::Host::Ipv6(ip)) => {
            ip.is_loopback()
                || ip.is_unspecified()
                || ip.is_unique_local()
                || ip.is_unicast_link_local()
                || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback() || v4.is_private() || v4.is_link_local())
        }
        None => false,
    }
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
    /// The provider's authorization URL for this sign-in, where the start
    /// page sends the browser (`None`: a state from before start pages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorize_url: Option<String>,
    /// The one token endpoint this sign-in's code may be sent to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// The issuer the callback's `iss` must name (RFC 9207), where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The issuer says it always sends `iss`: a callback without it is refused.
    #[serde(default)]
    pub issuer_sends_iss: bool,
    /// When the person who asked first clicked its Connect button in Slack
    /// (Slack's stamp, Unix seconds): a browser that came before holds a
    /// link it was given, and is never bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clicked_at: Option<i64>,
    /// Until when (Unix seconds) the start page may bind a browser:
    /// [`ARMED_FOR_SECS`] after the person's last click.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub armed_until: Option<i64>,
    /// SHA-256 (hex) of the browser key of the browser that opened the
    /// start page: only that browser's callback is taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<String>,
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
            .field("token_endpoint", &self.token_endpoint)
            .field("issuer", &self.issuer)
            .field("browser_bound", &self.browser.is_some())
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
    /// Opened, or brought back, by a browser other than the one that
    /// opened the link first.
    #[error("the sign-in was started in another browser")]
    OtherBrowser,
    /// The callback is not the one the state's provider sends (another
    /// provider's redirect URI, or another issuer): an attempted mix-up.
    #[error("the sign-in came back from another provider: {0}")]
    MixUp(&'static str),
    /// The person's own click on the Connect button has not reached the
    /// bot (yet), or was more than [`ARMED_FOR_SECS`] ago: no browser may
    /// start it now.
    #[error("the sign-in waits for the Connect click of the person who asked")]
    NotArmed,
    /// This browser held the link before the person clicked: it was given
    /// the link, and is not the browser the click opened.
    #[error("the sign-in link was opened before the person clicked Connect")]
    OpenedBeforeClick,
    /// A state made before start pages existed: it cannot be bound.
    #[error("the sign-in link is from an older version of the bot")]
    Outdated,
    #[error("the state store failed: {0}")]
    Store(String),
}

/// Whether a value could be a state this build made (43 base64url
/// characters), before any read.
pub fn well_formed(state: &str) -> bool {
    state.len() == 43 && state.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Issuers compare as RFC 9207 says (simple string comparison), a trailing
/// slash aside.
fn same_issuer(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// What a callback brought back, besides its `state`.
#[derive(Debug, Clone, Copy)]
pub struct CallbackParams<'a> {
    pub code: &'a str,
    /// The provider its path names (`/oauth/callback/{provider}`).
    pub provider: &'a str,
    /// RFC 9207's `iss`, if sent.
    pub iss: Option<&'a str>,
    /// The hash of the browser key the request carried.
    pub browser: &'a str,
}

/// How a sign-in ended, as the person's browser is told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum SignInOutcome {
    /// The code was exchanged; the tokens are kept. `account`: who the
    /// provider says signed in, where it says (an ID token's email,
    /// username or subject).
    Connected { account: Option<String> },
    /// The provider refused the code, or the exchange was not allowed.
    Refused { reason: String },
}

/// Sign-in states on any [`VersionedRecords`] (the turns table in AWS).
#[derive(Clone)]
pub struct ConnectStates(Arc<dyn VersionedRecords>);

impl ConnectStates {
    pub fn new(records: Arc<dyn VersionedRecords>) -> Self {
        Self(records)
    }

    /// Stores a new sign-in with `provider` and returns its `state` and
    /// the PKCE pair whose challenge is in the stored authorization URL.
    pub async fn open(
        &self,
        thread: &ThreadRef,
        user: &UserId,
        turn_id: &TurnId,
        provider: &OAuthProvider,
        now_unix: i64,
    ) -> Result<(String, Pkce), PortError> {
        let (state, pkce) = (random_token(32), Pkce::fresh());
        let record = ConnectState {
            team: thread.team.clone(),
            user: user.clone(),
            turn_id: turn_id.clone(),
            thread: thread.clone(),
            provider: provider.name.clone(),
            verifier: pkce.verifier.clone(),
            expires_at: now_unix + STATE_TTL_SECS,
            taken: false,
            code: None,
            burned_by: None,
            authorize_url: Some(provider.authorization_url(&state, &pkce).to_string()),
            token_endpoint: Some(provider.token_endpoint.to_string()),
            issuer: provider.issuer.as_ref().map(Url::to_string),
            issuer_sends_iss: provider.issuer_sends_iss,
            clicked_at: None,
            armed_until: None,
            browser: None,
        };
        let json = serde_json::to_string(&record).expect("states are strings and numbers");
        match crate::store::put_versioned(self.0.as_ref(), &keys::oauth_state(&state), 0, json, record.expires_at)
            .await?
        {
            Put::Written => Ok((state, pkce)),
            // 256 random bits met an existing state: not in this universe.
            Put::Conflict { .. } => Err(PortError::new("open sign-in", "a fresh state already existed")),
        }
    }

    /// Binds the sign-in `state` names to the browser whose cookie hashes
    /// to `browser` and which first came at `first_seen`, and returns it
    /// for the redirect to the provider: only after the person's click, to
    /// a browser that came no earlier than it. The same browser again (a
    /// reload, or a retry after a lost answer) finds its own binding; any
    /// other browser is refused.
    pub async fn bind_browser(
        &self,
        state: &str,
        browser: &str,
        first_seen: i64,
        now_unix: i64,
    ) -> Result<ConnectState, StateRefused> {
        // A write the worker made meanwhile (a second click arming it)
        // is read again; a browser bound meanwhile is final.
        let bound = retry_races(BIND_TRIES, |_| async {
            self.try_bind(state, browser, first_seen, now_unix).await?.ok_or(Raced::Lost)
        })
        .await?;
        bound.ok_or_else(|| StateRefused::Store("the sign-in kept changing while being bound".into()))
    }

    /// One try of [`Self::bind_browser`]; `Ok(None)`: the state changed
    /// between the read and the write, and no browser is bound yet.
    async fn try_bind(
        &self,
        state: &str,
        browser: &str,
        first_seen: i64,
        now_unix: i64,
    ) -> Result<Option<ConnectState>, StateRefused> {
        let store = |err: PortError| StateRefused::Store(err.to_string());
        let Some((mut record, version)) = self.read(state).await.map_err(store)? else {
            return Err(StateRefused::Unknown);
        };
        if now_unix >= record.expires_at {
            return Err(StateRefused::Expired);
        }
        match &record.browser {
            Some(bound) if bound == browser => {
                return if record.taken { Err(StateRefused::Replayed) } else { Ok(Some(record)) };
            }
            Some(_) => return Err(StateRefused::OtherBrowser),
            None if record.taken => return Err(StateRefused::Replayed),
            None => {}
        }
        if record.authorize_url.is_none() {
            return Err(StateRefused::Outdated);
        }
        let (Some(clicked_at), Some(armed_until)) = (record.clicked_at, record.armed_until) else {
            return Err(StateRefused::NotArmed);
        };
        if first_seen + CLICK_SLOP_SECS < clicked_at {
            return Err(StateRefused::OpenedBeforeClick);
        }
        if now_unix > armed_until {
            return Err(StateRefused::NotArmed);
        }
        record.browser = Some(browser.to_owned());
        let json = serde_json::to_string(&record).expect("states are strings and numbers");
        match crate::store::put_versioned(self.0.as_ref(), &keys::oauth_state(state), version, json, record.expires_at)
            .await
            .map_err(store)?
        {
            Put::Written => Ok(Some(record)),
            Put::Conflict { .. } => Ok(None),
        }
    }

    /// Takes the sign-in `state` names for the callback that brought
    /// `code`, if it is ours, unused, in time, from the browser that
    /// started it and from the provider it was started with: the code is
    /// stored with it for the worker's exchange, and no other callback (or
    /// click) can use it. The same callback again (a reload, or a retry
    /// after a lost answer) finds its own take and gets the record again;
    /// the worker's exchange happens once whatever it is sent.
    pub async fn take(
        &self,
        state: &str,
        back: &CallbackParams<'_>,
        now_unix: i64,
    ) -> Result<ConnectState, StateRefused> {
        let store = |err: PortError| StateRefused::Store(err.to_string());
        let Some((mut record, version)) = self.read(state).await.map_err(store)? else {
            return Err(StateRefused::Unknown);
        };
        if record.burned_by.is_some() {
            return Err(StateRefused::Replayed);
        }
        if record.browser.as_deref() != Some(back.browser) {
            return Err(StateRefused::OtherBrowser);
        }
        if record.provider != back.provider {
            return Err(StateRefused::MixUp("it came back to another provider's address"));
        }
        match (record.issuer.as_deref(), back.iss) {
            (Some(expected), Some(iss)) if !same_issuer(expected, iss) => {
                return Err(StateRefused::MixUp("it names another issuer"));
            }
            (Some(_), None) if record.issuer_sends_iss => {
                return Err(StateRefused::MixUp("it does not name its issuer, which this provider always does"));
            }
            _ => {}
        }
        if record.taken {
            return match &record.code {
                Some(taken_with) if taken_with == back.code && record.burned_by.is_none() => Ok(record),
                _ => Err(StateRefused::Replayed),
            };
        }
        if now_unix >= record.expires_at {
            return Err(StateRefused::Expired);
        }
        record.taken = true;
        record.code = Some(back.code.to_owned());
        let json = serde_json::to_string(&record).expect("states are strings and numbers");
        match crate::store::put_versioned(self.0.as_ref(), &keys::oauth_state(state), version, json, record.expires_at)
            .await
            .map_err(store)?
        {
            Put::Written => Ok(record),
            Put::Conflict { .. } => Err(StateRefused::Replayed),
        }
    }

    /// How the worker's exchange of the sign-in `state` names ended, once
    /// it has: the first outcome written stays (a retry writes the same).
    pub async fn record_outcome(&self, state: &str, outcome: &SignInOutcome, expires_at: i64) -> Result<(), PortError> {
        let json = serde_json::to_string(outcome).expect("outcomes are strings");
        crate::store::put_versioned(self.0.as_ref(), &keys::oauth_outcome(state), 0, json, expires_at).await?;
        Ok(())
    }

    /// The outcome [`Self::record_outcome`] kept, if the exchange ended.
    pub async fn outcome(&self, state: &str) -> Result<Option<SignInOutcome>, PortError> {
        if !well_formed(state) {
            return Ok(None);
        }
        let Some(stored) = self.0.get(&keys::oauth_outcome(state)).await? else { return Ok(None) };
        serde_json::from_str(&stored.state)
            .map(Some)
            .map_err(|err| PortError::new("read sign-in outcome", format!("stored outcome does not parse: {err}")))
    }

    /// The sign-in `state` names, as stored (its code included once taken).
    pub async fn load(&self, state: &str) -> Result<Option<ConnectState>, PortError> {
        Ok(self.read(state).await?.map(|(record, _)| record))
    }

    /// Arms a state its own person clicked in Slack at `clicked_at`
    /// (Slack's stamp of the click): the start page may bind a browser
    /// that came no earlier than their first click, until
    /// [`ARMED_FOR_SECS`] after their last. `Ok(false)`: it names nothing,
    /// or is taken or burned. The same click again (a redelivery) changes
    /// nothing.
    pub async fn arm(&self, state: &str, clicked_at: i64) -> Result<bool, PortError> {
        let Some((mut record, version)) = self.read(state).await? else { return Ok(false) };
        if record.taken {
            return Ok(false);
        }
        let first = record.clicked_at.map_or(clicked_at, |first| first.min(clicked_at));
        let until = record.armed_until.unwrap_or_default().max(clicked_at + ARMED_FOR_SECS);
        if (record.clicked_at, record.armed_until) == (Some(first), Some(until)) {
            return Ok(true);
        }
        (record.clicked_at, record.armed_until) = (Some(first), Some(until));
        let json = serde_json::to_string(&record).expect("states are strings and numbers");
        match crate::store::put_versioned(self.0.as_ref(), &keys::oauth_state(state), version, json, record.expires_at)
            .await?
        {
            Put::Written => Ok(true),
            // Changed meanwhile (armed by another click, or bound): read again.
            Put::Conflict { .. } => {
                Ok(self.read(state).await?.is_some_and(|(record, _)| record.armed_until.is_some() && !record.taken))
            }
        }
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
        match crate::store::put_versioned(self.0.as_ref(), &keys::oauth_state(state), version, json, record.expires_at)
            .await?
        {
            Put::Written => Ok(Some(record)),
            Put::Conflict { .. } => Ok(None),
        }
    }

    async fn read(&self, state: &str) -> Result<Option<(ConnectState, u64)>, PortError> {
        if !well_formed(state) {
            return Ok(None);
        }
        let Some(stored) = self.0.get(&keys::oauth_state(state)).await? else { return Ok(None) };
        let record = serde_json::from_str(&stored.state)
            .map_err(|err| PortError::new("read sign-in", format!("stored state does not parse: {err}")))?;
        Ok(Some((record, stored.version)))
    }
}

fn client_key(issuer: &Url, redirect_uri: &Url) -> RecordKey {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{issuer} {redirect_uri}"));
    let hex: String = digest[..16].iter().map(|byte| format!("{byte:02x}")).collect();
    keys::oauth_client(&hex)
}

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
        match crate::store::put_versioned(
            self.0.as_ref(),
            &key,
            0,
            client_id.to_owned(),
            now_unix + keys::CLIENT_TTL_SECS,
        )
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
    /// The authorization server's issuer identifier, where known (an MCP
    /// server's discovered metadata, or configured): a callback naming
    /// another is refused.
    pub issuer: Option<Url>,
    /// The issuer's metadata says it sends `iss` with every authorization
    /// response (RFC 9207): a callback without it is refused.
    pub issuer_sends_iss: bool,
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
    /// `authorization_response_iss_parameter_supported` (RFC 9207).
    pub sends_iss: bool,
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
    /// The account as people know it (the ID token's `email` or
    /// `preferred_username`), shown to the person who connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
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
    /// The account as people know it, where the provider said.
    pub account: Option<String>,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    account: Option<String>,
    connected_at: i64,
    /// The tokens' JSON, sealed.
    sealed: String,
}

/// Tokens sealed by a [`KeySealer`], one item per person and provider
/// beside the person's other items (`USER#{team}#{user}` / `TOKENS#{provider}`).
pub struct SealedVault {
    records: Arc<dyn VersionedRecords>,
    sealer: Arc<dyn KeySealer>,
    organization: Option<slack::EnterpriseId>,
}

impl SealedVault {
    pub fn new(records: Arc<dyn VersionedRecords>, sealer: Arc<dyn KeySealer>) -> Self {
        Self { records, sealer, organization: None }
    }

    /// The same, for an org-wide deployment in `organization`: each
    /// person's tokens are listed for its uninstall too
    /// (`crate::departures::note`).
    #[must_use]
    pub fn in_organization(self, organization: Option<slack::EnterpriseId>) -> Self {
        Self { organization, ..self }
    }

    async fn items(&self, team: &TeamId, user: &UserId) -> Result<Vec<VaultItem>, PortError> {
        let items = self.records.parts(&keys::user_partition(team, user), keys::TOKENS_SORT_PREFIX).await?;
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
            account: tokens.account.clone(),
            connected_at: now_unix,
            sealed,
        };
        let json = serde_json::to_string(&item).expect("vault items are strings and numbers");
        let sort_key = keys::user_tokens(&key.provider);
        let (partition, expires_at) = (keys::user_partition(&key.team, &key.user), now_unix + TOKENS_TTL_SECS);
        crate::departures::note(
            self.records.as_ref(),
            self.organization.as_ref(),
            &key.team,
            &partition,
            keys::TOKENS_SORT_PREFIX,
            expires_at,
        )
        .await?;
        self.records.put_part(&partition, &sort_key, json, expires_at).await
    }

    async fn remove(&self, key: &ConnectionKey) -> Result<Option<Tokens>, PortError> {
        let tokens = self.get(key).await.ok().flatten();
        self.records
            .delete_part(&keys::user_partition(&key.team, &key.user), &keys::user_tokens(&key.provider))
            .await?;
        Ok(tokens)
    }

    async fn connections(&self, team: &TeamId, user: &UserId) -> Result<Vec<Connection>, PortError> {
        Ok(self
            .items(team, user)
            .await?
            .into_iter()
            .map(|item| Connection {
                provider: item.provider,
                subject: item.subject,
                account: item.account,
                connected_at: item.connected_at,
            })
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
            account: None,
        };
        assert_eq!(format!("{tokens:?}"), "Tokens { .. }");
        assert!(tokens.is_fresh(939) && !tokens.is_fresh(940));
    }
}
