//! The Bedrock adapter with the real `aws-sdk-bedrockruntime` client against
//! a fake Converse server: what is sent (system, tools, cache points,
//! transcript), what is read back (text, tool calls, stop reason, usage), and
//! how throttling, 5xx, refusals, malformed output and a stream that stalls
//! end up.

use adapters_bedrock::{BedrockModel, StreamLimits, retry_config, timeout_config};
use assistant_core::model::{Model, ModelError, ModelRequest, StopReason, ToolSpec};
use assistant_core::reading::{Shown, Why};
use assistant_core::turn::{Content, Message, Role, ToolOutput, ToolResult, ToolStatus, ToolUse, Usage};
use serde_json::json;
use std::time::Duration;
use tests::emulator_config;
use tests::fake_bedrock::{FakeBedrock, GUARDRAIL_REPLY, Recorded, Scripted, TEXT_REPLY, TOOL_USE_REPLY};

const MODEL_ID: &str = "us.anthropic.claude-sonnet-4-20250514-v1:0";

async fn model(fake: &FakeBedrock) -> BedrockModel {
    // The adapter's own policy, with backoff short enough for a test.
    let retry = retry_config().with_initial_backoff(Duration::from_millis(5));
    BedrockModel::new(fake.client(&emulator_config().await, retry), MODEL_ID)
}

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "search_docs".into(),
        description: "Search the team's runbooks.".into(),
        input_schema: json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
    }]
}

async fn ask(model: &BedrockModel, messages: &[Message]) -> Result<assistant_core::model::ModelReply, ModelError> {
    let tools = tools();
    model
        .converse(ModelRequest {
            system: "You are the on-call assistant.",
            tools: &tools,
            messages,
            max_tokens: 2048,
            cache_conversation: false,
            force_tool: None,
            files: &assistant_core::model::NO_FILES,
        })
        .await
}

fn only_request(fake: &FakeBedrock) -> Recorded {
    let requests = fake.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    requests.into_iter().next().unwrap()
}

#[tokio::test]
async fn a_text_answer_is_read_with_its_usage() {
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::fixture(TEXT_REPLY)]);
    let reply = ask(&model(&fake).await, &[Message::user_text("why is checkout-api failing?")]).await.unwrap();

    assert_eq!(reply.stop_reason, StopReason::EndTurn);
    assert_eq!(reply.message.role, Role::Assistant);
    assert!(reply.message.text().contains("connection pool is exhausted"));
    assert_eq!(
        reply.usage,
        Usage { input_tokens: 1250, output_tokens: 42, cache_read_tokens: 1024, cache_write_tokens: 0 }
    );
}

#[tokio::test]
async fn the_request_carries_system_tools_and_cache_points_after_the_stable_prefix() {
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::fixture(TEXT_REPLY)]);
    ask(&model(&fake).await, &[Message::user_text("hello")]).await.unwrap();

    let Recorded { model_id, body, .. } = only_request(&fake);
    assert_eq!(model_id, MODEL_ID);
    assert_eq!(
        body["system"],
        json!([{"text": "You are the on-call assistant."}, {"cachePoint": {"type": "default"}}])
    );
    let tools = body["toolConfig"]["tools"].as_array().unwrap();
    assert_eq!(tools[0]["toolSpec"]["name"], "search_docs");
    assert_eq!(tools[0]["toolSpec"]["inputSchema"]["json"]["required"], json!(["query"]));
    assert_eq!(tools.last().unwrap(), &json!({"cachePoint": {"type": "default"}}));
    assert_eq!(body["inferenceConfig"]["maxTokens"], 2048);
    assert_eq!(body["messages"], json!([{"role": "user", "content": [{"text": "hello"}]}]));
}

#[tokio::test]
async fn tool_calls_are_read_with_their_inputs() {
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::fixture(TOOL_USE_REPLY)]);
    let reply = ask(&model(&fake).await, &[Message::user_text("why?")]).await.unwrap();

    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    let calls: Vec<&ToolUse> = reply.message.tool_uses().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].name, "search_docs");
    assert_eq!(calls[0].input, json!({"query": "checkout-api connection pool", "limit": 3}));
    assert_eq!((calls[1].name.as_str(), &calls[1].input), ("current_time", &json!({})));
}

