//! Against a fake S3 that checks each request's signature by S3's rules
//! (testkit's independent SigV4 check: the path as sent, the payload's hash
//! required and matched), keeps objects, pages listings, and answers with
//! what S3 answers on a bad day.

use super::*;
use aws_credential_types::Credentials;
use axum::extract::{Request as Received, State};
use axum::http::StatusCode as Status;
use axum::response::{IntoResponse, Response};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

const SECRET_KEY: &str = "test-secret-key";
const BUCKET: &str = "artifacts";

/// What the fake does with the next request instead of serving it plainly.
#[derive(Clone)]
enum Fault {
    /// Answers this, without doing the request.
    Instead(u16, &'static str),
    /// Does the request, then answers this (its answer lost).
    AfterApplying(u16, &'static str),
    /// Answers 200 with this body, whatever was asked.
    Body(String),
}

/// A request the fake received.
struct Seen {
    method: String,
    /// Path and query, as sent.
    url: String,
    /// Whether its signature checked out, by S3's rules.
    signature: Result<(), String>,
}

#[derive(Default)]
struct FakeS3 {
    objects: Mutex<BTreeMap<String, (Vec<u8>, String)>>,
    faults: Mutex<Vec<Fault>>,
    received: Mutex<Vec<Seen>>,
    /// Keys per listing page at most (S3's is 1,000): small, to page.
    page: usize,
}

fn xml_error(status: u16, code: &str) -> Response {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code><Message>{code} &amp; more</Message></Error>"
    );
    (Status::from_u16(status).unwrap(), body).into_response()
}

async fn serve_s3(State(fake): State<Arc<FakeS3>>, request: Received) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap().to_vec();
    let checked = testkit::sigv4_check::verify_received(&parts, &body, SECRET_KEY).map(|_| ());
    let headers: Vec<(String, String)> =
        parts.headers.iter().map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned())).collect();
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().unwrap_or_default().to_owned();
    let seen = Seen { method: parts.method.to_string(), url: format!("{path}?{query}"), signature: checked.clone() };
    fake.received.lock().unwrap().push(seen);
    if let Err(why) = checked {
        return xml_error(403, &format!("SignatureDoesNotMatch: {why}"));
    }
    let fault = {
        let mut faults = fake.faults.lock().unwrap();
        (!faults.is_empty()).then(|| faults.remove(0))
    };
    let lost = match fault {
        Some(Fault::Instead(status, code)) => return xml_error(status, code),
        Some(Fault::Body(body)) => return (Status::OK, body).into_response(),
        Some(Fault::AfterApplying(status, code)) => Some((status, code)),
        None => None,
    };
    let decoded = percent_encoding::percent_decode_str(&path).decode_utf8().unwrap().into_owned();
    let Some(rest) = decoded.strip_prefix(&format!("/{BUCKET}")) else { return xml_error(404, "NoSuchBucket") };
    let key = rest.trim_start_matches('/').to_owned();
    let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    let answer = match (parts.method.as_str(), key.is_empty()) {
        ("PUT", false) => {
            if header("x-amz-server-side-encryption").as_deref() != Some("AES256") {
                return xml_error(400, "NotEncrypted (the test's rule)");
            }
            let content_type = header("content-type").unwrap_or_default();
            fake.objects.lock().unwrap().insert(key, (body, content_type));
            Status::OK.into_response()
        }
        ("GET", false) => match fake.objects.lock().unwrap().get(&key) {
            Some((body, _)) => (Status::OK, body.clone()).into_response(),
            None => xml_error(404, "NoSuchKey"),
        },
        ("GET", true) => list(&fake, &query),
        _ => xml_error(405, "MethodNotAllowed"),
    };
    match lost {
        Some((status, code)) => xml_error(status, code),
        None => answer,
    }
}

