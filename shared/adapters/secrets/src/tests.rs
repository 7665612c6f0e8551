//! Against a fake that answers as Secrets Manager's JSON protocol does.

use super::*;
use aws_credential_types::Credentials;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Fake {
    requests: Mutex<Vec<(HeaderMap, serde_json::Value)>>,
}

async fn answer(fake: Arc<Fake>, headers: HeaderMap, body: String) -> axum::response::Response {
    let body: serde_json::Value = serde_json::from_str(&body).expect("JSON body");
    let id = body["SecretId"].as_str().unwrap_or_default().to_owned();
    let earlier = fake.requests.lock().unwrap().iter().filter(|(_, seen)| seen["SecretId"] == id.as_str()).count();
    fake.requests.lock().unwrap().push((headers, body));
    let error = |status: StatusCode, kind: &str| {
        (status, [("content-type", "application/x-amz-json-1.1")], format!(r#"{{"__type":"{kind}","message":"no"}}"#))
            .into_response()
    };
    match id.as_str() {
        "team/status-api" => {
            axum::Json(serde_json::json!({"Name": id, "SecretString": "s3cr3t-v4lue\r\n"})).into_response()
        }
        "team/binary" => axum::Json(serde_json::json!({"Name": id, "SecretBinary": "AAEC"})).into_response(),
        "team/throttled-once" if earlier == 0 => error(StatusCode::BAD_REQUEST, "ThrottlingException"),
        "team/throttled-once" => axum::Json(serde_json::json!({"SecretString": "after-a-retry"})).into_response(),
        "team/always-down" => error(StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable"),
        "team/denied" => error(StatusCode::BAD_REQUEST, "com.amazonaws.secretsmanager#AccessDeniedException"),
        _ => error(StatusCode::BAD_REQUEST, "ResourceNotFoundException"),
    }
}

async fn serve() -> (Arc<Fake>, String) {
    let fake = Arc::new(Fake::default());
    let state = fake.clone();
    let app = axum::Router::new()
        .route("/", axum::routing::post(move |headers: HeaderMap, body: String| answer(state.clone(), headers, body)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (fake, url)
}

fn store(endpoint: &str, session_token: Option<&str>) -> SecretsManager {
    let credentials = Credentials::new("AKIDTEST", "test-secret-key", session_token.map(str::to_owned), None, "test");
    let signer = Signer::with_credentials(credentials, "eu-west-1").with_endpoint_url(endpoint);
    SecretsManager::new(&signer, reqwest::Client::new(), "team/")
}

#[tokio::test]
async fn a_secret_is_read_under_the_prefix_with_a_signed_request() {
    let (fake, url) = serve().await;
    let value = store(&url, Some("session-token")).secret("status-api").await.unwrap();
    assert_eq!(value.as_deref(), Some("s3cr3t-v4lue"), "without the line break a file left at its end");

    let requests = fake.requests.lock().unwrap();
    let (headers, body) = &requests[0];
    assert_eq!(body["SecretId"], "team/status-api", "the configuration's name under the deployment's prefix");
    assert_eq!(headers["x-amz-target"], "secretsmanager.GetSecretValue");
    assert_eq!(headers["content-type"], "application/x-amz-json-1.1");
    let authorization = headers["authorization"].to_str().unwrap();
    assert!(authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDTEST/"), "{authorization}");
    assert!(authorization.contains("/eu-west-1/secretsmanager/aws4_request"), "{authorization}");
    assert!(authorization.contains("x-amz-target"), "the target is signed: {authorization}");
    assert_eq!(headers["x-amz-security-token"], "session-token");
}

#[tokio::test]
async fn a_missing_secret_is_none_and_a_throttled_read_is_retried() {
    let (fake, url) = serve().await;
    let store = store(&url, None);
    assert_eq!(store.secret("nothing-here").await.unwrap(), None);
    assert_eq!(store.secret("throttled-once").await.unwrap().as_deref(), Some("after-a-retry"));
    assert_eq!(fake.requests.lock().unwrap().len(), 3, "one read, and one throttled read retried once");
}

#[tokio::test]
async fn refusals_and_outages_are_errors_that_name_the_secret_and_the_reason() {
    let (fake, url) = serve().await;
    let store = store(&url, None);
    let denied = store.secret("denied").await.unwrap_err().to_string();
    assert!(denied.contains("team/denied") && denied.contains("AccessDeniedException"), "{denied}");
    assert!(!denied.contains("com.amazonaws"), "the type without its namespace: {denied}");
    let binary = store.secret("binary").await.unwrap_err().to_string();
    assert!(binary.contains("binary secret") && !binary.contains("AAEC"), "{binary}");
    let down = store.secret("always-down").await.unwrap_err().to_string();
    assert!(down.contains("ServiceUnavailable"), "{down}");
    let attempts =
        fake.requests.lock().unwrap().iter().filter(|(_, body)| body["SecretId"] == "team/always-down").count();
    assert_eq!(attempts, adapters_sigv4::ATTEMPTS as usize, "an outage is retried, then reported");
    let denials = fake.requests.lock().unwrap().iter().filter(|(_, body)| body["SecretId"] == "team/denied").count();
    assert_eq!(denials, 1, "a refusal is not retried");
}

#[tokio::test]
async fn without_credentials_or_a_region_the_read_fails_clearly() {
    let aws = aws_config::SdkConfig::builder().endpoint_url("http://127.0.0.1:9").build();
    let signer = Signer::new(&aws);
    let err = SecretsManager::new(&signer, reqwest::Client::new(), "team/").secret("x").await.unwrap_err().to_string();
    assert!(err.contains("no AWS region"), "{err}");
}
