//! The app's lifecycle end to end: Slack's signed `app_uninstalled`,
//! `tokens_revoked` and `user_change` through the ingress handler, the work
//! queue and the worker handler, against the local AWS emulator's table.
//! The team's records (a channel's memory, a thread's grants, a person's
//! sealed tokens) are forgotten by key, another team's are not; a replay
//! forgets nothing more; a forged event forgets nothing.

use adapters_aws::dynamodb::DynamoRecords;
use assistant_core::ThreadRef;
use assistant_core::departures::Departures;
use assistant_core::grants::{ThreadGrant, ThreadGrants};
use assistant_core::keys;
use assistant_core::memory::{ChannelMemory, Memory};
use assistant_core::ports::VersionedRecords;
use assistant_core::turn::{TurnId, TurnStatus};
use slack::{ChannelId, EnterpriseId, Home, TeamId, Ts, UserId};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use testkit::fixtures;
use tests::fake_bedrock::FakeBedrock;
use tests::fake_slack::FakeSlack;
use tests::{Stack, decode_work, emulator_config, events, sqs_event};

const WORK_QUEUE_ARN: &str = "arn:aws:sqs:us-east-1:123456789012:slack-assistant-work.fifo";
/// The fixtures' installing team, and another team a person of the same
/// id belongs to.
const OURS: &str = "T061EG9R6";
const THEIRS: &str = "T0VENDOR01";
const PERSON: &str = "U061F7AUR";

fn records(stack: &Stack) -> Arc<dyn VersionedRecords> {
    Arc::new(DynamoRecords::new(stack.dynamodb.clone(), &stack.table))
}

fn thread(team: &str) -> ThreadRef {
    ThreadRef { team: TeamId::new(team), channel: ChannelId::new("C0LAN2Q65"), thread_ts: Ts::new("1763800000.000100") }
}

/// What the worker keeps for `team`: a channel's memory record, and a
/// grant for [`PERSON`] in a thread.
async fn keep(records: &Arc<dyn VersionedRecords>, team: &str) {
    keep_in(records, team, None).await
}

/// [`keep`], by a worker of an org-wide deployment of `organization`.
async fn keep_in(records: &Arc<dyn VersionedRecords>, team: &str, organization: Option<EnterpriseId>) {
    let thread = thread(team);
    let memory = Memory {
        turn_id: TurnId::new(format!("{team}-Ev1")),
        thread_ts: thread.thread_ts.clone(),
        settled_at: 1_763_800_100,
        question: "why is checkout-api failing".into(),
        summary: "the pool".into(),
        tools: Vec::new(),
        status: TurnStatus::Answered,
        rating: None,
    };
    let retention = 90 * 24 * 3600;
    ChannelMemory::new(records.clone(), retention)
        .in_organization(organization.clone())
        .remember(&thread.team, &thread.channel, &memory)
        .await
        .unwrap();
    let grant = ThreadGrant {
        scope: "deploys__*".into(),
        for_user: Some(UserId::new(PERSON)),
        granted_by: UserId::new(PERSON),
        turn_id: memory.turn_id.clone(),
        granted_at: 1_763_800_100,
        until: 1_763_803_700,
        revoked: None,
    };
    ThreadGrants::new(records.clone()).in_organization(organization).put(&thread, &grant).await.unwrap();
}

/// (memory records, grants) kept for `team`.
async fn kept(records: &Arc<dyn VersionedRecords>, team: &str) -> (usize, usize) {
    let thread = thread(team);
    let memory = records.parts(&keys::memory_partition(&thread.team, &thread.channel), "THREAD#").await.unwrap();
    let grants = records.parts(&keys::grants_partition(&thread), "GRANT#").await.unwrap();
    (memory.len(), grants.len())
}

/// The stack's table through a fault proxy whose next `PutItem` and next
/// `DeleteItem` meet `fault` (the SDK making `attempts` tries).
async fn losing_a_put_and_a_delete(
    stack: &Stack,
    attempts: u32,
    fault: tests::fault_proxy::Fault,
) -> (tests::fault_proxy::FaultProxy, Arc<dyn VersionedRecords>) {
    use tests::fault_proxy::{FaultProxy, Plan, Upstream};
    let endpoint = tests::env_from_test_command("AWS_ENDPOINT_URL");
    let proxy = FaultProxy::start(Upstream::Aws, &endpoint, Plan::none()).await;
    let aws = tests::config_through(proxy.url(), attempts, adapters_aws::config::worker_timeouts()).await;
    proxy.script("DynamoDB_20120810.PutItem", fault);
    proxy.script("DynamoDB_20120810.DeleteItem", fault);
    (proxy, Arc::new(DynamoRecords::new(aws_sdk_dynamodb::Client::new(&aws), &stack.table)))
}