fn list(fake: &FakeS3, query: &str) -> Response {
    let params: BTreeMap<String, String> = query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(n, v)| (n.to_owned(), percent_encoding::percent_decode_str(v).decode_utf8().unwrap().into_owned()))
        .collect();
    assert_eq!(params.get("list-type").map(String::as_str), Some("2"), "ListObjectsV2");
    let prefix = params.get("prefix").cloned().unwrap_or_default();
    let after = params.get("continuation-token").cloned().unwrap_or_default();
    let max: usize = params.get("max-keys").map_or(1000, |max| max.parse().unwrap()).min(fake.page);
    let objects = fake.objects.lock().unwrap();
    let matching: Vec<_> =
        objects.iter().filter(|(key, _)| key.starts_with(&prefix) && key.as_str() > after.as_str()).collect();
    let page: Vec<_> = matching.iter().take(max).collect();
    let truncated = matching.len() > page.len();
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">",
    );
    xml.push_str(&format!("<Name>{BUCKET}</Name><KeyCount>{}</KeyCount>", page.len()));
    for (key, (body, _)) in &page {
        let key = key.replace('&', "&amp;").replace('<', "&lt;");
        xml.push_str(&format!(
            "<Contents><Key>{key}</Key><Size>{}</Size><StorageClass>STANDARD</StorageClass></Contents>",
            body.len()
        ));
    }
    xml.push_str(&format!("<IsTruncated>{truncated}</IsTruncated>"));
    if truncated {
        let last = page.last().unwrap().0.replace('&', "&amp;").replace('<', "&lt;");
        xml.push_str(&format!("<NextContinuationToken>{last}</NextContinuationToken>"));
    }
    xml.push_str("</ListBucketResult>");
    (Status::OK, xml).into_response()
}

async fn fake_s3(faults: &[Fault]) -> (Arc<FakeS3>, S3Artifacts) {
    let fake = Arc::new(FakeS3 { page: 2, ..Default::default() });
    *fake.faults.lock().unwrap() = faults.to_vec();
    let app = axum::Router::new().fallback(serve_s3).with_state(fake.clone());
    let url = testkit::serve(app).await;
    let signer = Signer::with_credentials(
        Credentials::new("AKIDTEST", SECRET_KEY, Some("session".into()), None, "t"),
        "eu-west-1",
    );
    let env = move |name: &str| (name == "AWS_ENDPOINT_URL_S3").then(|| url.clone());
    (fake.clone(), S3Artifacts::with_env(reqwest::Client::new(), signer, BUCKET, &env))
}

fn received(fake: &FakeS3) -> Vec<(String, String)> {
    fake.received.lock().unwrap().iter().map(|seen| (seen.method.clone(), seen.url.clone())).collect()
}

#[tokio::test]
async fn objects_are_written_encrypted_read_back_and_listed_page_by_page() {
    let (fake, bucket) = fake_s3(&[]).await;
    // Keys S3 must see encoded once, exactly as signed.
    let keys = ["docs/runbook.md", "docs/on call & pager.md", "docs/ünïcode $+=.md", "docs/a//b", "other/x.json"];
    for (i, key) in keys.iter().enumerate() {
        bucket.put(key, format!("body {i}").into_bytes(), "text/markdown").await.unwrap();
    }
    for seen in fake.received.lock().unwrap().iter() {
        seen.signature.as_ref().expect("every signature checks out by S3's rules");
    }
    let (body, content_type) = fake.objects.lock().unwrap()["docs/ünïcode $+=.md"].clone();
    assert_eq!((body, content_type.as_str()), (b"body 2".to_vec(), "text/markdown"));
    assert_eq!(bucket.get("docs/on call & pager.md").await.unwrap(), Some(b"body 1".to_vec()));
    assert_eq!(bucket.get("docs/missing.md").await.unwrap(), None);
    assert_eq!(bucket.get_at_most("docs/a//b", 100).await.unwrap(), Bounded::Found(b"body 3".to_vec()));

    let listed = bucket.list("docs/", 10).await.unwrap();
    let names: Vec<&str> = listed.iter().map(|(key, _)| key.as_str()).collect();
    assert_eq!(names, ["docs/a//b", "docs/on call & pager.md", "docs/runbook.md", "docs/ünïcode $+=.md"]);
    assert!(listed.iter().all(|(_, size)| *size == 6));
    assert_eq!(bucket.list("docs/", 3).await.unwrap().len(), 3, "no more than asked for");
    let pages =
        received(&fake).iter().filter(|(method, url)| method == "GET" && url.starts_with("/artifacts/?")).count();
    assert_eq!(pages, 2 + 2, "two pages of two for the first listing, two for the second");
    bucket.check("docs/").await.expect("the health check lists one key");
}

