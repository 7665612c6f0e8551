//! Approvals end to end, through the real handlers and the local AWS
//! emulator, from the click: a mention → the worker asks to run a declared
//! POST tool → the responder posts the prompt with buttons in the fake
//! Slack thread → someone else clicks (refused: only they are told who may
//! approve) → the requester clicks → the tool is called exactly once, with
//! its `Idempotency-Key` → the answer lands in the thread; the same click
//! again does nothing more.

use assistant_core::WorkMessage;
use assistant_core::messages::ReplyMessage;
use axum::Router;
use axum::routing::post;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tests::events;
use tests::fake_bedrock::{FakeBedrock, Scripted};
use tests::fake_slack::{CONVERSATIONS_INFO, FakeSlack};
use tests::local_server::LocalServer;
use tests::{Stack, decode_work, emulator_config};

const RESTART_REPLY: &str = include_str!("fixtures/bedrock/converse-tool-use-restart.json");
const CONFIG: &str = include_str!("fixtures/approvals/assistant.json");

/// (path, Idempotency-Key) of every request the team's API got.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

async fn team_api() -> (LocalServer, Seen) {
    let seen: Seen = Arc::default();
    let record = seen.clone();
    let app = Router::new().route(
        "/restart/{service}",
        post(move |request: axum::extract::Request| {
            let seen = record.clone();
            async move {
                let key = request.headers().get("idempotency-key").map(|v| v.to_str().unwrap().to_owned());
                seen.lock().unwrap().push((request.uri().path().to_owned(), key));
                axum::Json(json!({"restarted": true, "pods": 3}))
            }
        }),
    );
    (LocalServer::start(app).await, seen)
}

/// The stack with the approvals configuration (`edit` applied) aimed at a
/// team API that records its calls, and the fakes of Slack and Bedrock.
struct World {
    aws: aws_config::SdkConfig,
    stack: Stack,
    /// Serves until dropped.
    _api: LocalServer,
    seen: Seen,
    slack: FakeSlack,
    bedrock: FakeBedrock,
}

async fn world(edit: impl FnOnce(&mut Value)) -> World {
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    let (api, seen) = team_api().await;
    let port = api.base_url.rsplit(':').next().unwrap();
    let mut config: Value = serde_json::from_str(&CONFIG.replace("{{PORT}}", port)).unwrap();
    edit(&mut config);
    stack.put("config/assistant.json", &config.to_string()).await;
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let bedrock = FakeBedrock::start().await;
    World { aws, stack, _api: api, seen, slack, bedrock }
}

/// One round of the pipeline (see [`tests::Functions::round`]).
async fn round(
    stack: &Stack,
    functions: &tests::Functions,
) -> (Vec<aws_sdk_sqs::types::Message>, Vec<aws_sdk_sqs::types::Message>) {
    functions.round(stack).await
}