#[tokio::test]
async fn a_transcript_with_tool_results_is_sent_as_converse_blocks() {
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::fixture(TEXT_REPLY)]);
    let transcript = vec![
        Message::user_text("why?"),
        Message {
            role: Role::Assistant,
            content: vec![Content::ToolUse(ToolUse {
                id: "t1".into(),
                name: "search_docs".into(),
                input: json!({"query": "pool"}),
            })],
        },
        Message {
            role: Role::User,
            content: vec![
                Content::ToolResult(ToolResult {
                    tool_use_id: "t1".into(),
                    status: ToolStatus::Success,
                    output: ToolOutput::Json(json!({"hits": 2})),
                }),
                Content::ToolResult(ToolResult {
                    tool_use_id: "t2".into(),
                    status: ToolStatus::Error,
                    output: ToolOutput::Text("timed out after 10 s".into()),
                }),
                Content::ToolResult(ToolResult {
                    tool_use_id: "t3".into(),
                    status: ToolStatus::Success,
                    output: ToolOutput::Stored {
                        key: "turns/x/t3".into(),
                        bytes: 2_000_000,
                        preview: "first lines".into(),
                        shown: Some(Shown {
                            lines: 2,
                            total_lines: 90_000,
                            line_cut: false,
                            records_of: None,
                            why: Why::ResultBudget { tokens: 16_666 },
                        }),
                    },
                }),
            ],
        },
    ];
    ask(&model(&fake).await, &transcript).await.unwrap();

    let messages = &only_request(&fake).body["messages"];
    assert_eq!(
        messages[1]["content"][0]["toolUse"],
        json!({"toolUseId": "t1", "name": "search_docs", "input": {"query": "pool"}})
    );
    let results = &messages[2]["content"];
    assert_eq!(
        results[0]["toolResult"],
        json!({"toolUseId": "t1", "content": [{"json": {"hits": 2}}], "status": "success"})
    );
    assert_eq!(results[1]["toolResult"]["status"], "error");
    let stored = results[2]["toolResult"]["content"][0]["text"].as_str().unwrap();
    assert!(
        stored.starts_with("first lines\n[Only part of this result is shown: lines 1-2 of 90000 (2000000 bytes"),
        "{stored}"
    );
    assert!(stored.contains(r#"read_result {"result": "t3", "start_line": 3}"#), "{stored}");
}

#[tokio::test]
async fn throttling_is_retried_with_backoff_then_succeeds() {
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::throttling(), Scripted::throttling(), Scripted::fixture(TEXT_REPLY)]);
    let reply = ask(&model(&fake).await, &[Message::user_text("why?")]).await.unwrap();
    assert_eq!(reply.stop_reason, StopReason::EndTurn);
    assert_eq!(fake.requests().len(), 3);
}

#[tokio::test]
async fn throttling_that_persists_is_a_bounded_retryable_error() {
    let fake = FakeBedrock::start().await;
    fake.script(std::iter::repeat_n(Scripted::throttling(), 10));
    let err = ask(&model(&fake).await, &[Message::user_text("why?")]).await.unwrap_err();
    assert!(matches!(err, ModelError::Throttled(_)), "{err:?}");
    assert!(err.is_retryable());
    assert_eq!(fake.requests().len(), 4, "the retry policy's four attempts, no more");
}

#[tokio::test]
async fn server_errors_are_retryable_and_validation_errors_are_not_retried() {
    let fake = FakeBedrock::start().await;
    let unavailable =
        Scripted::Error { status: 503, error_type: "ServiceUnavailableException", message: "Bedrock is unavailable" };
    fake.script(std::iter::repeat_n(unavailable, 4));
    let err = ask(&model(&fake).await, &[Message::user_text("why?")]).await.unwrap_err();
    assert!(matches!(err, ModelError::Unavailable(_)) && err.is_retryable(), "{err:?}");

    let fake = FakeBedrock::start().await;
    fake.script([Scripted::Error { status: 400, error_type: "ValidationException", message: "messages: empty" }]);
    let err = ask(&model(&fake).await, &[Message::user_text("why?")]).await.unwrap_err();
    assert!(matches!(err, ModelError::Rejected(ref m) if m.contains("messages: empty")), "{err:?}");
    assert!(!err.is_retryable());
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn malformed_output_is_an_error_not_a_panic() {
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::Raw { status: 200, body: "{\"output\": {\"message\": 42" }]);
    let err = ask(&model(&fake).await, &[Message::user_text("why?")]).await.unwrap_err();
    assert!(matches!(err, ModelError::Malformed(_)), "{err:?}");

    let fake = FakeBedrock::start().await;
    fake.script([Scripted::Reply(
        json!({"stopReason": "end_turn", "usage": {"inputTokens": 1, "outputTokens": 0, "totalTokens": 1}}),
    )]);
    let err = ask(&model(&fake).await, &[Message::user_text("why?")]).await.unwrap_err();
    assert!(matches!(err, ModelError::Malformed(_)), "{err:?}");
}

