//! The one primitive every table store stands on (DynamoDB's conditional
//! `PutItem` in AWS, `shared/adapters/aws/src/dynamodb/records.rs`): JSON
//! records with a version and the token of the write that stored them.
//! Where each record lives is spelled in [`crate::keys`].

use super::PortError;
use async_trait::async_trait;

/// A record as stored: its JSON state, the version kept beside it, and
/// the token of the write that stored it (none for records written before
/// writes carried one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRecord {
    pub version: u64,
    pub state: String,
    pub token: Option<WriteToken>,
}

/// Names one write, so its writer can tell its own write from another's
/// when the answer to it was lost (a timeout, a reset, a 5xx after the
/// store committed) and a retry, or a read, finds the record already
/// changed. Unique per write: a process-wide random prefix and a counter.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WriteToken(String);

impl WriteToken {
    pub fn fresh() -> Self {
        use std::hash::{BuildHasher, Hasher};
        use std::sync::OnceLock;
        use std::sync::atomic::{AtomicU64, Ordering};
        static PROCESS: OnceLock<u64> = OnceLock::new();
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        // std's hasher keys come from the OS's randomness: a fresh
        // `RandomState` is a random number without another dependency.
        let process = *PROCESS.get_or_init(|| {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u32(std::process::id());
            hasher.finish()
        });
        Self(format!("{process:016x}{:08x}", COUNTER.fetch_add(1, Ordering::Relaxed)))
    }

    /// A token as a store read it back.
    pub fn from_stored(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A conditional put as its writer sends it: `state` at version
/// `expected + 1`, only where the stored version is `expected` (0: none
/// stored), expiring after `expires_at` (Unix seconds), named by `token`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordWrite {
    pub expected: u64,
    pub state: String,
    pub expires_at: i64,
    pub token: WriteToken,
}

impl RecordWrite {
    /// Whether `stored` is this write, applied.
    pub fn is_applied_in(&self, stored: &StoredRecord) -> bool {
        stored.version == self.expected + 1 && stored.token.as_ref() == Some(&self.token)
    }
}

/// Where a versioned record lives: a partition and a kind within it (a
/// turn's state and its delivery record share the partition).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RecordKey {
    pub partition: String,
    pub kind: &'static str,
}

/// What a conditional put found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Put {
    Written,
    /// The stored version was not the expected one; nothing was written.
    /// `current` is what is stored, when the store returned it with the
    /// refusal (DynamoDB does, at no extra cost).
    Conflict {
        current: Option<StoredRecord>,
    },
}

/// The one primitive both stores stand on: JSON records with a version and
/// the token of the write that stored them, written only where the stored
/// version is the expected one. DynamoDB (a conditional `PutItem`) and
/// memory implement it; [`crate::store`] builds the turn store and the
/// delivery log on it.
#[async_trait]
pub trait VersionedRecords: Send + Sync {
    /// The record, read consistently.
    async fn get(&self, key: &RecordKey) -> Result<Option<StoredRecord>, PortError>;

    /// The records `keys` name, in their order, read consistently: in one
    /// request where the store can (DynamoDB's `BatchGetItem`), else one
    /// read each, together.
    async fn get_many(&self, keys: &[RecordKey]) -> Result<Vec<Option<StoredRecord>>, PortError> {
        futures_util::future::try_join_all(keys.iter().map(|key| self.get(key))).await
    }

    /// Stores `write` if the stored version is `write.expected`, keeping
    /// its token beside the state. Callers go through
    /// [`crate::store::put_versioned`], which tells a lost answer to this
    /// call from a refusal.
    async fn put(&self, key: &RecordKey, write: &RecordWrite) -> Result<Put, PortError>;

    /// Writes an item beside a record (a part of a turn's transcript) under
    /// a sort key no other write uses, replacing whatever was there: a
    /// retry writes the same bytes again.
    async fn put_part(&self, partition: &str, sort_key: &str, state: String, expires_at: i64) -> Result<(), PortError>;

    /// Deletes an item written by [`Self::put_part`]; deleting what is not
    /// there succeeds, so a retry is harmless.
    async fn delete_part(&self, partition: &str, sort_key: &str) -> Result<(), PortError>;

    /// The items of `partition` whose sort key starts with `prefix`, as
    /// (sort key, state) in sort-key order, read consistently.
    async fn parts(&self, partition: &str, prefix: &str) -> Result<Vec<(String, String)>, PortError>;
}
