//! HTTP API tools declared in the assistant configuration (`http_tools`),
//! so a team adds its own APIs without code:
//!
//! ```json
//! {
//!   "name": "service_status",
//!   "description": "Current status of one service in one environment.",
//!   "input_schema": {"type": "object", "properties": {"service": {"type": "string"},
//!                    "env": {"enum": ["prod", "staging"]}}, "required": ["service", "env"]},
//!   "method": "GET",
//!   "url": "https://status.internal.example.com/api/{env}/services/{service}",
//!   "query": {"verbose": "true"},
//!   "headers": {"Authorization": "Bearer ${env:STATUS_API_TOKEN}"},
//!   "max_response_bytes": 65536,
//!   "timeout_secs": 10
//! }
//! ```
//!
//! The model only fills placeholders. Values are percent-encoded as single
//! path segments (or query values); `.`, `..` and empty path values are
//! refused; the URL that results must keep the template's scheme, host and
//! port, and stay under its fixed path prefix: no tool can reach a URL the
//! model chose. Redirects are never followed (the process's HTTP client is
//! built without them), so a secret header never travels to where an API
//! redirects.
//! Header values may name secrets (`${secret:NAME}`, read from Secrets
//! Manager) and environment variables listed in `allowed_env`
//! (`${env:NAME}`), resolved once at start-up. `GET` and `HEAD` tools only read; any other method
//! changes things and waits for a human's approval (`requires_approval`
//! overrides either way; `approvers` says who, instead of the default). For
//! those, the input object is sent as the JSON body, and an approved call
//! carries `Idempotency-Key: {turn_id}:{tool_use_id}`, the same on every
//! attempt. `"auth": "aws_iam"` signs every call with SigV4 as the worker's
//! role (see [`crate::auth`]).

use assistant_core::approval::Approver;
use assistant_core::model::ToolSpec;
use assistant_core::ports::{AwsScope, RequestSigner, UnsignedRequest};
use assistant_core::turn::ToolOutput;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tools_registry::auth::ToolAuth;
use tools_registry::references::{self, Reference};
use tools_registry::{CallContext, Effect, RunTool, Tool, ToolDefinitionError, ToolError, ToolFuture};
use url::Url;

const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 * 1024;
const DEFAULT_TIMEOUT_SECS: u64 = 10;

/// Characters left as they are in a path segment or query value.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// One tool as declared.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpToolConfig {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    #[serde(default = "default_method")]
    pub method: String,
    /// With `{field}` placeholders filled from the input.
    pub url: String,
    #[serde(default)]
    pub query: BTreeMap<String, String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub max_response_bytes: Option<usize>,
    #[serde(default)]
    pub timeout_secs: Option<u64>,
    /// Whether a call waits for a human's Approve. Default: `GET` and
    /// `HEAD` do not, every other method does.
    #[serde(default)]
    pub requires_approval: Option<bool>,
    /// Who may approve this tool's calls; default: the configuration's
    /// `approvals.approvers`.
    #[serde(default)]
    pub approvers: Option<Vec<Approver>>,
    /// `false`: its prompts never offer "Approve for this thread".
    #[serde(default)]
    pub thread_grants: Option<bool>,
    /// `"aws_iam"`: each call signed with SigV4 as the worker's role;
    /// `{"oauth": {...}}`: each call with the asking person's own token.
    #[serde(default)]
    pub auth: Option<ToolAuth>,
}

fn default_method() -> String {
    "GET".to_owned()
}

