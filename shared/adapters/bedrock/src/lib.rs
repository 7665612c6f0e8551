//! Amazon Bedrock's Converse API as the [`Model`] port.
//!
//! Translates the turn's transcript and tools into Converse's types and
//! back. The system prompt and the tool list are the same on every step of
//! a turn, so each ends with a cache point: later steps read that prefix
//! from Bedrock's prompt cache instead of paying for it again. From the
//! second step on, the conversation so far ends with a third one, so each
//! step reads every earlier step from the cache too.
//!
//! Throttling and 5xx are retried by the SDK's standard retry strategy
//! (bounded, exponential backoff with jitter, see [`retry_config`]); what is
//! left after that comes back as a retryable [`ModelError`].
//!
//! A streamed call ends within the same budget as a whole one. The SDK's
//! operation and attempt timeouts end when a stream's first response
//! arrives (aws-sdk-rust issue 1176), and ConverseStream has no stalled
//! stream protection: a model that stalls after its first event would hold
//! the worker until Lambda kills it. So every read of the stream is bounded
//! here ([`StreamLimits`]): by the call's deadline (the client's operation
//! timeout, counted from the request) and by a wait for the next event
//! ([`STREAM_IDLE`]), whichever ends first. A stream that stalls is a
//! retryable [`ModelError::Unavailable`], as one that breaks is.

pub mod guardrail;

use adapters_aws::Later;
use assistant_core::files::{self, FileBlock, FileKind};
use assistant_core::model::{FileBodies, Model, ModelError, ModelReply, ModelRequest, StopReason, TextSink, ToolSpec};
use assistant_core::turn::{Content, Message, Role, ToolOutput, ToolStatus, ToolUse, Usage};
use aws_config::retry::RetryConfig;
use aws_sdk_bedrockruntime::Client;
use aws_sdk_bedrockruntime::config::http::HttpResponse;
use aws_sdk_bedrockruntime::error::ProvideErrorMetadata;
use aws_sdk_bedrockruntime::error::SdkError;
use aws_sdk_bedrockruntime::operation::converse::ConverseError;
use aws_sdk_bedrockruntime::types::{
    self as bedrock, CachePointBlock, CachePointType, ContentBlock, ContentBlockDelta, ContentBlockStart,
    ConversationRole, ConverseOutput, ConverseStreamOutput, DocumentBlock, DocumentSource, ImageBlock, ImageSource,
    InferenceConfiguration, SpecificToolChoice, SystemContentBlock, Tool, ToolChoice, ToolConfiguration,
    ToolInputSchema, ToolResultBlock, ToolResultContentBlock, ToolResultStatus, ToolSpecification, ToolUseBlock,
};
use aws_smithy_types::error::operation::BuildError;
use aws_smithy_types::{Blob, Document, Number};
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// Four attempts, backing off from half a second: rides out a burst of
/// throttling without holding a worker for long.
pub fn retry_config() -> RetryConfig {
    RetryConfig::standard().with_max_attempts(4).with_initial_backoff(Duration::from_millis(500))
}

/// One model call, its retries included, ends within `budget`; one attempt
/// within most of it (a long answer takes a minute or two to write).
pub fn timeout_config(budget: Duration) -> aws_config::timeout::TimeoutConfig {
    aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(3))
        .operation_attempt_timeout(budget * 4 / 5)
        .operation_timeout(budget)
        .build()
}

/// The longest a stream may go without an event, its first one included,
/// before it counts as stalled. A model sends its first event once it has
/// read the prompt and then writes steadily (text, tool input and
/// reasoning all arrive as deltas); a minute of silence is a stall, and
/// leaves most of a call's budget for the retry.
pub const STREAM_IDLE: Duration = Duration::from_secs(60);

/// How long a ConverseStream call may take, enforced by the adapter on each
/// read of the stream (the SDK's own timeouts stop at its first response).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// The whole call, from the request to the stream's last event; none:
    /// only the wait between events is bounded.
    call: Option<Duration>,
    /// The longest wait for the next event.
    idle: Duration,
}

impl StreamLimits {
    /// A call of at most `call` in all, its events at most [`STREAM_IDLE`]
    /// apart (never more than `call`).
    pub fn within(call: Duration) -> Self {
        Self { call: Some(call), idle: STREAM_IDLE.min(call) }
    }

