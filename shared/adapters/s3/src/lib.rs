//! The artifact bucket (S3) as the [`ArtifactStore`] port: large tool
//! results, and configuration such as the system prompt.
//!
//! Three operations (`PutObject`, `GetObject`, `ListObjectsV2`) signed by
//! hand on the process's HTTP client with the process's one signer
//! (`adapters-sigv4`, S3's conventions): the SDK's S3 client brought its own
//! checksum stack, endpoint rules and models into the worker, which must
//! stay small and start fast (the benchmark's size and first-invoke rows).
//!
//! What S3 expects, kept here: every request carries its payload's SHA-256
//! (`x-amz-content-sha256`, which S3 checks against the body, so a body
//! damaged on the way is refused), the key is encoded once and signed as
//! sent, objects are written encrypted (`x-amz-server-side-encryption`).
//!
//! Retries: each operation is safe to repeat (a `PutObject` whose answer
//! was lost writes the same bytes to the same key again), so throttling
//! (`503 SlowDown`), a 5xx, a reset or a timeout is tried again, within
//! [`adapters_sigv4::BACKOFF`]. Answers are read up to a byte limit, an
//! object's body up to what the caller asked for, never whole whatever
//! their size.

use adapters_sigv4::{AwsError, BACKOFF, DEFAULT_MAX_ANSWER_BYTES, Signer, read_at_most};
use assistant_core::ports::{ArtifactStore, Bounded, PortError};
use assistant_core::retry::{Failed, Verdict, retry};
use async_trait::async_trait;
use aws_smithy_xml::decode::{Document, ScopedDecoder, XmlDecodeError, try_data};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::header::CONTENT_LENGTH;
use reqwest::{Method, StatusCode};
use std::time::Duration;
use tracing::warn;

/// Each attempt's time limit: an artifact is at most a few megabytes.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of an answer that is not an object read at most.
const ANSWER_BYTES: u64 = DEFAULT_MAX_ANSWER_BYTES as u64;
const LIST: &str = "S3 ListObjectsV2";

/// AWS's URI encoding of a value: all but `A-Z a-z 0-9 - _ . ~`.
const VALUE: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');
/// A key in the path: the same, `/` kept (S3 signs the path as sent).
const KEY: &AsciiSet = &VALUE.remove(b'/');

/// The artifact bucket, on the process's HTTP client.
#[derive(Debug, Clone)]
pub struct S3Artifacts {
    http: reqwest::Client,
    signer: Signer,
    /// The bucket's URL, without a trailing `/`: an object is `{base}/{key}`.
    base: String,
}

impl S3Artifacts {
    /// `bucket` at the endpoint the SDK's conventions name: the
    /// `AWS_ENDPOINT_URL_S3` variable, the configuration's endpoint
    /// override, `AWS_ENDPOINT_URL`, else S3's regional endpoint.
    pub fn new(http: reqwest::Client, signer: Signer, bucket: impl Into<String>) -> Self {
        Self::with_env(http, signer, bucket, &|name| std::env::var(name).ok())
    }

