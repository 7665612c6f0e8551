//! Alerts from Alertmanager and PagerDuty: verified before anything else,
//! as Slack's requests are, then read ([`assistant_core::incidents::sources`])
//! and put on the work queue, one message per alert, for the worker's
//! incident desk.
//!
//! - `POST /alerts/alertmanager`: `Authorization: Bearer <token>`, the
//!   token the receiver's `http_config.authorization.credentials` names
//!   (`ALERTMANAGER_TOKEN`, from Secrets Manager), compared in constant time.
//! - `POST /alerts/pagerduty`: `X-PagerDuty-Signature: v1=<hex>` (several
//!   while a secret rotates), HMAC-SHA256 of the raw body under the
//!   subscription's signing secret (`PAGERDUTY_WEBHOOK_SECRET`). PagerDuty
//!   signs no timestamp, so an event that happened more than an hour ago
//!   is refused: a replayed body opens nothing.
//!
//! A route whose secret is not configured is a 404; a bad credential a 401
//! with nothing written; a body that does not read a 400 (the sender would
//! fail the same way again); a failed enqueue a 500, which both senders
//! retry. The FIFO deduplication id of each alert makes a retried webhook
//! one message; the worker's incident record makes any redelivery one
//! change.

use crate::service::{Counted, Reply};
use assistant_core::incidents::{AlertNotice, sources};
use assistant_core::ports::WorkQueue;
use assistant_core::{Clock, WorkMessage};
use hmac::{KeyInit, Mac};
use http::HeaderMap;
use sha2::Sha256;
use std::fmt;
use std::sync::Arc;
use tracing::{info, warn};

pub const ALERTMANAGER_PATH: &str = "/alerts/alertmanager";
pub const PAGERDUTY_PATH: &str = "/alerts/pagerduty";
const PAGERDUTY_SIGNATURE_HEADER: &str = "x-pagerduty-signature";
/// How old a PagerDuty event may be (its deliveries are retried for a
/// while; a replay of an old one is refused).
pub const PAGERDUTY_MAX_AGE_SECS: i64 = 3600;

type HmacSha256 = hmac::Hmac<Sha256>;

/// A webhook's shared secret (a bearer token or a signing key). `Debug`
/// prints no secret.
#[derive(Clone)]
pub struct WebhookSecret(Vec<u8>);

impl WebhookSecret {
    /// `None` for an empty value: an empty secret would let anyone in.
    pub fn new(value: impl Into<String>) -> Option<Self> {
        let value = value.into();
        (!value.trim().is_empty()).then(|| Self(value.trim().as_bytes().to_vec()))
    }

    fn mac(&self, message: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC accepts keys of any length");
        mac.update(message);
        mac
    }

    /// Whether `presented` is this token, in time that does not depend on
    /// where they differ: both keyed MACs of one message, compared by
    /// `verify_slice` (constant time).
    fn is(&self, presented: &[u8]) -> bool {
        let presented = HmacSha256::new_from_slice(presented)
            .expect("HMAC accepts keys of any length")
            .chain_update(b"bearer")
            .finalize()
            .into_bytes();
        self.mac(b"bearer").verify_slice(&presented).is_ok()
    }

    /// Whether one of the header's `v1=` signatures is this key's over
    /// `body`.
    fn signed(&self, header: &[u8], body: &[u8]) -> bool {
        let Ok(header) = std::str::from_utf8(header) else { return false };
        header.split(',').filter_map(|part| part.trim().strip_prefix("v1=")).any(|hex_signature| {
            hex::decode(hex_signature).is_ok_and(|signature| self.mac(body).verify_slice(&signature).is_ok())
        })
    }

    /// The header PagerDuty would send (tests, the local runner).
    pub fn pagerduty_signature(&self, body: &[u8]) -> String {
        format!("v1={}", hex::encode(self.mac(body).finalize().into_bytes()))
    }
}

impl fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WebhookSecret(..)")
    }
}

/// The largest alert webhook taken (Alertmanager's notifications carry
/// every alert of a group).
pub const BODY_LIMIT: usize = 512 * 1024;

/// An HTTP request to an alert route, as the Lambda event gives it.
#[derive(Debug, Clone, Copy)]
pub struct AlertRequest<'a> {
    pub method: &'a http::Method,
    pub path: &'a str,
    pub headers: &'a HeaderMap,
    /// Possibly base64-encoded (`is_base64_encoded`).
    pub body: Option<&'a str>,
    pub is_base64_encoded: bool,
}

/// The two alert routes and what they need.
pub struct AlertWebhooks {
    alertmanager: Option<WebhookSecret>,
    pagerduty: Option<WebhookSecret>,
    queue: Arc<dyn WorkQueue>,
    clock: Arc<dyn Clock>,
}