    /// The same call, its events at most `idle` apart.
    pub fn with_idle(self, idle: Duration) -> Self {
        Self { idle, ..self }
    }

    /// What `client` was built to allow a call: its operation timeout
    /// ([`timeout_config`]); a client without one bounds only the wait
    /// between events.
    fn of(client: &Client) -> Self {
        match client.config().timeout_config().and_then(|timeouts| timeouts.operation_timeout()) {
            Some(call) => Self::within(call),
            None => Self { call: None, idle: STREAM_IDLE },
        }
    }

    /// When a call that starts now must have ended.
    fn deadline(&self) -> Option<Instant> {
        self.call.and_then(|call| Instant::now().checked_add(call))
    }
}

/// What a streamed call waits for.
enum Next {
    /// The response to the request (its stream's start).
    Response,
    /// The stream's next event.
    Event,
}

#[derive(Debug, Clone)]
pub struct BedrockModel {
    client: Later<Client>,
    model_id: String,
    /// Set by [`Self::with_stream_limits`]; the client's otherwise.
    limits: Option<StreamLimits>,
}

impl BedrockModel {
    /// A model on `client` (built when the first call needs it), its
    /// streamed calls held to the client's operation timeout as whole
    /// calls are.
    pub fn new(client: impl Into<Later<Client>>, model_id: impl Into<String>) -> Self {
        Self { client: client.into(), model_id: model_id.into(), limits: None }
    }

    /// The same model, its streamed calls held to `limits` instead.
    pub fn with_stream_limits(self, limits: StreamLimits) -> Self {
        Self { limits: Some(limits), ..self }
    }

    fn limits(&self) -> StreamLimits {
        self.limits.unwrap_or_else(|| StreamLimits::of(self.client.get()))
    }

    /// `next` never past `deadline`, nor, when it is the stream's next
    /// event, past the idle bound: what does not come by then is a stall,
    /// worth asking again. (Sending the request has the SDK's attempt
    /// timeouts and retries within the same deadline.)
    async fn bounded<T>(
        &self,
        deadline: Option<Instant>,
        next: Next,
        waiting: impl Future<Output = T>,
    ) -> Result<T, ModelError> {
        let StreamLimits { call, idle } = self.limits();
        let idle_ends = matches!(next, Next::Event).then(|| Instant::now() + idle);
        let stalled = || format!("the model's stream stalled: no event for {} s", idle.as_secs_f64());
        let ran_out = || format!("the model call's {} s ran out", call.unwrap_or_default().as_secs_f64());
        let (ends, why) = match (deadline, idle_ends) {
            (Some(deadline), Some(idle_ends)) if idle_ends < deadline => (idle_ends, stalled()),
            (Some(deadline), _) => (deadline, ran_out()),
            (None, Some(idle_ends)) => (idle_ends, stalled()),
            (None, None) => return Ok(waiting.await),
        };
        tokio::time::timeout_at(ends, waiting).await.map_err(|_| ModelError::Unavailable(why))
    }
}

/// A request's parts in Converse's types: the same for `Converse` and
/// `ConverseStream`.
struct Parts {
    system: Vec<SystemContentBlock>,
    messages: Vec<bedrock::Message>,
    inference: InferenceConfiguration,
    tools: Option<ToolConfiguration>,
}

/// A `Converse` or `ConverseStream` call (two builder types, one shape)
/// with the model and the request's parts set.
macro_rules! with_parts {
    ($call:expr, $model:expr, $parts:expr) => {
        $call
            .model_id($model)
            .set_system(Some($parts.system))
            .set_messages(Some($parts.messages))
            .inference_config($parts.inference)
            .set_tool_config($parts.tools)
    };
}

