//! How a declared tool's calls prove who is calling, beyond the headers the
//! configuration gives: `"auth": "aws_iam"` signs each request with SigV4
//! as the worker's role (API Gateway with IAM auth, Lambda function URLs,
//! Amazon Bedrock AgentCore Gateway), with the process's one signer.
//!
//! ```json
//! "auth": "aws_iam"
//! "auth": {"aws_iam": {"service": "execute-api", "region": "eu-west-1"}}
//! ```
//!
//! The short form reads the service and region from AWS's host names
//! (`{api}.execute-api.{region}.amazonaws.com`,
//! `{id}.lambda-url.{region}.on.aws`, `bedrock-agentcore.{region}.amazonaws.com`
//! and `{gateway}.gateway.bedrock-agentcore.{region}.amazonaws.com`); any
//! other host needs the long form. A signed tool may not also send an
//! `Authorization` header of its own: the signature is that header.
//!
//! `"auth": {"oauth": {...}}` makes an HTTP tool act as the person who
//! asked, with their own token from a provider they connect once (OAuth
//! 2.1, authorization code with PKCE; see [`crate::sign_in`]):
//!
//! ```json
//! "auth": {"oauth": {
//!   "provider": "tracker",
//!   "authorization_endpoint": "https://id.example.com/authorize",
//!   "token_endpoint": "https://id.example.com/token",
//!   "revocation_endpoint": "https://id.example.com/revoke",
//!   "client_id": "slack-assistant",
//!   "client_secret": "${secret:TRACKER_OAUTH_CLIENT_SECRET}",
//!   "scopes": ["openid", "offline_access", "tickets:write"],
//!   "issuer": "https://id.example.com"
//! }}
//! ```
//!
//! Each provider has its own redirect URI, `{OAUTH_REDIRECT_URI}/{provider}`
//! (register that one at the provider).
//!
//! Tools naming the same `provider` share the person's connection and must
//! describe it alike. Endpoints are `https` (or `http` on loopback, for
//! tests and local providers); the secret is a `${secret:…}` or
//! `${env:…}` reference, never a literal.

use assistant_core::ports::AwsScope;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolAuth {
    /// SigV4 as the worker's role; the scope is read from the URL when
    /// `None`.
    AwsIam(Option<AwsScope>),
    /// The asking person's own token from a provider they sign in to.
    OAuth(OAuthConfig),
}

/// A sign-in provider as configured.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthConfig {
    /// What people see ("Connect tracker") and what their connection is
    /// kept under: `[a-zA-Z0-9_-]`, 1 to 32 characters.
    pub provider: String,
    /// Required for an HTTP tool; an MCP server's are discovered from its
    /// metadata when left out.
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    #[serde(default)]
    pub token_endpoint: Option<String>,
    #[serde(default)]
    pub revocation_endpoint: Option<String>,
    /// Required for an HTTP tool; an MCP server whose authorization server
    /// registers clients gets one registered (once, kept in the table).
    #[serde(default)]
    pub client_id: Option<String>,
    /// `${secret:NAME}` or `${env:NAME}`; absent for a public client.
    #[serde(default)]
    pub client_secret: Option<String>,
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The authorization server's issuer identifier (RFC 9207): a sign-in
    /// that comes back naming another issuer is refused. An MCP server's
    /// is discovered.
    #[serde(default)]
    pub issuer: Option<String>,
}

