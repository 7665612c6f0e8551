//! Slack's mrkdwn, where Slack still needs it (approval prompts, notices,
//! alerts: text the bot writes itself, escaped), and what every message
//! shares: which special mentions may ping, and the host a link names.
//! Answers are Slack's own Markdown instead (see [`crate::markdown`]).

/// Which of Slack's special mentions an answer may use. None by default: a
/// planted instruction in a runbook, a thread or a tool result must not make
/// the bot ping a whole channel. A deployment may allow some
/// (`SLACK_ALLOWED_SPECIAL_MENTIONS=here,subteam` on the responder).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpecialMentions {
    pub here: bool,
    pub channel: bool,
    pub everyone: bool,
    /// User groups (`<!subteam^S…>`).
    pub subteam: bool,
}

impl SpecialMentions {
    /// `here,channel,everyone,subteam`, any of them; empty: none.
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut allowed = Self::default();
        for name in list.split(',').map(str::trim).filter(|name| !name.is_empty()) {
            *allowed.flag(name).ok_or_else(|| format!("{name:?} is not one of here, channel, everyone, subteam"))? =
                true;
        }
        Ok(allowed)
    }

    /// Whether `<!here>`, `<!subteam^S…|@x>`, … may stay a mention.
    pub(crate) fn allow(mut self, token: &str) -> bool {
        let name = token.trim_start_matches("<!").split(['|', '^', '>']).next().unwrap_or_default();
        self.flag(name).is_some_and(|allowed| *allowed)
    }

    /// The switch for the kind `name`; `None` for any other word.
    fn flag(&mut self, name: &str) -> Option<&mut bool> {
        match name {
            "here" => Some(&mut self.here),
            "channel" => Some(&mut self.channel),
            "everyone" => Some(&mut self.everyone),
            "subteam" => Some(&mut self.subteam),
            _ => None,
        }
    }
}

/// The host a URL-like text names: `https://host/…`, `host.tld/…` or
/// `host.tld`; `None` for ordinary words.
pub(crate) fn host_of(text: &str) -> Option<&str> {
    let rest = text.split_once("://").map_or(text, |(_, rest)| rest);
    let host = rest.split(['/', '?', '#']).next()?.rsplit('@').next()?;
    let host = host.split(':').next()?;
    let looks_like_host = host.contains('.')
        && !host.starts_with('.')
        && !host.ends_with('.')
        && host.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
    looks_like_host.then_some(host)
}

pub use slack::text::escape;

#[cfg(test)]
mod tests {
    use super::{SpecialMentions, host_of};

    #[test]
    fn a_deployment_may_allow_some_special_mentions_and_only_those() {
        let here_and_groups = SpecialMentions::parse("here, subteam").unwrap();
        assert!(here_and_groups.allow("<!here>") && here_and_groups.allow("<!subteam^S0614TZR7|@oncall>"));
        assert!(!here_and_groups.allow("<!channel>") && !here_and_groups.allow("<!everyone>"));
        assert_eq!(SpecialMentions::parse("").unwrap(), SpecialMentions::default());
        for bad in ["all", "here,@channel", "HERE"] {
            assert!(SpecialMentions::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hosts_are_read_from_urls_and_url_like_labels_only() {
        assert_eq!(host_of("https://bank.example.com/login"), Some("bank.example.com"));
        assert_eq!(host_of("bank.example.com"), Some("bank.example.com"));
        assert_eq!(host_of("https://user@evil.example:8443/x"), Some("evil.example"));
        assert_eq!(host_of("the runbook"), None);
    }
}
