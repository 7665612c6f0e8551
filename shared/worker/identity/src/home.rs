//! The app's Home tab: a person's connections to the providers tools act
//! through, each with a Disconnect button, and the providers they have not
//! connected. No token is ever in it; the provider's name for the person
//! (`sub`) is, so they can tell which account they connected.

use assistant_core::oauth::Connection;
use serde_json::{Value, json};
use slack::interaction::DISCONNECT_ACTION_ID;

/// Slack's `mrkdwn` special characters, escaped.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The Home tab for `connections`, with `providers` (every configured one)
/// listed as not connected where the person has none.
pub fn view(connections: &[Connection], providers: &[String]) -> Value {
    let mut blocks = vec![
        json!({"type": "header", "text": {"type": "plain_text", "text": "Your connections"}}),
        json!({"type": "context", "elements": [{"type": "mrkdwn", "text":
            "Some tools act as you, with your own sign-in, so what they do is done in your name. \
             Disconnect forgets your sign-in here and revokes it at the provider."}]}),
    ];
    for connection in connections {
        let provider = escape(&connection.provider);
        // The account as people know it (an email), else the provider's subject.
        let who = connection
            .account
            .as_deref()
            .or(connection.subject.as_deref())
            .map(|subject| format!(" as `{}`", escape(subject).replace('`', "'")))
            .unwrap_or_default();
        let since = format!("<!date^{}^{{date_short}} {{time}}|{}>", connection.connected_at, connection.connected_at);
        blocks.push(json!({
            "type": "section",
            "text": {"type": "mrkdwn", "text": format!("*{provider}*: connected{who} since {since}")},
            "accessory": {
                "type": "button",
                "style": "danger",
                "text": {"type": "plain_text", "text": "Disconnect"},
                "action_id": DISCONNECT_ACTION_ID,
                "value": connection.provider,
                "confirm": {
                    "title": {"type": "plain_text", "text": "Disconnect?"},
                    "text": {"type": "mrkdwn", "text": format!(
                        "Tools stop acting as you in *{provider}* until you connect again. Your sign-in is revoked at {provider}."
                    )},
                    "confirm": {"type": "plain_text", "text": "Disconnect"},
                    "deny": {"type": "plain_text", "text": "Keep"},
                    "style": "danger"
                }
            }
        }));
    }
    for provider in providers.iter().filter(|name| !connections.iter().any(|found| &found.provider == *name)) {
        blocks.push(json!({"type": "section", "text": {"type": "mrkdwn", "text": format!(
            "*{}*: not connected. I'll ask you to connect when a question needs it.", escape(provider)
        )}}));
    }
    if providers.is_empty() && connections.is_empty() {
        blocks.push(json!({"type": "section", "text": {"type": "mrkdwn", "text":
            "No tool here acts as you: nothing to connect."}}));
    }
    json!({"type": "home", "blocks": blocks})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_show_who_and_since_with_a_disconnect_and_the_rest_as_not_connected() {
        let connections = [Connection {
            provider: "tracker".into(),
            subject: Some("<!channel>".into()),
            account: None,
            connected_at: 1_700_000_000,
        }];
        let view = view(&connections, &["tracker".into(), "wiki".into()]);
        assert_eq!(view["type"], "home");
        let text = view.to_string();
        assert!(text.contains("connected as `&lt;!channel&gt;` since <!date^1700000000^"), "{text}");
        assert!(!text.contains("<!channel>"), "a hostile subject pings nobody: {text}");
        let button = &view["blocks"][2]["accessory"];
        assert_eq!(
            (button["action_id"].as_str(), button["value"].as_str()),
            (Some(DISCONNECT_ACTION_ID), Some("tracker"))
        );
        assert!(view["blocks"][3]["text"]["text"].as_str().unwrap().starts_with("*wiki*: not connected"));
        assert!(super::view(&[], &[]).to_string().contains("nothing to connect"));
    }
}
