//! Slack's message text: the three characters its markup gives meaning to.

/// `&`, `<` and `>` as Slack's entities: the text can then neither link,
/// mention nor ping, whatever it says.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            other => escaped.push(other),
        }
    }
    escaped
}

/// Markdown for a streamed message (`markdown_text`), made unable to ping:
/// Slack's special mentions (`<!here>`, `<!channel>`, `<!subteam^…>`) lose
/// their `<`. Works piece by piece on text cut at whitespace, as streamed
/// text is: a mention never straddles a cut.
pub fn unpinging_markdown(text: &str) -> String {
    text.replace("<!", "&lt;!")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_markdown_cannot_ping() {
        assert_eq!(unpinging_markdown("ask <!here> or <!subteam^S1|@ops>"), "ask &lt;!here> or &lt;!subteam^S1|@ops>");
        assert_eq!(unpinging_markdown("**bold** <@U1> stays"), "**bold** <@U1> stays");
    }
}
