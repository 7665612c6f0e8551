//! Against fakes that answer as AWS's JSON protocols do and recompute
//! each request's signature (testkit's independent SigV4 check).

use super::*;
use aws_credential_types::Credentials;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use std::sync::{Arc, Mutex};

const SECRET_KEY: &str = "test-secret-key";

const LOGS: Service = Service {
    signing_name: "logs",
    endpoint_prefix: "logs",
    endpoint_variable: "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS",
    json_target: Some(("Logs_20140328", "1.1")),
};

/// What the fake answers, in order, and what it received.
#[derive(Default)]
struct Fake {
    answers: Mutex<Vec<(u16, String)>>,
    received: Mutex<Vec<Result<(String, serde_json::Value), String>>>,
}

async fn answer(State(fake): State<Arc<Fake>>, request: Request) -> axum::response::Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let checked = testkit::sigv4_check::verify_received(&parts, &body, SECRET_KEY).map(|signed| {
        let target = parts.headers.get("x-amz-target").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
        (format!("{} {} {}", signed.service, signed.region, target), serde_json::from_slice(&body).unwrap())
    });
    let refused = checked.is_err();
    fake.received.lock().unwrap().push(checked);
    if refused {
        return (StatusCode::FORBIDDEN, r#"{"__type":"InvalidSignatureException"}"#).into_response();
    }
    let (status, body) = {
        let mut answers = fake.answers.lock().unwrap();
        if answers.is_empty() { (200, "{}".to_owned()) } else { answers.remove(0) }
    };
    (StatusCode::from_u16(status).unwrap(), body).into_response()
}

async fn serve(answers: &[(u16, &str)]) -> (Arc<Fake>, AwsApi) {
    let fake = Arc::new(Fake::default());
    *fake.answers.lock().unwrap() = answers.iter().map(|(s, b)| (*s, b.to_string())).collect();
    let app = axum::Router::new().fallback(answer).with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let signer = Signer::with_credentials(
        Credentials::new("AKIDTEST", SECRET_KEY, Some("session".into()), None, "t"),
        "eu-west-1",
    );
    let env = move |name: &str| (name == "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS").then(|| url.clone());
    (fake, AwsApi::with_endpoint(reqwest::Client::new(), signer, LOGS, None, &env))
}

#[tokio::test]
async fn a_call_is_signed_for_its_service_and_region_and_its_answer_read() {
    let (fake, api) = serve(&[(200, r#"{"queryId": "q-1"}"#)]).await;
    let answer = api
        .call("StartQuery", &serde_json::json!({"queryString": "fields @message"}), Repeat::OnlyIfRefused)
        .await
        .unwrap();
    assert_eq!(answer["queryId"], "q-1");
    let received = fake.received.lock().unwrap();
    let (what, body) = received[0].as_ref().expect("the signature checks out");
    assert_eq!(what, "logs eu-west-1 Logs_20140328.StartQuery");
    assert_eq!(body["queryString"], "fields @message");
}

#[tokio::test]
async fn a_tampered_request_fails_the_servers_check() {
    // The fake's check is not a formality: a body changed after signing is refused.
    let signer = Signer::with_credentials(Credentials::new("AKIDTEST", SECRET_KEY, None, None, "t"), "eu-west-1");
    let client = reqwest::Client::new();
    let mut request = client.post("http://127.0.0.1:9/x?b=2&a=1").body("{}").build().unwrap();
    signer.sign(&mut request, "execute-api", None).await.unwrap();
    let headers: Vec<(String, String)> =
        request.headers().iter().map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned())).collect();
    let mut with_host = headers.clone();
    with_host.push(("host".into(), "127.0.0.1:9".into()));
    let check =
        |body: &[u8], query: &str| testkit::sigv4_check::verify("POST", "/x", query, &with_host, body, SECRET_KEY);
    let signed = check(b"{}", "b=2&a=1").expect("as signed");
    assert_eq!((signed.service.as_str(), signed.region.as_str()), ("execute-api", "eu-west-1"));
    assert!(check(b"{\"x\":1}", "b=2&a=1").is_err(), "another body");
    assert!(check(b"{}", "b=3&a=1").is_err(), "another query");
    assert!(testkit::sigv4_check::verify("POST", "/x", "b=2&a=1", &with_host, b"{}", "another-key").is_err());
}

#[tokio::test]
async fn throttling_is_retried_and_an_unknown_outcome_only_when_repeating_is_safe() {
    let throttled = (400, r#"{"__type":"com.amazonaws#ThrottlingException","message":"slow down"}"#);
    let unavailable = (503, r#"{"__type":"ServiceUnavailableException"}"#);
    let (fake, api) = serve(&[throttled, (200, r#"{"ok": 1}"#)]).await;
    assert_eq!(api.call("StartQuery", &serde_json::json!({}), Repeat::OnlyIfRefused).await.unwrap()["ok"], 1);
    assert_eq!(fake.received.lock().unwrap().len(), 2);

    let (fake, api) = serve(&[unavailable, (200, r#"{"ok": 1}"#)]).await;
    let err = api.call("StartQuery", &serde_json::json!({}), Repeat::OnlyIfRefused).await.unwrap_err();
    assert_eq!((err.status, err.kind.as_str()), (Some(503), "ServiceUnavailableException"));
    assert_eq!(fake.received.lock().unwrap().len(), 1, "a query that may have started is not started twice");

    let (fake, api) = serve(&[unavailable, (200, r#"{"ok": 1}"#)]).await;
    assert_eq!(api.call("GetQueryResults", &serde_json::json!({}), Repeat::Safe).await.unwrap()["ok"], 1);
    assert_eq!(fake.received.lock().unwrap().len(), 2);

    let denied = (400, r#"{"__type":"AccessDeniedException","message":"not allowed on arn:aws:logs:x"}"#);
    let (fake, api) = serve(&[denied]).await;
    let err = api.call("GetQueryResults", &serde_json::json!({}), Repeat::Safe).await.unwrap_err();
    assert_eq!(err.kind, "AccessDeniedException");
    assert!(err.to_string().contains("not allowed"), "{err}");
    assert_eq!(fake.received.lock().unwrap().len(), 1, "a refusal is final");
}

#[tokio::test]
async fn an_answer_past_the_limit_is_refused_unread() {
    let huge = format!(r#"{{"results": "{}"}}"#, "x".repeat(200_000));
    let (_, api) = serve(&[(200, &huge)]).await;
    let api = api.max_answer_bytes(64 * 1024);
    let err = api.call("GetQueryResults", &serde_json::json!({}), Repeat::Safe).await.unwrap_err();
    assert_eq!(err.kind, "AnswerTooLarge");
}

#[test]
fn the_endpoint_is_the_services_variable_then_the_general_one_then_aws() {
    let signer = Signer::with_credentials(Credentials::new("a", "b", None, None, "t"), "eu-west-1");
    let api = |env: &dyn Fn(&str) -> Option<String>| {
        AwsApi::with_endpoint(reqwest::Client::new(), signer.clone(), LOGS, None, env).endpoint().to_owned()
    };
    assert_eq!(api(&|_| None), "https://logs.eu-west-1.amazonaws.com");
    assert_eq!(api(&|n| (n == "AWS_ENDPOINT_URL").then(|| "http://127.0.0.1:4566/".into())), "http://127.0.0.1:4566");
    assert_eq!(
        api(&|n| Some(if n == "AWS_ENDPOINT_URL" { "http://general" } else { "http://logs" }.into())),
        "http://logs"
    );
}
