//! Where HTTP tools may go, through the process's real HTTP client
//! (`adapters_slack::http_client()`, the one the worker and the local runner
//! give the tools): a redirect is not followed, and a host name that
//! resolves to loopback is refused, while a tool whose URL names 127.0.0.1
//! itself works.

use assistant_core::turn::{ToolOutput, ToolStatus, ToolUse};
use axum::Router;
use axum::routing::get;
use serde_json::json;
use std::sync::{Arc, Mutex};
use tests::local_server::LocalServer;
use tools_http::{HttpToolConfig, http_tools};
use tools_registry::{ToolPolicy, ToolRegistry};

/// A team API that answers `/status`, redirects `/moved` to `/steal`, and
/// records every path it is asked for.
async fn api() -> (LocalServer, Arc<Mutex<Vec<String>>>) {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = |seen: Arc<Mutex<Vec<String>>>, path: &'static str| {
        move || {
            seen.lock().unwrap().push(path.to_owned());
            async move { axum::Json(json!({"status": "ok"})) }
        }
    };
    let moved = {
        let seen = seen.clone();
        move || {
            seen.lock().unwrap().push("/moved".to_owned());
            async { axum::response::Redirect::temporary("/steal") }
        }
    };
    let app = Router::new()
        .route("/status", get(record(seen.clone(), "/status")))
        .route("/steal", get(record(seen.clone(), "/steal")))
        .route("/moved", get(moved));
    (LocalServer::start(app).await, seen)
}

fn tool(name: &str, url: String) -> HttpToolConfig {
    serde_json::from_value(json!({
        "name": name, "description": "A team API.", "input_schema": {"type": "object"}, "url": url,
        "headers": {"X-Api-Key": "team-api-key"}
    }))
    .unwrap()
}

async fn call(registry: &ToolRegistry, name: &str) -> (ToolStatus, String) {
    let call = ToolUse { id: "t1".into(), name: name.into(), input: json!({}) };
    let result = registry.run(&call, &slack::ChannelId::new("C1")).await;
    let output = match result.output {
        ToolOutput::Text(text) => text,
        other => format!("{other:?}"),
    };
    (result.status, output)
}

#[tokio::test]
async fn tools_reach_only_where_their_url_says_and_never_follow_a_redirect() {
    let (api, seen) = api().await;
    let port = api.base_url.rsplit(':').next().unwrap().to_owned();
    let declared = vec![
        tool("named_address", format!("http://127.0.0.1:{port}/status")),
        tool("name_to_loopback", format!("http://localhost:{port}/status")),
        tool("redirecting", format!("http://127.0.0.1:{port}/moved")),
    ];
    let tools = http_tools(
        &declared,
        adapters_slack::http_client(),
        std::sync::Arc::new(assistant_core::ports::NoSigner),
        |_: &tools_registry::references::Reference| None,
    )
    .unwrap();
    let registry = ToolRegistry::new(tools, ToolPolicy::allow_all()).unwrap();

    let (status, _) = call(&registry, "named_address").await;
    assert_eq!(status, ToolStatus::Success, "an address the URL names itself is reachable");

    let (status, output) = call(&registry, "name_to_loopback").await;
    assert_eq!(status, ToolStatus::Error);
    assert!(output.contains("the request failed"), "{output}");

    let (status, output) = call(&registry, "redirecting").await;
    assert_eq!(status, ToolStatus::Error);
    assert!(output.contains("307"), "{output}");

    assert_eq!(*seen.lock().unwrap(), ["/status", "/moved"], "never /steal, and localhost never connected");
}