#[tokio::test]
async fn a_guardrail_stop_is_a_refusal() {
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::fixture(GUARDRAIL_REPLY)]);
    let reply = ask(&model(&fake).await, &[Message::user_text("…")]).await.unwrap();
    assert_eq!(reply.stop_reason, StopReason::Refused);
}

// --- ConverseStream ------------------------------------------------------------

/// Collects the text deltas a streamed call hands over.
#[derive(Default)]
struct Deltas(Vec<String>);

#[async_trait::async_trait]
impl assistant_core::model::TextSink for Deltas {
    async fn text(&mut self, delta: &str) {
        self.0.push(delta.to_owned());
    }
}

async fn ask_streaming(
    model: &BedrockModel,
    messages: &[Message],
) -> (Result<assistant_core::model::ModelReply, ModelError>, Vec<String>) {
    let tools = tools();
    let mut deltas = Deltas::default();
    let request = ModelRequest {
        system: "You are the on-call assistant.",
        tools: &tools,
        messages,
        max_tokens: 2048,
        cache_conversation: false,
        force_tool: None,
        files: &assistant_core::model::NO_FILES,
    };
    let reply = model.converse_streaming(request, &mut deltas).await;
    (reply, deltas.0)
}

#[tokio::test]
async fn a_streamed_answer_arrives_in_the_deltas_the_model_wrote_and_reads_as_converse_would() {
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::fixture(TEXT_REPLY), Scripted::fixture(TEXT_REPLY)]);
    fake.cut_deltas_at(&[3, 10, 11, 50]);
    let model = model(&fake).await;
    let question = [Message::user_text("why is checkout-api failing?")];
    let (streamed, deltas) = ask_streaming(&model, &question).await;
    let whole = ask(&model, &question).await.unwrap();
    let streamed = streamed.unwrap();

    assert_eq!(streamed, whole, "the same reply, text, stop reason and usage");
    assert_eq!(deltas.concat(), whole.message.text());
    assert_eq!(deltas.iter().map(String::len).take(4).collect::<Vec<_>>(), [3, 7, 1, 39], "cut where the model cut");
    assert!(fake.requests()[0].model_id.contains("claude"), "streamed to the model it names");
}

#[tokio::test]
async fn a_streamed_tool_call_is_assembled_from_its_start_and_input() {
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::fixture(TOOL_USE_REPLY)]);
    fake.script([Scripted::fixture(TOOL_USE_REPLY)]);
    let model = model(&fake).await;
    let (streamed, _) = ask_streaming(&model, &[Message::user_text("why?")]).await;
    let streamed = streamed.unwrap();
    let whole = ask(&model, &[Message::user_text("why?")]).await.unwrap();
    assert_eq!(streamed.stop_reason, StopReason::ToolUse);
    let names: Vec<&str> = streamed.message.tool_uses().map(|call| call.name.as_str()).collect();
    assert_eq!(names, ["search_docs", "current_time"]);
    assert_eq!(streamed.message, whole.message, "ids, names and inputs as Converse reads them");
}

#[tokio::test]
async fn a_stream_that_breaks_is_retryable_and_unreadable_frames_are_malformed() {
    let fake = FakeBedrock::start().await;
    let reply: serde_json::Value = serde_json::from_str(TEXT_REPLY).unwrap();
    fake.script([Scripted::BreaksAfter { reply, deltas: 2 }]);
    fake.cut_deltas_at(&[5, 9, 20]);
    let (reply, deltas) = ask_streaming(&model(&fake).await, &[Message::user_text("why?")]).await;
    let err = reply.unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    assert_eq!(deltas.len(), 2, "what came before the break was handed over");

    let fake = FakeBedrock::start().await;
    fake.script([Scripted::Raw { status: 200, body: "{\"output\": {\"message\": 42" }]);
    let (reply, deltas) = ask_streaming(&model(&fake).await, &[Message::user_text("why?")]).await;
    assert!(reply.is_err() && deltas.is_empty(), "{reply:?}");

    let fake = FakeBedrock::start().await;
    fake.script([Scripted::throttling(), Scripted::fixture(TEXT_REPLY)]);
    let (reply, _) = ask_streaming(&model(&fake).await, &[Message::user_text("why?")]).await;
    assert!(reply.is_ok(), "a throttled stream is retried by the SDK: {reply:?}");
}

// --- A stream that stalls --------------------------------------------------------

