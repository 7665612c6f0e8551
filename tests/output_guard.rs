//! One output guard for everything the bot posts, end to end through the
//! real handlers: Slack's mass mentions (`<!channel>`, `<!here>`,
//! `<!everyone>`, `<!subteam^…>`) that the model writes, that a tool's result
//! carries into a task card, or that `post_message` sends to another channel
//! reach Slack as text, whichever function sent them; a kind the deployment
//! allows (`SLACK_ALLOWED_SPECIAL_MENTIONS`) pings, and only that kind.
//! Before the guard, the responder alone applied the deployment's rule: the
//! worker's task cards and `post_message` pinged.

use axum::Router;
use axum::routing::get;
use serde_json::json;
use tests::events;
use tests::fake_bedrock::{FakeBedrock, Scripted};
use tests::fake_slack::{CONVERSATIONS_INFO, FakeSlack};
use tests::local_server::LocalServer;
use tests::{Stack, emulator_config};

const STATUS_REPLY: &str = include_str!("fixtures/bedrock/converse-tool-use-deploy-status.json");
const ANSWER_CONFIG: &str = include_str!("fixtures/output_guard/answer.json");
const POST_CONFIG: &str = include_str!("fixtures/output_guard/post_message.json");
const EVERY_KIND: &str = "<!channel> <!here> <!subteam^S1|@ops> <!everyone>";

#[tokio::test]
async fn mentions_in_an_answer_and_in_a_tools_result_on_its_card_ping_nobody() {
    // GIVEN a team API whose answer carries every kind of mass mention, and
    // a model that calls it, then answers with every kind too
    let app = Router::new()
        .route("/deploys/{service}", get(|| async { axum::Json(json!({"status": format!("degraded {EVERY_KIND}")})) }));
    let api = LocalServer::start(app).await;
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    stack
        .put("config/assistant.json", &ANSWER_CONFIG.replace("{{PORT}}", api.base_url.rsplit(':').next().unwrap()))
        .await;
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let bedrock = FakeBedrock::start().await;
    bedrock.script([Scripted::fixture(STATUS_REPLY), Scripted::text(&format!("{EVERY_KIND} the pool is exhausted."))]);
    let functions = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;

    // WHEN a mention is answered
    assert_eq!(functions.ingress.handle(events::parse(events::APP_MENTION)).await.unwrap()["statusCode"], 200);
    for _ in 0..3 {
        functions.round(&stack).await;
    }

    // THEN the answer and the tool's card reached the thread, with no live mass mention in any call
    let posted = slack.posted();
    let answer = posted.iter().find(|message| message.text.contains("the pool is exhausted")).expect("answered");
    assert!(answer.text.contains("&lt;!channel>"), "{}", answer.text);
    let card = answer.tasks.iter().find(|task| task["status"] == "complete").expect("the tool's card");
    assert!(card["output"].as_str().is_some_and(|line| line.contains("degraded")), "{card}");
    assert_eq!(slack.live_mass_mentions(&[]), Vec::<String>::new());
}

/// A mention's turn that asks to `post_message` every kind of mass mention
/// in another channel, approved by the person who asked; the post as Slack
/// received it (`chat.postMessage` to `C0INCIDENT1`).
async fn approved_post(slack: &FakeSlack, special_mentions: slack::mentions::SpecialMentions) -> String {
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    stack.put("config/assistant.json", POST_CONFIG).await;
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let bedrock = FakeBedrock::start().await;
    let input = json!({"channel": "C0INCIDENT1", "text": format!("{EVERY_KIND} checkout is down")});
    bedrock.script([Scripted::tool_calls(&[("tooluse_post", "post_message", input)]), Scripted::text("Posted.")]);
    let config = worker::Config { special_mentions, ..tests::worker_config(&stack, slack.url()) };
    let functions = tests::Functions::start_with(&aws, &stack, &bedrock, config).await;

    assert_eq!(functions.ingress.handle(events::parse(events::APP_MENTION)).await.unwrap()["statusCode"], 200);
    functions.round(&stack).await;
    let prompt = slack.posted().into_iter().find(|message| message.text.contains("post_message")).expect("a prompt");
    assert_eq!(functions.ingress.handle(prompt.click(0, "U061F7AUR")).await.unwrap()["statusCode"], 200);
    for _ in 0..3 {
        functions.round(&stack).await;
    }
    let posts: Vec<String> = slack
        .calls("chat.postMessage")
        .into_iter()
        .filter(|call| call.form.get("channel").map(String::as_str) == Some("C0INCIDENT1"))
        .map(|call| call.form["text"].clone())
        .collect();
    assert_eq!(posts.len(), 1, "{posts:?}\n{:#?}", slack.posted());
    posts[0].clone()
}

#[tokio::test]
async fn post_message_to_another_channel_pings_nobody_the_deployment_did_not_allow() {
    // GIVEN a deployment that allows no special mention (the default)
    let slack = FakeSlack::start().await;

    // WHEN an approved post_message carries every kind
    let post = approved_post(&slack, Default::default()).await;

    // THEN the post reached the channel with each of them as text
    assert_eq!(post, "&lt;!channel> &lt;!here> &lt;!subteam^S1|@ops> &lt;!everyone> checkout is down");
    assert_eq!(slack.live_mass_mentions(&[]), Vec::<String>::new());
}

#[tokio::test]
async fn post_message_pings_with_the_kind_the_deployment_allows_and_no_other() {
    // GIVEN a deployment that allows `here` (as its worker's environment says)
    let slack = FakeSlack::start().await;
    let (_, allowed) = slack.deployment_allows("here");
    let allowed = slack::mentions::SpecialMentions::parse(&allowed).unwrap();

    // WHEN an approved post_message carries every kind
    let post = approved_post(&slack, allowed).await;

    // THEN `<!here>` pings; the others are text
    assert_eq!(post, "&lt;!channel> <!here> &lt;!subteam^S1|@ops> &lt;!everyone> checkout is down");
    assert_eq!(slack.live_mass_mentions(&["here"]), Vec::<String>::new());
}
