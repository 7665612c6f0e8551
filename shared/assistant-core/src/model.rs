//! The model, as the turn loop sees it: one call takes the system prompt,
//! the transcript and the tools, and returns the assistant's next message
//! and why it stopped. The Bedrock Converse adapter lives in
//! `shared/adapters/bedrock`.

use crate::turn::{Message, Usage};
use async_trait::async_trait;

/// A tool as the model is told about it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the tool's input object.
    pub input_schema: serde_json::Value,
}

#[derive(Debug, Clone, Copy)]
pub struct ModelRequest<'a> {
    /// Stable across the turn's steps, like `tools`: the adapter marks the
    /// end of both as a prompt-cache point so later steps read them cheaply.
    pub system: &'a str,
    pub tools: &'a [ToolSpec],
    pub messages: &'a [Message],
    pub max_tokens: u32,
    /// Mark the end of `messages` as a cache point too: set on every step
    /// after the first, so a step reads the conversation so far (every
    /// earlier step) from the cache, and writes its own for the next.
    pub cache_conversation: bool,
    /// The model must answer by calling this tool (Converse's `toolChoice`):
    /// a structured answer forced through the tool's schema.
    pub force_tool: Option<&'a str>,
    /// The bytes of the images and documents in `messages`, by bucket key.
    pub files: &'a FileBodies,
}

/// Pasted images and documents, by their bucket key ([`crate::files::FileBlock::key`]).
pub type FileBodies = std::collections::BTreeMap<String, Vec<u8>>;

/// For requests that carry no files.
pub static NO_FILES: FileBodies = FileBodies::new();

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// The message is the answer.
    EndTurn,
    /// The message asks for tool calls.
    ToolUse,
    /// The output was cut at `max_tokens`.
    MaxTokens,
    StopSequence,
    /// A guardrail or content filter stopped the model.
    Refused,
    /// A reason this build does not know.
    Other(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModelReply {
    /// Role assistant.
    pub message: Message,
    pub stop_reason: StopReason,
    pub usage: Usage,
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// Rate limited after the adapter's own bounded retries: try later.
    #[error("model throttled: {0}")]
    Throttled(String),
    /// A 5xx, timeout or network failure after the adapter's retries: try later.
    #[error("model unavailable: {0}")]
    Unavailable(String),
    /// The request was refused as it is (validation, access, unknown model):
    /// the same request will fail the same way.
    #[error("model refused the request: {0}")]
    Rejected(String),
    /// The model answered something we cannot read.
    #[error("model reply unreadable: {0}")]
    Malformed(String),
}

impl ModelError {
    /// Worth retrying the same call later (SQS redelivery).
    pub fn is_retryable(&self) -> bool {
        matches!(self, ModelError::Throttled(_) | ModelError::Unavailable(_))
    }
}

/// Where a streamed model call hands its text as the model writes it.
#[async_trait]
pub trait TextSink: Send {
    /// The next piece of the reply's text.
    async fn text(&mut self, delta: &str);
}

#[async_trait]
pub trait Model: Send + Sync {
    async fn converse(&self, request: ModelRequest<'_>) -> Result<ModelReply, ModelError>;

    /// The same call, its text handed to `sink` as the model writes it
    /// (Bedrock's ConverseStream). The default makes the call whole and
    /// hands the text over at once.
    async fn converse_streaming(
        &self,
        request: ModelRequest<'_>,
        sink: &mut dyn TextSink,
    ) -> Result<ModelReply, ModelError> {
        let reply = self.converse(request).await?;
        let text = reply.message.text();
        if !text.is_empty() {
            sink.text(&text).await;
        }
        Ok(reply)
    }

    /// The model's id (Bedrock's model or inference profile id), for its
    /// prices.
    fn id(&self) -> &str {
        ""
    }
}

/// Opens a model by its id: the worker's main model is one; the prompt
/// enhancer's cheap model, named in the assistant configuration, another.
pub trait OpenModel: Send + Sync {
    fn open(&self, model_id: &str) -> std::sync::Arc<dyn Model>;
}

impl<F> OpenModel for F
where
    F: Fn(&str) -> std::sync::Arc<dyn Model> + Send + Sync,
{
    fn open(&self, model_id: &str) -> std::sync::Arc<dyn Model> {
        self(model_id)
    }
}
