//! A small MCP server written with the official SDK's server side, for what
//! the reference server cannot show: a session that expires, a token
//! revoked mid-session (401), a tool that reports `isError`, a tool that
//! waits until it is cancelled, resources that hold a secret, are huge,
//! larger than any answer we take, or fail ([`RESOURCE_SECRET`] …), and a
//! tool (`evolve`) after which the server offers other tools and says so
//! (`notifications/tools/list_changed`): `upper` gone, `drop_table` (not
//! read-only) new. Served over Streamable HTTP on a loopback
//! port for as long as the test holds it.

use crate::local_server::LocalServer;
use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ResourceContents,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, ServerHandler};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// The token the server accepts (`Authorization: Bearer …`).
pub const TOKEN: &str = "test-mcp-token";

/// A resource whose text holds an AWS access key id.
pub const RESOURCE_SECRET: &str = "memo://secret";
/// A resource of [`HUGE_RESOURCE_BYTES`] of log lines.
pub const RESOURCE_HUGE: &str = "memo://huge";
pub const HUGE_RESOURCE_BYTES: usize = 1_500_000;
/// A resource larger than the adapter takes in one answer (8 MB).
pub const RESOURCE_ENORMOUS: &str = "memo://enormous";
/// A resource whose read fails on the server.
pub const RESOURCE_BROKEN: &str = "memo://broken";
/// The access key id in [`RESOURCE_SECRET`] (a made-up one).
pub fn resource_key() -> String {
    format!("AKIA{}", "Z3X5C7V9B2N4M6L8")
}

/// What the server saw, and switches the test flips.
#[derive(Default)]
pub struct Seen {
    /// `initialize` requests: one per session.
    pub sessions: AtomicUsize,
    pub calls: AtomicUsize,
    /// The slow tool was cancelled by the client.
    pub cancelled: AtomicBool,
    /// Every request is refused with 401 from now on.
    pub revoked: AtomicBool,
    /// Behind AWS IAM (`start_signed`): requests whose SigV4 signature the
    /// server recomputed and accepted, and those it refused.
    pub signed: AtomicUsize,
    pub refused_signatures: std::sync::Mutex<Vec<String>>,
    /// Behind a person's sign-in (`start_as_person`): whom each accepted
    /// request's token named, as the provider said.
    pub people: std::sync::Mutex<Vec<String>>,
    /// Every URI a client asked to read.
    pub resource_reads: std::sync::Mutex<Vec<String>>,
    /// `evolve` ran: the tools changed.
    pub evolved: AtomicBool,
    /// The tools each call named, in order.
    pub called: std::sync::Mutex<Vec<String>>,
}

#[derive(Clone)]
struct Handler {
    seen: Arc<Seen>,
}