fn parts(request: &ModelRequest<'_>) -> Result<Parts, ModelError> {
    let built = |what: &str, err: aws_smithy_types::error::operation::BuildError| {
        ModelError::Rejected(format!("cannot build {what}: {err}"))
    };
    let cache_point =
        CachePointBlock::builder().r#type(CachePointType::Default).build().map_err(|e| built("cache point", e))?;
    let mut tools = request.tools.iter().map(tool).collect::<Result<Vec<_>, _>>().map_err(|e| built("tool", e))?;
    let tools = if tools.is_empty() {
        None
    } else {
        tools.push(Tool::CachePoint(cache_point.clone()));
        let choice = match request.force_tool {
            Some(name) => Some(ToolChoice::Tool(
                SpecificToolChoice::builder().name(name).build().map_err(|e| built("tool choice", e))?,
            )),
            None => None,
        };
        Some(
            ToolConfiguration::builder()
                .set_tools(Some(tools))
                .set_tool_choice(choice)
                .build()
                .map_err(|e| built("tool config", e))?,
        )
    };
    Ok(Parts {
        system: vec![
            SystemContentBlock::Text(request.system.to_owned()),
            SystemContentBlock::CachePoint(cache_point.clone()),
        ],
        messages: messages(request, &cache_point).map_err(|e| built("message", e))?,
        inference: InferenceConfiguration::builder().max_tokens(clamp_i32(request.max_tokens)).build(),
        tools,
    })
}

fn usage(usage: Option<bedrock::TokenUsage>) -> Usage {
    usage
        .map(|u| Usage {
            input_tokens: u.input_tokens.max(0) as u64,
            output_tokens: u.output_tokens.max(0) as u64,
            cache_read_tokens: u.cache_read_input_tokens.unwrap_or_default().max(0) as u64,
            cache_write_tokens: u.cache_write_input_tokens.unwrap_or_default().max(0) as u64,
        })
        .unwrap_or_default()
}

#[async_trait::async_trait]
impl Model for BedrockModel {
    async fn converse(&self, request: ModelRequest<'_>) -> Result<ModelReply, ModelError> {
        let parts = parts(&request)?;
        let output =
            with_parts!(self.client.get().converse(), &self.model_id, parts).send().await.map_err(model_error)?;
        let message = match output.output {
            Some(ConverseOutput::Message(message)) => from_bedrock_message(message)?,
            other => return Err(ModelError::Malformed(format!("no message in the reply: {other:?}"))),
        };
        Ok(ModelReply { message, stop_reason: stop_reason(&output.stop_reason), usage: usage(output.usage) })
    }

    /// ConverseStream: text blocks go to `sink` delta by delta; tool calls
    /// are assembled from their start and input deltas; the reply is the
    /// same as `converse` would return.
    async fn converse_streaming(
        &self,
        request: ModelRequest<'_>,
        sink: &mut dyn TextSink,
    ) -> Result<ModelReply, ModelError> {
        let parts = parts(&request)?;
        let deadline = self.limits().deadline();
        let mut output = self
            .bounded(
                deadline,
                Next::Response,
                with_parts!(self.client.get().converse_stream(), &self.model_id, parts).send(),
            )
            .await?
            .map_err(|err| stream_error(&err))?;
        let mut reply = StreamedReply::default();
        loop {
            let event =
                self.bounded(deadline, Next::Event, output.stream.recv()).await?.map_err(|err| stream_error(&err))?;
            match event {
                None => break,
                Some(ConverseStreamOutput::ContentBlockStart(start)) => {
                    if let Some(ContentBlockStart::ToolUse(call)) = start.start {
                        reply.start_call(start.content_block_index, call.tool_use_id, call.name);
                    }
                }
                Some(ConverseStreamOutput::ContentBlockDelta(delta)) => match delta.delta {
                    Some(ContentBlockDelta::Text(text)) => {
                        reply.text(delta.content_block_index, &text);
                        sink.text(&text).await;
                    }
                    Some(ContentBlockDelta::ToolUse(input)) => {
                        reply.call_input(delta.content_block_index, &input.input)
                    }
                    _ => {}
                },
                Some(ConverseStreamOutput::MessageStop(stop)) => {
                    reply.stop_reason = Some(stop_reason(&stop.stop_reason))
                }
                Some(ConverseStreamOutput::Metadata(metadata)) => reply.usage = usage(metadata.usage),
                Some(_) => {}
            }
        }
        reply.finish()
    }

    fn id(&self) -> &str {
        &self.model_id
    }
}

