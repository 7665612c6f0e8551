//! Slash commands (<https://api.slack.com/interactivity/slash-commands>):
//! what Slack POSTs as an `application/x-www-form-urlencoded` body (signed
//! like every request) when someone types the app's command, and the
//! `response_url` that comes with it.
//!
//! The `response_url` is an address a request from the network names, and
//! the worker later POSTs the answer to it: it is read strictly
//! ([`ResponseUrl::parse`]), never followed as given. Only
//! `https://hooks.slack.com/commands/…` with letters, digits, `-` and `_`
//! in its path is one; anything else (another scheme, host or port,
//! userinfo, a query or fragment, percent-encoding, dots) is refused before
//! it is stored or used. Its `Debug` hides the path: whoever holds it may
//! post to the person for half an hour.

use crate::ids::{ChannelId, TeamId, UserId};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The only origin a `response_url` may name (Slack's, for every
/// workspace and Enterprise Grid org alike).
pub const RESPONSE_URL_ORIGIN: &str = "https://hooks.slack.com";
/// The path every slash command's `response_url` starts with.
pub const RESPONSE_URL_PATH_PREFIX: &str = "/commands/";
/// Slack's are about 90 characters; anything much longer is not one.
pub const MAX_RESPONSE_URL_LEN: usize = 256;
/// The question kept from a command's text, in characters. Slack lets a
/// command carry a few thousand; a question longer than this is cut (and
/// the worker says so) rather than put whole on the queue and in a prompt.
pub const MAX_QUESTION_CHARS: usize = 3000;
/// How long Slack accepts posts to a `response_url`, and how many.
pub const RESPONSE_URL_LIFETIME_SECS: i64 = 30 * 60;
pub const RESPONSE_URL_MAX_USES: u32 = 5;

/// A slash command as Slack sends it. Only what the bot acts on is read;
/// the deprecated verification `token` and the names (`team_domain`,
/// `channel_name`, `user_name`) are left in the body.
#[derive(Clone, PartialEq, Deserialize)]
pub struct SlashCommand {
    /// The command as typed, `/assistant` (whatever the manifest names).
    pub command: String,
    /// Everything after the command: the question.
    #[serde(default)]
    pub text: String,
    /// The workspace the command was typed in. Read leniently (absent or
    /// empty: none), so a form without it is answered, not refused with a
    /// 400: see [`SlashCommand::workspace`].
    #[serde(default)]
    pub team_id: Option<TeamId>,
    #[serde(default)]
    pub enterprise_id: Option<String>,
    pub channel_id: ChannelId,
    pub user_id: UserId,
    /// As given: read with [`ResponseUrl::parse`] before anything uses it.
    pub response_url: String,
    pub trigger_id: String,
    #[serde(default)]
    pub api_app_id: Option<String>,
    #[serde(default)]
    pub is_enterprise_install: Option<String>,
}

impl fmt::Debug for SlashCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlashCommand")
            .field("command", &self.command)
            .field("text_chars", &self.text.chars().count())
            .field("team_id", &self.team_id)
            .field("channel_id", &self.channel_id)
            .field("user_id", &self.user_id)
            .field("trigger_id", &self.trigger_id)
            .finish_non_exhaustive()
    }
}

impl SlashCommand {
    /// The workspace the command was typed in, if the form names one (an
    /// organization's `E…` id names none).
    pub fn workspace(&self) -> Option<&TeamId> {
        self.team_id.as_ref().filter(|team| team.is_workspace())
    }

    /// What makes this use of the command this one (its trigger id's key,
    /// as a shortcut's: [`crate::shortcut::trigger_key`]).
    pub fn claim_key(&self) -> Option<String> {
        crate::shortcut::trigger_key(&self.trigger_id)
    }

    /// The question: the command's text trimmed, at most
    /// [`MAX_QUESTION_CHARS`] characters, and whether it was cut.
    pub fn question(&self) -> (String, bool) {
        let text = self.text.trim();
        let cut = text.chars().count() > MAX_QUESTION_CHARS;
        (text.chars().take(MAX_QUESTION_CHARS).collect(), cut)
    }
}

/// Why a `response_url` was refused (for the log line; never the URL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ResponseUrlError {
    #[error("longer than {MAX_RESPONSE_URL_LEN} characters")]
    TooLong,
    #[error("not https://hooks.slack.com")]
    Origin,
    #[error("path is not /commands/…")]
    Path,
    #[error("path holds characters Slack's never do")]
    Characters,
}

/// A `response_url` that is Slack's: `https://hooks.slack.com/commands/…`.
#[derive(Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct ResponseUrl(String);

