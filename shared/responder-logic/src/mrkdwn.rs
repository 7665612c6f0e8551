//! Markdown, as models write it, to Slack's mrkdwn
//! (<https://docs.slack.dev/messaging/formatting-message-text>).
//!
//! Line by line: fenced code is kept verbatim (its language tag dropped,
//! Slack has none), tables become code blocks so their columns stay
//! aligned, headings become bold lines, list markers become bullets, and
//! quotes stay quotes. Within a line, code spans are kept verbatim, links
//! become `<url|label>`, `**bold**` becomes `*bold*`, `*italic*` becomes
//! `_italic_` and `~~struck~~` becomes `~struck~`.
//!
//! Slack reads `&`, `<` and `>` as control characters everywhere, code
//! included, and shows `&amp;`, `&lt;`, `&gt;` as the characters they
//! stand for; so they are escaped everywhere except in Slack's own tokens
//! (`<@U123>`, `<#C123|general>`, `<https://…|label>`), which
//! pass through untouched, and the `>` that starts a quote.

use regex::{Captures, Regex};
use std::sync::OnceLock;

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
    fn allow(mut self, token: &str) -> bool {
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

/// `markdown` as Slack mrkdwn; the special mentions `mentions` allows stay
/// mentions, the others show as text.
pub fn render(markdown: &str, mentions: SpecialMentions) -> String {
    let lines: Vec<&str> = markdown.lines().collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        if let Some(fence) = fence_marker(trimmed) {
            // Verbatim up to the closing fence (or the end: then closed).
            out.push("```".to_owned());
            i += 1;
            while i < lines.len() && !lines[i].trim_start().starts_with(fence) {
                out.push(escape(lines[i]));
                i += 1;
            }
            out.push("```".to_owned());
            i += 1;
            continue;
        }
        if trimmed.starts_with('|') && lines.get(i + 1).is_some_and(|next| is_table_separator(next)) {
            out.push("```".to_owned());
            while i < lines.len() && lines[i].trim_start().starts_with('|') {
                if !is_table_separator(lines[i]) {
                    out.push(escape(lines[i].trim()));
                }
                i += 1;
            }
            out.push("```".to_owned());
            continue;
        }
        out.push(render_line(line, mentions));
        i += 1;
    }
    out.join("\n")
}

/// The fence a line opens (```` ``` ```` or `~~~`), if it opens one.
fn fence_marker(trimmed: &str) -> Option<&'static str> {
    ["```", "~~~"].into_iter().find(|fence| trimmed.starts_with(fence))
}

fn is_table_separator(line: &str) -> bool {
    let line = line.trim();
    line.starts_with('|') && line.contains('-') && line.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '))
}

struct LinePatterns {
    heading: Regex,
    rule: Regex,
    bullet: Regex,
    numbered: Regex,
}

fn line_patterns() -> &'static LinePatterns {
    static PATTERNS: OnceLock<LinePatterns> = OnceLock::new();
    PATTERNS.get_or_init(|| LinePatterns {
        heading: Regex::new(r"^#{1,6}\s+(.*?)\s*#*\s*$").expect("valid"),
        rule: Regex::new(r"^\s*(?:(?:\*\s*){3,}|(?:-\s*){3,}|(?:_\s*){3,})$").expect("valid"),
        bullet: Regex::new(r"^(\s*)[-*+]\s+(?:\[( |x|X)\]\s+)?(.*)$").expect("valid"),
        numbered: Regex::new(r"^(\s*)(\d{1,9})[.)]\s+(.*)$").expect("valid"),
    })
}

