use super::sources::{self, SourceError};
use super::*;
use testkit::fixtures::alerts::*;

fn route() -> AlertRoute {
    AlertRoute { channel: ChannelId::new("C0ONCALL01"), prompt_key: None }
}

fn team() -> TeamId {
    TeamId::new("T0LAN2Q65")
}

fn alertmanager(body: &str, received_at: i64) -> AlertNotice {
    let mut notices = sources::alertmanager(body.as_bytes(), received_at).expect("a good notification");
    assert_eq!(notices.len(), 1);
    notices.remove(0)
}

#[test]
fn each_source_reads_into_one_notice_with_its_identity_and_state() {
    let fired = alertmanager(ALERTMANAGER_FIRING, ALERTS_NOW);
    assert_eq!(fired.source, AlertSource::Alertmanager);
    assert_eq!(fired.fingerprint, "c2b1f4a9d0e87a31");
    assert_eq!(fired.state, AlertState::Firing);
    assert_eq!(fired.title, "checkout-api 5xx rate above 5%");
    assert!(fired.summary.contains("7.2%"));
    assert_eq!(fired.labels["service"], "checkout-api");
    assert_eq!(fired.at, ALERTS_NOW - 120);
    assert!(fired.url.as_deref().unwrap().starts_with("http://prometheus.internal:9090/"));
    let resolved = alertmanager(ALERTMANAGER_RESOLVED, ALERTS_NOW + 1200);
    assert_eq!((resolved.state, resolved.at), (AlertState::Resolved, ALERTS_NOW + 1200));
    assert_eq!(resolved.fingerprint, fired.fingerprint);

    let triggered = sources::pagerduty(PAGERDUTY_TRIGGERED.as_bytes()).unwrap().unwrap();
    assert_eq!(
        (triggered.fingerprint.as_str(), triggered.delivery.as_str()),
        ("PGR0VU2", "01DEN4HPBQAAAG05V5QQYBRZMF")
    );
    assert_eq!(triggered.labels["service"], "payments-api");
    assert_eq!(triggered.labels["urgency"], "high");
    let acknowledged = sources::pagerduty(PAGERDUTY_ACKNOWLEDGED.as_bytes()).unwrap().unwrap();
    assert_eq!(acknowledged.state, AlertState::Acknowledged { by: Some("Ada Oncall".into()) });

    let alarm: serde_json::Value = serde_json::from_str(CLOUDWATCH_ALARM).unwrap();
    let alarm = sources::cloudwatch(&alarm).unwrap().unwrap();
    assert_eq!(alarm.fingerprint, "arn:aws:cloudwatch:us-east-1:123456789012:alarm:checkout-api-5xx");
    assert_eq!(alarm.labels["alarm_name"], "checkout-api-5xx");
    assert!(alarm.summary.starts_with("checkout-api returns 5xx\nThreshold Crossed"));
    assert!(alarm.url.as_deref().unwrap().starts_with("https://us-east-1.console.aws.amazon.com/cloudwatch/"));
    let ok: serde_json::Value = serde_json::from_str(CLOUDWATCH_OK).unwrap();
    assert_eq!(sources::cloudwatch(&ok).unwrap().unwrap().state, AlertState::Resolved);
}

#[test]
fn what_is_not_an_alert_is_none_and_what_is_broken_says_why() {
    let mut insufficient: serde_json::Value = serde_json::from_str(CLOUDWATCH_ALARM).unwrap();
    insufficient["detail"]["state"]["value"] = "INSUFFICIENT_DATA".into();
    assert_eq!(sources::cloudwatch(&insufficient).unwrap(), None);
    let mut other: serde_json::Value = serde_json::from_str(PAGERDUTY_TRIGGERED).unwrap();
    other["event"]["event_type"] = "incident.priority_updated".into();
    assert_eq!(sources::pagerduty(other.to_string().as_bytes()).unwrap(), None);

    let mut ec2: serde_json::Value = serde_json::from_str(CLOUDWATCH_ALARM).unwrap();
    ec2["source"] = "aws.ec2".into();
    assert!(matches!(sources::cloudwatch(&ec2), Err(SourceError::Malformed { .. })));
    for broken in ["", "{}", "[1]", r#"{"version":"3","alerts":[]}"#] {
        assert!(sources::alertmanager(broken.as_bytes(), ALERTS_NOW).is_err(), "{broken:?}");
    }
    let mut control: serde_json::Value = serde_json::from_str(PAGERDUTY_TRIGGERED).unwrap();
    control["event"]["data"]["id"] = "PGR\u{0}0VU2".into();
    assert!(sources::pagerduty(control.to_string().as_bytes()).is_err());
    let mut many: serde_json::Value = serde_json::from_str(ALERTMANAGER_FIRING).unwrap();
    let alert = many["alerts"][0].clone();
    many["alerts"] = serde_json::Value::Array(vec![alert; MAX + 1]);
    assert_eq!(sources::alertmanager(many.to_string().as_bytes(), ALERTS_NOW), Err(SourceError::TooMany(MAX + 1)));
}

