//! The output guard: the one rule for everything the bot sends to Slack,
//! applied by the Web API client ([`crate::web::WebClient`]) to every
//! request's parameters, whichever function, tool or path wrote them
//! (answers, streams and their task cards, `post_message`, alert roots and
//! updates, approval prompts, notices, ephemerals, canvases, the Home tab,
//! thread titles, status lines, suggested prompts).
//!
//! Two things, in this order, on every text Slack shows:
//!
//! 1. secrets are redacted ([`redact::Redactor::global`]: known shapes and
//!    the secrets the process remembered);
//! 2. mass mentions the deployment does not allow (`<!here>`,
//!    `<!channel>`, `<!everyone>`, `<!subteam^…>`) lose their `<` and show
//!    as text ([`slack::mentions`]; the worker and the responder read the
//!    same `SLACK_ALLOWED_SPECIAL_MENTIONS`).
//!
//! Parameters that carry JSON ([`JSON_PARAMS`]: blocks, stream chunks,
//! views, suggested prompts, canvas content) are parsed and every string in
//! them guarded: a mention cannot hide in a table cell, a task card's
//! title, a button's label or a view. Strings under keys that are data for
//! Slack or for the bot, not text ([`DATA_KEYS`]: button values, ids,
//! URLs), lose mass mentions too but are not redacted, so a sign-in link or
//! a button's envelope reaches Slack as written. Parameters Slack never
//! shows and that must reach it unchanged ([`UNSHOWN_PARAMS`]: message
//! metadata, the searching person's action token, page cursors) pass as
//! they are. Uploaded file bodies are not messages and are not guarded here
//! (the responder redacts an answer before it becomes a file).
//!
//! The renderers upstream do more (the responder keeps an allowed mention
//! out of code, a stream makes every special mention text); this guard is
//! what holds when one of them forgets. It is idempotent: guarded text
//! passes unchanged.

use serde_json::Value;
use slack::mentions::{self, SpecialMentions};
use std::borrow::Cow;

/// Parameters whose value is JSON, guarded string by string.
pub const JSON_PARAMS: &[&str] =
    &["blocks", "attachments", "chunks", "view", "prompts", "changes", "document_content", "files"];

/// Parameters Slack never shows, sent unchanged.
pub const UNSHOWN_PARAMS: &[&str] = &["metadata", "action_token", "cursor"];

/// Keys inside JSON parameters whose strings are data, not text: their mass
/// mentions are neutralised, but they are not redacted.
pub const DATA_KEYS: &[&str] =
    &["action_id", "block_id", "callback_id", "external_id", "private_metadata", "value", "url", "id", "type"];

/// Redaction and the special-mention rule, for every Slack request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutputGuard {
    mentions: SpecialMentions,
}

impl OutputGuard {
    /// The guard of a deployment that allows `mentions` (none by default).
    pub fn new(mentions: SpecialMentions) -> Self {
        Self { mentions }
    }