/// A streamed reply as it is assembled: blocks by their index.
#[derive(Default)]
struct StreamedReply {
    blocks: std::collections::BTreeMap<i32, StreamedBlock>,
    stop_reason: Option<StopReason>,
    usage: Usage,
}

enum StreamedBlock {
    Text(String),
    Call { id: String, name: String, input: String },
}

impl StreamedReply {
    fn start_call(&mut self, index: i32, id: String, name: String) {
        self.blocks.insert(index, StreamedBlock::Call { id, name, input: String::new() });
    }

    fn text(&mut self, index: i32, text: &str) {
        if let StreamedBlock::Text(block) =
            self.blocks.entry(index).or_insert_with(|| StreamedBlock::Text(String::new()))
        {
            block.push_str(text);
        }
    }

    fn call_input(&mut self, index: i32, piece: &str) {
        if let Some(StreamedBlock::Call { input, .. }) = self.blocks.get_mut(&index) {
            input.push_str(piece);
        }
    }

    fn finish(self) -> Result<ModelReply, ModelError> {
        // A stream cut off before the model finished: worth asking again.
        let stop_reason = self
            .stop_reason
            .ok_or_else(|| ModelError::Unavailable("the stream ended before the model finished".into()))?;
        let content = self
            .blocks
            .into_values()
            .map(|block| match block {
                StreamedBlock::Text(text) => Ok(Content::Text(text)),
                StreamedBlock::Call { id, name, input } => {
                    let input = if input.trim().is_empty() {
                        serde_json::json!({})
                    } else {
                        serde_json::from_str(&input).map_err(|err| {
                            ModelError::Malformed(format!("tool call {name}'s input is not JSON: {err}"))
                        })?
                    };
                    Ok(Content::ToolUse(ToolUse { id, name, input }))
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(ModelReply { message: Message { role: Role::Assistant, content }, stop_reason, usage: self.usage })
    }
}

/// A ConverseStream error: unreadable frames are a malformed reply; the
/// rest by AWS's error code (the stream's own errors and the call's share
/// the codes).
fn stream_error<E, R>(err: &SdkError<E, R>) -> ModelError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    let detail = adapters_aws::summarize(err);
    if matches!(err, SdkError::ResponseError(_)) {
        return ModelError::Malformed(detail);
    }
    match err.code() {
        Some("ThrottlingException") => ModelError::Throttled(detail),
        Some("ValidationException" | "AccessDeniedException" | "ResourceNotFoundException") => {
            ModelError::Rejected(detail)
        }
        Some("ModelErrorException") => ModelError::Malformed(detail),
        _ => ModelError::Unavailable(detail),
    }
}

fn clamp_i32(value: u32) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

fn tool(spec: &ToolSpec) -> Result<Tool, aws_smithy_types::error::operation::BuildError> {
    Ok(Tool::ToolSpec(
        ToolSpecification::builder()
            .name(&spec.name)
            .description(&spec.description)
            .input_schema(ToolInputSchema::Json(to_document(&spec.input_schema)))
            .build()?,
    ))
}

/// The conversation, with a cache point after it when the request asks
/// (Bedrock allows four: system, tools, and this one).
fn messages(
    request: &ModelRequest<'_>,
    cache_point: &CachePointBlock,
) -> Result<Vec<bedrock::Message>, aws_smithy_types::error::operation::BuildError> {
    let last = request.messages.len().saturating_sub(1);
    request
        .messages
        .iter()
        .enumerate()
        .map(|(index, message)| {
            let cache_point = (request.cache_conversation && index == last).then_some(cache_point);
            bedrock_message(message, cache_point, request.files)
        })
        .collect()
}

fn bedrock_message(
    message: &Message,
    cache_point: Option<&CachePointBlock>,
    files: &FileBodies,
) -> Result<bedrock::Message, aws_smithy_types::error::operation::BuildError> {
    let role = match message.role {
        Role::User => ConversationRole::User,
        Role::Assistant => ConversationRole::Assistant,
    };
    let mut content =
        message.content.iter().map(|content| content_block(content, files)).collect::<Result<Vec<_>, _>>()?;
    content.extend(cache_point.cloned().map(ContentBlock::CachePoint));
    bedrock::Message::builder().role(role).set_content(Some(content)).build()
}

/// A pasted image or document as Converse's block, from its bytes; a text
/// note when the bytes are gone from the bucket.
fn file_block(file: &FileBlock, files: &FileBodies) -> Result<ContentBlock, BuildError> {
    let Some(body) = files.get(&file.key) else {
        return Ok(ContentBlock::Text(format!("(The file {} is no longer available.)", file.name)));
    };
    let bytes = Blob::new(body.clone());
    Ok(match file.kind {
        FileKind::Image(format) => ContentBlock::Image(
            ImageBlock::builder()
                .format(bedrock::ImageFormat::from(format.as_str()))
                .source(ImageSource::Bytes(bytes))
                .build()?,
        ),
        FileKind::Document(format) => ContentBlock::Document(
            DocumentBlock::builder()
                .format(bedrock::DocumentFormat::from(format.as_str()))
                .name(files::document_name(&file.name, &file.file_id))
                .source(DocumentSource::Bytes(bytes))
                .build()?,
        ),
    })
}

fn content_block(content: &Content, files: &FileBodies) -> Result<ContentBlock, BuildError> {
    Ok(match content {
        Content::Text(text) => ContentBlock::Text(text.clone()),
        Content::File(file) => file_block(file, files)?,
        Content::ToolUse(tool_use) => ContentBlock::ToolUse(
            ToolUseBlock::builder()
                .tool_use_id(&tool_use.id)
                .name(&tool_use.name)
                .input(to_document(&tool_use.input))
                .build()?,
        ),
        Content::ToolResult(result) => {
            let output = match &result.output {
                ToolOutput::Text(text) => ToolResultContentBlock::Text(text.clone()),
                ToolOutput::Json(json) => ToolResultContentBlock::Json(to_document(json)),
                ToolOutput::Stored { .. } => {
                    ToolResultContentBlock::Text(result.stored_text().expect("a stored result has a text"))
                }
                // The worker makes no model call while a task runs; were
                // one made, the model reads that the result is not in.
                ToolOutput::Task(_) => ToolResultContentBlock::Text("[the call is still running]".to_owned()),
            };
            let status = match result.status {
                ToolStatus::Success => ToolResultStatus::Success,
                ToolStatus::Error => ToolResultStatus::Error,
            };
            ContentBlock::ToolResult(
                ToolResultBlock::builder().tool_use_id(&result.tool_use_id).content(output).status(status).build()?,
            )
        }
    })
}

/// The model's message: its text and tool calls. Reasoning, citations and
/// the like are not part of the answer and are left out.
fn from_bedrock_message(message: bedrock::Message) -> Result<Message, ModelError> {
    if message.role != ConversationRole::Assistant {
        return Err(ModelError::Malformed(format!("reply has role {:?}, not assistant", message.role)));
    }
    let content = message
        .content
        .into_iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(Content::Text(text)),
            ContentBlock::ToolUse(tool_use) => Some(Content::ToolUse(ToolUse {
                id: tool_use.tool_use_id,
                name: tool_use.name,
                input: from_document(&tool_use.input),
            })),
            _ => None,
        })
        .collect();
    Ok(Message { role: Role::Assistant, content })
}