#[derive(Debug, thiserror::Error)]
pub enum HttpToolError {
    #[error("http tool {name}: {reason}")]
    Invalid { name: String, reason: String },
    #[error("http tool {name}: a header's {reason}")]
    Unresolved { name: String, reason: references::Unresolved },
    #[error(transparent)]
    Definition(#[from] ToolDefinitionError),
}

/// What one declared tool needs at run time.
struct Endpoint {
    method: reqwest::Method,
    url: String,
    /// scheme, host and port every call must keep.
    origin: url::Origin,
    /// The path every call must stay under.
    path_prefix: String,
    query: BTreeMap<String, String>,
    headers: Vec<(reqwest::header::HeaderName, reqwest::header::HeaderValue)>,
    max_response_bytes: usize,
    /// Signs each call as the worker's role (`auth: aws_iam`).
    signing: Option<(Arc<dyn RequestSigner>, AwsScope)>,
}

/// The declared tools, checked and ready; `lookup` resolves `${env:NAME}`
/// and `${secret:NAME}`.
pub fn http_tools(
    configs: &[HttpToolConfig],
    http: reqwest::Client,
    signer: Arc<dyn RequestSigner>,
    lookup: impl Fn(&Reference) -> Option<String>,
) -> Result<Vec<Tool>, HttpToolError> {
    configs.iter().map(|config| http_tool(config, http.clone(), &signer, &lookup)).collect()
}

fn http_tool(
    config: &HttpToolConfig,
    http: reqwest::Client,
    signer: &Arc<dyn RequestSigner>,
    lookup: &impl Fn(&Reference) -> Option<String>,
) -> Result<Tool, HttpToolError> {
    let invalid = |reason: String| HttpToolError::Invalid { name: config.name.clone(), reason };
    let method = reqwest::Method::from_bytes(config.method.to_uppercase().as_bytes())
        .map_err(|_| invalid(format!("{:?} is not an HTTP method", config.method)))?;
    let template = Url::parse(&config.url).map_err(|err| invalid(format!("url {:?}: {err}", config.url)))?;
    if !matches!(template.scheme(), "https" | "http") || template.host_str().is_none_or(|h| h.contains('{')) {
        return Err(invalid("url must be http(s) with a fixed host".into()));
    }
    let mut headers = Vec::new();
    for (name, value) in &config.headers {
        let value = references::resolve(value, lookup)
            .map_err(|reason| HttpToolError::Unresolved { name: config.name.clone(), reason })?;
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid(format!("{name:?} is not a header name")))?;
        let mut value = reqwest::header::HeaderValue::from_str(&value)
            .map_err(|_| invalid(format!("header {name} has an invalid value")))?;
        value.set_sensitive(true);
        headers.push((name, value));
    }
    let reads_only = matches!(method, reqwest::Method::GET | reqwest::Method::HEAD);
    let effect = if config.requires_approval.unwrap_or(!reads_only) { Effect::ChangesThings } else { Effect::ReadOnly };
    if config.approvers.as_ref().is_some_and(Vec::is_empty) {
        return Err(invalid("approvers is empty: nobody could approve its calls".into()));
    }
    let max_secs = tools_registry::MAX_TOOL_TIME.as_secs();
    if config.timeout_secs.is_some_and(|secs| secs == 0 || secs > max_secs) {
        return Err(invalid(format!("timeout_secs must be from 1 to {max_secs}")));
    }
    if config.auth.is_some() && config.headers.keys().any(|name| name.eq_ignore_ascii_case("authorization")) {
        return Err(invalid("a tool with auth may not set its own Authorization header".into()));
    }
    let (signing, acts_as) = match &config.auth {
        Some(ToolAuth::OAuth(oauth)) => (None, Some(oauth.provider.clone())),
        Some(auth) => {
            (Some((signer.clone(), auth.scope_for(&template).map_err(|err| invalid(err.to_string()))?)), None)
        }
        None => (None, None),
    };
    let destructive = method == reqwest::Method::DELETE;
    let endpoint = Arc::new(Endpoint {
        method,
        url: config.url.clone(),
        origin: template.origin(),
        path_prefix: fixed_path_prefix(&template),
        query: config.query.clone(),
        headers,
        max_response_bytes: config.max_response_bytes.unwrap_or(DEFAULT_MAX_RESPONSE_BYTES),
        signing,
    });
    let spec = ToolSpec {
        name: config.name.clone(),
        description: config.description.clone(),
        input_schema: config.input_schema.clone(),
    };
    let timeout = Duration::from_secs(config.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS));
    let tool = Tool::new(spec, effect, timeout, HttpTool { endpoint, http })?;
    let grant_scope = (config.thread_grants != Some(false)).then(|| config.name.clone());
    Ok(tool
        .with_approvers(config.approvers.clone())
        .destructive(destructive)
        .grantable_as(grant_scope)
        .acting_as(acts_as))
}

/// A declared tool, ready to call.
struct HttpTool {
    endpoint: Arc<Endpoint>,
    http: reqwest::Client,
}

impl RunTool for HttpTool {
    fn run(&self, input: Value, context: CallContext) -> ToolFuture<'_> {
        Box::pin(async move { self.endpoint.call(&self.http, &input, &context).await })
    }
}

/// What a declared tool's headers and sign-in name (`${env:NAME}`,
/// `${secret:NAME}`).
pub fn references(config: &HttpToolConfig) -> Vec<Reference> {
    let secret = match &config.auth {
        Some(ToolAuth::OAuth(oauth)) => oauth.client_secret.as_ref(),
        _ => None,
    };
    references::named(config.headers.values().chain(secret))
}

/// Why a template could not be filled from the model's input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum FillError {
    #[error("unclosed placeholder in the template")]
    Unclosed,
    #[error("the input has no {0:?}")]
    Missing(String),
    #[error("{0:?} must be a string, number or boolean")]
    NotScalar(String),
    #[error("{0:?} may not be empty, \".\" or \"..\" in a path; refused")]
    NotASegment(String),
}

impl From<FillError> for ToolError {
    fn from(error: FillError) -> Self {
        error.to_string().into()
    }
}