    /// A text Slack shows: redacted, then unable to ping unless allowed.
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match redact::Redactor::global().redact(text) {
            Cow::Borrowed(text) => mentions::neutralise(text, self.mentions),
            Cow::Owned(redacted) => Cow::Owned(mentions::neutralise(&redacted, self.mentions).into_owned()),
        }
    }

    /// Every string in `value`, guarded; under [`DATA_KEYS`], mentions only.
    pub fn json(&self, value: &mut Value) {
        self.walk(value, false);
    }

    fn walk(&self, value: &mut Value, data: bool) {
        match value {
            Value::String(text) => {
                let guarded = if data { mentions::neutralise(text, self.mentions) } else { self.text(text) };
                if let Cow::Owned(guarded) = guarded {
                    *text = guarded;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.walk(item, data)),
            Value::Object(fields) => {
                if let Some(text) = self.disallowed_element(fields) {
                    *value = serde_json::json!({"type": "text", "text": text});
                    return;
                }
                for (key, field) in fields.iter_mut() {
                    self.walk(field, data || DATA_KEYS.contains(&key.as_str()));
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// A rich-text element that pings (`{"type": "broadcast", "range":
    /// "channel"}`, `{"type": "usergroup", "usergroup_id": …}`) which the
    /// deployment does not allow: the plain text that stands in for it.
    fn disallowed_element(&self, fields: &serde_json::Map<String, Value>) -> Option<String> {
        let field = |name: &str| fields.get(name).and_then(Value::as_str);
        let (kind, shown) = match field("type")? {
            "broadcast" => {
                let range = field("range").unwrap_or("channel").to_ascii_lowercase();
                let kind = if range == "group" { "channel".to_owned() } else { range };
                (kind.clone(), format!("@{kind}"))
            }
            "usergroup" => ("subteam".to_owned(), "@group".to_owned()),
            _ => return None,
        };
        (!self.mentions.allow(&format!("<!{kind}>"))).then_some(shown)
    }

    /// One request parameter as it may be sent.
    pub fn param<'a>(&self, name: &str, value: &'a str) -> Cow<'a, str> {
        if UNSHOWN_PARAMS.contains(&name) {
            return Cow::Borrowed(value);
        }
        if JSON_PARAMS.contains(&name)
            && let Ok(mut json) = serde_json::from_str::<Value>(value)
        {
            let before = json.clone();
            self.json(&mut json);
            return if json == before { Cow::Borrowed(value) } else { Cow::Owned(json.to_string()) };
        }
        self.text(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Made at test time: nothing secret-looking is committed.
    fn aws_secret() -> String {
        format!("aws_secret_access_key={}{}", "wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYzQ8rT2vN5mL4kW9s")
    }

    #[test]
    fn a_text_parameter_loses_its_secrets_and_its_mass_mentions() {
        let guard = OutputGuard::default();
        let text = format!(
            "<!channel> <!here> <!subteam^S1|@ops> <!everyone> deploy {} <@U1> <!date^1^{{time}}|x>",
            aws_secret()
        );
        let sent = guard.param("text", &text);
        assert!(!sent.contains("<!channel>") && !sent.contains("<!here>") && !sent.contains("<!subteam"), "{sent}");
        assert!(!sent.contains("<!everyone>") && !sent.contains("bPxRfiCY"), "{sent}");
        assert!(sent.contains("<@U1>") && sent.contains("<!date^1^{time}|x>"), "{sent}");
        assert_eq!(guard.param("text", &sent), sent, "idempotent");
    }

    #[test]
    fn rich_text_broadcasts_and_user_groups_become_plain_text_unless_allowed() {
        let blocks = json!([{"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": [
            {"type": "broadcast", "range": "channel"},
            {"type": "broadcast", "range": "here"},
            {"type": "usergroup", "usergroup_id": "S1"},
            {"type": "user", "user_id": "U1"},
            {"type": "text", "text": "deploy"}
        ]}]}]);
        let sent = |guard: OutputGuard| -> Value {
            let sent: Value = serde_json::from_str(&guard.param("blocks", &blocks.to_string())).unwrap();
            sent[0]["elements"][0]["elements"].clone()
        };
        assert_eq!(
            sent(OutputGuard::default()),
            json!([{"type": "text", "text": "@channel"}, {"type": "text", "text": "@here"},
                   {"type": "text", "text": "@group"}, {"type": "user", "user_id": "U1"},
                   {"type": "text", "text": "deploy"}])
        );
        let here = sent(OutputGuard::new(SpecialMentions::parse("here").unwrap()));
        assert_eq!(here[1], json!({"type": "broadcast", "range": "here"}), "allowed: kept");
        assert_eq!(here[0], json!({"type": "text", "text": "@channel"}));
    }

    #[test]
    fn every_string_in_blocks_chunks_and_views_is_guarded_but_data_is_only_unpinged() {
        let guard = OutputGuard::default();
        let chunks = json!([
            {"type": "markdown_text", "text": "ask <!here>"},
            {"type": "task_update", "id": "t1", "title": "<!channel> run", "status": "complete",
             "details": "<!subteam^S1>", "output": aws_secret(),
             "sources": [{"type": "url", "url": "https://x.example/<!everyone>", "text": "<!everyone>"}]}
        ]);
        let sent = guard.param("chunks", &chunks.to_string()).into_owned();
        assert!(!sent.contains("<!") && !sent.contains("bPxRfiCY"), "{sent}");
        let blocks = json!([{"type": "actions", "elements": [{"type": "button", "action_id": "approve",
            "text": {"type": "plain_text", "text": "<!channel>"}, "value": aws_secret()}]}]);
        let sent: Value = serde_json::from_str(&guard.param("blocks", &blocks.to_string())).unwrap();
        assert_eq!(sent[0]["elements"][0]["text"]["text"], "&lt;!channel>");
        assert_eq!(sent[0]["elements"][0]["value"], aws_secret(), "a button's value is data: not redacted");
        let view =
            json!({"type": "home", "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "<!here>"}}]});
        assert!(!guard.param("view", &view.to_string()).contains("<!here>"));
    }

    #[test]
    fn unshown_parameters_pass_unchanged_and_an_allowed_kind_still_pings() {
        let guard = OutputGuard::default();
        let metadata = json!({"event_type": "x", "event_payload": {"note": "<!here>"}}).to_string();
        assert_eq!(guard.param("metadata", &metadata), metadata);
        assert_eq!(
            guard.param("action_token", "10647138185092.960436384805.afce3599"),
            "10647138185092.960436384805.afce3599"
        );
        let here = OutputGuard::new(SpecialMentions { here: true, ..SpecialMentions::default() });
        assert_eq!(here.param("text", "<!here> and <!channel>"), "<!here> and &lt;!channel>");
        assert!(matches!(here.param("blocks", "[]"), Cow::Borrowed(_)));
    }
}
