//! Departures through the core alone (memory records): a team's or a
//! person's records forgotten by key, never another team's.

use assistant_core::departures::{Departed, Departures};
use assistant_core::grants::{ThreadGrant, ThreadGrants};
use assistant_core::keys;
use assistant_core::memory::{ChannelMemory, Memory};
use assistant_core::messages::ForgetReason;
use assistant_core::messages::ThreadRef;
use assistant_core::oauth::{ConnectionKey, SealedVault, TokenVault, Tokens};
use assistant_core::ports::VersionedRecords;
use assistant_core::turn::{TurnId, TurnStatus};
use slack::{ChannelId, Ts};
use slack::{TeamId, UserId};
use std::sync::Arc;
use testkit::memory::{MemoryRecords, MemorySealer};

const AT: i64 = 1_763_800_500;

/// The bot's records for `team`: a channel's memory, a grant for
/// `user` and one for someone else, `user`'s sealed tokens.
async fn keep(records: &Arc<MemoryRecords>, team: &str, user: &str) {
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
    ChannelMemory::new(records.clone(), 3600).remember(&team, &thread.channel, &memory).await.unwrap();
    let grants = ThreadGrants::new(records.clone());
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
        grants.put(&thread, &grant).await.unwrap();
    }
    let vault = SealedVault::new(records.clone(), Arc::new(MemorySealer));
    let key = ConnectionKey { team: team.clone(), user: user.clone(), provider: "tracker".into() };
    let tokens: Tokens = serde_json::from_str(r#"{"access_token": "at-1"}"#).unwrap();
    vault.put(&key, &tokens, AT - 10).await.unwrap();
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
