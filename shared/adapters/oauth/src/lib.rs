//! An OAuth 2.1 client for tools that act as the person who asked: the
//! authorization URL of a code flow with PKCE (S256), the code exchange,
//! refresh and revocation (RFC 6749, 7636, 7009), on the process's HTTP
//! client (which never follows redirects).
//!
//! A token response is read for what the bot keeps and nothing else:
//! `access_token`, `refresh_token`, `expires_in`, `scope`, and the `sub`
//! of an ID token received directly from the token endpoint over TLS (OIDC
//! Core 3.1.3.7), for the audit trail. Anything else in it (other tokens,
//! secrets a provider adds) is dropped unread. Errors name the provider's
//! `error` code, never a token or the response body.

mod discovery;

use assistant_core::oauth::{AuthorizationServer, OAuthTokens, Tokens};
pub use assistant_core::oauth::{OAuthError, OAuthProvider};
use async_trait::async_trait;
use serde::Deserialize;
use std::time::Duration;
use url::Url;

/// The most of a token endpoint's answer that is read.
const MAX_ANSWER_BYTES: usize = 64 * 1024;
const TIMEOUT: Duration = Duration::from_secs(10);

/// What is read of a token response.
#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<i64>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    id_token: Option<String>,
}

#[derive(Deserialize)]
struct ErrorAnswer {
    error: String,
}

#[derive(Deserialize)]
struct IdClaims {
    sub: String,
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    preferred_username: Option<String>,
}

/// Who an ID token says signed in: its `sub`, and the account as people
/// know it (`email`, else `preferred_username`, else the `sub`). Read
/// without checking the signature: it came straight from the token
/// endpoint over TLS, which OIDC allows.
fn identity_of(id_token: &str) -> Option<(String, String)> {
    use base64::Engine;
    let payload = id_token.split('.').nth(1)?;
    let json = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let claims: IdClaims = serde_json::from_slice(&json).ok()?;
    let shown = |value: &String| !value.is_empty() && value.len() <= 255 && !value.chars().any(char::is_control);
    if !shown(&claims.sub) {
        return None;
    }
    let account = claims.email.filter(shown).or(claims.preferred_username.filter(shown)).unwrap_or(claims.sub.clone());
    Some((claims.sub, account))
}

pub struct OAuthClient {
    http: reqwest::Client,
}

impl OAuthClient {
    pub fn new(http: reqwest::Client) -> Self {
        Self { http }
    }

    async fn token_request(
        &self,
        provider: &OAuthProvider,
        form: &[(&str, &str)],
        now_unix: i64,
    ) -> Result<Tokens, OAuthError> {
        let mut form = form.to_vec();
        if let Some(resource) = &provider.resource {
            form.push(("resource", resource.as_str()));
        }
        let response = self.post(provider, &provider.token_endpoint, &form).await?;
        let status = response.status();
        if !status.is_success() {
            return Err(error_of(status, response).await);
        }
        let body = read_capped(response).await?;
        let answer: TokenAnswer =
            serde_json::from_slice(&body).map_err(|_| OAuthError::Malformed("not a token response".into()))?;
        if answer.token_type.as_deref().is_some_and(|kind| !kind.eq_ignore_ascii_case("bearer")) {
            return Err(OAuthError::Malformed("the token is not a bearer token".into()));
        }
        if answer.access_token.is_empty() {
            return Err(OAuthError::Malformed("an empty access token".into()));
        }
        let (subject, account) = answer.id_token.as_deref().and_then(identity_of).unzip();
        Ok(Tokens {
            subject,
            account,
            access_token: answer.access_token,
            refresh_token: answer.refresh_token.filter(|token| !token.is_empty()),
            expires_at: answer.expires_in.filter(|secs| *secs > 0).map(|secs| now_unix + secs),
            scope: answer.scope,
        })
    }

    async fn post(
        &self,
        provider: &OAuthProvider,
        endpoint: &Url,
        form: &[(&str, &str)],
    ) -> Result<reqwest::Response, OAuthError> {
        let mut request = self.http.post(endpoint.clone()).timeout(TIMEOUT).header("accept", "application/json");
        let mut form: Vec<(&str, &str)> = form.to_vec();
        match &provider.client_secret {
            // client_secret_basic: the id and secret form-encoded, then Basic (RFC 6749 2.3.1).
            Some(secret) => {
                let encode = |text: &str| url::form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
                request = request.basic_auth(encode(&provider.client_id), Some(encode(secret)));
            }
            None => form.push(("client_id", &provider.client_id)),
        }
        let body = serde_urlencoded::to_string(&form).map_err(|err| OAuthError::Malformed(err.to_string()))?;
        request
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .map_err(|err| OAuthError::Unavailable(without_url(&err)))
    }
}

#[async_trait]
impl OAuthTokens for OAuthClient {
    async fn discover(&self, resource: &Url) -> Result<AuthorizationServer, OAuthError> {
        discovery::discover(&self.http, resource).await
    }

    async fn register(&self, server: &AuthorizationServer, redirect_uri: &Url) -> Result<String, OAuthError> {
        discovery::register(&self.http, server, redirect_uri).await
    }

