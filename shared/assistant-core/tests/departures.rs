//! Departures through the core alone (memory records): a team's or a
//! person's records forgotten by key, never another team's.

use assistant_core::departures::{Departed, Departures};
use assistant_core::grants::{ThreadGrant, ThreadGrants};
use assistant_core::keys;
use assistant_core::memory::{ChannelMemory, Memory};
use assistant_core::messages::ForgetReason;
use assistant_core::messages::ThreadRef;
use assistant_core::oauth::{ConnectionKey, SealedVault, TokenVault, Tokens};
use assistant_core::ports::{PortError, VersionedRecords};
use assistant_core::turn::{TurnId, TurnStatus};
use slack::{ChannelId, Ts};
use slack::{EnterpriseId, TeamId, UserId};
use std::sync::Arc;
use testkit::memory::{MemoryRecords, MemorySealer};

const AT: i64 = 1_763_800_500;

/// The bot's records for `team`: a channel's memory, a grant for
/// `user` and one for someone else, `user`'s sealed tokens.
async fn keep(records: &Arc<MemoryRecords>, team: &str, user: &str) {
    keep_in(records, None, team, user).await;
}

/// The same, written by an org-wide deployment in `org`.
async fn keep_in(records: &Arc<MemoryRecords>, org: Option<&str>, team: &str, user: &str) {
    for written in try_keep_in(records, org, team, user).await {
        written.unwrap();
    }
}

