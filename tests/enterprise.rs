//! An org-wide install (Enterprise Grid) end to end: Slack's signed events
//! in the org-app field layout through the real ingress (configured with
//! `SLACK_ENTERPRISE_ID`), the work queue, the worker and the responder,
//! against the emulator and the fakes. A second workspace of the org is
//! answered; another organization's install is acknowledged and nothing is
//! queued; a Slack Connect partner whose event names our org everywhere
//! but in its author is external (only external tools); a `tool_policy`
//! rule naming a workspace applies there and not in another workspace.

use assistant_core::WorkMessage;
use serde_json::{Value, json};
use slack::{EnterpriseId, Home, Membership};
use std::sync::Arc;
use testkit::fixtures;
use tests::fake_bedrock::{FakeBedrock, Scripted};
use tests::fake_slack::{CONVERSATIONS_INFO, FakeSlack};
use tests::{Stack, decode_work, emulator_config, events};

/// The org's workspaces rule: everything in the second workspace, the
/// clock elsewhere, the clock for partners.
const POLICY: &str = r#"{"tool_policy": [
    {"channels": "*", "external": true, "tools": ["current_time"]},
    {"channels": "*", "teams": ["T0SISTER1"], "tools": ["*"]},
    {"channels": "*", "tools": ["current_time"]}
]}"#;

/// The tools Bedrock was offered in its latest request.
fn offered(bedrock: &FakeBedrock) -> Vec<String> {
    let requests = bedrock.requests();
    let last = requests.last().expect("a model call");
    let tools = last.body["toolConfig"]["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().filter_map(|t| t["toolSpec"]["name"].as_str().map(str::to_owned)).collect()
}

fn signed(body: &str) -> Value {
    events::with_body(&events::parse(events::APP_MENTION), body)
}

fn edited(payload: &str, edit: impl FnOnce(&mut Value)) -> String {
    let mut value: Value = serde_json::from_str(payload).unwrap();
    edit(&mut value);
    value.to_string()
}

#[tokio::test]
async fn an_org_install_answers_its_workspaces_refuses_other_orgs_and_keeps_partners_external() {
    // GIVEN an org-wide deployment of E0GRIDORG1 with a policy naming one workspace
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    stack.put("config/assistant.json", POLICY).await;
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let bedrock = FakeBedrock::start().await;
    bedrock.script([
        Scripted::text("Sister workspace: the pool is exhausted."),
        Scripted::text("Main workspace: the pool is exhausted."),
        Scripted::text("Partner: here is what I can say."),
    ]);
    let mut functions = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;
    let config =
        ingress::Config { home: Home::Organization(EnterpriseId::new("E0GRIDORG1")), ..tests::ingress_config(&stack) };
    functions.ingress = ingress::Ingress::new(
        config,
        &tests::Role::Ingress.config(&aws),
        Arc::new(testkit::clock::ManualClock::at(events::SIGNED_AT + 1)),
    );

    // WHEN another organization's install of the app sends a mention
    let response = functions.ingress.handle(signed(fixtures::APP_MENTION_OTHER_ORG)).await.unwrap();
    // THEN it is acknowledged (Slack does not retry) and nothing is queued
    assert_eq!(response["statusCode"], 200, "{response}");
    assert!(stack.receive_work().await.unwrap().is_empty(), "another org's event queues nothing");

    // WHEN a person of the org's second workspace mentions the bot
    let response = functions.ingress.handle(signed(fixtures::APP_MENTION_GRID)).await.unwrap();
    assert_eq!(response["statusCode"], 200, "{response}");
    let (work, _) = functions.round(&stack).await;
    // THEN the turn is theirs, of the team, keyed by their workspace, and answered there
    let WorkMessage::StartTurn(request) = decode_work(&work[0]) else { panic!("a turn") };
    assert_eq!((request.thread.team.as_str(), request.membership), ("T0SISTER1", Membership::Home));
    let posted = slack.posted();
    assert!(posted.iter().any(|p| p.text.contains("Sister workspace: the pool is exhausted.")), "{posted:?}");
    // AND the rule naming their workspace decided: more than the clock
    let sister = offered(&bedrock);
    assert!(sister.contains(&"current_time".to_owned()) && sister.len() > 1, "{sister:?}");
    assert!(sister.contains(&"search_docs".to_owned()), "{sister:?}");

    // WHEN a person of another workspace of the org asks
    let main = edited(fixtures::APP_MENTION_GRID, |v| {
        v["event_id"] = "Ev0GRIDMAIN1".into();
        for field in ["team_id", "context_team_id"] {
            v[field] = "T0MAINWS01".into();
        }
        for field in ["team", "user_team", "source_team"] {
            v["event"][field] = "T0MAINWS01".into();
        }
        v["event"]["user"] = "W0MAIN0001".into();
    });
    assert_eq!(functions.ingress.handle(signed(&main)).await.unwrap()["statusCode"], 200);
    let (work, _) = functions.round(&stack).await;
    let WorkMessage::StartTurn(request) = decode_work(&work[0]) else { panic!("a turn") };
    assert_eq!((request.thread.team.as_str(), request.membership), ("T0MAINWS01", Membership::Home));
    // THEN the workspace rule is passed over there: the clock only (and the thread's own tools)
    let elsewhere = offered(&bedrock);
    assert!(elsewhere.contains(&"current_time".to_owned()), "{elsewhere:?}");
    assert!(!elsewhere.contains(&"search_docs".to_owned()), "{elsewhere:?}");
    assert!(slack.posted().iter().any(|p| p.text.contains("Main workspace: the pool is exhausted.")));

    // WHEN a Slack Connect partner of another org writes in a shared channel,
    // the event's every field of where (outer team and enterprise, context,
    // installation) naming our org and workspace, and its `team` claiming ours
    let claiming = edited(fixtures::APP_MENTION_GRID_CONNECT, |v| v["event"]["team"] = json!("T0SISTER1"));
    assert_eq!(functions.ingress.handle(signed(&claiming)).await.unwrap()["statusCode"], 200);
    let (work, _) = functions.round(&stack).await;
    // THEN they are external, and get only the external rule's tools
    let WorkMessage::StartTurn(request) = decode_work(&work[0]) else { panic!("a turn") };
    assert_eq!((request.user.as_str(), request.membership), ("W0PARTNER01", Membership::External));
    let partner = offered(&bedrock);
    assert!(partner.contains(&"current_time".to_owned()), "{partner:?}");
    assert!(!partner.contains(&"search_docs".to_owned()), "the workspace rule is not theirs: {partner:?}");
    assert!(slack.posted().iter().any(|p| p.text.contains("Partner: here is what I can say.")));
}