#[tokio::test]
async fn only_the_requester_approves_and_the_call_runs_exactly_once() {
    // GIVEN the stack, a team API with a POST tool declared, and a model that wants to call it
    let World { aws, stack, _api, seen, slack, bedrock } = world(|_| {}).await;
    bedrock.script([Scripted::fixture(RESTART_REPLY), Scripted::text("Restarted checkout-api: 3 pods are back.")]);

    let functions = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;
    let ingress = &functions.ingress;
    let round = || round(&stack, &functions);

    // WHEN someone mentions the bot
    assert_eq!(ingress.handle(events::parse(events::APP_MENTION)).await.unwrap()["statusCode"], 200);
    round().await;

    // THEN what the model said so far is streamed and stopped, a prompt
    // with buttons follows it, and nothing ran
    let posted = slack.posted();
    assert_eq!(posted.len(), 2, "{posted:?}");
    let said = "Restarting checkout-api should clear the exhausted pool; I need approval for that.";
    assert_eq!((posted[0].text.as_str(), posted[0].streaming), (said, false), "streamed, then paused");
    let prompt = posted[1].clone();
    assert!(prompt.text.starts_with("<@U061F7AUR> asked: “"), "who asked, quoted: {}", prompt.text);
    assert!(prompt.text.contains("— I propose running `restart_service`"), "the model's proposal: {}", prompt.text);
    assert!(seen.lock().unwrap().is_empty());

    // WHEN someone else clicks Approve
    assert_eq!(ingress.handle(prompt.click(0, "U0BYSTANDER")).await.unwrap()["statusCode"], 200);
    let (work, _) = round().await;
    assert!(matches!(decode_work(&work[0]), WorkMessage::Approval(_)));

    // THEN nothing ran, and only they were told who may approve
    assert!(seen.lock().unwrap().is_empty(), "a bystander's click runs nothing");
    let ephemerals = slack.ephemerals();
    assert_eq!(ephemerals.len(), 1, "{ephemerals:?}");
    assert_eq!(ephemerals[0].0, "U0BYSTANDER");
    assert!(ephemerals[0].1.starts_with("Only <@U061F7AUR> (who asked) may approve"), "{}", ephemerals[0].1);
    assert_eq!(slack.posted().len(), 2, "nothing new in the thread");

    // WHEN the requester clicks Approve
    let requester_click = prompt.click(0, "U061F7AUR");
    assert_eq!(ingress.handle(requester_click.clone()).await.unwrap()["statusCode"], 200);
    round().await;
    round().await;

    // THEN the POST ran exactly once, with its idempotency key, and the answer is in the thread
    let turn_id = format!("T061EG9R6-{}", "Ev0LAN670R");
    assert_eq!(
        *seen.lock().unwrap(),
        [("/restart/checkout-api".to_owned(), Some(format!("{turn_id}:tooluse_R3stArtCh3ckoutAp1x")))]
    );
    // (in the one answer message: the stream, now the whole saved answer)
    let texts: Vec<String> = slack.posted().iter().map(|p| p.text.clone()).collect();
    assert_eq!(texts[0], format!("{said}\n\nRestarted checkout-api: 3 pods are back."), "{texts:?}");
    assert_eq!(texts[1], "✅ <@U061F7AUR> approved running `restart_service`.", "{texts:?}");
    assert_eq!(texts.len(), 2);

    // WHEN the same click arrives again (a double click, or a replay)
    assert_eq!(ingress.handle(requester_click).await.unwrap()["statusCode"], 200);
    let (work, replies) = round().await;

    // THEN nothing more runs or is posted; the click is answered by the
    // prompt put right again (it shows the decision: the clicker approved
    // it, so no note for them alone)
    assert_eq!(work.len(), 1, "the ingress queued it; the worker decides it is stale");
    let answered: Vec<ReplyMessage> =
        replies.iter().map(|r| ReplyMessage::decode(r.body().unwrap()).unwrap()).collect();
    assert!(
        matches!(&answered[..], [ReplyMessage::ApprovalDecided { user, .. }] if user.as_str() == "U061F7AUR"),
        "{answered:?}"
    );
    assert_eq!(slack.posted()[1].text, "✅ <@U061F7AUR> approved running `restart_service`.");
    assert!(slack.ephemerals().iter().all(|(user, _)| user != "U061F7AUR"));
    assert_eq!(seen.lock().unwrap().len(), 1, "the POST never runs twice");
    assert_eq!(slack.posted().len(), 2);
    assert_eq!(bedrock.requests().len(), 2);
}

