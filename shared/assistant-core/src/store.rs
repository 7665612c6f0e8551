//! The turn store and the delivery log, built once on the
//! [`VersionedRecords`] port: every backend (DynamoDB, memory) only knows
//! how to read a record and put one conditionally on its version; how a
//! turn or a delivery record becomes a record, how big it may be and how
//! long it is kept is decided here, once.
//!
//! | record | partition | kind | writer |
//! |---|---|---|---|
//! | turn state (the head) | `TURN#{turn_id}` | `STATE` | worker |
//! | the transcript, in parts | `TURN#{turn_id}` | `PART#{version}.{n}.{tag}` | worker ([`RecordTurns`]) |
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
use crate::keys;
use crate::ports::{
    Created, DeliveryLog, PortError, Put, RecordKey, RecordWrite, StoreError, StoredRecord, TurnStore,
    VersionedRecords, WriteToken,
};
use crate::turn::{Message, StoredTurn, Turn, TurnId};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::Arc;

pub use crate::keys::TURN_TTL_SECS;
/// The largest item any store accepts (a turn's head, one part of its
/// transcript, one message): under DynamoDB's 400 KB item limit with room
/// for the item's other attributes.
pub const MAX_TURN_STATE_BYTES: usize = 380_000;
fn too_large(id: &TurnId, bytes: usize) -> StoreError {
    StoreError::TooLarge { id: id.clone(), bytes, limit: MAX_TURN_STATE_BYTES }
}

fn parse<T: serde::de::DeserializeOwned>(what: &'static str, stored: &StoredRecord) -> Result<T, StoreError> {
    serde_json::from_str(&stored.state)
        .map_err(|err| PortError::new(what, format!("stored state does not parse: {err}")).into())
}

fn unreadable(detail: String) -> StoreError {
    PortError::new("read turn state", detail).into()
}

/// A digest of a transcript's messages, as serialized.
fn digest(messages: &[String]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for message in messages {
        hasher.update(message.as_bytes());
        hasher.update(b"\n");
    }
    hasher.finalize().into()
}

/// What names a save's parts beside their version: 48 bits of its write
/// token's digest, so two writers of the same version never share a name,
/// in a dozen characters (the head lists every part's name).
fn part_tag(token: &WriteToken) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(&Sha256::digest(token.as_str().as_bytes())[..6])
}

/// `messages` (serialized) as JSON arrays of at most
/// [`MAX_TURN_STATE_BYTES`] each; a message alone over it is refused.
fn chunk(id: &TurnId, messages: &[String]) -> Result<Vec<String>, StoreError> {
    let mut parts = Vec::new();
    let mut part = String::from("[");
    for message in messages {
        if message.len() + 2 > MAX_TURN_STATE_BYTES {
            return Err(too_large(id, message.len()));
        }
        if part.len() + message.len() + 2 > MAX_TURN_STATE_BYTES {
            part.push(']');
            parts.push(std::mem::replace(&mut part, String::from("[")));
        }
        if part.len() > 1 {
            part.push(',');
        }
        part.push_str(message);
    }
    if part.len() > 1 {
        part.push(']');
        parts.push(part);
    }
    Ok(parts)
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
    put_versioned_as(records, key, RecordWrite { expected, state, expires_at, token: WriteToken::fresh() }).await
}

/// Takes one of `limit` in the window `key` counts (a minute's alerts, a
/// minute's stream starts), across every instance: `false` when none is
/// left. `stored` is the record as the caller read it (`None`: there is
/// none yet). Races are tried again from the record that won (read again
/// when the conflict did not say); a put whose answer was lost is found by
/// its token, so it counts once.
pub async fn take_one(
    records: &dyn VersionedRecords,
    key: &RecordKey,
    stored: Option<StoredRecord>,
    limit: u64,
    expires_at: i64,
) -> Result<bool, PortError> {
    const TRIES: u32 = 3;
    // The record the next try counts from; `None`: read it first.
    let known = &std::sync::Mutex::new(Some(stored));
    let taken = crate::retry::retry_races(TRIES, |_| async move {
        let known_now = known.lock().expect("counter lock").take();
        let current = match known_now {
            Some(current) => current,
            None => records.get(key).await?,
        };
        let (version, taken) = current.as_ref().map_or((0, 0), |record| (record.version, window_count(&record.state)));
        if taken >= limit {
            return Ok(false);
        }
        let state = serde_json::json!({ "sent": taken + 1 }).to_string();
        match put_versioned(records, key, version, state, expires_at).await? {
            Put::Written => Ok(true),
            Put::Conflict { current } => {
                *known.lock().expect("counter lock") = current.map(Some);
                Err(crate::retry::Raced::Lost)
            }
        }
    })
    .await?;
    Ok(taken.unwrap_or(false))
}

