//! The turn store and the delivery log, built once on the
//! [`VersionedRecords`] port: every backend (DynamoDB, memory) only knows
//! how to read a record and put one conditionally on its version; how a
//! turn or a delivery record becomes a record, how big it may be and how
//! long it is kept is decided here, once.
//!
//! | record | partition | kind | writer |
//! |---|---|---|---|
//! | turn state | `TURN#{turn_id}` | `STATE` | worker |
//! | what the responder posted | `TURN#{turn_id}` | `DELIVERY` | responder |
//! | the answer the worker streamed | `TURN#{turn_id}` | `STREAM` | worker |
//! | ratings of the answer | `TURN#{turn_id}` | `FEEDBACK` | worker ([`crate::feedback`]) |
//!
//! Every write goes through [`put_versioned`], which names it with a fresh
//! [`WriteToken`]: a writer whose answer was lost (the store committed, the
//! reply never came, and the SDK's retry of the same put then fails the
//! condition its own first attempt satisfied) finds its token in the record
//! and knows the write is its own, instead of taking it for another
//! writer's and stopping.

use crate::delivery::{DeliveryRecord, StreamRecord};
use crate::ports::{
    Created, DeliveryLog, PortError, Put, RecordKey, RecordWrite, StoreError, StoredRecord, TurnStore,
    VersionedRecords, WriteToken,
};
use crate::turn::{Turn, TurnId};
use async_trait::async_trait;
use std::sync::Arc;

/// How long a turn (and its delivery record) is kept after its last change.
pub const TURN_TTL_SECS: i64 = 30 * 24 * 3600;
/// The largest serialized turn state any store accepts: under DynamoDB's
/// 400 KB item limit with room for the item's other attributes.
pub const MAX_TURN_STATE_BYTES: usize = 380_000;

fn turn_key(id: &TurnId) -> RecordKey {
    RecordKey { partition: format!("TURN#{id}"), kind: "STATE" }
}

fn delivery_key(id: &TurnId) -> RecordKey {
    RecordKey { partition: format!("TURN#{id}"), kind: "DELIVERY" }
}

/// The turn as stored (JSON), refused when over [`MAX_TURN_STATE_BYTES`].
pub fn serialize_turn(turn: &Turn) -> Result<String, StoreError> {
    let state = serde_json::to_string(turn).expect("turn state contains only JSON-safe values");
    if state.len() > MAX_TURN_STATE_BYTES {
        return Err(StoreError::TooLarge { id: turn.id.clone(), bytes: state.len(), limit: MAX_TURN_STATE_BYTES });
    }
    Ok(state)
}

fn parse<T: serde::de::DeserializeOwned>(what: &'static str, stored: &StoredRecord) -> Result<T, StoreError> {
    serde_json::from_str(&stored.state)
        .map_err(|err| PortError::new(what, format!("stored state does not parse: {err}")).into())
}

fn turn_from(stored: &StoredRecord) -> Result<Turn, StoreError> {
    let mut turn: Turn = parse("read turn state", stored)?;
    turn.version = stored.version;
    turn.stored_bytes = stored.state.len() as u64;
    Ok(turn)
}

/// Writes `state` at version `expected + 1` where the stored version is
/// `expected`, and says whether it was written, also when the answer to the
/// put was lost:
/// - a refusal whose record carries this write's token is this write,
///   applied by an attempt whose answer was lost: [`Put::Written`];
/// - an error (timeout, reset, 5xx) is followed by one consistent read: the
///   record with this write's token is [`Put::Written`], a record at another
///   version is [`Put::Conflict`]; when the record is still at `expected`
///   the error stands (the write may yet land: the caller's retry re-reads).
pub async fn put_versioned(
    records: &dyn VersionedRecords,
    key: &RecordKey,
    expected: u64,
    state: String,
    expires_at: i64,
) -> Result<Put, PortError> {
    let write = RecordWrite { expected, state, expires_at, token: WriteToken::fresh() };
    match records.put(key, &write).await {
        Ok(Put::Conflict { current: Some(stored) }) if write.is_applied_in(&stored) => {
            tracing::info!(record = %key.partition, kind = key.kind, "a retried put found its own write: written");
            Ok(Put::Written)
        }
        Ok(put) => Ok(put),
        Err(err) => match records.get(key).await {
            Ok(Some(stored)) if write.is_applied_in(&stored) => {
                tracing::warn!(record = %key.partition, kind = key.kind, error = %err, "the answer to a put was lost, but the write was applied");
                Ok(Put::Written)
            }
            Ok(current) if current.as_ref().map_or(0, |stored| stored.version) != expected => {
                Ok(Put::Conflict { current })
            }
            _ => Err(err),
        },
    }
}