/// The same writes, each one's result (memory, the two grants, tokens).
async fn try_keep_in(
    records: &Arc<MemoryRecords>,
    org: Option<&str>,
    team: &str,
    user: &str,
) -> Vec<Result<(), PortError>> {
    let mut written = Vec::new();
    let org = org.map(EnterpriseId::new);
    let (team, user) = (TeamId::new(team), UserId::new(user));
    let thread = ThreadRef { team: team.clone(), channel: ChannelId::new("C1"), thread_ts: Ts::new("1700.01") };
    let memory = Memory {
        turn_id: TurnId::new(format!("{team}-Ev1")),
        thread_ts: thread.thread_ts.clone(),
        settled_at: AT - 100,
        question: "why is checkout failing".into(),
        summary: "a deploy".into(),
        tools: Vec::new(),
        status: TurnStatus::Answered,
        rating: None,
    };
    let memories = ChannelMemory::new(records.clone(), 3600).in_organization(org.clone());
    written.push(memories.remember(&team, &thread.channel, &memory).await);
    let grants = ThreadGrants::new(records.clone()).in_organization(org.clone());
    for for_user in [user.clone(), UserId::new("U0OTHER")] {
        let grant = ThreadGrant {
            scope: "deploys__*".into(),
            for_user: Some(for_user.clone()),
            granted_by: for_user,
            turn_id: memory.turn_id.clone(),
            granted_at: AT - 50,
            until: AT + 3600,
            revoked: None,
        };
        written.push(grants.put(&thread, &grant).await);
    }
    let vault = SealedVault::new(records.clone(), Arc::new(MemorySealer)).in_organization(org);
    let key = ConnectionKey { team: team.clone(), user: user.clone(), provider: "tracker".into() };
    let tokens: Tokens = serde_json::from_str(r#"{"access_token": "at-1"}"#).unwrap();
    written.push(vault.put(&key, &tokens, AT - 10).await);
    written
}

async fn count(records: &Arc<MemoryRecords>, team: &str, user: &str) -> (usize, usize, usize) {
    let thread = ThreadRef { team: TeamId::new(team), channel: ChannelId::new("C1"), thread_ts: Ts::new("1700.01") };
    let memory = records.parts(&keys::memory_partition(&thread.team, &thread.channel), "THREAD#").await.unwrap();
    let grants = records.parts(&keys::grants_partition(&thread), "GRANT#").await.unwrap();
    let tokens = records.parts(&keys::user_partition(&thread.team, &UserId::new(user)), "TOKENS#").await;
    (memory.len(), grants.len(), tokens.unwrap().len())
}

#[tokio::test]
async fn an_uninstall_forgets_the_team_and_no_other_and_again_is_harmless() {
    // GIVEN two teams' records, a person of the same id in each
    let records = Arc::new(MemoryRecords::default());
    keep(&records, "T1", "U1").await;
    keep(&records, "T2", "U1").await;
    let departures = Departures::new(records.clone());
    // WHEN T1 uninstalls
    let departed = Departed { at: AT, reason: ForgetReason::AppUninstalled };
    departures.depart(&TeamId::new("T1"), None, departed).await.unwrap();
    let forgotten = departures.forget_team(&TeamId::new("T1")).await.unwrap();
    // THEN T1 keeps nothing, T2 everything
    assert_eq!(forgotten.records, 4, "a memory record, two grants, one person's tokens");
    assert_eq!(count(&records, "T1", "U1").await, (0, 0, 0));
    assert_eq!(count(&records, "T2", "U1").await, (1, 2, 1));
    assert!(records.parts(&keys::team_records(&TeamId::new("T1")), "KEPT#").await.unwrap().is_empty());
    // AND a redelivery forgets nothing more and keeps the departure
    assert_eq!(departures.forget_team(&TeamId::new("T1")).await.unwrap().records, 0);
    departures.depart(&TeamId::new("T1"), None, departed).await.unwrap();
    let earlier = Departed { at: AT - 1000, ..departed };
    departures.depart(&TeamId::new("T1"), None, earlier).await.unwrap();
    // Work asked before the uninstall stops; after it (a reinstall), goes on.
    let (t1, t2, u1) = (TeamId::new("T1"), TeamId::new("T2"), UserId::new("U1"));
    assert_eq!(departures.stopping(&t1, &u1, AT - 1).await.unwrap(), Some(departed), "the later time stays");
    assert_eq!(departures.stopping(&t1, &u1, AT + 1).await.unwrap(), None);
    assert_eq!(departures.stopping(&t2, &u1, AT - 1).await.unwrap(), None, "another team goes on");
}

#[tokio::test]
async fn a_record_whose_listing_failed_is_not_kept_so_an_uninstall_misses_nothing() {
    for (org, listing, prefix) in [
        (None, keys::team_records(&TeamId::new("T1")), keys::TEAM_RECORD_SORT_PREFIX),
        (Some("E1"), keys::org_teams(&EnterpriseId::new("E1")), keys::ORG_TEAM_SORT_PREFIX),
    ] {
        // GIVEN a table that refuses the listing of each record once
        let records = Arc::new(MemoryRecords::default());
        for _ in 0..4 {
            records.fail_next_put(&listing, prefix);
        }
        // WHEN the memory, two grants and the tokens are written
        let written = try_keep_in(&records, org, "T1", "U1").await;
        // THEN each write fails, and none of the records is kept unlisted
        assert!(written.iter().all(Result::is_err), "{org:?}: {written:?}");
        assert_eq!(count(&records, "T1", "U1").await, (0, 0, 0), "{org:?}");
        // AND written again, every record is listed: the uninstall forgets them all
        keep_in(&records, org, "T1", "U1").await;
        let departures = Departures::new(records.clone());
        let (t1, e1) = (TeamId::new("T1"), EnterpriseId::new("E1"));
        let forgotten = match org {
            None => departures.forget_team(&t1).await.unwrap(),
            Some(_) => departures.forget_organization(&e1, &[]).await.unwrap(),
        };
        assert_eq!(forgotten.records, 4, "{org:?}");
        assert_eq!(count(&records, "T1", "U1").await, (0, 0, 0), "{org:?}");
    }
}

#[tokio::test]
async fn a_person_who_left_loses_their_tokens_and_grants_only_in_their_team() {
    let records = Arc::new(MemoryRecords::default());
    keep(&records, "T1", "U1").await;
    keep(&records, "T2", "U1").await;
    let departures = Departures::new(records.clone());
    let (t1, t2, u1) = (TeamId::new("T1"), TeamId::new("T2"), UserId::new("U1"));
    let departed = Departed { at: AT, reason: ForgetReason::UserDeleted };
    departures.depart(&t1, Some(&u1), departed).await.unwrap();
    let forgotten = departures.forget_person(&t1, &u1).await.unwrap();
    assert_eq!(forgotten.records, 2, "their tokens and their grant");
    assert_eq!(count(&records, "T1", "U1").await, (1, 1, 0), "the channel's memory and others' grants stay");
    assert_eq!(count(&records, "T2", "U1").await, (1, 2, 1), "the same id in another team keeps everything");
    assert_eq!(departures.forget_person(&t1, &u1).await.unwrap().records, 0, "again: nothing more");
    assert_eq!(departures.stopping(&t1, &u1, AT - 5).await.unwrap(), Some(departed));
    assert_eq!(departures.stopping(&t1, &UserId::new("U0OTHER"), AT - 5).await.unwrap(), None);
    assert_eq!(departures.stopping(&t2, &u1, AT - 5).await.unwrap(), None);
}

#[tokio::test]
async fn an_organizations_uninstall_forgets_each_of_its_workspaces_and_no_other_org_or_workspace() {
    // GIVEN an org-wide deployment's records in two workspaces of its
    // organization, and a workspace it never listed (another deployment's
    // keys, or records written before the organization was configured)
    let records = Arc::new(MemoryRecords::default());
    keep_in(&records, Some("E0ORG1"), "T1", "W1").await;
    keep_in(&records, Some("E0ORG1"), "T2", "W1").await;
    keep_in(&records, Some("E0OTHER"), "T3", "W1").await;
    let org = EnterpriseId::new("E0ORG1");
    let departures = Departures::new(records.clone()).in_organization(Some(org.clone()));
    let listed = departures.workspaces_of(&org).await.unwrap();
    let teams: Vec<&str> = listed.iter().map(|(team, _)| team.as_str()).collect();
    assert_eq!(teams, ["T1", "T2"], "each workspace once, however many kinds it keeps");
    assert_eq!(listed[0].1.len(), 3, "a memory's, a grant's and a token's item");
    // WHEN the organization departs and is forgotten
    let departed = Departed { at: AT, reason: ForgetReason::AppUninstalled };
    let org_team = assistant_core::departures::organization_team(&org);
    departures.depart(&org_team, None, departed).await.unwrap();
    let forgotten = departures.forget_organization(&org, &[]).await.unwrap();
    // THEN both its workspaces keep nothing, and its list is gone
    assert_eq!(forgotten.records, 8, "two workspaces' memory, grants and tokens");
    assert_eq!(count(&records, "T1", "W1").await, (0, 0, 0));
    assert_eq!(count(&records, "T2", "W1").await, (0, 0, 0));
    assert!(records.parts(&keys::org_teams(&org), keys::ORG_TEAM_SORT_PREFIX).await.unwrap().is_empty());
    // AND another organization's workspace keeps everything
    assert_eq!(count(&records, "T3", "W1").await, (1, 2, 1));
    let other = EnterpriseId::new("E0OTHER");
    assert_eq!(records.parts(&keys::org_teams(&other), "TEAM#").await.unwrap().len(), 3);
    // AND a redelivery forgets nothing more
    assert_eq!(departures.forget_organization(&org, &[]).await.unwrap().records, 0);
    // Work of any workspace of the organization asked before stops; after
    // it (a reinstall) goes on. A deployment of one workspace does not read
    // the organization's departure.
    let (t2, t9, w1) = (TeamId::new("T2"), TeamId::new("T9NEW"), UserId::new("W1"));
    assert_eq!(departures.stopping(&t2, &w1, AT - 1).await.unwrap(), Some(departed));
    assert_eq!(departures.stopping(&t9, &w1, AT - 1).await.unwrap(), Some(departed), "a workspace never listed too");
    assert_eq!(departures.stopping(&t2, &w1, AT + 1).await.unwrap(), None);
    let single = Departures::new(records.clone());
    assert_eq!(single.stopping(&t2, &w1, AT - 1).await.unwrap(), None);
}

#[tokio::test]
async fn a_person_who_left_the_organization_is_forgotten_in_each_of_its_workspaces_only() {
    let records = Arc::new(MemoryRecords::default());
    keep_in(&records, Some("E0ORG1"), "T1", "W1").await;
    keep_in(&records, Some("E0ORG1"), "T2", "W1").await;
    let org = EnterpriseId::new("E0ORG1");
    let departures = Departures::new(records.clone()).in_organization(Some(org.clone()));
    let w1 = UserId::new("W1");
    let departed = Departed { at: AT, reason: ForgetReason::UserDeleted };
    let org_team = assistant_core::departures::organization_team(&org);
    departures.depart(&org_team, Some(&w1), departed).await.unwrap();
    let forgotten = departures.forget_organization(&org, std::slice::from_ref(&w1)).await.unwrap();
    assert_eq!(forgotten.records, 4, "their tokens and their grant, in each workspace");
    assert_eq!(count(&records, "T1", "W1").await, (1, 1, 0), "the channels' memory and others' grants stay");
    assert_eq!(count(&records, "T2", "W1").await, (1, 1, 0));
    assert_eq!(departures.workspaces_of(&org).await.unwrap().len(), 2, "the workspaces stay listed");
    assert_eq!(departures.stopping(&TeamId::new("T2"), &w1, AT - 1).await.unwrap(), Some(departed));
    assert_eq!(departures.stopping(&TeamId::new("T2"), &UserId::new("W2"), AT - 1).await.unwrap(), None);
}