fn tool(name: &'static str, description: &'static str) -> Tool {
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    Tool::new(name, description, Arc::new(schema.as_object().unwrap().clone()))
        .annotate(ToolAnnotations::new().read_only(true))
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder().enable_tools().enable_tool_list_changed().enable_resources().build(),
        )
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.seen.resource_reads.lock().unwrap().push(request.uri.clone());
        let uri = request.uri.as_str();
        let text = match uri {
            RESOURCE_SECRET => format!("[default]\naws_access_key_id = {}\nregion = eu-west-1\n", resource_key()),
            RESOURCE_HUGE => log_lines(HUGE_RESOURCE_BYTES),
            RESOURCE_ENORMOUS => log_lines(8 << 20),
            RESOURCE_BROKEN => return Err(ErrorData::internal_error("the memo store is down for maintenance", None)),
            _ => return Err(ErrorData::resource_not_found(format!("no resource {uri}"), None)),
        };
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, uri)]).into())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = vec![
            tool("upper", "Upper-cases text."),
            tool("fails", "Always reports an error."),
            tool("slow", "Waits a minute unless cancelled."),
            tool("evolve", "Changes the server's tools."),
        ];
        if self.seen.evolved.load(Ordering::SeqCst) {
            tools.retain(|tool| tool.name != "upper");
            let schema = json!({"type": "object", "properties": {"table": {"type": "string"}}});
            tools.push(
                Tool::new("drop_table", "Drops a table.", Arc::new(schema.as_object().unwrap().clone()))
                    .annotate(ToolAnnotations::new().read_only(false)),
            );
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.seen.calls.fetch_add(1, Ordering::SeqCst);
        self.seen.called.lock().unwrap().push(request.name.to_string());
        let text = request.arguments.as_ref().and_then(|a| a.get("text")).and_then(|t| t.as_str()).unwrap_or("");
        let result = match request.name.as_ref() {
            "upper" => CallToolResult::success(vec![ContentBlock::text(text.to_uppercase())]),
            "fails" => CallToolResult::error(vec![ContentBlock::text("disk quota exceeded on /var/data")]),
            "evolve" => {
                self.seen.evolved.store(true, Ordering::SeqCst);
                context
                    .peer
                    .notify_tool_list_changed()
                    .await
                    .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
                CallToolResult::success(vec![ContentBlock::text("the tools changed")])
            }
            "drop_table" => CallToolResult::success(vec![ContentBlock::text("dropped")]),
            "slow" => {
                tokio::select! {
                    () = context.ct.cancelled() => {
                        self.seen.cancelled.store(true, Ordering::SeqCst);
                        return Err(ErrorData::internal_error("cancelled", None));
                    }
                    () = tokio::time::sleep(Duration::from_secs(60)) => CallToolResult::success(vec![ContentBlock::text("late")]),
                }
            }
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(result.into())
    }
}

/// About `bytes` of numbered log lines.
fn log_lines(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 100);
    let mut n = 0;
    while text.len() < bytes {
        text.push_str(&format!("2026-11-28T01:00:00Z INFO checkout-api request {n} served in 12 ms\n"));
        n += 1;
    }
    text
}

pub struct McpTestServer {
    /// `http://127.0.0.1:PORT/mcp`
    pub url: String,
    pub seen: Arc<Seen>,
    sessions: Arc<LocalSessionManager>,
    _server: LocalServer,
}

impl McpTestServer {
    pub async fn start() -> Self {
        Self::serve(|router, seen| router.layer(middleware::from_fn_with_state(seen, authorize))).await
    }

    /// The same server with no credentials at all (for a whole pipeline,
    /// whose configuration names no token).
    pub async fn start_open() -> Self {
        Self::serve(|router, _| router).await
    }

    /// The server at `/mcp`, behind what `guard` layers on it.
    async fn serve(guard: impl FnOnce(Router, Arc<Seen>) -> Router) -> Self {
        let seen = Arc::new(Seen::default());
        let sessions = Arc::new(LocalSessionManager::default());
        let handler = Handler { seen: seen.clone() };
        let service = StreamableHttpService::new(
            move || Ok(handler.clone()),
            sessions.clone(),
            StreamableHttpServerConfig::default().with_sse_keep_alive(None),
        );
        let app = guard(Router::new().nest_service("/mcp", service), seen.clone());
        let server = LocalServer::start(app).await;
        Self { url: format!("{}/mcp", server.base_url), seen, sessions, _server: server }
    }

    /// The same server behind AWS IAM, as AgentCore Gateway or API Gateway
    /// puts one: every request's SigV4 signature (for `execute-api`) is
    /// recomputed with `secret_key`; a mismatch is a 403.
    pub async fn start_signed(secret_key: &'static str) -> Self {
        Self::serve(|router, seen| router.layer(middleware::from_fn_with_state((seen, secret_key), verify_signature)))
            .await
    }

