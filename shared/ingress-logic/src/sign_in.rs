//! The pages a person's browser sees during a sign-in, on the ingress's
//! function URL. No Slack signature here: the `state` and a cookie bound
//! to the browser are the proof.
//!
//! 1. `GET /oauth/start?state=…` (the Connect button's link) waits (the
//!    page reloads itself) until the person's own click on the button has
//!    reached the worker through Slack's signed interaction, which arms the
//!    state. Each browser that opens it gets a cookie for this sign-in
//!    (`__Host-`, HttpOnly, Secure, SameSite=Lax, ten minutes; stamped with
//!    when the browser first came and MACed with the state under a key
//!    derived from the signing secret). The sign-in is bound to the first
//!    browser that came no earlier than the person's click (the state
//!    keeps its cookie's hash), which is sent on to the provider. Any other
//!    browser (one that held a forwarded or pasted link before the click,
//!    or came second) is refused.
//! 2. `GET /oauth/callback/{provider}?code=…&state=…[&iss=…]`, where the
//!    provider sends the browser back: the state is taken once, only from
//!    the browser it is bound to, only at its own provider's address and
//!    naming its issuer (RFC 9207), and the code stored beside it for the
//!    worker's exchange; the worker is told by a message naming the state,
//!    never the code. A request without a valid cookie is refused before
//!    any read. A provider's error (`?error=access_denied`) changes nothing:
//!    the person can click Connect again.
//! 3. The callback's page says "Finishing" and reloads itself
//!    (`?state=…&check=1`) until the worker recorded how the exchange
//!    ended: "Connected" (as whom, where the provider said) only then.
//!
//! Pages have no script, no outside resource and no referrer (the URL
//! holds the code), and are never cached.

use assistant_core::messages::SignedIn;
use assistant_core::oauth::{
    CALLBACK_PATH, CallbackParams, ConnectState, ConnectStates, START_PATH, SignInOutcome, StateRefused,
    callback_provider, well_formed,
};
use assistant_core::ports::WorkQueue;
use assistant_core::{Clock, WorkMessage};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{KeyInit, Mac};
use sha2::{Digest, Sha256};
use std::fmt;
use std::sync::Arc;
use tracing::{info, warn};

/// The cookies that bind a sign-in to a browser, one per sign-in: this
/// and the state's first 16 characters. `__Host-`: only from this origin,
/// over https, for every path.
pub const COOKIE_PREFIX: &str = "__Host-sign-in-";

/// The longest code or error a callback may carry.
const MAX_PARAM: usize = 2_048;
/// How often a waiting page looks again.
const RELOAD_SECS: u32 = 2;
/// How many times the start page looks for the person's click (about 45 s,
/// within the minute a click lasts).
const WAIT_TRIES: u32 = 22;

/// The page the person's browser shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub status: u16,
    pub title: &'static str,
    pub text: String,
    /// Reload to this (relative) URL after [`RELOAD_SECS`].
    pub reload: Option<String>,
}

impl Page {
    fn new(status: u16, title: &'static str, text: impl Into<String>) -> Self {
        Self { status, title, text: text.into(), reload: None }
    }

    /// The page as HTML, its text escaped.
    pub fn html(&self) -> String {
        let reload = self.reload.as_deref().map_or(String::new(), |url| {
            format!("<meta http-equiv=\"refresh\" content=\"{RELOAD_SECS};url={}\">", escape(url))
        });
        format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" \
             content=\"width=device-width\">{reload}<title>{title}</title></head><body style=\"font-family: \
             sans-serif; max-width: 36em; margin: 4em auto\"><h1>{title}</h1><p>{text}</p></body></html>",
            title = escape(self.title),
            text = escape(&self.text),
        )
    }

    /// The headers every page goes with.
    pub fn headers() -> [(&'static str, &'static str); 5] {
        [
            ("content-type", "text/html; charset=utf-8"),
            ("cache-control", "no-store"),
            ("referrer-policy", "no-referrer"),
            ("content-security-policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"),
            ("x-content-type-options", "nosniff"),
        ]
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// What the ingress answers a browser: a page, and on the start page a
/// redirect to the provider and the binding cookie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub page: Page,
    /// `Location`, with a 302.
    pub location: Option<String>,
    /// One `Set-Cookie` value.
    pub set_cookie: Option<String>,
}

impl From<Page> for Answer {
    fn from(page: Page) -> Self {
        Self { page, location: None, set_cookie: None }
    }
}

