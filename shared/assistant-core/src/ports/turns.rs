//! A turn's durable state and its delivery record, with optimistic locking.
//! Both are built on [`super::VersionedRecords`] by [`crate::store`], so no
//! adapter implements them directly: the table is the outside system.

use super::PortError;
use crate::delivery::DeliveryRecord;
use crate::turn::{Turn, TurnId};
use async_trait::async_trait;

/// What [`TurnStore::create`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum Created {
    /// Stored at version 1.
    New,
    /// A turn with this id was already stored (a redelivered request): here
    /// it is, as stored.
    Existing(Box<Turn>),
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Someone saved the turn since this copy was read: re-read, never
    /// overwrite.
    #[error("turn {id} changed since version {expected}; re-read it")]
    Conflict { id: TurnId, expected: u64 },
    /// The state would not fit one item. Large tool results belong in the
    /// artifact store before the turn is saved.
    #[error("turn {id} state is {bytes} bytes, over the {limit} byte limit")]
    TooLarge { id: TurnId, bytes: usize, limit: usize },
    #[error(transparent)]
    Port(#[from] PortError),
}

/// Durable turn state with optimistic locking. The worker is its one
/// writer; the responder only reads.
#[async_trait]
pub trait TurnStore: Send + Sync {
    /// Stores a new turn (its `version` becomes 1), unless one with the same
    /// id exists.
    async fn create(&self, turn: &mut Turn) -> Result<Created, StoreError>;

    /// The stored turn, with its current version.
    async fn load(&self, id: &TurnId) -> Result<Option<Turn>, StoreError>;

    /// Saves `turn` if the stored version is still `turn.version`, and then
    /// bumps `turn.version`. Otherwise [`StoreError::Conflict`] and nothing
    /// is written.
    async fn save(&self, turn: &mut Turn) -> Result<(), StoreError>;
}

/// Durable [`DeliveryRecord`]s with optimistic locking, one per turn. The
/// responder is its one writer; the worker only reads.
#[async_trait]
pub trait DeliveryLog: Send + Sync {
    /// The turn's record (a fresh one, version 0, when there is none).
    async fn load(&self, id: &TurnId) -> Result<DeliveryRecord, StoreError>;

    /// Saves `record` if the stored version is still `record.version` (or
    /// none is stored and it is 0), then bumps `record.version`. Otherwise
    /// [`StoreError::Conflict`] and nothing is written.
    async fn save(&self, id: &TurnId, record: &mut DeliveryRecord) -> Result<(), StoreError>;
}