#[tokio::test]
async fn approve_for_this_thread_lets_the_next_question_run_it_unprompted_until_revoked() {
    // GIVEN the stack and a model that wants the POST tool in each of three questions in one thread
    let World { aws, stack, _api, seen, slack, bedrock } = world(|_| {}).await;
    bedrock.script([
        Scripted::fixture(RESTART_REPLY),
        Scripted::text("Restarted."),
        Scripted::fixture(RESTART_REPLY),
        Scripted::text("Restarted again."),
        Scripted::fixture(RESTART_REPLY),
    ]);
    let functions = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;
    let ingress = &functions.ingress;
    let round = || async {
        for _ in 0..3 {
            round(&stack, &functions).await;
        }
    };
    // A later mention in the same thread, as Slack sends it.
    let follow_up = |event_id: &str, ts: &str| {
        let mention = events::parse(events::APP_MENTION);
        let mut body: Value = serde_json::from_slice(&events::body(&mention)).unwrap();
        body["event_id"] = event_id.into();
        body["event"]["ts"] = ts.into();
        body["event"]["event_ts"] = ts.into();
        body["event"]["thread_ts"] = "1763800000.000100".into();
        events::with_body(&mention, &body.to_string())
    };

    // WHEN the requester clicks "Approve restart_service for this thread (60 min)"
    assert_eq!(ingress.handle(events::parse(events::APP_MENTION)).await.unwrap()["statusCode"], 200);
    round().await;
    let prompt = slack.posted().into_iter().find(|p| p.text.contains("I propose running")).expect("a prompt");
    let actions = prompt.blocks.as_ref().unwrap().as_array().unwrap().iter().find(|b| b["type"] == "actions").cloned();
    let labels: Vec<String> = actions.unwrap()["elements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["text"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(labels, ["Approve", "Approve restart_service for this thread (60 min)", "Deny"]);
    assert_eq!(ingress.handle(prompt.click(1, "U061F7AUR")).await.unwrap()["statusCode"], 200);
    round().await;
    assert_eq!(seen.lock().unwrap().len(), 1, "the approved call ran");
    let decided = slack.posted().into_iter().find(|p| p.ts == prompt.ts).unwrap();
    assert!(decided.text.contains("in this thread without asking until"), "{}", decided.text);
    assert!(decided.text.contains("only when <@U061F7AUR> asks"), "the notice says whom it covers: {}", decided.text);

    // THEN a later question in the thread runs it at once, and the thread is told, with a Revoke button
    assert_eq!(ingress.handle(follow_up("Ev0LAN671S", "1763800100.000200")).await.unwrap()["statusCode"], 200);
    round().await;
    assert_eq!(seen.lock().unwrap().len(), 2, "ran without a prompt");
    let posted = slack.posted();
    assert_eq!(posted.iter().filter(|p| p.text.contains("I propose running")).count(), 0, "no second prompt");
    let notice = posted.iter().find(|p| p.text.starts_with("▶️ Ran `restart_service` without asking")).expect("told");
    assert!(notice.text.contains("<@U061F7AUR> approved `restart_service` for this thread"), "{}", notice.text);
    assert!(notice.text.contains("only when <@U061F7AUR> asks"), "who the grant covers: {}", notice.text);
    assert!(posted.iter().any(|p| p.text.contains("Restarted again.")), "answered");

    // WHEN a bystander clicks Revoke: nothing changes, and only they are told
    assert_eq!(ingress.handle(notice.click(0, "U0BYSTANDER")).await.unwrap()["statusCode"], 200);
    round().await;
    let told = slack.ephemerals();
    assert!(told.iter().any(|(user, text)| user == "U0BYSTANDER" && text.starts_with("Only the person who approved")));

    // WHEN the person who granted it clicks Revoke, the thread is told, and the next call asks again
    assert_eq!(ingress.handle(notice.click(0, "U061F7AUR")).await.unwrap()["statusCode"], 200);
    round().await;
    let posted = slack.posted();
    assert!(posted.iter().any(|p| p.text
        == "🔒 <@U061F7AUR> revoked this thread's approval of `restart_service` (only when <@U061F7AUR> asks): \
                    its calls ask again."));
    assert_eq!(ingress.handle(follow_up("Ev0LAN672T", "1763800200.000300")).await.unwrap()["statusCode"], 200);
    round().await;
    assert_eq!(seen.lock().unwrap().len(), 2, "asked, not run");
    assert_eq!(slack.posted().iter().filter(|p| p.text.contains("I propose running")).count(), 1, "a new prompt");
}

#[tokio::test]
async fn a_bystander_asking_in_a_granted_thread_gets_a_prompt_not_a_run() {
    // GIVEN the requester's restart approved "for this thread"
    let World { aws, stack, _api, seen, slack, bedrock } = world(|_| {}).await;
    bedrock.script([Scripted::fixture(RESTART_REPLY), Scripted::text("Restarted."), Scripted::fixture(RESTART_REPLY)]);
    let functions = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;
    let ingress = &functions.ingress;
    let round = || async {
        for _ in 0..3 {
            round(&stack, &functions).await;
        }
    };
    assert_eq!(ingress.handle(events::parse(events::APP_MENTION)).await.unwrap()["statusCode"], 200);
    round().await;
    let prompt = slack.posted().into_iter().find(|p| p.text.contains("I propose running")).expect("a prompt");
    assert_eq!(ingress.handle(prompt.click(1, "U061F7AUR")).await.unwrap()["statusCode"], 200);
    round().await;
    assert_eq!(seen.lock().unwrap().len(), 1, "the approved call ran");

    // WHEN someone else mentions the bot in that thread, and the model wants the same tool
    let mention = events::parse(events::APP_MENTION);
    let mut body: Value = serde_json::from_slice(&events::body(&mention)).unwrap();
    body["event_id"] = "Ev0BYSTAND1".into();
    body["event"]["user"] = "U0BYSTANDER".into();
    body["event"]["ts"] = "1763800100.000200".into();
    body["event"]["event_ts"] = "1763800100.000200".into();
    body["event"]["thread_ts"] = "1763800000.000100".into();
    assert_eq!(ingress.handle(events::with_body(&mention, &body.to_string())).await.unwrap()["statusCode"], 200);
    round().await;

    // THEN nothing ran for them: their call waits for its own prompt
    assert_eq!(seen.lock().unwrap().len(), 1, "a bystander's call never runs under another person's grant");
    let posted = slack.posted();
    assert!(!posted.iter().any(|p| p.text.starts_with("▶️ Ran")), "nothing ran unprompted: {posted:?}");
    // (the first prompt now says who approved it: the one asking is theirs)
    let prompts: Vec<_> = posted.iter().filter(|p| p.text.contains("I propose running")).collect();
    assert_eq!(prompts.len(), 1, "a prompt of their own: {posted:?}");
    assert!(prompts[0].text.starts_with("<@U0BYSTANDER> asked"), "{}", prompts[0].text);
}

/// The tools Bedrock was offered in request `at`.
fn offered(bedrock: &FakeBedrock, at: usize) -> Vec<String> {
    let requests = bedrock.requests();
    let tools = requests[at].body["toolConfig"]["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().filter_map(|t| t["toolSpec"]["name"].as_str().map(str::to_owned)).collect()
}

#[tokio::test]
async fn a_member_of_another_organization_asking_in_a_shared_channel_gets_no_changing_tool() {
    // GIVEN a policy giving everyone in the workspace the POST tool, and a model that calls it anyway
    let World { aws, stack, _api, seen, slack, bedrock } = world(|_| {}).await;
    bedrock.script([Scripted::fixture(RESTART_REPLY), Scripted::text("I can't restart it from here.")]);
    let functions = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;
    let ingress = &functions.ingress;

    // WHEN a member of another organization mentions the bot in a Slack Connect channel, as Slack sends it
    let mention = events::with_body(&events::parse(events::APP_MENTION), testkit::fixtures::APP_MENTION_EXTERNAL);
    assert_eq!(ingress.handle(mention).await.unwrap()["statusCode"], 200);
    for _ in 0..3 {
        round(&stack, &functions).await;
    }

    // THEN the model was offered no tool of the workspace's rule, the call ran nowhere, and nobody was asked
    assert!(!offered(&bedrock, 0).contains(&"restart_service".to_owned()), "{:?}", offered(&bedrock, 0));
    assert!(seen.lock().unwrap().is_empty(), "the POST never ran");
    let posted = slack.posted();
    assert!(!posted.iter().any(|p| p.text.contains("I propose running")), "no prompt: {posted:?}");
    assert!(posted.iter().any(|p| p.text.contains("I can't restart it from here.")), "answered: {posted:?}");
    let second = &bedrock.requests()[1].body;
    assert!(second.to_string().contains("not allowed here for the person who asked"), "the model read why");
}

#[tokio::test]
async fn a_member_of_another_organization_never_approves_even_when_named_an_approver() {
    // GIVEN a prompt for the workspace member's call, whose approvers name the other organization's member
    let World { aws, stack, _api, seen, slack, bedrock } =
        world(|config| config["approvals"] = json!({"approvers": ["requester", "U0VENDOR01"]})).await;
    bedrock.script([Scripted::fixture(RESTART_REPLY), Scripted::text("Restarted.")]);
    let functions = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;
    let ingress = &functions.ingress;
    assert_eq!(ingress.handle(events::parse(events::APP_MENTION)).await.unwrap()["statusCode"], 200);
    round(&stack, &functions).await;
    let prompt = slack.posted().into_iter().find(|p| p.text.contains("I propose running")).expect("a prompt");

    // WHEN they click Approve, and then "Approve for this thread", as Slack sends their clicks (their own team)
    for action in [0, 1] {
        let theirs = prompt.click_from(testkit::fixtures::BLOCK_ACTIONS_APPROVE_EXTERNAL, action, "U0VENDOR01");
        assert_eq!(ingress.handle(theirs).await.unwrap()["statusCode"], 200);
        round(&stack, &functions).await;
    }

    // THEN nothing ran, no grant was given, and only they were told why, twice
    assert!(seen.lock().unwrap().is_empty(), "an outsider's click runs nothing");
    let told: Vec<_> = slack.ephemerals().into_iter().filter(|(user, _)| user == "U0VENDOR01").collect();
    assert_eq!(told.len(), 2, "{told:?}");
    assert!(told[0].1.starts_with("Only members of the workspace this app is installed in"), "{}", told[0].1);
    assert!(!slack.posted().iter().any(|p| p.text.starts_with("✅")), "the prompt still waits");

    // AND the workspace member who asked approves it: it runs once
    assert_eq!(ingress.handle(prompt.click(0, "U061F7AUR")).await.unwrap()["statusCode"], 200);
    round(&stack, &functions).await;
    round(&stack, &functions).await;
    assert_eq!(seen.lock().unwrap().len(), 1);
}
