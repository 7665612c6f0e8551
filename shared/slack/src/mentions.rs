//! Slack's mass mentions: `<!here>`, `<!channel>`, `<!everyone>` (and
//! `<!group>`, the old name of `<!channel>`) and user groups
//! (`<!subteam^S…>`), which notify many people at once. A deployment says
//! which kinds its bot may use ([`SpecialMentions`],
//! `SLACK_ALLOWED_SPECIAL_MENTIONS`, none by default); [`neutralise`] makes
//! every other one unable to ping: its `<` becomes `&lt;`, so Slack shows it
//! as text. Other `<!…>` forms (`<!date^…>`) and person mentions
//! (`<@U…>`) stay. The one place this is applied to everything the bot
//! sends is the Web API client's output guard
//! (`adapters_slack::output_guard`).

use std::borrow::Cow;

/// Which of Slack's special mentions the bot may use. None by default: a
/// planted instruction in a runbook, a thread or a tool result must not make
/// the bot ping a whole channel. A deployment may allow some
/// (`SLACK_ALLOWED_SPECIAL_MENTIONS=here,subteam` on the worker and the
/// responder).
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
    pub fn allow(mut self, token: &str) -> bool {
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

/// The kind of mass mention `rest` (the text after a `<!`) starts, as
/// [`SpecialMentions`] names it; `None` for `<!date^…>` and the like.
/// Slack reads these words in any case; `group` is `channel`'s old name.
fn mass_mention(rest: &str) -> Option<&'static str> {
    let word: String = rest.chars().take_while(|c| c.is_ascii_alphabetic()).collect::<String>().to_ascii_lowercase();
    let next = rest[word.len()..].chars().next();
    let kind = match word.as_str() {
        "here" => "here",
        "channel" | "group" => "channel",
        "everyone" => "everyone",
        "subteam" => "subteam",
        _ => return None,
    };
    // `<!here>`, `<!here|@here>`, `<!subteam^S1>`: the word ends the name.
    matches!(next, None | Some('>' | '|' | '^' | ' ')).then_some(kind)
}

/// `text` with every mass mention `allowed` does not allow made unable to
/// ping (`<!channel>` → `&lt;!channel>`); the rest as it was. Borrowed when
/// nothing changed. Idempotent: what it returns has nothing left to change.
pub fn neutralise(text: &str, allowed: SpecialMentions) -> Cow<'_, str> {
    if !text.contains("<!") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut rest = text;
    let mut changed = false;
    while let Some(at) = rest.find("<!") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        match mass_mention(after) {
            Some(kind) if !allowed.allow(&format!("<!{kind}>")) => {
                out.push_str("&lt;!");
                changed = true;
            }
            _ => out.push_str("<!"),
        }
        rest = after;
    }
    out.push_str(rest);
    if changed { Cow::Owned(out) } else { Cow::Borrowed(text) }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn mass_mentions_lose_their_angle_bracket_unless_allowed_and_nothing_else_changes() {
        let none = SpecialMentions::default();
        let text = "<!here> <!channel|@channel> <!everyone> <!group> <!subteam^S1|@ops> <!HERE> <!Channel>";
        let out = neutralise(text, none);
        assert!(!out.contains("<!"), "{out}");
        assert_eq!(neutralise(&out, none), out, "idempotent");
        // Dates, people, links and look-alike words stay.
        for kept in ["<!date^1763803600^{time}|then>", "<@U061F7AUR>", "<https://x.example|x>", "<!heresy>", "a <! b"] {
            assert!(matches!(neutralise(kept, none), Cow::Borrowed(_)), "{kept}");
        }
        let here = SpecialMentions { here: true, ..SpecialMentions::default() };
        assert_eq!(neutralise("<!here> and <!channel>", here), "<!here> and &lt;!channel>");
        let groups = SpecialMentions { subteam: true, ..SpecialMentions::default() };
        assert_eq!(neutralise("<!subteam^S1> <!everyone>", groups), "<!subteam^S1> &lt;!everyone>");
    }
}
