//! The three sources' formats, read into [`AlertNotice`]s. Everything in
//! them came from outside: lengths are bounded, control characters
//! dropped, and what the model later reads of them is marked as data.
//!
//! - Alertmanager's webhook (`"version": "4"`): one notice per alert in
//!   the group; the fingerprint is Alertmanager's. It has no notification
//!   id, so a notification is its alert, state, start and the five-minute
//!   window it arrived in: a sender's quick retry is the same notification,
//!   a `repeat_interval` re-send (hours later) is a re-fire.
//! - PagerDuty's V3 webhook (`{"event": {…}}`): `incident.triggered` and
//!   `incident.reopened` fire, `incident.acknowledged` and
//!   `incident.resolved` as named; the fingerprint is the incident's id, the
//!   delivery the event's id. Other event types are not alerts.
//! - CloudWatch's "CloudWatch Alarm State Change" event, as EventBridge
//!   delivers it: `ALARM` fires, `OK` resolves, `INSUFFICIENT_DATA` is not
//!   an alert; the fingerprint is the alarm's ARN, the delivery the event id.

use super::{AlertNotice, AlertSource, AlertState};
use crate::clock::unix_from_rfc3339;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

const TITLE_CHARS: usize = 200;
const SUMMARY_CHARS: usize = 1_500;
const LABELS: usize = 40;
const LABEL_CHARS: usize = 200;
const ID_CHARS: usize = 512;
/// At most this many alerts of one Alertmanager notification (its
/// `max_alerts` should be lower).
pub const MAX_ALERTS_PER_NOTIFICATION: usize = 100;
/// Alertmanager's notifications within one window are one notification.
const NOTIFICATION_WINDOW_SECS: i64 = 300;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SourceError {
    #[error("not {expected}: {reason}")]
    Malformed { expected: &'static str, reason: String },
    #[error("{0} alerts in one notification, over {MAX_ALERTS_PER_NOTIFICATION} (set max_alerts lower)")]
    TooMany(usize),
}

fn malformed(expected: &'static str, reason: impl Into<String>) -> SourceError {
    SourceError::Malformed { expected, reason: reason.into() }
}

/// At most `max` characters, without control characters (newlines become
/// spaces in titles and labels; summaries keep them).
fn clean(text: &str, max: usize, keep_newlines: bool) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if out.chars().count() >= max {
            out.push('…');
            break;
        }
        match c {
            '\n' if keep_newlines => out.push('\n'),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out.trim().to_owned()
}

fn clean_labels<'a>(pairs: impl IntoIterator<Item = (&'a String, &'a String)>) -> BTreeMap<String, String> {
    pairs
        .into_iter()
        .filter(|(name, _)| !name.is_empty() && name.len() <= 100)
        .take(LABELS)
        .map(|(name, value)| (clean(name, 100, false), clean(value, LABEL_CHARS, false)))
        .collect()
}

fn identifier(text: &str, expected: &'static str, what: &str) -> Result<String, SourceError> {
    let text = text.trim();
    if text.is_empty() || text.len() > ID_CHARS || text.chars().any(char::is_control) {
        return Err(malformed(expected, format!("{what} missing or unusable")));
    }
    Ok(text.to_owned())
}

