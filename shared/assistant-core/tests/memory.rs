//! `ChannelMemory`: a channel's past turns, recalled by words, scoped to
//! the channel, expiring, forgotten by thread.

use assistant_core::memory::{ChannelMemory, Memory};
use assistant_core::ports::VersionedRecords;
use assistant_core::turn::{TurnId, TurnStatus};
use slack::{ChannelId, TeamId, Ts};
use std::sync::Arc;

const NOW: i64 = 1_763_800_000;
const DAY: i64 = 86_400;

fn memory(turn: &str, thread: &str, at: i64, question: &str, summary: &str) -> Memory {
    Memory {
        turn_id: TurnId::new(turn),
        thread_ts: Ts::new(thread),
        settled_at: at,
        question: question.into(),
        summary: summary.into(),
        tools: vec!["logs_query".into()],
        status: TurnStatus::Answered,
        rating: None,
    }
}

#[tokio::test]
async fn recall_finds_the_channels_own_matching_past_best_first_and_nothing_elsewhere_or_expired() {
    let records: Arc<dyn VersionedRecords> = Arc::new(testkit::memory::MemoryRecords::default());
    let memories = ChannelMemory::new(records, 30 * DAY);
    let (team, ops, other) = (TeamId::new("T1"), ChannelId::new("C0OPS"), ChannelId::new("C0OTHER"));
    let pool = memory("T1-Ev1", "1763700000.000100", NOW - DAY, "checkout-api 502 errors", "the DB pool was exhausted");
    let disk = memory("T1-Ev2", "1763710000.000100", NOW - 2 * DAY, "orders-db disk full", "log rotation had stopped");
    let old = memory("T1-Ev3", "1760000000.000100", NOW - 40 * DAY, "checkout-api 502 errors", "an expired record");
    for m in [&pool, &disk, &old] {
        memories.remember(&team, &ops, m).await.unwrap();
    }

    let found = memories.recall(&team, &ops, "why does checkout-api return 502?", NOW).await.unwrap();
    assert_eq!(found, std::slice::from_ref(&pool), "the matching one; not the expired one");
    let found = memories.recall(&team, &ops, "checkout-api pool and orders-db disk", NOW).await.unwrap();
    assert_eq!(found.len(), 2);
    assert!(memories.recall(&team, &other, "checkout-api 502", NOW).await.unwrap().is_empty(), "another channel");
    assert!(memories.recall(&TeamId::new("T2"), &ops, "checkout-api", NOW).await.unwrap().is_empty(), "another team");
    assert!(memories.recall(&team, &ops, "why the and", NOW).await.unwrap().is_empty(), "no words worth matching");

    // The same turn again replaces its record (a put whose answer was lost).
    memories.remember(&team, &ops, &pool).await.unwrap();
    assert_eq!(memories.recall(&team, &ops, "checkout-api", NOW).await.unwrap().len(), 1);

    // A rating reaches the turn's record; a turn never kept has none to rate.
    assert!(memories.rate(&team, &ops, &pool.thread_ts, &pool.turn_id, "negative").await.unwrap());
    let found = memories.recall(&team, &ops, "checkout-api", NOW).await.unwrap();
    assert_eq!(found[0].rating.as_deref(), Some("negative"));
    assert!(!memories.rate(&team, &ops, &pool.thread_ts, &TurnId::new("T1-Ev9"), "positive").await.unwrap());
    assert!(
        !memories.rate(&team, &other, &pool.thread_ts, &pool.turn_id, "positive").await.unwrap(),
        "not across channels"
    );

    // A thread is forgotten, the others stay.
    assert_eq!(memories.forget_thread(&team, &ops, &pool.thread_ts).await.unwrap(), 1);
    assert!(memories.recall(&team, &ops, "checkout-api 502", NOW).await.unwrap().is_empty());
    assert_eq!(memories.recall(&team, &ops, "orders-db", NOW).await.unwrap(), [disk]);
    assert_eq!(memories.forget_thread(&team, &ops, &pool.thread_ts).await.unwrap(), 0, "forgetting twice is fine");
}