    /// As [`S3Artifacts::new`], with the environment given (tests).
    pub fn with_env(
        http: reqwest::Client,
        signer: Signer,
        bucket: impl Into<String>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Self {
        let bucket = bucket.into();
        let set = |name: &str| env(name).filter(|url| !url.is_empty());
        let base = match set("AWS_ENDPOINT_URL_S3")
            .or_else(|| signer.endpoint_url().map(str::to_owned))
            .or_else(|| set("AWS_ENDPOINT_URL"))
        {
            // An endpoint override (a local emulator, a proxy): path-style,
            // as `bucket.localhost` does not resolve.
            Some(endpoint) => format!("{}/{bucket}", endpoint.trim_end_matches('/')),
            None => {
                let region = signer.region().unwrap_or("us-east-1");
                let suffix = if region.starts_with("cn-") { "amazonaws.com.cn" } else { "amazonaws.com" };
                if is_dns_compatible(&bucket) {
                    format!("https://{bucket}.s3.{region}.{suffix}")
                } else {
                    // A name with dots would not match S3's wildcard certificate.
                    format!("https://s3.{region}.{suffix}/{bucket}")
                }
            }
        };
        Self { http, signer, base }
    }

    /// The URL of the bucket (and, with a key, of an object).
    pub fn url(&self, key: &str) -> String {
        format!("{}/{}", self.base, utf8_percent_encode(key, KEY))
    }

    /// An object's URL, for a key whose path a URL keeps as it is: a URL
    /// resolves `.` and `..` segments (`docs/../config/assistant.json` is
    /// sent as `config/assistant.json`), so a key holding one is refused,
    /// never sent as another key. The tools refuse them first; this holds
    /// for every caller.
    fn object_url(&self, operation: &str, key: &str) -> Result<String, AwsError> {
        if key.split('/').any(|segment| segment == "." || segment == "..") {
            return Err(AwsError {
                operation: operation.to_owned(),
                status: None,
                kind: "InvalidKey".into(),
                message: format!("{key:?} has a `.` or `..` segment, which a URL would resolve to another key"),
            });
        }
        Ok(self.url(key))
    }

    /// Health: the bucket answers a listing under `prefix`, the one listing
    /// the worker may make (its role may list nothing else, so `HeadBucket`
    /// would be refused).
    pub async fn check(&self, prefix: &str) -> Result<(), String> {
        self.list_page(prefix, None, 1).await.map(|_| ()).map_err(|err| err.to_string())
    }

    /// Creates the bucket (tests and local runs against a local emulator;
    /// production's comes from `template.yaml`).
    pub async fn create_bucket(&self) -> Result<(), PortError> {
        let region = self.signer.region().unwrap_or("us-east-1");
        // Outside us-east-1, S3 wants the region named in the body.
        let body = (region != "us-east-1").then(|| {
            format!(
                "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
                 <LocationConstraint>{region}</LocationConstraint></CreateBucketConfiguration>"
            )
            .into_bytes()
        });
        const OPERATION: &str = "S3 CreateBucket";
        let request =
            Request { method: Method::PUT, url: self.base.clone(), headers: vec![], body: body.unwrap_or_default() };
        self.send(OPERATION, &request, ANSWER_BYTES).await.map_err(|err| port_error(OPERATION, err))?;
        Ok(())
    }

    async fn list_page(&self, prefix: &str, token: Option<&str>, max_keys: usize) -> Result<ListPage, AwsError> {
        const OPERATION: &str = LIST;
        let mut query = format!("list-type=2&max-keys={max_keys}&prefix={}", utf8_percent_encode(prefix, VALUE));
        if let Some(token) = token {
            query.push_str(&format!("&continuation-token={}", utf8_percent_encode(token, VALUE)));
        }
        let request = Request::get(format!("{}/?{query}", self.base));
        match self.send(OPERATION, &request, ANSWER_BYTES).await? {
            Answer::Body(bytes) => ListPage::parse(&bytes).map_err(|err| unreadable(OPERATION, &err.to_string())),
            Answer::Missing => Err(unreadable(OPERATION, "a listing answered NoSuchKey")),
            Answer::TooLarge { bytes } => Err(unreadable(OPERATION, &format!("a page of {bytes} bytes, not read"))),
        }
    }

    /// One operation, tried again while S3 may still do it.
    async fn send(&self, operation: &'static str, request: &Request, max: u64) -> Result<Answer, AwsError> {
        let again = |failed: Failed<'_, Failure>| match failed.error {
            Failure::Again(error) => {
                warn!(operation, attempt = failed.attempt, %error, "S3 call failed: retrying");
                Verdict::Retry
            }
            Failure::Final(_) => Verdict::Stop,
        };
        retry(&BACKOFF, |_| self.attempt(operation, request, max), again).await.map_err(Failure::into_error)
    }