const MAX: usize = sources::MAX_ALERTS_PER_NOTIFICATION;

#[test]
fn hostile_text_is_bounded_and_loses_its_control_characters() {
    let mut hostile: serde_json::Value = serde_json::from_str(ALERTMANAGER_FIRING).unwrap();
    hostile["alerts"][0]["annotations"]["summary"] = format!("line\u{7}\r\nbreak{}", "x".repeat(5000)).into();
    hostile["alerts"][0]["generatorURL"] = "javascript:alert(1)".into();
    hostile["externalURL"] = "file:///etc/passwd".into();
    let notice = alertmanager(&hostile.to_string(), ALERTS_NOW);
    assert!(notice.title.chars().count() <= 201, "{}", notice.title.len());
    assert!(!notice.title.chars().any(char::is_control));
    assert_eq!(notice.url, None);
}

#[test]
fn alertmanager_retries_are_one_notification_and_its_repeats_are_re_fires() {
    let first = alertmanager(ALERTMANAGER_FIRING, ALERTS_NOW);
    let retried = alertmanager(ALERTMANAGER_FIRING, ALERTS_NOW + 10);
    let repeated = alertmanager(ALERTMANAGER_FIRING, ALERTS_NOW + 4 * 3600);
    assert_eq!(first.delivery, retried.delivery);
    assert_eq!(first.dedupe_id(), retried.dedupe_id());
    assert_ne!(first.delivery, repeated.delivery);
    assert_eq!(first.queue_group(), repeated.queue_group());
    assert!(first.queue_group().len() <= 128 && first.dedupe_id().len() <= 128);
}

#[test]
fn a_fire_opens_a_redelivery_changes_nothing_a_re_fire_adds_and_a_resolve_closes() {
    let fired = alertmanager(ALERTMANAGER_FIRING, ALERTS_NOW);
    let mut record = IncidentRecord::default();
    assert_eq!(record.apply(&fired, &route(), &team(), ALERTS_NOW, None), Applied::NeedsLoudness);
    assert_eq!(record.apply(&fired, &route(), &team(), ALERTS_NOW, Some(Loudness::Investigate)), Applied::Changed);
    let incident = record.incident.clone().unwrap();
    assert_eq!(incident.status, IncidentStatus::Open);
    assert_eq!(incident.posts.iter().map(|p| p.key.as_str()).collect::<Vec<_>>(), ["root"]);
    assert_eq!(incident.message_owner().as_str(), format!("T0LAN2Q65-{}", incident.id));
    assert!(TurnId::is_well_formed(incident.message_owner().as_str()));

    assert_eq!(record.apply(&fired, &route(), &team(), ALERTS_NOW, None), Applied::Unchanged("already applied"));
    let again = alertmanager(ALERTMANAGER_FIRING, ALERTS_NOW + 4 * 3600);
    assert_eq!(record.apply(&again, &route(), &team(), ALERTS_NOW + 4 * 3600, None), Applied::Changed);
    let incident = record.incident.clone().unwrap();
    assert_eq!((incident.fired_again, incident.id.as_str()), (1, record.incident.as_ref().unwrap().id.as_str()));
    assert_eq!(incident.posts[1].what, PostKind::FiredAgain { at: ALERTS_NOW + 4 * 3600, count: 1 });

    let resolved = alertmanager(ALERTMANAGER_RESOLVED, ALERTS_NOW + 5 * 3600);
    assert_eq!(record.apply(&resolved, &route(), &team(), ALERTS_NOW, None), Applied::Changed);
    let closed = record.incident.clone().unwrap();
    assert_eq!(closed.status, IncidentStatus::Resolved);
    let happenings: Vec<_> = closed.timeline.iter().map(|entry| entry.happening.clone()).collect();
    assert_eq!(happenings, [Happening::Fired, Happening::FiredAgain, Happening::Resolved]);
    assert_eq!(record.apply(&resolved, &route(), &team(), ALERTS_NOW, None), Applied::Unchanged("no open incident"));
    // The opening notice redelivered after the close opens nothing.
    assert_eq!(record.apply(&fired, &route(), &team(), ALERTS_NOW, None), Applied::Unchanged("already applied"));

    // The next fire is a new incident, in a new thread.
    let next = alertmanager(&ALERTMANAGER_FIRING.replace("20:58:00.123Z", "23:00:00Z"), ALERTS_NOW + 8 * 3600);
    assert_eq!(record.apply(&next, &route(), &team(), ALERTS_NOW, Some(Loudness::Investigate)), Applied::Changed);
    let reopened = record.incident.unwrap();
    assert_ne!(reopened.id, closed.id);
    assert_eq!(reopened.status, IncidentStatus::Open);
    assert_eq!(reopened.root_ts(), None);
}

