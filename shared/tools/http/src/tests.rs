//! The declared tools against a real local HTTP server, through the real
//! reqwest client and the tool registry (validation, redaction).

use super::*;
use assistant_core::turn::{ToolStatus, ToolUse};
use axum::Router;
use axum::extract::Request;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use serde_json::json;
use std::sync::Mutex;
use tools_registry::references::Unresolved;
use tools_registry::{Effect, Tool};
use tools_registry::{ToolPolicy, ToolRegistry};

const TOOLS: &str = include_str!("../fixtures/http-tools.json");

/// The requests the fake API saw: (method, path and query, authorization,
/// body, idempotency key).
type Seen = Arc<Mutex<Vec<(String, String, Option<String>, String, Option<String>)>>>;

async fn api() -> (String, Seen) {
    let seen: Seen = Arc::default();
    let record = |seen: Seen| {
        move |request: Request| {
            let seen = seen.clone();
            async move {
                let (parts, body) = request.into_parts();
                let body = axum::body::to_bytes(body, 1 << 20).await.unwrap();
                let header = |name: &str| parts.headers.get(name).map(|v| v.to_str().unwrap().to_owned());
                seen.lock().unwrap().push((
                    parts.method.to_string(),
                    parts.uri.to_string(),
                    header("authorization"),
                    String::from_utf8_lossy(&body).into_owned(),
                    header("idempotency-key"),
                ));
                axum::Json(json!({"status": "degraded", "since": "14:02"}))
            }
        }
    };
    let app = Router::new()
        .route("/api/{env}/services/{service}", get(record(seen.clone())))
        .route("/restart", post(record(seen.clone())))
        .route("/big", get(|| async { "x".repeat(200_000) }))
        .route("/down", get(|| async { (axum::http::StatusCode::SERVICE_UNAVAILABLE, "upstream down") }))
        .route(
            "/moved",
            get({
                let seen = seen.clone();
                move |request: Request| {
                    let seen = seen.clone();
                    async move {
                        seen.lock().unwrap().push(("GET".into(), request.uri().to_string(), None, String::new(), None));
                        axum::response::Redirect::temporary("/steal")
                    }
                }
            }),
        )
        .route("/steal", get(record(seen.clone())));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (port.to_string(), seen)
}

fn configs(port: &str) -> Vec<HttpToolConfig> {
    serde_json::from_str(&TOOLS.replace("PORT", port)).unwrap()
}

fn env(reference: &Reference) -> Option<String> {
    (*reference == Reference::Env("STATUS_API_TOKEN".into())).then(|| "status-token-123".to_owned())
}

/// A client as the worker's (`adapters_slack::http_client()`): it never
/// follows redirects.
fn client() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

async fn registry(port: &str) -> ToolRegistry {
    let tools = http_tools(&configs(port), client(), no_signer(), env).unwrap();
    ToolRegistry::new(tools, ToolPolicy::allow_all()).unwrap()
}

async fn run(registry: &ToolRegistry, name: &str, input: Value) -> (ToolStatus, ToolOutput) {
    let call = ToolUse { id: "t".into(), name: name.into(), input };
    let result = registry.run(&call, &slack::ChannelId::new("C1")).await;
    (result.status, result.output)
}

#[tokio::test]
async fn a_call_fills_the_template_and_sends_the_secret_header() {
    let (port, seen) = api().await;
    let registry = registry(&port).await;
    let (status, output) = run(&registry, "service_status", json!({"service": "checkout-api", "env": "prod"})).await;
    assert_eq!(status, ToolStatus::Success);
    assert_eq!(output, ToolOutput::Json(json!({"status": "degraded", "since": "14:02"})));
    let (method, uri, auth, _, key) = seen.lock().unwrap()[0].clone();
    assert_eq!(method, "GET");
    assert_eq!(uri, "/api/prod/services/checkout-api?caller=checkout-api&verbose=true");
    assert_eq!(auth.as_deref(), Some("Bearer status-token-123"));
    assert_eq!(key, None, "only approved calls carry an idempotency key");
}