/// How many a window's record says were taken.
pub fn window_count(state: &str) -> u64 {
    serde_json::from_str::<serde_json::Value>(state).ok().and_then(|value| value["sent"].as_u64()).unwrap_or(0)
}

/// [`put_versioned`] with the caller's token (a turn names its parts with it).
async fn put_versioned_as(
    records: &dyn VersionedRecords,
    key: &RecordKey,
    write: RecordWrite,
) -> Result<Put, PortError> {
    let expected = write.expected;
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

/// Turns on any [`VersionedRecords`], stored so that a save writes what it
/// added: a *head* record (`STATE`: everything but the transcript, and the
/// names of the parts holding it) and *parts* (`PART#…`: the messages each
/// save added, as a JSON array). A save writes its new messages as parts
/// named by its version and its write token, which no other write uses, then
/// the head conditionally on the version it read; a writer that loses the
/// race leaves parts no head names (they expire with the turn). When earlier
/// messages changed (compaction moved results out), the save writes the
/// whole transcript as new parts. A turn stored whole in its head (before
/// parts) still loads, and its next save moves it to parts.
#[derive(Clone)]
pub struct RecordTurns(Arc<dyn VersionedRecords>);

impl RecordTurns {
    pub fn new(records: Arc<dyn VersionedRecords>) -> Self {
        Self(records)
    }

    /// Writes `turn` at `turn.version + 1`: its new parts, then its head.
    async fn write(&self, turn: &mut Turn) -> Result<Put, StoreError> {
        let expires_at = turn.updated_at + TURN_TTL_SECS;
        let messages: Vec<String> = turn
            .transcript
            .iter()
            .map(|message| serde_json::to_string(message).expect("messages contain only JSON-safe values"))
            .collect();
        let stored = &turn.stored;
        let unchanged = !stored.parts.is_empty()
            && stored.messages <= messages.len()
            && digest(&messages[..stored.messages]) == stored.digest;
        let (mut parts, from, mut bytes) = if unchanged {
            (stored.parts.clone(), stored.messages, stored.bytes.saturating_sub(stored.written_head()))
        } else {
            (Vec::new(), 0, 0)
        };

        let token = WriteToken::fresh();
        let version = turn.version + 1;
        let partition = keys::turn_partition(&turn.id);
        let mut written = vec![0];
        for (index, part) in chunk(&turn.id, &messages[from..])?.into_iter().enumerate() {
            let name = format!("{version}.{index}.{}", part_tag(&token));
            written.push(part.len() as u64);
            bytes += part.len() as u64;
            self.0.put_part(&partition, &keys::turn_part(&name), part, expires_at).await?;
            parts.push(name);
        }

        let transcript = std::mem::take(&mut turn.transcript);
        let mut head = serde_json::to_value(&*turn).expect("turn state contains only JSON-safe values");
        turn.transcript = transcript;
        head["parts"] = serde_json::json!(parts);
        let head = head.to_string();
        if head.len() > MAX_TURN_STATE_BYTES {
            return Err(too_large(&turn.id, head.len()));
        }
        written[0] = head.len() as u64;
        let write = RecordWrite { expected: turn.version, state: head, expires_at, token };
        let put = put_versioned_as(self.0.as_ref(), &keys::turn_state(&turn.id), write).await?;
        if put == Put::Written {
            turn.version = version;
            turn.stored = StoredTurn {
                parts,
                messages: messages.len(),
                digest: digest(&messages),
                bytes: bytes + written[0],
                written,
            };
        }
        Ok(put)
    }

    /// The turn whose head was read (none: no such turn).
    async fn turn_of(&self, head: Option<StoredRecord>) -> Result<Option<Turn>, StoreError> {
        match head {
            Some(stored) => Ok(Some(self.assemble(&stored).await?)),
            None => Ok(None),
        }
    }

    /// The turn whose head is `stored`, its transcript read from its parts.
    async fn assemble(&self, stored: &StoredRecord) -> Result<Turn, StoreError> {
        let mut head: serde_json::Value = parse("read turn state", stored)?;
        let names: Option<Vec<String>> = head
            .as_object_mut()
            .and_then(|object| object.remove("parts"))
            .map(serde_json::from_value)
            .transpose()
            .map_err(|err| unreadable(format!("the turn's parts are unreadable: {err}")))?;
        let mut turn: Turn =
            serde_json::from_value(head).map_err(|err| unreadable(format!("stored state does not parse: {err}")))?;
        turn.version = stored.version;
        let head_bytes = stored.state.len() as u64;
        let Some(names) = names else {
            // Stored whole, before parts: its next save writes parts.
            turn.stored = StoredTurn { bytes: head_bytes, written: vec![head_bytes], ..StoredTurn::default() };
            return Ok(turn);
        };
        let found: HashMap<String, String> = if names.is_empty() {
            HashMap::new()
        } else {
            self.0.parts(&keys::turn_partition(&turn.id), keys::TURN_PART_PREFIX).await?.into_iter().collect()
        };
        let (mut messages, mut bytes) = (Vec::new(), head_bytes);
        for name in &names {
            let part = found
                .get(&keys::turn_part(name))
                .ok_or_else(|| unreadable(format!("part {name} of turn {} is missing", turn.id)))?;
            bytes += part.len() as u64;
            let values: Vec<serde_json::Value> =
                serde_json::from_str(part).map_err(|err| unreadable(format!("part {name} does not parse: {err}")))?;
            for value in values {
                let message: Message = serde_json::from_value(value)
                    .map_err(|err| unreadable(format!("a message of part {name} does not parse: {err}")))?;
                // Serialized as a save serializes it, for the digest.
                messages.push(serde_json::to_string(&message).expect("messages contain only JSON-safe values"));
                turn.transcript.push(message);
            }
        }
        turn.stored = StoredTurn {
            parts: names,
            messages: messages.len(),
            digest: digest(&messages),
            bytes,
            written: vec![head_bytes],
        };
        Ok(turn)
    }
}

#[async_trait]
impl TurnStore for RecordTurns {
    async fn create(&self, turn: &mut Turn) -> Result<Created, StoreError> {
        match self.write(turn).await? {
            Put::Written => Ok(Created::New),
            Put::Conflict { current: Some(stored) } => Ok(Created::Existing(Box::new(self.assemble(&stored).await?))),
            Put::Conflict { current: None } => match self.load(&turn.id).await? {
                Some(stored) => Ok(Created::Existing(Box::new(stored))),
                // Refused, then gone before the read: let the caller retry.
                None => Err(StoreError::Conflict { id: turn.id.clone(), expected: 0 }),
            },
        }
    }

    async fn load(&self, id: &TurnId) -> Result<Option<Turn>, StoreError> {
        self.turn_of(self.0.get(&keys::turn_state(id)).await?).await
    }

    async fn save(&self, turn: &mut Turn) -> Result<(), StoreError> {
        match self.write(turn).await? {
            Put::Written => Ok(()),
            Put::Conflict { .. } => Err(StoreError::Conflict { id: turn.id.clone(), expected: turn.version }),
        }
    }
}

/// A turn store that can read turns ahead of the work that loads them.
///
/// A cold worker reads its configuration and assembles its tools before it
/// can work; the turns its messages name are read beside that
/// ([`ReadAhead::read`]), and the first [`TurnStore::load`] of each takes
/// the turn read ahead instead of reading it again. Taken once: any later
/// load (the same turn's next message in the batch, a reload after a
/// conflict) reads the store. A turn read ahead is at most as old as the
/// invocation, and every save is conditional on its version, so a stale one
/// costs a conflict, as another worker's write would. What nobody took is
/// dropped with [`ReadAhead::forget`] at the end of the invocation.
pub struct ReadAhead {
    turns: RecordTurns,
    read: std::sync::Mutex<HashMap<TurnId, Option<Turn>>>,
}

impl ReadAhead {
    pub fn new(turns: RecordTurns) -> Self {
        Self { turns, read: Default::default() }
    }

    /// Reads the turns `ids` name and, in the same request, the records
    /// `also` names (what a cold worker kept of its start), and returns the
    /// latter in their order. A read that fails keeps nothing: each turn's
    /// own load reads again and reports its error, and the caller reads
    /// `also` its own way.
    pub async fn read(
        &self,
        ids: impl IntoIterator<Item = TurnId>,
        also: &[RecordKey],
    ) -> Result<Vec<Option<StoredRecord>>, PortError> {
        let mut ids: Vec<TurnId> = ids.into_iter().collect();
        ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        ids.dedup();
        let wanted: Vec<RecordKey> = also.iter().cloned().chain(ids.iter().map(keys::turn_state)).collect();
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let mut found = self.turns.0.get_many(&wanted).await?;
        let heads = found.split_off(also.len());
        let turns = ids.into_iter().zip(heads).map(|(id, head)| async move { (id, self.turns.turn_of(head).await) });
        for (id, turn) in futures_util::future::join_all(turns).await {
            if let Ok(turn) = turn {
                self.read.lock().expect("read-ahead lock").insert(id, turn);
            }
        }
        Ok(found)
    }

    /// Drops what was read ahead and not taken.
    pub fn forget(&self) {
        self.read.lock().expect("read-ahead lock").clear();
    }

    fn take(&self, id: &TurnId) -> Option<Option<Turn>> {
        self.read.lock().expect("read-ahead lock").remove(id)
    }
}

#[async_trait]
impl TurnStore for ReadAhead {
    async fn create(&self, turn: &mut Turn) -> Result<Created, StoreError> {
        self.take(&turn.id);
        self.turns.create(turn).await
    }

    async fn load(&self, id: &TurnId) -> Result<Option<Turn>, StoreError> {
        match self.take(id) {
            Some(turn) => Ok(turn),
            None => self.turns.load(id).await,
        }
    }

    async fn save(&self, turn: &mut Turn) -> Result<(), StoreError> {
        self.take(&turn.id);
        self.turns.save(turn).await
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
        let Some(stored) = self.0.get(&keys::delivery(id)).await? else { return Ok(DeliveryRecord::default()) };
        let mut record: DeliveryRecord = parse("read delivery record", &stored)?;
        record.version = stored.version;
        Ok(record)
    }

    async fn save(&self, id: &TurnId, record: &mut DeliveryRecord) -> Result<(), StoreError> {
        let state = serde_json::to_string(record).expect("delivery records contain only strings and numbers");
        match put_versioned(
            self.0.as_ref(),
            &keys::delivery(id),
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

/// Stream records on any [`VersionedRecords`].
#[derive(Clone)]
pub struct StreamLog(Arc<dyn VersionedRecords>);

impl StreamLog {
    pub fn new(records: Arc<dyn VersionedRecords>) -> Self {
        Self(records)
    }

    /// Takes one of the workspace's stream starts for the minute
    /// (`STREAM_STARTS_PER_MINUTE` across every worker): `false` when
    /// they are taken, and the turn streams nothing.
    pub async fn take_start(&self, team: &slack::TeamId, now: i64, per_minute: u64) -> Result<bool, PortError> {
        let key = keys::stream_starts(team, now / 60);
        let stored = self.0.get(&key).await?;
        take_one(self.0.as_ref(), &key, stored, per_minute, now + keys::STREAM_STARTS_SECS).await
    }

    /// The turn's record (a fresh one, version 0, when it streamed nothing).
    pub async fn load(&self, id: &TurnId) -> Result<StreamRecord, StoreError> {
        let Some(stored) = self.0.get(&keys::stream(id)).await? else { return Ok(StreamRecord::default()) };
        let mut record: StreamRecord = parse("read stream record", &stored)?;
        record.version = stored.version;
        Ok(record)
    }

    /// Saves `record` if the stored version is still `record.version`.
    pub async fn save(&self, id: &TurnId, record: &mut StreamRecord) -> Result<(), StoreError> {
        let state = serde_json::to_string(record).expect("stream records are strings and numbers");
        match put_versioned(
            self.0.as_ref(),
            &keys::stream(id),
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