fn stop_reason(reason: &bedrock::StopReason) -> StopReason {
    match reason {
        bedrock::StopReason::EndTurn => StopReason::EndTurn,
        bedrock::StopReason::ToolUse => StopReason::ToolUse,
        bedrock::StopReason::MaxTokens => StopReason::MaxTokens,
        bedrock::StopReason::StopSequence => StopReason::StopSequence,
        bedrock::StopReason::GuardrailIntervened | bedrock::StopReason::ContentFiltered => StopReason::Refused,
        other => StopReason::Other(other.as_str().to_owned()),
    }
}

fn model_error(err: SdkError<ConverseError, HttpResponse>) -> ModelError {
    let detail = adapters_aws::summarize(&err);
    match &err {
        SdkError::ServiceError(service) => match service.err() {
            ConverseError::ThrottlingException(_) => ModelError::Throttled(detail),
            ConverseError::ServiceUnavailableException(_)
            | ConverseError::InternalServerException(_)
            | ConverseError::ModelNotReadyException(_)
            | ConverseError::ModelTimeoutException(_) => ModelError::Unavailable(detail),
            ConverseError::ModelErrorException(_) => ModelError::Malformed(detail),
            ConverseError::AccessDeniedException(_)
            | ConverseError::ResourceNotFoundException(_)
            | ConverseError::ValidationException(_) => ModelError::Rejected(detail),
            // An error this SDK version does not model: judge by the status.
            // A 2xx here is a body the client could not read.
            _ => match service.raw().status().as_u16() {
                200..=299 => ModelError::Malformed(format!("unreadable 2xx reply ({detail})")),
                429 => ModelError::Throttled(detail),
                500.. => ModelError::Unavailable(detail),
                _ => ModelError::Rejected(detail),
            },
        },
        SdkError::ResponseError(_) => ModelError::Malformed(detail),
        _ => ModelError::Unavailable(detail),
    }
}