fn render_line(line: &str, mentions: SpecialMentions) -> String {
    let inline = |text: &str| inline(text, mentions);
    let patterns = line_patterns();
    if let Some(caps) = patterns.heading.captures(line) {
        let text = caps[1].replace("**", "").replace("__", "");
        return if text.is_empty() { String::new() } else { format!("*{}*", inline(&text)) };
    }
    if patterns.rule.is_match(line) {
        return "──────────".to_owned();
    }
    if let Some(rest) = line.strip_prefix('>') {
        return format!(">{}", inline(rest));
    }
    if let Some(caps) = patterns.bullet.captures(line) {
        let marker = match caps.get(2).map(|m| m.as_str()) {
            Some(" ") => "☐",
            Some(_) => "☑",
            None => "•",
        };
        return format!("{}{marker} {}", &caps[1], inline(&caps[3]));
    }
    if let Some(caps) = patterns.numbered.captures(line) {
        return format!("{}{}. {}", &caps[1], &caps[2], inline(&caps[3]));
    }
    inline(line)
}

struct InlinePatterns {
    kept: Regex,
    special: Regex,
    link: Regex,
    bold_italic: Regex,
    bold: Regex,
    italic: Regex,
    strike: Regex,
}

fn inline_patterns() -> &'static InlinePatterns {
    static PATTERNS: OnceLock<InlinePatterns> = OnceLock::new();
    PATTERNS.get_or_init(|| InlinePatterns {
        // Slack's own tokens: user and channel mentions, links. Special
        // mentions (`<!channel>`, `<!here>`, `<!everyone>`,
        // `<!subteam^…>`) are kept only where `SpecialMentions` allows:
        // escaped, they show as text, so a planted instruction cannot make
        // the bot ping a whole channel.
        kept: Regex::new(r"<(?:[@#][^<>\s][^<>]*|(?:https?|mailto):[^<>\s]+)>").expect("valid"),
        special: Regex::new(r"<!(?:here|channel|everyone|subteam\^[A-Z0-9]+)(?:\|[^<>]*)?>").expect("valid"),
        link: Regex::new(r#"!?\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)"#).expect("valid"),
        bold_italic: Regex::new(r"\*\*\*(\S(?:.*?\S)?)\*\*\*").expect("valid"),
        bold: Regex::new(r"\*\*(\S(?:.*?\S)?)\*\*|(?:^|\b)__(\S(?:.*?\S)?)__(?:\b|$)").expect("valid"),
        italic: Regex::new(r"(^|[^*\w])\*(\S(?:[^*]*?\S)?)\*([^*\w]|$)").expect("valid"),
        strike: Regex::new(r"~~(\S(?:.*?\S)?)~~").expect("valid"),
    })
}

/// Stands in for a kept piece while the rest of the line is converted: a
/// private-use character that escaping and emphasis leave alone.
const HOLE: char = '\u{E000}';
/// Marks converted bold until italics are done (which would take `*x*`).
const BOLD: char = '\u{E001}';

/// The host a URL-like text names: `https://host/…`, `host.tld/…` or
/// `host.tld`; `None` for ordinary words.
fn host_of(text: &str) -> Option<&str> {
    let rest = text.split_once("://").map_or(text, |(_, rest)| rest);
    let host = rest.split(['/', '?', '#']).next()?.rsplit('@').next()?;
    let host = host.split(':').next()?;
    let looks_like_host = host.contains('.')
        && !host.starts_with('.')
        && !host.ends_with('.')
        && host.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
    looks_like_host.then_some(host)
}

