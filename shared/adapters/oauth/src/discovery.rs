//! Finding a protected resource's authorization server, and registering
//! with it, as the MCP authorization spec asks:
//! 1. The resource's metadata (RFC 9728): the `resource_metadata` URL its
//!    401 names in `WWW-Authenticate`, else the well-known URL beside it.
//! 2. The authorization server's metadata (RFC 8414, else OpenID Connect
//!    Discovery): its endpoints, PKCE with S256 (required), and whether it
//!    registers clients.
//! 3. Dynamic client registration (RFC 7591), as a public client: PKCE and
//!    no secret, so there is nothing to keep but the client id.
//!
//! Every URL read from an answer must be `https`, name no loopback,
//! private or link-local address (both allowed only when the resource
//! itself is on loopback: the tests and the local runner), carry no
//! credentials, and the server's `issuer` must be the one the resource
//! named: a hostile resource cannot send the person's browser, or the
//! bot's requests, somewhere else unnoticed.

use super::{TIMEOUT, read_capped, without_url};
use assistant_core::oauth::{AuthorizationServer, OAuthError, discovered_endpoint_refusal};
use serde::Deserialize;
use url::Url;

/// An `initialize` without credentials: a server that needs a sign-in
/// answers 401 naming its metadata.
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"slack-assistant","version":"1"}}}"#;

#[derive(Deserialize)]
struct ResourceMetadata {
    #[serde(default)]
    resource: Option<String>,
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    scopes_supported: Vec<String>,
}

#[derive(Deserialize)]
struct ServerMetadata {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    #[serde(default)]
    revocation_endpoint: Option<String>,
    #[serde(default)]
    registration_endpoint: Option<String>,
    #[serde(default)]
    code_challenge_methods_supported: Vec<String>,
    #[serde(default)]
    authorization_response_iss_parameter_supported: bool,
}

#[derive(Deserialize)]
struct Registered {
    client_id: String,
}

fn malformed(what: impl Into<String>) -> OAuthError {
    OAuthError::Malformed(what.into())
}

/// A URL from an answer about `resource`, if the bot may use it.
fn checked(value: &str, resource: &Url) -> Result<Url, OAuthError> {
    let url = Url::parse(value).map_err(|_| malformed(format!("{value:?} is not a URL")))?;
    match discovered_endpoint_refusal(&url, resource) {
        Some(reason) => Err(malformed(format!("{value:?}: {reason}"))),
        None => Ok(url),
    }
}

/// RFC 8414 / 9728's well-known URL for `url`: the name inserted between
/// the host and the path.
fn well_known(url: &Url, name: &str) -> Url {
    let mut found = url.clone();
    let path = url.path().trim_end_matches('/');
    found.set_path(&format!("/.well-known/{name}{path}"));
    found.set_query(None);
    found
}

/// OpenID Connect Discovery's URL: appended to the issuer's path.
fn openid_configuration(issuer: &Url) -> Url {
    let mut found = issuer.clone();
    let path = issuer.path().trim_end_matches('/');
    found.set_path(&format!("{path}/.well-known/openid-configuration"));
    found
}