#[tokio::test]
async fn a_write_whose_answer_was_lost_is_written_again_with_the_same_bytes() {
    let (fake, bucket) = fake_s3(&[Fault::AfterApplying(500, "InternalError")]).await;
    bucket.put("cache/tools.json", b"[1]".to_vec(), "application/json").await.unwrap();
    assert_eq!(received(&fake).len(), 2, "tried again");
    assert_eq!(fake.objects.lock().unwrap()["cache/tools.json"].0, b"[1]");
}

#[tokio::test]
async fn throttling_and_resets_are_tried_again_and_a_refusal_is_final() {
    let (fake, bucket) = fake_s3(&[Fault::Instead(503, "SlowDown"), Fault::Instead(500, "InternalError")]).await;
    bucket.put("k", b"v".to_vec(), "text/plain").await.unwrap();
    assert_eq!(received(&fake).len(), 3);

    let (fake, bucket) = fake_s3(&[Fault::Instead(403, "AccessDenied")]).await;
    let err = bucket.get("k").await.unwrap_err();
    assert!(err.to_string().contains("AccessDenied"), "{err}");
    assert!(err.to_string().contains("HTTP 403"), "{err}");
    assert_eq!(received(&fake).len(), 1, "a refusal is not tried again");

    let slow = Fault::Instead(503, "SlowDown");
    let (fake, bucket) = fake_s3(&[slow.clone(), slow.clone(), slow]).await;
    let err = bucket.get("k").await.unwrap_err();
    assert!(err.to_string().contains("SlowDown"), "{err}");
    assert_eq!(received(&fake).len() as u32, adapters_sigv4::ATTEMPTS, "within the backoff's attempts");
}

#[tokio::test]
async fn an_object_over_the_limit_is_not_read_whether_or_not_its_length_is_stated() {
    let (fake, bucket) = fake_s3(&[]).await;
    fake.objects.lock().unwrap().insert("big".into(), (vec![b'x'; 300_000], String::new()));
    assert_eq!(bucket.get_at_most("big", 1024).await.unwrap(), Bounded::TooLarge { bytes: 300_000 });
    // A server that states no length (chunked) is read only up to the limit.
    let endless = "y".repeat(300_000);
    let (_, bucket) = fake_s3(&[Fault::Body(endless)]).await;
    assert!(matches!(bucket.get_at_most("any", 1024).await.unwrap(), Bounded::TooLarge { .. }));
}

#[tokio::test]
async fn hostile_listings_are_errors_not_loops() {
    let cases = [
        ("not XML", "<<<"),
        ("another document", "<Error><Code>x</Code></Error>"),
        ("truncated without a token", "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>"),
        (
            "a size that is not a number",
            "<ListBucketResult><Contents><Key>k</Key><Size>-1x</Size></Contents></ListBucketResult>",
        ),
        ("an object without a key", "<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>"),
    ];
    for (what, body) in cases {
        let (_, bucket) = fake_s3(&[Fault::Body(body.into())]).await;
        let err = bucket.list("docs/", 10).await.expect_err(what);
        assert!(err.to_string().contains("UnreadableAnswer"), "{what}: {err}");
    }
    // A listing that hands back the token it was given would never end.
    let same = "<ListBucketResult><Contents><Key>a</Key><Size>1</Size></Contents>\
                <IsTruncated>true</IsTruncated><NextContinuationToken>t</NextContinuationToken></ListBucketResult>";
    let (fake, bucket) = fake_s3(&[Fault::Body(same.into()), Fault::Body(same.into()), Fault::Body(same.into())]).await;
    let err = bucket.list("docs/", 10).await.unwrap_err();
    assert!(err.to_string().contains("repeats"), "{err}");
    assert_eq!(received(&fake).len(), 2);
}