fn inline(text: &str, mentions: SpecialMentions) -> String {
    let patterns = inline_patterns();
    let mut kept: Vec<String> = Vec::new();
    let mut hold = |piece: String| {
        kept.push(piece);
        HOLE.to_string()
    };
    // Verbatim first (code spans), then Slack tokens and links.
    let text = hold_code_spans(text, &mut hold);
    let text = patterns.special.replace_all(&text, |caps: &Captures<'_>| {
        let token = &caps[0];
        if mentions.allow(token) { hold(token.to_owned()) } else { token.to_owned() }
    });
    let text = patterns.kept.replace_all(&text, |caps: &Captures<'_>| {
        let token = &caps[0];
        // A Slack link written out (`<url|label>`) gets the same check as a
        // Markdown one: a label naming another host shows the real address.
        let disguised = token.strip_prefix('<').and_then(|t| t.strip_suffix('>')).and_then(|t| {
            let (url, label) = t.split_once('|')?;
            let (shown, real) = (host_of(label)?, host_of(url)?);
            (!shown.eq_ignore_ascii_case(real)).then(|| format!("<{url}>"))
        });
        hold(disguised.unwrap_or_else(|| token.to_owned()))
    });
    let text = patterns.link.replace_all(&text, |caps: &Captures<'_>| {
        let (label, url) = (caps[1].trim(), &caps[2]);
        // A label that names another host than the link's ("[bank.example](https://evil.example)")
        // shows the real address instead.
        let label = match (host_of(label), host_of(url)) {
            (Some(shown), Some(real)) if !shown.eq_ignore_ascii_case(real) => url,
            _ => label,
        };
        let url = escape(url).replace('|', "%7C");
        hold(if label.is_empty() { format!("<{url}>") } else { format!("<{url}|{}>", escape(label)) })
    });
    let text = escape(&text);
    let text = patterns.bold_italic.replace_all(&text, format!("{BOLD}_${{1}}_{BOLD}"));
    let text = patterns.bold.replace_all(&text, |caps: &Captures<'_>| {
        let inner = caps.get(1).or_else(|| caps.get(2)).expect("one side matched").as_str();
        format!("{BOLD}{inner}{BOLD}")
    });
    // Twice: adjacent spans (`*a* *b*`) share the character between them.
    let text = patterns.italic.replace_all(&text, "${1}_${2}_${3}");
    let text = patterns.italic.replace_all(&text, "${1}_${2}_${3}");
    let text = patterns.strike.replace_all(&text, "~${1}~");
    let mut pieces = kept.into_iter();
    text.chars()
        .map(|c| match c {
            HOLE => pieces.next().unwrap_or_default(),
            BOLD => "*".to_owned(),
            other => other.to_string(),
        })
        .collect()
}