/// A browser's request: its path, query and cookies (`name=value` each,
/// as the function URL hands them over).
#[derive(Debug, Clone, Copy)]
pub struct BrowserRequest<'a> {
    pub path: &'a str,
    pub query: Option<&'a str>,
    pub cookies: &'a [String],
}

/// Mints and checks the browser cookies: 32 random bytes, when the browser
/// first came, and their MAC with the state, so a request with a made-up
/// cookie (or another sign-in's) is refused without a table read.
#[derive(Clone)]
pub struct BrowserKey([u8; 32]);

/// A browser's cookie for one sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
struct BrowserCookie {
    value: String,
    /// When this browser first opened the sign-in's start page.
    first_seen: i64,
}

impl BrowserKey {
    pub fn new(signing_secret: &slack::SigningSecret) -> Self {
        Self(signing_secret.derive_key(b"slack-assistant sign-in browser cookie v2"))
    }

    fn mac(&self, state: &str, nonce: &str, first_seen: i64) -> hmac::Hmac<Sha256> {
        let mut mac = hmac::Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC accepts keys of any length");
        mac.update(format!("{state}.{nonce}.{first_seen}").as_bytes());
        mac
    }

    fn mint(&self, state: &str, now_unix: i64) -> BrowserCookie {
        let nonce = assistant_core::oauth::random_token(32);
        let tag = URL_SAFE_NO_PAD.encode(&self.mac(state, &nonce, now_unix).finalize().into_bytes()[..16]);
        BrowserCookie { value: format!("{nonce}.{now_unix}.{tag}"), first_seen: now_unix }
    }

    /// The cookie this key minted for `state`, if `value` is one (compared
    /// in constant time).
    fn verified(&self, state: &str, value: &str) -> Option<BrowserCookie> {
        let mut parts = value.split('.');
        let (nonce, first_seen, tag) = (parts.next()?, parts.next()?, parts.next()?);
        let first_seen: i64 = first_seen.parse().ok()?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok().filter(|tag| tag.len() == 16 && nonce.len() == 43)?;
        if parts.next().is_some() {
            return None;
        }
        self.mac(state, nonce, first_seen).verify_truncated_left(&tag).ok()?;
        Some(BrowserCookie { value: value.to_owned(), first_seen })
    }
}

impl fmt::Debug for BrowserKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BrowserKey(..)")
    }
}

/// What the state keeps of a cookie: its SHA-256, hex.
fn fingerprint(cookie: &BrowserCookie) -> String {
    hex::encode(Sha256::digest(cookie.value.as_bytes()))
}

fn cookie_name(state: &str) -> String {
    format!("{COOKIE_PREFIX}{}", &state[..16])
}

/// The browser's cookie for `state` (well formed) among a request's
/// cookies, if one is there and ours.
fn browser_cookie(key: &BrowserKey, state: &str, cookies: &[String]) -> Option<BrowserCookie> {
    let name = cookie_name(state);
    cookies
        .iter()
        .flat_map(|header| header.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(found, _)| *found == name)
        .find_map(|(_, value)| key.verified(state, value))
}

fn set_cookie(state: &str, cookie: &BrowserCookie) -> String {
    let max_age = assistant_core::oauth::STATE_TTL_SECS;
    format!("{}={}; Path=/; Max-Age={max_age}; Secure; HttpOnly; SameSite=Lax", cookie_name(state), cookie.value)
}

/// The query's parameters this module reads, each at most once and short.
#[derive(Default)]
struct Params {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
    iss: Option<String>,
    check: bool,
    /// How many times the start page looked for the person's click.
    tries: u32,
}

fn params(query: Option<&str>) -> Option<Params> {
    let mut found = Params::default();
    for (name, value) in url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        let slot = match name.as_ref() {
            "state" => &mut found.state,
            "code" => &mut found.code,
            "error" => &mut found.error,
            "iss" => &mut found.iss,
            "check" => {
                found.check = true;
                continue;
            }
            "tries" => {
                found.tries = value.parse().ok()?;
                continue;
            }
            _ => continue,
        };
        if slot.is_some() || value.len() > MAX_PARAM {
            return None;
        }
        *slot = Some(value.into_owned());
    }
    Some(found)
}

fn not_a_link() -> Answer {
    warn!("a sign-in request with a repeated, oversized or missing parameter: refused");
    Page::new(400, "Sign-in not completed", "This link is not one a sign-in uses.").into()
}