impl ResponseUrl {
    /// Reads `raw` strictly. An explicit `:443` is Slack's origin too (and
    /// dropped); every other deviation is refused, so that what is stored
    /// names Slack's host and nothing a parser could read differently.
    pub fn parse(raw: &str) -> Result<Self, ResponseUrlError> {
        if raw.len() > MAX_RESPONSE_URL_LEN {
            return Err(ResponseUrlError::TooLong);
        }
        let rest = raw
            .strip_prefix(RESPONSE_URL_ORIGIN)
            .map(|rest| rest.strip_prefix(":443").unwrap_or(rest))
            .ok_or(ResponseUrlError::Origin)?;
        // The origin must end where the path starts: `hooks.slack.com.evil`,
        // `hooks.slack.com@evil`, `hooks.slack.com:8443` all fail here.
        if !rest.starts_with('/') {
            return Err(ResponseUrlError::Origin);
        }
        let path = rest.strip_prefix(RESPONSE_URL_PATH_PREFIX).ok_or(ResponseUrlError::Path)?;
        let segment_ok = |segment: &str| {
            !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        if path.is_empty() || !path.split('/').all(segment_ok) {
            return Err(ResponseUrlError::Characters);
        }
        Ok(Self(format!("{RESPONSE_URL_ORIGIN}{RESPONSE_URL_PATH_PREFIX}{path}")))
    }

    /// The URL, to post to.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The path (`/commands/…`), for a test's stand-in origin.
    pub fn path(&self) -> &str {
        &self.0[RESPONSE_URL_ORIGIN.len()..]
    }
}

impl fmt::Debug for ResponseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ResponseUrl({RESPONSE_URL_ORIGIN}{RESPONSE_URL_PATH_PREFIX}…)")
    }
}

/// Read back from a queue message or a record: checked again, so a forged
/// message names no other host either.
impl<'de> Deserialize<'de> for ResponseUrl {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        Self::parse(&raw).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use testkit::fixtures;

    #[test]
    fn slacks_example_reads_with_its_question_and_response_url() {
        let command: SlashCommand = serde_urlencoded::from_str(fixtures::SLASH_COMMAND).unwrap();
        assert_eq!(command.command, "/assistant");
        assert_eq!(command.question(), ("why is checkout-api failing in prod?".to_owned(), false));
        assert_eq!((command.channel_id.as_str(), command.user_id.as_str()), ("C0LAN2Q65", "U061F7AUR"));
        assert!(ResponseUrl::parse(&command.response_url).is_ok());
        assert_eq!(command.claim_key().as_deref(), Some("133452246097384749208088930838d88f008e0"));
        let shown = format!("{command:?}");
        assert!(!shown.contains("hooks.slack.com") && !shown.contains("checkout"), "{shown}");
    }

    #[test]
    fn a_long_question_is_cut() {
        let command: SlashCommand = serde_urlencoded::from_str(fixtures::SLASH_COMMAND).unwrap();
        let long = SlashCommand { text: "é".repeat(MAX_QUESTION_CHARS + 5), ..command };
        let (question, cut) = long.question();
        assert_eq!((question.chars().count(), cut), (MAX_QUESTION_CHARS, true));
    }

    #[test]
    fn slacks_response_urls_are_read() {
        let url = ResponseUrl::parse("https://hooks.slack.com/commands/T061EG9R6/1234567890123/AbCdEf_12-3").unwrap();
        assert_eq!(url.path(), "/commands/T061EG9R6/1234567890123/AbCdEf_12-3");
        let port = ResponseUrl::parse("https://hooks.slack.com:443/commands/T1/2/x").unwrap();
        assert_eq!(port.expose(), "https://hooks.slack.com/commands/T1/2/x");
        assert!(!format!("{url:?}").contains("AbCdEf"), "Debug hides the capability");
        let json = serde_json::to_string(&url).unwrap();
        assert_eq!(serde_json::from_str::<ResponseUrl>(&json).unwrap(), url);
    }

    #[test]
    fn hostile_response_urls_are_refused() {
        let long = format!("https://hooks.slack.com/commands/{}", "a".repeat(MAX_RESPONSE_URL_LEN));
        let hostile = [
            "http://hooks.slack.com/commands/T1/2/x",
            "https://hooks.slack.com.evil.com/commands/T1/2/x",
            "https://hooks.slack.com@evil.com/commands/T1/2/x",
            "https://user@hooks.slack.com/commands/T1/2/x",
            "https://user:pw@hooks.slack.com/commands/T1/2/x",
            "https://hooks.slack.com:8443/commands/T1/2/x",
            "https://hooks.slack.com:443@evil.com/commands/T1/2/x",
            "https://169.254.169.254/commands/T1/2/x",
            "https://[::ffff:169.254.169.254]/commands/T1/2/x",
            "https://[fd00:ec2::254]/commands/T1/2/x",
            "https://HOOKS.SLACK.COM/commands/T1/2/x",
            "https://hooks%2eslack%2ecom/commands/T1/2/x",
            "https://hooks.slack.com/commands/%2e%2e/%2e%2e/api/chat.postMessage",
            "https://hooks.slack.com/commands/../../services/T1/B1/x",
            "https://hooks.slack.com/commands/T1/2/x?redirect=https://evil.com",
            "https://hooks.slack.com/commands/T1/2/x#frag",
            "https://hooks.slack.com/commands/T1//x",
            "https://hooks.slack.com/commands/",
            "https://hooks.slack.com/services/T1/B1/x",
            "https://hooks.slack.com/app/T1/2/x",
            "https://hooks.slack.com\\@evil.com/commands/T1/2/x",
            "https://hooks.slack.com/commands/T1/2/x\r\nHost: evil.com",
            " https://hooks.slack.com/commands/T1/2/x",
            "//hooks.slack.com/commands/T1/2/x",
            "file:///etc/passwd",
            "",
            &long,
        ];
        for raw in hostile {
            assert!(ResponseUrl::parse(raw).is_err(), "{raw}");
            assert!(serde_json::from_str::<ResponseUrl>(&serde_json::to_string(raw).unwrap()).is_err(), "{raw}");
        }
    }
}