fn http_url(url: Option<&str>) -> Option<String> {
    let url = url?.trim();
    let parsed = url::Url::parse(url).ok()?;
    (matches!(parsed.scheme(), "https" | "http") && url.len() <= 2_000).then(|| url.to_owned())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AlertmanagerNotification {
    version: String,
    #[serde(default)]
    alerts: Vec<AlertmanagerAlert>,
    #[serde(default, rename = "externalURL")]
    external_url: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AlertmanagerAlert {
    status: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
    starts_at: String,
    #[serde(default)]
    ends_at: Option<String>,
    #[serde(default, rename = "generatorURL")]
    generator_url: Option<String>,
    #[serde(default)]
    fingerprint: Option<String>,
}

/// An Alertmanager notification, received at `received_at` (Unix seconds).
pub fn alertmanager(body: &[u8], received_at: i64) -> Result<Vec<AlertNotice>, SourceError> {
    const EXPECTED: &str = "an Alertmanager webhook (version 4)";
    let notification: AlertmanagerNotification =
        serde_json::from_slice(body).map_err(|err| malformed(EXPECTED, err.to_string()))?;
    if notification.version != "4" {
        return Err(malformed(EXPECTED, format!("version {:?}", notification.version)));
    }
    if notification.alerts.len() > MAX_ALERTS_PER_NOTIFICATION {
        return Err(SourceError::TooMany(notification.alerts.len()));
    }
    let window = received_at.div_euclid(NOTIFICATION_WINDOW_SECS);
    notification
        .alerts
        .iter()
        .map(|alert| {
            let fingerprint = match &alert.fingerprint {
                Some(fingerprint) => identifier(fingerprint, EXPECTED, "fingerprint")?,
                // Older Alertmanagers send none: the labels are the identity.
                None => super::short_hash(
                    &alert.labels.iter().flat_map(|(k, v)| [k.as_str(), v.as_str()]).collect::<Vec<_>>(),
                    16,
                ),
            };
            let starts_at = unix_from_rfc3339(&alert.starts_at)
                .ok_or_else(|| malformed(EXPECTED, format!("startsAt {:?}", alert.starts_at)))?;
            let state = match alert.status.as_str() {
                "firing" => AlertState::Firing,
                "resolved" => AlertState::Resolved,
                other => return Err(malformed(EXPECTED, format!("status {other:?}"))),
            };
            let at = match state {
                AlertState::Resolved => alert.ends_at.as_deref().and_then(unix_from_rfc3339).unwrap_or(received_at),
                _ => starts_at,
            };
            let name = alert.labels.get("alertname").map_or("alert", String::as_str);
            let title = alert.annotations.get("summary").map_or(name, String::as_str);
            let summary = alert.annotations.get("description").map_or("", String::as_str);
            Ok(AlertNotice {
                source: AlertSource::Alertmanager,
                delivery: format!("{fingerprint}:{starts_at}:{}:{window}", alert.status),
                fingerprint,
                state,
                title: clean(title, TITLE_CHARS, false),
                summary: clean(summary, SUMMARY_CHARS, true),
                labels: clean_labels(&alert.labels),
                url: http_url(alert.generator_url.as_deref())
                    .or_else(|| http_url(notification.external_url.as_deref())),
                at,
            })
        })
        .collect()
}

#[derive(Deserialize)]
struct PagerdutyWebhook {
    event: PagerdutyEvent,
}

#[derive(Deserialize)]
struct PagerdutyEvent {
    id: String,
    event_type: String,
    occurred_at: String,
    #[serde(default)]
    agent: Option<Value>,
    data: PagerdutyIncident,
}

#[derive(Deserialize)]
struct PagerdutyIncident {
    id: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    html_url: Option<String>,
    #[serde(default)]
    service: Option<Value>,
    #[serde(default)]
    urgency: Option<String>,
    #[serde(default)]
    priority: Option<Value>,
    #[serde(default)]
    incident_key: Option<String>,
}

/// A PagerDuty V3 webhook; `None` for an event that is not about an
/// incident firing, acknowledged or resolved.
pub fn pagerduty(body: &[u8]) -> Result<Option<AlertNotice>, SourceError> {
    const EXPECTED: &str = "a PagerDuty V3 webhook";
    let webhook: PagerdutyWebhook = serde_json::from_slice(body).map_err(|err| malformed(EXPECTED, err.to_string()))?;
    let event = webhook.event;
    let summary_of = |value: &Option<Value>| {
        value.as_ref().and_then(|value| value.get("summary")).and_then(Value::as_str).map(str::to_owned)
    };
    let state = match event.event_type.as_str() {
        "incident.triggered" | "incident.reopened" => AlertState::Firing,
        "incident.acknowledged" => {
            AlertState::Acknowledged { by: summary_of(&event.agent).map(|by| clean(&by, 100, false)) }
        }
        "incident.resolved" => AlertState::Resolved,
        _ => return Ok(None),
    };
    let at = unix_from_rfc3339(&event.occurred_at)
        .ok_or_else(|| malformed(EXPECTED, format!("occurred_at {:?}", event.occurred_at)))?;
    let incident = event.data;
    let mut labels = BTreeMap::new();
    for (name, value) in [
        ("service", summary_of(&incident.service)),
        ("urgency", incident.urgency),
        ("priority", summary_of(&incident.priority)),
        ("incident_key", incident.incident_key),
    ] {
        if let Some(value) = value {
            labels.insert(name.to_owned(), clean(&value, LABEL_CHARS, false));
        }
    }
    let title = incident.title.unwrap_or_else(|| "PagerDuty incident".to_owned());
    Ok(Some(AlertNotice {
        source: AlertSource::Pagerduty,
        fingerprint: identifier(&incident.id, EXPECTED, "data.id")?,
        delivery: identifier(&event.id, EXPECTED, "event.id")?,
        state,
        title: clean(&title, TITLE_CHARS, false),
        // The service and urgency are labels (shown beside the title); a
        // V3 incident carries no description.
        summary: String::new(),
        labels,
        url: http_url(incident.html_url.as_deref()),
        at,
    }))
}

#[derive(Deserialize)]
struct EventBridgeEvent {
    id: String,
    #[serde(rename = "detail-type")]
    detail_type: String,
    source: String,
    #[serde(default)]
    account: String,
    #[serde(default)]
    region: String,
    time: String,
    #[serde(default)]
    resources: Vec<String>,
    detail: AlarmDetail,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AlarmDetail {
    alarm_name: String,
    state: AlarmState,
    #[serde(default)]
    configuration: Option<AlarmConfiguration>,
}

#[derive(Deserialize)]
struct AlarmState {
    value: String,
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct AlarmConfiguration {
    #[serde(default)]
    description: Option<String>,
}

/// A CloudWatch alarm's state change; `None` for `INSUFFICIENT_DATA`.
pub fn cloudwatch(event: &Value) -> Result<Option<AlertNotice>, SourceError> {
    const EXPECTED: &str = "a CloudWatch Alarm State Change event";
    let event: EventBridgeEvent =
        serde_json::from_value(event.clone()).map_err(|err| malformed(EXPECTED, err.to_string()))?;
    if event.source != "aws.cloudwatch" || event.detail_type != "CloudWatch Alarm State Change" {
        return Err(malformed(EXPECTED, format!("{} / {}", event.source, event.detail_type)));
    }
    let state = match event.detail.state.value.as_str() {
        "ALARM" => AlertState::Firing,
        "OK" => AlertState::Resolved,
        _ => return Ok(None),
    };
    let at = unix_from_rfc3339(&event.time).ok_or_else(|| malformed(EXPECTED, format!("time {:?}", event.time)))?;
    let name = identifier(&event.detail.alarm_name, EXPECTED, "detail.alarmName")?;
    let arn = event.resources.first().cloned().unwrap_or_else(|| format!("{}:{}:{name}", event.account, event.region));
    let description = event.detail.configuration.and_then(|c| c.description).unwrap_or_default();
    let reason = event.detail.state.reason.unwrap_or_default();
    let summary = [description, reason].into_iter().filter(|part| !part.is_empty()).collect::<Vec<_>>().join("\n");
    let labels = BTreeMap::from([
        ("alarm_name".to_owned(), clean(&name, LABEL_CHARS, false)),
        ("account".to_owned(), clean(&event.account, 20, false)),
        ("region".to_owned(), clean(&event.region, 30, false)),
    ]);
    let url = (!event.region.is_empty()
        && event.region.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'))
    .then(|| {
        let encoded: String = url::form_urlencoded::byte_serialize(name.as_bytes()).collect();
        format!(
            "https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}#alarmsV2:alarm/{encoded}",
            region = event.region
        )
    });
    Ok(Some(AlertNotice {
        source: AlertSource::Cloudwatch,
        fingerprint: identifier(&arn, EXPECTED, "resources[0]")?,
        delivery: identifier(&event.id, EXPECTED, "id")?,
        state,
        title: clean(&name, TITLE_CHARS, false),
        summary: clean(&summary, SUMMARY_CHARS, true),
        labels,
        url,
        at,
    }))
}
