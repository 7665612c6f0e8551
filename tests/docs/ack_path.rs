//! The AWS calls on the ingress's acknowledgement path, counted: every
//! captured Slack request in `shared/testkit/fixtures/` goes through the
//! real intake on in-memory ports that count their calls (each port call
//! is one AWS call in the adapters: a claim is one `TransactWriteItems`,
//! an enqueue one `SendMessage`, a remembered context one `PutItem`, the
//! every-question channels one `Query`), with every channel answering
//! every question and nothing cached, the most a request can cost.

use assistant_core::ports::{
    ClaimOutcome, EventClaim, EventClaims, PortError, Put, RecordKey, RecordWrite, StoredRecord, UserContext,
    UserContexts, VersionedRecords, WorkQueue,
};
use assistant_core::response_modes::EveryQuestionChannels;
use assistant_core::{Clock, WorkMessage};
use async_trait::async_trait;
use ingress_logic::{Intake, Request};
use slack::{SigningSecret, TeamId, UserId};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use testkit::clock::ManualClock;
use testkit::memory::{MemoryClaims, MemoryContexts, MemoryQueue, MemoryRecords};

const SECRET: &str = "docs-check-signing-secret";
const NOW: i64 = 1_763_800_001;

/// The calls one request made, by port.
#[derive(Debug, Default)]
struct Calls {
    claims: AtomicUsize,
    queue: AtomicUsize,
    contexts: AtomicUsize,
    records: AtomicUsize,
}

impl Calls {
    fn total(&self) -> usize {
        [&self.claims, &self.queue, &self.contexts, &self.records].iter().map(|n| n.load(Ordering::Relaxed)).sum()
    }
}

struct Counting<T> {
    inner: T,
    calls: Arc<Calls>,
}

#[async_trait]
impl EventClaims for Counting<MemoryClaims> {
    async fn claim(&self, claim: &EventClaim, now_unix: i64) -> Result<ClaimOutcome, PortError> {
        self.calls.claims.fetch_add(1, Ordering::Relaxed);
        self.inner.claim(claim, now_unix).await
    }
}

#[async_trait]
impl WorkQueue for Counting<MemoryQueue> {
    async fn enqueue(&self, message: &WorkMessage) -> Result<(), PortError> {
        self.calls.queue.fetch_add(1, Ordering::Relaxed);
        self.inner.enqueue(message).await
    }
}

#[async_trait]
impl UserContexts for Counting<MemoryContexts> {
    async fn remember(&self, team: &TeamId, user: &UserId, context: &UserContext) -> Result<(), PortError> {
        self.calls.contexts.fetch_add(1, Ordering::Relaxed);
        self.inner.remember(team, user, context).await
    }

    async fn recall(&self, team: &TeamId, user: &UserId, now_unix: i64) -> Result<Option<UserContext>, PortError> {
        self.calls.contexts.fetch_add(1, Ordering::Relaxed);
        self.inner.recall(team, user, now_unix).await
    }
}

#[async_trait]
impl VersionedRecords for Counting<Arc<MemoryRecords>> {
    async fn get(&self, key: &RecordKey) -> Result<Option<StoredRecord>, PortError> {
        self.calls.records.fetch_add(1, Ordering::Relaxed);
        self.inner.get(key).await
    }

    async fn put(&self, key: &RecordKey, write: &RecordWrite) -> Result<Put, PortError> {
        self.calls.records.fetch_add(1, Ordering::Relaxed);
        self.inner.put(key, write).await
    }

    async fn put_part(&self, partition: &str, sort_key: &str, state: String, expires_at: i64) -> Result<(), PortError> {
        self.calls.records.fetch_add(1, Ordering::Relaxed);
        self.inner.put_part(partition, sort_key, state, expires_at).await
    }

    async fn delete_part(&self, partition: &str, sort_key: &str) -> Result<(), PortError> {
        self.calls.records.fetch_add(1, Ordering::Relaxed);
        self.inner.delete_part(partition, sort_key).await
    }

    async fn parts(&self, partition: &str, prefix: &str) -> Result<Vec<(String, String)>, PortError> {
        self.calls.records.fetch_add(1, Ordering::Relaxed);
        self.inner.parts(partition, prefix).await
    }
}

/// The AWS calls each captured Slack request makes before the ingress
/// answers: (fixture file, calls), most first.
pub async fn calls_per_request(root: &Path) -> Vec<(String, usize)> {
    let folder = root.join("shared/testkit/fixtures");
    let mut fixtures: Vec<_> = std::fs::read_dir(&folder)
        .expect("the captured Slack payloads")
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    fixtures.sort();
    let mut counted = Vec::new();
    for path in fixtures {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let payload = std::fs::read_to_string(&path).unwrap();
        // Interactivity comes as a form; events as JSON.
        let (body, content_type) = if name.starts_with("block_actions") {
            (testkit::fixtures::interaction_form(&payload), "application/x-www-form-urlencoded")
        } else {
            (payload, "application/json")
        };
        counted.push((name, calls_for(&body, content_type).await));
    }
    counted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    counted
}

/// One request on a fresh intake (nothing cached) where every channel
/// answers every question.
async fn calls_for(body: &str, content_type: &'static str) -> usize {
    let calls = Arc::new(Calls::default());
    let clock = Arc::new(ManualClock::at(NOW));
    let records = Arc::new(MemoryRecords::default());
    EveryQuestionChannels::new(records.clone(), clock.clone()).publish(&["*".to_owned()]).await.unwrap();
    let counted_records = Arc::new(Counting { inner: records, calls: calls.clone() });
    let intake = Intake::new(
        SigningSecret::new(SECRET).unwrap(),
        Arc::new(Counting { inner: MemoryClaims::default(), calls: calls.clone() }),
        Arc::new(Counting { inner: MemoryQueue::default(), calls: calls.clone() }),
        Arc::new(Counting { inner: MemoryContexts::default(), calls: calls.clone() }),
        clock.clone(),
    )
    .with_every_question(EveryQuestionChannels::new(counted_records, clock.clone()));
    let headers = testkit::signed::headers(SECRET, clock.now_unix(), body, content_type);
    intake.handle(Request { headers: &headers, body: Some(body), is_base64_encoded: false }).await;
    calls.total()
}
