//! Operator alerts: once per reference, bounded per minute, hostile text
//! defused, failures reported.

use assistant_core::ThreadRef;
use assistant_core::alerts::{Alert, OpsAlerts, Raised};
use assistant_core::delivery::PostError;
use slack::ChannelId;
use std::sync::Arc;
use testkit::clock::ManualClock;
use testkit::memory::MemoryRecords;
use testkit::slack_memory::{CHANNEL_POST, MemoryPoster, Scripted};

const NOW: i64 = 1_763_800_020;

struct World {
    slack: Arc<MemoryPoster>,
    clock: Arc<ManualClock>,
    alerts: OpsAlerts,
}

fn world() -> World {
    let slack = Arc::new(MemoryPoster::default());
    let clock = Arc::new(ManualClock::at(NOW));
    let alerts =
        OpsAlerts::new(ChannelId::new("C0OPS"), slack.clone(), Arc::new(MemoryRecords::default()), clock.clone());
    World { slack, clock, alerts }
}

fn thread() -> ThreadRef {
    ThreadRef {
        team: slack::TeamId::new("T1"),
        channel: slack::ChannelId::new("C0LAN2Q65"),
        thread_ts: slack::Ts::new("1763800000.000100"),
    }
}

#[tokio::test]
async fn an_alert_names_what_happened_the_reference_and_the_thread_once() {
    let world = world();
    let thread = thread();
    let alert =
        Alert { reference: "Ev0LAN670R", what: "A turn's work reached the dead-letter queue.", thread: Some(&thread) };
    assert!(matches!(world.alerts.raise(alert).await, Raised::Posted));
    assert!(matches!(world.alerts.raise(alert).await, Raised::Duplicate), "a redelivery alerts nobody again");

    let alerts = world.slack.alerts();
    assert_eq!(alerts.len(), 1);
    let (channel, text) = &alerts[0];
    assert_eq!(channel.as_str(), "C0OPS");
    assert!(text.contains("dead-letter queue") && text.contains("`Ev0LAN670R`"), "{text}");
    assert!(
        text.contains("<https://slack.com/archives/C0LAN2Q65/p1763800000000100|open it> in <#C0LAN2Q65>"),
        "{text}"
    );
}

#[tokio::test]
async fn alerts_are_bounded_per_minute_across_references() {
    let world = world();
    let references: Vec<String> = (0..8).map(|n| format!("Ev{n}")).collect();
    let mut posted = 0;
    for reference in &references {
        let raised = world.alerts.raise(Alert { reference, what: "failed", thread: None }).await;
        posted += usize::from(matches!(raised, Raised::Posted));
    }
    assert_eq!(posted as u64, OpsAlerts::PER_MINUTE);
    assert_eq!(world.slack.alerts().len() as u64, OpsAlerts::PER_MINUTE);

    world.clock.set(NOW + 60);
    let next = world.alerts.raise(Alert { reference: "Ev-next-minute", what: "failed", thread: None }).await;
    assert!(matches!(next, Raised::Posted), "{next:?}");
}

#[tokio::test]
async fn hostile_text_can_neither_ping_nor_link_and_a_slack_failure_is_reported() {
    let world = world();
    let what = "<!channel> see <https://evil.example|the fix> & <@U123>";
    assert!(matches!(world.alerts.raise(Alert { reference: "Ev<x>", what, thread: None }).await, Raised::Posted));
    let text = &world.slack.alerts()[0].1;
    assert!(!text.contains("<!channel>") && !text.contains("<https://evil") && !text.contains("<@U123>"), "{text}");
    assert!(text.contains("&lt;!channel&gt;") && text.contains("&amp;") && text.contains("`Ev&lt;x&gt;`"), "{text}");

    world.slack.script(CHANNEL_POST, [Scripted::Fail(PostError::Rejected { code: "not_in_channel".into() })]);
    let failed = world.alerts.raise(Alert { reference: "Ev-other", what: "x", thread: None }).await;
    assert!(matches!(failed, Raised::Failed(ref reason) if reason.contains("not_in_channel")), "{failed:?}");
}