fn other_browser() -> Answer {
    Page::new(
        403,
        "Sign-in not completed",
        "This sign-in belongs to another browser: only the browser the person's Connect click opened can finish \
         it. Nothing changed. If you did not open it elsewhere, ask again in Slack to get a new link.",
    )
    .into()
}

pub struct SignInPages {
    states: ConnectStates,
    queue: Arc<dyn WorkQueue>,
    clock: Arc<dyn Clock>,
    key: BrowserKey,
}

impl SignInPages {
    pub fn new(states: ConnectStates, queue: Arc<dyn WorkQueue>, clock: Arc<dyn Clock>, key: BrowserKey) -> Self {
        Self { states, queue, clock, key }
    }

    /// Whether `path` is one of these pages.
    pub fn serves(path: &str) -> bool {
        path == START_PATH || path == CALLBACK_PATH || path.starts_with(&format!("{CALLBACK_PATH}/"))
    }

    /// A browser's `GET` in, the answer out.
    pub async fn handle(&self, request: BrowserRequest<'_>) -> Answer {
        let Some(params) = params(request.query) else { return not_a_link() };
        if request.path == START_PATH {
            return self.start(params, request.cookies).await;
        }
        match callback_provider(request.path) {
            Some(provider) => self.callback(provider, params, request.cookies).await,
            // The one address of the versions before per-provider ones (a
            // Connect button posted before the deploy), or a made-up one.
            None => {
                warn!("a sign-in callback at an address that names no provider: refused");
                refused_page(&StateRefused::Outdated)
            }
        }
    }

    /// The Connect link: bind the sign-in to this browser, then on to the
    /// provider.
    async fn start(&self, params: Params, cookies: &[String]) -> Answer {
        let Some(state) = params.state.filter(|state| well_formed(state)) else { return not_a_link() };
        let now = self.clock.now_unix();
        let cookie = browser_cookie(&self.key, &state, cookies).unwrap_or_else(|| self.key.mint(&state, now));
        let answer = match self.states.bind_browser(&state, &fingerprint(&cookie), cookie.first_seen, now).await {
            Ok(record) => {
                let location = record.authorize_url.clone().expect("a bound state has its authorization URL");
                info!(provider = %record.provider, user = %record.user, "a sign-in started in the person's browser");
                Answer {
                    page: Page::new(302, "Signing in", format!("On to {} to sign in.", record.provider)),
                    location: Some(location),
                    set_cookie: None,
                }
            }
            // The click may still be on its way: look again a while, then stop.
            Err(StateRefused::NotArmed) if params.tries < WAIT_TRIES => {
                let mut page = Page::new(
                    202,
                    "Waiting for your click",
                    "This link works when the person who asked opens it with the Connect button in Slack. This \
                     page goes on by itself once Slack tells the bot about the click.",
                );
                let query: String = url::form_urlencoded::Serializer::new(String::new())
                    .append_pair("state", &state)
                    .append_pair("tries", &(params.tries + 1).to_string())
                    .finish();
                page.reload = Some(format!("?{query}"));
                page.into()
            }
            Err(refused) => return refused_page(&refused),
        };
        // The browser keeps when it first came, for its reloads.
        Answer { set_cookie: Some(set_cookie(&state, &cookie)), ..answer }
    }

    async fn callback(&self, provider: &str, params: Params, cookies: &[String]) -> Answer {
        if let Some(error) = params.error {
            // A short code only: the provider's words stay out of the page and the logs.
            let error: String = error.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_').take(64).collect();
            info!(error, "the provider sent the person back without a sign-in: nothing changed");
            return Page::new(
                400,
                "Sign-in not completed",
                format!(
                    "The sign-in was not completed ({error}). Nothing changed. Go back to Slack and click Connect \
                     again if you want to."
                ),
            )
            .into();
        }
        let Some(state) = params.state.filter(|state| well_formed(state)) else { return not_a_link() };
        let Some(cookie) = browser_cookie(&self.key, &state, cookies) else {
            warn!(provider, "a sign-in callback from a browser that did not start it: refused unread");
            return other_browser();
        };
        let browser = fingerprint(&cookie);
        if params.check {
            return self.status(&state, &browser).await;
        }
        let Some(code) = params.code else { return not_a_link() };
        let back = CallbackParams { code: &code, provider, iss: params.iss.as_deref(), browser: &browser };
        let record = match self.states.take(&state, &back, self.clock.now_unix()).await {
            Ok(record) => record,
            Err(refused) => return refused_page(&refused),
        };
        let message = WorkMessage::SignedIn(SignedIn {
            state: state.clone(),
            turn_id: record.turn_id.clone(),
            thread: record.thread.clone(),
        });
        if let Err(err) = self.queue.enqueue(&message).await {
            warn!(error = %err, "a sign-in was taken but not passed on: the person may reload");
            return Page::new(
                503,
                "Almost there",
                "Your sign-in arrived but could not be passed on just now. Reload this page in a moment.",
            )
            .into();
        }
        info!(provider = %record.provider, user = %record.user, "sign-in came back: passed to the worker");
        finishing(&state, &record)
    }

