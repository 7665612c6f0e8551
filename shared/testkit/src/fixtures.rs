//! Captured-shape Slack payloads from `fixtures/`, for tests and the
//! benchmark. Ids are Slack's documentation ids.

macro_rules! fixtures {
    ($($name:ident => $file:literal),* $(,)?) => {
        $(pub const $name: &str = include_str!(concat!("../fixtures/", $file));)*
    };
}

fixtures! {
    URL_VERIFICATION => "url_verification.json",
    APP_MENTION => "app_mention.json",
    APP_MENTION_IN_THREAD => "app_mention_in_thread.json",
    MESSAGE_IM => "message_im.json",
    MESSAGE_THREAD_REPLY => "message_thread_reply.json",
    MESSAGE_THREAD_REPLY_TO_BOT => "message_thread_reply_to_bot.json",
    MESSAGE_CHANNEL_TOP_LEVEL => "message_channel_top_level.json",
    MESSAGE_CHANNEL_MENTION => "message_channel_mention.json",
    MESSAGE_BOT => "message_bot.json",
    MESSAGE_OWN => "message_own.json",
    MESSAGE_CHANGED => "message_changed.json",
    MESSAGE_DELETED => "message_deleted.json",
    ASSISTANT_THREAD_STARTED => "assistant_thread_started.json",
    APP_HOME_OPENED_MESSAGES => "app_home_opened_messages.json",
    APP_CONTEXT_CHANGED => "app_context_changed.json",
    UNKNOWN_EVENT => "unknown_event.json",
    UNKNOWN_PAYLOAD => "unknown_payload.json",
    APP_RATE_LIMITED => "app_rate_limited.json",
    BLOCK_ACTIONS_APPROVE => "block_actions_approve.json",
    BLOCK_ACTIONS_OTHER => "block_actions_other.json",
    BLOCK_ACTIONS_FEEDBACK => "block_actions_feedback.json",
    BLOCK_ACTIONS_CONNECT_EPHEMERAL => "block_actions_connect_ephemeral.json",
    BLOCK_ACTIONS_HOME_DISCONNECT => "block_actions_home_disconnect.json",
    // "Investigate with the assistant" on another app's alert: Slack's
    // published `message_action` shape (its reference's example, with
    // these fixtures' ids), Grafana's attachment as the message.
    MESSAGE_ACTION => "message_action.json",
    // A channel shared with another organization (Slack Connect): its
    // member mentions the bot, and clicks Approve (`user_team`/`team` and
    // `user.team_id` name their own team; the installing one is
    // `authorizations[0].team_id` and `team.id`).
    APP_MENTION_EXTERNAL => "app_mention_external.json",
    BLOCK_ACTIONS_APPROVE_EXTERNAL => "block_actions_approve_external.json",
    // An org-wide install (Enterprise Grid) in organization E0GRIDORG1, in
    // the field layout of Slack's published org-app examples
    // (api.slack.com/enterprise/apps/reference: `authorizations[0]` with
    // `team_id: null` and `is_enterprise_install: true`, the outer
    // `enterprise_id`, `context_team_id`, `context_enterprise_id`; a
    // click's `enterprise` and `is_enterprise_install`, Grid user ids
    // `W…`): a mention and a click from its second workspace T0SISTER1; a
    // Slack Connect partner of another organization (T0PARTNER1) writing
    // in a channel shared with it, where every field saying where the
    // event happened names our organization and workspace; and another
    // organization's install of the same app (E0OTHERORG).
    APP_MENTION_GRID => "app_mention_grid.json",
    APP_MENTION_GRID_CONNECT => "app_mention_grid_connect.json",
    APP_MENTION_OTHER_ORG => "app_mention_other_org.json",
    BLOCK_ACTIONS_APPROVE_GRID => "block_actions_approve_grid.json",
    // App lifecycle: Slack's published examples (docs.slack.dev/reference/
    // events/…) with the ids above.
    APP_UNINSTALLED => "app_uninstalled.json",
    // An org-wide install's uninstall, for the whole organization: the
    // callback names no workspace, as Slack's references of organization
    // events show (`team_access_revoked`, below).
    APP_UNINSTALLED_ORG => "app_uninstalled_org.json",
    TEAM_ACCESS_REVOKED => "team_access_revoked.json",
    TOKENS_REVOKED => "tokens_revoked.json",
    USER_CHANGE_DELETED => "user_change_deleted.json",
    // `/assistant <question>`: the form body of Slack's published slash
    // command example (api.slack.com/interactivity/slash-commands), with
    // these fixtures' ids.
    SLASH_COMMAND => "slash_command.form",
}

