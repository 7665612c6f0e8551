//! What a settled turn leaves in its channel's memory (read back by
//! `tools-memory`'s `recall`).

use assistant_core::memory::Memory;
use assistant_core::turn::Turn;
use tools_registry::{FORGET_THREAD, RECALL};

/// The answer's start kept as its summary (characters).
const SUMMARY_CHARS: usize = 600;
/// The question kept (characters).
const QUESTION_CHARS: usize = 400;

/// What a settled turn leaves in its channel's memory: redacted, short.
pub fn memory_of(turn: &Turn) -> Memory {
    let redactor = redact::Redactor::global();
    let cut = |text: &str, at: usize| -> String {
        let kept: String = text.chars().take(at).collect();
        if kept.len() < text.len() { format!("{kept}…") } else { kept }
    };
    let mut tools: Vec<String> = turn
        .transcript
        .iter()
        .flat_map(|message| message.tool_uses())
        .map(|call| call.name.clone())
        .filter(|name| name != RECALL && name != FORGET_THREAD)
        .collect();
    tools.sort();
    tools.dedup();
    Memory {
        turn_id: turn.id.clone(),
        thread_ts: turn.thread.thread_ts.clone(),
        settled_at: turn.updated_at,
        question: cut(&redactor.redact(&turn.question()), QUESTION_CHARS),
        summary: cut(&redactor.redact(turn.answer.as_deref().unwrap_or_default()), SUMMARY_CHARS),
        tools,
        status: turn.status,
        rating: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use assistant_core::turn::{Content, Message, Role, ToolUse, TurnStatus};
    use serde_json::json;

    #[test]
    fn a_settled_turn_is_remembered_redacted_short_and_without_the_memory_tools() {
        let mut turn = testkit::store_contract::new_turn("Ev0MEMOF01");
        turn.transcript = vec![
            Message {
                role: Role::User,
                content: vec![Content::Text("<@U1>: <@UBOT> why is it down? password=hunter22".into())],
            },
            Message {
                role: Role::Assistant,
                content: vec![
                    Content::ToolUse(ToolUse { id: "a".into(), name: "logs_query".into(), input: json!({}) }),
                    Content::ToolUse(ToolUse { id: "b".into(), name: RECALL.into(), input: json!({}) }),
                    Content::ToolUse(ToolUse { id: "c".into(), name: "logs_query".into(), input: json!({}) }),
                ],
            },
        ];
        turn.settle(format!("AKIAZ7QX3LPMN4RTVW2K leaked. {}", "x".repeat(2_000)), TurnStatus::Answered, 1_763_800_100);
        let memory = memory_of(&turn);
        assert!(memory.question.starts_with("why is it down?"), "{memory:?}");
        assert!(
            !memory.question.contains("hunter22") && !memory.summary.contains("AKIAZ7QX3LPMN4RTVW2K"),
            "{memory:?}"
        );
        assert!(memory.summary.chars().count() <= SUMMARY_CHARS + 1 && memory.summary.ends_with('…'));
        assert_eq!(memory.tools, ["logs_query"]);
        assert_eq!((memory.settled_at, memory.thread_ts.as_str()), (1_763_800_100, "1763800000.000100"));
    }
}