    async fn attempt(&self, operation: &'static str, request: &Request, max: u64) -> Result<Answer, Failure> {
        let error = |status: Option<StatusCode>, kind: &str, message: String| AwsError {
            operation: operation.to_owned(),
            status: status.map(|status| status.as_u16()),
            kind: kind.to_owned(),
            message,
        };
        let mut builder =
            self.http.request(request.method.clone(), &request.url).timeout(ATTEMPT_TIMEOUT).body(request.body.clone());
        for (name, value) in &request.headers {
            builder = builder.header(*name, value);
        }
        let mut built = builder.build().map_err(|err| Failure::Final(error(None, "ClientError", err.to_string())))?;
        self.signer
            .sign_s3(&mut built)
            .await
            .map_err(|err| Failure::Final(error(None, "ClientError", err.to_string())))?;
        let transport = |err: reqwest::Error| Failure::Again(error(None, "unreachable", err.to_string()));
        let mut response = self.http.execute(built).await.map_err(transport)?;
        let status = response.status();
        if !status.is_success() {
            // An error's body is S3's XML `<Error>`, small; a large one is not read.
            let body = read_at_most(&mut response, 64 * 1024).await.map_err(transport)?.unwrap_or_default();
            let (kind, message) = error_of(&body);
            let kind = kind.unwrap_or_else(|| status.canonical_reason().unwrap_or("UnknownError").replace(' ', ""));
            let failed = error(Some(status), &kind, message);
            return match (status, kind.as_str()) {
                (StatusCode::NOT_FOUND, "NoSuchKey") => Ok(Answer::Missing),
                // Throttled, or a request S3 gave up reading: nothing was done.
                (_, "SlowDown" | "RequestTimeout") | (StatusCode::TOO_MANY_REQUESTS, _) => Err(Failure::Again(failed)),
                (status, _) if status.is_server_error() => Err(Failure::Again(failed)),
                _ => Err(Failure::Final(failed)),
            };
        }
        // The length S3 states decides before the body is read.
        let stated = response.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if let Some(bytes) = stated.filter(|length| *length > max) {
            return Ok(Answer::TooLarge { bytes });
        }
        match read_at_most(&mut response, max).await.map_err(transport)? {
            Some(bytes) => Ok(Answer::Body(bytes)),
            None => Ok(Answer::TooLarge { bytes: stated.unwrap_or(max.saturating_add(1)) }),
        }
    }
}