/// Alert payloads in each source's real shape: an Alertmanager
/// notification (version 4), PagerDuty V3 webhooks, CloudWatch alarm state
/// changes as EventBridge delivers them. One alert each, firing before
/// 2026-11-25T21:00:00Z ([`ALERTS_NOW`]).
pub mod alerts {
    fixtures! {
        ALERTMANAGER_FIRING => "alerts/alertmanager_firing.json",
        ALERTMANAGER_RESOLVED => "alerts/alertmanager_resolved.json",
        PAGERDUTY_TRIGGERED => "alerts/pagerduty_triggered.json",
        PAGERDUTY_ACKNOWLEDGED => "alerts/pagerduty_acknowledged.json",
        PAGERDUTY_RESOLVED => "alerts/pagerduty_resolved.json",
        CLOUDWATCH_ALARM => "alerts/cloudwatch_alarm.json",
        CLOUDWATCH_OK => "alerts/cloudwatch_ok.json",
    }

    /// 2026-11-25T21:00:00Z, shortly after the fixtures' alerts fired.
    pub const ALERTS_NOW: i64 = 1_795_640_400;
}

/// Messages as the Web API returns them (`conversations.replies`).
pub mod messages {
    fixtures! {
        // An alert's thread: Grafana's attachment (the shape Grafana's
        // Slack notifier sends, from its own tests), a CloudWatch alarm as
        // terraform-aws-notify-slack posts it (attachment fields), a Block
        // Kit alert (header, section fields, divider, context, buttons
        // with links) whose `text` is its fallback, and a person's question
        // (a `rich_text` block saying what `text` says).
        CONVERSATIONS_REPLIES_ALERTS => "messages/conversations_replies_alerts.json",
    }
}

/// `BLOCK_ACTIONS_FEEDBACK` is a 👎 click whose value is the placeholder
/// `"FEEDBACK_VALUE"`, for each test to fill.
///
/// The bot user the fixtures are addressed to.
pub const BOT_USER: &str = "U0LAN0Z89";

/// Slack's `view_submission` of the modal `view` (as `views.open` was
/// given it) by the person of [`MESSAGE_ACTION`], who typed `note` in its
/// one input: the field layout of Slack's published example
/// (docs.slack.dev/reference/interaction-payloads/view-interactions-payload).
pub fn view_submission(view: &serde_json::Value, note: &str) -> String {
    serde_json::json!({
        "type": "view_submission",
        "team": {"id": "T061EG9R6", "domain": "testteamnow"},
        "user": {"id": "U061F7AUR", "username": "roadrunner", "name": "roadrunner", "team_id": "T061EG9R6"},
        "api_app_id": "A0KRD7HC3",
        "token": "Nj2rfC2hU8mAfgaJLemZgO7H",
        "trigger_id": "12466734323.1395872398.8a6d49b8c8a2aaa6a9c3a1d0f3c2d2b1",
        "view": {
            "id": "VMHU10V25",
            "team_id": "T061EG9R6",
            "type": "modal",
            "callback_id": view["callback_id"],
            "private_metadata": view["private_metadata"],
            "blocks": view["blocks"],
            "title": view["title"],
            "state": {"values": {"note": {"note_input": {"type": "plain_text_input", "value": note}}}},
            "hash": "156772938.1827394"
        },
        "response_urls": [],
        "is_enterprise_install": false,
        "enterprise": null
    })
    .to_string()
}

/// An interactivity payload as Slack sends it: `payload=<url-encoded JSON>`.
pub fn interaction_form(payload_json: &str) -> String {
    serde_urlencoded::to_string([("payload", payload_json)]).expect("a string pair encodes")
}