impl<'de> Deserialize<'de> for ToolAuth {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        if value == "aws_iam" {
            return Ok(ToolAuth::AwsIam(None));
        }
        if let Value::Object(map) = &value
            && map.len() == 1
            && let Some(scope) = map.get("aws_iam")
        {
            let scope = AwsScope::deserialize(scope).map_err(serde::de::Error::custom)?;
            if scope.service.is_empty() || !scope.service.chars().all(|c| c.is_ascii_lowercase() || c == '-') {
                return Err(serde::de::Error::custom(format!(
                    "auth.aws_iam.service {:?} is not a signing name",
                    scope.service
                )));
            }
            return Ok(ToolAuth::AwsIam(Some(scope)));
        }
        if let Value::Object(map) = &value
            && map.len() == 1
            && let Some(oauth) = map.get("oauth")
        {
            return OAuthConfig::deserialize(oauth).map(ToolAuth::OAuth).map_err(serde::de::Error::custom);
        }
        Err(serde::de::Error::custom(
            r#"auth must be "aws_iam", {"aws_iam": {"service": …, "region": …}} or {"oauth": {…}}"#,
        ))
    }
}

/// Why a tool's requests cannot be signed: what to configure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    #[error("only aws_iam signs requests")]
    NotAwsIam,
    #[error(
        r#"cannot tell which AWS service {host} is: write "auth": {{"aws_iam": {{"service": "…", "region": "…"}}}}"#
    )]
    UnknownService { host: String },
}

impl ToolAuth {
    /// The scope to sign for `url`; an error says what to configure.
    pub fn scope_for(&self, url: &url::Url) -> Result<AwsScope, ScopeError> {
        let ToolAuth::AwsIam(scope) = self else { return Err(ScopeError::NotAwsIam) };
        if let Some(scope) = scope {
            return Ok(scope.clone());
        }
        let host = url.host_str().unwrap_or_default();
        let labels: Vec<&str> = host.split('.').collect();
        let found = |service: &str, region: &str| AwsScope { service: service.into(), region: Some(region.into()) };
        match labels[..] {
            [_, "execute-api", region, "amazonaws", "com"] => Ok(found("execute-api", region)),
            [_, "lambda-url", region, "on", "aws"] => Ok(found("lambda", region)),
            ["bedrock-agentcore", region, "amazonaws", "com"] => Ok(found("bedrock-agentcore", region)),
            [_, "gateway", "bedrock-agentcore", region, "amazonaws", "com"] => Ok(found("bedrock-agentcore", region)),
            _ => Err(ScopeError::UnknownService { host: host.to_owned() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(auth: &str, url: &str) -> Result<AwsScope, String> {
        let auth: ToolAuth = serde_json::from_str(auth).map_err(|err| err.to_string())?;
        auth.scope_for(&url::Url::parse(url).unwrap()).map_err(|err| err.to_string())
    }

    #[test]
    fn the_short_form_reads_aws_host_names_and_the_long_form_says_it_all() {
        let s = |service: &str, region: &str| Ok(AwsScope { service: service.into(), region: Some(region.into()) });
        assert_eq!(
            scope(r#""aws_iam""#, "https://a1b2c3.execute-api.eu-west-1.amazonaws.com/prod/x"),
            s("execute-api", "eu-west-1")
        );
        assert_eq!(scope(r#""aws_iam""#, "https://abcdef.lambda-url.us-east-2.on.aws/"), s("lambda", "us-east-2"));
        assert_eq!(
            scope(r#""aws_iam""#, "https://gw-1.gateway.bedrock-agentcore.us-west-2.amazonaws.com/mcp"),
            s("bedrock-agentcore", "us-west-2")
        );
        assert!(
            scope(r#""aws_iam""#, "https://api.example.com/x").unwrap_err().contains("cannot tell which AWS service")
        );
        assert_eq!(
            scope(r#"{"aws_iam": {"service": "execute-api", "region": "eu-west-1"}}"#, "https://api.example.com/x"),
            s("execute-api", "eu-west-1")
        );
        for bad in [
            r#""oauth2""#,
            r#"{"aws_iam": {"service": "Execute API"}}"#,
            r#"{"aws_iam": {"region": "x"}}"#,
            r#"{"aws_iam": {}, "x": 1}"#,
        ] {
            assert!(scope(bad, "https://h/").is_err(), "{bad}");
        }
    }
}
