//! In-memory adapters for the ports: for domain tests, the benchmark and the
//! local runner. They keep the semantics of the AWS adapters (claims expire,
//! claim is atomic), not their performance characteristics.

use crate::messages::{ReplyMessage, WorkMessage};
use crate::ports::{
    ArtifactStore, BOT_THREAD_TTL_SECS, ChannelInfo, ClaimOutcome, Created, DeliveryLog, DeliveryRecord,
    EVENT_CLAIM_TTL_SECS, EventClaim, EventClaims, PortError, ReplyQueue, SlackReader, StoreError, ThreadMessage,
    ThreadRule, TurnStore, WorkQueue, deserialize_turn, serialize_turn,
};
use crate::turn::{Turn, TurnId};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug, Default)]
pub struct MemoryClaims {
    /// key → expires at (Unix seconds)
    records: Mutex<HashMap<String, i64>>,
}

impl MemoryClaims {
    fn event_key(claim: &EventClaim) -> String {
        format!("event:{}:{}", claim.team, claim.event_id)
    }

    fn thread_key(claim: &EventClaim) -> String {
        format!("thread:{}:{}", claim.thread.team, claim.thread.queue_group())
    }

    pub fn len(&self) -> usize {
        self.records.lock().expect("claims lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl EventClaims for MemoryClaims {
    async fn claim(&self, claim: &EventClaim, now_unix: i64) -> Result<ClaimOutcome, PortError> {
        let mut records = self.records.lock().expect("claims lock");
        let live = |key: &str| records.get(key).is_some_and(|expires| *expires >= now_unix);
        let (event_key, thread_key) = (Self::event_key(claim), Self::thread_key(claim));
        if live(&event_key) {
            return Ok(ClaimOutcome::Duplicate);
        }
        if claim.rule == ThreadRule::MustBeKnown && !live(&thread_key) {
            return Ok(ClaimOutcome::NotABotThread);
        }
        records.insert(event_key, now_unix + EVENT_CLAIM_TTL_SECS);
        records.insert(thread_key, now_unix + BOT_THREAD_TTL_SECS);
        Ok(ClaimOutcome::Claimed)
    }

    async fn release(&self, claim: &EventClaim) -> Result<(), PortError> {
        self.records.lock().expect("claims lock").remove(&Self::event_key(claim));
        Ok(())
    }
}

/// A queue that keeps what was sent, in order, and can be told to fail:
/// the work queue by default, the reply queue as `MemoryQueue<ReplyMessage>`.
#[derive(Debug)]
pub struct MemoryQueue<T = WorkMessage> {
    messages: Mutex<Vec<T>>,
    failing: AtomicBool,
}

impl<T> Default for MemoryQueue<T> {
    fn default() -> Self {
        Self { messages: Mutex::new(Vec::new()), failing: AtomicBool::new(false) }
    }
}

impl<T: Clone> MemoryQueue<T> {
    /// While set, every enqueue fails as an unreachable queue would.
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }

    pub fn messages(&self) -> Vec<T> {
        self.messages.lock().expect("queue lock").clone()
    }

    pub fn drain(&self) -> Vec<T> {
        std::mem::take(&mut *self.messages.lock().expect("queue lock"))
    }

    fn push(&self, message: &T) -> Result<(), PortError> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(PortError::new("send", "memory queue set to fail"));
        }
        self.messages.lock().expect("queue lock").push(message.clone());
        Ok(())
    }
}

impl WorkQueue for MemoryQueue<WorkMessage> {
    async fn enqueue(&self, message: &WorkMessage) -> Result<(), PortError> {
        self.push(message)
    }
}

impl ReplyQueue for MemoryQueue<ReplyMessage> {
    async fn send(&self, message: &ReplyMessage) -> Result<(), PortError> {
        self.push(message)
    }
}

/// Slack as a direct message with no earlier messages.
#[derive(Debug, Default)]
pub struct MemorySlack;

impl SlackReader for MemorySlack {
    async fn channel_info(&self, _channel: &slack::ChannelId) -> Result<ChannelInfo, PortError> {
        Ok(ChannelInfo::default())
    }

    async fn thread_history(
        &self,
        _thread: &crate::ThreadRef,
        _bot_user: Option<&slack::UserId>,
        _limit: usize,
    ) -> Result<Vec<ThreadMessage>, PortError> {
        Ok(Vec::new())
    }
}