fn deadline() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64 + 600_000
}

#[tokio::test]
async fn an_uninstall_forgets_the_team_once_however_often_it_is_delivered_and_a_forged_one_nothing() {
    // GIVEN what the bot keeps for our team and for another team
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    let (slack, bedrock) = (FakeSlack::start().await, FakeBedrock::start().await);
    let tests::Functions { ingress, worker, .. } = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;
    let records = records(&stack);
    keep(&records, OURS).await;
    keep(&records, THEIRS).await;
    let mention = events::parse(events::APP_MENTION);

    // WHEN a forged tokens_revoked arrives (signed with another secret)
    let mut forged = events::with_body(&mention, fixtures::TOKENS_REVOKED);
    let signature = slack::SigningSecret::new("not-the-secret").unwrap().sign(events::SIGNED_AT, b"x");
    forged["headers"]["x-slack-signature"] = signature.into();
    // THEN 401, nothing queued, nothing forgotten
    assert_eq!(ingress.handle(forged).await.unwrap()["statusCode"], 401);
    assert!(stack.receive_work().await.unwrap().is_empty());
    assert_eq!(kept(&records, OURS).await, (1, 1));

    // WHEN Slack sends app_uninstalled, and retries it
    let uninstall = events::with_body(&mention, fixtures::APP_UNINSTALLED);
    assert_eq!(ingress.handle(uninstall.clone()).await.unwrap()["statusCode"], 200);
    let retry = events::with_header(&uninstall, "x-slack-retry-num", "1");
    assert_eq!(ingress.handle(retry).await.unwrap()["statusCode"], 200);
    // THEN one forget is queued (the retry is the same message to SQS)
    let work = stack.receive_work().await.unwrap();
    assert_eq!(work.len(), 1, "{work:?}");
    let assistant_core::WorkMessage::Forget(forget) = decode_work(&work[0]) else { panic!("a forget") };
    assert_eq!((forget.team.as_str(), forget.users.len()), (OURS, 0));

    // WHEN the worker handles it, and the queue delivers it again (a lost answer)
    let response = worker.handle(sqs_event(&work, WORK_QUEUE_ARN), deadline()).await.unwrap();
    assert_eq!(tests::batch_failures(&response), Vec::<String>::new(), "{response}");
    let again = worker.handle(sqs_event(&work, WORK_QUEUE_ARN), deadline()).await.unwrap();
    assert_eq!(tests::batch_failures(&again), Vec::<String>::new(), "{again}");
    // THEN our team keeps nothing, the other team everything, and work
    // asked before the uninstall stops
    assert_eq!(kept(&records, OURS).await, (0, 0));
    assert_eq!(kept(&records, THEIRS).await, (1, 1));
    let departures = Departures::new(records.clone());
    let person = UserId::new(PERSON);
    assert!(departures.stopping(&TeamId::new(OURS), &person, 1_763_800_000).await.unwrap().is_some());
    assert!(departures.stopping(&TeamId::new(THEIRS), &person, 1_763_800_000).await.unwrap().is_none());
    assert!(slack.calls("chat.postMessage").is_empty(), "nobody is told: the token is gone");
}

#[tokio::test]
async fn a_person_of_another_team_leaving_forgets_nothing_of_ours() {
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    let (slack, bedrock) = (FakeSlack::start().await, FakeBedrock::start().await);
    let tests::Functions { ingress, worker, .. } = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;
    let records = records(&stack);
    keep(&records, OURS).await;
    let mention = events::parse(events::APP_MENTION);

    // GIVEN a person of another team, with the id of one of ours, deleted
    let theirs = fixtures::USER_CHANGE_DELETED
        .replace("\"team_id\": \"T061EG9R6\",\n      \"name\"", "\"team_id\": \"T0VENDOR01\",\n      \"name\"");
    assert_ne!(theirs, fixtures::USER_CHANGE_DELETED);
    assert_eq!(ingress.handle(events::with_body(&mention, &theirs)).await.unwrap()["statusCode"], 200);
    // THEN nothing is queued and ours keeps their grant
    assert!(stack.receive_work().await.unwrap().is_empty());
    assert_eq!(kept(&records, OURS).await, (1, 1));

    // WHEN our person is deleted: their grant goes, the channel's memory stays
    let ours = events::with_body(&mention, fixtures::USER_CHANGE_DELETED);
    assert_eq!(ingress.handle(ours).await.unwrap()["statusCode"], 200);
    let work = stack.receive_work().await.unwrap();
    assert_eq!(work.len(), 1);
    let response = worker.handle(sqs_event(&work, WORK_QUEUE_ARN), deadline()).await.unwrap();
    assert_eq!(tests::batch_failures(&response), Vec::<String>::new(), "{response}");
    assert_eq!(kept(&records, OURS).await, (1, 0));
}

