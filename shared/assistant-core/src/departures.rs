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
//!   before the records ([`note`]), so forgetting a team is one query of
//!   that list and one query of each partition in it, and no record is
//!   ever kept unlisted: a pair of writes cut short (a crash, a lost
//!   answer) leaves at most a listing with nothing under it.
//!
//! - an org-wide deployment also lists, per organization, the workspaces
//!   that have such partitions (`ORG_TEAMS#{org}`, written beside the
//!   team's list), and an organization's departure is one record keyed by
//!   its id (`DEPARTED#{org}`): the organization's uninstall stops the work
//!   of every workspace of it ([`Departures::stopping`] reads it beside the
//!   team's) and forgets each listed workspace
//!   ([`Departures::forget_organization`]).
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
use slack::{EnterpriseId, TeamId, UserId};
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
/// write replaces the item). Under an org-wide deployment (`organization`),
/// also lists `team` among the organization's workspaces with records
/// ([`keys::org_teams`]), so the organization's uninstall finds it. Called
/// by the writers of those records before they write, and awaited: a
/// record written beside its listing could be kept when the listing's
/// write failed. Both puts are idempotent.
pub async fn note(
    records: &dyn VersionedRecords,
    organization: Option<&EnterpriseId>,
    team: &TeamId,
    partition: &str,
    sort_prefix: &str,
    expires_at: i64,
) -> Result<(), PortError> {
    let kept = Kept { partition: partition.to_owned(), sort_prefix: sort_prefix.to_owned() };
    let state = serde_json::to_string(&kept).expect("strings");
    let (list, item) = (keys::team_records(team), keys::team_record(partition));
    let listed = records.put_part(&list, &item, state, expires_at);
    let Some(org) = organization else { return listed.await };
    let workspace = serde_json::to_string(&Workspace { team: team.clone() }).expect("strings");
    let (org_list, org_item) = (keys::org_teams(org), keys::org_team(team, sort_prefix));
    let in_org = records.put_part(&org_list, &org_item, workspace, expires_at);
    futures_util::future::try_join(listed, in_org).await.map(|_| ())
}

/// One item of an organization's list of workspaces with records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Workspace {
    team: TeamId,
}

/// What one forget deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Forgotten {
    /// Items deleted (memory records, grants, sealed tokens).
    pub records: usize,
}

/// Departures and forgetting, on any [`VersionedRecords`]; for an
/// org-wide deployment, of its organization too.
#[derive(Clone)]
pub struct Departures {
    records: Arc<dyn VersionedRecords>,
    organization: Option<EnterpriseId>,
}

/// How many times a departure's put is tried against writers racing it.
const PUT_ATTEMPTS: usize = 4;

impl Departures {
    pub fn new(records: Arc<dyn VersionedRecords>) -> Self {
        Self { records, organization: None }
    }

    /// The same, for an org-wide deployment in `organization` (none: one
    /// workspace): the organization's departure stops the work of every
    /// workspace of it ([`Departures::stopping`]).
    #[must_use]
    pub fn in_organization(self, organization: Option<EnterpriseId>) -> Self {
        Self { organization, ..self }
    }

    /// The organization of an org-wide deployment.
    pub fn organization(&self) -> Option<&EnterpriseId> {
        self.organization.as_ref()
    }

    /// Remembers that `team` (or `user` of it) departed at `departed.at`.
    /// Again (a redelivery, a second event): the later time stays.
    pub async fn depart(&self, team: &TeamId, user: Option<&UserId>, departed: Departed) -> Result<(), PortError> {
        let key = departure_key(team, user);
        for _ in 0..PUT_ATTEMPTS {
            let stored = self.records.get(&key).await?;
            let expected = match &stored {
                Some(stored) => match serde_json::from_str::<Departed>(&stored.state) {
                    Ok(earlier) if earlier.at >= departed.at => return Ok(()),
                    _ => stored.version,
                },
                None => 0,
            };
            let state = serde_json::to_string(&departed).expect("numbers");
            let expires_at = departed.at + keys::DEPARTURE_SECS;
            match crate::store::put_versioned(self.records.as_ref(), &key, expected, state, expires_at).await? {
                Put::Written => return Ok(()),
                // Another writer was first: read again and compare.
                Put::Conflict { .. } => continue,
            }
        }
        Err(PortError::new("record a departure", "other writers kept changing it"))
    }

    /// The departure that stops work `user` of `team` asked for at
    /// `asked_at` (Unix seconds), if any: the team's, then the person's,
    /// then (an org-wide deployment) the organization's and the person's in
    /// it. One read of them all (a `BatchGetItem` in DynamoDB).
    pub async fn stopping(&self, team: &TeamId, user: &UserId, asked_at: i64) -> Result<Option<Departed>, PortError> {
        let mut keys = vec![keys::departed_team(team), keys::departed_person(team, user)];
        if let Some(org) = &self.organization {
            let org = organization_team(org);
            keys.extend([keys::departed_team(&org), keys::departed_person(&org, user)]);
        }
        let found = self.records.get_many(&keys).await?;
        Ok(found
            .into_iter()
            .flatten()
            .filter_map(|stored| serde_json::from_str::<Departed>(&stored.state).ok())
            .find(|departed| asked_at <= departed.at))
    }

