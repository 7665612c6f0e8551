//! Serving a fake on a free loopback port for as long as the test holds it.
//!
//! A fake started with [`LocalServer::start_recorded`] also appends every
//! request it serves to `$AWS_CALL_LOG/{service}-{pid}.jsonl` (when the test
//! command sets that directory), as the local AWS emulator does: after the
//! tests, `infra/iam/check.py` evaluates the AWS calls among them against
//! the roles `template.yaml` gives the functions,
//! `infra/vendor-models/check.py` validates the Bedrock and Slack requests
//! against the vendors' own published models, and `infra/mentions/check.py`
//! looks for live mass mentions in every Slack request.

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use std::io::Write;

/// A server running in the test's runtime; dropping it stops the server.
pub struct LocalServer {
    /// `http://127.0.0.1:PORT`
    pub base_url: String,
    task: tokio::task::JoinHandle<()>,
}

impl LocalServer {
    pub async fn start(app: Router) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind a loopback port");
        let base_url = format!("http://{}", listener.local_addr().expect("local address"));
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("the fake serves");
        });
        Self { base_url, task }
    }

    /// As [`LocalServer::start`], recording each request as `service`'s
    /// (`bedrock`, `slack`).
    pub async fn start_recorded(app: Router, service: &'static str) -> Self {
        Self::start_recorded_with(app, service, Notes::default()).await
    }

    /// As [`LocalServer::start_recorded`], each record also carrying what
    /// `notes` holds when the request arrives (what the test's deployment
    /// set that a check of the records needs: `allowed_special_mentions`).
    pub async fn start_recorded_with(app: Router, service: &'static str, notes: Notes) -> Self {
        let app = app.layer(axum::middleware::from_fn(move |request: Request, next: axum::middleware::Next| {
            record(service, notes.clone(), request, next)
        }));
        Self::start(app).await
    }
}

/// Fields added to every record of a recorded fake, as they stand when the
/// request arrives.
pub type Notes = std::sync::Arc<std::sync::Mutex<serde_json::Map<String, serde_json::Value>>>;

/// Appends the request to the call log, then serves it unchanged.
async fn record(
    service: &'static str,
    notes: Notes,
    request: Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let Some(directory) = std::env::var_os("AWS_CALL_LOG") else {
        return next.run(request).await;
    };
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let body_field = match std::str::from_utf8(&bytes) {
        Ok(text) => ("body", serde_json::Value::String(text.to_owned())),
        Err(_) => (
            "body_base64",
            serde_json::Value::String(base64::Engine::encode(&base64::prelude::BASE64_STANDARD, &bytes)),
        ),
    };
    let mut line = serde_json::json!({
        "service": service,
        "method": parts.method.as_str(),
        "path": parts.uri.path(),
        "query": parts.uri.query().unwrap_or_default(),
        "headers": {
            "authorization": header("authorization"),
            "content-type": header("content-type"),
            "x-amz-target": header("x-amz-target"),
            "x-amz-user-agent": header("x-amz-user-agent"),
        },
    });
    line[body_field.0] = body_field.1;
    for (name, value) in notes.lock().expect("notes lock").iter() {
        line[name] = value.clone();
    }
    let path = std::path::Path::new(&directory).join(format!("{service}-{}.jsonl", std::process::id()));
    let written = std::fs::create_dir_all(&directory).and_then(|()| {
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
        // One write per line: lines from concurrent requests never interleave.
        file.write_all(format!("{line}\n").as_bytes())
    });
    written.unwrap_or_else(|err| panic!("record a {service} call in {}: {err}", path.display()));
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
