//! The app's Home tab: a person's connections to the providers tools act
//! through, each with a Disconnect button, and the providers they have not
//! connected. No token is ever in it; the provider's name for the person
//! (`sub`) is, so they can tell which account they connected. Where the
//! deployment sets budgets, what the person spent of theirs, and for the
//! budgets' admins what the whole deployment spent ([`usage`]).

use assistant_core::budgets::{Scope, Used, dollars};
use assistant_core::oauth::Connection;
use serde_json::{Value, json};
use slack::interaction::DISCONNECT_ACTION_ID;

/// Slack's `mrkdwn` special characters, escaped.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The Home tab for `connections`, with `providers` (every configured one)
/// listed as not connected where the person has none, and the budgets'
/// counters the person may see (`used`: none where no budget is set).
pub fn view(connections: &[Connection], providers: &[String], used: &[Used]) -> Value {
    let mut blocks = usage(used);
    blocks.extend([
        json!({"type": "header", "text": {"type": "plain_text", "text": "Your connections"}}),
        json!({"type": "context", "elements": [{"type": "mrkdwn", "text":
            "Some tools act as you, with your own sign-in, so what they do is done in your name. \
             Disconnect forgets your sign-in here and revokes it at the provider."}]}),
    ]);
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

/// "Usage": one line per counter, yours first, then the deployment's
/// (admins only): spent of the cap, the share, and when it starts again.
pub fn usage(used: &[Used]) -> Vec<Value> {
    if used.is_empty() {
        return Vec::new();
    }
    let line = |used: &Used| {
        let whose = match used.scope {
            Scope::Person(..) => "You",
            Scope::Channel(..) => "This channel",
            Scope::Deployment => "Everyone, this deployment",
        };
        let resets = format!("<!date^{}^{{date_short}} {{time}}|{}>", used.resets_at, used.resets_at);
        format!(
            "*{whose}*, {}: {} of {} ({:.0}%), starts again {resets}",
            used.period.as_str(),
            dollars(used.usd()),
            dollars(used.cap_usd),
            used.ratio() * 100.0
        )
    };
    let lines: Vec<String> = used.iter().map(line).collect();
    vec![
        json!({"type": "header", "text": {"type": "plain_text", "text": "Usage"}}),
        json!({"type": "section", "text": {"type": "mrkdwn", "text": lines.join("\n")}}),
        json!({"type": "context", "elements": [{"type": "mrkdwn", "text":
            "Estimated from each answer's model tokens and AWS use. At 100% I stop and say so until the budget starts again."}]}),
        json!({"type": "divider"}),
    ]
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
        let view = view(&connections, &["tracker".into(), "wiki".into()], &[]);
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
        assert!(super::view(&[], &[], &[]).to_string().contains("nothing to connect"));
    }

    #[test]
    fn usage_shows_each_counter_spent_of_its_cap_and_when_it_starts_again_and_nothing_without_budgets() {
        use assistant_core::budgets::Period;
        let used = [
            Used {
                scope: Scope::Person(slack::TeamId::new("T1"), slack::UserId::new("U1")),
                period: Period::Day,
                micros: 1_500_000,
                cap_usd: 2.0,
                resets_at: 1_795_910_400,
            },
            Used {
                scope: Scope::Deployment,
                period: Period::Month,
                micros: 81_000_000,
                cap_usd: 100.0,
                resets_at: 1_796_083_200,
            },
        ];
        let view = view(&[], &[], &used);
        let text = view["blocks"][1]["text"]["text"].as_str().unwrap();
        assert_eq!(view["blocks"][0]["text"]["text"], "Usage");
        assert!(text.contains("*You*, daily: $1.50 of $2.00 (75%), starts again <!date^1795910400^"), "{text}");
        assert!(text.contains("*Everyone, this deployment*, monthly: $81.00 of $100.00 (81%)"), "{text}");
        assert!(!super::view(&[], &[], &[]).to_string().contains("Usage"));
    }
}
