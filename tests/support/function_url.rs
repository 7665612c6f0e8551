//! The ingress behind a Lambda function URL on a loopback port, for a
//! browser: each request becomes the payload-2.0 event the function URL
//! sends (the captured Slack event's shape with this request's method,
//! path, query, headers and body), handled by the ingress's own `handle`,
//! and its response written back. Cookies travel as a function URL carries
//! them: the request's `Cookie` header becomes the event's `cookies` (and
//! leaves the headers), the response's `cookies` become `Set-Cookie` headers.

use crate::local_server::LocalServer;
use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::sync::Arc;

/// Every request answered, as `path?query`, in order (all servers of the
/// test process): a test waits on it to know a browser got as far as a
/// page, rather than guessing how long a browser takes to start.
static SERVED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// The requests answered so far (see [`SERVED`]).
pub fn served() -> Vec<String> {
    SERVED.lock().expect("served lock").clone()
}

pub async fn serve(ingress: Arc<ingress::Ingress>) -> LocalServer {
    let app = Router::new().fallback(move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
        let ingress = ingress.clone();
        async move { handle(&ingress, &method, &uri, &headers, &body).await }
    });
    LocalServer::start(app).await
}

async fn handle(ingress: &ingress::Ingress, method: &Method, uri: &Uri, headers: &HeaderMap, body: &Bytes) -> Response {
    let mut event = crate::events::parse(crate::events::APP_MENTION);
    event["rawPath"] = uri.path().into();
    event["rawQueryString"] = uri.query().unwrap_or_default().into();
    event["requestContext"]["http"]["method"] = method.as_str().into();
    event["requestContext"]["http"]["path"] = uri.path().into();
    event["headers"] = headers
        .iter()
        .filter(|(name, _)| *name != axum::http::header::COOKIE)
        .filter_map(|(name, value)| Some((name.as_str().to_owned(), Value::from(value.to_str().ok()?))))
        .collect::<serde_json::Map<_, _>>()
        .into();
    let cookies: Vec<Value> = headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split("; "))
        .map(Value::from)
        .collect();
    if !cookies.is_empty() {
        event["cookies"] = cookies.into();
    }
    event["body"] = String::from_utf8_lossy(body).into_owned().into();
    let answer = ingress.handle(event).await;
    SERVED.lock().expect("served lock").push(format!("{}?{}", uri.path(), uri.query().unwrap_or_default()));
    let answer = match answer {
        Ok(answer) => answer,
        Err(err) => return (StatusCode::BAD_REQUEST, err.to_string()).into_response(),
    };
    let status = answer["statusCode"].as_u64().and_then(|code| StatusCode::from_u16(code as u16).ok());
    let mut response = answer["body"].as_str().unwrap_or_default().to_owned().into_response();
    *response.status_mut() = status.unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in answer["headers"].as_object().into_iter().flatten() {
        if let (Ok(name), Some(Ok(value))) =
            (HeaderName::try_from(name.as_str()), value.as_str().map(HeaderValue::from_str))
        {
            response.headers_mut().insert(name, value);
        }
    }
    for cookie in answer["cookies"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        if let Ok(value) = HeaderValue::from_str(cookie) {
            response.headers_mut().append(axum::http::header::SET_COOKIE, value);
        }
    }
    response
}