/// `{field}` placeholders filled from the input, each value encoded. In a
/// path (`segments`), a value that is empty, `.` or `..` is refused: encoded
/// or not, it would change which resource the path names.
fn fill(template: &str, input: &Value, segments: bool) -> Result<String, FillError> {
    let mut filled = String::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let end = rest[start..].find('}').map(|end| start + end).ok_or(FillError::Unclosed)?;
        let field = &rest[start + 1..end];
        let value = match &input[field] {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Null => return Err(FillError::Missing(field.to_owned())),
            _ => return Err(FillError::NotScalar(field.to_owned())),
        };
        let in_path = segments && !rest[..start].contains('?') && !filled.contains('?');
        if in_path && matches!(value.trim(), "" | "." | "..") {
            return Err(FillError::NotASegment(field.to_owned()));
        }
        filled.push_str(&rest[..start]);
        filled.push_str(&utf8_percent_encode(&value, UNRESERVED).to_string());
        rest = &rest[end + 1..];
    }
    filled.push_str(rest);
    Ok(filled)
}

/// The fixed start of a URL template's path: everything before its first
/// placeholder (`/v1/teams/` for `https://h/v1/teams/{team}/members`).
fn fixed_path_prefix(template: &Url) -> String {
    let path = template.path();
    let fixed = path.split("%7B").next().unwrap_or(path);
    fixed.split('{').next().unwrap_or(fixed).to_owned()
}

impl Endpoint {
    async fn call(
        &self,
        http: &reqwest::Client,
        input: &Value,
        context: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        let mut url =
            Url::parse(&fill(&self.url, input, true)?).map_err(|err| format!("the URL does not parse: {err}"))?;
        if url.origin() != self.origin {
            return Err("the input would change the tool's host; refused".into());
        }
        if !url.path().starts_with(&self.path_prefix) {
            return Err("the input would leave the tool's path; refused".into());
        }
        for (name, value) in &self.query {
            let value = fill(value, input, false)?;
            // Values were encoded by `fill`; decode once so the URL encodes once.
            let value = percent_encoding::percent_decode_str(&value).decode_utf8_lossy().into_owned();
            url.query_pairs_mut().append_pair(name, &value);
        }
        let mut request = http.request(self.method.clone(), url);
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        if !matches!(self.method, reqwest::Method::GET | reqwest::Method::HEAD) {
            request = request.json(input);
        }
        if let Some(key) = &context.idempotency_key {
            request = request.header("idempotency-key", key);
        }
        if let Some(token) = &context.access_token {
            let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {}", token.expose()))
                .map_err(|_| "the person's token cannot be sent in a header")?;
            value.set_sensitive(true);
            request = request.header(reqwest::header::AUTHORIZATION, value);
        }
        let mut request = request.build().map_err(|err| format!("the request cannot be built: {err}"))?;
        if let Some((signer, scope)) = &self.signing {
            sign(signer.as_ref(), scope, &mut request).await?;
        }
        let mut response = http.execute(request).await.map_err(|err| format!("the request failed: {err}"))?;
        let status = response.status();
        let is_json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.contains("json"));
        let mut body = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = response.chunk().await.map_err(|err| format!("reading the response failed: {err}"))? {
            let room = self.max_response_bytes - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        let text = String::from_utf8_lossy(&body).into_owned();
        if !status.is_success() {
            return Err(format!("the API answered {status}: {}", text.chars().take(500).collect::<String>()).into());
        }
        if truncated {
            return Ok(ToolOutput::Text(format!("{text}\n[response cut at {} bytes]", self.max_response_bytes)));
        }
        if is_json && let Ok(json) = serde_json::from_str(&text) {
            return Ok(ToolOutput::Json(json));
        }
        Ok(ToolOutput::Text(text))
    }
}

/// Why a request could not be signed.
#[derive(Debug, thiserror::Error)]
enum SignFailed {
    #[error("the request cannot be signed: {0}")]
    Refused(#[source] assistant_core::PortError),
    #[error("{0}")]
    HeaderName(#[from] reqwest::header::InvalidHeaderName),
    #[error("{0}")]
    HeaderValue(#[from] reqwest::header::InvalidHeaderValue),
}

impl From<SignFailed> for ToolError {
    fn from(error: SignFailed) -> Self {
        error.to_string().into()
    }
}

/// Adds the SigV4 headers for `request` as it stands: every header it has
/// and its body are signed.
async fn sign(signer: &dyn RequestSigner, scope: &AwsScope, request: &mut reqwest::Request) -> Result<(), SignFailed> {
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .filter_map(|(name, value)| Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned())))
        .collect();
    let body = request.body().and_then(reqwest::Body::as_bytes).unwrap_or_default();
    let url = request.url().to_string();
    let unsigned = UnsignedRequest { method: request.method().as_str(), url: &url, headers: &headers, body };
    let signature = signer.sign(unsigned, scope).await.map_err(SignFailed::Refused)?;
    for (name, value) in signature {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())?;
        let mut value = reqwest::header::HeaderValue::from_str(&value)?;
        value.set_sensitive(true);
        request.headers_mut().insert(name, value);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
