//! An AWS Signature Version 4 check written from AWS's specification
//! ("Create a signed AWS API request"), independent of the `aws-sigv4`
//! crate the functions sign with: a test server recomputes the signature
//! of the request it received, as API Gateway or a Lambda function URL
//! would, and refuses any mismatch. For service `s3`, S3's rules: the path
//! signed as sent (not encoded again), and `x-amz-content-sha256` required
//! and checked against the body.

use hmac::{KeyInit, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = hmac::Hmac<Sha256>;

/// What a verified request was signed as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    pub access_key: String,
    pub region: String,
    pub service: String,
    pub signed_headers: Vec<String>,
}

/// Checks `authorization` against the request as received: `method`,
/// `path` (as sent, percent-encoded), `query` (raw, without `?`),
/// `headers` (lower-case names) and `body`, for the secret key
/// `secret_key`. The error says what does not match.
pub fn verify(
    method: &str,
    path: &str,
    query: &str,
    headers: &[(String, String)],
    body: &[u8],
    secret_key: &str,
) -> Result<Signed, String> {
    let header = |name: &str| headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str());
    let authorization = header("authorization").ok_or("no authorization header")?;
    let rest = authorization.strip_prefix("AWS4-HMAC-SHA256 ").ok_or("not AWS4-HMAC-SHA256")?;
    let mut credential = None;
    let mut signed_headers = None;
    let mut signature = None;
    for part in rest.split(", ") {
        match part.split_once('=') {
            Some(("Credential", value)) => credential = Some(value),
            Some(("SignedHeaders", value)) => signed_headers = Some(value),
            Some(("Signature", value)) => signature = Some(value),
            _ => return Err(format!("unexpected authorization part {part:?}")),
        }
    }
    let (credential, signed_headers, signature) = (
        credential.ok_or("no Credential")?,
        signed_headers.ok_or("no SignedHeaders")?,
        signature.ok_or("no Signature")?,
    );
    let scope: Vec<&str> = credential.split('/').collect();
    let [access_key, date, region, service, "aws4_request"] = scope[..] else {
        return Err(format!("credential scope {credential:?}"));
    };
    let amz_date = header("x-amz-date").ok_or("no x-amz-date")?;
    if !amz_date.starts_with(date) {
        return Err("x-amz-date is not the scope's date".into());
    }
    let names: Vec<&str> = signed_headers.split(';').collect();
    for required in ["host", "x-amz-date"] {
        if !names.contains(&required) {
            return Err(format!("{required} is not signed"));
        }
    }
    let mut canonical_headers = String::new();
    for name in &names {
        let values: Vec<String> = headers
            .iter()
            .filter(|(key, _)| key == name)
            .map(|(_, value)| value.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        if values.is_empty() {
            return Err(format!("signed header {name} was not received"));
        }
        canonical_headers.push_str(&format!("{name}:{}\n", values.join(",")));
    }
    let body_hash = hex::encode(Sha256::digest(body));
    let payload_hash = match header("x-amz-content-sha256") {
        Some("UNSIGNED-PAYLOAD") => "UNSIGNED-PAYLOAD".to_owned(),
        // S3 checks the hash it was told against the body it received.
        Some(told) if service == "s3" && told != body_hash => {
            return Err("XAmzContentSHA256Mismatch: x-amz-content-sha256 is not the body's hash".into());
        }
        _ => body_hash,
    };
    let canonical_path = if service == "s3" {
        // S3 requires the payload's hash, and signs the path as sent.
        if header("x-amz-content-sha256").is_none() {
            return Err("S3: missing required header x-amz-content-sha256".into());
        }
        if path.is_empty() { "/".to_owned() } else { path.to_owned() }
    } else {
        canonical_path(path)
    };
    let canonical_query = canonical_query(query);
    let canonical_request =
        format!("{method}\n{canonical_path}\n{canonical_query}\n{canonical_headers}\n{signed_headers}\n{payload_hash}");
    let scope = format!("{date}/{region}/{service}/aws4_request");
    let string_to_sign =
        format!("AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}", hex::encode(Sha256::digest(canonical_request.as_bytes())));
    let mut key = hmac(format!("AWS4{secret_key}").as_bytes(), date.as_bytes());
    for part in [region, service, "aws4_request"] {
        key = hmac(&key, part.as_bytes());
    }
    let expected = hex::encode(hmac(&key, string_to_sign.as_bytes()));
    if expected != signature {
        return Err(format!("signature mismatch; canonical request:\n{canonical_request}"));
    }
    Ok(Signed {
        access_key: access_key.to_owned(),
        region: region.to_owned(),
        service: service.to_owned(),
        signed_headers: names.iter().map(|name| name.to_string()).collect(),
    })
}

/// [`verify`] for a request a test server received (`http` types, as axum
/// hands them over).
pub fn verify_received(parts: &http::request::Parts, body: &[u8], secret_key: &str) -> Result<Signed, String> {
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(name, value)| (name.as_str().to_owned(), value.to_str().unwrap_or_default().to_owned()))
        .collect();
    verify(parts.method.as_str(), parts.uri.path(), parts.uri.query().unwrap_or_default(), &headers, body, secret_key)
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = HmacSha256::new_from_slice(key).expect("any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// Every service but S3 encodes the (already encoded) path a second time.
fn canonical_path(path: &str) -> String {
    if path.is_empty() {
        return "/".into();
    }
    path.split('/').map(uri_encode).collect::<Vec<_>>().join("/")
}

fn canonical_query(query: &str) -> String {
    let mut pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |s: &str| percent_decode(&s.replace('+', " "));
            (uri_encode(&decode(name)), uri_encode(&decode(value)))
        })
        .collect();
    pairs.sort();
    pairs.iter().map(|(name, value)| format!("{name}={value}")).collect::<Vec<_>>().join("&")
}

/// AWS's URI encoding: everything but `A-Z a-z 0-9 - _ . ~` as `%XX`.
fn uri_encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (byte as char).to_string(),
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(byte) = u8::from_str_radix(&text[i + 1..i + 3], 16)
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// "Example: PUT Object" of the Amazon S3 API Reference's SigV4 header
    /// examples, as AWS published it.
    fn published_put() -> Vec<(String, String)> {
        [
            ("host", "examplebucket.s3.amazonaws.com"),
            ("date", "Fri, 24 May 2013 00:00:00 GMT"),
            ("x-amz-date", "20130524T000000Z"),
            ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
            ("x-amz-content-sha256", "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"),
            (
                "authorization",
                "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
                 SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, \
                 Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
            ),
        ]
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
    }

    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

    #[test]
    fn s3s_published_example_verifies_and_its_rules_hold() {
        let headers = published_put();
        let body = b"Welcome to Amazon S3.";
        let signed = verify("PUT", "/test%24file.text", "", &headers, body, SECRET).expect("AWS's own example");
        assert_eq!(signed.service, "s3");
        // Another body than the hash S3 was told.
        let err = verify("PUT", "/test%24file.text", "", &headers, b"Welcome to Amazon S4.", SECRET).unwrap_err();
        assert!(err.starts_with("XAmzContentSHA256Mismatch"), "{err}");
        // No payload hash at all.
        let without: Vec<_> = headers.iter().filter(|(name, _)| name != "x-amz-content-sha256").cloned().collect();
        assert!(verify("PUT", "/test%24file.text", "", &without, body, SECRET).is_err());
        // The path as S3 sees it is not encoded again: the raw `$` is another path.
        assert!(verify("PUT", "/test$file.text", "", &headers, body, SECRET).is_err());
    }
}
