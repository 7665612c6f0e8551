//! Everything the bot shows, as Slack messages: the answer (redacted, as
//! mrkdwn, split under Slack's limits), the approval prompt, the
//! placeholder shown while tools run, and the apology for a turn that
//! failed. Redaction happens here, before rendering, so what Slack gets
//! never held a secret and each marker reads cleanly.

use assistant_core::delivery::{MessageKey, Outgoing};
use assistant_core::messages::{ApprovalButton, Decision};
use assistant_core::turn::{ToolUse, TurnId};
use redact::Redactor;
use serde_json::{Value, json};
use slack::UserId;
use slack::interaction::{APPROVE_ACTION_ID, DENY_ACTION_ID};
use slack::mrkdwn;
use slack::split::{self, Limits, SECTION_SEPARATOR};

/// How much of a tool call's input an approval prompt shows.
const PROMPT_INPUT_CHARS: usize = 2_500;

fn section(text: &str) -> Value {
    json!({"type": "section", "text": {"type": "mrkdwn", "text": text}})
}

/// The answer as one message, or several when Slack's limits require:
/// keyed `answer 1/n` … `answer n/n`, each a run of section blocks.
pub fn answer(markdown: &str) -> Vec<Outgoing> {
    let redacted = Redactor::global().redact(markdown);
    let rendered = mrkdwn::render(&redacted);
    let messages = split::split(&rendered, &Limits::default());
    let count = messages.len();
    messages
        .into_iter()
        .enumerate()
        .map(|(index, sections)| Outgoing {
            key: MessageKey::Answer { part: index as u32 + 1, of: count as u32 },
            text: sections.join(SECTION_SEPARATOR),
            blocks: sections.iter().map(|text| section(text)).collect(),
        })
        .collect()
}

/// The key of the approval prompt for one tool call.
pub fn approval_key(tool_use: &ToolUse) -> MessageKey {
    MessageKey::Approval { tool_use_id: tool_use.id.clone() }
}

/// Approve / Deny buttons for a tool call that changes things, with what
/// it would do (input redacted, shortened when long).
pub fn approval(turn: &TurnId, tool_use: &ToolUse) -> Outgoing {
    // As text, so secrets assigned to secret-sounding keys are found too.
    let input = serde_json::to_string_pretty(&tool_use.input).expect("JSON values serialize");
    let mut shown = Redactor::global().redact(&input).into_owned();
    if shown.chars().count() > PROMPT_INPUT_CHARS {
        shown = shown.chars().take(PROMPT_INPUT_CHARS).collect::<String>() + "\n…";
    }
    let name = mrkdwn::escape(&tool_use.name);
    let text = format!("I'd like to run `{name}`, which changes things. Approve?");
    let value = ApprovalButton { turn_id: turn.clone(), tool_use_id: tool_use.id.clone() }.encode();
    let button = |label: &str, action_id: &str, style: &str| {
        json!({
            "type": "button",
            "text": {"type": "plain_text", "text": label},
            "action_id": action_id,
            "value": value,
            "style": style,
        })
    };
    Outgoing {
        key: approval_key(tool_use),
        blocks: vec![
            section(&format!("{text}\n```\n{}\n```", mrkdwn::escape(&shown))),
            json!({
                "type": "actions",
                "elements": [button("Approve", APPROVE_ACTION_ID, "primary"), button("Deny", DENY_ACTION_ID, "danger")],
            }),
        ],
        text,
    }
}

/// The approval prompt once decided: who decided what, and no buttons.
pub fn approval_decided(tool_use: &ToolUse, decision: Decision, user: &UserId) -> Outgoing {
    let (mark, verb) = match decision {
        Decision::Approve => ("✅", "approved"),
        Decision::Deny => ("🚫", "denied"),
    };
    let text = format!("{mark} <@{user}> {verb} running `{}`.", mrkdwn::escape(&tool_use.name));
    Outgoing { key: approval_key(tool_use), blocks: vec![section(&text)], text }
}

/// The message that stands in for the answer while tools run.
pub fn placeholder(status: &str) -> Outgoing {
    let status = mrkdwn::escape(&Redactor::global().redact(status));
    Outgoing { key: MessageKey::Placeholder, text: format!("_Working on it: {status}_"), blocks: Vec::new() }
}

