//! When the app leaves a team (`app_uninstalled`, the bot's token revoked)
//! or a person leaves it (`user_change` with `deleted`, their token
//! revoked): the departure is remembered, so work asked for before it
//! stops, and what the bot keeps for the team or the person is deleted.
//!
//! Everything here is keyed by team (and person), never by a scan:
//!
//! - a departure is one record (`DEPARTED#{team}` or
//!   `DEPARTED#{team}#{user}`) holding when Slack says it happened; work
//!   whose question was asked before then stops, work asked after it (a
//!   reinstall, a new account) goes on;
//! - every partition the worker keeps about a team's channels and people
//!   (a channel's memory, a thread's grants, a person's sealed tokens) is
//!   listed in the team's own partition (`TEAM_RECORDS#{team}`), written
//!   beside the records ([`note`]), so forgetting a team is one query of
//!   that list and one query of each partition in it.
//!
//! Every step is idempotent: a departure recorded again keeps the later
//! time, deleting what is gone succeeds, and an index item is deleted only
//! after the records it lists, so a forget cut short (a crash, a lost
//! answer) is finished by its redelivery.

use crate::grants::ThreadGrant;
use crate::keys;
use crate::messages::ForgetReason;
use crate::ports::PortError;
use crate::ports::{Put, RecordKey, VersionedRecords};
use serde::{Deserialize, Serialize};
use slack::{TeamId, UserId};
use std::sync::Arc;

/// A departure as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Departed {
    /// When it happened, as Slack says (Unix seconds).
    pub at: i64,
    pub reason: ForgetReason,
}

/// One item of a team's list of kept partitions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Kept {
    partition: String,
    /// The sort-key prefix every item of it has (DynamoDB's `begins_with`
    /// takes no empty prefix).
    sort_prefix: String,
}

/// Lists `partition` (whose items sort under `sort_prefix`) among `team`'s
/// kept partitions, until `expires_at` (the newest record's expiry: each
/// write replaces the item). Called by the writers of those records.
pub async fn note(
    records: &dyn VersionedRecords,
    team: &TeamId,
    partition: &str,
    sort_prefix: &str,
    expires_at: i64,
) -> Result<(), PortError> {
    let kept = Kept { partition: partition.to_owned(), sort_prefix: sort_prefix.to_owned() };
    let state = serde_json::to_string(&kept).expect("strings");
    records.put_part(&keys::team_records(team), &keys::team_record(partition), state, expires_at).await
}

/// What one forget deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Forgotten {
    /// Items deleted (memory records, grants, sealed tokens).
    pub records: usize,
}

/// Departures and forgetting, on any [`VersionedRecords`].
#[derive(Clone)]
pub struct Departures(Arc<dyn VersionedRecords>);

/// How many times a departure's put is tried against writers racing it.
const PUT_ATTEMPTS: usize = 4;

impl Departures {
    pub fn new(records: Arc<dyn VersionedRecords>) -> Self {
        Self(records)
    }

    /// Remembers that `team` (or `user` of it) departed at `departed.at`.
    /// Again (a redelivery, a second event): the later time stays.
    pub async fn depart(&self, team: &TeamId, user: Option<&UserId>, departed: Departed) -> Result<(), PortError> {
        let key = departure_key(team, user);
        for _ in 0..PUT_ATTEMPTS {
            let stored = self.0.get(&key).await?;
            let expected = match &stored {
                Some(stored) => match serde_json::from_str::<Departed>(&stored.state) {
                    Ok(earlier) if earlier.at >= departed.at => return Ok(()),
                    _ => stored.version,
                },
                None => 0,
            };
            let state = serde_json::to_string(&departed).expect("numbers");
            let expires_at = departed.at + keys::DEPARTURE_SECS;
            match crate::store::put_versioned(self.0.as_ref(), &key, expected, state, expires_at).await? {
                Put::Written => return Ok(()),
                // Another writer was first: read again and compare.
                Put::Conflict { .. } => continue,
            }
        }
        Err(PortError::new("record a departure", "other writers kept changing it"))
    }

    /// The departure that stops work `user` of `team` asked for at
    /// `asked_at` (Unix seconds), if any: the team's, then the person's.
    /// One read of both (a `BatchGetItem` in DynamoDB).
    pub async fn stopping(&self, team: &TeamId, user: &UserId, asked_at: i64) -> Result<Option<Departed>, PortError> {
        let keys = [keys::departed_team(team), keys::departed_person(team, user)];
        let found = self.0.get_many(&keys).await?;
        Ok(found
            .into_iter()
            .flatten()
            .filter_map(|stored| serde_json::from_str::<Departed>(&stored.state).ok())
            .find(|departed| asked_at <= departed.at))
    }

    /// Deletes everything the team's list names (its channels' memory,
    /// its threads' grants, its people's sealed tokens), then the list.
    pub async fn forget_team(&self, team: &TeamId) -> Result<Forgotten, PortError> {
        let list = keys::team_records(team);
        let mut forgotten = Forgotten::default();
        for (sort_key, state) in self.0.parts(&list, keys::TEAM_RECORD_SORT_PREFIX).await? {
            if let Ok(kept) = serde_json::from_str::<Kept>(&state) {
                for (item, _) in self.0.parts(&kept.partition, &kept.sort_prefix).await? {
                    self.0.delete_part(&kept.partition, &item).await?;
                    forgotten.records += 1;
                }
            }
            self.0.delete_part(&list, &sort_key).await?;
        }
        Ok(forgotten)
    }

    /// Deletes what the bot keeps for `user` of `team`: their sealed
    /// tokens and the thread grants that let their calls run. Nothing of
    /// another team's person of the same id is touched: every key names
    /// the team.
    pub async fn forget_person(&self, team: &TeamId, user: &UserId) -> Result<Forgotten, PortError> {
        let mut forgotten = Forgotten::default();
        let tokens = keys::user_partition(team, user);
        for (item, _) in self.0.parts(&tokens, keys::TOKENS_SORT_PREFIX).await? {
            self.0.delete_part(&tokens, &item).await?;
            forgotten.records += 1;
        }
        let list = keys::team_records(team);
        self.0.delete_part(&list, &keys::team_record(&tokens)).await?;
        for (_, state) in self.0.parts(&list, &keys::team_record_grants(team)).await? {
            let Ok(kept) = serde_json::from_str::<Kept>(&state) else { continue };
            for (item, grant) in self.0.parts(&kept.partition, &kept.sort_prefix).await? {
                let theirs = serde_json::from_str::<ThreadGrant>(&grant)
                    .is_ok_and(|grant| grant.for_user.as_ref() == Some(user));
                if theirs {
                    self.0.delete_part(&kept.partition, &item).await?;
                    forgotten.records += 1;
                }
            }
        }
        Ok(forgotten)
    }
}

fn departure_key(team: &TeamId, user: Option<&UserId>) -> RecordKey {
    match user {
        Some(user) => keys::departed_person(team, user),
        None => keys::departed_team(team),
    }
}