    /// The same server accepting only tokens `issuer` (an OpenID provider)
    /// issued, as GitHub's or Atlassian's hosted servers accept only their
    /// users' tokens: each token is checked at the provider's UserInfo
    /// endpoint; without one, a 401 names the server's protected-resource
    /// metadata (RFC 9728), which names `issuer`, as the MCP authorization
    /// spec asks.
    pub async fn start_as_person(issuer: &str, client: (&'static str, &'static str)) -> Self {
        let issuer = issuer.to_owned();
        Self::serve(move |router, seen| {
            let metadata = {
                let issuer = issuer.clone();
                move |headers: axum::http::HeaderMap| async move {
                    let host = headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or_default().to_owned();
                    axum::Json(json!({
                        "resource": format!("http://{host}/mcp"),
                        "authorization_servers": [issuer],
                        "scopes_supported": ["openid", "offline_access"],
                    }))
                }
            };
            router
                .layer(middleware::from_fn_with_state((seen, issuer, client), person_only))
                .route("/.well-known/oauth-protected-resource/mcp", axum::routing::get(metadata))
        })
        .await
    }

    /// Forgets every session, as a server does after a restart or an idle
    /// timeout: the next request with an old session id gets 404.
    pub async fn expire_sessions(&self) {
        self.sessions.sessions.write().await.clear();
    }
}

/// 401 without the token, or after it was revoked; counts sessions.
async fn authorize(State(seen): State<Arc<Seen>>, request: Request, next: Next) -> Response {
    let authorized =
        request.headers().get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {TOKEN}"));
    if !authorized || seen.revoked.load(Ordering::SeqCst) {
        return (axum::http::StatusCode::UNAUTHORIZED, "unauthorized").into_response();
    }
    if request.method() == axum::http::Method::POST && request.headers().get("mcp-session-id").is_none() {
        seen.sessions.fetch_add(1, Ordering::SeqCst);
    }
    next.run(request).await
}

/// 401 (naming the resource metadata) unless the bearer token is active
/// at the provider (`issuer`'s introspection, asked by `client`) and was
/// issued for this server; records whom it names.
async fn person_only(
    State((seen, issuer, client)): State<(Arc<Seen>, String, (&'static str, &'static str))>,
    request: Request,
    next: Next,
) -> Response {
    let host = request.headers().get("host").and_then(|h| h.to_str().ok()).unwrap_or_default().to_owned();
    let token = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let person = match token {
        Some(token) => {
            let answer = reqwest::Client::new()
                .post(format!("{issuer}/token/introspection"))
                .basic_auth(client.0, Some(client.1))
                .form(&[("token", token)])
                .send()
                .await;
            let me = match answer {
                Ok(answer) if answer.status().is_success() => answer.json::<serde_json::Value>().await.ok(),
                _ => None,
            };
            let ours = format!("http://{host}/mcp");
            me.filter(|me| me["active"] == true && (me["aud"] == ours.as_str() || me["aud"][0] == ours.as_str()))
                .and_then(|me| me["sub"].as_str().map(str::to_owned))
        }
        None => None,
    };
    let Some(person) = person else {
        let challenge = format!(r#"Bearer resource_metadata="http://{host}/.well-known/oauth-protected-resource/mcp""#);
        return (axum::http::StatusCode::UNAUTHORIZED, [("www-authenticate", challenge)], "sign in").into_response();
    };
    seen.people.lock().unwrap().push(person);
    next.run(request).await
}

/// 403 unless the request is signed for `execute-api` with `secret_key`.
async fn verify_signature(
    State((seen, secret_key)): State<(Arc<Seen>, &'static str)>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 16 << 20).await else {
        return (axum::http::StatusCode::PAYLOAD_TOO_LARGE, "too large").into_response();
    };
    let checked = testkit::sigv4_check::verify_received(&parts, &body, secret_key).and_then(|signed| {
        if signed.service == "execute-api" { Ok(()) } else { Err(format!("signed for {}", signed.service)) }
    });
    if let Err(reason) = checked {
        seen.refused_signatures.lock().unwrap().push(reason);
        return (axum::http::StatusCode::FORBIDDEN, "The request signature we calculated does not match")
            .into_response();
    }
    seen.signed.fetch_add(1, Ordering::SeqCst);
    next.run(Request::from_parts(parts, axum::body::Body::from(body))).await
}