/// Turns on any [`VersionedRecords`].
#[derive(Clone)]
pub struct RecordTurns(Arc<dyn VersionedRecords>);

impl RecordTurns {
    pub fn new(records: Arc<dyn VersionedRecords>) -> Self {
        Self(records)
    }
}

#[async_trait]
impl TurnStore for RecordTurns {
    async fn create(&self, turn: &mut Turn) -> Result<Created, StoreError> {
        let state = serialize_turn(turn)?;
        let bytes = state.len() as u64;
        let key = turn_key(&turn.id);
        match put_versioned(self.0.as_ref(), &key, 0, state, turn.updated_at + TURN_TTL_SECS).await? {
            Put::Written => {
                turn.version = 1;
                turn.stored_bytes = bytes;
                Ok(Created::New)
            }
            Put::Conflict { current: Some(stored) } => Ok(Created::Existing(Box::new(turn_from(&stored)?))),
            Put::Conflict { current: None } => match self.0.get(&key).await? {
                Some(stored) => Ok(Created::Existing(Box::new(turn_from(&stored)?))),
                // Refused, then gone before the read: let the caller retry.
                None => Err(StoreError::Conflict { id: turn.id.clone(), expected: 0 }),
            },
        }
    }

    async fn load(&self, id: &TurnId) -> Result<Option<Turn>, StoreError> {
        self.0.get(&turn_key(id)).await?.as_ref().map(turn_from).transpose()
    }

    async fn save(&self, turn: &mut Turn) -> Result<(), StoreError> {
        let state = serialize_turn(turn)?;
        let bytes = state.len() as u64;
        match put_versioned(self.0.as_ref(), &turn_key(&turn.id), turn.version, state, turn.updated_at + TURN_TTL_SECS)
            .await?
        {
            Put::Written => {
                turn.version += 1;
                turn.stored_bytes = bytes;
                Ok(())
            }
            Put::Conflict { .. } => Err(StoreError::Conflict { id: turn.id.clone(), expected: turn.version }),
        }
    }
}

/// Delivery records on any [`VersionedRecords`].
#[derive(Clone)]
pub struct RecordDeliveries(Arc<dyn VersionedRecords>);

impl RecordDeliveries {
    pub fn new(records: Arc<dyn VersionedRecords>) -> Self {
        Self(records)
    }
}

#[async_trait]
impl DeliveryLog for RecordDeliveries {
    async fn load(&self, id: &TurnId) -> Result<DeliveryRecord, StoreError> {
        let Some(stored) = self.0.get(&delivery_key(id)).await? else { return Ok(DeliveryRecord::default()) };
        let mut record: DeliveryRecord = parse("read delivery record", &stored)?;
        record.version = stored.version;
        Ok(record)
    }

    async fn save(&self, id: &TurnId, record: &mut DeliveryRecord) -> Result<(), StoreError> {
        let state = serde_json::to_string(record).expect("delivery records contain only strings and numbers");
        match put_versioned(
            self.0.as_ref(),
            &delivery_key(id),
            record.version,
            state,
            record.updated_at + TURN_TTL_SECS,
        )
        .await?
        {
            Put::Written => {
                record.version += 1;
                Ok(())
            }
            Put::Conflict { .. } => Err(StoreError::Conflict { id: id.clone(), expected: record.version }),
        }
    }
}

fn stream_key(id: &TurnId) -> RecordKey {
    RecordKey { partition: format!("TURN#{id}"), kind: "STREAM" }
}

/// Stream records on any [`VersionedRecords`].
#[derive(Clone)]
pub struct StreamLog(Arc<dyn VersionedRecords>);

impl StreamLog {
    pub fn new(records: Arc<dyn VersionedRecords>) -> Self {
        Self(records)
    }

    /// The turn's record (a fresh one, version 0, when it streamed nothing).
    pub async fn load(&self, id: &TurnId) -> Result<StreamRecord, StoreError> {
        let Some(stored) = self.0.get(&stream_key(id)).await? else { return Ok(StreamRecord::default()) };
        let mut record: StreamRecord = parse("read stream record", &stored)?;
        record.version = stored.version;
        Ok(record)
    }

    /// Saves `record` if the stored version is still `record.version`.
    pub async fn save(&self, id: &TurnId, record: &mut StreamRecord) -> Result<(), StoreError> {
        let state = serde_json::to_string(record).expect("stream records are strings and numbers");
        match put_versioned(self.0.as_ref(), &stream_key(id), record.version, state, record.updated_at + TURN_TTL_SECS)
            .await?
        {
            Put::Written => {
                record.version += 1;
                Ok(())
            }
            Put::Conflict { .. } => Err(StoreError::Conflict { id: id.clone(), expected: record.version }),
        }
    }
}