impl AlertWebhooks {
    pub fn new(
        alertmanager: Option<WebhookSecret>,
        pagerduty: Option<WebhookSecret>,
        queue: Arc<dyn WorkQueue>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self { alertmanager, pagerduty, queue, clock }
    }

    /// Whether `path` is an alert route (the caller hands the request here).
    pub fn serves(path: &str) -> bool {
        matches!(path, ALERTMANAGER_PATH | PAGERDUTY_PATH)
    }

    /// A request to an alert route: only a POST, its body at most
    /// [`BODY_LIMIT`] and decoded before anything else.
    pub async fn handle_http(&self, request: AlertRequest<'_>) -> Reply {
        if request.method != http::Method::POST {
            return reply(405, "method_not_allowed");
        }
        match crate::http_body::raw_body(request.body, request.is_base64_encoded, BODY_LIMIT) {
            Ok(body) => self.handle(request.path, request.headers, &body).await,
            Err(err) => {
                warn!(error = %err, "refused alert body");
                match err {
                    crate::http_body::BodyError::TooLarge(..) => reply(413, "payload_too_large"),
                    crate::http_body::BodyError::NotBase64 => reply(400, "malformed_body"),
                }
            }
        }
    }

    /// One POST to an alert route: the raw body, as received.
    pub async fn handle(&self, path: &str, headers: &HeaderMap, body: &[u8]) -> Reply {
        let notices = match path {
            ALERTMANAGER_PATH => self.alertmanager(headers, body),
            PAGERDUTY_PATH => self.pagerduty(headers, body),
            _ => Err(reply(404, "not_found")),
        };
        let notices = match notices {
            Ok(notices) => notices,
            Err(reply) => return reply,
        };
        for notice in &notices {
            if let Err(err) = self.queue.enqueue(&WorkMessage::Alert(notice.clone())).await {
                warn!(error = %err, source = %notice.source, "alert not enqueued: the sender will retry");
                return reply(500, "enqueue_failed");
            }
        }
        info!(path, alerts = notices.len(), "alerts enqueued");
        let counted = if notices.is_empty() { Counted::Other } else { Counted::Accepted };
        Reply { counted, ..reply(200, "") }
    }

    fn alertmanager(&self, headers: &HeaderMap, body: &[u8]) -> Result<Vec<AlertNotice>, Reply> {
        let Some(token) = &self.alertmanager else { return Err(reply(404, "not_found")) };
        let presented = headers
            .get(http::header::AUTHORIZATION)
            .and_then(|value| value.as_bytes().strip_prefix(b"Bearer "))
            .map(<[u8]>::trim_ascii);
        if !presented.is_some_and(|presented| token.is(presented)) {
            warn!("refused Alertmanager webhook: missing or wrong bearer token");
            return Err(reply(401, "invalid_token"));
        }
        sources::alertmanager(body, self.clock.now_unix()).map_err(|err| {
            warn!(error = %err, "refused Alertmanager webhook");
            reply(400, "malformed_payload")
        })
    }

    fn pagerduty(&self, headers: &HeaderMap, body: &[u8]) -> Result<Vec<AlertNotice>, Reply> {
        let Some(key) = &self.pagerduty else { return Err(reply(404, "not_found")) };
        let signature = headers.get(PAGERDUTY_SIGNATURE_HEADER).map(|value| value.as_bytes());
        if !signature.is_some_and(|signature| key.signed(signature, body)) {
            warn!("refused PagerDuty webhook: missing or wrong signature");
            return Err(reply(401, "invalid_signature"));
        }
        match sources::pagerduty(body) {
            Ok(Some(notice)) if self.clock.now_unix() - notice.at > PAGERDUTY_MAX_AGE_SECS => {
                warn!(delivery = %notice.delivery, at = notice.at, "refused PagerDuty event: over an hour old (a replay?)");
                Err(reply(400, "stale_event"))
            }
            Ok(notice) => Ok(notice.into_iter().collect()),
            Err(err) => {
                warn!(error = %err, "refused PagerDuty webhook");
                Err(reply(400, "malformed_payload"))
            }
        }
    }
}

/// A JSON reply: `{"error": code}`, or `{"ok": true}` for a 200.
fn reply(status: u16, code: &str) -> Reply {
    let json = if status == 200 { serde_json::json!({"ok": true}) } else { serde_json::json!({"error": code}) };
    let counted = if (400..500).contains(&status) { Counted::Rejected } else { Counted::Other };
    Reply { status, json: Some(json.to_string()), no_retry: false, counted }
}

#[cfg(test)]
mod tests;
