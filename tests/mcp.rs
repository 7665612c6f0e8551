//! MCP servers as tool providers, against real servers over Streamable
//! HTTP through the process's real HTTP client:
//!
//! - the Model Context Protocol project's reference server
//!   (`@modelcontextprotocol/server-everything` from npm, installed and
//!   started by `infra/test.sh`, which exports `MCP_EVERYTHING_URL`): its
//!   tools are discovered, called by the fake model through their
//!   namespaced names, and gated by approval when not read-only; a second
//!   configured server that never answers costs only its own tools;
//! - a small server written with the SDK's server side
//!   (`tests/support/mcp_server.rs`) for what the reference server cannot
//!   show: an expired session, a revoked token, `isError`, cancellation,
//!   a call whose streamed answer stalls after its first event, and
//!   resources that hold a secret, are huge or enormous, or fail.

use adapters_mcp::StreamableHttpConnector;
use assistant_core::turn::{ToolOutput, ToolStatus, ToolUse};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tests::events;
use tests::fake_bedrock::{FakeBedrock, Scripted};
use tests::fake_slack::{CONVERSATIONS_INFO, FakeSlack};
use tests::mcp_server::{self, McpTestServer, TOKEN};
use tests::{Stack, emulator_config, env_from_test_command, sqs_event};
use tools_mcp::{DISCOVERY_DEADLINE, McpServerConfig, mcp_tools};
use tools_registry::references::Reference;
use tools_registry::{ToolPolicy, ToolRegistry};

const WORK_QUEUE_ARN: &str = "arn:aws:sqs:us-east-1:123456789012:slack-assistant-work.fifo";
const REPLY_QUEUE_ARN: &str = "arn:aws:sqs:us-east-1:123456789012:slack-assistant-reply.fifo";
const CONFIG: &str = include_str!("fixtures/mcp/assistant.json");
const GET_SUM: &str = include_str!("fixtures/mcp/converse-tool-use-get-sum.json");
const TOGGLE_LOGGING: &str = include_str!("fixtures/mcp/converse-tool-use-toggle-logging.json");

/// The assistant configuration with the reference server, and with the
/// silent one when given.
fn config(silent_url: Option<&str>) -> String {
    let everything = env_from_test_command("MCP_EVERYTHING_URL");
    let mut config: Value = serde_json::from_str(
        &CONFIG.replace("{{EVERYTHING_URL}}", &everything).replace("{{SILENT_URL}}", silent_url.unwrap_or("")),
    )
    .unwrap();
    if silent_url.is_none() {
        config["mcp_servers"].as_array_mut().unwrap().retain(|server| server["name"] != "silent");
    }
    config.to_string()
}