#[tokio::test]
async fn model_input_cannot_change_the_path_or_the_host() {
    let (port, seen) = api().await;
    let registry = registry(&port).await;
    for sneaky in ["../../admin", "x/../../admin?all=1#", "@evil.example.com", "a b&c=d"] {
        let (status, _) = run(&registry, "service_status", json!({"service": sneaky, "env": "prod"})).await;
        assert_eq!(status, ToolStatus::Success, "{sneaky}");
    }
    for (_, uri, _, _, _) in seen.lock().unwrap().iter() {
        assert!(uri.starts_with("/api/prod/services/"), "{uri}");
        let segment = uri.trim_start_matches("/api/prod/services/").split('?').next().unwrap();
        assert!(!segment.contains('/') && !segment.contains('#'), "one encoded segment: {uri}");
    }
    // Input outside the schema never reaches the API at all.
    let (status, _) = run(&registry, "service_status", json!({"service": "x", "env": "evil.example.com"})).await;
    assert_eq!(status, ToolStatus::Error);
}

#[tokio::test]
async fn dot_segments_and_empty_path_values_are_refused_and_the_path_stays_under_its_prefix() {
    let (port, seen) = api().await;
    let registry = registry(&port).await;
    for hostile in ["..", ".", "", " .. "] {
        let (status, output) = run(&registry, "service_status", json!({"service": hostile, "env": "prod"})).await;
        assert_eq!(status, ToolStatus::Error, "{hostile:?}");
        assert!(format!("{output:?}").contains("may not be empty"), "{output:?}");
    }
    assert!(seen.lock().unwrap().is_empty(), "nothing reached the API");
    let template = Url::parse("https://api.example.com/v1/teams/{team}/members").unwrap();
    assert_eq!(fixed_path_prefix(&template), "/v1/teams/");
}

#[tokio::test]
async fn a_redirect_is_not_followed_so_secret_headers_stay_home() {
    let (port, seen) = api().await;
    let registry = registry(&port).await;
    let (status, output) = run(&registry, "moved_api", json!({})).await;
    assert_eq!(status, ToolStatus::Error);
    assert!(format!("{output:?}").contains("307"), "{output:?}");
    let paths: Vec<String> = seen.lock().unwrap().iter().map(|seen| seen.1.clone()).collect();
    assert_eq!(paths, ["/moved"], "the redirect target was never asked");
}

#[tokio::test]
async fn large_responses_are_cut_and_failures_are_error_results() {
    let (port, _) = api().await;
    let registry = registry(&port).await;
    let (status, output) = run(&registry, "fetch_big_report", json!({})).await;
    assert_eq!(status, ToolStatus::Success);
    let ToolOutput::Text(text) = output else { panic!("text") };
    assert!(text.len() < 1_100 && text.ends_with("[response cut at 1024 bytes]"), "{}", text.len());

    let (status, output) = run(&registry, "flaky_api", json!({})).await;
    assert_eq!(status, ToolStatus::Error);
    assert_eq!(output, ToolOutput::Text("the API answered 503 Service Unavailable: upstream down".into()));
}