/// A streamed call, failed if it is still waiting after `limit`: a test of
/// a stall must end, whatever the adapter does.
async fn ask_streaming_within(
    limit: Duration,
    model: &BedrockModel,
) -> (Result<assistant_core::model::ModelReply, ModelError>, Vec<String>, Duration) {
    let started = std::time::Instant::now();
    let (reply, deltas) = tokio::time::timeout(limit, ask_streaming(model, &[Message::user_text("why?")]))
        .await
        .expect("the streamed call ends: a stalled stream never holds the worker");
    (reply, deltas, started.elapsed())
}

#[tokio::test]
async fn a_stream_that_stalls_after_its_first_deltas_ends_at_the_idle_bound_as_a_retryable_error() {
    // GIVEN a model that writes two deltas, then goes silent with the connection open
    let fake = FakeBedrock::start().await;
    let reply: serde_json::Value = serde_json::from_str(TEXT_REPLY).unwrap();
    fake.script([Scripted::StallsAfter { reply, deltas: 2 }]);
    fake.cut_deltas_at(&[5, 9, 20]);
    let idle = Duration::from_millis(500);
    let model = model(&fake).await.with_stream_limits(StreamLimits::within(Duration::from_secs(20)).with_idle(idle));

    // WHEN the worker streams its reply
    let (reply, deltas, took) = ask_streaming_within(Duration::from_secs(20), &model).await;

    // THEN the call ends once nothing came for the idle bound: retryable,
    // with what came before handed over
    let err = reply.unwrap_err();
    assert!(err.is_retryable() && err.to_string().contains("stalled"), "{err}");
    assert_eq!(deltas.len(), 2, "what came before the stall was handed over");
    assert!(took >= idle && took < idle + Duration::from_secs(3), "{took:?}");
    assert_eq!(fake.requests().len(), 1, "a stall is not retried inside the call: the step is");
}

#[tokio::test]
async fn a_stream_that_keeps_writing_past_the_call_budget_ends_at_the_budget() {
    // GIVEN a model that writes seven deltas 300 ms apart: never silent
    // for long, but two seconds in all
    let fake = FakeBedrock::start().await;
    fake.script([Scripted::fixture(TEXT_REPLY), Scripted::fixture(TEXT_REPLY)]);
    fake.cut_deltas_at(&[5, 9, 20, 40, 60, 80]);
    fake.pause_between_deltas(Duration::from_millis(300));
    let budget = Duration::from_secs(1);

    // WHEN the call may take a second in all
    let model = model(&fake).await.with_stream_limits(StreamLimits::within(budget));
    let (reply, deltas, took) = ask_streaming_within(Duration::from_secs(20), &model).await;

    // THEN it ends at the second, retryable, however steadily the model wrote
    let err = reply.unwrap_err();
    assert!(err.is_retryable() && err.to_string().contains("ran out"), "{err}");
    assert!(!deltas.is_empty() && deltas.len() < 7, "{deltas:?}");
    assert!(took >= budget && took < budget + Duration::from_secs(3), "{took:?}");

    // and with a budget that covers it, the same slow stream is read whole
    let model = model.with_stream_limits(StreamLimits::within(Duration::from_secs(20)).with_idle(budget));
    let (reply, deltas, _) = ask_streaming_within(Duration::from_secs(20), &model).await;
    assert_eq!(reply.unwrap().message.text(), deltas.concat());
}

#[tokio::test]
async fn a_client_built_with_the_workers_timeouts_holds_its_stream_to_their_budget() {
    // GIVEN the Bedrock client as the worker builds it (`timeout_config`),
    // with a short budget: the SDK's own timeouts stop at the stream's
    // first response (aws-sdk-rust issue 1176); the adapter reads the
    // budget from the client
    let fake = FakeBedrock::start().await;
    let reply: serde_json::Value = serde_json::from_str(TEXT_REPLY).unwrap();
    fake.script([Scripted::StallsAfter { reply, deltas: 1 }]);
    let budget = Duration::from_millis(1_500);
    let config = aws_sdk_bedrockruntime::config::Builder::from(&emulator_config().await)
        .endpoint_url(fake.url())
        .retry_config(retry_config().with_initial_backoff(Duration::from_millis(5)))
        .timeout_config(timeout_config(budget))
        .build();
    let model = BedrockModel::new(aws_sdk_bedrockruntime::Client::from_conf(config), MODEL_ID);

    // WHEN the model stalls after its first delta
    let (reply, deltas, took) = ask_streaming_within(Duration::from_secs(20), &model).await;

    // THEN the call ends when the budget runs out, retryable
    let err = reply.unwrap_err();
    assert!(err.is_retryable() && err.to_string().contains("ran out"), "{err}");
    assert_eq!(deltas.len(), 1);
    assert!(took >= budget && took < budget + Duration::from_secs(3), "{took:?}");
}