    /// The code the callback got, for the person's tokens.
    async fn exchange(
        &self,
        provider: &OAuthProvider,
        code: &str,
        verifier: &str,
        now_unix: i64,
    ) -> Result<Tokens, OAuthError> {
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", provider.redirect_uri.as_str()),
            ("code_verifier", verifier),
        ];
        self.token_request(provider, &form, now_unix).await
    }

    /// New tokens for a refresh token. A provider that rotates refresh
    /// tokens returns a new one; one that does not, keeps the old.
    async fn refresh(
        &self,
        provider: &OAuthProvider,
        refresh_token: &str,
        now_unix: i64,
    ) -> Result<Tokens, OAuthError> {
        let form = [("grant_type", "refresh_token"), ("refresh_token", refresh_token)];
        let mut tokens = self.token_request(provider, &form, now_unix).await?;
        if tokens.refresh_token.is_none() {
            tokens.refresh_token = Some(refresh_token.to_owned());
        }
        Ok(tokens)
    }

    /// Revokes a token at the provider (RFC 7009), where it offers that;
    /// `Ok(false)` where it does not.
    async fn revoke(&self, provider: &OAuthProvider, token: &str, hint: &str) -> Result<bool, OAuthError> {
        let Some(endpoint) = &provider.revocation_endpoint else { return Ok(false) };
        let form = [("token", token), ("token_type_hint", hint)];
        let response = self.post(provider, endpoint, &form).await?;
        let status = response.status();
        if status.is_success() {
            return Ok(true);
        }
        Err(error_of(status, response).await)
    }
}

/// A transport error's words without its URL (which may carry a query).
fn without_url(err: &reqwest::Error) -> String {
    let kind = if err.is_timeout() {
        "timed out"
    } else if err.is_connect() {
        "not reached"
    } else {
        "failed"
    };
    format!("the request {kind}")
}

async fn read_capped(mut response: reqwest::Response) -> Result<Vec<u8>, OAuthError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|err| OAuthError::Unavailable(without_url(&err)))? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(OAuthError::Malformed(format!("an answer over {MAX_ANSWER_BYTES} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

async fn error_of(status: reqwest::StatusCode, response: reqwest::Response) -> OAuthError {
    if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS {
        return OAuthError::Unavailable(format!("HTTP {}", status.as_u16()));
    }
    let error = read_capped(response)
        .await
        .ok()
        .and_then(|body| serde_json::from_slice::<ErrorAnswer>(&body).ok())
        .map(|answer| answer.error)
        // Only a short code: a hostile provider's text stays out of logs.
        .filter(|code| code.len() <= 64 && code.bytes().all(|b| b.is_ascii_graphic()))
        .unwrap_or_else(|| format!("HTTP {}", status.as_u16()));
    OAuthError::Refused { error }
}

#[cfg(test)]
mod tests {
    use super::*;
    use assistant_core::oauth::Pkce;

    fn provider() -> OAuthProvider {
        OAuthProvider {
            name: "github".into(),
            authorization_endpoint: Url::parse("https://idp.example/authorize?tenant=a").unwrap(),
            token_endpoint: Url::parse("https://idp.example/token").unwrap(),
            revocation_endpoint: None,
            client_id: "bot".into(),
            client_secret: Some("s3cret".into()),
            scopes: vec!["openid".into(), "repo".into()],
            redirect_uri: Url::parse("https://bot.example/oauth/callback").unwrap(),
            resource: None,
            issuer: None,
            issuer_sends_iss: false,
        }
    }

    #[test]
    fn the_authorization_url_asks_for_a_code_with_an_s256_challenge_and_keeps_its_own_query() {
        let pkce = Pkce::from_verifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".into());
        let url = provider().authorization_url("the-state", &pkce);
        let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        let get = |name: &str| pairs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
        assert_eq!(get("tenant"), Some("a"));
        assert_eq!(get("response_type"), Some("code"));
        assert_eq!(get("redirect_uri"), Some("https://bot.example/oauth/callback"));
        assert_eq!(get("scope"), Some("openid repo"));
        assert_eq!(get("code_challenge"), Some("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
        assert_eq!(get("code_challenge_method"), Some("S256"));
        assert!(!url.as_str().contains("s3cret") && !url.as_str().contains(&pkce.verifier));
        assert!(!format!("{:?}", provider()).contains("s3cret"));
    }

    #[test]
    fn an_id_tokens_subject_and_account_are_read_and_anything_else_is_not_an_identity() {
        let token = |payload: &str| {
            use base64::Engine;
            format!("e30.{}.sig", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload))
        };
        let identity = |payload: &str| identity_of(&token(payload));
        assert_eq!(identity(r#"{"sub":"alice","email":"a@x"}"#), Some(("alice".into(), "a@x".into())));
        assert_eq!(identity(r#"{"sub":"u1","preferred_username":"bob"}"#), Some(("u1".into(), "bob".into())));
        assert_eq!(identity(r#"{"sub":"u1","email":"a\nb"}"#), Some(("u1".into(), "u1".into())), "no control");
        assert_eq!(identity(r#"{"sub":"carol"}"#), Some(("carol".into(), "carol".into())));
        for bad in [token(r#"{"email":"a@x"}"#), token(r#"{"sub":""}"#), "not-a-jwt".into(), token("[]")] {
            assert_eq!(identity_of(&bad), None, "{bad}");
        }
    }
}