/// Artifacts kept in a map.
#[derive(Debug, Default)]
pub struct MemoryArtifacts {
    objects: Mutex<HashMap<String, Vec<u8>>>,
}

impl MemoryArtifacts {
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<_> = self.objects.lock().expect("artifacts lock").keys().cloned().collect();
        keys.sort();
        keys
    }
}

impl ArtifactStore for MemoryArtifacts {
    async fn put(&self, key: &str, body: Vec<u8>, _content_type: &'static str) -> Result<(), PortError> {
        self.objects.lock().expect("artifacts lock").insert(key.to_owned(), body);
        Ok(())
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, PortError> {
        Ok(self.objects.lock().expect("artifacts lock").get(key).cloned())
    }

    async fn list(&self, prefix: &str, max: usize) -> Result<Vec<(String, u64)>, PortError> {
        let objects = self.objects.lock().expect("artifacts lock");
        let mut found: Vec<_> = objects
            .iter()
            .filter(|(key, _)| key.starts_with(prefix))
            .map(|(k, v)| (k.clone(), v.len() as u64))
            .collect();
        found.sort();
        found.truncate(max);
        Ok(found)
    }
}

/// Turns kept as serialized state, as a real store keeps them, so what does
/// not survive serialization does not survive here either.
#[derive(Debug, Default)]
pub struct MemoryTurns {
    /// id → (version, JSON state)
    turns: Mutex<HashMap<TurnId, (u64, String)>>,
}

impl TurnStore for MemoryTurns {
    async fn create(&self, turn: &mut Turn) -> Result<Created, StoreError> {
        let state = serialize_turn(turn)?;
        let mut turns = self.turns.lock().expect("turns lock");
        if let Some((version, stored)) = turns.get(&turn.id) {
            return Ok(Created::Existing(Box::new(deserialize_turn(stored, *version)?)));
        }
        turns.insert(turn.id.clone(), (1, state));
        turn.version = 1;
        Ok(Created::New)
    }

    async fn load(&self, id: &TurnId) -> Result<Option<Turn>, StoreError> {
        let turns = self.turns.lock().expect("turns lock");
        turns.get(id).map(|(version, state)| deserialize_turn(state, *version)).transpose()
    }

    async fn save(&self, turn: &mut Turn) -> Result<(), StoreError> {
        let state = serialize_turn(turn)?;
        let mut turns = self.turns.lock().expect("turns lock");
        match turns.get_mut(&turn.id) {
            Some((version, stored)) if *version == turn.version => {
                *version += 1;
                *stored = state;
                turn.version = *version;
                Ok(())
            }
            _ => Err(StoreError::Conflict { id: turn.id.clone(), expected: turn.version }),
        }
    }
}

/// Delivery records kept as serialized JSON, like [`MemoryTurns`].
#[derive(Debug, Default)]
pub struct MemoryDeliveries {
    records: Mutex<HashMap<TurnId, (u64, String)>>,
}

impl DeliveryLog for MemoryDeliveries {
    async fn load(&self, id: &TurnId) -> Result<DeliveryRecord, StoreError> {
        let records = self.records.lock().expect("deliveries lock");
        match records.get(id) {
            Some((version, state)) => DeliveryRecord::from_state(state, *version),
            None => Ok(DeliveryRecord::default()),
        }
    }

    async fn save(&self, id: &TurnId, record: &mut DeliveryRecord) -> Result<(), StoreError> {
        let state = record.to_state();
        let mut records = self.records.lock().expect("deliveries lock");
        let stored = records.get(id).map_or(0, |(version, _)| *version);
        if stored != record.version {
            return Err(StoreError::Conflict { id: id.clone(), expected: record.version });
        }
        records.insert(id.clone(), (stored + 1, state));
        record.version = stored + 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::MemoryTurns;
    use crate::store_contract;

    #[tokio::test]
    async fn memory_turns_keep_the_store_contract() {
        let store = MemoryTurns::default();
        store_contract::create_is_once(&store, "Ev1").await;
        store_contract::stale_writer_loses(&store, "Ev2").await;
        store_contract::missing_turns(&store, "Ev3").await;
        store_contract::oversized_state_is_refused(&store, "Ev4").await;
    }

    #[tokio::test]
    async fn memory_deliveries_keep_the_contract() {
        store_contract::delivery_records_are_versioned(&super::MemoryDeliveries::default(), "Ev5").await;
    }
}
