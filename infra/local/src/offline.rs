//! The offline model: replays recorded Bedrock Converse responses (the
//! wire JSON, as `bedrock-runtime` returns it) in order, one per step of
//! a turn, so the whole pipeline runs with no AWS account. It says what it
//! is wherever it appears.

use assistant_core::model::{Model, ModelError, ModelReply, ModelRequest, StopReason};
use assistant_core::turn::{Content, Message, Role, ToolUse, Usage};
use serde_json::Value;

/// The recording the runner replays unless told otherwise.
pub const DEFAULT_RECORDING: &str = include_str!("../recorded/converse.json");
pub const DEFAULT_RECORDING_PATH: &str = "infra/local/recorded/converse.json";

pub struct OfflineModel {
    replies: Vec<ModelReply>,
}

#[derive(Debug, thiserror::Error)]
#[error("the recording is not a JSON array of Converse responses: {0}")]
pub struct RecordingError(String);

impl OfflineModel {
    pub fn from_json(json: &str) -> Result<Self, RecordingError> {
        let responses: Vec<Value> = serde_json::from_str(json).map_err(|err| RecordingError(err.to_string()))?;
        let replies = responses.iter().map(reply_from_converse).collect::<Result<Vec<_>, _>>()?;
        if replies.is_empty() {
            return Err(RecordingError("it holds no responses".into()));
        }
        Ok(Self { replies })
    }
}

/// A Converse response body as the turn loop's reply.
fn reply_from_converse(response: &Value) -> Result<ModelReply, RecordingError> {
    let content = response["output"]["message"]["content"]
        .as_array()
        .ok_or_else(|| RecordingError("a response has no output.message.content".into()))?;
    let content = content
        .iter()
        .map(|block| {
            if let Some(text) = block["text"].as_str() {
                return Ok(Content::Text(text.to_owned()));
            }
            let tool = &block["toolUse"];
            match (tool["toolUseId"].as_str(), tool["name"].as_str()) {
                (Some(id), Some(name)) => {
                    Ok(Content::ToolUse(ToolUse { id: id.into(), name: name.into(), input: tool["input"].clone() }))
                }
                _ => Err(RecordingError(format!("a content block is neither text nor toolUse: {block}"))),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let stop_reason = match response["stopReason"].as_str() {
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some("guardrail_intervened" | "content_filtered") => StopReason::Refused,
        _ => StopReason::EndTurn,
    };
    let tokens = |name: &str| response["usage"][name].as_u64().unwrap_or(0);
    Ok(ModelReply {
        message: Message { role: Role::Assistant, content },
        stop_reason,
        usage: Usage { input_tokens: tokens("inputTokens"), output_tokens: tokens("outputTokens"), ..Usage::default() },
    })
}

#[async_trait::async_trait]
impl Model for OfflineModel {
    /// The recording's next reply for this turn: the n-th model call of a
    /// turn gets the n-th response (the last one again past the end).
    async fn converse(&self, request: ModelRequest<'_>) -> Result<ModelReply, ModelError> {
        let step =
            request.messages.iter().filter(|m| m.role == Role::Assistant && m.tool_uses().next().is_some()).count();
        Ok(self.replies[step.min(self.replies.len() - 1)].clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_recording_calls_tools_then_answers_and_says_it_is_offline() {
        let model = OfflineModel::from_json(DEFAULT_RECORDING).unwrap();
        fn request(messages: &[Message]) -> ModelRequest<'_> {
            ModelRequest {
                system: "",
                tools: &[],
                messages,
                max_tokens: 100,
                cache_conversation: false,
                force_tool: None,
                files: &assistant_core::model::NO_FILES,
            }
        }
        let first = model.converse(request(&[Message::user_text("hi")])).await.unwrap();
        assert_eq!(first.stop_reason, StopReason::ToolUse);
        let names: Vec<&str> = first.message.tool_uses().map(|call| call.name.as_str()).collect();
        assert_eq!(names, ["search_docs", "current_time"]);

        let transcript = [Message::user_text("hi"), first.message.clone(), Message::user_text("results")];
        let second = model.converse(request(&transcript)).await.unwrap();
        assert_eq!(second.stop_reason, StopReason::EndTurn);
        assert!(second.message.text().contains("Offline model"), "labelled");
    }

    #[test]
    fn a_broken_recording_is_refused() {
        assert!(OfflineModel::from_json("[]").is_err());
        assert!(OfflineModel::from_json(r#"[{"output":{}}]"#).is_err());
        assert!(OfflineModel::from_json("nope").is_err());
    }
}
