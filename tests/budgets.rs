//! Budgets end to end: a signed mention through the ingress, worker and
//! responder handlers against the local AWS emulator, with the fake
//! Bedrock's usage at Sonnet's prices. A person whose daily budget one
//! step spends gets that step and then the message saying which budget,
//! until when and whom to ask, in the thread; their next question makes no
//! model call; their Home tab shows what they spent and, as an admin, what
//! the deployment spent (as Slack's own models accept it).

use serde_json::json;
use tests::events;
use tests::fake_bedrock::{FakeBedrock, Scripted, TOOL_USE_REPLY};
use tests::fake_slack::{CONVERSATIONS_INFO, FakeSlack};
use tests::{Stack, emulator_config};

/// The person the fixtures' mention is from.
const ASKER: &str = "U061F7AUR";

async fn rounds(stack: &Stack, functions: &tests::Functions) {
    for _ in 0..3 {
        functions.round(stack).await;
    }
}

fn mention(event_id: &str) -> serde_json::Value {
    let parsed = events::parse(events::APP_MENTION);
    let mut body: serde_json::Value = serde_json::from_slice(&events::body(&parsed)).unwrap();
    body["event_id"] = event_id.into();
    events::with_body(&parsed, &body.to_string())
}

#[tokio::test]
async fn a_budget_one_step_spends_ends_the_turn_with_which_until_when_and_whom_to_ask_and_the_home_tab_shows_it() {
    // GIVEN a daily budget of half a cent a person, the asker one of the
    // budgets' admins, and a model whose first step costs about 0.8 cents
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    let config = json!({
        "budgets": {
            "per_person": {"daily_usd": 0.005},
            "deployment": {"monthly_usd": 500},
            "admins": [ASKER]
        }
    });
    stack.put("config/assistant.json", &config.to_string()).await;
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let bedrock = FakeBedrock::start().await;
    bedrock.script([Scripted::fixture(TOOL_USE_REPLY), Scripted::text("Never asked for.")]);
    let functions = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;

    // WHEN they ask
    assert_eq!(functions.ingress.handle(mention("Ev0BUDGET01")).await.unwrap()["statusCode"], 200);
    rounds(&stack, &functions).await;

    // THEN one model call is made, and the thread is told the budget is spent
    assert_eq!(bedrock.requests().len(), 1, "the second step was never asked for");
    let posted = slack.posted();
    let answer = posted.last().expect("an answer").text.clone();
    assert!(answer.contains("your daily budget for this assistant is spent ($0.0078 of $0.005)"), "{answer}");
    assert!(answer.contains("It starts again at 00:00 UTC on"), "{answer}");
    // (a real mention in the message's blocks; the notification text pings no one)
    let blocks = posted.last().and_then(|post| post.blocks.clone()).expect("blocks").to_string();
    assert!(blocks.contains(&format!("To raise it, ask <@{ASKER}>.")), "{blocks}");
    assert!(answer.contains("`search_docs`"), "what was tried: {answer}");

    // WHEN they ask again the same day
    assert_eq!(functions.ingress.handle(mention("Ev0BUDGET02")).await.unwrap()["statusCode"], 200);
    rounds(&stack, &functions).await;
    // THEN no model is called and they are told again
    assert_eq!(bedrock.requests().len(), 1);
    let answer = slack.posted().last().expect("an answer").text.clone();
    assert!(answer.starts_with("I can't start on this: your daily budget"), "{answer}");

    // WHEN they open the Home tab
    let parsed = events::parse(events::APP_MENTION);
    let mut opened: serde_json::Value = serde_json::from_slice(&events::body(&parsed)).unwrap();
    opened["event_id"] = "Ev0BUDGETHOME".into();
    opened["event"] = json!({
        "type": "app_home_opened", "user": ASKER, "channel": "D0HOME0001", "tab": "home",
        "event_ts": "1763800300.000100"
    });
    assert_eq!(
        functions.ingress.handle(events::with_body(&parsed, &opened.to_string())).await.unwrap()["statusCode"],
        200
    );
    rounds(&stack, &functions).await;

    // THEN it shows their day and, as an admin, the deployment's month
    let published = slack.calls("views.publish");
    let [home] = &published[..] else { panic!("one Home tab: {published:?}") };
    let view = &home.form["view"];
    assert!(view.contains("*You*, daily: $0.0078 of $0.005 (15"), "{view}");
    assert!(view.contains("*Everyone, this deployment*, monthly: $0.0078 of $500.00 (0%)"), "{view}");
}