#[tokio::test]
async fn a_forget_whose_writes_lost_their_answers_is_done_once_by_the_redelivery() {
    use assistant_core::departures::Departed;
    use assistant_core::messages::ForgetReason;
    for (attempts, fault) in tests::fault_proxy::LOST_ANSWERS {
        // GIVEN what the bot keeps for two teams, and a path to the table
        // that loses the answer of the departure's write and of a delete
        let stack = Stack::new(&emulator_config().await).await.unwrap();
        let direct = records(&stack);
        keep(&direct, OURS).await;
        keep(&direct, THEIRS).await;
        let (proxy, lossy) = losing_a_put_and_a_delete(&stack, attempts, fault).await;
        let departures = Departures::new(lossy);
        // WHEN the worker forgets the team, and each failed try is
        // redelivered (as SQS does) until one succeeds
        let team = TeamId::new(OURS);
        let departed = Departed { at: 1_763_800_500, reason: ForgetReason::AppUninstalled };
        let mut tries = 0;
        loop {
            tries += 1;
            let attempt = async {
                departures.depart(&team, None, departed).await?;
                departures.forget_team(&team).await
            };
            match attempt.await {
                Ok(_) => break,
                Err(err) => assert!(tries < 5, "{fault:?}: never done: {err}"),
            }
        }
        // THEN the team is forgotten whole, the other team not at all, and
        // the departure stands once
        let injected = proxy.injected_by_kind();
        assert_eq!(injected.get(&fault), Some(&2), "{fault:?}: both answers were lost: {injected:?}");
        assert_eq!(kept(&direct, OURS).await, (0, 0), "{fault:?}");
        assert_eq!(kept(&direct, THEIRS).await, (1, 1), "{fault:?}");
        let stopping = Departures::new(direct.clone());
        let person = UserId::new(PERSON);
        assert_eq!(stopping.stopping(&team, &person, 1_763_800_000).await.unwrap(), Some(departed), "{fault:?}");
        assert_eq!(stopping.stopping(&team, &person, 1_763_800_600).await.unwrap(), None, "asked after: goes on");
    }
}