#[test]
fn the_endpoint_is_s3s_variable_then_the_override_then_the_region_and_the_key_is_encoded_once() {
    let signer = |region: &str| Signer::with_credentials(Credentials::new("a", "b", None, None, "t"), region);
    let url = |region: &str, bucket: &str, env: &dyn Fn(&str) -> Option<String>| {
        S3Artifacts::with_env(reqwest::Client::new(), signer(region), bucket, env).url("docs/a b+c$.txt")
    };
    let none = |_: &str| None;
    assert_eq!(
        url("eu-west-1", "artifacts-1", &none),
        "https://artifacts-1.s3.eu-west-1.amazonaws.com/docs/a%20b%2Bc%24.txt"
    );
    assert_eq!(
        url("eu-west-1", "my.bucket", &none),
        "https://s3.eu-west-1.amazonaws.com/my.bucket/docs/a%20b%2Bc%24.txt"
    );
    assert_eq!(url("cn-north-1", "b-1", &none), "https://b-1.s3.cn-north-1.amazonaws.com.cn/docs/a%20b%2Bc%24.txt");
    let general = |n: &str| (n == "AWS_ENDPOINT_URL").then(|| "http://127.0.0.1:5000/".to_owned());
    assert_eq!(url("eu-west-1", "b-1", &general), "http://127.0.0.1:5000/b-1/docs/a%20b%2Bc%24.txt");
    let both = |n: &str| Some(if n == "AWS_ENDPOINT_URL_S3" { "http://s3-only" } else { "http://general" }.to_owned());
    assert_eq!(url("eu-west-1", "b-1", &both), "http://s3-only/b-1/docs/a%20b%2Bc%24.txt");
    let overridden = signer("eu-west-1").with_endpoint_url("http://proxy:1");
    assert_eq!(S3Artifacts::with_env(reqwest::Client::new(), overridden, "b-1", &none).url(""), "http://proxy:1/b-1/");
}

#[test]
fn s3s_own_listing_reads_with_its_entities() {
    let xml = br#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>docs/</Prefix>
<KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>
<Contents><Key>docs/a&amp;b.md</Key><LastModified>2026-11-28T10:00:00.000Z</LastModified><ETag>&quot;x&quot;</ETag><ChecksumAlgorithm>CRC32</ChecksumAlgorithm><ChecksumType>FULL_OBJECT</ChecksumType><Size>12</Size><StorageClass>STANDARD</StorageClass></Contents>
<Contents><Key>docs/c.md</Key><Size>0</Size></Contents>
<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken></ListBucketResult>"#;
    let page = ListPage::parse(xml).unwrap();
    assert_eq!(page.objects, [("docs/a&b.md".to_owned(), 12), ("docs/c.md".to_owned(), 0)]);
    assert_eq!(page.next.as_deref(), Some("1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM="));
}

#[tokio::test]
async fn a_key_a_url_would_resolve_to_another_is_refused_before_any_request() {
    // GIVEN a bucket holding the configuration
    let (fake, bucket) = fake_s3(&[]).await;
    bucket.put("config/assistant.json", b"{}".to_vec(), "application/json").await.unwrap();
    let before = received(&fake).len();
    // WHEN a key climbs out of its prefix, or holds a `.` segment
    for key in
        ["docs/../config/assistant.json", "docs/./runbook.md", "..", "turns/T1/files/../../config/assistant.json"]
    {
        let read = bucket.get(key).await.expect_err(key);
        assert!(read.to_string().contains("InvalidKey"), "{key}: {read}");
        let written = bucket.put(key, b"x".to_vec(), "text/plain").await.expect_err(key);
        assert!(written.to_string().contains("InvalidKey"), "{key}: {written}");
    }
    // THEN nothing was sent, and the configuration is untouched
    assert_eq!(received(&fake).len(), before);
    assert_eq!(fake.objects.lock().unwrap()["config/assistant.json"].0, b"{}");
    // AND a URL would indeed have sent another key: what the refusal prevents
    let resolved = reqwest::Url::parse(&bucket.url("docs/../config/assistant.json")).unwrap();
    assert!(resolved.path().ends_with("/artifacts/config/assistant.json"), "{resolved}");
}
