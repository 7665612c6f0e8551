//! Incident records and the channels' hourly counts on a versioned-record
//! store (the memory double here; DynamoDB in `tests/incidents.rs`).

use assistant_core::incidents::sources;
use assistant_core::incidents::*;
use assistant_core::ports::VersionedRecords;
use slack::{ChannelId, TeamId};
use std::sync::Arc;
use testkit::fixtures::alerts::*;

fn route() -> AlertRoute {
    AlertRoute { channel: ChannelId::new("C0ONCALL01"), prompt_key: None }
}

fn team() -> TeamId {
    TeamId::new("T0LAN2Q65")
}

fn alertmanager(body: &str, received_at: i64) -> AlertNotice {
    sources::alertmanager(body.as_bytes(), received_at).expect("a good notification").remove(0)
}

#[tokio::test]
async fn records_survive_the_store_and_a_stale_copy_is_refused() {
    let records: Arc<dyn VersionedRecords> = Arc::new(testkit::memory::MemoryRecords::default());
    let incidents = Incidents::new(records);
    let fired = alertmanager(ALERTMANAGER_FIRING, ALERTS_NOW);
    let mut record = incidents.load(&fired).await.unwrap();
    record.apply(&fired, &route(), &team(), ALERTS_NOW, Some(Loudness::Investigate));
    let mut stale = record.clone();
    incidents.save(&fired, &mut record, ALERTS_NOW).await.unwrap();
    assert_eq!(incidents.load(&fired).await.unwrap(), record);
    assert!(matches!(incidents.save(&fired, &mut stale, ALERTS_NOW).await, Err(IncidentError::Changed(_))));

    let limits = StormLimits { investigate: 1, threads: 2 };
    let channel = ChannelId::new("C0ONCALL01");
    let mut graded = Vec::new();
    for _ in 0..3 {
        graded.push(incidents.count_opening(&channel, limits, ALERTS_NOW).await.unwrap());
    }
    assert_eq!(graded, [(Loudness::Investigate, 1), (Loudness::ThreadOnly, 2), (Loudness::Quiet, 3)]);
    let next_hour = incidents.count_opening(&channel, limits, ALERTS_NOW + 3600).await.unwrap();
    assert_eq!(next_hour, (Loudness::Investigate, 1));
}
