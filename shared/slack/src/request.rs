//! What a verified request body is. Slack sends the Events API as JSON and
//! interactivity, SSL checks and slash commands as
//! `application/x-www-form-urlencoded`.

use crate::command::SlashCommand;
use crate::events::EventsPayload;
use crate::interaction::Interaction;
use serde::Deserialize;

#[derive(Debug, Clone, PartialEq)]
pub enum SlackRequest {
    Events(EventsPayload),
    Interaction(Interaction),
    /// A slash command ([`crate::command`]).
    Command(Box<SlashCommand>),
    /// Slack checking our TLS certificate: answer 200 and do nothing.
    SslCheck,
    /// A form body we do not act on. Acknowledged.
    OtherForm,
}

#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("body is not an Events API payload: {0}")]
    Json(#[source] serde_json::Error),
    #[error("body is not a form: {0}")]
    Form(#[source] serde_urlencoded::de::Error),
    #[error("interaction payload is not valid: {0}")]
    InteractionJson(#[source] serde_json::Error),
    #[error("slash command is missing fields: {0}")]
    Command(#[source] serde_urlencoded::de::Error),
}

#[derive(Deserialize)]
struct Form {
    payload: Option<String>,
    ssl_check: Option<String>,
    command: Option<String>,
}

/// Reads a body that has already passed signature verification.
///
/// The content type decides the format; when it is missing, a body that
/// starts with `{` is taken for JSON.
pub fn parse(content_type: Option<&str>, body: &[u8]) -> Result<SlackRequest, ParseError> {
    let is_form = match content_type {
        Some(ct) => ct.trim_start().to_ascii_lowercase().starts_with("application/x-www-form-urlencoded"),
        None => body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{'),
    };
    if !is_form {
        return serde_json::from_slice(body).map(SlackRequest::Events).map_err(ParseError::Json);
    }
    let form: Form = serde_urlencoded::from_bytes(body).map_err(ParseError::Form)?;
    if let Some(payload) = form.payload {
        return serde_json::from_str(&payload).map(SlackRequest::Interaction).map_err(ParseError::InteractionJson);
    }
    if form.ssl_check.is_some() {
        return Ok(SlackRequest::SslCheck);
    }
    if form.command.is_some() {
        let command = serde_urlencoded::from_bytes(body).map_err(ParseError::Command)?;
        return Ok(SlackRequest::Command(Box::new(command)));
    }
    Ok(SlackRequest::OtherForm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Event, EventsPayload};
    use crate::interaction::{APPROVE_ACTION_ID, Interaction};
    use testkit::fixtures;

    const JSON: Option<&str> = Some("application/json");
    const FORM: Option<&str> = Some("application/x-www-form-urlencoded");

    fn event(fixture: &str) -> Event {
        match parse(JSON, fixture.as_bytes()).unwrap() {
            SlackRequest::Events(EventsPayload::EventCallback(callback)) => callback.event,
            other => panic!("not an event callback: {other:?}"),
        }
    }

    #[test]
    fn url_verification_carries_the_challenge() {
        let parsed = parse(JSON, fixtures::URL_VERIFICATION.as_bytes()).unwrap();
        assert_eq!(
            parsed,
            SlackRequest::Events(EventsPayload::UrlVerification {
                challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P".into()
            })
        );
    }

    #[test]
    fn app_mention_parses_with_the_bot_user_from_authorizations() {
        let SlackRequest::Events(EventsPayload::EventCallback(callback)) =
            parse(JSON, fixtures::APP_MENTION.as_bytes()).unwrap()
        else {
            panic!("expected an event callback")
        };
        assert_eq!(callback.event_id.as_str(), "Ev0LAN670R");
        assert_eq!(callback.bot_user_id().map(|u| u.as_str()), Some(fixtures::BOT_USER));
        let Event::AppMention(mention) = callback.event else { panic!("expected app_mention") };
        assert_eq!(mention.channel.as_str(), "C0LAN2Q65");
        assert_eq!(mention.user.as_ref().map(|u| u.as_str()), Some("U061F7AUR"));
        assert_eq!(mention.thread_ts, None);
        assert!(mention.text.contains("checkout-api"));
    }

    #[test]
    fn message_kinds_parse_with_their_distinguishing_fields() {
        let Event::Message(dm) = event(fixtures::MESSAGE_IM) else { panic!() };
        assert!(dm.is_direct_message() && !dm.is_thread_reply());

        let Event::Message(reply) = event(fixtures::MESSAGE_THREAD_REPLY) else { panic!() };
        assert!(reply.is_thread_reply() && !reply.is_direct_message());
        assert_eq!(reply.thread_ts.as_ref().map(|t| t.as_str()), Some("1763800000.000100"));

        let Event::Message(bot) = event(fixtures::MESSAGE_BOT) else { panic!() };
        assert_eq!(bot.subtype.as_deref(), Some("bot_message"));
        assert_eq!(bot.bot_id.as_deref(), Some("B0OTHERBOT"));
        assert_eq!(bot.user, None);

        let Event::Message(changed) = event(fixtures::MESSAGE_CHANGED) else { panic!() };
        assert_eq!(changed.subtype.as_deref(), Some("message_changed"));
        let Event::Message(deleted) = event(fixtures::MESSAGE_DELETED) else { panic!() };
        assert_eq!(deleted.subtype.as_deref(), Some("message_deleted"));
    }

    #[test]
    fn assistant_thread_started_parses_its_thread_and_context() {
        let Event::AssistantThreadStarted(started) = event(fixtures::ASSISTANT_THREAD_STARTED) else { panic!() };
        assert_eq!(started.assistant_thread.channel_id.as_str(), "D0LAN2Q66");
        assert_eq!(started.assistant_thread.thread_ts.as_str(), "1763800700.000900");
        assert_eq!(started.assistant_thread.context.channel_id.as_ref().map(|c| c.as_str()), Some("C0LAN2Q65"));
    }

    #[test]
    fn unknown_event_and_payload_types_parse_as_unknown() {
        assert_eq!(event(fixtures::UNKNOWN_EVENT), Event::Unknown);
        let payload = parse(JSON, fixtures::UNKNOWN_PAYLOAD.as_bytes()).unwrap();
        assert_eq!(payload, SlackRequest::Events(EventsPayload::Unknown));
        let limited = parse(JSON, fixtures::APP_RATE_LIMITED.as_bytes()).unwrap();
        assert!(matches!(limited, SlackRequest::Events(EventsPayload::AppRateLimited { .. })));
    }

    #[test]
    fn block_actions_arrive_as_a_form_field() {
        let body = fixtures::interaction_form(fixtures::BLOCK_ACTIONS_APPROVE);
        let SlackRequest::Interaction(Interaction::BlockActions(actions)) = parse(FORM, body.as_bytes()).unwrap()
        else {
            panic!("expected block_actions")
        };
        assert_eq!(actions.actions[0].action_id, APPROVE_ACTION_ID);
        assert_eq!(actions.actions[0].value.as_deref(), Some("turn-7f3a:call-1"));
        assert_eq!(actions.channel_id().map(|c| c.as_str()), Some("C0LAN2Q65"));
        assert_eq!(actions.message_ts().map(|t| t.as_str()), Some("1763800900.001200"));
        assert_eq!(actions.thread_ts().map(|t| t.as_str()), Some("1763800000.000100"));
    }

    #[test]
    fn forms_without_a_payload() {
        assert_eq!(parse(FORM, b"ssl_check=1&token=x").unwrap(), SlackRequest::SslCheck);
        assert_eq!(parse(FORM, b"token=x&text=now").unwrap(), SlackRequest::OtherForm);
        let unknown_interaction = fixtures::interaction_form(r#"{"type":"view_closed","view":{}}"#);
        assert_eq!(
            parse(FORM, unknown_interaction.as_bytes()).unwrap(),
            SlackRequest::Interaction(Interaction::Unknown)
        );
        let broken_submission = fixtures::interaction_form(r#"{"type":"view_submission","view":{}}"#);
        assert!(parse(FORM, broken_submission.as_bytes()).is_err(), "a submission without its fields is refused");
    }

    #[test]
    fn a_slash_command_is_read_and_one_missing_its_fields_is_an_error() {
        let SlackRequest::Command(command) = parse(FORM, fixtures::SLASH_COMMAND.as_bytes()).unwrap() else {
            panic!("expected a slash command")
        };
        assert_eq!(
            (command.command.as_str(), command.workspace().map(|t| t.as_str())),
            ("/assistant", Some("T061EG9R6"))
        );
        assert!(matches!(parse(FORM, b"command=%2Fassistant&text=now"), Err(ParseError::Command(_))));
    }

    #[test]
    fn content_type_is_sniffed_when_missing_and_case_insensitive() {
        assert!(matches!(parse(None, fixtures::URL_VERIFICATION.as_bytes()), Ok(SlackRequest::Events(_))));
        assert_eq!(parse(None, b"ssl_check=1").unwrap(), SlackRequest::SslCheck);
        let charset = Some("Application/X-WWW-Form-Urlencoded; charset=utf-8");
        assert_eq!(parse(charset, b"ssl_check=1").unwrap(), SlackRequest::SslCheck);
    }

    #[test]
    fn an_org_wide_installs_null_team_payloads_parse() {
        let SlackRequest::Events(EventsPayload::EventCallback(callback)) =
            parse(JSON, fixtures::APP_UNINSTALLED_ORG.as_bytes()).unwrap()
        else {
            panic!("expected an event callback")
        };
        assert_eq!((callback.team_id.as_ref(), callback.workspace()), (None, None));
        assert!(matches!(parse(JSON, fixtures::TEAM_ACCESS_REVOKED.as_bytes()), Ok(SlackRequest::Events(_))));
        let click = fixtures::BLOCK_ACTIONS_APPROVE_GRID.replacen("\"team\": {", "\"team\": null, \"x\": {", 1);
        let body = fixtures::interaction_form(&click);
        let SlackRequest::Interaction(Interaction::BlockActions(actions)) = parse(FORM, body.as_bytes()).unwrap()
        else {
            panic!("expected block_actions")
        };
        assert_eq!(actions.workspace().map(|t| t.as_str()), Some("T0SISTER1"), "the person's workspace");
    }

    #[test]
    fn broken_bodies_are_errors_not_panics() {
        assert!(matches!(parse(JSON, b"{not json"), Err(ParseError::Json(_))));
        assert!(matches!(parse(JSON, b""), Err(ParseError::Json(_))));
        // A known type missing its required fields.
        assert!(matches!(parse(JSON, br#"{"type":"event_callback","team_id":"T1"}"#), Err(ParseError::Json(_))));
        assert!(matches!(parse(FORM, b"payload=%7Bnope"), Err(ParseError::InteractionJson(_))));
        assert!(matches!(parse(FORM, b"payload=%7B%7D&payload=%7B%7D"), Err(ParseError::Form(_))));
    }
}