#[tokio::test]
async fn an_org_wide_uninstall_forgets_every_workspace_of_the_org_and_another_orgs_nothing() {
    // GIVEN an org-wide deployment of E0GRIDORG1 that kept records in two of its workspaces, and a team outside it
    const ORG: &str = "E0GRIDORG1";
    const SISTER: &str = "T0SISTER1";
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    let (slack, bedrock) = (FakeSlack::start().await, FakeBedrock::start().await);
    let org = EnterpriseId::new(ORG);
    let worker_config = worker::Config { organization: Some(org.clone()), ..tests::worker_config(&stack, slack.url()) };
    let tests::Functions { worker, .. } = tests::Functions::start_with(&aws, &stack, &bedrock, worker_config).await;
    let ingress = ingress::Ingress::new(
        ingress::Config { home: Home::Organization(org.clone()), ..tests::ingress_config(&stack) },
        &tests::Role::Ingress.config(&aws),
        Arc::new(testkit::clock::ManualClock::at(events::SIGNED_AT + 1)),
    );
    let records = records(&stack);
    keep_in(&records, OURS, Some(org.clone())).await;
    keep_in(&records, SISTER, Some(org.clone())).await;
    keep(&records, THEIRS).await;
    let mention = events::parse(events::APP_MENTION);

    // WHEN another organization's install of the app is uninstalled
    let other = fixtures::APP_UNINSTALLED_ORG.replace(ORG, "E0OTHERORG");
    assert_ne!(other, fixtures::APP_UNINSTALLED_ORG);
    assert_eq!(ingress.handle(events::with_body(&mention, &other)).await.unwrap()["statusCode"], 200);
    // THEN nothing is queued, nothing forgotten
    assert!(stack.receive_work().await.unwrap().is_empty(), "another org's uninstall queues nothing");

    // WHEN ours is (Slack sends it once for the organization, naming no workspace)
    let uninstall = events::with_body(&mention, fixtures::APP_UNINSTALLED_ORG);
    assert_eq!(ingress.handle(uninstall).await.unwrap()["statusCode"], 200);
    let work = stack.receive_work().await.unwrap();
    assert_eq!(work.len(), 1, "{work:?}");
    let assistant_core::WorkMessage::Forget(forget) = decode_work(&work[0]) else { panic!("a forget") };
    assert_eq!((forget.team.as_str(), forget.organization), (ORG, true));
    // AND the worker handles it, and the queue delivers it again
    for delivery in 0..2 {
        let response = worker.handle(sqs_event(&work, WORK_QUEUE_ARN), deadline()).await.unwrap();
        assert_eq!(tests::batch_failures(&response), Vec::<String>::new(), "delivery {delivery}: {response}");
    }

    // THEN both workspaces of the org keep nothing, the team outside it everything
    assert_eq!(kept(&records, OURS).await, (0, 0));
    assert_eq!(kept(&records, SISTER).await, (0, 0));
    assert_eq!(kept(&records, THEIRS).await, (1, 1));
    // AND work asked before it stops in any workspace of the org, one never seen included
    let departures = Departures::new(records.clone()).in_organization(Some(org));
    let person = UserId::new(PERSON);
    for team in [OURS, SISTER, "T0NEVERSEEN"] {
        assert!(departures.stopping(&TeamId::new(team), &person, 1_763_800_000).await.unwrap().is_some(), "{team}");
    }
    assert!(departures.stopping(&TeamId::new(OURS), &person, 1_763_800_600).await.unwrap().is_none(), "asked after");
}

#[tokio::test]
async fn an_organizations_forget_whose_writes_lost_their_answers_is_done_once_by_the_redelivery() {
    use assistant_core::departures::{Departed, organization_team};
    use assistant_core::messages::ForgetReason;
    let org = EnterpriseId::new("E0GRIDORG1");
    for (attempts, fault) in tests::fault_proxy::LOST_ANSWERS {
        // GIVEN two workspaces' records of an org-wide deployment, a team
        // outside it, and a path to the table that loses the answer of the
        // organization's departure and of a delete
        let stack = Stack::new(&emulator_config().await).await.unwrap();
        let direct = records(&stack);
        keep_in(&direct, OURS, Some(org.clone())).await;
        keep_in(&direct, "T0SISTER1", Some(org.clone())).await;
        keep(&direct, THEIRS).await;
        let (proxy, lossy) = losing_a_put_and_a_delete(&stack, attempts, fault).await;
        let departures = Departures::new(lossy).in_organization(Some(org.clone()));
        // WHEN the worker forgets the organization, each failed try redelivered until one succeeds
        let departed = Departed { at: 1_763_800_500, reason: ForgetReason::AppUninstalled };
        let mut tries = 0;
        loop {
            tries += 1;
            let attempt = async {
                departures.depart(&organization_team(&org), None, departed).await?;
                departures.forget_organization(&org, &[]).await
            };
            match attempt.await {
                Ok(_) => break,
                Err(err) => assert!(tries < 5, "{fault:?}: never done: {err}"),
            }
        }
        // THEN both workspaces are forgotten whole, the team outside not at all, the departure standing once
        let injected = proxy.injected_by_kind();
        assert_eq!(injected.get(&fault), Some(&2), "{fault:?}: both answers were lost: {injected:?}");
        assert_eq!(kept(&direct, OURS).await, (0, 0), "{fault:?}");
        assert_eq!(kept(&direct, "T0SISTER1").await, (0, 0), "{fault:?}");
        assert_eq!(kept(&direct, THEIRS).await, (1, 1), "{fault:?}");
        let stopping = Departures::new(direct.clone()).in_organization(Some(org.clone()));
        let person = UserId::new(PERSON);
        let stopped = stopping.stopping(&TeamId::new("T0SISTER1"), &person, 1_763_800_000).await.unwrap();
        assert_eq!(stopped, Some(departed), "{fault:?}");
    }
}