/// The names of the tools the model was offered in a Converse request.
fn offered(request: &Value) -> Vec<String> {
    request["toolConfig"]["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["toolSpec"]["name"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

struct Pipeline {
    stack: Stack,
    slack: FakeSlack,
    bedrock: FakeBedrock,
    functions: tests::Functions,
}

impl Pipeline {
    async fn start(config: &str, script: Vec<Scripted>) -> Self {
        let aws = emulator_config().await;
        let stack = Stack::new(&aws).await.unwrap();
        stack.put("config/assistant.json", config).await;
        let slack = FakeSlack::start().await;
        slack.default_reply("conversations.info", CONVERSATIONS_INFO);
        let bedrock = FakeBedrock::start().await;
        bedrock.script(script);
        let functions = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;
        Self { stack, slack, bedrock, functions }
    }

    /// A mention, then the work queue through the worker and the reply
    /// queue through the responder.
    async fn mention(&self) {
        self.mention_with(events::parse(events::APP_MENTION)).await;
    }

    /// As [`Self::mention`], with `event` (another mention).
    async fn mention_with(&self, event: Value) {
        let response = self.functions.ingress.handle(event).await.unwrap();
        assert_eq!(response["statusCode"], 200);
        let deadline = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64 + 600_000;
        let work = self.stack.receive_work().await.unwrap();
        let handled = self.functions.worker.handle(sqs_event(&work, WORK_QUEUE_ARN), deadline).await.unwrap();
        assert_eq!(tests::batch_failures(&handled), Vec::<String>::new(), "{handled}");
        let replies = self.stack.receive(&self.stack.reply_queue.queue).await.unwrap();
        let handled = self.functions.responder.handle(sqs_event(&replies, REPLY_QUEUE_ARN)).await.unwrap();
        assert_eq!(tests::batch_failures(&handled), Vec::<String>::new(), "{handled}");
    }
}

#[tokio::test]
async fn the_reference_servers_tools_are_discovered_and_called_while_a_silent_server_costs_only_its_own() {
    // GIVEN the reference server, and a second server that accepts
    // connections and never answers
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_url = format!("http://{}/mcp", silent.local_addr().unwrap());
    let started = std::time::Instant::now();
    let pipeline = Pipeline::start(
        &config(Some(&silent_url)),
        vec![Scripted::fixture(GET_SUM), Scripted::text("2 + 3 = 5, says the sum tool.")],
    )
    .await;
    // The worker started within the discovery deadline (and some slack for the stack).
    assert!(started.elapsed() < DISCOVERY_DEADLINE + Duration::from_secs(10), "{:?}", started.elapsed());

    // WHEN someone mentions the bot and the model calls get-sum by its namespaced name
    pipeline.mention().await;

    // THEN the model was offered the reference server's tools, none of the silent one's
    let requests = pipeline.bedrock.requests();
    assert_eq!(requests.len(), 2);
    let tools = offered(&requests[0].body);
    for name in ["everything__get-sum", "everything__echo", "everything__toggle-simulated-logging"] {
        assert!(tools.contains(&name.to_owned()), "{name} offered: {tools:?}");
    }
    assert!(!tools.iter().any(|name| name.starts_with("silent__")), "{tools:?}");
    // AND the server's result reached the model
    let second = requests[1].body.to_string();
    assert!(second.contains("The sum of 2 and 3 is 5."), "{second}");
    // AND the answer was posted in the thread
    let posted = pipeline.slack.posted();
    assert!(posted.iter().any(|p| p.text.contains("2 + 3 = 5")), "{posted:?}");
    drop(silent);
}

#[tokio::test]
async fn a_reference_server_tool_that_is_not_read_only_waits_for_approval() {
    // GIVEN the model wants the server's toggle-simulated-logging (readOnlyHint false)
    let pipeline = Pipeline::start(&config(None), vec![Scripted::fixture(TOGGLE_LOGGING)]).await;

    // WHEN someone mentions the bot
    pipeline.mention().await;

    // THEN what the model said is streamed, an approval prompt follows it,
    // and the model heard nothing back (nothing ran)
    let posted = pipeline.slack.posted();
    assert_eq!(posted.len(), 2, "{posted:?}");
    assert_eq!(posted[0].text, "Turning on the server's simulated logging needs your approval.");
    let buttons = posted[1].blocks.as_ref().map(Value::to_string).unwrap_or_default();
    assert!(buttons.contains("everything__toggle-simulated-logging") && buttons.contains("approve"), "{buttons}");
    assert_eq!(pipeline.bedrock.requests().len(), 1);
}

/// The tools of `servers`, discovered now through the process's real
/// HTTP client, allowed everywhere.
async fn registry(servers: Value) -> ToolRegistry {
    let configs: Vec<McpServerConfig> = serde_json::from_value(servers).unwrap();
    let connector = StreamableHttpConnector::new(adapters_slack::http_client());
    let env = |reference: &Reference| (*reference == Reference::Env("TEST_MCP_TOKEN".into())).then(|| TOKEN.to_owned());
    let tools = mcp_tools(&configs, &connector, env, &HashSet::new(), DISCOVERY_DEADLINE).await.unwrap();
    ToolRegistry::new(tools, ToolPolicy::allow_all()).unwrap()
}

async fn call(registry: &ToolRegistry, name: &str, input: Value) -> (ToolStatus, ToolOutput) {
    let call = ToolUse { id: "t1".into(), name: name.into(), input };
    let result = registry.run(&call, &slack::ChannelId::new("C1")).await;
    (result.status, result.output)
}

fn text(output: &ToolOutput) -> String {
    match output {
        ToolOutput::Text(text) => text.clone(),
        other => serde_json::to_string(other).unwrap(),
    }
}

#[tokio::test]
async fn the_reference_servers_images_and_structured_results_are_summarized_and_kept() {
    let url = env_from_test_command("MCP_EVERYTHING_URL");
    let registry = registry(json!([{"name": "everything", "url": url}])).await;

    let (status, output) = call(&registry, "everything__get-tiny-image", json!({})).await;
    let shown = text(&output);
    assert_eq!(status, ToolStatus::Success, "{shown}");
    assert!(shown.contains("[image: image/png,") && shown.contains("(not shown)"), "{shown}");
    assert!(shown.len() < 1_000, "the image's data is not pasted: {} bytes", shown.len());

    let (status, output) = call(&registry, "everything__get-structured-content", json!({"location": "Chicago"})).await;
    assert_eq!(status, ToolStatus::Success);
    let ToolOutput::Json(structured) = output else { panic!("structured content stays JSON: {output:?}") };
    assert!(structured.get("temperature").is_some(), "{structured}");

    // Input the server's schema refuses never reaches it.
    let (status, output) = call(&registry, "everything__get-structured-content", json!({"location": "Atlantis"})).await;
    assert_eq!(status, ToolStatus::Error, "{output:?}");
}

fn test_server(url: &str, timeout_secs: u64) -> Value {
    json!([{"name": "flaky", "url": url, "headers": {"Authorization": "Bearer ${env:TEST_MCP_TOKEN}"},
            "timeout_secs": timeout_secs}])
}

#[tokio::test]
async fn an_expired_session_is_reinitialized_and_the_call_retried_once() {
    let server = McpTestServer::start().await;
    let registry = registry(test_server(&server.url, 5)).await;
    assert_eq!(call(&registry, "flaky__upper", json!({"text": "before"})).await.1, ToolOutput::Text("BEFORE".into()));

    server.expire_sessions().await;
    let (status, output) = call(&registry, "flaky__upper", json!({"text": "after"})).await;

    assert_eq!((status, output), (ToolStatus::Success, ToolOutput::Text("AFTER".into())));
    assert_eq!(server.seen.sessions.load(Ordering::SeqCst), 2, "one new session");
    assert_eq!(server.seen.calls.load(Ordering::SeqCst), 2, "the call ran once after the new session");
}

#[tokio::test]
async fn a_revoked_token_is_an_auth_error_result_and_a_wrong_one_drops_the_server_at_start_up() {
    let server = McpTestServer::start().await;
    let registry = registry(test_server(&server.url, 5)).await;
    server.seen.revoked.store(true, Ordering::SeqCst);

    let (status, output) = call(&registry, "flaky__upper", json!({"text": "x"})).await;

    assert_eq!(status, ToolStatus::Error);
    assert!(text(&output).contains("refused our credentials (HTTP 401)"), "{output:?}");

    // A server that refuses us at start-up offers nothing; the others still do.
    let wrong = json!([{"name": "flaky", "url": server.url, "headers": {"Authorization": "Bearer wrong"}},
                       {"name": "everything", "url": env_from_test_command("MCP_EVERYTHING_URL"), "tools": ["echo"]}]);
    let registry = self::registry(wrong).await;
    let offered: Vec<String> =
        registry.advertised(&slack::ChannelId::new("C1")).into_iter().map(|spec| spec.name).collect();
    assert_eq!(offered, ["everything__echo"]);
}

#[tokio::test]
async fn an_error_the_tool_reports_is_an_error_result_the_model_can_act_on() {
    let server = McpTestServer::start().await;
    let registry = registry(test_server(&server.url, 5)).await;
    let (status, output) = call(&registry, "flaky__fails", json!({})).await;
    assert_eq!((status, output), (ToolStatus::Error, ToolOutput::Text("disk quota exceeded on /var/data".into())));
}

#[tokio::test]
async fn a_slow_tool_hits_its_timeout_and_the_server_is_told_to_stop() {
    let server = McpTestServer::start().await;
    let registry = registry(test_server(&server.url, 1)).await;
    let started = std::time::Instant::now();

    let (status, output) = call(&registry, "flaky__slow", json!({})).await;

    assert_eq!(status, ToolStatus::Error);
    assert!(text(&output).contains("did not finish within 1 s"), "{output:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    // The cancellation reaches the server shortly after.
    for _ in 0..50 {
        if server.seen.cancelled.load(Ordering::SeqCst) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the server was never told the call was cancelled");
}

#[tokio::test]
async fn a_call_whose_streamed_answer_stalls_after_its_first_event_ends_at_the_calls_timeout() {
    // GIVEN a session with a server whose answer to `slow` is an SSE stream
    // that opens with its priming event, then says nothing for a minute
    let server = McpTestServer::start().await;
    let endpoint = assistant_core::mcp::McpEndpoint {
        name: "flaky".into(),
        url: server.url.clone(),
        headers: vec![("Authorization".into(), format!("Bearer {TOKEN}"))],
        signing: None,
        elicitation: false,
        tasks: false,
    };
    let connector = StreamableHttpConnector::new(adapters_slack::http_client());
    let session = assistant_core::mcp::McpConnector::connect(&connector, &endpoint).await.unwrap();

    // WHEN the adapter calls it with half a second to answer
    let timeout = Duration::from_millis(500);
    let started = std::time::Instant::now();
    let called = tokio::time::timeout(Duration::from_secs(20), session.call_tool("slow", Default::default(), timeout))
        .await
        .expect("the call ends: a stalled stream never holds the worker");

    // THEN it ends then, as a timeout, not a wait for the stream
    assert!(matches!(called, Err(assistant_core::mcp::McpError::TimedOut(t)) if t == timeout), "{called:?}");
    let took = started.elapsed();
    assert!(took >= timeout && took < timeout + Duration::from_secs(3), "{took:?}");
}

#[tokio::test]
async fn a_server_that_restarted_and_refused_us_for_a_while_is_used_again_when_it_is_back() {
    let server = McpTestServer::start().await;
    let registry = registry(test_server(&server.url, 5)).await;
    // The server restarts (sessions gone) and refuses everyone for a while.
    server.expire_sessions().await;
    server.seen.revoked.store(true, Ordering::SeqCst);
    let (status, _) = call(&registry, "flaky__upper", json!({"text": "down"})).await;
    assert_eq!(status, ToolStatus::Error);

    server.seen.revoked.store(false, Ordering::SeqCst);
    let (status, output) = call(&registry, "flaky__upper", json!({"text": "back"})).await;

    assert_eq!((status, output), (ToolStatus::Success, ToolOutput::Text("BACK".into())));
}

#[tokio::test]
async fn a_server_behind_aws_iam_gets_every_request_signed_and_verified() {
    use aws_credential_types::Credentials;
    let server = McpTestServer::start_signed("mcp-iam-secret").await;
    let servers = json!([{"name": "gateway", "url": server.url,
        "auth": {"aws_iam": {"service": "execute-api", "region": "eu-west-1"}}}]);
    let configs: Vec<McpServerConfig> = serde_json::from_value(servers).unwrap();
    let signer = |secret: &str| {
        let credentials = Credentials::new("AKIDWORKER", secret, Some("session".into()), None, "test");
        std::sync::Arc::new(adapters_sigv4::Signer::with_credentials(credentials, "us-east-1"))
    };
    let none = |_: &Reference| None;

    // Signed with the right key: discovered, called, every request verified.
    let connector = StreamableHttpConnector::new(adapters_slack::http_client()).with_signer(signer("mcp-iam-secret"));
    let tools = mcp_tools(&configs, &connector, none, &HashSet::new(), DISCOVERY_DEADLINE).await.unwrap();
    let registry = ToolRegistry::new(tools, ToolPolicy::allow_all()).unwrap();
    let (status, output) = call(&registry, "gateway__upper", json!({"text": "signed"})).await;
    assert_eq!(status, ToolStatus::Success, "{output:?}");
    assert!(text(&output).contains("SIGNED"), "{output:?}");
    assert!(server.seen.signed.load(Ordering::SeqCst) >= 3, "initialize, initialized, tools/list, tools/call");
    assert!(server.seen.refused_signatures.lock().unwrap().is_empty(), "{:?}", server.seen.refused_signatures);

    // Signed with another key: the server refuses; the tools are not offered.
    let connector = StreamableHttpConnector::new(adapters_slack::http_client()).with_signer(signer("wrong-key"));
    let tools = mcp_tools(&configs, &connector, none, &HashSet::new(), DISCOVERY_DEADLINE).await.unwrap();
    assert!(tools.is_empty(), "a server that refuses us offers nothing");
    assert!(!server.seen.refused_signatures.lock().unwrap().is_empty());
}

/// The reference server's connector, counting the sessions it opens.
struct Counting {
    inner: StreamableHttpConnector,
    connects: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl assistant_core::mcp::McpConnector for Counting {
    async fn connect(
        &self,
        endpoint: &assistant_core::mcp::McpEndpoint,
    ) -> Result<std::sync::Arc<dyn assistant_core::mcp::McpSession>, assistant_core::mcp::McpError> {
        self.connects.fetch_add(1, Ordering::SeqCst);
        self.inner.connect(endpoint).await
    }
}

#[tokio::test]
async fn a_kept_list_whose_put_lost_its_answer_serves_the_next_start_and_one_never_kept_is_listed_again() {
    use assistant_core::ports::ArtifactStore;
    use std::sync::Arc;
    use tests::fault_proxy::{Fault, FaultProxy, Plan, Upstream};
    use tools_mcp::{KeptLists, kept_or_discovered_tools, tool_list_key};
    use tools_registry::background::Background;
    // GIVEN the reference server, and the bucket behind a proxy that loses
    // answers (the bucket's adapter tries each call ATTEMPTS times)
    let stack = Stack::new(&emulator_config().await).await.unwrap();
    let proxy = FaultProxy::start(Upstream::Aws, &env_from_test_command("AWS_ENDPOINT_URL"), Plan::none()).await;
    let aws = tests::config_through(proxy.url(), 1, adapters_aws::config::worker_timeouts()).await;
    let cache: Arc<dyn ArtifactStore> = Arc::new(tests::artifacts(&aws, &stack.bucket));
    let connector = Arc::new(Counting {
        inner: StreamableHttpConnector::new(adapters_slack::http_client()),
        connects: Default::default(),
    });
    let configs: Vec<McpServerConfig> = serde_json::from_value(
        json!([{"name": "everything", "url": env_from_test_command("MCP_EVERYTHING_URL"), "tools": ["echo", "get-sum"]}]),
    )
    .unwrap();
    let start = || async {
        let background = Background::default();
        let kept = KeptLists {
            cache: cache.clone(),
            clock: Arc::new(assistant_core::SystemClock),
            background: &background,
            changed: Default::default(),
        };
        let no_env = |_: &Reference| None;
        let (tools, _, _) =
            kept_or_discovered_tools(&configs, connector.clone(), no_env, &HashSet::new(), DISCOVERY_DEADLINE, kept)
                .await
                .unwrap();
        background.settle(Duration::from_secs(10)).await;
        let mut names: Vec<String> = tools.iter().map(|tool| tool.spec().name.clone()).collect();
        names.sort();
        (names, connector.connects.load(Ordering::SeqCst))
    };
    let offered = vec!["everything__echo".to_owned(), "everything__get-sum".to_owned()];

    // WHEN the first start's put is applied and its answer lost
    proxy.script("S3 PUT", Fault::AppliedThenReset);
    assert_eq!(start().await, (offered.clone(), 1), "listed live: nothing kept yet");
    // THEN the next start finds the list and does not ask the server
    assert_eq!(start().await, (offered.clone(), 1));

    // WHEN a start's put is refused, every attempt, before anything is written
    stack.s3.delete_object().bucket(&stack.bucket).key(tool_list_key("everything")).send().await.unwrap();
    for _ in 0..adapters_sigv4::ATTEMPTS {
        proxy.script("S3 PUT", Fault::ServerError);
    }
    assert_eq!(start().await, (offered.clone(), 2));
    // THEN the next start lists the server again, and keeps it this time
    assert_eq!(start().await, (offered.clone(), 3));
    assert_eq!(start().await, (offered, 3));
    let injected = proxy.injected_by_kind().values().sum::<u32>();
    assert_eq!(injected, 1 + adapters_sigv4::ATTEMPTS, "every fault injected");
}

/// The reference server with links offered (`elicitation: true`), its
/// calls made without a prompt.
fn eliciting_config() -> String {
    let everything = env_from_test_command("MCP_EVERYTHING_URL");
    json!({
        "tool_policy": [{"channels": "*", "tools": ["everything__*"]}],
        "mcp_servers": [{"name": "everything", "url": everything, "requires_approval": false, "timeout_secs": 20,
                         "elicitation": true}]
    })
    .to_string()
}

fn url_elicitation(input: Value) -> Scripted {
    Scripted::tool_calls(&[("tooluse_link1", "everything__trigger-url-elicitation", input)])
}

/// The asker's ephemeral messages: (text, the link its button opens).
fn links_shown(slack: &FakeSlack) -> Vec<(String, String, String)> {
    slack
        .calls("chat.postEphemeral")
        .into_iter()
        .map(|call| {
            let blocks: Value = serde_json::from_str(call.form.get("blocks").map_or("[]", String::as_str)).unwrap();
            let url = blocks[1]["elements"][0]["url"].as_str().unwrap_or_default().to_owned();
            (call.form["user"].clone(), call.form["text"].clone(), url)
        })
        .collect()
}

#[tokio::test]
async fn a_link_the_reference_server_asks_for_is_shown_to_the_asker_alone_and_the_call_goes_on() {
    // GIVEN the reference server with links offered, and a model that calls
    // its URL elicitation tool with a message that tries to ping everyone
    let pipeline = Pipeline::start(
        &eliciting_config(),
        vec![
            url_elicitation(json!({"url": "https://example.com/consent?step=1", "elicitationId": "e-consent-1",
                                   "message": "Approve <!channel> access to the tracker"})),
            Scripted::text("Consent is asked for; I'll go on once you have approved it."),
        ],
    )
    .await;

    // WHEN someone asks
    pipeline.mention().await;

    // THEN the tool was offered (the server saw links offered at initialize)
    let requests = pipeline.bedrock.requests();
    assert!(offered(&requests[0].body).contains(&"everything__trigger-url-elicitation".to_owned()));
    // AND the asker alone was shown the link, with a button, the message pinging no one
    let shown = links_shown(&pipeline.slack);
    let [(user, text, url)] = &shown[..] else { panic!("one link shown: {shown:?}") };
    assert_eq!((user.as_str(), url.as_str()), ("U061F7AUR", "https://example.com/consent?step=1"));
    assert!(text.contains("*everything* asks you to open a link") && text.contains("&lt;!channel&gt;"), "{text}");
    // AND the server heard it was shown (accept), and its result reached the model
    let second = requests[1].body.to_string();
    assert!(second.contains("User completed the URL elicitation flow"), "{second}");
}

#[tokio::test]
async fn a_call_that_needs_a_link_opened_first_shows_it_and_tells_the_model_to_wait_for_the_person() {
    let pipeline = Pipeline::start(
        &eliciting_config(),
        vec![
            url_elicitation(json!({"url": "https://example.com/authorize", "errorPath": true})),
            Scripted::text("Please open the link I sent you, then ask again."),
        ],
    )
    .await;
    pipeline.mention().await;
    // The server's prerequisite link, shown to the asker alone
    let shown = links_shown(&pipeline.slack);
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert_eq!((shown[0].0.as_str(), shown[0].2.as_str()), ("U061F7AUR", "https://modelcontextprotocol.io"));
    // and the model told what to say, never to retry now
    let second = pipeline.bedrock.requests()[1].body.to_string();
    assert!(second.contains("needs the person who asked to open 1 link(s) first"), "{second}");
    assert!(second.contains("do not call the tool again now"), "{second}");
}

#[tokio::test]
async fn a_link_that_is_not_https_to_a_named_host_is_declined_and_shown_to_nobody() {
    for url in ["javascript:alert(document.cookie)", "http://example.com/plain", "https://good.example@evil.example/"] {
        let pipeline = Pipeline::start(
            &eliciting_config(),
            vec![url_elicitation(json!({"url": url, "elicitationId": "e-bad"})), Scripted::text("It was declined.")],
        )
        .await;
        pipeline.mention().await;
        assert_eq!(links_shown(&pipeline.slack), Vec::<(String, String, String)>::new(), "{url}");
        let second = pipeline.bedrock.requests()[1].body.to_string();
        assert!(second.contains("User declined to open the URL"), "{url}: {second}");
    }
}

#[tokio::test]
async fn without_elicitation_configured_the_server_is_offered_no_links_and_keeps_its_link_tools_to_itself() {
    let pipeline = Pipeline::start(&config(None), vec![Scripted::fixture(GET_SUM), Scripted::text("2 + 3 = 5.")]).await;
    pipeline.mention().await;
    let tools = offered(&pipeline.bedrock.requests()[0].body);
    assert!(tools.contains(&"everything__get-sum".to_owned()), "{tools:?}");
    assert!(!tools.contains(&"everything__trigger-url-elicitation".to_owned()), "{tools:?}");
}

/// A signed click on a form's button (`action_id`) by `user`.
fn form_click(action_id: &str, form_id: &str, user: &str) -> Value {
    let payload = testkit::fixtures::BLOCK_ACTIONS_APPROVE
        .replace(slack::interaction::APPROVE_ACTION_ID, action_id)
        .replace("turn-7f3a:call-1", form_id)
        .replace("U061F7AUR", user);
    events::with_body(&events::parse(events::APPROVAL_CLICK), &testkit::fixtures::interaction_form(&payload))
}

/// A signed submission of the form's modal `view` by `user`, with `values`.
fn form_submitted(view: &Value, user: &str, values: Value) -> Value {
    let mut payload: Value = serde_json::from_str(&testkit::fixtures::view_submission(view, "")).unwrap();
    payload["view"]["state"]["values"] = values;
    payload["user"]["id"] = user.into();
    events::with_body(
        &events::parse(events::APPROVAL_CLICK),
        &testkit::fixtures::interaction_form(&payload.to_string()),
    )
}

/// The block of the modal `view` whose input is labelled `label`.
fn block_of(view: &Value, label: &str) -> String {
    view["blocks"].as_array().unwrap().iter().find(|block| block["label"]["text"] == label).unwrap()["block_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_form_the_reference_server_asks_for_is_filled_in_by_the_asker_alone_in_a_modal_and_the_call_goes_on() {
    // GIVEN the reference server with elicitation offered, a model that calls
    // its form tool, and an ingress that opens modals
    let aws = emulator_config().await;
    let stack = Stack::new(&aws).await.unwrap();
    stack.put("config/assistant.json", &eliciting_config()).await;
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let bedrock = FakeBedrock::start().await;
    bedrock.script([
        Scripted::tool_calls(&[("tooluse_form1", "everything__trigger-elicitation-request", json!({}))]),
        Scripted::text("Thanks, Ada: your details reached the server."),
    ]);
    let mut functions = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;
    functions.ingress = tests::ingress_opening_views(&aws, &stack, slack.url());

    // WHEN the person asks; the worker's call waits on the server's form
    assert_eq!(functions.ingress.handle(events::parse(events::APP_MENTION)).await.unwrap()["statusCode"], 200);
    let work = stack.receive_work().await.unwrap();
    let deadline = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64 + 600_000;
    let working = functions.worker.handle(sqs_event(&work, WORK_QUEUE_ARN), deadline);
    let person = async {
        // the responder shows the asker alone the form's message, Answer and Decline
        let form_id = loop {
            let replies = stack.receive(&stack.reply_queue.queue).await.unwrap();
            if !replies.is_empty() {
                functions.responder.handle(sqs_event(&replies, REPLY_QUEUE_ARN)).await.unwrap();
                stack.acknowledge(&stack.reply_queue.queue, &replies).await.unwrap();
            }
            let prompt = slack.calls("chat.postEphemeral").into_iter().find(|call| {
                call.form.get("blocks").is_some_and(|blocks| blocks.contains(slack::interaction::FORM_ANSWER_ACTION_ID))
            });
            if let Some(prompt) = prompt {
                assert_eq!(prompt.form["user"], "U061F7AUR");
                let blocks: Value = serde_json::from_str(&prompt.form["blocks"]).unwrap();
                break blocks[1]["elements"][0]["value"].as_str().unwrap().to_owned();
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        // someone else's click (a forged payload: only the asker sees the
        // button) opens only a notice
        assert_eq!(
            functions
                .ingress
                .handle(form_click(slack::interaction::FORM_ANSWER_ACTION_ID, &form_id, "U0OTHER001"))
                .await
                .unwrap()["statusCode"],
            200
        );
        // the asker's click opens the form
        assert_eq!(
            functions
                .ingress
                .handle(form_click(slack::interaction::FORM_ANSWER_ACTION_ID, &form_id, "U061F7AUR"))
                .await
                .unwrap()["statusCode"],
            200
        );
        let opened = slack.calls("views.open");
        assert_eq!(opened.len(), 2, "{opened:?}");
        assert!(opened[0].form["view"].contains("not one you can answer"), "{}", opened[0].form["view"]);
        let view: Value = serde_json::from_str(&opened[1].form["view"]).unwrap();
        assert_eq!(view["callback_id"], "mcp_form");
        // another person's submission is refused, and a value outside the form is named
        let name = block_of(&view, "String");
        let filled = json!({name.clone(): {"v": {"type": "plain_text_input", "value": "Ada Lovelace"}}});
        let refused = functions.ingress.handle(form_submitted(&view, "U0OTHER001", filled.clone())).await.unwrap();
        assert!(refused["body"].as_str().unwrap_or_default().contains("not one you can answer"), "{refused}");
        let integer = block_of(&view, "Integer");
        let wrong = json!({name.clone(): {"v": {"value": "Ada"}}, integer.clone(): {"v": {"value": "1000"}}});
        let asked_again = functions.ingress.handle(form_submitted(&view, "U061F7AUR", wrong)).await.unwrap();
        let body: Value = serde_json::from_str(asked_again["body"].as_str().unwrap()).unwrap();
        assert_eq!(
            (body["response_action"].as_str(), body["errors"][&integer].as_str()),
            (Some("errors"), Some("out of range"))
        );
        // their answer closes the modal
        let taken = functions.ingress.handle(form_submitted(&view, "U061F7AUR", filled)).await.unwrap();
        assert_eq!(
            (taken["statusCode"].as_u64(), taken.get("body").and_then(Value::as_str).unwrap_or_default()),
            (Some(200), "")
        );
    };
    let (handled, ()) = tokio::join!(working, person);
    assert_eq!(tests::batch_failures(&handled.unwrap()), Vec::<String>::new());

    // THEN the server got their answer and the model read its result
    let second = bedrock.requests()[1].body.to_string();
    assert!(
        second.contains("User provided the requested information") && second.contains("Name: Ada Lovelace"),
        "{second}"
    );
}

#[tokio::test]
async fn a_form_nobody_answers_is_cancelled_when_the_call_nears_its_timeout_and_the_model_is_told() {
    let everything = env_from_test_command("MCP_EVERYTHING_URL");
    let config = json!({
        "tool_policy": [{"channels": "*", "tools": ["everything__*"]}],
        "mcp_servers": [{"name": "everything", "url": everything, "requires_approval": false, "timeout_secs": 14,
                         "elicitation": true}]
    });
    let pipeline = Pipeline::start(
        &config.to_string(),
        vec![
            Scripted::tool_calls(&[("tooluse_form2", "everything__trigger-elicitation-request", json!({}))]),
            Scripted::text("Nobody filled in the form, so I stopped there."),
        ],
    )
    .await;
    pipeline.mention().await;
    let second = pipeline.bedrock.requests()[1].body.to_string();
    assert!(second.contains("User cancelled the elicitation dialog"), "the server heard cancel: {second}");
}

#[tokio::test]
async fn the_reference_servers_resource_links_are_named_to_the_model_which_reads_one_with_read_resource() {
    // GIVEN the reference server with its resources on
    let mut config: Value = serde_json::from_str(&config(None)).unwrap();
    config["mcp_servers"][0]["resources"] = json!(true);
    let link = "demo://resource/dynamic/text/2";
    let pipeline = Pipeline::start(
        &config.to_string(),
        vec![
            Scripted::tool_calls(&[("tooluse_links", "everything__get-resource-links", json!({"count": 2}))]),
            Scripted::tool_calls(&[("tooluse_read", "everything__read_resource", json!({"uri": link}))]),
            Scripted::text("Resource 2 is a plaintext resource."),
        ],
    )
    .await;

    // WHEN someone mentions the bot, the model asks for links, then reads one
    pipeline.mention().await;

    // THEN the model was offered the read tool, read the links naming it, then the resource's text
    let requests = pipeline.bedrock.requests();
    assert_eq!(requests.len(), 3);
    assert!(offered(&requests[0].body).contains(&"everything__read_resource".to_owned()));
    let links = requests[1].body.to_string();
    assert!(links.contains(&format!("<{link}>, text/plain; read it with everything__read_resource")), "{links}");
    let read = requests[2].body.to_string();
    assert!(read.contains("Resource 2: This is a plaintext resource created at"), "{read}");
    let posted = pipeline.slack.posted();
    assert!(posted.iter().any(|p| p.text.contains("Resource 2 is a plaintext resource.")), "{posted:?}");
}

#[tokio::test]
async fn a_resource_with_a_secret_a_huge_one_and_a_uri_of_another_scheme_reach_the_model_redacted_bounded_and_refused()
{
    // GIVEN our test server with resources on, and a loopback listener
    // standing in for the instance metadata service, counting connections
    let server = McpTestServer::start_open().await;
    let metadata = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let metadata_url = format!("http://{}/latest/meta-data/iam/security-credentials/", metadata.local_addr().unwrap());
    let config = json!({
        "tool_policy": [{"channels": "*", "tools": ["memo__*"]}],
        "mcp_servers": [{"name": "memo", "url": server.url, "resources": true, "timeout_secs": 10}]
    });
    let reads = [
        ("tooluse_secret", mcp_server::RESOURCE_SECRET),
        ("tooluse_huge", mcp_server::RESOURCE_HUGE),
        ("tooluse_file", "file:///etc/passwd"),
        ("tooluse_metadata", metadata_url.as_str()),
    ];
    let calls: Vec<(&str, &str, Value)> =
        reads.iter().map(|(id, uri)| (*id, "memo__read_resource", json!({"uri": uri}))).collect();
    let pipeline =
        Pipeline::start(&config.to_string(), vec![Scripted::tool_calls(&calls), Scripted::text("Read them.")]).await;

    // WHEN the model reads all four at once
    pipeline.mention().await;

    // THEN what the model read back holds no secret, a bounded part of the
    // huge resource with a note, and the server's refusal of the other two
    let requests = pipeline.bedrock.requests();
    assert_eq!(requests.len(), 2);
    let results = requests[1].body.to_string();
    assert!(!results.contains(&mcp_server::resource_key()), "the key never reaches the model");
    assert!(results.contains("region = eu-west-1"), "the rest of the secret's resource does");
    assert!(results.len() < mcp_server::HUGE_RESOURCE_BYTES / 4, "bounded: {} bytes", results.len());
    assert!(results.contains("read_result"), "the model is told how to read on: {}", &results[..2_000]);
    assert!(results.contains("no resource file:///etc/passwd"), "{}", &results[..2_000]);
    // AND every URI went to that server, and nothing else fetched any
    let asked = server.seen.resource_reads.lock().unwrap().clone();
    assert_eq!(asked.len(), 4, "{asked:?}");
    assert!(asked.contains(&metadata_url) && asked.contains(&"file:///etc/passwd".to_owned()), "{asked:?}");
    let connected = tokio::time::timeout(Duration::from_millis(200), metadata.accept()).await;
    assert!(connected.is_err(), "nothing connected to the metadata address");
}

#[tokio::test]
async fn a_resource_larger_than_any_answer_or_one_the_server_fails_to_read_is_an_error_result_the_model_reads() {
    let server = McpTestServer::start().await;
    let mut servers = test_server(&server.url, 10);
    servers[0]["resources"] = json!(true);
    let registry = registry(servers).await;

    let started = std::time::Instant::now();
    let (status, output) = call(&registry, "flaky__read_resource", json!({"uri": mcp_server::RESOURCE_ENORMOUS})).await;
    assert_eq!(status, ToolStatus::Error, "refused past the adapter's limit");
    assert!(text(&output).len() < 2_000 && text(&output).contains("The MCP server flaky"), "{output:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());

    let (status, output) = call(&registry, "flaky__read_resource", json!({"uri": mcp_server::RESOURCE_BROKEN})).await;
    assert_eq!(status, ToolStatus::Error);
    assert!(text(&output).contains("the memo store is down for maintenance"), "{output:?}");

    // The session is still good for the next read.
    let (status, output) = call(&registry, "flaky__read_resource", json!({"uri": mcp_server::RESOURCE_SECRET})).await;
    assert_eq!(status, ToolStatus::Success, "{output:?}");
    assert!(!text(&output).contains(&mcp_server::resource_key()), "{output:?}");
}

#[tokio::test]
async fn a_server_that_changes_its_tools_mid_turn_has_a_removed_tool_refused_and_the_next_turn_offers_the_new_list() {
    // GIVEN our test server with the tools upper and evolve (read-only)
    let server = McpTestServer::start_open().await;
    let config = json!({
        "tool_policy": [{"channels": "*", "tools": ["flaky__*"]}],
        "mcp_servers": [{"name": "flaky", "url": server.url, "timeout_secs": 10}]
    });
    let pipeline = Pipeline::start(
        &config.to_string(),
        vec![
            Scripted::tool_calls(&[("tooluse_evolve", "flaky__evolve", json!({}))]),
            Scripted::tool_calls(&[("tooluse_upper", "flaky__upper", json!({"text": "late"}))]),
            Scripted::text("The server's tools changed under me."),
            Scripted::tool_calls(&[("tooluse_drop", "flaky__drop_table", json!({"table": "orders"}))]),
        ],
    )
    .await;

    // WHEN the model calls evolve (the server drops upper, adds drop_table
    // and says its tools changed), then upper, in the same turn
    pipeline.mention().await;

    // THEN the call of upper is an error result that says why, and never reached the server
    let requests = pipeline.bedrock.requests();
    assert_eq!(requests.len(), 3);
    let refused = requests[2].body.to_string();
    assert!(refused.contains("no longer offers the tool upper"), "{refused}");
    assert_eq!(*server.seen.called.lock().unwrap(), ["evolve"]);

    // WHEN someone asks again, in another thread
    let second = events::with_body_edit(&events::parse(events::APP_MENTION), "Ev0LAN670R", "Ev0LAN670S");
    let second = events::with_body_edit(&second, "1763800000.000100", "1763800000.000200");
    pipeline.mention_with(second).await;

    // THEN the model is offered the new list: drop_table, not upper
    let requests = pipeline.bedrock.requests();
    assert_eq!(requests.len(), 4);
    let tools = offered(&requests[3].body);
    assert!(
        tools.contains(&"flaky__drop_table".to_owned()) && !tools.contains(&"flaky__upper".to_owned()),
        "{tools:?}"
    );
    // AND the new tool, not read-only, waits for approval: a prompt, and nothing ran
    let posted = pipeline.slack.posted();
    let prompt = posted.iter().filter_map(|p| p.blocks.as_ref()).map(Value::to_string).collect::<Vec<_>>().join("\n");
    assert!(prompt.contains("flaky__drop_table") && prompt.contains("approve"), "{posted:?}");
    assert_eq!(*server.seen.called.lock().unwrap(), ["evolve"]);
}

#[tokio::test]
async fn the_reference_servers_prompts_are_the_dms_suggested_prompts_before_the_configured_ones() {
    // GIVEN the reference server with its prompts on
    let mut config: Value = serde_json::from_str(&config(None)).unwrap();
    config["mcp_servers"][0]["prompts"] = json!(true);
    let pipeline = Pipeline::start(&config.to_string(), vec![]).await;

    // WHEN a person opens the bot's DM
    let opened = events::with_body(&events::parse(events::APP_MENTION), testkit::fixtures::APP_HOME_OPENED_MESSAGES);
    assert_eq!(pipeline.functions.ingress.handle(opened).await.unwrap()["statusCode"], 200);
    let work = pipeline.stack.receive_work().await.unwrap();
    let deadline = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64 + 600_000;
    let handled = pipeline.functions.worker.handle(sqs_event(&work, WORK_QUEUE_ARN), deadline).await.unwrap();
    assert_eq!(tests::batch_failures(&handled), Vec::<String>::new(), "{handled}");

    // THEN the server's prompt that needs no argument comes first, the
    // ones that need arguments are left out, the defaults fill up to four
    let calls = pipeline.slack.calls("assistant.threads.setSuggestedPrompts");
    assert_eq!(calls.len(), 1);
    let prompts: Vec<Value> = serde_json::from_str(&calls[0].form["prompts"]).unwrap();
    assert_eq!(prompts.len(), 4, "{prompts:?}");
    assert_eq!(prompts[0], json!({"title": "Simple Prompt", "message": "A prompt with no arguments"}));
    assert!(!prompts.iter().any(|p| p["title"] == "Arguments Prompt"), "{prompts:?}");
    assert!(pipeline.bedrock.requests().is_empty(), "no model call");
}

/// The reference server with its task tools called as tasks, its calls
/// made without a prompt; `extra` joins its configuration.
fn tasks_config(extra: Value) -> String {
    let mut server = json!({"name": "everything", "url": env_from_test_command("MCP_EVERYTHING_URL"),
                            "requires_approval": false, "tasks": true});
    server.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    json!({"tool_policy": [{"channels": "*", "tools": ["everything__*"]}], "mcp_servers": [server]}).to_string()
}

fn research(topic: &str) -> Scripted {
    Scripted::tool_calls(&[("tooluse_task1", "everything__simulate-research-query", json!({"topic": topic}))])
}

impl Pipeline {
    /// A mention handled by a worker with `seconds` left: what it queued on
    /// the work queue (a continuation, when it ran short). With 21 s, the
    /// worker polls a task once and hands it on (it keeps 20 s and the next
    /// poll's wait), before a task of a 2-s wait could have run past it.
    async fn mention_with_little_time(&self, seconds: u64) -> Vec<aws_sdk_sqs::types::Message> {
        let response = self.functions.ingress.handle(events::parse(events::APP_MENTION)).await.unwrap();
        assert_eq!(response["statusCode"], 200);
        let work = self.stack.receive_work().await.unwrap();
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
        let handled = self.functions.worker.handle(sqs_event(&work, WORK_QUEUE_ARN), now + seconds * 1_000).await;
        assert_eq!(tests::batch_failures(&handled.unwrap()), Vec::<String>::new());
        // Handled: deleted, as the event source mapping does, so the thread's
        // FIFO group lets its next message out.
        self.stack.acknowledge(&self.stack.work_queue.queue, &work).await.unwrap();
        self.stack.receive_work().await.unwrap()
    }

    /// `work` through a worker with ten minutes, then the replies through
    /// the responder.
    async fn carry_on(&self, work: &[aws_sdk_sqs::types::Message]) {
        let deadline = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64 + 600_000;
        let handled = self.functions.worker.handle(sqs_event(work, WORK_QUEUE_ARN), deadline).await.unwrap();
        assert_eq!(tests::batch_failures(&handled), Vec::<String>::new(), "{handled}");
        let replies = self.stack.receive(&self.stack.reply_queue.queue).await.unwrap();
        let handled = self.functions.responder.handle(sqs_event(&replies, REPLY_QUEUE_ARN)).await.unwrap();
        assert_eq!(tests::batch_failures(&handled), Vec::<String>::new(), "{handled}");
    }
}

/// The task the turn keeps for its first call, as saved.
async fn kept_task(pipeline: &Pipeline, turn: &assistant_core::TurnId) -> assistant_core::turn::RunningTask {
    use assistant_core::ports::TurnStore;
    let saved = pipeline.stack.turns().load(turn).await.unwrap().expect("the turn is saved");
    let results = saved.transcript.last().expect("the step's results");
    results
        .content
        .iter()
        .find_map(|content| match content {
            assistant_core::turn::Content::ToolResult(result) => match &result.output {
                ToolOutput::Task(task) => Some(task.clone()),
                _ => None,
            },
            _ => None,
        })
        .expect("the call's task is kept in place of its result")
}

#[tokio::test]
async fn a_reference_server_task_is_kept_in_the_turn_polled_from_a_continuation_and_its_report_reaches_the_model() {
    // GIVEN the reference server's research tool, which runs only as a task
    // (four stages of a second), and a worker with too little time to wait
    let pipeline = Pipeline::start(
        &tasks_config(json!({})),
        vec![research("lambda cold starts"), Scripted::text("The research report is in.")],
    )
    .await;

    // WHEN someone asks and the worker runs short while the task works
    let queued = pipeline.mention_with_little_time(21).await;

    // THEN the turn keeps the task (its id and the session that knows it)
    // and a continuation is queued to poll it
    let decoded: Vec<_> = queued.iter().map(tests::decode_work).collect();
    let [assistant_core::WorkMessage::Continue(continuation)] = &decoded[..] else {
        panic!("one continuation: {decoded:?}")
    };
    assert_eq!((continuation.after_step, continuation.waits), (1, 1));
    let task = kept_task(&pipeline, &continuation.turn_id).await;
    assert!(!task.task_id.is_empty() && task.session.is_some(), "{task:?}");
    assert_eq!(pipeline.bedrock.requests().len(), 1, "no model call while the task runs");

    // WHEN the continuation runs
    pipeline.carry_on(&queued).await;

    // THEN the task's report, read with tasks/result, reached the model as the call's result
    let requests = pipeline.bedrock.requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].body.to_string();
    assert!(second.contains("Research Report: lambda cold starts"), "{second}");
    assert!(second.contains("tasks/result"), "the reference server's report explains the flow: {second}");
    // AND the answer was posted in the thread
    let posted = pipeline.slack.posted();
    assert!(posted.iter().any(|post| post.text.contains("The research report is in.")), "{posted:?}");
}

#[tokio::test]
async fn a_task_that_outruns_its_wait_is_cancelled_on_the_server_and_the_model_is_told() {
    // GIVEN the research tool with a turn that waits at most two seconds
    // for a task (the task takes four)
    let pipeline = Pipeline::start(
        &tasks_config(json!({"task_wait_secs": 2})),
        vec![research("python"), Scripted::text("The research took too long; I stopped it.")],
    )
    .await;

    // WHEN someone asks, the worker runs short, and its continuation runs
    let queued = pipeline.mention_with_little_time(21).await;
    let decoded: Vec<_> = queued.iter().map(tests::decode_work).collect();
    let [assistant_core::WorkMessage::Continue(continuation)] = &decoded[..] else {
        panic!("one continuation: {decoded:?}")
    };
    let task = kept_task(&pipeline, &continuation.turn_id).await;
    pipeline.carry_on(&queued).await;

    // THEN the model was told the task was cancelled after its wait
    let second = pipeline.bedrock.requests()[1].body.to_string();
    assert!(second.contains("longer than this assistant waits for it (2 s); it was cancelled"), "{second}");
    // AND the server, asked in the task's own session, says it was cancelled
    let endpoint = assistant_core::mcp::McpEndpoint {
        name: "everything".into(),
        url: env_from_test_command("MCP_EVERYTHING_URL"),
        headers: Vec::new(),
        signing: None,
        elicitation: false,
        tasks: true,
    };
    let connector = StreamableHttpConnector::new(adapters_slack::http_client());
    let session = assistant_core::mcp::McpConnector::connect(&connector, &endpoint).await.unwrap();
    let asked =
        assistant_core::mcp::McpTask { id: task.task_id.clone(), session: task.session.clone(), poll: Duration::ZERO };
    let (state, _) = session.task_state(&asked).await.unwrap();
    assert_eq!(state, assistant_core::mcp::McpTaskState::Cancelled);
    // AND a session the server does not know cannot read it (the reference
    // server answers 400 where the specification says 404; either ends the wait)
    let stranger = assistant_core::mcp::McpTask { session: Some("not-a-session".into()), ..asked };
    let refused = session.task_state(&stranger).await.unwrap_err();
    assert!(refused.to_string().contains("HTTP 400: Bad Request: No valid session ID"), "{refused}");
}