#[async_trait]
impl ArtifactStore for S3Artifacts {
    async fn put(&self, key: &str, body: Vec<u8>, content_type: &'static str) -> Result<(), PortError> {
        const OPERATION: &str = "S3 PutObject (artifact)";
        let url = self.object_url(OPERATION, key).map_err(|err| port_error(OPERATION, err))?;
        let request = Request {
            method: Method::PUT,
            url,
            headers: vec![("content-type", content_type.to_owned()), ("x-amz-server-side-encryption", "AES256".into())],
            body,
        };
        self.send(OPERATION, &request, ANSWER_BYTES).await.map_err(|err| port_error(OPERATION, err))?;
        Ok(())
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, PortError> {
        Ok(match self.get_at_most(key, u64::MAX).await? {
            Bounded::Found(bytes) => Some(bytes),
            Bounded::Absent => None,
            Bounded::TooLarge { .. } => unreachable!("no object is over u64::MAX bytes"),
        })
    }

    /// The response's length decides before the body is read: a huge
    /// object is never held in memory.
    async fn get_at_most(&self, key: &str, max: u64) -> Result<Bounded, PortError> {
        const OPERATION: &str = "S3 GetObject (artifact)";
        let url = self.object_url(OPERATION, key).map_err(|err| port_error(OPERATION, err))?;
        Ok(match self.send(OPERATION, &Request::get(url), max).await {
            Ok(Answer::Body(bytes)) => Bounded::Found(bytes),
            Ok(Answer::Missing) => Bounded::Absent,
            Ok(Answer::TooLarge { bytes }) => Bounded::TooLarge { bytes },
            Err(err) => return Err(port_error(OPERATION, err)),
        })
    }

    async fn list(&self, prefix: &str, max: usize) -> Result<Vec<(String, u64)>, PortError> {
        let mut found = Vec::new();
        let mut token = None;
        loop {
            let page = self.list_page(prefix, token.as_deref(), 1000).await.map_err(|err| port_error(LIST, err))?;
            found.extend(page.objects);
            if page.next.is_some() && page.next == token {
                let repeated = unreadable(LIST, "the listing repeats its continuation token");
                return Err(port_error(LIST, repeated));
            }
            token = page.next;
            if found.len() >= max || token.is_none() {
                found.truncate(max);
                return Ok(found);
            }
        }
    }
}

/// A request, kept to be signed again for each attempt.
struct Request {
    method: Method,
    url: String,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

impl Request {
    fn get(url: String) -> Self {
        Self { method: Method::GET, url, headers: vec![], body: vec![] }
    }
}

/// What a successful attempt brought back.
enum Answer {
    Body(Vec<u8>),
    /// `404 NoSuchKey`.
    Missing,
    /// A body larger than asked for (its size, when stated), unread.
    TooLarge {
        bytes: u64,
    },
}

enum Failure {
    /// S3 may do it if asked again (throttled, 5xx, reset, timeout).
    Again(AwsError),
    Final(AwsError),
}

impl Failure {
    fn into_error(self) -> AwsError {
        match self {
            Failure::Again(error) | Failure::Final(error) => error,
        }
    }
}

/// One page of `ListObjectsV2`: keys and sizes, and the next page's token.
#[derive(Debug, PartialEq)]
struct ListPage {
    objects: Vec<(String, u64)>,
    next: Option<String>,
}

impl ListPage {
    fn parse(body: &[u8]) -> Result<Self, XmlDecodeError> {
        let mut document = Document::try_from(body)?;
        let mut root = document.root_element()?;
        if !root.start_el().matches("ListBucketResult") {
            return Err(XmlDecodeError::custom("not a ListBucketResult"));
        }
        let mut page = ListPage { objects: vec![], next: None };
        let mut truncated = false;
        while let Some(mut element) = root.next_tag() {
            if element.start_el().matches("Contents") {
                page.objects.push(object(&mut element)?);
            } else if element.start_el().matches("NextContinuationToken") {
                page.next = Some(try_data(&mut element)?.into_owned());
            } else if element.start_el().matches("IsTruncated") {
                truncated = try_data(&mut element)? == "true";
            }
        }
        if truncated && page.next.is_none() {
            return Err(XmlDecodeError::custom("a truncated listing without a continuation token"));
        }
        if !truncated {
            page.next = None;
        }
        Ok(page)
    }
}

/// A `<Contents>` element's key and size.
fn object(element: &mut ScopedDecoder<'_, '_>) -> Result<(String, u64), XmlDecodeError> {
    let (mut key, mut size) = (None, 0);
    while let Some(mut field) = element.next_tag() {
        if field.start_el().matches("Key") {
            key = Some(try_data(&mut field)?.into_owned());
        } else if field.start_el().matches("Size") {
            size = try_data(&mut field)?.parse().map_err(|_| XmlDecodeError::custom("a size that is not a number"))?;
        }
    }
    Ok((key.ok_or_else(|| XmlDecodeError::custom("an object without a key"))?, size))
}

/// S3's `<Error><Code>…</Code><Message>…</Message></Error>`: the code (if
/// the body is one) and the message, cut short.
fn error_of(body: &[u8]) -> (Option<String>, String) {
    let read = || -> Result<(Option<String>, String), XmlDecodeError> {
        let mut document = Document::try_from(body)?;
        let mut root = document.root_element()?;
        let (mut code, mut message) = (None, String::new());
        while let Some(mut field) = root.next_tag() {
            if field.start_el().matches("Code") {
                code = Some(try_data(&mut field)?.into_owned());
            } else if field.start_el().matches("Message") {
                message = try_data(&mut field)?.chars().take(300).collect();
            }
        }
        Ok((code, message))
    };
    read().unwrap_or_default()
}

/// Whether `bucket` can be the first label of a host name under TLS.
fn is_dns_compatible(bucket: &str) -> bool {
    (3..=63).contains(&bucket.len())
        && bucket.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !bucket.starts_with('-')
        && !bucket.ends_with('-')
}

fn unreadable(operation: &str, why: &str) -> AwsError {
    AwsError { operation: operation.to_owned(), status: None, kind: "UnreadableAnswer".into(), message: why.to_owned() }
}

fn port_error(operation: &'static str, err: AwsError) -> PortError {
    PortError::new(operation, err.to_string()).with_source(err)
}

#[cfg(test)]
mod tests;