    /// The workspaces of `org` with kept records, as its list names them
    /// (each once), with the list's items that name each.
    pub async fn workspaces_of(&self, org: &EnterpriseId) -> Result<Vec<(TeamId, Vec<String>)>, PortError> {
        let mut workspaces: Vec<(TeamId, Vec<String>)> = Vec::new();
        for (sort_key, state) in self.records.parts(&keys::org_teams(org), keys::ORG_TEAM_SORT_PREFIX).await? {
            let Ok(Workspace { team }) = serde_json::from_str::<Workspace>(&state) else { continue };
            match workspaces.iter_mut().find(|(listed, _)| *listed == team) {
                Some((_, items)) => items.push(sort_key),
                None => workspaces.push((team, vec![sort_key])),
            }
        }
        Ok(workspaces)
    }

    /// Forgets every workspace of `org` its list names (whole, or only
    /// `people` of each), deleting a workspace's items of the list only
    /// after its records, so a forget cut short is finished by its
    /// redelivery.
    pub async fn forget_organization(&self, org: &EnterpriseId, people: &[UserId]) -> Result<Forgotten, PortError> {
        let mut forgotten = Forgotten::default();
        // The organization's own records (kept under its id, as an alert's
        // thread is when Slack names no workspace for the bot).
        let mut workspaces = self.workspaces_of(org).await?;
        let own = organization_team(org);
        if !workspaces.iter().any(|(team, _)| *team == own) {
            workspaces.push((own, Vec::new()));
        }
        for (team, items) in workspaces {
            if people.is_empty() {
                forgotten.records += self.forget_team(&team).await?.records;
            } else {
                for user in people {
                    forgotten.records += self.forget_person(&team, user).await?.records;
                }
                // People forgotten: the workspace keeps its other records,
                // and stays listed.
                continue;
            }
            for item in items {
                self.records.delete_part(&keys::org_teams(org), &item).await?;
            }
        }
        Ok(forgotten)
    }

    /// Deletes everything the team's list names (its channels' memory,
    /// its threads' grants, its people's sealed tokens), then the list.
    pub async fn forget_team(&self, team: &TeamId) -> Result<Forgotten, PortError> {
        let list = keys::team_records(team);
        let mut forgotten = Forgotten::default();
        for (sort_key, state) in self.records.parts(&list, keys::TEAM_RECORD_SORT_PREFIX).await? {
            if let Ok(kept) = serde_json::from_str::<Kept>(&state) {
                for (item, _) in self.records.parts(&kept.partition, &kept.sort_prefix).await? {
                    self.records.delete_part(&kept.partition, &item).await?;
                    forgotten.records += 1;
                }
            }
            self.records.delete_part(&list, &sort_key).await?;
        }
        Ok(forgotten)
    }

    /// Deletes what the bot keeps for `user` of `team`: their sealed
    /// tokens, the thread grants that let their calls run, and their
    /// spend counters. Nothing of
    /// another team's person of the same id is touched: every key names
    /// the team.
    pub async fn forget_person(&self, team: &TeamId, user: &UserId) -> Result<Forgotten, PortError> {
        let mut forgotten = Forgotten::default();
        let tokens = keys::user_partition(team, user);
        for (item, _) in self.records.parts(&tokens, keys::TOKENS_SORT_PREFIX).await? {
            self.records.delete_part(&tokens, &item).await?;
            forgotten.records += 1;
        }
        let list = keys::team_records(team);
        self.records.delete_part(&list, &keys::team_record(&tokens)).await?;
        // What they spent (budgets): their counters, and the list's item for them.
        let spend =
            keys::spend(&crate::budgets::Scope::Person(team.clone(), user.clone()), crate::budgets::Period::Day);
        for (item, _) in self.records.parts(&spend.partition, keys::SPEND_SORT_PREFIX).await? {
            self.records.delete_part(&spend.partition, &item).await?;
            forgotten.records += 1;
        }
        self.records.delete_part(&list, &keys::team_record(&spend.partition)).await?;
        for (_, state) in self.records.parts(&list, &keys::team_record_grants(team)).await? {
            let Ok(kept) = serde_json::from_str::<Kept>(&state) else { continue };
            for (item, grant) in self.records.parts(&kept.partition, &kept.sort_prefix).await? {
                let theirs = serde_json::from_str::<ThreadGrant>(&grant)
                    .is_ok_and(|grant| grant.for_user.as_ref() == Some(user));
                if theirs {
                    self.records.delete_part(&kept.partition, &item).await?;
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

/// An organization's id as Slack names it in team fields (`E…`): what its
/// departures and its own records are keyed by.
pub fn organization_team(org: &EnterpriseId) -> TeamId {
    TeamId::new(org.as_str())
}