#[tokio::test]
async fn a_post_tool_changes_things_and_sends_the_input_as_json() {
    let (port, seen) = api().await;
    let tools = http_tools(&configs(&port), client(), no_signer(), env).unwrap();
    let restart = tools.iter().find(|t| t.spec().name == "restart_service").unwrap();
    assert_eq!(restart.effect(), Effect::ChangesThings);
    assert_eq!(tools[0].effect(), Effect::ReadOnly);

    let registry = ToolRegistry::new(tools, ToolPolicy::allow_all()).unwrap();
    run(&registry, "restart_service", json!({"service": "checkout-api"})).await;
    let (method, _, _, body, _) = seen.lock().unwrap()[0].clone();
    assert_eq!((method.as_str(), body.as_str()), ("POST", r#"{"service":"checkout-api"}"#));
}

#[tokio::test]
async fn an_approved_call_carries_its_idempotency_key_and_approval_can_be_declared() {
    let (port, seen) = api().await;
    let registry = registry(&port).await;
    let call = ToolUse { id: "tooluse_9".into(), name: "restart_service".into(), input: json!({"service": "api"}) };
    registry
        .run_approved(
            &call,
            &slack::ChannelId::new("C1"),
            &tools_registry::Credentials::new(),
            "T1-Ev1:tooluse_9".into(),
        )
        .await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!((seen[0].1.as_str(), seen[0].4.as_deref()), ("/restart", Some("T1-Ev1:tooluse_9")));

    let mut declared = configs(&port);
    // A GET that changes things after all, a POST that only reads, a DELETE.
    declared[0].requires_approval = Some(true);
    declared[3].requires_approval = Some(false);
    declared[2].method = "DELETE".into();
    declared[0].approvers = Some(vec![Approver::User(slack::UserId::new("U0DBA"))]);
    let tools = http_tools(&declared, client(), no_signer(), env).unwrap();
    let effects: Vec<Effect> = tools.iter().map(Tool::effect).collect();
    assert_eq!(
        effects,
        [Effect::ChangesThings, Effect::ReadOnly, Effect::ChangesThings, Effect::ReadOnly, Effect::ReadOnly]
    );
    let registry = ToolRegistry::new(tools, ToolPolicy::allow_all()).unwrap();
    let channel = slack::ChannelId::new("C1");
    let rule = registry.approval_rule(&channel, "service_status").unwrap();
    assert_eq!(rule.approvers, Some(&[Approver::User(slack::UserId::new("U0DBA"))][..]));
    assert!(registry.approval_rule(&channel, "flaky_api").unwrap().destructive, "DELETE is destructive");

    declared[0].approvers = Some(vec![]);
    assert!(
        matches!(http_tools(&declared, client(), no_signer(), env), Err(HttpToolError::Invalid { .. })),
        "a tool nobody may approve is refused"
    );
}

#[test]
fn declarations_that_cannot_be_safe_are_refused_at_start_up() {
    let mut config = configs("1")[0].clone();
    let err = http_tools(std::slice::from_ref(&config), client(), no_signer(), |_: &Reference| None).err().unwrap();
    assert!(
        matches!(err, HttpToolError::Unresolved { reason: Unresolved::Missing(Reference::Env(ref variable)), .. } if variable == "STATUS_API_TOKEN"),
        "{err}"
    );
    assert!(err.to_string().contains("${env:STATUS_API_TOKEN} has no value"), "{err}");

    config.headers.clear();
    for url in ["ftp://files.example.com/{path}", "https://{host}.example.com/x", "not a url"] {
        config.url = url.into();
        assert!(
            matches!(
                http_tools(std::slice::from_ref(&config), client(), no_signer(), |_: &Reference| None),
                Err(HttpToolError::Invalid { .. })
            ),
            "{url}"
        );
    }

    // A timeout longer than a step's tool budget, or none at all.
    config.url = "https://status.example.com/api".into();
    for secs in [0, 121, 86_400] {
        config.timeout_secs = Some(secs);
        let err = http_tools(std::slice::from_ref(&config), client(), no_signer(), |_: &Reference| None)
            .err()
            .expect("refused");
        assert!(err.to_string().contains("timeout_secs must be from 1 to 120"), "{secs}: {err}");
    }
}

fn no_signer() -> Arc<dyn RequestSigner> {
    Arc::new(assistant_core::ports::NoSigner)
}

/// An API behind IAM auth: it recomputes each request's SigV4 signature
/// (testkit's check, written from AWS's specification) and answers 403 to
/// any mismatch, as API Gateway does.
async fn iam_api() -> (String, Arc<Mutex<Vec<Result<String, String>>>>) {
    let checks: Arc<Mutex<Vec<Result<String, String>>>> = Arc::default();
    let seen = checks.clone();
    let app = Router::new().fallback(move |request: Request| {
        let seen = seen.clone();
        async move {
            let (parts, body) = request.into_parts();
            let body = axum::body::to_bytes(body, 1 << 20).await.unwrap();
            let check = testkit::sigv4_check::verify_received(&parts, &body, "iam-secret")
                .map(|signed| format!("{} {} {}", signed.service, signed.region, signed.signed_headers.join(";")));
            let ok = check.is_ok();
            seen.lock().unwrap().push(check);
            if ok {
                axum::Json(json!({"restarted": true})).into_response()
            } else {
                (axum::http::StatusCode::FORBIDDEN, "The request signature we calculated does not match")
                    .into_response()
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (port.to_string(), checks)
}

fn iam_tool(port: &str, extra: Value) -> Vec<HttpToolConfig> {
    let mut tool = json!({
        "name": "restart_service", "description": "Restart a service.",
        "input_schema": {"type": "object", "properties": {"service": {"type": "string"}}, "required": ["service"]},
        "method": "POST", "url": format!("http://127.0.0.1:{port}/prod/services/{{service}}/restart"),
        "query": {"reason": "asked in Slack"},
        "auth": {"aws_iam": {"service": "execute-api", "region": "eu-west-1"}}
    });
    tool.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    serde_json::from_value(vec![tool].into()).unwrap()
}

#[tokio::test]
async fn an_aws_iam_tool_signs_each_call_as_the_workers_role_and_the_server_verifies_it() {
    use aws_credential_types::Credentials;
    let (port, checks) = iam_api().await;
    let signer: Arc<dyn RequestSigner> = Arc::new(adapters_sigv4::Signer::with_credentials(
        Credentials::new("AKIDWORKER", "iam-secret", Some("session-token".into()), None, "test"),
        "us-east-1",
    ));
    let tools = http_tools(&iam_tool(&port, json!({})), client(), signer, env).unwrap();
    let registry = ToolRegistry::new(tools, ToolPolicy::allow_all()).unwrap();
    let call = ToolUse { id: "t1".into(), name: "restart_service".into(), input: json!({"service": "checkout api"}) };
    let result = registry
        .run_approved(&call, &slack::ChannelId::new("C1"), &tools_registry::Credentials::new(), "turn-1:t1".into())
        .await;
    assert_eq!(result.status, ToolStatus::Success, "{:?}", result.output);
    let checks = checks.lock().unwrap().clone();
    let signed = checks[0].as_ref().expect("the server's own computation matches");
    assert!(signed.starts_with("execute-api eu-west-1 "), "the configured scope: {signed}");
    for header in ["host", "x-amz-date", "x-amz-security-token", "idempotency-key", "content-type"] {
        assert!(signed.contains(header), "{header} is signed: {signed}");
    }

    // The same call signed with another key fails the server's check.
    let wrong: Arc<dyn RequestSigner> = Arc::new(adapters_sigv4::Signer::with_credentials(
        Credentials::new("AKIDWORKER", "not-the-secret", None, None, "test"),
        "us-east-1",
    ));
    let tools = http_tools(&iam_tool(&port, json!({})), client(), wrong, env).unwrap();
    let registry = ToolRegistry::new(tools, ToolPolicy::allow_all()).unwrap();
    let result = registry.run(&call, &slack::ChannelId::new("C1")).await;
    assert_eq!(result.status, ToolStatus::Error);
    assert!(format!("{:?}", result.output).contains("403"), "{:?}", result.output);
}

#[test]
fn a_signed_tool_may_not_carry_its_own_authorization_nor_sign_for_an_unknown_host() {
    let refused = |configs: Vec<HttpToolConfig>| match http_tools(&configs, client(), no_signer(), env) {
        Err(err) => err.to_string(),
        Ok(_) => panic!("accepted"),
    };
    let both = refused(iam_tool("1", json!({"headers": {"Authorization": "Bearer x"}})));
    assert!(both.contains("may not set its own Authorization"), "{both}");
    let unknown = refused(iam_tool("1", json!({"auth": "aws_iam"})));
    assert!(unknown.contains("cannot tell which AWS service"), "{unknown}");
}