fn same(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

pub(crate) async fn discover(http: &reqwest::Client, resource: &Url) -> Result<AuthorizationServer, OAuthError> {
    let checked = |value: &str| checked(value, resource);
    let metadata_url = match challenge(http, resource).await? {
        Some(url) => url,
        None => well_known(resource, "oauth-protected-resource"),
    };
    let metadata: ResourceMetadata = get_json(http, &metadata_url).await?;
    if let Some(named) = &metadata.resource
        && !same(named, resource.as_str())
    {
        return Err(malformed(format!("the resource metadata is for {named:?}, not {resource}")));
    }
    let issuer = checked(
        metadata
            .authorization_servers
            .first()
            .ok_or_else(|| malformed("the resource names no authorization server"))?,
    )?;
    let server: ServerMetadata = match get_json(http, &well_known(&issuer, "oauth-authorization-server")).await {
        Ok(server) => server,
        Err(_) => get_json(http, &openid_configuration(&issuer)).await?,
    };
    if !same(&server.issuer, issuer.as_str()) {
        return Err(malformed(format!("the server says it is {:?}, not {issuer}", server.issuer)));
    }
    if !server.code_challenge_methods_supported.iter().any(|method| method == "S256") {
        return Err(malformed("the server does not say it supports PKCE with S256"));
    }
    let optional = |value: &Option<String>| value.as_deref().map(checked).transpose();
    Ok(AuthorizationServer {
        authorization_endpoint: checked(&server.authorization_endpoint)?,
        token_endpoint: checked(&server.token_endpoint)?,
        revocation_endpoint: optional(&server.revocation_endpoint)?,
        registration_endpoint: optional(&server.registration_endpoint)?,
        issuer,
        resource: resource.clone(),
        scopes: metadata.scopes_supported,
        sends_iss: server.authorization_response_iss_parameter_supported,
    })
}

/// The `resource_metadata` a 401 names, if the server answers so.
async fn challenge(http: &reqwest::Client, resource: &Url) -> Result<Option<Url>, OAuthError> {
    let response = http
        .post(resource.clone())
        .timeout(TIMEOUT)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(INITIALIZE)
        .send()
        .await
        .map_err(|err| OAuthError::Unavailable(without_url(&err)))?;
    if response.status() != reqwest::StatusCode::UNAUTHORIZED {
        return Ok(None);
    }
    let named = response
        .headers()
        .get_all("www-authenticate")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find_map(|value| value.split("resource_metadata=\"").nth(1)?.split('"').next().map(str::to_owned));
    named.as_deref().map(|value| checked(value, resource)).transpose()
}

async fn get_json<T: for<'de> Deserialize<'de>>(http: &reqwest::Client, url: &Url) -> Result<T, OAuthError> {
    let response = http
        .get(url.clone())
        .timeout(TIMEOUT)
        .header("accept", "application/json")
        .send()
        .await
        .map_err(|err| OAuthError::Unavailable(without_url(&err)))?;
    let status = response.status();
    if status.is_server_error() {
        return Err(OAuthError::Unavailable(format!("HTTP {} from {}", status.as_u16(), url.path())));
    }
    if !status.is_success() {
        return Err(malformed(format!("HTTP {} from {}", status.as_u16(), url.path())));
    }
    let body = read_capped(response).await?;
    serde_json::from_slice(&body).map_err(|_| malformed(format!("{} is not the metadata expected", url.path())))
}

pub(crate) async fn register(
    http: &reqwest::Client,
    server: &AuthorizationServer,
    redirect_uri: &Url,
) -> Result<String, OAuthError> {
    let Some(endpoint) = &server.registration_endpoint else {
        return Err(malformed(format!("{} registers no clients: configure auth.oauth.client_id", server.issuer)));
    };
    let mut request = serde_json::json!({
        "client_name": "Slack assistant",
        "redirect_uris": [redirect_uri.as_str()],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    if !server.scopes.is_empty() {
        request["scope"] = server.scopes.join(" ").into();
    }
    let response = http
        .post(endpoint.clone())
        .timeout(TIMEOUT)
        .header("accept", "application/json")
        .json(&request)
        .send()
        .await
        .map_err(|err| OAuthError::Unavailable(without_url(&err)))?;
    let status = response.status();
    if !status.is_success() {
        return Err(super::error_of(status, response).await);
    }
    let body = read_capped(response).await?;
    let registered: Registered =
        serde_json::from_slice(&body).map_err(|_| malformed("not a client registration response"))?;
    if registered.client_id.is_empty() || registered.client_id.len() > 255 {
        return Err(malformed("an unusable client id"));
    }
    Ok(registered.client_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_urls_go_between_host_and_path_and_openid_after_the_issuer() {
        let server = Url::parse("https://mcp.example.com/v1/mcp?x=1").unwrap();
        assert_eq!(
            well_known(&server, "oauth-protected-resource").as_str(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/v1/mcp"
        );
        let issuer = Url::parse("https://id.example.com/tenant/").unwrap();
        assert_eq!(
            well_known(&issuer, "oauth-authorization-server").as_str(),
            "https://id.example.com/.well-known/oauth-authorization-server/tenant"
        );
        assert_eq!(
            openid_configuration(&issuer).as_str(),
            "https://id.example.com/tenant/.well-known/openid-configuration"
        );
    }

    #[test]
    fn urls_from_answers_must_be_https_public_and_without_credentials() {
        let remote = Url::parse("https://mcp.example.com/mcp").unwrap();
        assert!(checked("https://id.example.com/a", &remote).is_ok());
        for bad in [
            "http://id.example.com/a",
            "https://u:p@id.example.com/",
            "https://id.example.com/#x",
            "javascript:x",
            // A remote server's metadata naming the worker's own machine or network.
            "http://127.0.0.1:9/a",
            "http://localhost:9/a",
            "https://127.0.0.1/token",
            "https://localhost/token",
            "https://[::1]/token",
            "https://169.254.169.254/latest/meta-data",
            "https://10.0.0.8/token",
            "https://192.168.1.1/token",
            "https://[::ffff:127.0.0.1]/token",
        ] {
            assert!(checked(bad, &remote).is_err(), "{bad}");
        }
        // A server on loopback (the tests, the local runner) may name loopback.
        let local = Url::parse("http://127.0.0.1:8080/mcp").unwrap();
        assert!(checked("http://127.0.0.1:9/a", &local).is_ok());
        assert!(checked("http://id.example.com/a", &local).is_err(), "plain http elsewhere, never");
    }
}
