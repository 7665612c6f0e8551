//! What the bot remembers of a channel's past turns: a short record of each
//! settled turn (the question, the answer's start, the tools used, how it
//! ended, how people rated it), kept in the turns table under the channel
//! (`MEMORY#{team}#{channel}`, one item per turn, sorted by thread), so no
//! read of one channel can return another's. Each record expires after the
//! retention period (DynamoDB's TTL; reads skip what is past it before TTL
//! removes it). A thread's records can be forgotten on request.
//!
//! Kept in the table rather than AgentCore Memory: one more item kind in a
//! table every function already has (no new service, permission or bill;
//! TTL gives retention), a partition per channel makes the channel scope
//! structural, and a channel's incidents are few enough that reading its
//! records and matching words finds them without a vector index.
//!
//! Records hold what the worker gives them: it redacts them first.

use crate::keys;
use crate::ports::{PortError, VersionedRecords};
use crate::turn::{TurnId, TurnStatus};
use serde::{Deserialize, Serialize};
use slack::{ChannelId, TeamId, Ts};
use std::collections::HashSet;
use std::sync::Arc;

pub use crate::keys::DEFAULT_RETENTION_SECS;
/// Records read for one recall, newest threads first (a channel's last
/// few months of questions).
const MAX_READ: usize = 500;
/// Records one recall returns.
pub const MAX_RECALLED: usize = 5;

/// One settled turn, as remembered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memory {
    pub turn_id: TurnId,
    pub thread_ts: Ts,
    /// Unix seconds.
    pub settled_at: i64,
    pub question: String,
    /// The answer's start.
    pub summary: String,
    pub tools: Vec<String>,
    pub status: TurnStatus,
    /// `positive`, `negative`, or none yet.
    #[serde(default)]
    pub rating: Option<String>,
}

/// Records on any [`VersionedRecords`], scoped to a channel.
#[derive(Clone)]
pub struct ChannelMemory {
    records: Arc<dyn VersionedRecords>,
    retention_secs: i64,
    organization: Option<slack::EnterpriseId>,
}

impl ChannelMemory {
    pub fn new(records: Arc<dyn VersionedRecords>, retention_secs: i64) -> Self {
        Self { records, retention_secs, organization: None }
    }

    /// The same, for an org-wide deployment in `organization`: each
    /// channel's memory is listed for its uninstall too
    /// (`crate::departures::note`).
    #[must_use]
    pub fn in_organization(self, organization: Option<slack::EnterpriseId>) -> Self {
        Self { organization, ..self }
    }

    /// Keeps `memory` for `channel`; the same turn again replaces it (a
    /// put whose answer was lost is the same put again).
    pub async fn remember(&self, team: &TeamId, channel: &ChannelId, memory: &Memory) -> Result<(), PortError> {
        let state = serde_json::to_string(memory).expect("a memory is strings and numbers");
        let expires_at = memory.settled_at + self.retention_secs;
        let partition = keys::memory_partition(team, channel);
        crate::departures::note(
            self.records.as_ref(),
            self.organization.as_ref(),
            team,
            &partition,
            keys::MEMORY_SORT_PREFIX,
            expires_at,
        )
        .await?;
        let sort_key = keys::memory(&memory.thread_ts, &memory.turn_id);
        self.records.put_part(&partition, &sort_key, state, expires_at).await
    }

    /// The channel's records that share the most words with `query`, at
    /// most [`MAX_RECALLED`], best first (newest first among equals); none
    /// older than the retention period at `now`.
    pub async fn recall(
        &self,
        team: &TeamId,
        channel: &ChannelId,
        query: &str,
        now: i64,
    ) -> Result<Vec<Memory>, PortError> {
        let wanted = words(query);
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let mut found: Vec<(usize, Memory)> = self
            .records
            .parts(&keys::memory_partition(team, channel), keys::MEMORY_SORT_PREFIX)
            .await?
            .into_iter()
            .rev()
            .take(MAX_READ)
            .filter_map(|(_, state)| serde_json::from_str::<Memory>(&state).ok())
            .filter(|memory| now - memory.settled_at < self.retention_secs)
            .filter_map(|memory| {
                let text = format!("{} {} {}", memory.question, memory.summary, memory.tools.join(" "));
                let shared = words(&text).intersection(&wanted).count();
                (shared > 0).then_some((shared, memory))
            })
            .collect();
        found.sort_by(|(a, x), (b, y)| b.cmp(a).then(y.settled_at.cmp(&x.settled_at)));
        Ok(found.into_iter().take(MAX_RECALLED).map(|(_, memory)| memory).collect())
    }

    /// Sets the rating people last gave the turn's answer on its record;
    /// whether there was one (a forgotten or never kept turn has none).
    pub async fn rate(
        &self,
        team: &TeamId,
        channel: &ChannelId,
        thread_ts: &Ts,
        turn_id: &TurnId,
        rating: &str,
    ) -> Result<bool, PortError> {
        let partition = keys::memory_partition(team, channel);
        let key = keys::memory(thread_ts, turn_id);
        let found = self.records.parts(&partition, &keys::memory_thread(thread_ts)).await?;
        let Some(mut memory) = found
            .into_iter()
            .find(|(sort_key, _)| *sort_key == key)
            .and_then(|(_, state)| serde_json::from_str::<Memory>(&state).ok())
        else {
            return Ok(false);
        };
        memory.rating = Some(rating.to_owned());
        self.remember(team, channel, &memory).await?;
        Ok(true)
    }

    /// Forgets every record of the thread; how many there were.
    /// The thread's records (its settled turns), oldest first.
    pub async fn of_thread(
        &self,
        team: &TeamId,
        channel: &ChannelId,
        thread_ts: &Ts,
    ) -> Result<Vec<Memory>, PortError> {
        let found = self.records.parts(&keys::memory_partition(team, channel), &keys::memory_thread(thread_ts)).await?;
        let mut memories: Vec<Memory> =
            found.iter().filter_map(|(_, state)| serde_json::from_str(state).ok()).collect();
        memories.sort_by_key(|memory| memory.settled_at);
        Ok(memories)
    }

    pub async fn forget_thread(&self, team: &TeamId, channel: &ChannelId, thread_ts: &Ts) -> Result<usize, PortError> {
        let partition = keys::memory_partition(team, channel);
        let found = self.records.parts(&partition, &keys::memory_thread(thread_ts)).await?;
        for (sort_key, _) in &found {
            self.records.delete_part(&partition, sort_key).await?;
        }
        Ok(found.len())
    }
}

/// The words a recall matches on: lower case, three characters or more,
/// without the commonest English ones.
fn words(text: &str) -> HashSet<String> {
    const COMMON: &[&str] = &[
        "the", "and", "for", "are", "was", "why", "what", "how", "with", "this", "that", "from", "have", "has", "not",
        "but", "its", "you", "our", "can", "did", "does", "when", "who", "there", "been", "again", "last", "time",
    ];
    text.split(|c: char| !c.is_alphanumeric() && c != '-' && c != '_')
        .map(str::to_lowercase)
        .filter(|word| word.chars().count() >= 3 && !COMMON.contains(&word.as_str()))
        .collect()
}