/// `text` with each code span (a run of backticks up to the next run of
/// the same length) replaced by what `hold` returns for it, as
/// `` `content` `` with the content escaped. Unmatched backticks stay.
fn hold_code_spans(text: &str, hold: &mut impl FnMut(String) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let run = rest[start..].len() - rest[start..].trim_start_matches('`').len();
        let after = &rest[start + run..];
        let fence = &rest[start..start + run];
        // The closing run: exactly as long as the opening one.
        let close = after
            .match_indices(fence)
            .find(|(at, _)| !after[..*at].ends_with('`') && !after[at + run..].starts_with('`'));
        match close {
            Some((at, _)) if at > 0 => {
                out.push_str(&hold(format!("`{}`", escape(after[..at].trim()))));
                rest = &after[at + run..];
            }
            _ => {
                out.push_str(fence);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

pub use slack::text::escape;

#[cfg(test)]
mod tests {
    use super::{SpecialMentions, render};

    /// Markdown in, mrkdwn out.
    const CASES: &[(&str, &str, &str)] = &[
        ("bold", "this is **important**", "this is *important*"),
        ("bold underscores", "this is __important__", "this is *important*"),
        ("italic star", "an *aside* here", "an _aside_ here"),
        ("italic underscore", "an _aside_ here", "an _aside_ here"),
        ("bold italic", "***both***", "*_both_*"),
        ("strike", "~~gone~~", "~gone~"),
        ("adjacent italics", "*a* *b*", "_a_ _b_"),
        ("multiplication is no emphasis", "2 * 3 * 4", "2 * 3 * 4"),
        ("snake_case is no emphasis", "set max_retry_count now", "set max_retry_count now"),
        (
            "link",
            "see [the runbook](https://wiki.example.com/run?a=1&b=2)",
            "see <https://wiki.example.com/run?a=1&amp;b=2|the runbook>",
        ),
        (
            "link with bold label around",
            "**read [docs](https://d.example.com)**",
            "*read <https://d.example.com|docs>*",
        ),
        ("image", "![graph](https://img.example.com/g.png)", "<https://img.example.com/g.png|graph>"),
        ("autolink", "<https://example.com/x>", "<https://example.com/x>"),
        (
            "user and channel mentions kept",
            "ask <@U0LAN0Z89> in <#C012AB3CD|ops>",
            "ask <@U0LAN0Z89> in <#C012AB3CD|ops>",
        ),
        (
            "special mentions shown as text, never pinging (by default)",
            "<!channel> <!here> <!everyone> <!subteam^S0614TZR7|@oncall> <!here|here>",
            "&lt;!channel&gt; &lt;!here&gt; &lt;!everyone&gt; &lt;!subteam^S0614TZR7|@oncall&gt; &lt;!here|here&gt;",
        ),
        (
            "a label naming another host shows the real address",
            "[https://bank.example.com/login](https://evil.example.net/x) and [bank.example.com](https://evil.example.net)",
            "<https://evil.example.net/x|https://evil.example.net/x> and <https://evil.example.net|https://evil.example.net>",
        ),
        (
            "a written-out Slack link gets the same check",
            "<https://evil.example.net/x|bank.example.com> <https://docs.example.com|docs>",
            "<https://evil.example.net/x> <https://docs.example.com|docs>",
        ),
        (
            "a label naming the same host, or words, is kept",
            "[docs.example.com/guide](https://docs.example.com/guide) and [the guide](https://docs.example.com/guide)",
            "<https://docs.example.com/guide|docs.example.com/guide> and <https://docs.example.com/guide|the guide>",
        ),
        ("escapes", "if a < b && c > d", "if a &lt; b &amp;&amp; c &gt; d"),
        ("code span verbatim", "run `**not bold** <x> & y`", "run `**not bold** &lt;x&gt; &amp; y`"),
        ("double backtick span", "``a ` b``", "`a ` b`"),
        ("heading", "## Root cause", "*Root cause*"),
        ("heading with bold", "# **Summary** #", "*Summary*"),
        ("bullets", "- one\n* two\n+ three", "• one\n• two\n• three"),
        ("nested bullet", "- one\n  - inner", "• one\n  • inner"),
        ("task list", "- [ ] todo\n- [x] done", "☐ todo\n☑ done"),
        ("numbered", "1. first\n2) second", "1. first\n2. second"),
        ("bold in list", "- **db**: down", "• *db*: down"),
        ("quote", "> quoted **text**", "> quoted *text*"),
        ("rule", "---", "──────────"),
        ("fence keeps content, drops language", "```rust\nlet x = **y** < 3;\n```", "```\nlet x = **y** &lt; 3;\n```"),
        ("tilde fence", "~~~\n- not a list\n~~~", "```\n- not a list\n```"),
        ("unclosed fence is closed", "```\ncode", "```\ncode\n```"),
        ("table becomes code", "| a | b |\n|---|:-:|\n| 1 | 2 |", "```\n| a | b |\n| 1 | 2 |\n```"),
        ("paragraphs kept", "one\n\ntwo", "one\n\ntwo"),
    ];

    #[test]
    fn markdown_becomes_mrkdwn() {
        for (name, markdown, expected) in CASES {
            assert_eq!(render(markdown, SpecialMentions::default()), *expected, "case {name}");
        }
    }

    #[test]
    fn a_deployment_may_allow_some_special_mentions_and_only_those() {
        let here_and_groups = SpecialMentions::parse("here, subteam").unwrap();
        assert_eq!(
            render("**<!here>** <!here|here> <!channel> <!everyone> <!subteam^S0614TZR7|@oncall>", here_and_groups),
            "*<!here>* <!here|here> &lt;!channel&gt; &lt;!everyone&gt; <!subteam^S0614TZR7|@oncall>"
        );
        assert_eq!(SpecialMentions::parse("").unwrap(), SpecialMentions::default());
        for bad in ["all", "here,@channel", "HERE"] {
            assert!(SpecialMentions::parse(bad).is_err(), "{bad}");
        }
        // In code, never.
        assert_eq!(render("`<!here>`", here_and_groups), "`&lt;!here&gt;`");
    }
}
