use super::*;
use assistant_core::incidents::{AlertSource, AlertState};
use http::HeaderValue;
use testkit::clock::ManualClock;
use testkit::fixtures::alerts::*;
use testkit::memory::MemoryQueue;

const TOKEN: &str = "am-token-5b1c0f";
const PD_SECRET: &str = "pd-signing-secret-9f2e";

fn webhooks(now: i64) -> (AlertWebhooks, Arc<MemoryQueue>) {
    let queue = Arc::new(MemoryQueue::default());
    let hooks = AlertWebhooks::new(
        WebhookSecret::new(TOKEN),
        WebhookSecret::new(PD_SECRET),
        queue.clone(),
        Arc::new(ManualClock::at(now)),
    );
    (hooks, queue)
}

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in pairs {
        headers.insert(*name, HeaderValue::from_str(value).unwrap());
    }
    headers
}

fn alerts(queue: &MemoryQueue) -> Vec<AlertNotice> {
    queue
        .messages()
        .into_iter()
        .map(|message| match message {
            WorkMessage::Alert(notice) => notice,
            other => panic!("not an alert: {other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn an_alertmanager_webhook_with_its_bearer_token_is_enqueued_one_message_per_alert() {
    let (hooks, queue) = webhooks(ALERTS_NOW);
    let auth = format!("Bearer {TOKEN}");
    let reply =
        hooks.handle(ALERTMANAGER_PATH, &headers(&[("authorization", &auth)]), ALERTMANAGER_FIRING.as_bytes()).await;
    assert_eq!((reply.status, reply.counted), (200, Counted::Accepted));
    let sent = alerts(&queue);
    assert_eq!(sent.len(), 1);
    assert_eq!((sent[0].source, &sent[0].state), (AlertSource::Alertmanager, &AlertState::Firing));
    // The FIFO group and deduplication id are the alert's.
    let message = WorkMessage::Alert(sent[0].clone());
    assert_eq!(message.queue_group(), sent[0].queue_group());
    assert_eq!(message.dedupe_id(), sent[0].dedupe_id());
    assert_eq!(WorkMessage::decode(&message.encode()).unwrap(), message);
}

#[tokio::test]
async fn a_forged_or_unauthenticated_webhook_is_401_and_enqueues_nothing() {
    let (hooks, queue) = webhooks(ALERTS_NOW);
    let body = ALERTMANAGER_FIRING.as_bytes();
    for auth in [
        None,
        Some("Bearer wrong-token"),
        Some(&*format!("Basic {TOKEN}")),
        Some("Bearer "),
        Some(&*format!("Bearer {TOKEN}x")),
    ] {
        let headers = auth.map_or_else(HeaderMap::new, |auth| headers(&[("authorization", auth)]));
        let reply = hooks.handle(ALERTMANAGER_PATH, &headers, body).await;
        assert_eq!((reply.status, reply.counted), (401, Counted::Rejected), "{auth:?}");
    }
    let signed_elsewhere =
        WebhookSecret::new("another-secret").unwrap().pagerduty_signature(PAGERDUTY_TRIGGERED.as_bytes());
    let good = WebhookSecret::new(PD_SECRET).unwrap().pagerduty_signature(PAGERDUTY_TRIGGERED.as_bytes());
    let tampered_body = PAGERDUTY_TRIGGERED.replace("payments-api p99", "payments-api p50");
    for (signature, body) in [
        (None, PAGERDUTY_TRIGGERED),
        (Some(signed_elsewhere.as_str()), PAGERDUTY_TRIGGERED),
        (Some(good.as_str()), tampered_body.as_str()),
        (Some("v1=zz"), PAGERDUTY_TRIGGERED),
        (Some(&good[3..]), PAGERDUTY_TRIGGERED),
    ] {
        let headers = signature.map_or_else(HeaderMap::new, |s| headers(&[("x-pagerduty-signature", s)]));
        let reply = hooks.handle(PAGERDUTY_PATH, &headers, body.as_bytes()).await;
        assert_eq!(reply.status, 401, "{signature:?}");
    }
    assert!(queue.messages().is_empty());
}

#[tokio::test]
async fn a_pagerduty_webhook_signed_by_any_current_secret_is_enqueued_and_a_replay_refused() {
    let (hooks, queue) = webhooks(ALERTS_NOW);
    let body = PAGERDUTY_TRIGGERED.as_bytes();
    let rotating = format!(
        "{}, {}",
        WebhookSecret::new("the-old-secret").unwrap().pagerduty_signature(body),
        WebhookSecret::new(PD_SECRET).unwrap().pagerduty_signature(body)
    );
    let reply = hooks.handle(PAGERDUTY_PATH, &headers(&[("x-pagerduty-signature", &rotating)]), body).await;
    assert_eq!(reply.status, 200);
    assert_eq!(alerts(&queue)[0].fingerprint, "PGR0VU2");

    let (later, queue) = webhooks(ALERTS_NOW + 2 * 3600);
    let signature = WebhookSecret::new(PD_SECRET).unwrap().pagerduty_signature(body);
    let reply = later.handle(PAGERDUTY_PATH, &headers(&[("x-pagerduty-signature", &signature)]), body).await;
    assert_eq!(reply.status, 400, "signed, but two hours old: a replay");
    assert!(queue.messages().is_empty());
}

#[tokio::test]
async fn signed_bodies_that_do_not_read_are_400_events_that_are_not_alerts_200_and_unset_routes_404() {
    let (hooks, queue) = webhooks(ALERTS_NOW);
    let auth = format!("Bearer {TOKEN}");
    let reply = hooks.handle(ALERTMANAGER_PATH, &headers(&[("authorization", &auth)]), b"{\"version\":\"4\",").await;
    assert_eq!(reply.status, 400);
    let mut other: serde_json::Value = serde_json::from_str(PAGERDUTY_TRIGGERED).unwrap();
    other["event"]["event_type"] = "service.updated".into();
    let body = other.to_string();
    let signature = WebhookSecret::new(PD_SECRET).unwrap().pagerduty_signature(body.as_bytes());
    let reply = hooks.handle(PAGERDUTY_PATH, &headers(&[("x-pagerduty-signature", &signature)]), body.as_bytes()).await;
    assert_eq!((reply.status, reply.counted), (200, Counted::Other));
    assert!(queue.messages().is_empty());

    let unset = AlertWebhooks::new(None, None, queue.clone(), Arc::new(ManualClock::at(ALERTS_NOW)));
    let reply =
        unset.handle(ALERTMANAGER_PATH, &headers(&[("authorization", &auth)]), ALERTMANAGER_FIRING.as_bytes()).await;
    assert_eq!(reply.status, 404);
    assert!(WebhookSecret::new("  ").is_none(), "an empty secret would let anyone in");
    assert_eq!(format!("{:?}", WebhookSecret::new(TOKEN).unwrap()), "WebhookSecret(..)");
}

#[tokio::test]
async fn a_failed_enqueue_is_500_so_the_sender_retries() {
    let (hooks, queue) = webhooks(ALERTS_NOW);
    queue.set_failing(true);
    let auth = format!("Bearer {TOKEN}");
    let reply =
        hooks.handle(ALERTMANAGER_PATH, &headers(&[("authorization", &auth)]), ALERTMANAGER_FIRING.as_bytes()).await;
    assert_eq!(reply.status, 500);
}

#[tokio::test]
async fn only_a_post_within_the_size_limit_with_a_readable_body_is_looked_at() {
    let (hooks, queue) = webhooks(ALERTS_NOW);
    let auth = format!("Bearer {TOKEN}");
    let headers = headers(&[("authorization", &auth)]);
    let request = |method: &'static http::Method, body: &'static str, is_base64_encoded: bool| AlertRequest {
        method,
        path: ALERTMANAGER_PATH,
        headers: &headers,
        body: Some(body),
        is_base64_encoded,
    };
    assert_eq!(hooks.handle_http(request(&http::Method::GET, ALERTMANAGER_FIRING, false)).await.status, 405);
    assert_eq!(hooks.handle_http(request(&http::Method::POST, "not base64!", true)).await.status, 400);
    let huge: &'static str = Box::leak(" ".repeat(BODY_LIMIT + 1).into_boxed_str());
    assert_eq!(hooks.handle_http(request(&http::Method::POST, huge, false)).await.status, 413);
    assert!(queue.messages().is_empty());
    assert_eq!(hooks.handle_http(request(&http::Method::POST, ALERTMANAGER_FIRING, false)).await.status, 200);
    assert_eq!(queue.messages().len(), 1);
}