/// JSON into Smithy's document type (tool inputs and schemas).
pub fn to_document(value: &serde_json::Value) -> Document {
    match value {
        serde_json::Value::Null => Document::Null,
        serde_json::Value::Bool(b) => Document::Bool(*b),
        serde_json::Value::Number(n) => Document::Number(if let Some(u) = n.as_u64() {
            Number::PosInt(u)
        } else if let Some(i) = n.as_i64() {
            Number::NegInt(i)
        } else {
            Number::Float(n.as_f64().unwrap_or_default())
        }),
        serde_json::Value::String(s) => Document::String(s.clone()),
        serde_json::Value::Array(items) => Document::Array(items.iter().map(to_document).collect()),
        serde_json::Value::Object(map) => {
            Document::Object(map.iter().map(|(k, v)| (k.clone(), to_document(v))).collect())
        }
    }
}

/// Smithy's document type back into JSON.
pub fn from_document(document: &Document) -> serde_json::Value {
    match document {
        Document::Null => serde_json::Value::Null,
        Document::Bool(b) => serde_json::Value::Bool(*b),
        Document::Number(Number::PosInt(u)) => serde_json::Value::from(*u),
        Document::Number(Number::NegInt(i)) => serde_json::Value::from(*i),
        Document::Number(Number::Float(f)) => serde_json::Value::from(*f),
        Document::String(s) => serde_json::Value::String(s.clone()),
        Document::Array(items) => serde_json::Value::Array(items.iter().map(from_document).collect()),
        Document::Object(map) => {
            serde_json::Value::Object(map.iter().map(|(k, v)| (k.clone(), from_document(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_survives_the_document_round_trip() {
        let value = serde_json::json!({
            "query": "checkout-api", "limit": 20, "offset": -3, "ratio": 0.5,
            "flags": [true, false, null], "nested": {"a": ["b"]}
        });
        assert_eq!(from_document(&to_document(&value)), value);
    }

    #[test]
    fn a_stream_is_held_to_the_clients_operation_timeout_and_events_to_the_idle_bound() {
        let client = |timeouts: Option<aws_config::timeout::TimeoutConfig>| {
            let mut config =
                aws_sdk_bedrockruntime::Config::builder().behavior_version(aws_config::BehaviorVersion::latest());
            config.set_timeout_config(timeouts);
            Client::from_conf(config.build())
        };
        let budget = Duration::from_secs(150);
        assert_eq!(
            StreamLimits::of(&client(Some(timeout_config(budget)))),
            StreamLimits { call: Some(budget), idle: STREAM_IDLE }
        );
        assert_eq!(StreamLimits::of(&client(None)), StreamLimits { call: None, idle: STREAM_IDLE });
        let short = Duration::from_secs(3);
        assert_eq!(StreamLimits::within(short).idle, short, "never longer than the call");

        // As the worker builds it: the process's timeouts, the model's budget over them.
        let process = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .timeout_config(
                aws_config::timeout::TimeoutConfig::builder()
                    .operation_attempt_timeout(Duration::from_secs(180))
                    .build(),
            )
            .build();
        let config = aws_sdk_bedrockruntime::config::Builder::from(&process).timeout_config(timeout_config(budget));
        assert_eq!(StreamLimits::of(&Client::from_conf(config.build())), StreamLimits::within(budget));
    }
}