#[test]
fn a_quiet_incident_posts_nothing_and_storm_limits_grade_the_hour() {
    let fired = alertmanager(ALERTMANAGER_FIRING, ALERTS_NOW);
    let mut record = IncidentRecord::default();
    record.apply(&fired, &route(), &team(), ALERTS_NOW, Some(Loudness::Quiet));
    assert!(record.incident.as_ref().unwrap().posts.is_empty());
    let limits = StormLimits { investigate: 2, threads: 3 };
    let graded: Vec<_> = (1..=4).map(|n| limits.loudness(n)).collect();
    assert_eq!(graded, [Loudness::Investigate, Loudness::Investigate, Loudness::ThreadOnly, Loudness::Quiet]);
}

#[test]
fn a_flapping_alert_is_counted_every_time_and_noted_at_most_every_fifteen_minutes() {
    let mut record = IncidentRecord::default();
    record.apply(
        &alertmanager(ALERTMANAGER_FIRING, ALERTS_NOW),
        &route(),
        &team(),
        ALERTS_NOW,
        Some(Loudness::Investigate),
    );
    for minutes in [5, 10, 20, 25, 40] {
        let at = ALERTS_NOW + minutes * 60;
        let again = AlertNotice { delivery: format!("again-{minutes}"), ..alertmanager(ALERTMANAGER_FIRING, at) };
        assert_eq!(record.apply(&again, &route(), &team(), at, None), Applied::Changed);
    }
    let incident = record.incident.unwrap();
    assert_eq!(incident.fired_again, 5);
    let notes: Vec<_> = incident.posts.iter().map(|post| post.key.as_str()).collect();
    assert_eq!(notes, ["root", "refire-1", "refire-3", "refire-5"], "at 5, 20 and 40 minutes");
}

#[test]
fn a_late_resolve_of_an_earlier_incident_does_not_close_the_next_one() {
    let mut record = IncidentRecord::default();
    let first = alertmanager(ALERTMANAGER_FIRING, ALERTS_NOW);
    record.apply(&first, &route(), &team(), ALERTS_NOW, Some(Loudness::Investigate));
    let resolved = alertmanager(ALERTMANAGER_RESOLVED, ALERTS_NOW + 1200);
    record.apply(&resolved, &route(), &team(), ALERTS_NOW + 1200, None);
    let next = alertmanager(&ALERTMANAGER_FIRING.replace("20:58:00.123Z", "23:00:00Z"), ALERTS_NOW + 8 * 3600);
    record.apply(&next, &route(), &team(), ALERTS_NOW + 8 * 3600, Some(Loudness::Investigate));
    // The first resolve again, past the queue's deduplication window
    let late = AlertNotice { delivery: "a later retry".into(), ..resolved };
    assert_eq!(
        record.apply(&late, &route(), &team(), ALERTS_NOW + 9 * 3600, None),
        Applied::Unchanged("a resolve older than the incident")
    );
    assert_eq!(record.incident.unwrap().status, IncidentStatus::Open);
}