    /// How the worker's exchange ended, for the browser the sign-in is
    /// bound to.
    async fn status(&self, state: &str, browser: &str) -> Answer {
        let record = match self.states.load(state).await {
            Ok(Some(record)) => record,
            Ok(None) => return refused_page(&StateRefused::Unknown),
            Err(err) => return refused_page(&StateRefused::Store(err.to_string())),
        };
        if record.browser.as_deref() != Some(browser) {
            return other_browser();
        }
        let outcome = match self.states.outcome(state).await {
            Ok(outcome) => outcome,
            Err(err) => return refused_page(&StateRefused::Store(err.to_string())),
        };
        match outcome {
            Some(SignInOutcome::Connected { account }) => {
                let who = account.map_or_else(String::new, |account| format!(" as {account}"));
                Page::new(
                    200,
                    "Connected",
                    format!(
                        "You are signed in to {}{who}. Go back to Slack: your question continues in its thread. \
                         You can close this page. If that is not the account you meant, disconnect it in the app's Home \
                         tab in Slack.",
                        record.provider
                    ),
                )
                .into()
            }
            Some(SignInOutcome::Refused { .. }) => Page::new(
                400,
                "Sign-in not completed",
                format!(
                    "{} did not accept this sign-in. Nothing changed. Go back to Slack: you will be asked to connect \
                     again.",
                    record.provider
                ),
            )
            .into(),
            None if self.clock.now_unix() >= record.expires_at => refused_page(&StateRefused::Expired),
            None if record.burned_by.is_some() => refused_page(&StateRefused::Replayed),
            None if record.taken => finishing(state, &record),
            None => refused_page(&StateRefused::Unknown),
        }
    }
}

/// "Finishing": reloads itself until the worker's outcome is there.
fn finishing(state: &str, record: &ConnectState) -> Answer {
    let mut page = Page::new(
        202,
        "Finishing your sign-in",
        format!("Your sign-in to {} came back; the bot is finishing it. This page updates itself.", record.provider),
    );
    let query: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("state", state)
        .append_pair("check", "1")
        .finish();
    page.reload = Some(format!("?{query}"));
    page.into()
}

fn refused_page(refused: &StateRefused) -> Answer {
    warn!(reason = %refused, "a sign-in request refused: nothing changed");
    let again = "Ask again in Slack to get a new one.";
    match refused {
        StateRefused::Unknown => Page::new(400, "Sign-in not completed", "This sign-in link is not one this bot made."),
        StateRefused::Replayed => Page::new(
            409,
            "Sign-in not completed",
            format!("This sign-in link was already used, or it was meant for someone else. {again}"),
        ),
        StateRefused::Expired => Page::new(
            410,
            "Sign-in not completed",
            format!("This sign-in link expired (they last 10 minutes). {again}"),
        ),
        StateRefused::OtherBrowser => return other_browser(),
        StateRefused::OpenedBeforeClick => Page::new(
            403,
            "Sign-in not started",
            "This browser had the link before the Connect button was clicked: only the browser the click opens can \
             use it. Nothing changed. If you are the person who asked, click Connect in Slack.",
        ),
        StateRefused::NotArmed => Page::new(
            403,
            "Sign-in not started",
            "This link works only when the person who asked opens it with the Connect button in Slack, within a \
             minute of clicking it. Nothing changed. If that is you, go back to Slack and click Connect.",
        ),
        StateRefused::MixUp(_) => Page::new(
            400,
            "Sign-in not completed",
            "This sign-in came back from a different provider than the one it was started with, so nothing was \
             sent anywhere and nothing changed. If you did not expect this, tell your Slack admins.",
        ),
        StateRefused::Outdated => {
            Page::new(410, "Sign-in not completed", format!("This sign-in link is from an older version. {again}"))
        }
        StateRefused::Store(_) => Page::new(
            503,
            "Sign-in not completed",
            "Your sign-in could not be checked just now. Reload this page in a moment.",
        ),
    }
    .into()
}

#[cfg(test)]
mod tests;
