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
    let url = testkit::serve(app).await;
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

/// The worked examples of "Signature Calculations for the Authorization
/// Header: Transferring Payload in a Single Chunk" (Amazon S3 API
/// Reference): AWS's own requests, keys, time and signatures.
mod s3_published_examples {
    use super::*;

    const ACCESS_KEY: &str = "AKIAIOSFODNN7EXAMPLE";
    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    /// 2013-05-24T00:00:00Z, the examples' `x-amz-date`.
    fn their_time() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_369_353_600)
    }

    async fn sign(method: &str, url: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<(String, String)> {
        let signer = Signer::with_credentials(Credentials::new(ACCESS_KEY, SECRET, None, None, "t"), "us-east-1");
        let headers: Vec<(String, String)> =
            headers.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect();
        let request = Unsigned { method, url, headers: &headers, body: Some(body) };
        signer.headers_at(request, "s3", None, Convention::S3, their_time()).await.unwrap()
    }

    fn header<'a>(signed: &'a [(String, String)], name: &str) -> &'a str {
        signed.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str()).unwrap_or_default()
    }

    fn authorization(signed_headers: &str, signature: &str) -> String {
        format!(
            "AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/20130524/us-east-1/s3/aws4_request, \
             SignedHeaders={signed_headers}, Signature={signature}"
        )
    }

    #[tokio::test]
    async fn get_object() {
        let signed = sign(
            "GET",
            "https://examplebucket.s3.amazonaws.com/test.txt",
            &[("host", "examplebucket.s3.amazonaws.com"), ("range", "bytes=0-9")],
            b"",
        )
        .await;
        assert_eq!(header(&signed, "x-amz-content-sha256"), EMPTY_SHA256);
        assert_eq!(
            header(&signed, "authorization"),
            authorization(
                "host;range;x-amz-content-sha256;x-amz-date",
                "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
            )
        );
    }

    #[tokio::test]
    async fn put_object_whose_key_needs_encoding() {
        // The path is signed as sent (`%24` once), not encoded again as
        // every other service wants it.
        let signed = sign(
            "PUT",
            "https://examplebucket.s3.amazonaws.com/test%24file.text",
            &[
                ("host", "examplebucket.s3.amazonaws.com"),
                ("date", "Fri, 24 May 2013 00:00:00 GMT"),
                ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
            ],
            b"Welcome to Amazon S3.",
        )
        .await;
        assert_eq!(
            header(&signed, "x-amz-content-sha256"),
            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"
        );
        assert_eq!(
            header(&signed, "authorization"),
            authorization(
                "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
                "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"
            )
        );
    }

    #[tokio::test]
    async fn list_objects() {
        let signed = sign(
            "GET",
            "https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J",
            &[("host", "examplebucket.s3.amazonaws.com")],
            b"",
        )
        .await;
        assert_eq!(
            header(&signed, "authorization"),
            authorization(
                "host;x-amz-content-sha256;x-amz-date",
                "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
            )
        );
    }

    #[tokio::test]
    async fn every_other_service_encodes_the_path_twice() {
        // The same PUT signed by the standard convention differs: S3 would refuse it.
        let signer = Signer::with_credentials(Credentials::new(ACCESS_KEY, SECRET, None, None, "t"), "us-east-1");
        let headers = vec![("host".to_owned(), "examplebucket.s3.amazonaws.com".to_owned())];
        let url = "https://examplebucket.s3.amazonaws.com/test%24file.text";
        let request = Unsigned { method: "PUT", url, headers: &headers, body: Some(b"x") };
        let standard = signer.headers_at(request, "s3", None, Convention::Standard, their_time()).await.unwrap();
        let s3 = signer.headers_at(request, "s3", None, Convention::S3, their_time()).await.unwrap();
        assert_ne!(header(&standard, "authorization"), header(&s3, "authorization"));
        assert_eq!(header(&standard, "x-amz-content-sha256"), "", "only S3 is sent the payload's hash");
    }
}