/// A short reference for a turn, to quote to an admin: the Slack event id
/// part of the turn id, which every log line of the turn carries.
pub fn reference(turn: &TurnId) -> &str {
    turn.as_str().split_once('-').map_or(turn.as_str(), |(_, event)| event)
}

/// What the thread is told when a turn's work ended in a dead-letter queue.
pub fn apology_text(turn: &TurnId) -> String {
    format!(
        "Sorry, something went wrong and I couldn't finish answering this. Please try again in a moment; \
         if it keeps happening, give your admin this reference: `{}`.",
        reference(turn)
    )
}

pub fn apology(turn: &TurnId) -> Outgoing {
    Outgoing { key: MessageKey::Apology, text: mrkdwn::escape(&apology_text(turn)), blocks: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_answer_is_one_redacted_mrkdwn_message() {
        let token = format!("xoxb-{}-{}", "1234567890", "abcdefghijklmnopqrstuvwx");
        let messages = answer(&format!("**Fixed.** The token was `{token}` & it leaked."));
        assert_eq!(messages.len(), 1);
        let message = &messages[0];
        assert_eq!(message.key, MessageKey::Answer { part: 1, of: 1 });
        assert_eq!(message.text, "*Fixed.* The token was `[redacted: slack bot token]` &amp; it leaked.");
        assert_eq!(message.blocks, [section(&message.text)]);
        assert!(!serde_json::to_string(&message.blocks).unwrap().contains(&token));
    }

    #[test]
    fn a_long_answer_becomes_numbered_messages_within_limits() {
        let paragraph = format!("{}\n\n", "word ".repeat(500));
        let messages = answer(&paragraph.repeat(40));
        assert!(messages.len() > 1);
        let count = messages.len();
        for (index, message) in messages.iter().enumerate() {
            assert_eq!(message.key, MessageKey::Answer { part: index as u32 + 1, of: count as u32 });
            assert!(message.blocks.len() <= 50);
            assert!(message.text.chars().count() <= 40_000);
            for block in &message.blocks {
                assert!(block["text"]["text"].as_str().unwrap().chars().count() <= 3_000);
            }
        }
    }

    #[test]
    fn the_approval_prompt_carries_the_turn_and_call_and_no_secret() {
        let password = ["hunter", "2-", "correct-horse"].concat();
        let call = ToolUse {
            id: "tooluse_1".into(),
            name: "restart_service".into(),
            input: json!({"service": "checkout-api", "password": password}),
        };
        let prompt = approval(&TurnId::new("T1-Ev1"), &call);
        assert_eq!(prompt.key, MessageKey::Approval { tool_use_id: "tooluse_1".into() });
        let json = serde_json::to_string(&prompt.blocks).unwrap();
        assert!(!json.contains(&password), "{json}");
        assert!(json.contains("checkout-api"));
        let buttons = &prompt.blocks[1]["elements"];
        assert_eq!(buttons[0]["action_id"], APPROVE_ACTION_ID);
        assert_eq!(buttons[1]["action_id"], DENY_ACTION_ID);
        let value = ApprovalButton::decode(buttons[0]["value"].as_str().unwrap()).unwrap();
        assert_eq!((value.turn_id.as_str(), value.tool_use_id.as_str()), ("T1-Ev1", "tooluse_1"));
    }

    #[test]
    fn a_decided_prompt_says_who_decided_and_has_no_buttons() {
        let call = ToolUse { id: "tooluse_1".into(), name: "restart_service".into(), input: json!({}) };
        let decided = approval_decided(&call, Decision::Deny, &UserId::new("U2"));
        assert_eq!(decided.key, approval_key(&call), "it replaces the prompt");
        assert_eq!(decided.text, "🚫 <@U2> denied running `restart_service`.");
        assert!(decided.blocks.iter().all(|block| block["type"] != "actions"));
    }

    #[test]
    fn the_apology_quotes_the_event_id_as_reference() {
        let turn = TurnId::new("T061EG9R6-Ev0LAN670R");
        assert_eq!(reference(&turn), "Ev0LAN670R");
        assert!(apology(&turn).text.contains("`Ev0LAN670R`"));
    }
}
